"""``calc prefill|prefix|goodput|context``: experiments 5–8 from the command line.

Text output is the derivation (:mod:`lab.derivations.serving`); ``--json`` prints the record in SI
units. Times on the command line are in ms.
"""

from __future__ import annotations

import argparse

from cli.flags import (
    MEMORY_FLAGS,
    add_decode_flags,
    add_flags,
    add_json_flag,
    decode_config,
    print_json,
)
from cli.inputs_line import inputs_line
from cli.stdin_trace import named_source, trace_source
from lab.derivations.decode_family import render_text
from lab.derivations.serving import context_steps, goodput_steps, prefill_steps, prefix_steps
from lab.points.serving import (
    CONTEXT_DEFAULTS,
    DEFAULT_TRACE,
    GOODPUT_DEFAULTS,
    PREFILL_DEFAULTS,
    PREFIX_DEFAULTS,
    calc_context,
    calc_goodput,
    calc_prefill,
    calc_prefix,
)
from lab.units import fmt_ms


def _emit(args: argparse.Namespace, record: dict, steps) -> int:
    if args.json:
        print_json(record)
    else:
        print(inputs_line(args.experiment_name, args))
        print(render_text(steps(record)))
    return 0


def _model_flags(parser: argparse.ArgumentParser, *names: str) -> None:
    """The few decode-configuration flags a calculation needs (not batch or context)."""
    add_flags(parser, names, "model configuration")


# -- prefill -------------------------------------------------------------------------------------
def _prefill(args: argparse.Namespace) -> int:
    record = calc_prefill(
        prompt=args.prompt, chunk=args.chunk, decode_ms=args.decode_ms, c0_ms=args.c0_ms,
        c1_ms=args.c1_ms, deadline_ms=args.deadline_ms, itl_ms=args.itl_ms,
        decode_from=decode_config(args) if args.decode_from else None,
    )
    return _emit(args, record, prefill_steps)


def _register_prefill(subparsers) -> None:
    d = PREFILL_DEFAULTS
    parser = subparsers.add_parser(
        "prefill", help="Experiment 5, prefill deadline",
        description="Experiment 5, prefill deadline: TTFT of a chunked prompt and the "
        "decoders' inter-token latency, with the chunk sizes that meet both limits.")
    parser.add_argument("--prompt", type=int, default=d["prompt"],
                        help="prompt tokens P (default: %(default)s)")
    parser.add_argument("--chunk", type=int, default=d["chunk"],
                        help="chunk size C, tokens per step (default: %(default)s)")
    parser.add_argument("--decode-ms", type=float, default=None,
                        help=f"running decode batch's step cost d, ms (default: "
                        f"{d['decode_ms']:g}; or use --decode-from)")
    parser.add_argument("--decode-from", action="store_true",
                        help="take d from experiment 1's model for the decode configuration "
                        "flags below instead of --decode-ms")
    parser.add_argument("--c0-ms", type=float, default=d["c0_ms"],
                        help="prefill cost per step c0, ms (default: %(default)s)")
    parser.add_argument("--c1-ms", type=float, default=d["c1_ms"],
                        help="prefill cost per prompt token c1, ms (default: %(default)s)")
    parser.add_argument("--deadline-ms", type=float, default=d["deadline_ms"],
                        help="TTFT deadline D, ms (default: %(default)s)")
    parser.add_argument("--itl-ms", type=float, default=d["itl_ms"],
                        help="ITL limit for the decoding users, ms (default: %(default)s)")
    add_decode_flags(parser)
    add_json_flag(parser)
    parser.set_defaults(func=_prefill, experiment_name="prefill")


# -- prefix --------------------------------------------------------------------------------------
def _prefix(args: argparse.Namespace) -> int:
    record = calc_prefix(model=args.model, tp=args.tp, prefix=args.prefix, own=args.own,
                         requests=args.requests, block=args.block)
    return _emit(args, record, prefix_steps)


def _register_prefix(subparsers) -> None:
    d = PREFIX_DEFAULTS
    parser = subparsers.add_parser(
        "prefix", help="Experiment 6, prefix ownership",
        description="Experiment 6, prefix ownership: KV blocks and bytes with and without "
        "prefix caching (only full blocks of the shared prefix are shared).")
    parser.add_argument("--prefix", type=int, default=d["prefix"],
                        help="shared prefix tokens P (default: %(default)s)")
    parser.add_argument("--own", type=int, default=d["own"],
                        help="each request's own tokens U after the prefix (default: %(default)s)")
    parser.add_argument("--requests", type=int, default=d["requests"],
                        help="requests N sharing the prefix (default: %(default)s)")
    parser.add_argument("--page", "--block", dest="block", type=int, default=d["block"],
                        help="KV cache page (block) size b, tokens; --block is the old name "
                        "(default: %(default)s)")
    _model_flags(parser, "model", "tp")
    add_json_flag(parser)
    parser.set_defaults(func=_prefix, experiment_name="prefix")


