"""Measured serving latency as one table of rows: the shipped public CSV or a user's own.

Each row is one benchmark run (docs/model.md §11): an engine (``backend``) serving a model
(``model_path``) on a GPU (``system``) to ``concurrency`` clients, each request ``isl`` prompt
tokens and ``osl`` output tokens, with the measured time to first token and time per output
token. ``mode`` is ``agg`` (one pool prefills and decodes) or ``disagg`` (separate prefill and
decode pools; the ``prefill_*`` and ``decode_*`` columns describe each pool).

The shipped file (``lab/served/data/silicon_sample.csv``, see its ``NOTICE``) and a user's file
share the columns of :data:`REQUIRED` and :data:`OPTIONAL` and go through the same row checks
(read as experiment 9's files are, :mod:`lab.table_files`): every problem is one
:class:`~lab.errors.LabInputError` sentence naming the file, the row and the column. Empty
optional cells are 0 (a parallelism of 0 or 1 means "none"). A user's file may also be the
JSON that ``vllm bench serve --save-result`` writes: :mod:`lab.served.vllm_bench` turns each run
into such a row first.
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

import xarray as xr

from lab.errors import LabInputError, shown
from lab.limits import MAX_CONTEXT, MAX_MS
from lab.served import vllm_bench
from lab.served.served_limits import (
    MAX_CONCURRENCY,
    MAX_PARALLEL,
    MAX_ROW_ID_CHARS,
    MAX_SERVED_ROWS,
    ROW_ID_TEXT,
)
from lab.table_files import TableFile, own_source, table_dataset, time_cell, upload_label, whole_cell

SHIPPED_SOURCE = ("ai-dynamo/aiconfigurator, aic-core/src/aiconfigurator_core/systems/"
                  "silicon_sample.csv, commit 095f58a51c4ca8e61b66ec108d86f223f8d559ce "
                  "(2026-08-21), Apache License 2.0")
"""Where the shipped rows come from (cite it wherever they are shown)."""
SHIPPED_FILE = "silicon_sample.csv"
"""The shipped CSV in ``lab/served/data/``."""

REQUIRED = ("id", "backend", "model_path", "system", "mode", "isl", "osl",
            "silicon_ttft_ms", "silicon_tpot_ms")
"""Columns every file must have."""
PARALLEL_COLUMNS = ("tp_size", "pp_size", "attention_dp_size", "moe_tp_size", "moe_ep_size",
                    "prefill_batch_size", "prefill_num_workers", "prefill_tp_size",
                    "prefill_pp_size", "prefill_attention_dp_size", "prefill_moe_tp_size",
                    "prefill_moe_ep_size", "decode_batch_size", "decode_num_workers",
                    "decode_tp_size", "decode_pp_size", "decode_attention_dp_size",
                    "decode_moe_tp_size", "decode_moe_ep_size")
"""Whole-number parallelism columns (empty: 0)."""
OPTIONAL = ("backend_version", "precision", "gemm_quant_mode", "moe_quant_mode", "batch_size",
            "silicon_data_source", *PARALLEL_COLUMNS)
"""Columns read when present (the concurrency is ``batch_size``, else the
``silicon_concurrency=N`` of ``silicon_data_source``, else the ``_cN_`` of ``id``; a row
stating none has concurrency 0 and is counted as not modelled)."""
MODES = ("agg", "disagg")
"""Serving modes: aggregated (one pool) and disaggregated (prefill and decode pools)."""
FILE = TableFile("Serving", MAX_SERVED_ROWS)
"""How a serving file is read and named in sentences."""

TEXT_VARIABLES = {
    "id": ("row id (the CSV's id)", ""),
    "engine": ("serving engine (backend)", ""),
    "engine_version": ("engine version", ""),
    "model_path": ("model checkpoint as the row names it", ""),
    "system": ("GPU system as the row names it", ""),
    "mode": ("agg: one pool; disagg: separate prefill and decode pools", ""),
    "precision_listed": ("precision as the row lists it (empty: the checkpoint's)", ""),
    "gemm_quant": ("GEMM weight format as listed", ""),
    "moe_quant": ("MoE weight format as listed", ""),
    "layout_from": ("id of the copy whose listed pools this row's layout is (empty: its own)",
                    ""),
}
"""Text columns: ``(long_name, units)``."""
NUMBER_VARIABLES = {
    "isl": ("input (prompt) tokens per request", "tokens"),
    "osl": ("output tokens per request", "tokens"),
    "concurrency": ("clients in flight (requests kept outstanding)", "requests"),
    "tp": ("tensor-parallel GPUs of the decode pool (agg: the one pool)", "GPUs"),
    "pp": ("pipeline stages of the decode pool", "1"),
    "attention_dp": ("attention data-parallel ranks of the decode pool", "1"),
    "moe_ep": ("expert-parallel ranks of the decode pool", "1"),
    "decode_batch": ("sequences one decode worker holds, over all its attention-DP ranks (agg: "
                     "the concurrency)", "sequences"),
    "decode_workers": ("decode workers (agg: 1)", "1"),
    "prefill_tp": ("tensor-parallel GPUs of a prefill worker (agg: tp)", "GPUs"),
    "prefill_pp": ("pipeline stages of a prefill worker", "1"),
    "prefill_attention_dp": ("attention data-parallel ranks of a prefill worker", "1"),
    "prefill_moe_ep": ("expert-parallel ranks of a prefill worker", "1"),
    "prefill_workers": ("prefill workers (agg: 1)", "1"),
}
"""Whole-number columns: ``(long_name, units)``."""
MEASURED_VARIABLES = {
    "ttft_measured_ms": ("measured time to first token (mean over the run)", "ms"),
    "tpot_measured_ms": ("measured time per output token after the first (mean)", "ms"),
}
"""Measured times: ``(long_name, units)``."""

_CONCURRENCY_IN_SOURCE = re.compile(r"silicon_concurrency=(\d+)")
_CONCURRENCY_IN_ID = re.compile(r"_c(\d+)(?:_|$)")


def _whole(text: str, column: str, where: str, low: int, high: int) -> int:
    return whole_cell(text, column, where, high, low)


def _ms(text: str, column: str, where: str) -> float:
    return time_cell(text, column, where, MAX_MS, "ms")


def stated_concurrency(row: dict, where: str) -> int:
    """The concurrency a row states in words: ``silicon_concurrency=N`` in
    ``silicon_data_source``, else ``_cN_`` in its id; 0 when neither says."""
    for column, pattern in (("silicon_data_source", _CONCURRENCY_IN_SOURCE),
                            ("id", _CONCURRENCY_IN_ID)):
        match = pattern.search(row.get(column) or "")
        if match:
            return _whole(match.group(1), column, where, 1, MAX_CONCURRENCY)
    return 0


def _concurrency(row: dict, where: str) -> int:
    batch = (row.get("batch_size") or "").strip()
    if batch:
        return _whole(batch, "batch_size", where, 1, MAX_CONCURRENCY)
    return stated_concurrency(row, where)  # 0: not stated, kept and counted as not modelled


SQUARED_LAYOUT_SOURCES = ("db-dump/", "source_file=2026-04-06.csv")
"""Exports of the shipped file that write an ``n``-GPU expert-parallel layout as ``n²``."""


def pool_layout(tp: int, dp: int, moe_tp: int, moe_ep: int, source: str) -> tuple[int, int]:
    """``(tp, attention_dp)`` of one pool as it ran (0 and 1 both mean "none").

    Two exports of the shipped file (:data:`SQUARED_LAYOUT_SOURCES`) write a layout of ``n``
    GPUs with ``n``-way expert parallelism (attention tp ``n``, or attention data parallelism
    ``n``) as ``tp = n²`` (or ``attention_dp = n²``) with ``moe_tp = moe_ep = n``; their
    duplicates written plainly (``tp n, moe_tp 1, moe_ep n``) carry the identical measured
    TTFT and TPOT (92 rows for n = 4 and 8), so the plain layout is the one that ran."""
    tp, dp = max(tp, 1), max(dp, 1)
    n = moe_ep
    if (n > 1 and moe_tp == n and source.startswith(SQUARED_LAYOUT_SOURCES)
            and (tp, dp) in ((n * n, 1), (1, n * n))):
        return (n, 1) if dp == 1 else (1, n)
    return tp, dp


def _row(row: dict, where: str) -> dict:
    """One checked row as the table's fields."""
    out = {}
    for column in ("id", "backend", "model_path", "system"):
        value = (row.get(column) or "").strip()
        if not value:
            raise LabInputError(f"{where}, column {column}: the cell is empty.")
        out[column] = value
    if not re.match(ROW_ID_TEXT, out["id"]):
        raise LabInputError(f"{where}, column id: an id is at most {MAX_ROW_ID_CHARS} "
                            "characters of text with no control character.")
    mode = (row.get("mode") or "").strip().lower()
    if mode not in MODES:
        raise LabInputError(f"{where}, column mode: {shown(mode)} is not agg or disagg.")
    par = {c: _whole(row.get(c) or "0", c, where, 0, MAX_PARALLEL) if (row.get(c) or "").strip()
           else 0 for c in PARALLEL_COLUMNS}
    concurrency = _concurrency(row, where)
    one = lambda v: max(v, 1)  # noqa: E731  (0 and 1 both mean "none")
    source = (row.get("silicon_data_source") or "").strip()

    def layout(prefix: str) -> tuple[int, int]:
        return pool_layout(par[f"{prefix}tp_size"], par[f"{prefix}attention_dp_size"],
                           par[f"{prefix}moe_tp_size"], par[f"{prefix}moe_ep_size"], source)

    if mode == "agg":
        tp, dp = layout("")
        if (row.get("batch_size") or "").strip() and one(par["attention_dp_size"]) > 1 \
                and stated_concurrency(row, where) != concurrency:
            # batch_size is one rank's share (batch_size × dp is the concurrency the row
            # states), unless batch_size is itself the concurrency the row states
            concurrency *= one(par["attention_dp_size"])
        decode = {"tp": tp, "pp": one(par["pp_size"]), "attention_dp": dp,
                  "moe_ep": one(par["moe_ep_size"]), "decode_batch": max(concurrency, 1),
                  "decode_workers": 1}
        prefill = {"prefill_tp": tp, "prefill_pp": decode["pp"],
                   "prefill_attention_dp": dp,
                   "prefill_moe_ep": decode["moe_ep"], "prefill_workers": 1}
    else:
        tp, dp = layout("decode_")
        prefill_tp, prefill_dp = layout("prefill_")
        decode = {"tp": tp, "pp": one(par["decode_pp_size"]), "attention_dp": dp,
                  "moe_ep": one(par["decode_moe_ep_size"]),
                  # decode_batch_size is one attention-DP rank's batch
                  "decode_batch": one(par["decode_batch_size"]) * dp,
                  "decode_workers": one(par["decode_num_workers"])}
        prefill = {"prefill_tp": prefill_tp,
                   "prefill_pp": one(par["prefill_pp_size"]),
                   "prefill_attention_dp": prefill_dp,
                   "prefill_moe_ep": one(par["prefill_moe_ep_size"]),
                   "prefill_workers": one(par["prefill_num_workers"])}
    return {
        "id": out["id"], "engine": out["backend"].lower(),
        "engine_version": (row.get("backend_version") or "").strip(),
        "model_path": out["model_path"], "system": out["system"].lower(), "mode": mode,
        "precision_listed": (row.get("precision") or "").strip().lower(),
        "gemm_quant": (row.get("gemm_quant_mode") or "").strip().lower(),
        "moe_quant": (row.get("moe_quant_mode") or "").strip().lower(),
        "isl": _whole(row["isl"], "isl", where, 1, MAX_CONTEXT),
        "osl": _whole(row["osl"], "osl", where, 1, MAX_CONTEXT),
        "concurrency": concurrency, **decode, **prefill, "layout_from": "",
        "ttft_measured_ms": _ms(row["silicon_ttft_ms"], "silicon_ttft_ms", where),
        "tpot_measured_ms": _ms(row["silicon_tpot_ms"], "silicon_tpot_ms", where),
    }


