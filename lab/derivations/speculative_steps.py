"""Experiment 10's "show the calculation": the cycle of drafting and verification, substituted.

:func:`speculative_steps` takes a :func:`lab.points.speculative_points.calc_speculative` record
(SI units, full precision) and returns :class:`~lab.derivations.decode_steps.Step` rows in
docs/model.md §10's order; rounding happens here and only here.
"""

from __future__ import annotations

from lab.catalog import GPUSpec, ModelSpec
from lab.derivations.decode_steps import Step, _tbps, _tflops
from lab.limits import MAX_BATCH
from lab.models.decode_step import linear_params, peak_flops
from lab.models.speculative import verify_pairs
from lab.units import fmt_count, fmt_gb, fmt_gflop, fmt_int, fmt_ms, fmt_number, fmt_rate


def _drafter_name(draft: ModelSpec | None, model: ModelSpec) -> str:
    """The drafter as the derivation names it; the MTP head is a DeepSeek-V3-style module
    costed on the target (docs/model.md §10), which no dense catalog model ships."""
    return draft.name if draft is not None else (
        f"a DeepSeek-V3-style MTP head on {model.name} (hypothetical: {model.name} ships none)")


def speculative_steps(record: dict, model: ModelSpec, draft: ModelSpec | None,
                      gpu: GPUSpec) -> list[Step]:
    """Experiment 10's derivation for ``model`` verifying what ``draft`` drafts (None: its MTP
    head) on ``gpu``."""
    i = record["inputs"]
    batch, context, k, alpha, tp = i["batch"], i["context"], i["k"], i["alpha"], i["tp"]
    peak = peak_flops(gpu, i["precision"])
    peak_name = "FP8" if i["precision"] == "fp8" else "BF16"
    bound = "compute" if record["verify_compute_bound"] else "HBM"
    pairs = int(verify_pairs(k, context))
    if "layer_mix" in record:  # sliding-window or chunked layers: each kind's own keys
        kv_expr = (f"{batch:,} × {fmt_number(record['verify_context_read'])} tokens of cache "
                   f"(S_eff = read({context:,}) / {model.layers}: {record['layer_mix']})")
        pair_expr = (f"Σ_j read({context:,} + j) / {model.layers}, j = 0…{k}, = "
                     f"{fmt_number(record['verify_pairs_per_sequence'])} pairs")
    else:
        kv_expr = f"{batch:,} × {context:,} tokens of cache"
        pair_expr = f"{k + 1} × {context:,} + {k}·{k + 1}/2 = {pairs:,} pairs"
    expected = ("α = 1: k + 1" if alpha >= 1 else
                f"(1 − {alpha:g}^{k + 1}) / (1 − {alpha:g})")
    drafter = _drafter_name(draft, model)
    below = record["break_even_batch"]
    return [
        Step("Expected tokens per verification step", expected,
             f"{fmt_number(record['expected_tokens'])} tokens per sequence"),
        Step("Verification weight reads",
             f"{fmt_gb(record['verify_weight_bytes'])} / GPU, read once / {_tbps(gpu.hbm_bw)}",
             fmt_ms(record["verify_hbm_time_s"])),
        Step("Verification linear FLOPs",
             f"2 × {fmt_int(linear_params(model))} × {fmt_count(batch, 'sequence')} × "
             f"{fmt_count(k + 1, 'token')} / {tp}",
             f"{fmt_gflop(record['verify_linear_flops'])} / GPU"),
        Step("Verification linear phase",
             f"max({fmt_ms(record['verify_hbm_time_s'])}, "
             f"{fmt_gflop(record['verify_linear_flops'])} / {_tflops(peak)} {peak_name})",
             f"{fmt_ms(record['verify_linear_time_s'])} ({bound}-bound; the ridge falls to "
             f"batch {fmt_int(record['verify_ridge_batch'])} = ridge / {k + 1})"),
        Step("Verification KV reads (once)", kv_expr,
             f"{fmt_gb(record['verify_kv_read_bytes'])} / GPU"),
        Step("Verification attention FLOPs",
             f"{batch:,} × ({pair_expr}) × "
             f"4·{model.layers}·{model.heads}·{model.head_dim} / {tp}",
             f"{fmt_gflop(record['verify_attention_flops'])} / GPU"),
        Step("Verification attention phase",
             f"max({fmt_ms(record['verify_attention_memory_time_s'])}, "
             f"{fmt_ms(record['verify_attention_compute_time_s'])})",
             fmt_ms(record["verify_attention_time_s"])),
        Step("Verification step", f"{fmt_ms(record['verify_linear_time_s'])} + "
             f"{fmt_ms(record['verify_attention_time_s'])}", fmt_ms(record["verify_time_s"])),
        Step("Draft step", f"experiment 1's step of {drafter} at batch {batch:,}, context "
             f"{context:,}", fmt_ms(record["draft_step_time_s"])),
        Step("Draft time", f"{k} × {fmt_ms(record['draft_step_time_s'])}",
             fmt_ms(record["draft_time_s"])),
        Step("Cycle", f"{fmt_ms(record['draft_time_s'])} + {fmt_ms(record['verify_time_s'])}",
             fmt_ms(record["cycle_time_s"])),
        Step("Per-sequence rate", f"{fmt_number(record['expected_tokens'])} tokens / "
             f"{fmt_ms(record['cycle_time_s'])}",
             f"{fmt_rate(record['per_sequence_tokens_per_s'])} "
             f"({fmt_rate(record['aggregate_tokens_per_s'])} for {fmt_count(batch, 'sequence')})"),
        Step("Plain decoding", f"1 token / {fmt_ms(record['plain_step_time_s'])}",
             f"{fmt_rate(record['plain_per_sequence_tokens_per_s'])} per sequence "
             f"({fmt_rate(record['plain_aggregate_tokens_per_s'])} in all)"),
        Step("Speed-up", f"{fmt_rate(record['per_sequence_tokens_per_s'])} / "
             f"{fmt_rate(record['plain_per_sequence_tokens_per_s'])}",
             f"{record['speedup']:.2f}×"),
        Step("Break-even batch", "the smallest batch where the speed-up falls below 1×",
             f"batch {below:,}" if below else f"none up to batch {MAX_BATCH:,}"),
        Step("Memory with the drafter",
             f"{fmt_gb(record['memory_budget_bytes'])} budget − "
             f"{fmt_gb(record['memory_reserve_bytes'])} reserve − "
             f"{fmt_gb(record['memory_params_bytes'])} target weights − "
             f"{fmt_gb(record['memory_kv_bytes'])} target KV − "
             f"{fmt_gb(record['draft_params_bytes'])} drafter weights − "
             f"{fmt_gb(record['draft_kv_bytes'])} drafter KV (per GPU)",
             f"{fmt_gb(record['memory_remaining_with_draft_bytes'])} of the budget left"
             if record["fits_with_draft"] else
             f"{fmt_gb(-record['memory_remaining_with_draft_bytes'])} over the budget"),
    ]
