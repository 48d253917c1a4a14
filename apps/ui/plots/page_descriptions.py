"""How the generic page shows each experiment, beyond its param class: one description per slug.

A :class:`PageDescription` is everything the generic page knows of one experiment: the chart
it draws, whether it offers a trace upload, the inputs it gives no widget or shows only
behind a switch, and its lesson — which of its chart data are drawn, on which chart axis an
input's current value sits, and the lines and bands that matter for the current inputs. The
modules that read the descriptions know no experiment: :mod:`apps.ui.views.live_inputs` (which
widgets are shown), :mod:`apps.ui.plots.lessons` (what the series charts draw and the marks on
them), :mod:`apps.ui.plots.chart_view` and :mod:`apps.ui.views.experiment_view` (the chart kind, the
uploads).

An experiment of :mod:`lab.experiments.registry` not named in :data:`DESCRIPTIONS` is shown
with the default :class:`PageDescription`: its own series charts, every input shown, no upload,
its chart data drawn as they are, no marks. (A page of its own instead of the generic one is
registered in :mod:`apps.ui.views.pages`.) Chart data come from ``lab`` unchanged: a lesson only
chooses and groups what is drawn (the download stays the experiment's ``chart_data``). Nothing
here knows about Panel or sessions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

import xarray as xr

from apps.ui.plots.series_chart import LOG_Y, STEP
from lab.units import MS_PER_S

ChartKind = Literal["batch", "series"]


@dataclass(frozen=True)
class Mark:
    """A line or band on the charts: ``hline`` on the chart of ``variable`` and ``yrange``
    (its y axis from ``start`` to ``end``); ``vline`` and ``band`` (x from ``start`` to
    ``end``) on every chart whose x axis is ``axis``. ``start`` None: a line that does not
    exist for the current inputs (hidden). Drawn by :class:`apps.ui.plots.lessons.MarkLayer`, which
    moves a mark in place while its kind, chart and label's first word stay the same."""

    kind: str
    label: str
    start: float | None
    end: float | None = None
    variable: str | None = None
    axis: str | None = None


@dataclass(frozen=True)
class Switch:
    """A Boolean input that decides whether others count: the inputs ``on`` drive the result
    only while it is true, the inputs ``off`` only while it is false."""

    input: str
    on: tuple[str, ...] = ()
    off: tuple[str, ...] = ()


LessonData = Callable[[xr.Dataset, dict], xr.Dataset]
"""(chart data, current inputs) → the variables drawn, in order (at most four charts)."""

LessonMarks = Callable[[dict, dict], list[Mark]]
"""(current inputs, current result, ``{}`` while the inputs are invalid) → the marks."""


@dataclass(frozen=True)
class PageDescription:
    """What the generic page shows of one experiment."""

    chart: ChartKind = "series"
    """``"batch"``: the decode step over batch with the ridge (and experiment 9's measured
    overlay); ``"series"``: the experiment's own series."""
    uploads_trace: bool = False
    """The page offers a trace upload (the experiment has a ``trace`` input)."""
    unused_inputs: tuple[str, ...] = ()
    """Inputs its result never reads (shared by a family of experiments): they stay in the URL
    and the experiment but get no widget."""
    switches: tuple[Switch, ...] = ()
    """Switches whose dependent inputs' widgets are shown only while they count."""
    axis_inputs: Mapping[str, str] = field(default_factory=dict)
    """Chart axis → the input that holds the current value on that axis (when they differ)."""
    lesson_data: LessonData | None = None
    """What its series charts draw; None: the chart data as they are."""
    lesson_marks: LessonMarks | None = None
    """The limit lines, feasible bands and crossovers for the current inputs; None: none."""
    caption: str = ("Every curve is the lab's analytical model of the inputs, not a "
                    "measurement.")
    """The sentence under the charts: what the curves are."""


# 1. Batch bottleneck: the batch chart; experiment 9's measured overlay goes with it.
BUDGET_NOTE = "Hollow markers exceed the chosen memory budget."
"""What hollow markers mean (experiments 1–4: over the budget, nothing fits)."""

IDEAL_AND_BUDGET = f"The curves describe ideal phase costs, not measured performance. {BUDGET_NOTE}"
"""The caption of the decode family's charts (experiments 1, 3 and 4)."""

DECODE = PageDescription(chart="batch", caption=IDEAL_AND_BUDGET)


# 2. Sequences that fit: log y axes, so halving reads the same at every context.
def sequences_lesson(ds: xr.Dataset, _inputs: dict) -> xr.Dataset:
    """The sequences that fit and the KV bytes per sequence on log y axes."""
    return ds.assign({name: ds[name].assign_attrs({LOG_Y: True})
                      for name in ("max_sequences", "kv_bytes_per_sequence")})


