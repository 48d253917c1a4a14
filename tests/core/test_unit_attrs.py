"""Every unit label of the lab's grids, of experiment 9's measured table and of experiment 1's
chart data becomes a CF ``units`` that UDUNITS-2 and plain pint parse, and comes back as the
same label (what the charts show)."""

from __future__ import annotations

import cf_units
import pint
import pint_xarray  # noqa: F401  (the .pint accessor)
import pytest
import xarray as xr

import lab
from lab.experiments.batch_bottleneck import BatchBottleneck
from lab.measured.calc import measured_table
from lab.pint_units import COUNT_UNITS, pint_registry
from lab.unit_attrs import COUNTED, COUNTED_AS, cf_unit_attrs, unit_label
from sweeps.grid_kinds import GRIDS

LABELS = sorted({unit for kind in GRIDS.values() for _, unit in kind.units.values()}
                | {rule.units for kind in GRIDS.values()
                   for rule in (*kind.schema.axes, *kind.schema.constants)})
"""Every unit label a grid's variables and coordinates carry in the lab."""
PLAIN_PINT = pint.UnitRegistry()
"""Pint's default definitions."""
DENSE_MODEL, MOE_MODEL = "qwen2.5-7b", "deepseek-v2-lite"
"""A dense and a mixture-of-experts model of experiment 1 (the MoE chart counts experts)."""


def _labels(ds: xr.Dataset) -> set[str]:
    """Every ``units`` label of ``ds``'s variables and coordinates."""
    return {str(var.attrs["units"]) for var in ds.variables.values() if "units" in var.attrs}


TABLE_AND_CHART_LABELS = sorted(_labels(measured_table())
                                | _labels(BatchBottleneck(model=DENSE_MODEL).chart_data())
                                | _labels(BatchBottleneck(model=MOE_MODEL).chart_data()))
"""Every unit label of experiment 9's measured table and experiment 1's chart data (dense
and MoE model), as the lab writes them in memory."""


def test_the_grids_use_counts_rates_bytes_and_times():
    assert {"tokens", "tokens/s", "GPUs", "FLOP", "B", "GB", "s", "ms", "µs", "1"} <= set(LABELS)


def test_the_table_and_charts_use_heads_experts_and_byte_rates():
    assert {"heads", "experts", "B/s", "FLOP/s", "B", "s", "1"} <= set(TABLE_AND_CHART_LABELS)


@pytest.mark.parametrize("label", [*LABELS, *TABLE_AND_CHART_LABELS])
def test_each_label_is_a_unit_udunits_and_plain_pint_parse(label):
    units = cf_unit_attrs(label)["units"]
    timed = units in ("s", "ms", "µs") or units.endswith("/s")  # counts, bytes: dimensionless
    assert cf_units.Unit(units).is_dimensionless() is not timed  # unknown units raise
    assert PLAIN_PINT.Quantity(1, units).dimensionless is not timed


@pytest.mark.parametrize("label", [*LABELS, *TABLE_AND_CHART_LABELS])
def test_each_label_comes_back_and_converting_twice_changes_nothing(label):
    attrs = cf_unit_attrs(label)
    assert unit_label(attrs) == label
    assert {**attrs, **cf_unit_attrs(attrs["units"])} == attrs


@pytest.mark.parametrize(("label", "expected"), [
    ("tokens", {"units": "1", COUNTED_AS: "tokens"}),
    ("tokens/s", {"units": "1/s", COUNTED_AS: "tokens"}),
    ("requests/s", {"units": "1/s", COUNTED_AS: "requests"}),
    ("FLOP", {"units": "1", COUNTED_AS: "FLOP"}),
    ("B", {"units": "byte"}),
    ("GB", {"units": "Gbyte"}),
    ("s", {"units": "s"}),
    ("heads", {"units": "1", COUNTED_AS: "heads"}),
    ("experts", {"units": "1", COUNTED_AS: "experts"}),
    ("FLOP/s", {"units": "1/s", COUNTED_AS: "FLOP"}),
    ("B/s", {"units": "byte/s"}),
])
def test_counts_are_dimensionless_and_bytes_are_bytes(label, expected):
    assert cf_unit_attrs(label) == expected


def test_a_gbyte_is_a_decimal_gigabyte_in_both_parsers():
    assert cf_units.Unit("Gbyte").convert(1, cf_units.Unit("byte")) == 1e9
    assert PLAIN_PINT.Quantity(1, "Gbyte").to("byte").magnitude == 1e9
    assert cf_units.Unit("1").is_dimensionless() and cf_units.Unit("1/s") == cf_units.Unit("Hz")
    assert PLAIN_PINT.Quantity(1, "1/s").to("Hz").magnitude == 1


def test_the_measured_dataset_quantifies_with_plain_pint_and_udunits():
    ds = lab.open_dataset("measured")
    for var in ds.variables.values():
        if "units" in var.attrs:
            cf_units.Unit(var.attrs["units"])                   # unknown units raise
    plain = pint.UnitRegistry(force_ndarray_like=True)     # pint's defaults, as pint-xarray needs
    for quantified in (ds.pint.quantify(), ds.pint.quantify(unit_registry=plain)):
        assert all(quantified[name].pint.units is not None
                   for name, var in ds.data_vars.items() if "units" in var.attrs)
        assert str(quantified["latency_s"].pint.units) == "second"
    assert unit_label(ds["latency_s"].attrs) == "s"


@pytest.mark.parametrize("model", [DENSE_MODEL, MOE_MODEL])
def test_experiment_1_chart_data_quantifies_with_the_labs_registry(model):
    data = BatchBottleneck(model=model).chart_data()
    quantified = data.pint.quantify(unit_registry=pint_registry())
    assert all(quantified[name].pint.units is not None
               for name, var in data.data_vars.items() if "units" in var.attrs)
    if model == MOE_MODEL:
        assert quantified["experts_touched"].pint.units == pint_registry().Unit("expert")


def test_the_registry_defines_every_counted_label_singular():
    assert tuple(label.removesuffix("s") for label in COUNTED) == COUNT_UNITS
    registry = pint_registry()
    assert all(registry.Quantity(1, label).dimensionless for label in COUNTED)
