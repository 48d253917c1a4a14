"""Axis values of a grid, written compactly in a spec and expanded here.

An axis in a grid spec is either an explicit list of values or a table naming a generator::

    batch   = [1, 8, 64]                           # explicit values
    batch   = { pow2 = [1, 1024] }                 # 1, 2, 3, 4, 6, 8, 12, ..., 768, 1024
    batch   = { pow2 = [1, 1024], between = false} # powers of two only
    context = { range = [128, 4096], step = 128 }  # every step from start to stop inclusive
    context = { logspace = [128, 131072], num = 64 }  # integers, geometrically spaced

``pow2`` gives the powers of two and, with ``between`` (the default), the point half way
between neighbours on a log axis rounded to ``1.5·2^k`` — the preset's "log-spaced" axes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from lab.errors import LabInputError, shown, shown_number
from lab.limits import MAX_AXIS_VALUES, MAX_GENERATOR_BOUND

GENERATORS = ("pow2", "range", "logspace")
"""Keys of the axis tables :func:`expand_axis` understands."""


def pow2_axis(low: int, high: int, between: bool = True) -> list[int]:
    """Powers of two from ``low`` to ``high`` inclusive, plus ``1.5·2^k`` between them.

    Parameters
    ----------
    low, high : int
        Bounds (inclusive); each is included even when it is not a power of two.
    between : bool
        Include ``1.5·2^k`` between each pair of powers (default True).

    Returns
    -------
    list of int
        Sorted unique values.
    """
    values = {low, high}
    power = 1
    while power <= high:
        if power >= low:
            values.add(power)
        if between and power >= 2 and low <= power * 3 // 2 <= high:
            values.add(power * 3 // 2)
        power *= 2
    return sorted(values)


def range_axis(low: int, high: int, step: int = 1) -> list[int]:
    """Every ``step`` from ``low`` to ``high`` inclusive (``high`` added if the step misses it)."""
    values = list(range(low, high + 1, step))
    if values[-1] != high:
        values.append(high)
    return values


def logspace_axis(low: int, high: int, num: int) -> list[int]:
    """``num`` integers geometrically spaced from ``low`` to ``high`` (duplicates dropped)."""
    raw = np.rint(np.geomspace(low, high, num)).astype(np.int64)
    return sorted({int(v) for v in raw})


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _bounds(table: dict, key: str, where: str) -> tuple[int, int]:
    pair = table[key]
    if not isinstance(pair, list | tuple) or len(pair) != 2 or not all(map(_whole, pair)):
        raise LabInputError(f"{where}: '{key}' must be a pair of whole numbers [start, stop].")
    low, high = pair
    smallest = 0 if key == "range" else 1
    if not smallest <= low <= high <= MAX_GENERATOR_BOUND:
        raise LabInputError(f"{where}: '{key}' must satisfy {smallest} ≤ start ≤ stop ≤ "
                            f"{MAX_GENERATOR_BOUND:,}, not [{shown(low)}, {shown(high)}].")
    return low, high


def _too_long(where: str, count: int) -> LabInputError:
    return LabInputError(f"{where} would have {shown_number(count)} values, more than the "
                         f"{MAX_AXIS_VALUES:,} one axis may have.")


def expand_axis(value: Any, where: str) -> list:
    """The list of values an axis entry stands for.

    Parameters
    ----------
    value : list or dict
        An explicit list, or a table with one of :data:`GENERATORS`.
    where : str
        Names the spec and axis in error messages.

    Raises
    ------
    LabInputError
        When the entry is neither a non-empty list nor a known generator table, or it stands
        for more than :data:`~lab.limits.MAX_AXIS_VALUES` values.
    """
    if isinstance(value, list | tuple):
        if not value:
            raise LabInputError(f"{where} is an empty list; give at least one value.")
        if len(value) > MAX_AXIS_VALUES:
            raise _too_long(where, len(value))
        return list(value)
    if isinstance(value, dict):
        kinds = [k for k in GENERATORS if k in value]
        if len(kinds) != 1:
            raise LabInputError(
                f"{where} must be a list or a table with exactly one of "
                f"{', '.join(GENERATORS)}, not {shown(sorted(map(str, value)))}."
            )
        kind = kinds[0]
        low, high = _bounds(value, kind, where)
        if kind == "pow2":
            return pow2_axis(low, high, bool(value.get("between", True)))
        if kind == "range":
            step = value.get("step", 1)
            if not _whole(step) or step <= 0:
                raise LabInputError(f"{where}: 'step' must be a positive whole number.")
            count = len(range(low, high + 1, step))
            if count > MAX_AXIS_VALUES:
                raise _too_long(where, count)
            return range_axis(low, high, step)
        num = value.get("num")
        if not _whole(num) or num < 2:
            raise LabInputError(f"{where}: 'logspace' needs 'num', a whole number ≥ 2.")
        if num > MAX_AXIS_VALUES:
            raise _too_long(where, num)
        return logspace_axis(low, high, num)
    raise LabInputError(f"{where} must be a list of values or a generator table, "
                        f"not {shown(value)}.")


def choose_chunks(shape: Sequence[int], target_cells: int) -> tuple[int, ...]:
    """Chunk sizes holding about ``target_cells`` cells, filling the trailing dims first.

    Trailing dimensions are kept whole while the product stays within ``target_cells``; the
    next dimension takes as many rows as still fit (at least one); leading ones are split to 1.
    Reading one leading-coordinate slice (a model, a GPU) then touches few chunks.
    """
    chunks = [1] * len(shape)
    cells = 1
    for i in range(len(shape) - 1, -1, -1):
        if cells * shape[i] <= target_cells:
            chunks[i] = shape[i]
            cells *= shape[i]
        else:
            chunks[i] = max(1, target_cells // cells)
            break
    return tuple(chunks)