MEMORY = PageDescription(unused_inputs=("batch",),  # the sequences that fit ignore the batch
                         lesson_data=sequences_lesson,
                         caption="The curves are the lab's memory accounting (weights, KV "
                                 "cache and reserve against the budget), not a measurement. "
                                 + BUDGET_NOTE)


# 3. Tensor parallelism: the all-reduce latency counts only with the all-reduce estimate.
TP = PageDescription(switches=(Switch("allreduce", on=("allreduce_latency_us",)),),
                     caption=IDEAL_AND_BUDGET)


# 4. Precision: BF16 and FP8 side by side whatever the precision input says.
PRECISION = PageDescription(unused_inputs=("precision",), caption=IDEAL_AND_BUDGET)


# 5. Prefill chunking: the TTFT deadline and the ITL limit as horizontal lines, the chunk
# sizes that meet both shaded, the current chunk marked.
def prefill_marks(inputs: dict, r: dict) -> list[Mark]:
    """The deadline and ITL limit lines, y ranges that show them, and the feasible band."""
    if "smallest_chunk_meeting_deadline" not in r:
        return []
    marks = [Mark("hline", f"TTFT deadline {inputs['deadline_ms']:,g} ms", inputs["deadline_ms"],
                  variable="ttft_s"),
             Mark("hline", f"ITL limit {inputs['itl_ms']:,g} ms", inputs["itl_ms"],
                  variable="itl_during_prefill_s")]
    lo, hi = r.get("smallest_chunk_meeting_deadline"), r.get("largest_chunk_meeting_itl")
    feasible = lo is not None and hi is not None and lo <= hi
    marks += [Mark("yrange", "", 0.0, max(3 * inputs["deadline_ms"],
                                          1.2 * r["ttft_s"] * MS_PER_S), variable="ttft_s"),
              Mark("yrange", "", 0.0, max(3 * inputs["itl_ms"],
                                          1.2 * r["itl_during_prefill_s"] * MS_PER_S),
                   variable="itl_during_prefill_s")]
    marks.append(Mark("band", "feasible: chunks meeting both" if feasible
                      else "feasible: no chunk meets both",
                      lo if feasible else None, hi if feasible else None, axis="chunk_size"))
    return marks


PREFILL = PageDescription(axis_inputs={"chunk_size": "chunk"}, lesson_marks=prefill_marks)


# 6. Prefix caching: KV bytes and blocks with and without caching on one chart each (one
# scale), and the private blocks per request as a step line over a few blocks either side of
# the current prefix: the block-boundary sawtooth.
SAWTOOTH_BLOCKS = 3
"""Blocks either side of the current prefix over which experiment 6's private blocks are
drawn (every token: each block boundary is a visible step)."""


def paired(ds: xr.Dataset, with_name: str, without_name: str, name: str) -> xr.DataArray:
    """Two variables as one with a ``prefix caching`` dimension (``on``/``off``): one chart,
    one scale."""
    both = xr.concat([ds[with_name], ds[without_name]], dim="prefix caching")
    both = both.assign_coords({"prefix caching": ["on", "off"]})
    long_name = str(ds[without_name].attrs.get("long_name", name)).replace("without", "")
    return both.rename(name).assign_attrs(ds[without_name].attrs, long_name=long_name.strip()
                                          .replace("  ", " "))


def sawtooth(ds: xr.Dataset, inputs: dict) -> xr.DataArray:
    """Experiment 6's private blocks per request over the prefixes within
    :data:`SAWTOOTH_BLOCKS` blocks of the current prefix, on an axis of their own
    (``prefix_window``), drawn as a step line."""
    da = ds["private_blocks_per_request_by_prefix"]
    p, reach = ds["prefix"].values, SAWTOOTH_BLOCKS * inputs["block"]
    da = da.isel(prefix=(p >= inputs["prefix"] - reach) & (p <= inputs["prefix"] + reach))
    window = da.rename(prefix="prefix_window")
    return window.assign_attrs({STEP: True})


def prefix_lesson(ds: xr.Dataset, inputs: dict) -> xr.Dataset:
    """KV bytes and blocks, on and off; the sawtooth; the saved fraction."""
    return xr.Dataset({
        "kv_bytes": paired(ds, "bytes_with_cache", "bytes_without_cache", "kv_bytes")
        .assign_attrs(long_name="KV memory per GPU"),
        "kv_blocks": paired(ds, "blocks_with_cache", "blocks_without_cache", "kv_blocks")
        .assign_attrs(long_name="KV blocks"),
        "private_blocks_per_request_by_prefix": sawtooth(ds, inputs),
        "saved_fraction_by_prefix": ds["saved_fraction_by_prefix"],
    })


