"""Every unit label of the lab's grids becomes a CF ``units`` that UDUNITS-2 and plain pint
parse, and comes back as the same label (what the charts show)."""

from __future__ import annotations

import cf_units
import pint
import pytest

from lab.unit_attrs import COUNTED_AS, cf_unit_attrs, unit_label
from sweeps.grid_kinds import GRIDS

LABELS = sorted({unit for kind in GRIDS.values() for _, unit in kind.units.values()}
                | {rule.units for kind in GRIDS.values()
                   for rule in (*kind.schema.axes, *kind.schema.constants)})
"""Every unit label a grid's variables and coordinates carry in the lab."""
PLAIN_PINT = pint.UnitRegistry()
"""Pint's default definitions."""


def test_the_grids_use_counts_rates_bytes_and_times():
    assert {"tokens", "tokens/s", "GPUs", "FLOP", "B", "GB", "s", "ms", "µs", "1"} <= set(LABELS)


@pytest.mark.parametrize("label", LABELS)
def test_each_label_is_a_unit_udunits_and_plain_pint_parse(label):
    units = cf_unit_attrs(label)["units"]
    timed = units in ("s", "ms", "µs", "1/s")      # counts and bytes are dimensionless in both
    assert cf_units.Unit(units).is_dimensionless() is not timed  # unknown units raise
    assert PLAIN_PINT.Quantity(1, units).dimensionless is not timed


@pytest.mark.parametrize("label", LABELS)
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
])
def test_counts_are_dimensionless_and_bytes_are_bytes(label, expected):
    assert cf_unit_attrs(label) == expected


def test_a_gbyte_is_a_decimal_gigabyte_in_both_parsers():
    assert cf_units.Unit("Gbyte").convert(1, cf_units.Unit("byte")) == 1e9
    assert PLAIN_PINT.Quantity(1, "Gbyte").to("byte").magnitude == 1e9
    assert cf_units.Unit("1").is_dimensionless() and cf_units.Unit("1/s") == cf_units.Unit("Hz")
    assert PLAIN_PINT.Quantity(1, "1/s").to("Hz").magnitude == 1
