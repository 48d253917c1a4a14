"""The bounds of a served-latency file, shared by the CSV loader (:mod:`lab.served.served_loader`) and
the ``vllm bench serve`` reader (:mod:`lab.served.vllm_bench`); docs/model.md §11."""

from __future__ import annotations

from lab.limits import MAX_BATCH, MAX_TABLE_ROWS

MAX_SERVED_ROWS = MAX_TABLE_ROWS
"""Most rows one file may hold (the lab's one table limit)."""
MAX_PARALLEL = 1024
"""Largest parallelism or worker count accepted in a cell."""
MAX_CONCURRENCY = 100 * MAX_BATCH
"""Largest concurrency accepted (clients in flight)."""
