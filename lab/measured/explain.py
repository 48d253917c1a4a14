"""“Show the calculation” for one measured point: the floor with the numbers substituted.

Takes a point record of :func:`lab.measured.calc.point_record` (SI units, full precision) and
returns :class:`~lab.derivations.decode_steps.Step` rows in the order of docs/model.md,
Experiment 9; rounding happens here.
"""

from __future__ import annotations

from lab.catalog import GPUSpec
from lab.derivations.decode_steps import Step
from lab.measured.calc import below_floor_sentence
from lab.models.decode_step import peak_flops
from lab.models.layer_kinds import causal_pairs
from lab.models.weight_formats import weight_bytes
from lab.units import fmt_int, fmt_number


def fmt_us(seconds: float) -> str:
    """Seconds as microseconds (``182.17 µs``)."""
    return f"{fmt_number(seconds * 1e6, 2)} µs"


def fmt_mb(num_bytes: float) -> str:
    """Bytes as decimal MB (``536.87 MB``)."""
    return f"{fmt_number(num_bytes / 1e6, 2)} MB"


def fmt_mflop(flop: float) -> str:
    """FLOP as GFLOP with three decimals (``4.295 GFLOP``)."""
    return f"{fmt_number(flop / 1e9, 3)} GFLOP"


def _tbps(bw: float) -> str:
    return f"{fmt_number(bw / 1e12, 2)} TB/s"


def _tflops(flops: float) -> str:
    return f"{fmt_number(flops / 1e12, 1)} TFLOPS"


def work_steps(p: dict) -> list[Step]:
    """Bytes and FLOPs of the point's kernel, with its kind's formula."""
    if p["kind"] == "decode":
        b, s, k, h, q, tp = p["batch"], p["context"], p["kv_heads"], p["head_dim"], p["heads"], p["tp"]
        return [
            Step("KV read, one layer, one GPU", f"B·S·(2·K·h·2)/tp = {b:,} · {s:,} · (2 · {k} · {h} "
                 f"· 2) / {tp}", fmt_mb(p["bytes"])),
            Step("Attention FLOPs", f"4·B·S·H·h/tp = 4 · {b:,} · {s:,} · {q} · {h} / {tp}",
                 fmt_mflop(p["flops"])),
        ]
    if p["kind"] == "prefill":
        n, k, h, q = p["context"], p["kv_heads"], p["head_dim"], p["heads"]
        pairs = causal_pairs(n)
        return [
            Step("Causal pairs", f"n(n+1)/2 = {n:,} · {n + 1:,} / 2", fmt_int(pairs)),
            Step("Q, K, V read and O written once", f"n·(2·H·h + 2·K·h)·2 = {n:,} · (2 · {q} · {h} "
                 f"+ 2 · {k} · {h}) · 2", fmt_mb(p["bytes"])),
            Step("Attention FLOPs", f"4·H·h·pairs = 4 · {q} · {h} · {pairs:,}",
                 fmt_mflop(p["flops"])),
        ]
    m, k, n = p["m"], p["k"], p["n"]
    nbytes = int(weight_bytes(p["dtype"]))
    return [
        Step("Weight, input and output once", f"(k·n + m·k + m·n)·{nbytes} = ({k:,} · {n:,} + "
             f"{m:,} · {k:,} + {m:,} · {n:,}) · {nbytes}", fmt_mb(p["bytes"])),
        Step("GEMM FLOPs", f"2·m·k·n = 2 · {m:,} · {k:,} · {n:,}", fmt_mflop(p["flops"])),
    ]


def point_steps(p: dict, gpu: GPUSpec, measured_on: str = "") -> list[Step]:
    """The whole derivation for one point: work, the two floors, the ratio, achieved rates."""
    peak = float(peak_flops(gpu, p["dtype"] if p["kind"] == "gemm" else "bf16"))
    bound = "compute-bound" if p["compute_bound"] else "memory-bound"
    if p["ratio"] < 1:
        verdict = below_floor_sentence(p, gpu, measured_on)
    elif p["excess_s"] > p["floor_s"]:
        verdict = (f"More than twice the floor: {fmt_us(p['excess_s'])} above it, a fixed cost "
                   "(launch, synchronisation, a partly idle GPU) the floor does not count.")
    else:
        verdict = (f"Within {fmt_number((p['ratio'] - 1) * 100, 1)} % of the floor: the kernel "
                   f"runs near the stated {'peak' if p['compute_bound'] else 'bandwidth'}.")
    return [
        Step("Point", "", p["label"]),
        Step("Measured time", "", fmt_us(p["latency_s"])),
        *work_steps(p),
        Step("Memory floor", f"bytes / BW = {fmt_mb(p['bytes'])} / {_tbps(gpu.hbm_bw)}",
             fmt_us(p["memory_time_s"])),
        Step("Compute floor", f"FLOP / peak = {fmt_mflop(p['flops'])} / {_tflops(peak)}",
             fmt_us(p["compute_time_s"])),
        Step("Floor", f"max({fmt_us(p['memory_time_s'])}, {fmt_us(p['compute_time_s'])})",
             f"{fmt_us(p['floor_s'])} ({bound})"),
        Step("Measured / floor", f"{fmt_us(p['latency_s'])} / {fmt_us(p['floor_s'])}",
             f"{fmt_number(p['ratio'], 2)}×"),
        Step("Achieved bandwidth", f"bytes / measured = {fmt_mb(p['bytes'])} / "
             f"{fmt_us(p['latency_s'])}", f"{_tbps(p['achieved_bandwidth'])} "
             f"({fmt_number(p['achieved_bandwidth'] / gpu.hbm_bw * 100, 0)} % of "
             f"{_tbps(gpu.hbm_bw)})"),
        Step("Achieved FLOP/s", f"FLOP / measured = {fmt_mflop(p['flops'])} / "
             f"{fmt_us(p['latency_s'])}", f"{_tflops(p['achieved_flops'])} "
             f"({fmt_number(p['achieved_flops'] / peak * 100, 0)} % of {_tflops(peak)})"),
        Step("Verdict", "", verdict),
    ]
