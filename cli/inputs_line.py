"""The first line of every ``calc`` text output: the model, GPU and inputs it used.

``Inputs: Llama 3.1 8B (--model llama-3.1-8b) on H100 SXM (--gpu h100-sxm); --tp 1
--precision bf16 --batch 8 …`` — each input as the flag that sets it, so the line can be
pasted back to reproduce the result. Only the inputs the calculation used are named: the
decode flags of ``calc prefill`` only with ``--decode-from``, the model of ``calc context``
only with ``--from-model``, the memory flags of ``calc goodput`` only with ``--memory-check``.
"""

from __future__ import annotations

import argparse

from lab.catalog import get_gpu, get_model
from lab.points.serving import CONTEXT_DEFAULTS, PREFILL_DEFAULTS

DECODE = ("tp", "precision", "batch", "context", "budget", "reserve_gb", "page", "kv_precision",
          "ep")
"""Decode-configuration inputs after the model and GPU."""
SHOWN_WHEN_SET = {"kv_precision": "bf16", "ep": 1}
"""Inputs named only when they differ from this default (added after the line was fixed, so
every earlier line reads as before)."""


def _used(command: str, args: argparse.Namespace) -> tuple[bool, bool, tuple[str, ...]]:
    """``(model used, GPU used, other inputs in order)`` of ``calc <command>``."""
    if command in ("decode", "memory", "tp", "precision"):
        extra = ("allreduce", "allreduce_latency_us") if getattr(args, "allreduce", False) else ()
        return True, True, DECODE + extra
    if command == "prefill":
        own = ("prompt", "chunk", "c0_ms", "c1_ms", "deadline_ms", "itl_ms")
        if args.decode_from:
            return True, True, ("decode_from", *own, *DECODE)
        return False, False, ("decode_ms", *own)
    if command == "prefix":
        return True, False, ("tp", "prefix", "own", "requests", "block")
    if command == "goodput":
        memory = ("memory_check", "budget", "reserve_gb", "page") if args.memory_check else ()
        return True, True, ("trace", "batch_cap", "ttft_ms", "tpot_ms", "c0_ms", "c1_ms",
                            "tp", "precision", "kv_precision", *memory)
    if command == "context":
        if args.from_model:
            return True, True, ("from_model", "precision", "tokens", "window")
        return False, False, ("tokens", "a_ms", "c_ms", "window")
    if command == "measured":
        return False, True, ("measurements", "kind", "shape", "tp", "batch", "context", "m")
    raise ValueError(f"unknown calc command {command!r}")


DEFAULTED = {"decode_ms": PREFILL_DEFAULTS["decode_ms"], "a_ms": CONTEXT_DEFAULTS["a_ms"],
             "c_ms": CONTEXT_DEFAULTS["c_ms"]}
"""Flags whose parsed value is None when left out, with the value the calculation then uses."""
FLAG_NAMES = {"block": "page"}
"""Inputs shown under another flag name than their attribute (``--page``, alias ``--block``)."""


def _flag(name: str, value) -> str | None:
    flag = "--" + FLAG_NAMES.get(name, name).replace("_", "-")
    if isinstance(value, bool):
        return flag if value else None
    if value is None:
        return None
    return f"{flag} {value:g}" if isinstance(value, float) else f"{flag} {value}"


def inputs_line(command: str, args: argparse.Namespace) -> str:
    """``Inputs: …`` for ``calc <command>`` run with ``args`` (already checked by the run)."""
    model_used, gpu_used, names = _used(command, args)
    head = []
    if model_used:
        head.append(f"{get_model(args.model).name} (--model {args.model})")
    if gpu_used:
        head.append(f"{get_gpu(args.gpu).name} (--gpu {args.gpu})")
    values = {name: DEFAULTED[name] if getattr(args, name) is None and name in DEFAULTED
              else getattr(args, name) for name in names}
    if getattr(args, "trace", None) == "-":
        values["trace"] = "-"
    flags = " ".join(f for name in names if values[name] != SHOWN_WHEN_SET.get(name, object())
                     and (f := _flag(name, values[name])))
    return "Inputs: " + "; ".join(part for part in (" on ".join(head), flags) if part)
