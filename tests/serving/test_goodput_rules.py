"""Experiment 7: hand-worked traces of 1–5 requests, one rule at a time.

Expected times are built by hand from the rules of docs/model.md §7 with experiment 1's actual terms:
``lin(B)`` is the linear phase at batch B and ``att(S)`` the attention phase over S cached
tokens in all.
"""

from __future__ import annotations

import pytest

from lab.models.decode_step import attention_phase, linear_phase
from lab.models.goodput import goodput_metrics, make_trace, per_request, simulate
from lab.models.inputs import DecodeInputs
from lab.models.memory import kv_bytes_per_sequence, memory_budget, params_bytes

C0, C1 = 0.002, 0.00001   # 2 ms per step, 0.01 ms per prompt token


@pytest.fixture
def run(llama8b, h100):
    def _run(rows, cap, **memory):
        trace = make_trace(*zip(*rows, strict=True))
        check = memory.pop("memory_check", False)
        inputs = DecodeInputs(llama8b, h100, 1, "bf16", **memory)
        sim = simulate(trace, inputs, cap, C0, C1, memory_check=check)
        return {rid: (sim.first_token_s[i], sim.finish_s[i]) for i, rid in enumerate(trace.ids)
                }, sim
    return _run


@pytest.fixture
def lin(llama8b, h100):
    return lambda b: float(linear_phase(llama8b, h100, tp=1, precision="bf16", batch=b)["linear_time_s"])


@pytest.fixture
def att(llama8b, h100):
    return lambda s: float(attention_phase(llama8b, h100, tp=1, kv_tokens=s)["attention_time_s"])


def test_single_request_after_idle_start(run, lin, att):
    times, sim = run([(1, 0.5, 100, 3)], cap=4)
    first = 0.5 + C0 + C1 * 100
    finish = first + (lin(1) + att(101)) + (lin(1) + att(102))
    assert times["1"] == pytest.approx((first, finish), rel=1e-12)
    assert sim.ttft_s[0] == pytest.approx(C0 + C1 * 100)
    assert sim.tpot_s[0] == pytest.approx((finish - first) / 2)
    assert sim.steps == 3


def test_queueing_behind_the_cap(run, lin, att):
    times, _ = run([(1, 0.0, 10, 2), (2, 0.0, 10, 2)], cap=1)
    t1 = C0 + C1 * 10                      # step 1: admit request 1
    t2 = t1 + lin(1) + att(11)             # step 2: request 1 decodes; 2 waits at the cap
    t3 = t2 + C0 + C1 * 10                 # step 3: admit request 2
    t4 = t3 + lin(1) + att(11)
    assert times["1"] == pytest.approx((t1, t2), rel=1e-12)
    assert times["2"] == pytest.approx((t3, t4), rel=1e-12)


def test_prefill_stalls_decoders(run, lin, att):
    times, sim = run([(1, 0.0, 10, 3), (2, 0.001, 50, 2)], cap=2)
    t1 = C0 + C1 * 10                          # admit 1; request 2 arrives during this step
    t2 = t1 + C0 + C1 * 50 + lin(1) + att(11)  # admit 2 while 1 decodes: the stall
    t3 = t2 + lin(2) + att(12 + 51)            # both decode
    assert times["1"] == pytest.approx((t1, t3), rel=1e-12)
    assert times["2"] == pytest.approx((t2, t3), rel=1e-12)
    alone = (lin(1) + att(11) + lin(1) + att(12)) / 2
    assert sim.tpot_s[0] > alone                # the prefill of request 2 slowed request 1


def test_one_token_output(run):
    times, sim = run([(1, 0.0, 40, 1)], cap=8)
    assert times["1"] == pytest.approx((C0 + C1 * 40, C0 + C1 * 40))
    assert sim.tpot_s[0] == 0.0


