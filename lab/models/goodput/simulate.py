"""Experiment 7's deterministic continuous-batching model, rule for rule as in docs/model.md §7.

- Steps run back to back. At the start of a step, requests with ``arrival ≤ now`` join a FCFS
  queue (ties by request id). With nothing running or queued, time jumps to the next arrival.
- Admission takes the head of the queue while ``running < M`` (the batch cap) and, when the
  memory check is on, while the KV of every running request at its final length
  (``prompt + output`` tokens, paged as in experiment 2) fits the experiment-2 free memory
  ``budget − weights − reserve``. The queue is strictly FCFS: a head that does not fit yet
  blocks the requests behind it.
- A step costs ``c0 + c1·Σ prompt tokens admitted this step`` (0 if none) plus experiment 1's
  decode step for the requests already decoding: ``B`` = their count, attention over the SUM
  of their current lengths (prompt + tokens generated so far); 0 when none decodes.
- Admitted requests emit their first token at the end of their admission step; decoding
  requests emit one token per step; a request leaves when it has all its output tokens.

**Requests that can never fit.** With the memory check on, a request whose own final-length KV
exceeds the free memory could never be admitted and would block the FCFS queue forever. It is
*rejected* on arrival: counted among the requests, never good, reported in
``rejected_requests``, with no TTFT or TPOT (NaN).

Speed: between events (an admission, a finish, an arrival that could be admitted) every step
has the same decoding set, so a run of such steps is costed as one vectorised call of
:func:`lab.models.decode_step.attention_phase` and a cumulative sum (short runs step by step
through :func:`lab.models.decode_step.attention_terms`, the same formula); per-step work is
O(1) amortised with a heap of finish steps and a running sum of lengths.
"""

from __future__ import annotations

import heapq
from array import array
from collections import deque
from dataclasses import dataclass

import numpy as np

from lab.models.decode_step import attention_phase, attention_terms, linear_phase
from lab.models.goodput.trace import Trace
from lab.models.inputs import DecodeInputs
from lab.models.memory import kv_bytes_per_sequence, kv_free_bytes
from lab.models.prefill import prefill_step_cost

_FIRST_WINDOW = 64
"""Steps costed per vectorised call at first; doubled while a run continues."""
_SCALAR_RUN = 32
"""Runs of at most this many steps are costed step by step (a numpy call costs more); at most
:data:`_FIRST_WINDOW`, so the running sum restarts where the vectorised path's would."""
_NEVER = float("inf")


def _buffer(code: str, values) -> array:
    """``values`` as an :class:`array.array` of type ``code`` (``d``, ``q`` or ``b``)."""
    dtype = {"d": np.float64, "q": np.int64, "b": np.int8}[code]
    out = array(code)
    out.frombytes(np.ascontiguousarray(values, dtype=dtype).tobytes())
    return out


def scalar_attention_time(model, gpu, tp: int, kv_precision: str = "bf16"):
    """:func:`lab.models.decode_step.attention_phase`'s ``attention_time_s`` for one Python ``int`` of
    cached tokens: :func:`lab.models.decode_step.attention_terms` (the one copy of the formula)
    and the larger of its two times, without building a dict of five numpy values per step."""
    terms = attention_terms(model, gpu, tp, kv_precision)

    def attention_time(kv_tokens: int) -> float:
        _, _, memory_time, compute_time = terms(kv_tokens)
        return memory_time if memory_time >= compute_time else compute_time

    return attention_time


@dataclass(frozen=True)
class Simulation:
    """What happened to every request of a trace (arrays in the trace's sorted order).

    Attributes
    ----------
    trace : Trace
        The requests served.
    batch_cap : int
        The cap ``M`` on running requests.
    first_token_s, finish_s : numpy.ndarray
        Time of the first and the last output token, seconds (NaN when rejected).
    admission_step : numpy.ndarray
        1-based index of the step that admitted each request (0 when rejected).
    rejected : numpy.ndarray
        True for requests that can never fit under the memory check.
    steps : int
        Steps executed.
    kv_free_bytes : float or None
        Free memory for KV per GPU when the memory check is on, bytes.
    """

    trace: Trace
    batch_cap: int
    first_token_s: np.ndarray
    finish_s: np.ndarray
    admission_step: np.ndarray
    rejected: np.ndarray
    steps: int
    kv_free_bytes: float | None = None

    @property
    def ttft_s(self) -> np.ndarray:
        """``first token time − arrival`` per request, seconds."""
        return self.first_token_s - self.trace.arrival_s

    @property
    def tpot_s(self) -> np.ndarray:
        """``(finish − first)/(out − 1)`` per request (0 for a one-token output), seconds."""
        out = self.trace.output_tokens
        span = self.finish_s - self.first_token_s
        return np.where(out > 1, span / np.maximum(out - 1, 1), 0.0 * span)


