"""Helpers that let one formula run on scalars, numpy arrays and xarray objects alike.

Arithmetic operators and numpy ufuncs (``np.maximum``, ``np.floor``) already broadcast across
all three; only selection needs a dispatch, which :func:`where` provides.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

ArrayLike = Any
"""A Python number, a numpy array or an ``xarray.DataArray``; results keep the richest type."""


def _is_xarray(*values: Any) -> bool:
    return any(isinstance(v, xr.DataArray | xr.Dataset | xr.Variable) for v in values)


def where(cond: ArrayLike, if_true: ArrayLike, if_false: ArrayLike) -> ArrayLike:
    """Elementwise ``if_true`` where ``cond`` else ``if_false``, keeping xarray labels.

    Scalars in give a numpy scalar out (``np.float64`` is a ``float``).
    """
    if _is_xarray(cond, if_true, if_false):
        return xr.where(cond, if_true, if_false, keep_attrs=False)
    out = np.where(cond, if_true, if_false)
    return out[()] if out.ndim == 0 else out


def nan_mask(valid: ArrayLike) -> ArrayLike:
    """1.0 where ``valid``, NaN elsewhere: multiplying by it masks a result exactly."""
    return where(valid, 1.0, np.nan)


def apply_mask(record: dict, mask: ArrayLike | None) -> dict:
    """``record`` with every number multiplied by ``mask`` (see :func:`nan_mask`) and every
    boolean false where the mask is NaN; unchanged when ``mask`` is None.

    A float array that already has the result's shape is masked in place (it was just made by
    the caller): on large grids that saves a pass over memory per output.
    """
    if mask is None:
        return record
    valid = mask == 1.0
    out = {}
    for key, value in record.items():
        if isinstance(value, bool | np.bool_) or getattr(value, "dtype", None) == np.bool_:
            out[key] = value & valid
        elif (isinstance(value, np.ndarray) and value.dtype == np.float64 and value.flags.owndata
              and value.flags.writeable
              and np.broadcast_shapes(value.shape, np.shape(mask)) == value.shape):
            out[key] = np.multiply(value, mask, out=value)
        else:
            out[key] = value * mask
    return out


def ceil_div(numerator: ArrayLike, denominator: ArrayLike) -> ArrayLike:
    """Exact integer ceiling of ``numerator / denominator`` for non-negative integers."""
    return -((-numerator) // denominator)
