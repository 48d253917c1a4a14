"""Schema rules shared by the grids: the decode inputs that several experiments take.

Each factory builds one :class:`~sweeps.grid_schema.Rule` with the name, type, labels and bounds
every grid uses for that input; only the default differs between grids (an axis entry in the
decode grid, a constant in the serving grids), so it is the argument. The bounds are those
:meth:`lab.points.decode_points.DecodeConfig.check_ranges` checks, so a spec accepts what ``calc`` accepts.
"""

from __future__ import annotations

from typing import Any

from lab.catalog import gpu_catalog, model_catalog
from lab.limits import BUDGET_RANGE, MAX_PAGE, MAX_RESERVE_GB, MAX_TP
from lab.models.decode_step import PRECISIONS
from lab.models.kv_shapes import KV_PRECISIONS
from sweeps.grid_schema import Rule


def model_rule(default: str) -> Rule:
    """The ``model`` id (catalog ids; ``"all"`` expands to them in catalog order)."""
    return Rule("model", "str", "model", "1", choices=lambda: tuple(model_catalog()),
                default=default)


def gpu_rule(default: str) -> Rule:
    """The ``gpu`` id (catalog ids; ``"all"`` expands to them in catalog order)."""
    return Rule("gpu", "str", "GPU", "1", choices=lambda: tuple(gpu_catalog()), default=default)


def tp_rule(default: Any) -> Rule:
    """The tensor-parallel degree ``tp``, GPUs (1 to :data:`lab.limits.MAX_TP`, as ``calc``)."""
    return Rule("tp", "int", "tensor-parallel degree", "GPUs", 1, MAX_TP, default=default)


def precision_rule(default: Any) -> Rule:
    """The linear-layer ``precision`` (one of :data:`lab.models.decode_step.PRECISIONS`)."""
    return Rule("precision", "str", "linear-layer precision", "1", choices=lambda: PRECISIONS,
                default=default)


def kv_precision_rule(default: Any) -> Rule:
    """The KV-cache precision ``kv_precision`` (one of
    :data:`lab.models.kv_shapes.KV_PRECISIONS`, as ``calc --kv-precision``)."""
    return Rule("kv_precision", "str", "KV-cache precision", "1",
                choices=lambda: KV_PRECISIONS, default=default)


def budget_rule(default: float) -> Rule:
    """The memory ``budget`` fraction of capacity (0.01 to 1, as ``calc``)."""
    return Rule("budget", "float", "memory budget fraction", "1", *BUDGET_RANGE,
                default=default)


def reserve_rule(default: float) -> Rule:
    """The reserved memory per GPU ``reserve_gb``, GB (0 to 100,000, as ``calc``)."""
    return Rule("reserve_gb", "float", "reserved memory per GPU", "GB", 0, MAX_RESERVE_GB,
                default=default)


def page_rule(default: int) -> Rule:
    """The KV ``page`` size, tokens (1 to 4,096, as ``calc``)."""
    return Rule("page", "int", "KV page size", "tokens", 1, MAX_PAGE, default=default)
