"""Every ``calc`` subcommand but ``measured`` and ``served`` is generated from its experiment's
``param`` class: one flag per input, with the parameter's default (``cli/calc_generic.py``)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from cli.calc_cmd import HAND_WRITTEN
from cli.main import build_parser
from lab.experiments.command_line import Flag, flag_of
from lab.experiments.registry import experiments

GENERATED = [r for r in experiments() if r.slug not in HAND_WRITTEN]


def _subparser(slug: str) -> argparse.ArgumentParser:
    calc = build_parser()._subparsers._group_actions[0].choices["calc"]
    return calc._subparsers._group_actions[0].choices[slug]


def test_only_the_table_commands_are_hand_written():
    """The measurement tables (9, 11) and the planner (12: --candidates FILE, --validate) take
    files and options no param class holds; every other calc subcommand is generated."""
    assert sorted(HAND_WRITTEN) == ["measured", "plan", "served"]
    cli = Path(__file__).resolve().parents[2] / "cli"
    assert not (cli / "calc_decode_family.py").exists()
    assert not (cli / "calc_serving.py").exists()


@pytest.mark.parametrize("record", GENERATED, ids=[r.slug for r in GENERATED])
def test_one_flag_per_input_with_its_default(record):
    cls = record.experiment_class()
    actions = {a.dest: a for a in _subparser(record.slug)._actions}
    inputs = cls.command_line_inputs()
    assert set(actions) == {*inputs, "help", "json"}
    for name, parameter in inputs.items():
        expected = None if flag_of(parameter).unset else parameter.default
        assert actions[name].default == expected, name


def test_the_decode_family_shares_experiment_1s_defaults():
    """Batch 8 and context 8,192 wherever a decode configuration is an input: the calc
    flags of experiments 1-5 (prefill's with --decode-from) read DecodeExperiment's."""
    for slug in ("decode", "memory", "tp", "precision", "prefill"):
        actions = {a.dest: a for a in _subparser(slug)._actions}
        assert (actions["batch"].default, actions["context"].default) == (8, 8192), slug


def test_metadata_shapes_the_flags():
    prefix = {a.dest: a for a in _subparser("prefix")._actions}
    assert prefix["block"].option_strings == ["--page", "--block"]
    decode = {a.dest: a for a in _subparser("decode")._actions}
    assert decode["tp"].choices is None and decode["tp"].type is int  # tp 16: the lab's sentence
    assert "Hugging Face config.json" in decode["model"].help
    goodput = {a.dest: a for a in _subparser("goodput")._actions}
    assert "standard input" in goodput["trace"].help
    assert "shipped datasets/traces/default.csv" in goodput["trace"].help
    prefill = {a.dest: a for a in _subparser("prefill")._actions}
    assert prefill["decode_ms"].default is None and "--decode-from" in prefill["decode_ms"].help
    speculative = {a.dest: a for a in _subparser("speculative")._actions}
    assert speculative["tp"].choices == [1, 2, 4, 8]  # no metadata: the parameter's objects


def test_a_parameter_without_metadata_has_an_empty_flag():
    import param
    assert flag_of(param.Integer(default=1)) == Flag()
