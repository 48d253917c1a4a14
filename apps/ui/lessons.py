"""The lesson of each experiment drawn on its charts: which curves, and the lines that matter.

Chart data come from ``lab`` unchanged; :func:`lesson_data` only chooses and groups what is
drawn (the download stays the experiment's ``chart_data``), recognising each experiment by
the variables its chart data hold:

- prefill chunking (5): the TTFT deadline and the ITL limit as horizontal lines, the chunk
  sizes that meet both shaded, the current chunk marked;
- sequences that fit (2): log y axes, so halving reads the same at every context;
- prefix caching (6): KV bytes and blocks with and without caching on one chart each (one
  scale), and the private blocks per request as a step line over a few blocks either side of
  the current prefix (:data:`SAWTOOTH_BLOCKS`): the block-boundary sawtooth;
- goodput (7): attainment and good requests are goodput scaled (one curve), so neither is
  drawn; the TTFT and TPOT medians against their limits say which promise breaks;
- context growth (8): the doubling ratio between its 2× and 4× bounds, the crossover marked;
- speculative decoding (10): the speed-up against its 1× line, the break-even batch marked.

:func:`lesson_marks` gives the lines and bands for the current inputs in screen units (ms).
Nothing here knows about Panel or sessions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import xarray as xr
from bokeh.models import BoxAnnotation, Label, Span
from bokeh.plotting import figure

from apps.ui.theme import OKABE_ITO
from lab.experiments.base import Experiment

AXIS_ALIASES = {"chunk_size": "chunk", "prefix_window": "prefix"}
"""Chart axis → the input that holds the current value on that axis."""

MARK_COLOR = OKABE_ITO[7]
"""Colour of limit lines and their labels."""

BAND_COLOR = OKABE_ITO[2]
"""Fill of a shaded feasible range."""


@dataclass(frozen=True)
class Mark:
    """A line or band on the charts: ``hline`` on the chart of ``variable`` and ``yrange``
    (its y axis from ``start`` to ``end``); ``vline`` and ``band`` (x from ``start`` to
    ``end``) on every chart whose x axis is ``axis``."""

    kind: str
    label: str
    start: float | None
    end: float | None = None
    variable: str | None = None
    axis: str | None = None


def paired(ds: xr.Dataset, with_name: str, without_name: str, name: str) -> xr.DataArray:
    """Two variables as one with a ``prefix caching`` dimension (``on``/``off``): one chart,
    one scale."""
    both = xr.concat([ds[with_name], ds[without_name]], dim="prefix caching")
    both = both.assign_coords({"prefix caching": ["on", "off"]})
    long_name = str(ds[without_name].attrs.get("long_name", name)).replace("without", "")
    return both.rename(name).assign_attrs(ds[without_name].attrs, long_name=long_name.strip()
                                          .replace("  ", " "))


SAWTOOTH_BLOCKS = 3
"""Blocks either side of the current prefix over which experiment 6's private blocks are
drawn (every token: each block boundary is a visible step)."""


def sawtooth(ds: xr.Dataset, inputs: dict | None) -> xr.DataArray:
    """Experiment 6's private blocks per request over the prefixes within
    :data:`SAWTOOTH_BLOCKS` blocks of the current prefix (every prefix without ``inputs``),
    on an axis of their own (``prefix_window``), drawn as a step line."""
    da = ds["private_blocks_per_request_by_prefix"]
    if inputs is not None:
        p, reach = ds["prefix"].values, SAWTOOTH_BLOCKS * inputs["block"]
        da = da.isel(prefix=(p >= inputs["prefix"] - reach) & (p <= inputs["prefix"] + reach))
    window = da.rename(prefix="prefix_window")
    return window.assign_attrs(chart_step=True)


def lesson_data(ds: xr.Dataset, inputs: dict | None = None) -> xr.Dataset:
    """The variables drawn, in order (at most four charts); ``ds`` itself when no lesson
    applies."""
    if "blocks_with_cache" in ds and "private_blocks_per_request_by_prefix" in ds:
        return xr.Dataset({
            "kv_bytes": paired(ds, "bytes_with_cache", "bytes_without_cache", "kv_bytes")
            .assign_attrs(long_name="KV memory per GPU"),
            "kv_blocks": paired(ds, "blocks_with_cache", "blocks_without_cache", "kv_blocks")
            .assign_attrs(long_name="KV blocks"),
            "private_blocks_per_request_by_prefix": sawtooth(ds, inputs),
            "saved_fraction_by_prefix": ds["saved_fraction_by_prefix"],
        })
    if "goodput_rps" in ds and "attainment" in ds:
        names = ["goodput_rps", "throughput_tokens_per_s", "ttft_p50_s", "tpot_p50_s"]
        return ds[[n for n in names if n in ds]]
    if "doubling_ratio" in ds:
        return ds[["time_s", "doubling_ratio", "attention_time_s", "attention_share"]]
    if "max_sequences" in ds and "free_for_kv_bytes" in ds:  # sequences that fit (2)
        return ds.assign({name: ds[name].assign_attrs(chart_log_y=True)
                          for name in ("max_sequences", "kv_bytes_per_sequence")})
    return ds


def chart_inputs(exp: Experiment) -> dict:
    """The current inputs, also under the name of the chart axis they sit on."""
    inputs = exp.inputs()
    return {**inputs, **{axis: inputs[name] for axis, name in AXIS_ALIASES.items()
                         if name in inputs}}


def lesson_marks(exp: Experiment) -> list[Mark]:
    """The limit lines, feasible bands and crossovers for the current inputs (screen units)."""
    r, inputs = exp.result or {}, exp.inputs()
    marks: list[Mark] = []
    if "deadline_ms" in inputs and "itl_ms" in inputs and "smallest_chunk_meeting_deadline" in r:
        marks += [Mark("hline", f"TTFT deadline {inputs['deadline_ms']:g} ms",
                       inputs["deadline_ms"], variable="ttft_s"),
                  Mark("hline", f"ITL limit {inputs['itl_ms']:g} ms", inputs["itl_ms"],
                       variable="itl_during_prefill_s")]
        lo, hi = r.get("smallest_chunk_meeting_deadline"), r.get("largest_chunk_meeting_itl")
        feasible = lo is not None and hi is not None and lo <= hi
        ms = 1e3
        marks += [Mark("yrange", "", 0.0, max(3 * inputs["deadline_ms"], 1.2 * r["ttft_s"] * ms),
                       variable="ttft_s"),
                  Mark("yrange", "", 0.0, max(3 * inputs["itl_ms"],
                                              1.2 * r["itl_during_prefill_s"] * ms),
                       variable="itl_during_prefill_s")]
        marks.append(Mark("band", "feasible: chunks meeting both" if feasible
                          else "feasible: no chunk meets both",
                          lo if feasible else None, hi if feasible else None,
                          axis="chunk_size"))
    if "doubling_ratio" in r and "crossover_tokens" in r:
        marks += [Mark("yrange", "", 1.9, 4.3, variable="doubling_ratio"),
                  Mark("hline", "2× (all linear)", 2.0, variable="doubling_ratio"),
                  Mark("hline", "4× (all attention)", 4.0, variable="doubling_ratio"),
                  Mark("vline", f"crossover n* = {r['crossover_tokens']:,.0f}",
                       float(r["crossover_tokens"]), axis="tokens")]
    if "break_even_batch" in r and "speedup" in r:  # speculative decoding (10)
        below = r["break_even_batch"]
        marks += [Mark("hline", "1× (plain decoding)", 1.0, variable="speedup"),
                  Mark("vline", f"break-even batch {below:,}" if below else "break-even none",
                       below, axis="batch")]  # one first word: one line, moved or hidden
    if "goodput_rps" in r and "ttft_ms" in inputs:
        marks.append(Mark("hline", f"TTFT limit {inputs['ttft_ms']:g} ms", inputs["ttft_ms"],
                          variable="ttft_p50_s"))
        if "tpot_ms" in inputs:
            marks.append(Mark("hline", f"TPOT limit {inputs['tpot_ms']:g} ms", inputs["tpot_ms"],
                              variable="tpot_p50_s"))
    return marks


def band_label_place(mark: Mark, xs=None) -> dict:
    """Where a band's label goes, so it stays inside the plot: from the band's start
    rightwards when the band lies in the left half of the (log) x values ``xs``, else from
    its end leftwards; at the plot's left edge when there is no band."""
    if mark.start is None or mark.end is None:
        return {"x": 8, "x_units": "screen", "x_offset": 0, "text_align": "left"}
    finite = np.asarray(xs if xs is not None else [], dtype=float)
    finite = finite[np.isfinite(finite) & (finite > 0)]
    right_half = finite.size > 0 and mark.start > 0 and (
        np.log(mark.start) + np.log(mark.end) > np.log(finite.min()) + np.log(finite.max()))
    if right_half:
        return {"x": mark.end, "x_units": "data", "x_offset": -4, "text_align": "right"}
    return {"x": mark.start, "x_units": "data", "x_offset": 4, "text_align": "left"}


