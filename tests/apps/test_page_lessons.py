"""Bokeh-document checks that each page teaches its lesson (issue 11), without a browser."""

from __future__ import annotations

import numpy as np

from apps.ui.cards import CardsView
from apps.ui.chart_view import BUDGET_NOTE, ChartView
from lab.experiments.context_growth import ContextGrowth
from lab.experiments.precision_switch import PrecisionSwitch
from lab.experiments.tensor_parallel import TensorParallel

OVER = {"model": "llama-3.1-70b", "gpu": "l40s", "precision": "bf16", "batch": 64}
"""Llama 3.1 70B BF16 at batch 64 on one L40S: far over its memory."""


def chart_alphas(view: ChartView) -> list[float]:
    """Every marker's fill alpha across the view's series charts."""
    return [a for chart in view._series for source in chart.sources
            for a in source.data["fill_alpha"]]


def caption(view: ChartView) -> str:
    return view.__panel__()[1].object


def test_over_budget_is_hollow_and_carded_on_experiments_3_and_4():
    for cls in (TensorParallel, PrecisionSwitch):
        exp = cls(**OVER)
        view = ChartView(experiment=exp)
        alphas = chart_alphas(view)
        assert alphas and 0.0 in alphas, cls.__name__
        html = CardsView(experiment=exp)._html(exp.result)
        assert "does not fit" in html and "lab-card-over" in html, cls.__name__
        assert BUDGET_NOTE in caption(view)
        fine = cls()
        assert "does not fit" not in CardsView(experiment=fine)._html(fine.result)


def test_tensor_parallel_fills_the_degrees_that_fit():
    exp = TensorParallel(**OVER)
    view = ChartView(experiment=exp)
    source = view._series[0].sources[0].data
    ds = exp.sweep(tp=exp.chart_data()["tp"])
    np.testing.assert_array_equal(source["fill_alpha"] == 1.0, np.asarray(ds["fits"].values))


def test_budget_caption_only_on_pages_with_a_budget():
    view = ChartView(experiment=ContextGrowth())
    assert BUDGET_NOTE not in caption(view)
    assert 0.0 not in chart_alphas(view)
