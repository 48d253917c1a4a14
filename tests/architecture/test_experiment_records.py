"""Every experiment is wired from its one record: the CLI, the sweeps and the apps agree."""

from __future__ import annotations

import argparse

from apps.ui.pages import experiment_class, experiment_pages
from cli.main import build_parser
from lab.experiments import all_experiments
from lab.experiments.registry import dataset_names, experiments, record
from sweeps.grid_kinds import GRIDS
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
    # experiment 9 (measurements, not a grid) is registered beside the records, after them
    assert _calc_commands() == [*slugs, "measured"]
    assert [p.slug for p in experiment_pages()] == slugs
    assert list(GRIDS) == list(DATASET_NAMES) == list(dataset_names())
    assert set(dataset_names()) <= set(slugs)


def test_experiment_1_has_one_name_and_its_old_url_still_opens_it():
    assert record("decode") is record("batch") is experiments()[0]
    assert experiment_class("batch") is experiment_class("decode") is all_experiments()[0]
    assert "decode" in DATASET_NAMES and "decode" in _calc_commands()
