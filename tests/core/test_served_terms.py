"""Experiment 11's issue-41 terms and data readings, each against values computed by hand
(docs/model.md §11): the four-column designs, the CPU-independent fit, the concurrency a row
states, copies of a run and the pools a copy lists. No served table is built here except by the
small loader calls (fast)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lab.served import gap
from lab.served.served_floors import PREFILL_CHUNK
from lab.served.served_loader import borrow_pools, parse_served, stated_concurrency


def test_nnls_recovers_four_coefficients_and_keeps_them_non_negative():
    x = np.column_stack([np.arange(1.0, 9.0), np.ones(8), np.arange(8.0) ** 2,
                         np.sqrt(np.arange(1.0, 9.0))])
    truth = np.array([0.5, 2.0, 0.25, 3.0])
    assert gap.nnls(x, x @ truth) == pytest.approx(truth, rel=1e-9)
    # y = 10 − x₀ wants a negative slope: the slope is held at 0, the constant takes the rest
    theta = gap.nnls(x[:, :2], 10 - x[:, 0])
    assert theta[0] == 0 and theta[1] == pytest.approx(np.mean(10 - x[:, 0]))
    with pytest.raises(ValueError):
        gap.nnls(np.ones((3, gap.MAX_COEFFICIENTS + 1)), np.ones(3))


def test_the_fit_sums_exactly_so_every_cpu_gets_the_same_bits():
    # 0.1 added ten times is 0.9999999999999999 in order; math.fsum rounds the exact sum, 1.0
    a = np.full(10, 0.1)
    assert gap._dot(a, np.ones(10)) == 1.0 == math.fsum([0.1] * 10)
    rng = np.random.default_rng(41)
    x, y = rng.random((300, 3)), rng.random(300)
    order = rng.permutation(300)  # another summation order, the same coefficients bit for bit
    assert gap.nnls(x, y).tolist() == gap.nnls(x[order], y[order]).tolist()


def test_the_tpot_design_by_hand():
    """Three rows: aggregated; disaggregated with its pools stated; with its batch inferred.
    floor 2, one-sequence step 0.4, comm 0.5, P_step 3, L 61, L_moe 58; the inferred row's
    slots basis 4 ms (its clients three times the listed slots: (3 − 1) · 2 ms). An aggregated
    row's second column is the one-sequence step, a disaggregated one's L; a disaggregated
    row's third column is the slots basis, an aggregated one's L_moe."""
    floor, comm, basis = np.full(3, 2.0), np.full(3, 0.5), np.array([3.0, 0.0, 0.0])
    layers, moe, one = np.full(3, 61.0), np.full(3, 58.0), np.full(3, 0.4)
    d = gap.tpot_design(floor, comm, basis, layers, np.array([True, False, False]),
                        np.full(3, 9.0), moe_layers=moe, stated=np.array([True, True, False]),
                        slots=np.array([0.0, 0.0, 4.0]), step_one=one)
    assert d.base.tolist() == [2.5, 2.5, 0.5]  # inferred: its floor is a fitted column
    assert d.columns.tolist() == [[3.0, 0.4, 58.0, 0.5],     # P, step_one, L_moe, comm
                                  [0.4, 61.0, 0.0, 0.0],     # k_step_one·step_one, L
                                  [0.0, 61.0, 4.0, 2.0]]     # k_slots·slots, k_inferred·floor
    # TPOT with k_prefill 0.5, k_step_one 2.5, t_moe 0.02 ms, k_comm 0.8 / k_step_one 1.5,
    # t_layer 0.01 ms / k_slots 0.25, k_inf 0.8
    assert d.base[0] + d.columns[0] @ [0.5, 2.5, 0.02, 0.8] == pytest.approx(
        2 + 0.5 + 1.5 + 1.0 + 1.16 + 0.4)
    assert d.base[1] + d.columns[1] @ [1.5, 0.01, 0.25, 0.0] == pytest.approx(
        2 + 1.5 * 0.4 + 0.5 + 0.61)
    assert d.base[2] + d.columns[2] @ [0.0, 0.01, 0.25, 0.8] == pytest.approx(
        0.8 * 2 + 0.5 + 0.61 + 1.0)
    assert gap.TPOT_COEFFICIENTS["disagg"][2] == "k_slots"
    assert gap.TPOT_COEFFICIENTS["agg"][1] == gap.TPOT_COEFFICIENTS["disagg"][0] == "k_step_one"
    with pytest.raises(ValueError, match="step_one"):
        gap.tpot_design(floor, comm, basis, layers, np.array([True, False, False]),
                        np.full(3, 9.0), moe_layers=moe, stated=np.array([True, True, False]))
    # without the keywords: the two-coefficient design as before
    old = gap.tpot_design(floor, comm, basis, layers, np.array([True, False, False]),
                          np.full(3, 9.0))
    assert old.columns.tolist() == [[3.0, 61.0], [2.0, 61.0], [2.0, 61.0]]


def test_the_slots_basis_by_hand():
    """1,200 clients on one listed decode worker whose memory holds 400 sequences: three times
    the slots, so the clients take turns, a further step of the capped batch per e-fold, ln 3 =
    1.0986 steps per token; at a 20 ms floor the basis is 21.97 ms (with k_slots 0.3: 6.59 ms).
    300 clients fit the slots: 0; a row whose listed pools hold its clients (stated) or an
    aggregated one: 0."""
    from lab.served.served_floors import slots_excess

    excess = slots_excess(np.array([1200, 300, 1200]), np.array([1, 1, 1]),
                          np.array([400, 300, 400]), np.array([False, False, True]))
    assert excess.tolist() == [math.log(3.0), 0.0, 0.0]
    assert excess[0] * 20.0 == pytest.approx(21.972245773)
    assert 0.3 * excess[0] * 20.0 == pytest.approx(6.591673732)
    # two workers of 400 hold 800 of 1,200 clients: ln 1.5 = 0.405 further steps
    assert slots_excess(np.array([1200]), np.array([2]), np.array([400]),
                        np.array([False])).tolist() == [math.log(1.5)]


def test_the_ttft_chunk_term_by_hand():
    """isl 8,192 at 2,048 tokens a chunk: 4 decode steps of 10 ms ride before the first token."""
    assert PREFILL_CHUNK == 2048
    steps = math.ceil(8192 / PREFILL_CHUNK) * 10.0
    d = gap.ttft_design(np.array([100.0]), np.array([9]), np.array([2]), np.array([500.0]),
                        chunk_basis=np.array([steps]))
    assert d.columns.tolist() == [[(9 - 1) / 2 * 100 / 2, 1.0, 40.0]]
    assert d.base[0] + d.columns[0] @ [0.5, 30.0, 2.0] == pytest.approx(100 + 100 + 30 + 80)


def test_the_ttft_queued_chunks_term_by_hand():
    """9 clients, isl 8,192 at 2,048 tokens a chunk, decode steps of 10 ms: the (9 − 1)/2 = 4
    prompts ahead ride 4 steps each, 16 steps of 10 ms = 160 ms; with k_queue_chunk 0.5, 80 ms
    beside the other terms (a disaggregated row's chunk basis is 0, so is this term)."""
    steps = math.ceil(8192 / PREFILL_CHUNK) * 10.0
    assert gap.queue_chunk_basis(np.array([steps, 0.0]), np.array([9, 9])).tolist() == [160.0, 0.0]
    d = gap.ttft_design(np.array([100.0]), np.array([9]), np.array([2]), np.array([500.0]),
                        chunk_basis=np.array([steps]), queued_chunks=True)
    assert d.columns.tolist() == [[(9 - 1) / 2 * 100 / 2, 1.0, 40.0, 160.0]]
    assert d.columns.shape[1] == len(gap.TTFT_COEFFICIENTS) <= gap.MAX_COEFFICIENTS
    assert d.base[0] + d.columns[0] @ [0.5, 30.0, 2.0, 0.5] == pytest.approx(
        100 + 100 + 30 + 80 + 80)


def test_a_row_below_its_stated_floor_is_not_fitted_on():
    """Rows measured below a floor whose batch they state (impossible as labelled) are left
    out of every fit, not of the scoring; a row whose batch is inferred (its floor an upper
    bound) stays. By hand: TPOT = floor + t · 1 with floor 10 ms, rows measured 12, 14 and 5 ms;
    fitted on all three rows t would be pulled down by the 5 ms row, on the first two it is
    the least-squares solution of 2/12, 4/14 over 1/12, 1/14."""
    from lab.served.served_calc import fit_rows

    measured = np.array([12.0, 14.0, 5.0, 5.0])
    floor = np.full(4, 10.0)
    keep = fit_rows(measured, floor, np.array([True, True, True, False]))
    assert keep.tolist() == [True, True, False, True]
    d = gap.Design(floor, np.ones((4, 1)), measured, keep)
    rows = d.fittable(np.array([True, True, True, False]))
    assert rows.tolist() == [True, True, False, False]
    t = gap.fit(d.base[rows], d.columns[rows], d.measured[rows])[0]
    # minimise (2 − t)²/12² + (4 − t)²/14²: t = (2/144 + 4/196) / (1/144 + 1/196)
    assert t == pytest.approx((2 / 144 + 4 / 196) / (1 / 144 + 1 / 196))
    assert gap.fit(floor[:3], np.ones((3, 1)), measured[:3])[0] < t
    # leave_one_workload_out honours it: the third row is predicted but not fitted on
    groups, workloads = np.array(["g"] * 4), np.array(["a", "b", "c", "c"])
    theta, fitted_on = gap.leave_one_workload_out(d, groups, workloads, np.ones(4, dtype=bool))
    # a: b and the inferred row of c; b: a and that row; c: a and b (never the third row)
    assert fitted_on.tolist() == [2, 2, 2, 2] and np.isfinite(theta).all()
    assert theta[2, 0] == pytest.approx(t)


def test_copies_count_once():
    runs = np.array(["a", "b", "a", "c", "b"])
    assert gap.first_of_each_run(np.ones(5, dtype=bool), runs).tolist() == [
        True, True, False, True, False]
    assert gap.first_of_each_run(np.array([False, True, True, True, True]), runs).tolist() == [
        False, True, True, True, False]


HEADER = ("id,silicon_data_source,backend,model_path,system,mode,isl,osl,batch_size,tp_size,"
          "attention_dp_size,moe_tp_size,moe_ep_size,decode_batch_size,decode_num_workers,"
          "decode_tp_size,prefill_num_workers,prefill_tp_size,silicon_ttft_ms,silicon_tpot_ms")


def test_the_concurrency_a_row_states():
    # batch_size × attention DP is the concurrency where the row states that product ...
    product = {"id": "x_c256_tp8_ep8_965", "silicon_data_source": "silicon_concurrency=256"}
    assert stated_concurrency(product, "row 1") == 256
    text = "\n".join([HEADER,
                      "r_c256_a,silicon_concurrency=256,trtllm,deepseek-v3,b200,agg,1024,1024,4,"
                      "1,64,8,8,,,,,,100,20",
                      # ... batch_size itself where the row states it (row 1537 of the shipped
                      # file: batch 32, attention DP 64, stated 32 in its id and its source)
                      "r_c32_b,silicon_concurrency=32,trtllm,deepseek-v3,b200,agg,8192,1024,32,"
                      "1,64,8,8,,,,,,1800,15",
                      # a gap-analysis row: batch_size 56 against a stated 224, batch_size kept
                      "r_c224_c,source_file=gap-analysis.csv; silicon_concurrency=224,trtllm,"
                      "deepseek-v3,b200,agg,4000,1000,56,4,,1,4,,,,,,588,90"]) + "\n"
    ds = parse_served(text.encode())
    assert ds["concurrency"].values.tolist() == [256, 32, 56]


def test_a_copy_lends_its_listed_pools():
    rows = [dict(id="listed", engine="trtllm", system="gb200", mode="disagg", isl=1024, osl=1024,
                 concurrency=2048, ttft_measured_ms=1409.2, tpot_measured_ms=17.4, tp=1, pp=1,
                 attention_dp=32, moe_ep=32, decode_batch=2048, decode_workers=1, prefill_tp=4,
                 prefill_pp=1, prefill_attention_dp=1, prefill_moe_ep=4, prefill_workers=1,
                 layout_from=""),
            dict(id="bare", engine="trtllm", system="gb200", mode="disagg", isl=1024, osl=1024,
                 concurrency=2048, ttft_measured_ms=1409.2, tpot_measured_ms=17.4, tp=32, pp=1,
                 attention_dp=1, moe_ep=4, decode_batch=1, decode_workers=1, prefill_tp=4,
                 prefill_pp=1, prefill_attention_dp=1, prefill_moe_ep=4, prefill_workers=1,
                 layout_from="")]
    other = {**rows[1], "id": "other run", "tpot_measured_ms": 17.5}
    out = borrow_pools([*rows, other])
    assert out[0] == rows[0]
    assert (out[1]["tp"], out[1]["attention_dp"], out[1]["moe_ep"], out[1]["decode_batch"],
            out[1]["layout_from"]) == (1, 32, 32, 2048, "listed")
    assert out[2] == other  # another run (its TPOT differs): its own layout, inferred


def test_one_requests_prefill_attention_stays_on_its_own_rank():
    """DeepSeek-V3 on GB200, a prefill worker of tp 1 × attention DP 8, a 1,024-token prompt.
    One request alone (the TTFT floor) computes all its causal attention pairs on the one rank
    that holds it; a queued prompt (the queue's basis) is one of eight spread over the ranks, a
    rank's share of the pairs 1/8. The linear phase is the same in both, so the floor exceeds
    the queue's basis by 7/8 of the whole attention compute; at attention DP 1 they are one."""
    from lab.catalog import get_gpu, get_model
    from lab.models.decode_step import attention_phase
    from lab.served.served_floors import _pairs, _prefill_times

    model, gpu, isl = get_model("deepseek-v3"), get_gpu("gb200"), np.array([1024])
    tp, dp = np.array([1]), np.array([8])
    own, spread = _prefill_times(model, gpu, "fp8", tp, dp, isl)
    whole = attention_phase(model, gpu, tp=tp,
                            kv_tokens=_pairs(model, isl))["attention_compute_time_s"]
    assert own[0] - spread[0] == pytest.approx(whole[0] * 7 / 8, rel=1e-9)
    one = np.array([1])
    own_one, spread_one = _prefill_times(model, gpu, "fp8", tp, one, isl)
    assert own_one[0] == spread_one[0]
