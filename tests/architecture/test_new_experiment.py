"""Adding an experiment is four files: its model, its record, its class and its tests.

This test writes the first three for one more experiment ("weights": the bytes of a model's
weights at a precision; number ``NEXT``, after the registered ones) into a scratch package,
adds the record to the registry, and shows
that the command line, the sweeps and the apps pick it up from the record alone: no other
module of the lab is edited.
"""

from __future__ import annotations

import io
import json
import sys
from contextlib import redirect_stdout
from textwrap import dedent

import pytest

from lab.experiments import registry

NEXT = registry.count() + 1
"""The scratch experiment's number: the one after the lab's own."""

MODEL = '''
"""Weight bytes: N parameters at b bytes each."""

UNITS = {"weight_bytes": ("weight bytes N·b", "B")}


def calc_weights(params_b: float, bytes_per_param: float) -> dict:
    """The weights of ``params_b`` billion parameters at ``bytes_per_param`` B each, in B."""
    return {"inputs": {"params": params_b * 1e9, "bytes_per_param": bytes_per_param},
            "weight_bytes": params_b * 1e9 * bytes_per_param}


def weight_steps(record: dict):
    from lab.derivations.decode_steps import Step

    i = record["inputs"]
    return [Step("Weight bytes", f"{i['params']:,.0f} × {i['bytes_per_param']:g} B",
                 f"{record['weight_bytes']:,.0f} B")]
'''

CLASS = '''
"""Experiment NEXT: how many bytes are the weights."""

import numpy as np
import param

from lab.experiments.base import Card, Experiment, Prediction
from lab.experiments.serving_common import dataset
from scratch_lab.weights_model import UNITS, calc_weights, weight_steps


class WeightBytes(Experiment):
    number = NEXT
    slug = "weights"
    title = "Weight bytes"
    headline = "Half the bytes per weight, half the weights to read."
    prediction = Prediction(question="FP8 instead of BF16: the weights shrink by?",
                            choices=("A quarter", "Half"), answer=1)
    limits = "Dense weights only."
    params_b = param.Number(default=8.0, bounds=(0.1, 1000), label="Parameters (billions)",
                            doc="Parameters N, billions.")
    bytes_per_param = param.Number(default=2.0, bounds=(0.5, 4), label="Bytes per weight",
                                   doc="Bytes b per parameter.")

    def compute(self):
        return calc_weights(self.params_b, self.bytes_per_param)

    def cards(self):
        return [Card("Weights", f"{self.result['weight_bytes'] / 1e9:.2f} GB")]

    def steps(self):
        return weight_steps(self.result)

    def explanation(self):
        return "Half: the bytes are N·b."

    def chart_data(self):
        b = np.array([0.5, 1.0, 2.0, 4.0])
        out = calc_weights(self.params_b, b)
        return dataset("bytes_per_param", b, "bytes per weight", "B", out, UNITS,
                       ("weight_bytes",))
'''

RECORD_FILE = '''
from lab.experiments.registry import ExperimentRecord

RECORD = ExperimentRecord(NEXT, "weights", "scratch_lab.weights_model:calc_weights",
                          "scratch_lab.weights_model:weight_steps",
                          "scratch_lab.weight_bytes:WeightBytes")
'''


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    """The scratch package's record added to the registry (removed afterwards)."""
    package = tmp_path / "scratch_lab"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for name, text in {"weights_model": MODEL, "weight_bytes": CLASS, "record": RECORD_FILE}.items():
        (package / f"{name}.py").write_text(dedent(text).replace("NEXT", str(NEXT)))
    monkeypatch.syspath_prepend(str(tmp_path))
    from scratch_lab.record import RECORD

    monkeypatch.setattr(registry, "EXPERIMENTS", [*registry.EXPERIMENTS, RECORD])
    yield RECORD
    for name in [m for m in sys.modules if m.startswith("scratch_lab")]:
        del sys.modules[name]


def _cli(*argv: str) -> tuple[int, str]:
    from cli.main import main

    out = io.StringIO()
    with redirect_stdout(out):
        code = main(list(argv))
    return code, out.getvalue()


def test_the_command_line_runs_it_from_its_record(scratch, capsys):
    code, out = _cli("calc", "weights", "--params-b", "70", "--bytes-per-param", "1", "--json")
    assert code == 0
    assert json.loads(out)["weight_bytes"] == 70e9
    code, out = _cli("calc", "weights")
    assert (code, out) == (0, "Weight bytes = 8,000,000,000 × 2 B = 16,000,000,000 B\n")
    assert _cli("calc", "weights", "--bytes-per-param", "9")[0] == 2
    assert "bytes_per_param" in capsys.readouterr().err
    code, out = _cli("--help")
    assert f"{registry.count_words()} experiments" in out  # one more than the lab's own


def test_the_apps_show_it_from_its_record(scratch):
    from apps.ui.views.app import build_page
    from apps.ui.views.landing import landing_page
    from apps.ui.views.pages import all_pages, experiment_class
    from lab.experiments import all_experiments

    assert experiment_class("weights").title == "Weight bytes"
    assert all_experiments()[-1].slug == "weights"
    assert "weights" in [page.slug for page in all_pages()]
    assert registry.count() == NEXT
    assert f"{registry.count_words().capitalize()} interactive experiments" in \
        landing_page()[0].object
    page = build_page("weights")
    assert page.title == f"Inference Lab · {NEXT}. Weight bytes"


def test_the_sweeps_know_it_has_no_grid(scratch):
    from lab.errors import LabInputError
    from sweeps.grid_kinds import grid_kind
    from sweeps.paths import DATASET_NAMES

    assert "weights" not in DATASET_NAMES
    with pytest.raises(LabInputError, match="There is no grid for experiment 'weights'"):
        grid_kind("weights")
