"""Experiment 8's context-growth model: prefill time with a linear and a quadratic part.

Pair counts are exact integers (Python ``int`` in, ``int`` out; numpy ``int64`` arrays stay
``int64``, exact up to n ≈ 4·10^9). Times in seconds::

    pairs(n)  = n(n+1)/2                                   # dense causal attention
    pairs_W(n)= n(n+1)/2 if n ≤ W else W(W+1)/2 + (n−W)·W  # sliding window (extension)
    pairs_M(n)= layer_pairs(n) / L                         # a model's mix of layer kinds
    T(n)      = a·n + c·pairs(n)                           # serial phases
    n*        = 2a/c − 1                                   # where a·n = c·pairs(n)
"""

from __future__ import annotations

from lab.arrays import ArrayLike
from lab.models.layer_kinds import causal_pairs, has_local_layers, layer_pairs, window_pairs

UNITS = {
    "pairs": ("attention (query, key) pairs", "pairs"),
    "linear_time_s": ("linear part a·n", "s"),
    "attention_time_s": ("attention part c·pairs", "s"),
    "time_s": ("prefill time T(n)", "s"),
    "attention_share": ("attention share of T(n)", "1"),
    "pairs_doubled": ("pairs at twice the tokens", "pairs"),
    "time_doubled_s": ("prefill time T(2n)", "s"),
    "doubling_ratio": ("T(2n) / T(n)", "1"),
    "crossover_tokens": ("crossover n* where a·n = c·pairs", "tokens"),
}
"""``(long_name, units)`` of every output of :func:`context_metrics`."""


def dense_pairs(tokens: ArrayLike) -> ArrayLike:
    """Exact (query, key) pairs of dense causal attention over ``tokens``: ``n(n+1)/2``
    (:func:`lab.models.layer_kinds.causal_pairs`)."""
    return causal_pairs(tokens)


def attention_pairs(tokens: ArrayLike, window: ArrayLike | None = None,
                    model=None) -> ArrayLike:
    """Pairs per layer: dense, (extension) every layer with a sliding window of ``window``
    tokens, or a model's own mix of full, sliding-window and chunked layers.

    ``window=None`` is dense attention. With a window W each query sees at most W keys
    (itself included): ``W(W+1)/2 + (n−W)·W`` once n exceeds W
    (:func:`lab.models.layer_kinds.window_pairs`). A ``model`` with sliding-window or chunked
    layers gives :func:`lab.models.layer_kinds.layer_pairs` ``/ L``: the exact pairs of every
    layer, averaged over the layers (a float), so ``c`` stays the cost of a pair over all
    layers; a model of full layers gives the dense count.
    """
    if model is not None and has_local_layers(model):
        return layer_pairs(model, tokens) / model.layers
    if window is None:
        return dense_pairs(tokens)
    return window_pairs(tokens, window)


def prefill_time(tokens: ArrayLike, a_s: ArrayLike, c_s: ArrayLike,
                 window: ArrayLike | None = None, model=None) -> ArrayLike:
    """``T(n) = a·n + c·pairs(n)``, seconds."""
    return a_s * tokens + c_s * attention_pairs(tokens, window, model)


def context_metrics(tokens: ArrayLike, a_s: ArrayLike, c_s: ArrayLike,
                    window: ArrayLike | None = None, model=None) -> dict:
    """Prefill time of ``tokens``, its two parts, the doubling ratio and the crossover.

    Parameters
    ----------
    tokens : int
        Prompt tokens ``n`` (≥ 1).
    a_s : float
        Seconds per token of the linear layers (all layers), ``a``.
    c_s : float
        Seconds per attention pair (all layers and heads), ``c`` (> 0).
    window : int, optional
        Sliding-window width ``W`` (extension); None for dense causal attention.
    model : ModelSpec, optional
        A model whose layer kinds set the pairs (:func:`attention_pairs`); None: ``window``.

    Returns
    -------
    dict
        Keys as in :data:`UNITS`. ``crossover_tokens`` is for dense attention.
    """
    pairs = attention_pairs(tokens, window, model)
    pairs2 = attention_pairs(2 * tokens, window, model)
    linear = a_s * tokens * 1.0
    attention = c_s * pairs * 1.0
    total = linear + attention
    total2 = a_s * 2 * tokens + c_s * pairs2 * 1.0
    return {
        "pairs": pairs,
        "linear_time_s": linear,
        "attention_time_s": attention,
        "time_s": total,
        "attention_share": attention / total,
        "pairs_doubled": pairs2,
        "time_doubled_s": total2,
        "doubling_ratio": total2 / total,
        "crossover_tokens": 2.0 * a_s / c_s - 1.0,
    }
