"""The busy note covers a whole update (calculation and chart redraw), at the Bokeh-document
level: a deliberately slow calculation (monkeypatched) runs with the note shown in the
document, and the note is hidden only once the redraw that follows has run."""

from __future__ import annotations

import time

import panel as pn
import pytest

from apps.ui.shell.busy import BUSY_CSS, BUSY_DELAY_S, BusyNote
from apps.ui.views.experiment_view import ExperimentView
from lab.errors import LabInputError
from lab.experiments.context_growth_experiment import ContextGrowth
from lab.experiments.goodput_contract import GoodputContract

SLOW_S = 0.4
"""How long the monkeypatched calculation takes, s (more than the note's 0.3 s delay)."""


def shown_in_document(note: BusyNote) -> bool:
    """Whether the note's Bokeh model in the document is visible (what a browser is sent)."""
    models = [model for model, _parent in note._models.values()]
    assert models, "the note is not in the document"
    return all(model.visible for model in models)


@pytest.fixture
def scheduled(monkeypatch):
    """Callbacks the page schedules for the next tick, held until the test runs them."""
    held = []
    monkeypatch.setattr(pn.state, "execute", lambda fn, schedule=False: held.append(fn))
    return held


def slow_page(document, monkeypatch, cls, fail: bool = False):
    """An experiment page in ``document`` whose calculation takes :data:`SLOW_S`; returns the
    page and a list of what the note's document model showed during each calculation."""
    original = cls.compute
    during: list[bool] = []

    def slow_compute(self):
        note = view.chart.busy
        started = time.perf_counter()
        time.sleep(SLOW_S)
        during.append(shown_in_document(note) and note.visible)
        assert time.perf_counter() - started >= BUSY_DELAY_S
        if fail:
            raise LabInputError("This configuration cannot run.")
        return original(self)

    view = ExperimentView(experiment=cls(), sync_url=False)
    view.__panel__().get_root(document)
    monkeypatch.setattr(cls, "compute", slow_compute)
    return view, during


@pytest.mark.parametrize("cls", [ContextGrowth, GoodputContract], ids=lambda c: c.slug)
def test_note_is_shown_through_a_slow_calculation_and_the_redraw(document, monkeypatch,
                                                                  scheduled, cls):
    view, during = slow_page(document, monkeypatch, cls)
    note = view.chart.busy
    assert not note.visible and not shown_in_document(note)
    name = "tokens" if cls is ContextGrowth else "ttft_ms"
    setattr(view.experiment, name, getattr(view.experiment, name) * 2)
    assert during == [True]  # shown in the document before the calculation ran
    assert view.experiment.error is None and not view.experiment.computing
    assert note.visible and shown_in_document(note)  # the chart redraw is still to come
    assert len(scheduled) == 1
    scheduled.pop()()
    assert not note.visible and not shown_in_document(note)
    assert note.running == 0


def test_note_hides_after_a_slow_calculation_that_fails(document, monkeypatch, scheduled):
    view, during = slow_page(document, monkeypatch, ContextGrowth, fail=True)
    view.experiment.tokens = 4096
    assert during == [True]
    assert view.experiment.error == "This configuration cannot run."
    assert scheduled == []  # no redraw for invalid inputs
    assert not view.chart.busy.visible and not shown_in_document(view.chart.busy)


def test_note_counts_the_parts_of_an_update_and_waits_0_3_s():
    assert f"--lab-busy-delay: {BUSY_DELAY_S}s" in BUSY_CSS and BUSY_DELAY_S == 0.3
    note = BusyNote()
    with note.during():
        with note.during():
            assert note.visible and note.running == 2
        assert note.visible
    assert not note.visible and note.running == 0
    note.end()  # an extra end does not go below zero
    assert note.running == 0 and not note.visible


def test_measured_page_note_covers_a_slow_calculation(document, monkeypatch):
    from apps.ui.views.measured_page import MeasuredPage
    from lab.measured.experiment import FloorsAgainstMeasurements

    page = MeasuredPage(experiment=FloorsAgainstMeasurements())
    page.__panel__().get_root(document)
    original = FloorsAgainstMeasurements.compute
    during = []

    def slow_compute(self):
        time.sleep(SLOW_S)
        during.append(page.busy.visible and shown_in_document(page.busy))
        return original(self)

    monkeypatch.setattr(FloorsAgainstMeasurements, "compute", slow_compute)
    assert not page.busy.visible
    page.experiment.batch = page.experiment.batch * 2
    assert during == [True]
    assert not page.busy.visible and not shown_in_document(page.busy)
