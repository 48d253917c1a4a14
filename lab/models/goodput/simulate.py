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
  of their current lengths (prompt + tokens generated so far); 0 when none decodes. A model
  with sliding-window or chunked layers reads, per request, its own
  :func:`lab.models.layer_kinds.read_layer_tokens` at its current length, summed and divided
  by ``L`` (each request's ``effective_context``, as experiment 1's step reads).
- Admitted requests emit their first token at the end of their admission step; decoding
  requests emit one token per step; a request leaves when it has all its output tokens.

**Requests that can never fit.** With the memory check on, a request whose own final-length KV
exceeds the free memory could never be admitted and would block the FCFS queue forever. It is
*rejected* on arrival: counted among the requests, never good, reported in
``rejected_requests``, with no TTFT or TPOT (NaN).

Speed: between events (an admission, a finish, an arrival that could be admitted) every step
has the same decoding set, so a run of such steps is costed as one vectorised call of
:func:`lab.models.decode_step.attention_phase` and a cumulative sum; short runs go step by step
through a table of the attention time by cached tokens, built by one vectorised call of the same
function (a per-step call of :func:`lab.models.decode_step.attention_terms`, the same formula,
when a table would be too large). The queue is a range of request indices (FCFS is arrival
order), arrivals join it by bisection, and finishes come off a heap of integer keys: per-step
work is O(1) amortised. With sliding-window or chunked layers the cached tokens read no longer
grow by ``B`` a step (a window saturates, a chunk restarts), so every step's read is summed over
the decoding requests (:class:`_LayerKindReads`): O(B) a step, in vectorised windows.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from dataclasses import dataclass
from heapq import heappop, heappush

import numpy as np

from lab.models.decode_step import attention_phase, attention_terms, linear_phase
from lab.models.goodput.trace import Trace
from lab.models.inputs import DecodeInputs
from lab.models.layer_kinds import has_local_layers, read_layer_tokens
from lab.models.memory import kv_bytes_per_sequence, kv_free_bytes
from lab.models.prefill import prefill_step_cost

_FIRST_WINDOW = 64
"""Steps costed per vectorised call at first; doubled while a run continues."""
_SCALAR_RUN = 32
"""Runs of at most this many steps are costed step by step (a numpy call costs more); at most
:data:`_FIRST_WINDOW`, so the running sum restarts where the vectorised path's would."""
_NEVER = float("inf")
_TABLE_ENTRIES = 1 << 20
"""Largest table of attention times by cached tokens (a list: ~32 MB at most)."""


def _buffer(code: str, values) -> array:
    """``values`` as an :class:`array.array` of type ``code`` (``d``, ``q`` or ``b``)."""
    dtype = {"d": np.float64, "q": np.int64, "b": np.int8}[code]
    out = array(code)
    out.frombytes(np.ascontiguousarray(values, dtype=dtype).tobytes())
    return out


def _scatter(values: np.ndarray, served: np.ndarray, fill) -> np.ndarray:
    """``values`` (one per served request) at the rows ``served`` of a new array, ``fill`` elsewhere."""
    out = np.full(served.size, fill, dtype=values.dtype)
    out[served] = values
    return out


class _AttentionTimes:
    """:func:`lab.models.decode_step.attention_phase`'s ``attention_time_s`` indexed by the cached
    tokens, ``times[kv_tokens]``, one :func:`lab.models.decode_step.attention_terms` call each
    (used when a table of every count would be too large)."""

    def __init__(self, model, gpu, tp: int, kv_precision: str) -> None:
        self._terms = attention_terms(model, gpu, tp, kv_precision)  # the decode step's formula

    def __getitem__(self, kv_tokens: int) -> float:
        _, _, memory_time, compute_time = self._terms(kv_tokens)
        return memory_time if memory_time >= compute_time else compute_time


