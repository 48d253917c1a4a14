"""Experiment 5's prefill-deadline model: chunked prefill of one prompt beside a decode batch.

Every function broadcasts over Python numbers, numpy arrays and xarray objects. Times are in
seconds, token counts are integers::

    k          = ceil(P / C)                        # prefill steps (chunks)
    step i     = d + c0 + c1 · min(C, remaining)    # decode batch plus one chunk
    TTFT       = k · (d + c0) + c1 · P
    ITL_during = d + c0 + c1 · min(C, P)            # what each decoding user waits per token
"""

from __future__ import annotations

import numpy as np

from lab.arrays import ArrayLike, ceil_div
from lab.units import fmt_count

UNITS = {
    "chunks": ("prefill steps (chunks)", "steps"),
    "first_chunk_tokens": ("prompt tokens in the first chunk", "tokens"),
    "last_chunk_tokens": ("prompt tokens in the last chunk", "tokens"),
    "decode_time_total_s": ("decode time spent during the prefill", "s"),
    "prefill_compute_s": ("prefill cost summed over the chunks", "s"),
    "ttft_s": ("time to first token", "s"),
    "itl_during_prefill_s": ("inter-token latency during the prefill", "s"),
    "meets_deadline": ("TTFT meets the deadline", "1"),
    "meets_itl": ("ITL meets its limit", "1"),
    "meets_both": ("both the deadline and the ITL limit are met", "1"),
}
"""``(long_name, units)`` of every output of :func:`prefill_metrics`."""


def prefill_step_cost(c0_s: ArrayLike, c1_s: ArrayLike, tokens: ArrayLike,
                      steps: ArrayLike = 1) -> ArrayLike:
    """The prefill cost curve ``c(n) = c0 + c1·n``: seconds for a step that prefills ``tokens``;
    over ``steps`` steps prefilling ``tokens`` in all, ``k·c0 + c1·n`` (s). The one copy of the
    curve: a chunked prefill's TTFT and ITL take it with ``d + c0`` as the per-step cost."""
    return steps * c0_s + c1_s * tokens


def prefill_metrics(
    prompt: ArrayLike,
    chunk: ArrayLike,
    decode_s: ArrayLike,
    c0_s: ArrayLike,
    c1_s: ArrayLike,
    deadline_s: ArrayLike,
    itl_limit_s: ArrayLike,
) -> dict:
    """TTFT and the decoders' inter-token latency for a prompt prefilled in chunks.

    Parameters
    ----------
    prompt : int
        Prompt tokens ``P`` (≥ 1).
    chunk : int
        Chunk size ``C``: most prompt tokens one step carries (≥ 1).
    decode_s : float
        Cost ``d`` of the running decode batch per step, seconds.
    c0_s, c1_s : float
        Prefill cost curve ``c(n) = c0 + c1·n``: seconds per step and seconds per token.
    deadline_s : float
        TTFT deadline ``D``, seconds.
    itl_limit_s : float
        Inter-token latency limit for the decoding users, seconds.

    Returns
    -------
    dict
        Keys as in :data:`UNITS`; times in seconds, booleans for the checks.
    """
    chunks = ceil_div(prompt, chunk)
    first = np.minimum(chunk, prompt)
    last = prompt - (chunks - 1) * chunk
    decode_total = chunks * decode_s
    prefill_compute = prefill_step_cost(c0_s, c1_s, prompt, chunks)
    ttft = prefill_step_cost(decode_s + c0_s, c1_s, prompt, chunks)
    itl = prefill_step_cost(decode_s + c0_s, c1_s, first)
    meets_deadline = ttft <= deadline_s
    meets_itl = itl <= itl_limit_s
    return {
        "chunks": chunks,
        "first_chunk_tokens": first,
        "last_chunk_tokens": last,
        "decode_time_total_s": 1.0 * decode_total,
        "prefill_compute_s": 1.0 * prefill_compute,
        "ttft_s": 1.0 * ttft,
        "itl_during_prefill_s": 1.0 * itl,
        "meets_deadline": meets_deadline,
        "meets_itl": meets_itl,
        "meets_both": meets_deadline & meets_itl,
    }


def chunk_sweep(
    prompt: int,
    decode_s: float,
    c0_s: float,
    c1_s: float,
    deadline_s: float,
    itl_limit_s: float,
) -> dict:
    """Every integer chunk size 1..P at once, and what the deadline and ITL limit allow.

    TTFT never rises and ITL never falls as the chunk grows, so the chunks meeting both form
    one contiguous range; it is found exactly from the full vectorised sweep anyway.

    Returns
    -------
    dict
        ``smallest_chunk_meeting_deadline`` (tokens or None), ``largest_chunk_meeting_itl``
        (tokens or None), ``feasible_chunks`` (``{"min", "max", "count"}`` or None),
        ``feasible_text`` (a sentence) and the ``sweep`` itself (arrays over ``chunk``).
    """
    chunk = np.arange(1, int(prompt) + 1, dtype=np.int64)
    sweep = prefill_metrics(int(prompt), chunk, decode_s, c0_s, c1_s, deadline_s, itl_limit_s)
    sweep["chunk"] = chunk
    deadline_ok = np.flatnonzero(sweep["meets_deadline"])
    itl_ok = np.flatnonzero(sweep["meets_itl"])
    both = np.flatnonzero(sweep["meets_both"])
    smallest = int(chunk[deadline_ok[0]]) if deadline_ok.size else None
    largest_itl = int(chunk[itl_ok[-1]]) if itl_ok.size else None
    if both.size:
        lo, hi = int(chunk[both[0]]), int(chunk[both[-1]])
        feasible = {"min": lo, "max": hi, "count": int(both.size)}
        text = (f"chunks of {lo:,} to {hi:,} tokens meet both" if lo != hi
                else f"only a chunk of {fmt_count(lo, 'token')} meets both")
    else:
        feasible = None
        text = "no chunk meets both"
    return {
        "smallest_chunk_meeting_deadline": smallest,
        "largest_chunk_meeting_itl": largest_itl,
        "feasible_chunks": feasible,
        "feasible_text": text,
        "sweep": sweep,
    }