POOL_FIELDS = ("tp", "pp", "attention_dp", "moe_ep", "decode_batch", "decode_workers",
               "prefill_tp", "prefill_pp", "prefill_attention_dp", "prefill_moe_ep",
               "prefill_workers")
"""The fields of a row's decode and prefill pools (what :func:`borrow_pools` copies)."""
COPY_KEY = ("engine", "system", "mode", "isl", "osl", "concurrency", "ttft_measured_ms",
            "tpot_measured_ms")
"""Two rows agreeing on all of these are one run exported twice (its copies): the measured
TTFT and TPOT to every digit, on the same engine, system, workload and concurrency."""


def pools_hold_every_client(row: dict) -> bool:
    """Whether a row's listed decode pools hold its clients (agg: always):
    ``concurrency ≤ decode_batch × decode_workers``."""
    return row["mode"] == "agg" or row["concurrency"] <= row["decode_batch"] * row["decode_workers"]


def borrow_pools(rows: list[dict]) -> list[dict]:
    """Rows with the layout their copies list (issue 41): a disaggregated row whose listed
    decode pools do not hold every client takes the decode and prefill pools
    (:data:`POOL_FIELDS`) of a copy of the same run (:data:`COPY_KEY`) whose pools do, and
    names it in ``layout_from``. 303 shipped rows: one export writes the layout as tp with one
    worker, another exports the same runs with their pools."""
    listed = {}
    for r in rows:
        if r["mode"] == "disagg" and pools_hold_every_client(r):
            listed.setdefault(tuple(r[k] for k in COPY_KEY), r)
    out = []
    for r in rows:
        copy = listed.get(tuple(r[k] for k in COPY_KEY))
        if r["mode"] == "disagg" and copy is not None and not pools_hold_every_client(r):
            r = {**r, **{k: copy[k] for k in POOL_FIELDS}, "layout_from": copy["id"]}
        out.append(r)
    return out


