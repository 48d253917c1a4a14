"""Experiment 7: properties over random traces, and the fast simulator against a naive one."""

from __future__ import annotations

import csv

import numpy as np
import pytest
from goodput_reference import reference
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lab.catalog import get_gpu, get_model
from lab.models.goodput import goodput_metrics, load_trace, make_trace, per_request, simulate

MODEL, GPU = get_model("llama-3.1-8b"), get_gpu("h100-sxm")

requests = st.lists(
    st.tuples(st.integers(0, 400).map(lambda ms: ms / 100),   # arrivals on a 10 ms grid: ties
              st.integers(1, 3000), st.integers(1, 120)),
    min_size=1, max_size=25)


def _trace(rows):
    ids = range(1, len(rows) + 1)
    arrival, prompt, output = zip(*rows, strict=True)
    return make_trace(ids, arrival, prompt, output)


@settings(max_examples=60, deadline=None)
@given(rows=requests, cap=st.sampled_from([1, 2, 3, 8, 64]),
       c0=st.sampled_from([0.0, 0.002]), c1=st.sampled_from([0.0, 2e-5, 6e-5]))
def test_matches_naive_reference(rows, cap, c0, c1):
    if c0 == 0 and c1 == 0:
        c0 = 0.001
    trace = _trace(rows)
    sim = simulate(trace, MODEL, GPU, 1, "bf16", cap, c0, c1)
    want = reference(trace, MODEL, GPU, 1, "bf16", cap, c0, c1)
    for i, rid in enumerate(trace.ids):
        assert sim.first_token_s[i] == pytest.approx(want[rid][0], rel=1e-9, abs=1e-12)
        assert sim.finish_s[i] == pytest.approx(want[rid][1], rel=1e-9, abs=1e-12)


@settings(max_examples=30, deadline=None)
@given(rows=requests, cap=st.sampled_from([1, 4, 16]), reserve_gb=st.floats(51.0, 51.9))
def test_memory_check_matches_naive_reference(rows, cap, reserve_gb):
    memory = {"budget_fraction": 0.9, "reserve_bytes": reserve_gb * 1e9, "page": 16}
    trace = _trace(rows)
    sim = simulate(trace, MODEL, GPU, 1, "bf16", cap, 0.002, 2e-5, memory_check=True, **memory)
    want = reference(trace, MODEL, GPU, 1, "bf16", cap, 0.002, 2e-5, memory=memory)
    for i, rid in enumerate(trace.ids):
        if want[rid] is None:
            assert sim.rejected[i]
            continue
        assert not sim.rejected[i]
        assert sim.finish_s[i] == pytest.approx(want[rid][1], rel=1e-9)


@settings(max_examples=60, deadline=None)
@given(rows=requests, cap=st.integers(1, 40), t1=st.floats(0.001, 5), t2=st.floats(1e-4, 0.1))
def test_invariants(rows, cap, t1, t2):
    trace = _trace(rows)
    sim = simulate(trace, MODEL, GPU, 1, "bf16", cap, 0.002, 2e-5)
    assert np.all(np.isfinite(sim.finish_s))                      # every request finishes
    assert np.all(sim.first_token_s >= trace.arrival_s)           # first token ≥ arrival
    assert np.all(sim.finish_s >= sim.first_token_s)
    assert np.all(sim.tpot_s >= 0)
    m = goodput_metrics(sim, t1, t2)
    assert m["completed_requests"] == len(trace)
    assert m["goodput_rps"] <= m["completed_requests"] / m["makespan_s"] + 1e-12
    assert 0 <= m["attainment"] <= 1
    assert m["output_tokens"] == int(trace.output_tokens.sum())


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=requests, seed=st.integers(0, 2**32 - 1))
def test_independent_of_csv_row_order(rows, seed, tmp_path):
    header = ("request_id", "arrival_s", "prompt_tokens", "output_tokens")
    lines = [(i, *row) for i, row in enumerate(rows, start=1)]
    shuffled = list(np.random.default_rng(seed).permutation(len(lines)))
    results = []
    for name, order in (("sorted.csv", range(len(lines))), ("shuffled.csv", shuffled)):
        path = tmp_path / name
        with path.open("w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(header)
            writer.writerows(lines[k] for k in order)
        sim = simulate(load_trace(path), MODEL, GPU, 1, "bf16", 4, 0.002, 2e-5)
        results.append({r["request_id"]: (r["ttft_s"], r["tpot_s"], r["good"])
                        for r in per_request(sim, 1.0, 0.02)})
    assert results[0] == results[1]


def test_ten_thousand_requests_finish():
    rng = np.random.default_rng(0)
    n = 10_000
    trace = make_trace(range(n), np.cumsum(rng.exponential(0.02, n)),
                       rng.integers(50, 2000, n), rng.integers(1, 400, n))
    sim = simulate(trace, MODEL, GPU, 1, "bf16", 64, 0.002, 2e-5)
    assert np.all(np.isfinite(sim.finish_s))
