"""What a page costs the browser while it loads: nothing that keeps it busy for no result.

Measured with ``benchmarks/bench_sessions.py burst`` (docs/operations.md): with forty pages
opening at once on two cores, each waiting tab redrew the template's spinning loader every
frame, and the page's theme restyled every chart in the browser and sent each changed
property back to the server (about 80 patches per experiment-1 page, each re-rendering a
chart). The loader is still now and the charts arrive styled.
"""

from __future__ import annotations

import re

import pytest
from lab_browser import wait_idle

from apps.ui.plots.batch_chart import batch_charts, power_of_two_rows
from apps.ui.shell.theme import CHART_LIGHT_STYLE, FONT_STACK, LOADER_CSS
from apps.ui.views.app import build_page
from apps.ui.views.pages import experiment_class

THEME_ATTRS = {name for part in CHART_LIGHT_STYLE.values() for name in part}
"""Every property the page's light theme sets on a chart."""


def test_the_page_template_has_the_still_loader():
    for slug in ("", "batch", "grid"):
        assert LOADER_CSS in build_page(slug).config.raw_css
    assert "animation: none" in LOADER_CSS


def test_experiment_charts_are_built_in_the_light_theme():
    from apps.ui.plots.charts import new_figure

    fig, _ticker = new_figure("t", "x", "y", 300, log_x=True)
    assert fig.background_fill_color == "#fff"
    assert fig.title.text_font == CHART_LIGHT_STYLE["title"]["text_font"]
    for axis in (*fig.xaxis, *fig.yaxis):
        for name, value in CHART_LIGHT_STYLE["axis"].items():
            assert getattr(axis, name) == value, name
    for grid in (*fig.xgrid, *fig.ygrid):
        assert grid.grid_line_color == "rgba(0, 0, 0, 0.1)"
    exp = experiment_class("batch")()
    ds = exp.chart_data()
    charts = batch_charts(ds, exp.batch, exp.result["ridge_batch"])
    assert len(charts) == 2 and len(power_of_two_rows(ds).batch) > 1
    for chart in charts:
        assert chart.figure.yaxis[0].axis_label_text_font_style == "normal"
        assert chart.figure.border_fill_color == "#fff"


def test_series_and_heatmap_charts_carry_the_theme_of_their_legends_and_colour_bars():
    from bokeh.models import ColorBar, Legend

    from apps.ui.plots.charts import themed
    from apps.ui.plots.lessons import chart_inputs
    from apps.ui.plots.series_chart import experiment_charts

    exp = experiment_class("precision")()
    charts = experiment_charts(exp.chart_data(), chart_inputs(exp))
    legends = [lg for c in charts for lg in c.figure.select(type=Legend)]
    assert legends and all(lg.spacing == 8 and lg.label_text_font == FONT_STACK
                           for lg in legends)
    fig = themed(new_figure_with_colour_bar())
    (bar,) = fig.select(type=ColorBar)
    assert bar.major_label_text_font_size == "0.9em" and bar.bar_line_alpha == 0


def new_figure_with_colour_bar():
    from bokeh.models import ColorBar, LinearColorMapper
    from bokeh.plotting import figure

    fig = figure()
    fig.add_layout(ColorBar(color_mapper=LinearColorMapper(palette="Cividis256")), "right")
    return fig


@pytest.mark.parametrize("slug", ["decode", "precision", "grid"])
def test_loading_a_page_sends_no_theme_patches_and_shows_a_still_loader(slug, lab_url, lab_page,
                                                                        console_errors):
    """Before: experiment 1 sent ~80 theme properties back (axis colours, fonts, grid lines,
    the figure's fill), experiment 4 also its legends', the grid explorer its colour bar's;
    and the loader span at 60 frames a second."""
    sent: list[str] = []
    lab_page.on("websocket", lambda ws: ws.on(
        "framesent", lambda frame: sent.append(frame if isinstance(frame, str)
                                               else frame.decode(errors="replace"))))
    lab_page.goto(f"{lab_url}/?view={slug}")
    animation = lab_page.evaluate(
        "() => getComputedStyle(document.querySelector('#loader .spinner')).animationName")
    assert animation == "none"
    wait_idle(lab_page)
    lab_page.locator("canvas").first.wait_for(state="visible")
    patched = set(re.findall(r'"attr":"(\w+)"', "".join(sent)))
    assert sent and not (patched & THEME_ATTRS), sorted(patched & THEME_ATTRS)
    # panel-material-ui's bundle is loaded by the browser's own loader (a script, cached
    # compiled), not fetched and re-imported from a blob by es-module-shims on every load
    loaded = lab_page.evaluate("() => performance.getEntriesByType('resource')"
                               ".filter(e => e.name.includes('panel-material-ui.bundle.js'))"
                               ".map(e => e.initiatorType)")
    assert loaded == ["script"], loaded
    assert console_errors == []


def test_the_burst_benchmark_sees_content_inside_shadow_roots_and_only_when_shown(page):
    """``bench_sessions.py burst`` checks each page every 250 ms with its own script (not
    Playwright's locator wait, which costs every waiting tab CPU): it must find Panel's
    cards inside shadow roots, and not count a hidden one."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_sessions.py"
    spec = importlib.util.spec_from_file_location("bench_sessions", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    page.set_content("<div id='host'></div><canvas width='10' height='10'></canvas>")
    page.evaluate("""() => { const root = document.getElementById('host').attachShadow(
        {mode: 'open'}); root.innerHTML = "<div class='lab-card'><span class='value' "
        + "style='visibility: hidden'>7.04 ms</span></div>"; }""")
    selectors = [".lab-card .value", "canvas"]
    assert page.evaluate(bench.SHOWN, [selectors]) is False
    page.evaluate("""() => document.getElementById('host').shadowRoot
        .querySelector('.value').style.visibility = 'visible'""")
    assert page.evaluate(bench.SHOWN, [selectors]) is True
    assert page.evaluate(bench.SHOWN, [[".lab-card .value", ".missing"]]) is False
