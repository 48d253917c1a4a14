"""The query's Pareto frontier: the sampled first pass drops only points the full rule drops,
so the frontier's indices are those of one sort of every point (ties included)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from sweeps import query as grid_query
from sweeps.query import _pareto_sorted, pareto


def brute_force(x: np.ndarray, y: np.ndarray) -> list[int]:
    """Points no earlier point (in x up, y down, index order) matches or beats in y."""
    order = sorted(range(x.size), key=lambda i: (x[i], -y[i], i))
    kept, best = [], -np.inf
    for i in order:
        if y[i] > best:
            kept.append(i)
            best = y[i]
    return kept


coarse = st.integers(0, 6).map(float)  # few values: many ties in x, in y and in both
fine = st.floats(0, 1, allow_nan=False, width=32)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_sampled_frontier_equals_the_full_sort(data):
    n = data.draw(st.integers(0, 400))
    values = data.draw(st.sampled_from([coarse, fine]))
    x = data.draw(arrays(np.float64, n, elements=values))
    y = data.draw(arrays(np.float64, n, elements=values))
    above, points = grid_query.PARETO_SAMPLE_ABOVE, grid_query.PARETO_SAMPLE_POINTS
    grid_query.PARETO_SAMPLE_ABOVE = 0
    grid_query.PARETO_SAMPLE_POINTS = data.draw(st.integers(1, 50))
    try:
        sampled = pareto(x, y)
    finally:
        grid_query.PARETO_SAMPLE_ABOVE, grid_query.PARETO_SAMPLE_POINTS = above, points
    assert sampled.tolist() == _pareto_sorted(x, y).tolist() == brute_force(x, y)


def test_a_large_block_takes_the_sampled_path_and_agrees():
    rng = np.random.default_rng(7)
    x = rng.random(50_000).astype(np.float32)
    y = (x + rng.normal(0, 0.05, x.size)).astype(np.float32)  # throughput rising with latency
    assert x.size > grid_query.PARETO_SAMPLE_ABOVE
    front = pareto(x, y)
    assert front.tolist() == _pareto_sorted(x, y).tolist()
    assert np.all(np.diff(x[front]) >= 0) and np.all(np.diff(y[front]) > 0)