def test_simultaneous_arrivals_tie_by_request_id(run, lin, att):
    # Rows given out of order and ids compared as numbers: 9 before 10.
    times, _ = run([(10, 0.0, 20, 1), (9, 0.0, 30, 1)], cap=1)
    first_9 = C0 + C1 * 30
    assert times["9"] == pytest.approx((first_9, first_9))
    assert times["10"] == pytest.approx((first_9 + C0 + C1 * 20,) * 2)


def test_simultaneous_admission_shares_one_prefill_step(run, lin, att):
    times, _ = run([(1, 0.0, 100, 2), (2, 0.0, 200, 2), (3, 0.0, 300, 2)], cap=8)
    t1 = C0 + C1 * 600
    t2 = t1 + lin(3) + att(101 + 201 + 301)
    assert all(times[k] == pytest.approx((t1, t2), rel=1e-12) for k in "123")


def test_idle_gap_jumps_to_next_arrival(run, lin, att):
    times, _ = run([(1, 0.0, 10, 2), (2, 5.0, 10, 1)], cap=4)
    t1 = C0 + C1 * 10
    assert times["1"] == pytest.approx((t1, t1 + lin(1) + att(11)), rel=1e-12)
    assert times["2"] == pytest.approx((5.0 + C0 + C1 * 10,) * 2, rel=1e-12)


def test_arrival_during_a_run_of_decode_steps(run, lin, att):
    # Request 2 arrives in the middle of request 1's decoding and is admitted at the start
    # of the first step that begins at or after its arrival.
    times, _ = run([(1, 0.0, 10, 6), (2, 0.02, 10, 1)], cap=2)
    now = C0 + C1 * 10
    length = 11
    while now < 0.02:
        now += lin(1) + att(length)
        length += 1
    admit_end = now + C0 + C1 * 10 + lin(1) + att(length)
    assert times["2"][0] == pytest.approx(admit_end, rel=1e-12)


def test_memory_check_waits_and_rejects(run, llama8b, h100, lin, att):
    per_seq = float(kv_bytes_per_sequence(llama8b, 1, 15, 16))   # one 16-token page
    free_target = 1.5 * per_seq                                   # room for one, not two
    reserve = float(memory_budget(h100, 0.9) - params_bytes(llama8b, 1, "bf16")) - free_target
    memory = {"memory_check": True, "budget_fraction": 0.9, "reserve_bytes": reserve,
              "page": 16}
    rows = [(1, 0.0, 10, 5), (2, 0.0, 10, 5), (3, 0.0, 40, 2)]   # 3 needs 3 pages: never fits
    times, sim = run(rows, cap=8, **memory)
    t1 = C0 + C1 * 10
    t5 = t1 + sum(lin(1) + att(11 + k) for k in range(4))
    assert times["1"] == pytest.approx((t1, t5), rel=1e-12)
    assert times["2"][0] == pytest.approx(t5 + C0 + C1 * 10, rel=1e-12)   # waited for memory
    assert list(sim.rejected) == [False, False, True]
    metrics = goodput_metrics(sim, 10.0, 10.0)
    assert metrics["rejected_requests"] == 1
    assert metrics["good_requests"] == 2
    assert metrics["attainment"] == pytest.approx(2 / 3)
    record = per_request(sim, 10.0, 10.0)[2]
    assert record["rejected"] and record["ttft_s"] is None and not record["good"]


def test_contract_and_rates(run):
    _, sim = run([(1, 0.0, 100, 1), (2, 1.0, 100, 1)], cap=1)
    ttft = C0 + C1 * 100
    makespan = 1.0 + ttft
    m = goodput_metrics(sim, ttft_limit_s=ttft, tpot_limit_s=0.001)
    assert m["good_requests"] == 2
    assert m["makespan_s"] == pytest.approx(makespan)
    assert m["goodput_rps"] == pytest.approx(2 / makespan)
    assert m["throughput_tokens_per_s"] == pytest.approx(2 / makespan)
    assert goodput_metrics(sim, ttft_limit_s=ttft * 0.99, tpot_limit_s=1)["good_requests"] == 0
