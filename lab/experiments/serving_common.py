"""Helpers the serving experiments (5–8) share: chart datasets with units on everything."""

from __future__ import annotations

import numpy as np
import xarray as xr

from lab.experiments.decode_inputs import labelled


def dataset(dim: str, values, coord_name: str, coord_units: str, outputs: dict, units: dict,
            names) -> xr.Dataset:
    """``outputs[name]`` for ``names`` along ``dim`` with ``long_name``/``units`` attrs.

    ``units`` maps a name to ``(long_name, units)``; ``outputs`` holds 1-D arrays aligned with
    ``values``.
    """
    axis = labelled(values, dim, coord_name, coord_units)
    data = {}
    for name in names:
        long_name, unit = units[name]
        data[name] = xr.DataArray(np.asarray(outputs[name]), dims=dim,
                                  attrs={"long_name": long_name, "units": unit})
    return xr.Dataset(data, coords=axis.coords)
