"""Every shipped ``config.json`` through every ``calc`` experiment that takes ``--model``: the
text with its derivation, never a traceback (a dense config with a sliding window, Gemma 3's,
was read with 0 experts and ``calc decode`` divided by them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.main import main

CONFIGS = sorted((Path(__file__).resolve().parents[1] / "data" / "hf_configs").glob(
    "*/config.json"))
EXPERIMENTS = ("decode", "memory", "tp", "precision", "prefill", "prefix", "speculative")


@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: p.parent.name)
def test_every_config_derives_in_every_experiment(config, capsys):
    for experiment in EXPERIMENTS:
        code = main(["calc", experiment, "--model", str(config)])
        out, err = capsys.readouterr()
        assert "Traceback" not in out + err, (experiment, err)
        if code == 0:
            assert " = " in out, experiment  # the derivation's lines
        else:
            assert len(err.strip().splitlines()[-1].split(". ")) <= 3, (experiment, err)
