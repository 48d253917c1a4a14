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
MAX_ROW_ID_CHARS = 200
"""Longest row id, characters (the shipped ids are at most 114)."""
ROW_ID_TEXT = rf"(?:[^\x00-\x1f\x7f]{{1,{MAX_ROW_ID_CHARS}}})?\Z"
"""What a row id is (or the empty "none chosen"), as a pattern for :func:`re.match`: up to
:data:`MAX_ROW_ID_CHARS` characters with no control character. An id is only compared with the
table's ids, never opened, so a page may take one from a link."""
