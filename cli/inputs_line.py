"""The first line of every ``calc`` text output: the model, GPU and inputs it used.

``Inputs: Llama 3.1 8B (--model llama-3.1-8b) on H100 SXM (--gpu h100-sxm); --tp 1
--precision bf16 --batch 8 …`` — each input as the flag that sets it, so the line can be
pasted back to reproduce the result. Only the inputs the calculation used are named, as the
experiment says (:meth:`lab.experiments.base.Experiment.inputs_used`): the decode flags of
``calc prefill`` only with ``--decode-from``, the model of ``calc context`` only with
``--from-model``, the memory flags of ``calc goodput`` only with ``--memory-check``.
"""

from __future__ import annotations

import argparse

from lab.catalog import get_gpu, get_model
from lab.points.serving_points import CONTEXT_DEFAULTS, PREFILL_DEFAULTS

SHOWN_WHEN_SET = {"kv_precision": "bf16", "ep": 1}
"""Inputs named only when they differ from this default (added after the line was fixed, so
every earlier line reads as before)."""
DEFAULTED = {"decode_ms": PREFILL_DEFAULTS["decode_ms"], "a_ms": CONTEXT_DEFAULTS["a_ms"],
             "c_ms": CONTEXT_DEFAULTS["c_ms"]}
"""Flags whose parsed value is None when left out, with the value the calculation then uses."""

Used = tuple[bool, bool, tuple[str, ...]]
"""``(model used, GPU used, the other inputs in order)`` of one calculation."""


def _flag(name: str, value, flag_names: dict[str, str]) -> str | None:
    flag = "--" + flag_names.get(name, name).replace("_", "-")
    if isinstance(value, bool):
        return flag if value else None
    if value is None:
        return None
    return f"{flag} {value:g}" if isinstance(value, float) else f"{flag} {value}"


def inputs_line(args: argparse.Namespace, used: Used,
                flag_names: dict[str, str] | None = None) -> str:
    """``Inputs: …`` for the parsed (already checked) ``args`` of a calculation that ``used``
    these inputs; ``flag_names`` maps an input to its flag's name where they differ
    (experiment 6's ``block`` is ``--page``)."""
    model_used, gpu_used, names = used
    head = []
    if model_used:
        head.append(f"{get_model(args.model).name} (--model {args.model})")
    if gpu_used:
        head.append(f"{get_gpu(args.gpu).name} (--gpu {args.gpu})")
    given = {name: getattr(args, name, SHOWN_WHEN_SET.get(name)) for name in names}
    values = {name: DEFAULTED[name] if value is None and name in DEFAULTED else value
              for name, value in given.items()}
    flags = " ".join(f for name in names if values[name] != SHOWN_WHEN_SET.get(name, object())
                     and (f := _flag(name, values[name], flag_names or {})))
    return "Inputs: " + "; ".join(part for part in (" on ".join(head), flags) if part)
