"""The lab's unit strings for :mod:`pint` (and ``pint-xarray``): the counting units defined.

Every ``units`` attribute in the lab's datasets is an SI unit pint knows (``s``, ``B``,
``GB``, ``µs``, ``ms``, ``1``) or a count of something — ``tokens``, ``sequences``, ``GPUs``,
``FLOP``, ``requests``, ``blocks``, ``steps``, ``pairs`` and their rates (``tokens/s``,
``requests/s``). Pint's default registry does not know the counts; this registry defines each
as a dimensionless count (pint reads the plurals itself), so every variable of every dataset
quantifies::

    import lab, pint_xarray
    from lab.pint_units import pint_registry
    ds = lab.open_dataset("decode").pint.quantify(unit_registry=pint_registry())

Pint is not a runtime dependency of the lab: install it (``pip install pint-xarray``) to use
this.
"""

from __future__ import annotations

from functools import lru_cache

COUNT_UNITS = ("token", "sequence", "GPU", "FLOP", "request", "block", "step", "pair")
"""Counting units of the lab's datasets, each a dimensionless count (singular: pint reads
``tokens`` as ``token``)."""


@lru_cache(maxsize=1)
def pint_registry():
    """A :class:`pint.UnitRegistry` with :data:`COUNT_UNITS` defined as dimensionless counts."""
    import pint

    registry = pint.UnitRegistry(force_ndarray_like=True)  # what pint-xarray requires
    for name in COUNT_UNITS:
        registry.define(f"{name} = count")
    return registry