def attention_times(model, gpu, tp: int, kv_precision: str, largest: int):
    """The attention phase's time for every count of cached tokens ``0..largest``, seconds.

    A list built by one vectorised :func:`lab.models.decode_step.attention_phase` call (the same
    floating-point operations as a per-step call, so the same bits) when it has at most
    :data:`_TABLE_ENTRIES` entries, else an :class:`_AttentionTimes` computing each on demand.
    """
    if largest < _TABLE_ENTRIES:
        tokens = np.arange(largest + 1, dtype=np.int64)
        times = attention_phase(model, gpu, tp=tp, kv_tokens=tokens, kv_precision=kv_precision)
        return np.asarray(times["attention_time_s"], dtype=np.float64).tolist()
    return _AttentionTimes(model, gpu, tp, kv_precision)


class _LayerKindReads:
    """Attention times of a model with sliding-window or chunked layers, from the decoding set.

    A decoding request ``h`` admitted at step ``s_h`` with prompt ``p_h`` has ``p_h − s_h + t``
    tokens cached at step ``t``; the step reads ``Σ_h read_layer_tokens(p_h − s_h + t) / L``
    full-layer tokens (:func:`lab.models.layer_kinds.read_layer_tokens`), costed by
    :func:`lab.models.decode_step.attention_terms` (the decode step's formula).
    """

    _CELLS = 1 << 22
    """Most (request, step) cells one vectorised call holds."""

    def __init__(self, model, gpu, tp: int, kv_precision: str) -> None:
        self._model = model
        self._terms = attention_terms(model, gpu, tp, kv_precision)
        self._shares: dict[int, int] = {}   # h → p_h − s_h of the decoding requests
        self._array: np.ndarray | None = None

    def add(self, h: int, share: int) -> None:
        """Request ``h`` starts decoding with ``p_h − s_h = share``."""
        self._shares[h] = share
        self._array = None

    def remove(self, h: int) -> None:
        """Request ``h`` has finished."""
        del self._shares[h]
        self._array = None

    def steps_per_call(self) -> int:
        """Most steps one :meth:`times` call should cost at the current batch."""
        return max(1, self._CELLS // max(len(self._shares), 1))

    def times(self, steps: np.ndarray) -> np.ndarray:
        """Attention time (s) of each step in ``steps`` for the current decoding set."""
        if self._array is None:
            self._array = np.fromiter(self._shares.values(), dtype=np.int64,
                                      count=len(self._shares))
        lengths = self._array[:, None] + np.asarray(steps, dtype=np.int64)[None, :]
        kv_tokens = read_layer_tokens(self._model, lengths).sum(axis=0) / self._model.layers
        _, _, memory_time, compute_time = self._terms(kv_tokens)
        return np.maximum(memory_time, compute_time)


class _StepTimes:
    """A step's decode part: experiment 1's step for the decoding set, ``linear(B) +
    attention(cached tokens)`` (s), where at step ``u`` the ``B`` decoding requests hold
    ``offset + B·u`` tokens (:class:`_LayerKindReads` for a model with local layers). The sum
    in two forms that give the same bits: :meth:`run` adds a run of steps one by one through
    the table of attention times, :meth:`many` costs a run of steps in one vectorised call;
    :meth:`one` is either for one step."""

    def __init__(self, inputs: DecodeInputs, linear: np.ndarray, kinds, attention) -> None:
        self._inputs = inputs
        self._linear, self._linear_list = linear, linear.tolist()
        self._kinds, self._attention = kinds, attention

    def one(self, batch: int, offset: int, step: int) -> float:
        """The decode part of step ``step`` (s)."""
        if self._kinds is not None:
            return float(self.many(batch, offset, np.array([step]))[0])
        return self.run(batch, offset, step, 1, 0.0, _NEVER)[0]

    def run(self, batch: int, offset: int, first: int, count: int, now: float, due: float
            ) -> tuple[float, int]:
        """The decode parts of steps ``first .. first + count − 1`` added one by one (s), and
        the steps added: fewer when ``now`` plus the running sum reaches ``due`` first (the
        step that reaches it included). Without local layers only."""
        lin, attention = self._linear_list[batch], self._attention
        base = offset + batch * (first - 1)
        total = 0.0
        for kv_tokens in range(base + batch, base + batch * count + 1, batch):
            total += lin + attention[kv_tokens]
            if now + total >= due:
                return total, (kv_tokens - base) // batch
        return total, count

    def many(self, batch: int, offset: int, steps: np.ndarray) -> np.ndarray:
        """The decode part of each step of ``steps`` (s)."""
        if self._kinds is not None:
            attention = self._kinds.times(steps)
        else:
            i = self._inputs
            attention = attention_phase(i.model, i.gpu, tp=i.tp, kv_tokens=offset + batch * steps,
                                        kv_precision=i.kv_precision)["attention_time_s"]
        return self._linear[batch] + attention


def largest_cached_tokens(prompt: np.ndarray, output: np.ndarray, cap: int) -> int:
    """An upper bound on the tokens cached by the decoding requests of any step: the sum of the
    ``cap`` largest final lengths ``prompt + output − 1`` (a request decodes at most ``cap``
    at a time and has at most that many tokens cached while it decodes)."""
    lengths = prompt + output - 1
    if lengths.size > cap:
        lengths = np.partition(lengths, lengths.size - cap)[lengths.size - cap:]
    return int(lengths.sum())


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

    kv_need = kv_bytes_per_sequence(model, tp, prompt + output, inputs.page, inputs.kv_precision)
    free = None
    rejected = np.zeros(n, dtype=bool)
    if memory_check:
        free = float(kv_free_bytes(model, gpu, tp=tp, precision=precision,
                                   budget_fraction=inputs.budget_fraction,
                                   reserve_bytes=inputs.reserve_bytes))
        rejected = kv_need > free
    served = ~rejected
    some_rejected = bool(rejected.any())
    prompt_h, output_h = (prompt[served], output[served]) if some_rejected else (prompt, output)
    local = has_local_layers(model)
    kinds = _LayerKindReads(model, gpu, tp, inputs.kv_precision) if local else None
    attention = None if local else attention_times(
        model, gpu, tp, inputs.kv_precision, largest_cached_tokens(prompt_h, output_h, cap))
    decode_time = _StepTimes(inputs, linear, kinds, attention)

    # The requests that can be served, in arrival order (FCFS), are numbered h = 0, 1, ...:
    # the queue is ``h in [head, tail)``, ``arrived[j]`` of them are among the first j requests
    # of the trace, ``prompt_sum[h]`` is the prompt tokens of the first h (a step's prefill
    # tokens as one subtraction) and ``prefill_alone[h]`` the prefill cost of request h alone.
    # State is kept in compact typed buffers (8 bytes an entry, not a Python object): indexing
    # them is as fast as a list's and a million requests take 8 MB each.
    arrived = (_buffer("q", np.concatenate([[0], np.cumsum(served)])) if some_rejected
               else range(n + 1))
    prompt_list = _buffer("q", prompt_h)
    output_list = _buffer("q", output_h)
    kv_list = _buffer("d", kv_need[served] if memory_check else [])  # read with the check only
    prompt_sum = _buffer("q", np.concatenate([[0], np.cumsum(prompt_h)]))
    prefill_alone = _buffer("d", prefill_step_cost(c0_s, c1_s, prompt_h))
    arrival_list = _buffer("d", arrival)
    served_count = len(prompt_list)
    first = _buffer("d", np.full(served_count, np.nan))
    finish = _buffer("d", np.full(served_count, np.nan))
    # ``prompt − admission step`` per request (its share of ``offset``; the step from it at the end)
    offset_share = _buffer("q", np.zeros(served_count, dtype=np.int64))

    now, steps, next_arrival, head, tail = 0.0, 0, 0, 0, 0
    # Decoding requests as heap keys ``finish step · n + h`` (ordered as the pairs would be).
    decoding: list[int] = []
    batch = 0          # requests decoding
    offset = 0         # Σ (prompt_h − admission step_h) over the decoding set
    kv_used = 0.0      # KV reserved by the running requests (with the memory check), bytes
    scalar_run = _SCALAR_RUN
    push, pop, bisect = heappush, heappop, bisect_right

    due = arrival_list[0] if n else _NEVER  # the next arrival (infinite once all have arrived)
    while batch or head < served_count:
        if due <= now:
            next_arrival = bisect(arrival_list, now, next_arrival)
            tail = arrived[next_arrival]
            due = arrival_list[next_arrival] if next_arrival < n else _NEVER
        start = head
        if head < tail and batch < cap:
            if memory_check:
                while head < tail and batch + head - start < cap:
                    need = kv_list[head]
                    if kv_used + need > free:
                        break
                    kv_used += need
                    head += 1
            else:
                head = start + cap - batch
                if head > tail:
                    head = tail
        elif not batch:
            now = max(now, due)  # nothing to do until the next arrival
            continue

        if head > start:
            if head == start + 1:
                cost = prefill_alone[start]
            else:
                cost = prefill_step_cost(c0_s, c1_s, prompt_sum[head] - prompt_sum[start])
            if batch:
                cost += decode_time.one(batch, offset, steps + 1)
            now += cost
            steps += 1
        else:
            # No admission is possible until the next finish (or an admissible arrival): cost
            # the run of identical-batch steps, short runs step by step, long ones in
            # vectorised windows. Both add the costs in the same order (a running sum from the
            # window's start), so they give the same times to the last bit.
            run = decoding[0] // n - steps
            watch = head == tail and batch < cap and next_arrival < n  # may one be admitted?
            if run <= scalar_run and not local:
                total, run = decode_time.run(batch, offset, steps + 1, run, now,
                                             due if watch else _NEVER)
                now += total
                steps += run
            else:
                window = _FIRST_WINDOW
                while run:
                    count = min(run, window) if not local else min(
                        run, window, kinds.steps_per_call())
                    u = np.arange(steps + 1, steps + count + 1, dtype=np.int64)
                    cost = decode_time.many(batch, offset, u)
                    ends = now + np.cumsum(cost)
                    if watch:
                        k = int(np.searchsorted(ends, due, side="left"))
                        if k < count:
                            now = float(ends[k])
                            steps += k + 1
                            break
                    now = float(ends[-1])
                    steps += count
                    run -= count
                    window *= 2

        limit = (steps + 1) * n  # keys of the requests finishing at this step are below it
        if decoding and decoding[0] < limit:
            base = steps * n
            while decoding and decoding[0] < limit:
                h = pop(decoding) - base
                batch -= 1
                offset -= offset_share[h]
                if local:
                    kinds.remove(h)
                finish[h] = now
                if memory_check:
                    kv_used -= kv_list[h]
        if head > start:
            for h in range(start, head):
                first[h] = now
                share = offset_share[h] = prompt_list[h] - steps
                tokens = output_list[h]
                if tokens == 1:
                    finish[h] = now
                    if memory_check:
                        kv_used -= kv_list[h]
                else:
                    push(decoding, (steps + tokens - 1) * n + h)
                    batch += 1
                    offset += share
                    if local:
                        kinds.add(h, share)
        if not batch:
            kv_used = 0.0  # nothing running: no reservation can linger through rounding

    # The per-request results: the buffers' memory as arrays (no copy) when every request was
    # served, else scattered to the trace's rows; the loop's other buffers are freed first.
    del arrival_list, prompt_list, output_list, kv_list, prompt_sum, prefill_alone, kv_need
    first_token = np.frombuffer(first, dtype=np.float64)
    finish_time = np.frombuffer(finish, dtype=np.float64)
    admission = np.frombuffer(offset_share, dtype=np.int64)
    np.subtract(prompt_h, admission, out=admission)  # prompt − (prompt − step)
    if some_rejected:
        first_token, finish_time, admission = (
            _scatter(values, served, fill) for values, fill in
            ((first_token, np.nan), (finish_time, np.nan), (admission, 0)))
    return Simulation(trace=trace, batch_cap=cap, first_token_s=first_token,
                      finish_s=finish_time, admission_step=admission,
                      rejected=rejected, steps=steps, kv_free_bytes=free)