def _csv_rows(text: str, name: str) -> list[dict]:
    """Every checked row of one CSV's text."""
    return [_row(row, where) for _, where, row in FILE.rows(text, name, lambda _header: REQUIRED)]


def _unique(rows: list[dict], name: str) -> list[dict]:
    ids = [r["id"] for r in rows]
    if len(set(ids)) != len(ids):
        seen: set[str] = set()
        dup = next(i for i in ids if i in seen or seen.add(i))
        raise LabInputError(f"Serving file {name}: the id {shown(dup)} appears more than once.")
    return rows


def parse_rows(data: bytes, name: str, setup: vllm_bench.RunSetup | None = None) -> list[dict]:
    """Every checked row of one file given as bytes (``name`` only quoted in messages): a CSV,
    or the JSON that ``vllm bench serve --save-result`` writes (:mod:`lab.served.vllm_bench`,
    one row per run; ``setup``, a :class:`~lab.served.vllm_bench.RunSetup`, states the GPU, tp,
    precision or model the JSON does not save; a CSV names them in its rows)."""
    text = FILE.text(data, name)
    if vllm_bench.looks_like_json(text):
        return _unique([_row(row, where) for where, row in vllm_bench.run_rows(text, name, setup)],
                       name)
    if setup is not None and setup.stated() and text.strip():
        raise LabInputError(f"Serving file {name} is a CSV, which names the GPU, tp, precision "
                            "and model in its rows; --gpu, --tp, --precision and --model are for "
                            "vllm bench serve JSON results.")
    return _unique(_csv_rows(text, name), name)