def simulate(
    trace: Trace,
    inputs: DecodeInputs,
    batch_cap: int,
    c0_s: float,
    c1_s: float,
    *,
    memory_check: bool = False,
) -> Simulation:
    """Serve ``trace`` with at most ``batch_cap`` running requests.

    Parameters
    ----------
    trace : Trace
        Requests sorted by arrival (as :func:`~lab.models.goodput.trace.load_trace` returns them).
    inputs : DecodeInputs
        Experiment 1's decode step (model, GPU, tp, precision; one configuration) and
        experiment 2's memory inputs (share of capacity, bytes, tokens per page); its batch
        and context are not used (the trace sets them step by step).
    batch_cap : int
        Largest number of running requests ``M`` (≥ 1).
    c0_s, c1_s : float
        Prefill curve ``c(n) = c0 + c1·n``, seconds and seconds per prompt token.
    memory_check : bool
        Also admit only while every running request's final-length KV fits the free memory.

    Returns
    -------
    Simulation
    """
    model, gpu, tp, precision = inputs.model, inputs.gpu, inputs.tp, inputs.precision
    n = len(trace)
    arrival = trace.arrival_s
    prompt = trace.prompt_tokens
    output = trace.output_tokens
    cap = int(batch_cap)
    linear = np.asarray(
        linear_phase(model, gpu, tp=tp, precision=precision, batch=np.arange(cap + 1))[
            "linear_time_s"], float)
    linear_list = linear.tolist()
    attention_time = scalar_attention_time(model, gpu, tp, inputs.kv_precision)
    terms = attention_terms(model, gpu, tp, inputs.kv_precision)  # the decode step's formula

    kv_need = kv_bytes_per_sequence(model, tp, prompt + output, inputs.page, inputs.kv_precision)
    free = None
    rejected = np.zeros(n, dtype=bool)
    if memory_check:
        free = float(kv_free_bytes(model, gpu, tp=tp, precision=precision,
                                   budget_fraction=inputs.budget_fraction,
                                   reserve_bytes=inputs.reserve_bytes))
        rejected = kv_need > free

    # Per-request state as compact typed buffers (8 bytes an entry, not a Python object):
    # indexing them is as fast as a list's and a million requests take 8 MB each.
    first = _buffer("d", np.full(n, np.nan))
    finish = _buffer("d", np.full(n, np.nan))
    admitted_at = _buffer("q", np.zeros(n, dtype=np.int64))
    prompt_list = _buffer("q", prompt)
    output_list = _buffer("q", output)
    arrival_list = _buffer("d", arrival)
    kv_list = _buffer("d", kv_need)
    rejected_list = _buffer("b", rejected)

    now, steps, next_arrival = 0.0, 0, 0
    queue: deque[int] = deque()
    decoding: list[tuple[int, int]] = []  # (finish step, request index)
    batch = 0          # requests decoding
    offset = 0         # Σ (prompt_i − admission step_i) over the decoding set
    kv_used = 0.0
    left = n - int(rejected.sum())

    while left:
        while next_arrival < n and arrival_list[next_arrival] <= now:
            if not rejected_list[next_arrival]:
                queue.append(next_arrival)
            next_arrival += 1
        if not batch and not queue:
            now = max(now, arrival_list[next_arrival])
            continue

        admitted: list[int] = []
        while queue and batch + len(admitted) < cap:
            head = queue[0]
            if memory_check and kv_used + kv_list[head] > free:
                break
            queue.popleft()
            admitted.append(head)
            kv_used += kv_list[head]

        if admitted:
            cost = prefill_step_cost(c0_s, c1_s, sum([prompt_list[i] for i in admitted]))
            if batch:
                cost += linear_list[batch] + attention_time(offset + batch * (steps + 1))
            now += cost
            steps += 1
        else:
            # No admission is possible until the next finish (or an admissible arrival): cost
            # the run of identical-batch steps, short runs step by step, long ones in
            # vectorised windows. Both add the costs in the same order (a running sum from the
            # window's start), so they give the same times to the last bit.
            run = decoding[0][0] - steps
            watch = not queue and batch < cap and next_arrival < n
            if run <= _SCALAR_RUN:
                lin = linear_list[batch]
                due = arrival_list[next_arrival] if watch else _NEVER
                start, total = now, 0.0
                for k in range(1, run + 1):
                    # attention_time with its max inlined (a call fewer per step)
                    _, _, memory_time, compute_time = terms(offset + batch * (steps + k))
                    total += lin + (memory_time if memory_time >= compute_time
                                    else compute_time)
                    if start + total >= due:
                        run = k
                        break
                now = start + total
                steps += run
            else:
                window = _FIRST_WINDOW
                while run:
                    count = min(run, window)
                    u = np.arange(steps + 1, steps + count + 1, dtype=np.int64)
                    cost = linear[batch] + attention_phase(
                        model, gpu, tp=tp, kv_tokens=offset + batch * u)["attention_time_s"]
                    ends = now + np.cumsum(cost)
                    if watch:
                        k = int(np.searchsorted(ends, arrival_list[next_arrival], side="left"))
                        if k < count:
                            now = float(ends[k])
                            steps += k + 1
                            break
                    now = float(ends[-1])
                    steps += count
                    run -= count
                    window *= 2

        while decoding and decoding[0][0] == steps:
            _, i = heapq.heappop(decoding)
            batch -= 1
            offset -= prompt_list[i] - admitted_at[i]
            finish[i] = now
            kv_used -= kv_list[i]
            left -= 1
        for i in admitted:
            first[i] = now
            admitted_at[i] = steps
            if output_list[i] == 1:
                finish[i] = now
                kv_used -= kv_list[i]
                left -= 1
            else:
                heapq.heappush(decoding, (steps + output_list[i] - 1, i))
                batch += 1
                offset += prompt_list[i] - steps
        if not batch:
            kv_used = 0.0  # nothing running: no reservation can linger through rounding

    return Simulation(trace=trace, batch_cap=cap,
                      first_token_s=np.frombuffer(first, dtype=np.float64).copy(),
                      finish_s=np.frombuffer(finish, dtype=np.float64).copy(),
                      admission_step=np.frombuffer(admitted_at, dtype=np.int64).copy(),
                      rejected=rejected, steps=steps, kv_free_bytes=free)
