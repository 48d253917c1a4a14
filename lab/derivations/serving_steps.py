"""“Show the calculation” for experiments 5–8, with the actual numbers substituted.

Each formatter takes a record from :mod:`lab.points.serving_points` (full precision, SI units) and
returns :class:`~lab.derivations.decode_steps.Step` rows in the order of docs/model.md §5–§8;
rounding happens only here.
"""

from __future__ import annotations

from lab.derivations.decode_steps import Step
from lab.units import (
    MS_PER_S,
    NS_PER_S,
    fmt_count,
    fmt_gb,
    fmt_int,
    fmt_ms,
    fmt_number,
    fmt_percent,
    fmt_rate,
    fmt_sig,
)


def _ms(seconds: float) -> str:
    """Milliseconds with as many decimals as the value needs (``0.06``, ``2``, ``10.5``)."""
    text = f"{seconds * MS_PER_S:,.4f}".rstrip("0").rstrip(".")
    return text if text not in ("", "-0") else "0"


def prefill_steps(record: dict) -> list[Step]:
    """Experiment 5: chunks, TTFT, ITL during the prefill, the checks and the chunk sweep."""
    i = record["inputs"]
    P, C = i["prompt"], i["chunk"]
    d, c0, c1 = _ms(i["decode_s"]), _ms(i["c0_s"]), _ms(i["c1_s"])
    source = "from experiment 1's model" if i["decode_source"] == "model" else "input"
    steps = [
        Step("Chunks k", f"ceil({P:,} / {C:,})", f"{record['chunks']:,}"),
        Step("Decode step d", source, fmt_ms(i["decode_s"])),
        Step("Step cost", f"d + c0 + c1 × min(C, remaining) = {d} + {c0} + {c1} × "
             f"{record['first_chunk_tokens']:,} (last chunk "
             f"{fmt_count(record['last_chunk_tokens'], 'token')})", fmt_ms(record["itl_during_prefill_s"])),
        Step("TTFT", f"k × (d + c0) + c1 × P = {record['chunks']:,} × ({d} + {c0}) + "
             f"{c1} × {P:,}", fmt_ms(record["ttft_s"])),
        Step("ITL during prefill", f"d + c0 + c1 × min(C, P) = {d} + {c0} + {c1} × "
             f"{min(C, P):,}", fmt_ms(record["itl_during_prefill_s"])),
        Step("Deadline", f"{fmt_ms(record['ttft_s'])} vs {fmt_ms(i['deadline_s'])}",
             "met" if record["meets_deadline"] else "missed"),
        Step("ITL limit", f"{fmt_ms(record['itl_during_prefill_s'])} vs "
             f"{fmt_ms(i['itl_limit_s'])}", "met" if record["meets_itl"] else "missed"),
    ]
    smallest = record["smallest_chunk_meeting_deadline"]
    steps.append(Step("Smallest chunk meeting the deadline", f"sweep of C = 1 … {P:,}",
                      fmt_count(smallest, "token") if smallest else "none"))
    steps.append(Step("Feasible chunks", "", record["feasible_text"]))
    return steps


def prefix_steps(record: dict) -> list[Step]:
    """Experiment 6: shared and private blocks, with and without caching, bytes and ownership."""
    i = record["inputs"]
    P, U, N, b, tp = i["prefix"], i["own"], i["requests"], i["block"], i["tp"]
    s, priv = record["shared_blocks"], record["private_blocks_per_request"]
    return [
        Step("Shared blocks", f"floor({P:,} / {b})", f"{s:,}"),
        Step("Private tail", f"({P:,} mod {b}) + {U:,}", fmt_count(record['tail_tokens'], 'token')),
        Step("Private blocks per request", f"ceil({record['tail_tokens']:,} / {b})",
             f"{priv:,}"),
        Step("With prefix caching", f"{s:,} + {N:,} × {priv:,}",
             fmt_count(record['blocks_with_cache'], 'block')),
        Step("Without", f"{N:,} × ceil(({P:,} + {U:,}) / {b})",
             fmt_count(record['blocks_without_cache'], 'block')),
        Step("Bytes per block", f"{b} × KV bytes per token / {tp}",
             f"{fmt_int(record['block_bytes'])} B"),
        Step("Memory", f"{fmt_gb(record['bytes_with_cache'])} with vs "
             f"{fmt_gb(record['bytes_without_cache'])} without",
             f"{fmt_gb(record['bytes_saved'])} saved"),
        Step("Saved", f"1 − {record['blocks_with_cache']:,} / {record['blocks_without_cache']:,}",
             fmt_percent(record["saved_fraction"])),
        Step("Owned per request", f"{priv:,} + {s:,} / {N:,}",
             f"{fmt_number(record['owned_blocks_per_request'])} blocks"),
    ]


