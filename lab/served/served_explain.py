"""“Show the calculation” for one served row: floor, named terms, prediction and residual.

Takes a row record of :func:`lab.served.served_calc.row_record` (milliseconds) and returns
:class:`~lab.derivations.decode_steps.Step` rows in the order of docs/model.md §11; rounding
happens here.
"""

from __future__ import annotations

from lab.derivations.decode_steps import Step
from lab.served.served_floors import PREFILL_CHUNK
from lab.units import fmt_number, fmt_sig


def _ms(value) -> str:
    return "n/a" if value is None else f"{fmt_number(value, 2)} ms"


def _x(value) -> str:
    return "n/a" if value is None else fmt_number(value, 3)


def row_steps(r: dict, _gpu=None) -> list[Step]:
    """The derivation of one row (a row the lab does not model: the reason only)."""
    steps = [Step("Row", "", r["label"]),
             Step("Measured", "", f"TPOT {_ms(r['tpot_measured_ms'])}, TTFT "
                  f"{_ms(r['ttft_measured_ms'])}")]
    if not r["modelled"]:
        return [*steps, Step("Not modelled", "", r["reason"])]
    steps += [
        Step("TPOT floor", f"one ideal decode step of B = {fmt_sig(r['batch_floor'])} sequences per "
             f"worker at S = isl + osl/2 = {fmt_number(r['context_mid'], 0)} tokens, tp "
             f"{r['tp']}, attention DP {r['attention_dp']}, KV cache {r['kv_precision_floor']} "
             "(§0; with attention DP each rank decodes its own B/dp sequences)",
             _ms(r["tpot_floor_ms"])),
        Step("Communication term", "all-reduces 2·L·(2·(tp−1)/tp·(B/dp)·d·2 B / link + 5 µs) "
             f"(§3) + expert all-to-all over ep {r['moe_ep']} (the bytes for expert groups on "
             "another NVLink domain over the network)",
             _ms(r["tpot_term_allreduce_ms"])),
    ]
    if r["mode"] == "agg":
        steps.append(Step(
            "Interleaved prefill term", f"k_prefill · P_step = {_x(r['tpot_k_prefill'])} · "
            f"{_ms(r['prefill_step_basis_ms'])} (B/osl prompts per step, each one request's "
            "ideal prefill)", _ms(r["tpot_term_prefill_ms"])))
    if r["mode"] == "agg" or r["batch_stated"]:
        steps.append(Step(
            "Decode step term", f"k_step_one · step_one = {_x(r['tpot_k_step_one'])} · "
            f"{_ms(r['step_one_ms'])} (the step beyond its floor, in ideal steps of one "
            f"sequence per attention rank: {r['attention_dp']} sequence"
            f"{'s' if r['attention_dp'] != 1 else ''}"
            + ("; the listed decode pools hold every client" if r["mode"] != "agg" else "")
            + ")", _ms(r["tpot_term_step_ms"])))
    else:
        steps.append(Step(
            "Decode step term", f"(k_inferred − 1) · floor = ({_x(r['tpot_k_inferred'])} − 1) · "
            f"{_ms(r['tpot_floor_ms'])} (no prefill interleaves; the batch per decode worker is "
            "inferred from the concurrency, an upper bound)", _ms(r["tpot_term_step_ms"])))
        steps.append(Step(
            "Clients beyond the decode slots", f"k_slots · ln⁺(c / (w · B)) · floor = "
            f"{_x(r['tpot_k_slots'])} · {_ms(r['slots_basis_ms'])} ({r['concurrency']:,} "
            f"clients, {r['decode_workers']} × {fmt_number(r['batch_floor'], 0)} slots listed: "
            "the clients beyond them take turns, a step per e-fold)", _ms(r["tpot_term_slots_ms"])))
    if r["mode"] != "agg":
        steps.append(Step("Fixed time per layer", f"t_layer · L = {_ms(r['tpot_t_layer_ms'])} · "
                          f"{fmt_number(r['layers'], 0)} layers (fitted on the other "
                          "workloads)", _ms(r["tpot_term_fixed_ms"])))
    if r["mode"] == "agg":
        steps.append(Step(
            "Fixed time per MoE layer", f"t_moe · L_moe = {_ms(r['tpot_t_moe_layer_ms'])} · "
            f"{fmt_number(r['moe_layers'], 0)} MoE layers", _ms(r["tpot_term_moe_ms"])))
    if r["mode"] == "agg":
        steps.append(Step(
            "Collectives beyond their ideal", f"k_comm · comm = {_x(r['tpot_k_comm'])} · "
            f"{_ms(r['tpot_term_allreduce_ms'])}", _ms(r["tpot_term_collective_ms"])))
    steps += [
        Step("TPOT predicted", "floor + communication (and its excess) + prefill + step beyond "
             "the floor (+ clients beyond the slots) + per-layer or per-MoE-layer times",
             _ms(r["tpot_predicted_ms"])),
        Step("TPOT residual", "measured − predicted", _ms(r["tpot_term_residual_ms"])),
        Step("TTFT floor", f"one prefill of isl = {r['isl']:,} tokens alone at tp "
             f"{r['prefill_tp']}: linear phase + causal attention pairs, on its own attention-DP "
             "rank (§0, §8)",
             _ms(r["ttft_floor_ms"])),
        Step("Queue term", f"k_queue · (c − 1)/2 · prefill / workers = {_x(r['ttft_k_queue'])} · "
             f"({r['concurrency']:,} − 1)/2 · {_ms(r['queue_prefill_ms'])} / "
             f"{r['prefill_workers']} (a queued prompt's ideal prefill, its attention spread "
             "over the attention-DP ranks)", _ms(r["ttft_term_queue_ms"])),
        Step("Fixed time to first token", "t_first (fitted on the other workloads)",
             _ms(r["ttft_term_fixed_ms"])),
    ]
    if r["mode"] == "agg":
        steps.append(Step(
            "Chunk term", f"k_chunk · ⌈isl / {PREFILL_CHUNK:,}⌉ · (TPOT floor + communication) = "
            f"{_x(r['ttft_k_chunk'])} · {_ms(r['chunk_basis_ms'])} (each chunk of the prompt "
            "rides one decode step of the running batch)", _ms(r["ttft_term_chunk_ms"])))
        steps.append(Step(
            "Queued chunks term", f"k_queue_chunk · (c − 1)/2 · ⌈isl / {PREFILL_CHUNK:,}⌉ · "
            f"(TPOT floor + communication) = {_x(r['ttft_k_queue_chunk'])} · "
            f"({r['concurrency']:,} − 1)/2 · {_ms(r['chunk_basis_ms'])} (the chunks of the "
            "prompts ahead ride decode steps too)", _ms(r["ttft_term_queue_chunk_ms"])))
    steps += [
        Step("TTFT predicted", "floor + queue + fixed + chunks + queued chunks",
             _ms(r["ttft_predicted_ms"])),
        Step("TTFT residual", "measured − predicted", _ms(r["ttft_term_residual_ms"])),
    ]
    if r.get("below_floor_sentence"):
        steps.append(Step("Below the floor", "", r["below_floor_sentence"]))
    return steps
