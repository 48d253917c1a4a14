"""Experiment 8: exact pair counts, the sliding-window extension, doubling ratio, crossover."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.limits import MAX_MS, MAX_TOKENS_CONTEXT, MIN_PAIR_COST_MS
from lab.models.context_growth import attention_pairs, context_metrics, dense_pairs
from lab.models.decode_step import linear_params
from lab.models.kv_shapes import attention_flops_per_pair
from lab.points.decode_points import DecodeConfig
from lab.points.serving_points import calc_context


def test_pairs_exact_at_ten_million():
    r = calc_context(tokens=10**7)
    assert r["pairs"] == 50_000_005_000_000
    assert isinstance(r["pairs"], int)
    assert calc_context(tokens=10**9)["pairs"] == 10**9 * (10**9 + 1) // 2


@given(st.integers(2, 10**12))
def test_one_more_token_adds_one_pair_per_key_it_sees(n):
    # the n-th token of a causal prompt attends to itself and the n - 1 before it
    assert dense_pairs(n) - dense_pairs(n - 1) == n
    assert isinstance(dense_pairs(n), int)


def test_pairs_int64_arrays_match_python_ints_exactly():
    n = np.array([1, 10**6, 10**7, 3 * 10**9], dtype=np.int64)
    got = dense_pairs(n)
    assert got.dtype == np.int64
    assert [int(v) for v in got] == [dense_pairs(int(k)) for k in n]
    assert int(got[-1]) == 4_500_000_001_500_000_000  # 3·10^9 · (3·10^9 + 1) / 2, by hand


def _brute(n: int, window: int | None) -> int:
    return sum(min(i, window) if window else i for i in range(1, n + 1))


@given(n=st.integers(1, 300), window=st.integers(1, 300))
def test_windowed_pairs_brute_force(n, window):
    assert int(attention_pairs(n, window)) == _brute(n, window)


def test_dense_pairs_brute_force():
    for n in range(1, 60):
        assert dense_pairs(n) == _brute(n, None)


@given(n=st.integers(1, 10**8), a=st.floats(0, 1e-3), c=st.floats(1e-13, 1e-6))
def test_doubling_ratio_between_two_and_four(n, a, c):
    r = context_metrics(n, a, c)
    assert 2 - 1e-9 <= r["doubling_ratio"] <= 4 + 1e-9


def test_crossover_terms_equal():
    a, c = 1.5e-5, 5e-10
    r = context_metrics(100, a, c)
    n_star = r["crossover_tokens"]
    assert n_star == pytest.approx(59_999)
    at = context_metrics(int(n_star), a, c)
    assert at["linear_time_s"] == pytest.approx(at["attention_time_s"])
    assert at["attention_share"] == pytest.approx(0.5)


def test_from_model_coefficients(llama8b, h100):
    r = calc_context(tokens=4096, from_model=DecodeConfig(precision="fp8"))
    assert r["inputs"]["a_s"] == pytest.approx(2 * linear_params(llama8b) / h100.peak_fp8)
    assert r["inputs"]["c_s"] == pytest.approx(attention_flops_per_pair(llama8b) / h100.peak_bf16)


def test_arrays_equal_pointwise():
    n = np.array([1, 2, 100, 4096, 10**6])
    grid = context_metrics(n, 1.5e-5, 5e-10, window=2048)
    grid = {k: np.broadcast_to(v, n.shape) for k, v in grid.items()}
    for i, k in enumerate(n):
        point = context_metrics(int(k), 1.5e-5, 5e-10, window=2048)
        for key, value in point.items():
            assert grid[key][i] == pytest.approx(value), key


@settings(max_examples=60, deadline=None)
@given(a_ms=st.one_of(st.just(0.0), st.floats(0, MAX_MS)),
       c_ms=st.one_of(st.just(MIN_PAIR_COST_MS), st.floats(MIN_PAIR_COST_MS, MAX_MS)),
       tokens=st.integers(1, MAX_TOKENS_CONTEXT))
def test_the_chart_draws_at_every_input_in_bounds(a_ms, c_ms, tokens):
    """A c at its lower bound (1e-200 ms) put the crossover near 3e198 tokens, and the chart's
    log-spaced axis raised a TypeError on the page; the axis now stops at 4 × the largest
    prompt and the text states the crossover."""
    from lab.experiments.context_growth_experiment import ContextGrowth

    data = ContextGrowth(a_ms=a_ms, c_ms=c_ms, tokens=tokens).chart_data()
    assert data.sizes["tokens"] >= 2
    assert int(data["tokens"].max()) <= 4 * MAX_TOKENS_CONTEXT


def test_a_crossover_beyond_any_prompt_and_one_below_a_token_read_as_numbers():
    """With c at its floor the crossover printed 199 digits, most of them a float's noise, and
    c read "1e+05 ns"; with a = 0 the text said "past the crossover at −1 tokens it dominates"."""
    from lab.experiments.context_growth_experiment import ContextGrowth

    far = ContextGrowth(a_ms=0.1, c_ms=1e-200)
    crossover = next(s for s in far.steps() if s.label == "Crossover n*")
    assert crossover.text().endswith("= 2.000 × 10¹⁹⁹ tokens")
    wide = ContextGrowth(c_ms=0.1000005)
    attention = next(s for s in wide.steps() if s.label == "Attention part")
    assert "c × pairs = 100,000 ns ×" in attention.text()
    none = ContextGrowth(a_ms=0)
    assert "it outweighs the linear part from the first token" in none.explanation()
    assert "−1 tokens it dominates" not in none.explanation()


def test_the_pair_and_token_costs_step_by_their_own_size():
    """A stepper's ↑ took c from 0.0000005 to 0.1000005 ms (a step of 0.1)."""
    from lab.experiments.context_growth_experiment import ContextGrowth

    assert ContextGrowth.param.c_ms.step == 1e-7 and ContextGrowth.param.a_ms.step == 0.001