# -- goodput -------------------------------------------------------------------------------------
def _goodput(args: argparse.Namespace) -> int:
    with trace_source(args.trace) as trace:
        record = calc_goodput(
            trace=trace, batch_cap=args.batch_cap, ttft_ms=args.ttft_ms, tpot_ms=args.tpot_ms,
            c0_ms=args.c0_ms, c1_ms=args.c1_ms, memory_check=args.memory_check,
            decode=decode_config(args), with_requests=args.per_request,
        )
        record = named_source(record, args.trace, trace)
    if args.json:
        print_json(record)
        return 0
    if record["trace_note"]:
        print(f"Note: {record['trace_note']}")
    print(inputs_line("goodput", args))
    print(render_text(goodput_steps(record)))
    if args.per_request:
        print("\nrequest_id  arrival_s  prompt  output  TTFT        TPOT      good")
        for r in record["per_request"]:
            if r["rejected"]:
                print(f"{r['request_id']:<11} {r['arrival_s']:>9.3f} {r['prompt_tokens']:>7} "
                      f"{r['output_tokens']:>7}  rejected: never fits in memory")
                continue
            print(f"{r['request_id']:<11} {r['arrival_s']:>9.3f} {r['prompt_tokens']:>7} "
                  f"{r['output_tokens']:>7}  {fmt_ms(r['ttft_s']):>11} {fmt_ms(r['tpot_s']):>9}"
                  f"  {'yes' if r['good'] else 'no'}")
    return 0


def _register_goodput(subparsers) -> None:
    d = GOODPUT_DEFAULTS
    parser = subparsers.add_parser(
        "goodput", help="Experiment 7, goodput under a contract",
        description="Experiment 7, goodput under a contract: serve a trace with the "
        "deterministic continuous-batching model and count the requests meeting TTFT and TPOT.")
    parser.add_argument("--trace", default=str(DEFAULT_TRACE),
                        help="trace CSV with header request_id,arrival_s,prompt_tokens,"
                        "output_tokens, or - to read it from standard input (default: the "
                        "shipped datasets/traces/default.csv)")
    parser.add_argument("--batch-cap", type=int, default=d["batch_cap"],
                        help="most requests running at once M (default: %(default)s)")
    parser.add_argument("--ttft-ms", type=float, default=d["ttft_ms"],
                        help="contract: TTFT limit T1, ms (default: %(default)s)")
    parser.add_argument("--tpot-ms", type=float, default=d["tpot_ms"],
                        help="contract: TPOT limit T2, ms (default: %(default)s)")
    parser.add_argument("--c0-ms", type=float, default=d["c0_ms"],
                        help="prefill cost per step c0, ms (default: %(default)s)")
    parser.add_argument("--c1-ms", type=float, default=d["c1_ms"],
                        help="prefill cost per prompt token c1, ms (default: %(default)s)")
    parser.add_argument("--memory-check", action="store_true",
                        help="admit only while every running request's final-length KV fits "
                        "experiment 2's free memory (requests that never fit are rejected)")
    parser.add_argument("--per-request", action="store_true",
                        help="also list every request's TTFT, TPOT and whether it is good")
    _model_flags(parser, "model", "gpu", "tp", "precision", "kv_precision")
    add_flags(parser, MEMORY_FLAGS, "memory (with --memory-check)")
    add_json_flag(parser)
    parser.set_defaults(func=_goodput)


# -- context -------------------------------------------------------------------------------------
def _context(args: argparse.Namespace) -> int:
    record = calc_context(tokens=args.tokens, a_ms=args.a_ms, c_ms=args.c_ms, window=args.window,
                          from_model=decode_config(args) if args.from_model else None)
    return _emit(args, record, context_steps)


def _register_context(subparsers) -> None:
    d = CONTEXT_DEFAULTS
    parser = subparsers.add_parser(
        "context", help="Experiment 8, context growth",
        description="Experiment 8, context growth: exact attention pairs, prefill time "
        "T(n) = a·n + c·pairs(n), the doubling ratio and the crossover.")
    parser.add_argument("--tokens", type=int, default=d["tokens"],
                        help="prompt tokens n (default: %(default)s)")
    parser.add_argument("--a-ms", type=float, default=None,
                        help=f"linear time per token a, ms (default: {d['a_ms']:g}, synthetic)")
    parser.add_argument("--c-ms", type=float, default=None,
                        help=f"attention time per pair c, ms (default: {d['c_ms']:g}, synthetic)")
    parser.add_argument("--from-model", action="store_true",
                        help="derive a = 2·N_lin/peak(p) and c = 4·L·H·h/peak(bf16) from "
                        "--model, --gpu and --precision instead")
    parser.add_argument("--window", type=int, default=None,
                        help="sliding-window width W, tokens (extension; default: dense)")
    _model_flags(parser, "model", "gpu", "precision")
    add_json_flag(parser)
    parser.set_defaults(func=_context, experiment_name="context")


def register(subparsers) -> None:
    """Add ``prefill``, ``prefix``, ``goodput`` and ``context``."""
    _register_prefill(subparsers)
    _register_prefix(subparsers)
    _register_goodput(subparsers)
    _register_context(subparsers)
