"""The decode inputs several grids take are one rule each, bounded as ``calc`` bounds them."""

from __future__ import annotations

import pytest

from lab.errors import LabInputError
from lab.points.decode_points import DecodeConfig
from sweeps.grid_kinds import GRIDS

SHARED = ("model", "gpu", "tp", "precision", "budget", "reserve_gb", "page")
CONFIG_FIELD = {"tp": "tp", "budget": "budget", "reserve_gb": "reserve_gb", "page": "page"}


def _rules(name: str) -> list:
    return [rule for kind in GRIDS.values()
            for rule in (*kind.schema.axes, *kind.schema.constants) if rule.name == name]


@pytest.mark.parametrize("name", SHARED)
def test_shared_rule_is_the_same_in_every_grid(name):
    rules = _rules(name)
    assert len(rules) >= 2
    labels = {(r.kind, r.long_name, r.units, r.low, r.high, r.choices() if r.choices else None)
              for r in rules}
    assert len(labels) == 1


@pytest.mark.parametrize("name", sorted(CONFIG_FIELD))
def test_shared_bounds_are_calcs(name):
    rule = _rules(name)[0]
    step = 1 if rule.kind == "int" else 1e-6
    field = CONFIG_FIELD[name]
    for value in (rule.low, rule.high):
        DecodeConfig(**{field: value}).check_ranges()
    for value in (rule.low - step, rule.high + step):
        with pytest.raises(LabInputError):
            DecodeConfig(**{field: value}).check_ranges()