def rows_dataset(rows: list[dict], source: str) -> xr.Dataset:
    """Checked rows as a Dataset over ``row`` (coordinate ``id``), units on every variable."""
    rows = borrow_pools(rows)
    ds = table_dataset("row", len(rows),
                       {**TEXT_VARIABLES, **NUMBER_VARIABLES, **MEASURED_VARIABLES},
                       lambda name: [r[name] for r in rows],
                       {"title": "Measured serving latency", "source": source},
                       text=TEXT_VARIABLES, floats=MEASURED_VARIABLES)
    return ds.set_coords(["id", "engine", "mode", "isl", "osl", "concurrency", "tp"])


def shipped_rows() -> xr.Dataset:
    """The shipped public measurements (5,221 rows) as a table over ``row``."""
    data = resources.files("lab.served").joinpath("data", SHIPPED_FILE).read_bytes()
    return rows_dataset(parse_rows(data, SHIPPED_FILE), SHIPPED_SOURCE)


def parse_served(data: bytes, name: str = "upload.csv",
                 setup: vllm_bench.RunSetup | None = None) -> xr.Dataset:
    """A user's serving file given as bytes (an upload) as a table over ``row``: a CSV, or
    ``vllm bench serve`` results with ``setup`` (see :func:`parse_rows`)."""
    label = upload_label(name)
    return rows_dataset(parse_rows(data, label, setup), own_source(label))