PREFIX = PageDescription(axis_inputs={"prefix_window": "prefix"}, lesson_data=prefix_lesson,
                         caption="The curves count KV bytes and blocks exactly, by the lab's "
                                 "paged-cache accounting; they are not a measurement.")


# 7. Goodput: attainment and good requests are goodput scaled (one curve), so neither is drawn;
# the TTFT and TPOT medians against their limits say which promise breaks.
def goodput_lesson(ds: xr.Dataset, _inputs: dict) -> xr.Dataset:
    """Goodput, throughput and the TTFT and TPOT medians; the TTFT median on a log y axis (it
    runs from milliseconds to minutes as the queue grows: on a linear axis its limit lay on the
    baseline)."""
    names = ["goodput_rps", "throughput_tokens_per_s", "ttft_p50_s", "tpot_p50_s"]
    out = ds[[n for n in names if n in ds]]
    if "ttft_p50_s" in out:
        out["ttft_p50_s"] = out["ttft_p50_s"].assign_attrs({LOG_Y: True})
    return out


def goodput_marks(inputs: dict, r: dict) -> list[Mark]:
    """The TTFT and TPOT limits on the charts of their medians."""
    if "goodput_rps" not in r:
        return []
    return [Mark("hline", f"TTFT limit {inputs['ttft_ms']:,g} ms", inputs["ttft_ms"],
                 variable="ttft_p50_s"),
            Mark("hline", f"TPOT limit {inputs['tpot_ms']:,g} ms", inputs["tpot_ms"],
                 variable="tpot_p50_s")]


GOODPUT = PageDescription(uploads_trace=True, lesson_data=goodput_lesson,
                          lesson_marks=goodput_marks,
                          caption="The curves replay the trace on the lab's ideal step costs "
                                  "(a simulation), not a measurement.")


# 8. Context growth: the doubling ratio between its 2× and 4× bounds, the crossover marked;
# the model, GPU and precision derive a and c only with "derive from model".
def context_lesson(ds: xr.Dataset, _inputs: dict) -> xr.Dataset:
    """The step time, the doubling ratio and the attention time and share."""
    return ds[["time_s", "doubling_ratio", "attention_time_s", "attention_share"]]


def context_marks(_inputs: dict, r: dict) -> list[Mark]:
    """The 2× and 4× bounds of the doubling ratio and the crossover."""
    if "doubling_ratio" not in r or "crossover_tokens" not in r:
        return []
    return [Mark("yrange", "", 1.9, 4.3, variable="doubling_ratio"),
            Mark("hline", "2× (all linear)", 2.0, variable="doubling_ratio"),
            Mark("hline", "4× (all attention)", 4.0, variable="doubling_ratio"),
            Mark("vline", f"crossover n* = {r['crossover_tokens']:,.0f}",
                 float(r["crossover_tokens"]), axis="tokens")]


CONTEXT = PageDescription(
    switches=(Switch("from_model", on=("model", "gpu", "precision"), off=("a_ms", "c_ms")),),
    lesson_data=context_lesson, lesson_marks=context_marks)


# 10. Speculative decoding: the speed-up against its 1× line, the break-even batch marked.
def speculative_marks(_inputs: dict, r: dict) -> list[Mark]:
    """The 1× line of the speed-up and the break-even batch (hidden when there is none)."""
    if "break_even_batch" not in r or "speedup" not in r:
        return []
    below = r["break_even_batch"]
    return [Mark("hline", "1× (plain decoding)", 1.0, variable="speedup"),
            Mark("vline", f"break-even\nbatch {below:,}" if below else "break-even\nnone",
                 below, axis="batch")]  # one first word: one line, moved or hidden; two
    # lines of text, narrow enough to sit right of the line above the curves (on one line it
    # lay on them wherever it went)


def speculative_lesson(ds: xr.Dataset, _inputs: dict) -> xr.Dataset:
    """Every variable; the speed-up's axis reads ``×`` (a ratio's unit is 1, which left its
    axis without a label)."""
    return ds.assign(speedup=ds["speedup"].assign_attrs(units="×")) if "speedup" in ds else ds


SPECULATIVE = PageDescription(lesson_data=speculative_lesson, lesson_marks=speculative_marks)


DESCRIPTIONS: dict[str, PageDescription] = {
    "decode": DECODE,
    "memory": MEMORY,
    "tp": TP,
    "precision": PRECISION,
    "prefill": PREFILL,
    "prefix": PREFIX,
    "goodput": GOODPUT,
    "context": CONTEXT,
    "speculative": SPECULATIVE,
}
"""The experiments whose generic page differs from the default, by slug."""


def description(slug: str) -> PageDescription:
    """The :class:`PageDescription` of the experiment ``slug`` (its current slug)."""
    return DESCRIPTIONS.get(slug, PageDescription())
