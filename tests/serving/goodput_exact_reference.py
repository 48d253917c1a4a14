"""A step-by-step simulator that adds the step costs in the fast simulator's exact order.

docs/model.md §7's rules with plain per-request lists, one step at a time. Unlike
``goodput_reference`` (which adds every step's cost to the clock), it groups the costs as the
fast simulator does, so the two agree to the last bit: an admission step adds its cost to the
clock; the steps between two events (a *run*: no admission, until a finish or, when the queue is
empty and a slot is free, the first step ending at or after the next arrival) are summed from
the run's start in windows of 64, 128, 256… steps, the clock being ``window start + running sum``.
Used only by the tests.
"""

from __future__ import annotations

from lab.models.decode_step import attention_phase, linear_phase
from lab.models.memory import kv_bytes_per_sequence, kv_free_bytes
from lab.models.prefill import prefill_step_cost

FIRST_WINDOW = 64
"""Steps summed from the run's start before the sum restarts (then twice as many each time)."""


def exact_reference(trace, inputs, cap, c0, c1, memory_check=False):
    """``(first token s, finish s, admission step)`` per request (trace order; None when rejected)
    and the steps executed."""
    model, gpu, tp, precision = inputs.model, inputs.gpu, inputs.tp, inputs.precision
    n = len(trace)
    arrival = [float(a) for a in trace.arrival_s]
    prompt = [int(p) for p in trace.prompt_tokens]
    out = [int(o) for o in trace.output_tokens]
    need = [float(kv_bytes_per_sequence(model, tp, prompt[i] + out[i], inputs.page,
                                        inputs.kv_precision)) for i in range(n)]
    free = float("inf")
    if memory_check:
        free = float(kv_free_bytes(model, gpu, tp=tp, precision=precision,
                                   budget_fraction=inputs.budget_fraction,
                                   reserve_bytes=inputs.reserve_bytes))
    result = [None] * n
    todo = {i for i in range(n) if need[i] <= free}
    now, steps, nxt, queue, running = 0.0, 0, 0, [], []  # running: [index, tokens generated]
    used = 0.0
    run = None  # [window start time, running sum, steps in window, window size, watch, due]
    while todo:
        while nxt < n and arrival[nxt] <= now:
            if nxt in todo:
                queue.append(nxt)
            nxt += 1
        if not running and not queue:
            now = max(now, arrival[nxt])
            continue
        admitted = []
        while queue and len(running) + len(admitted) < cap:
            if memory_check and used + need[queue[0]] > free:
                break
            used += need[queue[0]]
            admitted.append(queue.pop(0))
        steps += 1
        attention = 0.0
        if running:
            lengths = sum(prompt[i] + generated for i, generated in running)
            linear = linear_phase(model, gpu, tp=tp, precision=precision, batch=len(running))
            attention = (float(linear["linear_time_s"])
                         + float(attention_phase(model, gpu, tp=tp, kv_tokens=lengths,
                                                 kv_precision=inputs.kv_precision)[
                                                     "attention_time_s"]))
        if admitted:
            run = None
            now += prefill_step_cost(c0, c1, sum(prompt[i] for i in admitted)) + attention
        else:
            if run is None:
                watch = not queue and len(running) < cap and nxt < n
                run = [now, 0.0, 0, FIRST_WINDOW, watch, arrival[nxt] if watch else 0.0]
            run[1] += attention
            run[2] += 1
            now = run[0] + run[1]
            if run[4] and now >= run[5]:
                run = None
            elif run[2] == run[3]:
                run = [now, 0.0, 0, 2 * run[3], run[4], run[5]]
        finished = []
        for entry in running:
            entry[1] += 1
            if entry[1] == out[entry[0]]:
                finished.append(entry)
        for entry in sorted(finished):
            i = entry[0]
            running.remove(entry)
            result[i] = (result[i][0], now, result[i][2])
            used -= need[i]
            todo.discard(i)
        if finished:
            run = None
        for i in admitted:
            result[i] = (now, now, steps)
            if out[i] == 1:
                used -= need[i]
                todo.discard(i)
            else:
                running.append([i, 1])
        if not running:
            used = 0.0
    return result, steps