def read_served(paths, setup: vllm_bench.RunSetup | None = None) -> xr.Dataset:
    """A user's serving files from paths on this machine (``--measurements``; one path or
    several, their rows together, each id once)."""
    paths = [paths] if isinstance(paths, str | Path) else list(paths)
    per_file: list[tuple[str, bool, list[dict]]] = []
    total = 0
    for path in paths:
        data, name = FILE.read_path(path)
        parsed = parse_rows(data, name, setup)
        per_file.append((name, vllm_bench.looks_like_json(FILE.text(data, name)), parsed))
        total += len(parsed)
        if total > MAX_SERVED_ROWS:
            raise LabInputError(f"The serving files hold more than {MAX_SERVED_ROWS:,} rows, the "
                                "most the lab reads.")
    joined = ", ".join(name for name, _, _ in per_file)
    return rows_dataset(_unique(_folder_ids(per_file), joined), own_source(joined))


def _folder_ids(per_file: list[tuple[str, bool, list[dict]]]) -> list[dict]:
    """The rows of every file, a ``vllm bench serve`` result's ids (its file name) led by its
    folder's name when another file's ids are the same: one folder per run, each holding a
    ``run.json``, was refused as "the id 'run' appears more than once"."""
    seen: dict[str, int] = {}
    for _, _, rows in per_file:
        for r in rows:
            seen[r["id"]] = seen.get(r["id"], 0) + 1
    clashing = [i for i, (_, is_json, rows) in enumerate(per_file)
                if is_json and any(seen[r["id"]] > 1 for r in rows)]
    folders = {i: Path(per_file[i][0]).parent.parts for i in clashing}
    depth = 1  # the fewest trailing folders that tell the clashing files apart (a/x, b/x)
    distinct = len(set(folders.values()))  # the same file twice stays one id twice
    while depth < max((len(f) for f in folders.values()), default=0) and len(
            {f[-depth:] for f in folders.values()}) < distinct:
        depth += 1
    out = []
    for i, (_, _, rows) in enumerate(per_file):
        prefix = "/".join(p for p in folders[i][-depth:] if p != "/") if i in folders else ""
        out += [{**r, "id": f"{prefix}/{r['id']}"} for r in rows] if prefix else rows
    return out