class MarkLayer:
    """The Bokeh annotations of the marks on one figure, moved in place on each update."""

    def __init__(self, fig: figure, variable: str, axis: str):
        self.figure, self.variable, self.axis = fig, variable, axis
        self.models: dict[tuple[str, str | None], tuple] = {}

    def _models(self, mark: Mark) -> tuple:
        key = (mark.kind, mark.variable or mark.axis)
        key = (f"{key[0]}:{mark.label.split(' ')[0]}", key[1])
        if key not in self.models:
            label = Label(x=0, y=0, text="", text_font_size="11px", text_color=MARK_COLOR,
                          background_fill_color="white", background_fill_alpha=0.7)
            if mark.kind == "band":
                shape = BoxAnnotation(fill_color=BAND_COLOR, fill_alpha=0.15, line_alpha=0)
                label.update(y=8, y_units="screen", x_offset=4)
            else:
                shape = Span(dimension="width" if mark.kind == "hline" else "height",
                             line_color=MARK_COLOR, line_width=1.5, line_dash="dotted")
                if mark.kind == "hline":
                    label.update(x=8, x_units="screen", y_offset=3)
                else:
                    label.update(y=28, y_units="screen", x_offset=-4, text_align="right")
            self.figure.add_layout(shape)
            self.figure.add_layout(label)
            self.models[key] = (shape, label)
        return self.models[key]

    def show(self, marks: list[Mark], xs=None) -> None:
        """Place every mark that belongs on this figure (``xs``: the x values drawn, which
        say on which side of a band its label fits, :func:`band_label_place`)."""
        for mark in marks:
            if mark.kind == "yrange":
                if mark.variable == self.variable:
                    self.figure.y_range.update(start=mark.start, end=mark.end)
                continue
            if mark.kind == "hline" and mark.variable != self.variable:
                continue
            if mark.kind != "hline" and mark.axis != self.axis:
                continue
            shape, label = self._models(mark)
            label.text = mark.label
            if mark.kind == "band":
                shape.update(left=mark.start, right=mark.end, visible=mark.start is not None)
                label.update(visible=True, **band_label_place(mark, xs))
            else:
                shape.location = mark.start
                label.visible = mark.start is not None  # a line that does not exist now
                if mark.start is None:
                    continue
                if mark.kind == "hline":
                    label.y = mark.start
                else:
                    label.x = mark.start
