"""Every experiment is wired from its one record and the layers' registrations: the CLI, the
sweeps and the apps agree (the registrations themselves: ``test_imports.py``)."""

from __future__ import annotations

import argparse

import pytest

from apps.ui.views.pages import (
    all_pages,
    experiment_class,
    experiment_pages,
    generic_page,
    own_pages,
    page_builder,
)
from cli.main import build_parser
from lab.errors import LabInputError
from lab.experiments import all_experiments
from lab.experiments.registry import experiments, record, resolve
from sweeps.conventions import cf_units
from sweeps.datasets import dataset_loader, open_dataset
from sweeps.grid_kinds import GRIDS
from sweeps.grids import GRID_NAMES
from sweeps.paths import DATASET_NAMES


def _calc_commands() -> list[str]:
    calc = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    sub = next(a for a in calc.choices["calc"]._actions
               if isinstance(a, argparse._SubParsersAction))
    return list(sub.choices)


def test_numbers_are_positions_and_slugs_are_unique():
    records = experiments()
    assert [r.number for r in records] == list(range(1, len(records) + 1))
    names = [n for r in records for n in (r.slug, *r.old_names)]
    assert len(names) == len(set(names))


def test_each_class_carries_its_records_number_and_slug():
    for rec, cls in zip(experiments(), all_experiments(), strict=True):
        assert (cls.number, cls.slug) == (rec.number, rec.slug)


def test_the_cli_the_datasets_and_the_pages_are_the_records():
    slugs = [r.slug for r in experiments()]
    assert _calc_commands() == slugs
    assert [p.slug for p in experiment_pages()] == slugs
    assert list(GRIDS) == list(DATASET_NAMES) == list(GRID_NAMES)
    assert [s for s in slugs if s in GRID_NAMES] == list(GRID_NAMES)


def test_experiment_1_has_one_name_and_its_old_url_still_opens_it():
    assert record("decode") is record("batch") is experiments()[0]
    assert experiment_class("batch") is experiment_class("decode") is all_experiments()[0]
    assert "decode" in DATASET_NAMES and "decode" in _calc_commands()


@pytest.mark.parametrize("rec", experiments(), ids=lambda r: r.slug)
def test_every_slug_has_a_command_a_page_and_a_dataset_opener_or_none(rec):
    """The one name opens everything: ``calc <slug>``, ``?view=<slug>`` (its own page builder
    or the generic view) and ``open_dataset("<slug>")`` (a grid, a loader, or explicitly none)."""
    assert rec.slug in _calc_commands()
    assert rec.slug in [p.slug for p in all_pages()]
    build = page_builder(rec.slug)
    assert callable(build)
    assert build is own_pages().get(rec.slug, generic_page())
    if rec.slug in GRID_NAMES:
        assert rec.slug in GRIDS and rec.dataset is None
        assert dataset_loader(rec.slug) is None
    elif rec.dataset is not None:
        assert dataset_loader(rec.slug) is resolve(rec.dataset)
        assert rec.slug not in DATASET_NAMES
    else:
        assert dataset_loader(rec.slug) is None
        with pytest.raises(LabInputError, match=f"There is no dataset '{rec.slug}'"):
            open_dataset(rec.slug)


def test_a_non_grid_dataset_opens_through_its_records_loader():
    """Experiment 9's record names a loader, not a grid: ``open_dataset`` calls it and gives
    its ``units`` as CF units, like a grid's."""
    rec = record("measured")
    assert rec.slug not in GRID_NAMES and rec.dataset and rec.slug in own_pages()
    ds = open_dataset("measured")
    assert ds.identical(cf_units(resolve(rec.dataset)()))
    assert {"latency_s", "floor_s", "ratio"} <= set(ds.data_vars)
