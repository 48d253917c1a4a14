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


def mask_invalid(value: ArrayLike, valid: ArrayLike) -> ArrayLike:
    """``value`` where ``valid``, NaN elsewhere (as float)."""
    return where(valid, value * 1.0, np.nan)


def ceil_div(numerator: ArrayLike, denominator: ArrayLike) -> ArrayLike:
    """Exact integer ceiling of ``numerator / denominator`` for non-negative integers."""
    return -((-numerator) // denominator)