def goodput_steps(record: dict) -> list[Step]:
    """Experiment 7: the step-cost rule, the span, the contract and the three rates."""
    i = record["inputs"]
    good, n = record["good_requests"], record["requests"]
    last = record["first_arrival_s"] + record["makespan_s"]
    steps = [
        Step("Trace", i["trace"],
             f"{fmt_count(n, 'request')}, {fmt_count(record['output_tokens'], 'output token')}"
             + (f", {record['rejected_requests']:,} rejected (never fit in memory)"
                if record["rejected_requests"] else "")),
        Step("Steps simulated", f"each costing c0 + c1 × Σ admitted prompt tokens = "
             f"{_ms(i['c0_s'])} + "
             f"{_ms(i['c1_s'])} × Σ (0 if none), plus experiment 1's decode step for B "
             f"decoding requests over the sum of their lengths"
             + (f" (each length's own read per layer kind, summed / L: {record['layer_mix']})"
                if "layer_mix" in record else "") + f", batch cap {i['batch_cap']}",
             fmt_count(record['steps'], 'step')),
        Step("Makespan", f"last finish − first arrival = {fmt_number(last, 3)} s − "
             f"{fmt_number(record['first_arrival_s'], 3)} s",
             f"{fmt_number(record['makespan_s'], 3)} s"),
        Step("TTFT", "median, 90th percentile",
             f"{fmt_ms(record['ttft_p50_s'])}, {fmt_ms(record['ttft_p90_s'])}"),
        Step("TPOT", "median, 90th percentile",
             f"{fmt_ms(record['tpot_p50_s'])}, {fmt_ms(record['tpot_p90_s'])}"),
        Step("Good requests", f"TTFT ≤ {fmt_ms(i['ttft_limit_s'])} and TPOT ≤ "
             f"{fmt_ms(i['tpot_limit_s'])}", f"{good:,} of {n:,}"),
        Step("Goodput", f"{good:,} / {fmt_number(record['makespan_s'], 3)} s",
             f"{fmt_number(record['goodput_rps'])} requests/s"),
        Step("Throughput", f"{record['output_tokens']:,} / "
             f"{fmt_number(record['makespan_s'], 3)} s", fmt_rate(record["throughput_tokens_per_s"])),
        Step("Attainment", f"{good:,} / {n:,}", fmt_percent(record["attainment"])),
    ]
    return steps


def _pairs(value) -> str:
    """A pair count: an exact integer, or (a layer mix's mean over its layers) one decimal."""
    return f"{value:,}" if isinstance(value, int) else f"{value:,.1f}"


def context_steps(record: dict) -> list[Step]:
    """Experiment 8: pairs, T(n) and its parts, the share, the doubling ratio, the crossover."""
    i = record["inputs"]
    n, W = i["tokens"], i["window"]
    a, c = i["a_s"], i["c_s"]
    if "layer_mix" in record:  # a model's own full, sliding-window and chunked layers
        pair_expr = (f"layer pairs / L = {record['layer_pairs']:,} / {record['layers']:,} "
                     f"({record['layer_mix']})")
    elif W is None or n <= W:
        pair_expr = f"{n:,} × {n + 1:,} / 2"
    else:
        pair_expr = f"{W:,} × {W + 1:,} / 2 + ({n:,} − {W:,}) × {W:,} (sliding window, extension)"
    pairs = _pairs(record["pairs"]) + (" per layer" if "layer_mix" in record else "")
    return [
        Step("Pairs", pair_expr, pairs),
        Step("Linear part", f"a × n = {_ms(a)} ms × {n:,}", fmt_ms(record["linear_time_s"])),
        Step("Attention part", f"c × pairs = {fmt_sig(c * NS_PER_S)} ns × {_pairs(record['pairs'])}",
             fmt_ms(record["attention_time_s"])),
        Step("T(n)", f"{fmt_ms(record['linear_time_s'])} + {fmt_ms(record['attention_time_s'])}",
             fmt_ms(record["time_s"])),
        Step("Attention share", "c × pairs / T", fmt_percent(record["attention_share"])),
        Step("T(2n)", f"a × {2 * n:,} + c × {_pairs(record['pairs_doubled'])}",
             fmt_ms(record["time_doubled_s"])),
        Step("Doubling ratio", f"{fmt_ms(record['time_doubled_s'])} / {fmt_ms(record['time_s'])}",
             f"{record['doubling_ratio']:.3f}×"),
        Step("Crossover n*", f"2a / c − 1 = 2 × {_ms(a)} ms / {fmt_sig(c * NS_PER_S)} ns − 1",
             f"{fmt_int(record['crossover_tokens'])} tokens"
             + (" (below 1: the attention part outweighs the linear one from the first token)"
                if record["crossover_tokens"] < 1 else "")),
    ]
