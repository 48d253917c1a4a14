"""Sweeps: the lab's experiments over dense parameter grids, as Zarr datasets.

A grid spec (:mod:`sweeps.grid_files`) names the axes; a builder per experiment
(:mod:`sweeps.grid_kinds`) turns it into a dask-backed ``xarray.Dataset`` by calling the same
vectorised ``lab`` functions the CLI and the apps call; :mod:`sweeps.store` writes it to Zarr
safely and opens it again with staleness and corruption checks; :mod:`sweeps.export` writes
any selection as CSV, Parquet, NetCDF or Zarr.
"""
