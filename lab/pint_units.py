"""A :mod:`pint` registry (for ``pint-xarray``) that also reads the lab's count labels.

The files the lab writes — every sweep dataset and export — need nothing of this: their
``units`` are CF units that pint's default registry and UDUNITS-2 both parse (counts ``"1"``,
their rates ``"1/s"``, what is counted in ``counted_as``; see :mod:`lab.unit_attrs`), so
``lab.open_dataset("decode").pint.quantify()`` (and ``lab.open_dataset("measured")``) works
with a plain pint-xarray.

The experiments' in-memory data (``Experiment.dataset()``) keep the labels the charts show:
``tokens``, ``sequences``, ``GPUs``, ``FLOP``, ``requests``, ``blocks``, ``steps``, ``pairs``,
``experts``, ``heads`` and their rates (``tokens/s``), ``B``, ``B/s``, ``GB``. This registry
defines each count as a dimensionless count (pint reads the plurals itself), so those quantify
too::

    import pint_xarray
    from lab.pint_units import pint_registry
    data.pint.quantify(unit_registry=pint_registry())

Pint is not a runtime dependency of the lab: install it (``pip install pint-xarray``) to use
this.
"""

from __future__ import annotations

from functools import lru_cache

from lab.unit_attrs import COUNTED

COUNT_UNITS = tuple(label.removesuffix("s") for label in COUNTED)
"""Counting units of the lab's datasets (:data:`lab.unit_attrs.COUNTED`), each a dimensionless
count, singular (pint reads ``tokens`` as ``token``): ``token``, ``GPU``, ``FLOP``, ``expert``,
``head``, …"""


@lru_cache(maxsize=1)
def pint_registry():
    """A :class:`pint.UnitRegistry` with :data:`COUNT_UNITS` defined as dimensionless counts."""
    import pint

    registry = pint.UnitRegistry(force_ndarray_like=True)  # what pint-xarray requires
    for name in COUNT_UNITS:
        registry.define(f"{name} = count")
    return registry
