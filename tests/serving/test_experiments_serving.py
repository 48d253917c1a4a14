"""Experiments 5–8 as param classes: inputs in, cards, steps, explanation and chart data out."""

from __future__ import annotations

import pytest
import xarray as xr

from lab.derivations.decode_steps import Step
from lab.experiments.base import Card, Experiment
from lab.experiments.context_growth_experiment import ContextGrowth
from lab.experiments.goodput_contract import GoodputContract
from lab.experiments.prefill_deadline import PrefillDeadline
from lab.experiments.prefix_ownership import PrefixOwnership

CLASSES = (PrefillDeadline, PrefixOwnership, GoodputContract, ContextGrowth)


def _has_units(ds: xr.Dataset) -> None:
    for name in list(ds.data_vars) + list(ds.coords):
        assert ds[name].attrs.get("long_name"), name
        assert "units" in ds[name].attrs, name


@pytest.mark.parametrize("cls", CLASSES)
def test_the_seven_elements(cls):
    exp = cls()
    assert isinstance(exp, Experiment)
    assert exp.error is None and exp.result
    assert 5 <= cls.number <= 8 and cls.slug and cls.title
    assert cls.headline.count(".") == 2
    assert 0 <= cls.prediction.answer < len(cls.prediction.choices)
    assert cls.limits and cls.sources
    cards = exp.cards()
    assert 3 <= len(cards) <= 5 and all(isinstance(c, Card) for c in cards)
    assert all(isinstance(s, Step) for s in exp.steps())
    assert any(ch.isdigit() for ch in exp.explanation())
    _has_units(exp.chart_data())
    for name in exp.input_names():
        assert exp.param[name].label and exp.param[name].doc, name


def test_prefill_updates_and_errors():
    exp = PrefillDeadline()
    assert exp.result["chunks"] == 8
    exp.chunk = 512
    assert exp.result["ttft_s"] == pytest.approx(1.36704)
    exp.param.update(deadline_ms=1200)
    assert exp.result["feasible_text"] == "no chunk meets both"
    ds = exp.chart_data()
    assert 512 in ds.chunk_size.values
    assert ds.ttft_s.sel(chunk_size=512).item() == pytest.approx(1.36704)


def test_prefix_chart_shows_sawtooth():
    exp = PrefixOwnership()
    assert exp.result["blocks_with_cache"] == 1362
    saved = exp.chart_data()["saved_fraction_by_prefix"]
    steps = saved.diff("prefix")
    assert (steps < 0).any() and (steps > 0).any()
    exp.tp = 8   # 8 KV heads: fine; bytes per block shrink
    assert exp.result["block_bytes"] == 2_097_152 / 8


def test_goodput_chart_and_scatter():
    exp = GoodputContract()
    ds = exp.chart_data()
    assert ds.goodput_rps.attrs["units"] == "requests/s"
    assert "rises, then falls" in exp.explanation()
    scatter = exp.scatter_data()
    assert scatter.sizes["request"] == 400
    assert int(scatter.good.sum()) == exp.result["good_requests"]
    _has_units(scatter)


def test_goodput_bad_trace_sets_error(tmp_path):
    exp = GoodputContract()
    exp.trace = str(tmp_path / "missing.csv")
    assert exp.result is None and "does not exist" in exp.error


def test_context_from_model_and_window():
    exp = ContextGrowth()
    assert 2 < exp.result["doubling_ratio"] < 4
    exp.from_model = True
    assert exp.result["inputs"]["coefficients"] == "model"
    exp.param.update(from_model=False, window=4096, tokens=100_000)
    assert exp.result["pairs"] == 4096 * 4097 // 2 + (100_000 - 4096) * 4096
