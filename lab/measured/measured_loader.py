"""Measured kernel times as one table of points: the shipped H100 data or a user's CSV.

Every point is one timed kernel of one of three kinds (docs/model.md §9):

- ``decode``: one decode attention kernel (one layer) of ``batch`` sequences with ``context``
  cached tokens each, ``heads``/``kv_heads``/``head_dim`` in all, split over ``tp`` GPUs;
- ``prefill``: one causal prefill attention kernel (one layer) over ``context`` tokens;
- ``gemm``: one GEMM of an (m × k) activation by a (k × n) weight.

The shipped files are read with :mod:`importlib.resources` and their head shape comes from the
file name (``Q-KV-D-tpT.csv``); a user's file names its kind by its header (see
:data:`USER_COLUMNS`). Both go through the same row checks (read as experiment 11's files are,
:mod:`lab.table_files`): every problem is one :class:`~lab.errors.LabInputError` sentence naming
the file, the row and the column. Counts are
int64 with 0 where a kind has no such quantity; times are seconds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import xarray as xr

from lab.errors import LabInputError, shown
from lab.limits import (
    MAX_BATCH,
    MAX_CONTEXT,
    MAX_MEASURED_TP,
    MAX_MS,
    MAX_TABLE_ROWS,
    MAX_TOKENS_CONTEXT,
    MODEL_FIELD_LIMITS,
)
from lab.models.decode_step import PRECISIONS
from lab.table_files import TableFile, own_source, table_dataset, time_cell, upload_label, whole_cell

KINDS = ("decode", "prefill", "gemm")
"""Kernel kinds, in the order the lab shows them."""
KIND_NAMES = {"decode": "decode attention", "prefill": "prefill attention", "gemm": "GEMM"}
"""How each kind is named in sentences."""

USER_COLUMNS = {
    "decode": ("heads", "kv_heads", "head_dim", "tp", "batch_size", "kv_len", "latency_us"),
    "prefill": ("heads", "kv_heads", "head_dim", "seq_len", "latency_us"),
    "gemm": ("m", "k", "n", "latency_us"),
}
"""Required columns of a user's CSV of each kind: the shipped files' columns plus the head shape
the shipped files carry in their names (``tp`` defaults to 1 when absent). A ``dtype`` column
is optional (``bf16`` or ``fp8``; attention must be ``bf16``); other columns are ignored."""

MAX_MEASUREMENT_ROWS = MAX_TABLE_ROWS
"""Most points one measurements file may hold (the lab's one table limit)."""
MAX_LATENCY_US = MAX_MS * 1000
"""Longest kernel time accepted, µs (the lab's largest time input)."""
FILE = TableFile("Measurements", MAX_MEASUREMENT_ROWS, text_kind="a text CSV file")
"""How a measurements file is read and named in sentences."""

COUNT_LIMITS = {
    "heads": MODEL_FIELD_LIMITS["num_attention_heads"],
    "kv_heads": MODEL_FIELD_LIMITS["num_key_value_heads"],
    "head_dim": MODEL_FIELD_LIMITS["head_dim"],
    "tp": MAX_MEASURED_TP,
    "batch_size": MAX_BATCH,
    "kv_len": MAX_CONTEXT,
    "seq_len": MAX_TOKENS_CONTEXT,
    "m": MAX_TOKENS_CONTEXT,
    "k": MODEL_FIELD_LIMITS["intermediate_size"],
    "n": MODEL_FIELD_LIMITS["intermediate_size"],
}
"""Largest value of each whole-number column (each at least 1), from :mod:`lab.limits`."""

SHIPPED_SOURCE = ("inference-sim/inference-sim (BLIS), bench_data/, commit "
                  "a410740f69ca0c7a8843b4800f402e2777636f58 (2026-02-26), Apache License 2.0")
"""Where the shipped measurements come from (docs/sources.md)."""
SHIPPED_GPU = "h100-sxm"
"""Catalog id of the GPU the shipped data was measured on."""

_SHAPE_NAME = re.compile(r"^(\d+)-(\d+)-(\d+)(?:-tp(\d+))?\.csv$")

VARIABLES = {
    "kind": ("kernel kind: decode, prefill or gemm", ""),
    "shape": ("head shape Q-KV-D, or k×n of a GEMM", ""),
    "dtype": ("precision the kernel was labelled with", ""),
    "heads": ("query heads Q in all (0 for a GEMM)", "heads"),
    "kv_heads": ("key/value heads K in all (0 for a GEMM)", "heads"),
    "head_dim": ("head dimension h (0 for a GEMM)", "1"),
    "tp": ("GPUs the heads are split over (1 for prefill and GEMM)", "GPUs"),
    "batch": ("sequences in the decode batch (1 for prefill, 0 for a GEMM)", "sequences"),
    "context": ("cached tokens per sequence (decode) or prompt tokens (prefill)", "tokens"),
    "m": ("GEMM rows m, tokens (0 for attention)", "tokens"),
    "k": ("GEMM inner dimension k (0 for attention)", "1"),
    "n": ("GEMM columns n (0 for attention)", "1"),
    "latency_s": ("measured kernel time", "s"),
    "source_row": ("data row in its file, from 1", "1"),
}
"""``(long_name, units)`` of every variable of a measurements table."""


@dataclass
class _Rows:
    """Columns being collected, one list per variable."""

    columns: dict

    @classmethod
    def empty(cls) -> _Rows:
        return cls({name: [] for name in VARIABLES})

    def add(self, **values) -> None:
        for name in VARIABLES:
            self.columns[name].append(values[name])


def _whole(text: str, column: str, where: str) -> int:
    """A whole number in 1..limit (:data:`COUNT_LIMITS`) from a cell."""
    return whole_cell(text, column, where, COUNT_LIMITS[column])


def _latency(text: str, where: str) -> float:
    """A kernel time in µs, above 0 and at most :data:`MAX_LATENCY_US`, as seconds."""
    return time_cell(text, "latency_us", where, MAX_LATENCY_US, "µs") * 1e-6


def _dtype(row: dict, kind: str, where: str) -> str:
    value = (row.get("dtype") or "bf16").strip().lower()
    if value not in PRECISIONS:
        raise LabInputError(f"{where}, column dtype: {shown(value)} is not one of "
                            f"{', '.join(PRECISIONS)}.")
    if kind != "gemm" and value != "bf16":
        raise LabInputError(f"{where}, column dtype: the lab's attention floor is for BF16 "
                            f"K/V and Q, not {value}.")
    if kind == "decode" and (row.get("kv_dtype") or "bf16").strip().lower() != "bf16":
        raise LabInputError(f"{where}, column kv_dtype: the lab's decode attention floor reads a "
                            "BF16 KV cache.")
    return value


def _heads(row: dict, where: str, shape: tuple[int, int, int, int] | None) -> tuple:
    """``(Q, K, h, tp)`` from the file name (shipped) or the row's columns (a user's file)."""
    if shape is not None:
        q, kv, h, tp = shape
    else:
        q, kv, h = (_whole(row[c], c, where) for c in ("heads", "kv_heads", "head_dim"))
        tp = _whole(row["tp"], "tp", where) if (row.get("tp") or "").strip() else 1
    if q % kv:
        raise LabInputError(f"{where}: {q} query heads are not a multiple of {kv} KV heads.")
    if q % tp or kv % tp:
        raise LabInputError(f"{where}: tp {tp} does not divide {q} query heads and {kv} KV "
                            "heads evenly.")
    return q, kv, h, tp


def _add_row(rows: _Rows, row: dict, kind: str, where: str, number: int,
             shape: tuple[int, int, int, int] | None) -> None:
    dtype = _dtype(row, kind, where)
    latency = _latency(row["latency_us"], where)
    if kind == "gemm":
        m, k, n = (_whole(row[c], c, where) for c in ("m", "k", "n"))
        rows.add(kind=kind, shape=f"{k}×{n}", dtype=dtype, heads=0, kv_heads=0, head_dim=0,
                 tp=1, batch=0, context=0, m=m, k=k, n=n, latency_s=latency, source_row=number)
        return
    q, kv, h, tp = _heads(row, where, shape)
    if kind == "decode":
        batch = _whole(row["batch_size"], "batch_size", where)
        context = _whole(row["kv_len"], "kv_len", where)
    else:
        if tp != 1:
            raise LabInputError(f"{where}: the prefill floor is for all heads on one GPU (tp 1).")
        batch, context = 1, _whole(row["seq_len"], "seq_len", where)
    rows.add(kind=kind, shape=f"{q}-{kv}-{h}", dtype=dtype, heads=q, kv_heads=kv, head_dim=h,
             tp=tp, batch=batch, context=context, m=0, k=0, n=0, latency_s=latency,
             source_row=number)


def _kind_of(header: list[str], name: str) -> str:
    """The kind a user's header names (the most specific set of columns it holds)."""
    for kind in ("decode", "prefill", "gemm"):
        needed = [c for c in USER_COLUMNS[kind] if c != "tp"]
        if all(c in header for c in needed):
            return kind
    wanted = "; or ".join(",".join(cols) for cols in USER_COLUMNS.values())
    raise LabInputError(f"Measurements file {name} lacks the columns of any kind; its header must "
                        f"name {wanted}.")


def _parse(data: bytes, name: str, rows: _Rows, *, kind: str | None = None,
           shape: tuple[int, int, int, int] | None = None) -> None:
    """Check and add every data row of one CSV (``kind`` None: read it from the header)."""
    named_by_file = ("heads", "kv_heads", "head_dim") if shape else ()

    def required(header: list[str]) -> list[str]:
        nonlocal kind
        kind = kind or _kind_of(header, name)
        return [c for c in USER_COLUMNS[kind] if c != "tp" and c not in named_by_file]

    for number, where, row in FILE.rows(FILE.text(data, name), name, required):
        _add_row(rows, row, kind, where, number, shape)


def _dataset(rows: _Rows, source: str, gpu: str) -> xr.Dataset:
    """The collected rows as a Dataset over ``point`` with units on every variable."""
    cols = rows.columns
    return table_dataset("point", len(cols["kind"]), VARIABLES, cols.__getitem__,
                         {"title": "Measured kernel times", "source": source, "measured_on": gpu},
                         text=("kind", "shape", "dtype"), floats=("latency_s",))


def _shipped_files() -> list[tuple[str, bytes, str, tuple | None]]:
    """``(name, bytes, kind, shape)`` of every shipped CSV in a fixed order."""
    root = resources.files("lab.measured").joinpath("data")
    out = [("gemm/h100/data.csv", root.joinpath("gemm/h100/data.csv").read_bytes(), "gemm", None)]
    for kind in ("decode", "prefill"):
        folder = root.joinpath(f"mha/{kind}/h100")
        entries = sorted((e for e in folder.iterdir() if e.name.endswith(".csv")),
                         key=lambda e: tuple(int(x) for x in re.findall(r"\d+", e.name)))
        for entry in entries:
            match = _SHAPE_NAME.match(entry.name)
            if match is None:
                continue
            q, kv, h, tp = match.groups()
            shape = (int(q), int(kv), int(h), int(tp or 1))
            out.append((f"mha/{kind}/h100/{entry.name}", entry.read_bytes(), kind, shape))
    order = {k: i for i, k in enumerate(KINDS)}
    return sorted(out, key=lambda item: order[item[2]])


def shipped_measurements() -> xr.Dataset:
    """Every shipped measurement (H100 SXM, BF16) as one table over ``point``."""
    rows = _Rows.empty()
    for name, data, kind, shape in _shipped_files():
        _parse(data, name, rows, kind=kind, shape=shape)
    return _dataset(rows, SHIPPED_SOURCE, SHIPPED_GPU)


def parse_measurements(data: bytes, name: str = "upload.csv") -> xr.Dataset:
    """A user's measurements CSV, given as bytes (an upload), as a table over ``point``.

    ``name`` is only quoted in messages (shortened, never opened).
    """
    rows = _Rows.empty()
    label = upload_label(name)
    _parse(data, label, rows)
    return _dataset(rows, own_source(label), "")


def read_measurements(path: str | Path) -> xr.Dataset:
    """A user's measurements CSV from a path on this machine (the CLI's ``--measurements``)."""
    data, name = FILE.read_path(path)
    rows = _Rows.empty()
    _parse(data, name, rows)
    return _dataset(rows, own_source(name), "")
