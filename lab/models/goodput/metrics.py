"""Experiment 7's contract and its figures: goodput beside throughput and attainment.

A request is good when ``TTFT ≤ T1`` and ``TPOT ≤ T2``::

    goodput    = good requests / (last finish − first arrival)        (requests/s)
    throughput = output tokens of completed requests / the same span   (tokens/s)
    attainment = good requests / all requests                          (fraction)
"""

from __future__ import annotations

import numpy as np

from lab.models.goodput.simulate import Simulation

UNITS = {
    "requests": ("requests in the trace", "requests"),
    "completed_requests": ("requests served", "requests"),
    "rejected_requests": ("requests that can never fit in memory", "requests"),
    "good_requests": ("requests meeting the contract", "requests"),
    "makespan_s": ("last finish − first arrival", "s"),
    "output_tokens": ("output tokens served", "tokens"),
    "goodput_rps": ("goodput", "requests/s"),
    "throughput_tokens_per_s": ("throughput", "tokens/s"),
    "attainment": ("share of requests meeting the contract", "1"),
    "ttft_p50_s": ("median TTFT", "s"),
    "ttft_p90_s": ("90th percentile TTFT", "s"),
    "tpot_p50_s": ("median TPOT", "s"),
    "tpot_p90_s": ("90th percentile TPOT", "s"),
    "steps": ("steps executed", "steps"),
}
"""``(long_name, units)`` of every output of :func:`goodput_metrics`."""


def good_mask(sim: Simulation, ttft_limit_s: float, tpot_limit_s: float) -> np.ndarray:
    """True for each request meeting the contract (rejected requests are never good)."""
    served = ~sim.rejected
    with np.errstate(invalid="ignore"):
        return served & (sim.ttft_s <= ttft_limit_s) & (sim.tpot_s <= tpot_limit_s)


def goodput_metrics(sim: Simulation, ttft_limit_s: float, tpot_limit_s: float) -> dict:
    """Goodput, throughput and attainment of a simulation under a per-request contract.

    Parameters
    ----------
    sim : Simulation
        The result of :func:`~lab.models.goodput.simulate.simulate`.
    ttft_limit_s, tpot_limit_s : float
        Contract limits ``T1`` and ``T2``, seconds.

    Returns
    -------
    dict
        Keys as in :data:`UNITS` (SI units); rates are 0 when nothing was served.
    """
    trace = sim.trace
    served = ~sim.rejected
    good = good_mask(sim, ttft_limit_s, tpot_limit_s)
    n_good = int(good.sum())
    tokens = int(trace.output_tokens[served].sum())
    makespan = float(np.max(sim.finish_s[served]) - trace.arrival_s[0]) if served.any() else 0.0
    ttft, tpot = sim.ttft_s[served], sim.tpot_s[served]

    def pct(values: np.ndarray, q: float) -> float:
        return float(np.percentile(values, q)) if values.size else float("nan")

    return {
        "requests": len(trace),
        "completed_requests": int(served.sum()),
        "rejected_requests": int(sim.rejected.sum()),
        "good_requests": n_good,
        "makespan_s": makespan,
        "output_tokens": tokens,
        "goodput_rps": n_good / makespan if makespan > 0 else 0.0,
        "throughput_tokens_per_s": tokens / makespan if makespan > 0 else 0.0,
        "attainment": n_good / len(trace),
        "ttft_p50_s": pct(ttft, 50),
        "ttft_p90_s": pct(ttft, 90),
        "tpot_p50_s": pct(tpot, 50),
        "tpot_p90_s": pct(tpot, 90),
        "steps": sim.steps,
    }


def per_request(sim: Simulation, ttft_limit_s: float, tpot_limit_s: float) -> list[dict]:
    """One JSON-ready record per request: id, arrival, tokens, times and whether it is good."""
    trace = sim.trace
    good = good_mask(sim, ttft_limit_s, tpot_limit_s)
    ttft, tpot = sim.ttft_s, sim.tpot_s
    records = []
    for i, rid in enumerate(trace.ids):
        rejected = bool(sim.rejected[i])
        records.append({
            "request_id": rid,
            "arrival_s": float(trace.arrival_s[i]),
            "prompt_tokens": int(trace.prompt_tokens[i]),
            "output_tokens": int(trace.output_tokens[i]),
            "first_token_s": None if rejected else float(sim.first_token_s[i]),
            "finish_s": None if rejected else float(sim.finish_s[i]),
            "ttft_s": None if rejected else float(ttft[i]),
            "tpot_s": None if rejected else float(tpot[i]),
            "good": bool(good[i]),
            "rejected": rejected,
        })
    return records
