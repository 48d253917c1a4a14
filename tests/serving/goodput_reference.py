"""A deliberately naive step-by-step simulator: the rules of docs/model.md §7 with per-request loops.

Used only by the tests, to check the fast simulator's vectorised runs of steps.
"""

from __future__ import annotations

from lab.models.decode_step import attention_phase, linear_phase
from lab.models.layer_kinds import effective_context
from lab.models.memory import kv_bytes_per_sequence, memory_budget, params_bytes


def reference(trace, model, gpu, tp, precision, cap, c0, c1, memory=None):
    """``{request id: (first token s, finish s)}``; rejected requests map to None."""
    n = len(trace)
    arrival, prompt, out = trace.arrival_s, trace.prompt_tokens, trace.output_tokens
    need = [float(kv_bytes_per_sequence(model, tp, int(prompt[i] + out[i]), memory["page"]))
            for i in range(n)] if memory else [0.0] * n
    free = (float(memory_budget(gpu, memory["budget_fraction"])
                  - params_bytes(model, tp, precision) - memory["reserve_bytes"])
            if memory else float("inf"))
    result = {trace.ids[i]: None for i in range(n)}
    todo = {i for i in range(n) if need[i] <= free}
    now, nxt, queue, running = 0.0, 0, [], []   # running: [index, tokens generated]
    while todo:
        while nxt < n and arrival[nxt] <= now:
            if nxt in todo:
                queue.append(nxt)
            nxt += 1
        if not running and not queue:
            now = max(now, float(arrival[nxt]))
            continue
        admitted = []
        while queue and len(running) + len(admitted) < cap:
            used = sum(need[r[0]] for r in running) + sum(need[a] for a in admitted)
            if used + need[queue[0]] > free:
                break
            admitted.append(queue.pop(0))
        cost = c0 + c1 * sum(int(prompt[a]) for a in admitted) if admitted else 0.0
        if running:
            # each request's own read per layer kind (its length itself for full layers)
            lengths = sum(effective_context(model, int(prompt[r[0]]) + r[1]) for r in running)
            cost += float(linear_phase(model, gpu, tp=tp, precision=precision,
                                         batch=len(running))["linear_time_s"])
            cost += float(attention_phase(model, gpu, tp=tp, kv_tokens=lengths)["attention_time_s"])
        now += cost
        for r in list(running):
            r[1] += 1
            if r[1] == out[r[0]]:
                result[trace.ids[r[0]]] = (result[trace.ids[r[0]]][0], now)
                running.remove(r)
                todo.discard(r[0])
        for a in admitted:
            result[trace.ids[a]] = (now, now)
            if out[a] == 1:
                todo.discard(a)
            else:
                running.append([a, 1])
    return result
