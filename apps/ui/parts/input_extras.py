"""What makes the inputs usable: a powers-of-two slider beside wide whole-number boxes, names
in the model and GPU dropdowns, and number boxes that show small coefficients in full.

Batch, context and the other wide counts are typed exactly in their number box; the slider
under the box moves over the powers of two (a log scale), so 1 to 1,048,576 is reachable in
twenty steps, and not past what the model in force allows (a context slider ends at the
model's maximum context). Nothing here reads the server's state.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Sequence

import panel as pn
import panel_material_ui as pmui
import param
from bokeh.models import NumeralTickFormatter

from apps.ui.panel_compat import DimensionSlider, param_widgets
from lab.catalog import get_model, gpu_catalog, model_catalog
from lab.errors import LabInputError
from lab.plan.plan_space import ENGINE_NAMES
from lab.served.served_experiment import ALL
from lab.units import nearest_on_log_scale

LOG_RATIO = 256
"""A whole-number input whose upper bound is at least this many times its lower (≥ 1) gets a
powers-of-two slider."""

NUMBER_FORMAT = "0,0.[000000000]"
"""Display format of decimal boxes: up to nine decimals, so 5e-7 reads 0.0000005, not 0.0."""


MODEL_LIMITS = {"context": "max_context"}
"""Inputs whose largest sensible value is the model's own (``{input: ModelSpec field}``): a
context past the model's maximum context is refused, so its slider does not offer it."""

STEP_BUTTONS_SX = {"& .MuiIconButton-root, & button": {"color": "text.primary", "opacity": 0.9}}
"""The number boxes' − and + buttons in the theme's text colour: visible in dark as in light."""


def is_wide_count(parameter: param.Parameter) -> bool:
    """True for an integer input spanning many orders of two (batch, context, prompt…)."""
    if not isinstance(parameter, param.Integer) or not parameter.bounds:
        return False
    lo, hi = parameter.bounds
    return lo is not None and hi is not None and lo >= 1 and hi / lo >= LOG_RATIO


def powers_of_two(lo: int, hi: int) -> list[int]:
    """The powers of two from ``lo`` to ``hi`` inclusive."""
    return [2**k for k in range(math.ceil(math.log2(lo)), math.floor(math.log2(hi)) + 1)]


def slider_range(owner: param.Parameterized, name: str) -> tuple[int, int]:
    """The values a powers-of-two slider offers for ``owner.name``: the input's bounds, the
    upper one cut to the model's own limit where one applies (:data:`MODEL_LIMITS`; a context
    ends at the model's maximum context, tokens). A model the catalog cannot resolve leaves
    the bounds as they are."""
    lo, hi = owner.param[name].bounds
    field = MODEL_LIMITS.get(name)
    if field is not None and "model" in owner.param:
        with contextlib.suppress(LabInputError, OSError, ValueError, TypeError):
            hi = min(hi, max(int(getattr(get_model(owner.model), field)), lo))
    return lo, hi


def model_limited(owner: param.Parameterized, name: str) -> bool:
    """Whether the slider of ``owner.name`` ends at a limit of the model in force."""
    return name in MODEL_LIMITS and "model" in owner.param


def log2_slider(owner: param.Parameterized, name: str) -> DimensionSlider:
    """A slider over the powers of two for ``owner.name``: moving it sets the input, and it
    follows typed values to the nearest power (without changing them), so its label says the
    value it shows is the nearest power of two ("Requests N, nearest power of two: 128" while
    N is 100), not the input's value. It offers :func:`slider_range` (following a new model)."""
    return options_slider(owner, name, lambda: powers_of_two(*slider_range(owner, name)),
                          label=f"{owner.param[name].label}, nearest power of two",
                          css_class=f"lab-log-{name}",
                          follows=["model"] if model_limited(owner, name) else [])


def options_slider(owner: param.Parameterized, name: str, offered: Callable[[], list[int]], *,
                   label: str, css_class: str, follows: Sequence[str] = (),
                   description: str = "") -> DimensionSlider:
    """A slider over the whole numbers ``offered()`` for ``owner.name``: moving it sets the
    input; it follows the input to the nearest value offered (on a log scale, without changing
    the input) and offers ``offered()`` anew when an input of ``follows`` changes. A
    ``description`` is its help (the input's doc, where the slider stands in for its box).

    A :class:`~apps.ui.panel_compat.DimensionSlider`: panel-material-ui's own discrete slider
    reads the released position back wrongly (a server error, the input unchanged)."""
    options = offered()
    slider = DimensionSlider(options=options, value=nearest_on_log_scale(getattr(owner, name), options),
                             label=label, sizing_mode="stretch_width", css_classes=[css_class],
                             **({"description": description} if description else {}))

    following = []  # non-empty while the slider is moved to follow the inputs

    def moved(event) -> None:
        if not following and event.new is not None and event.new != getattr(owner, name):
            setattr(owner, name, int(event.new))

    def follow(*_events) -> None:
        now = offered() or slider.options
        near = nearest_on_log_scale(getattr(owner, name), now)
        if slider.options != now or slider.value != near:
            following.append(True)
            try:
                slider.param.update(options=now, value=near)
            finally:
                following.clear()

    slider.param.watch(moved, "value")
    owner.param.watch(follow, [name, *follows])
    return slider


def catalog_names(name: str) -> dict[str, str] | None:
    """``{shown name: id}`` for the model, GPU or engine dropdown, None for other inputs."""
    if name == "engine":
        return {shown: key for key, shown in ENGINE_NAMES.items()}
    if name == "model":
        return {spec.name: key for key, spec in model_catalog().items()}
    if name == "gpu":
        return {spec.name: key for key, spec in gpu_catalog().items()}
    return None


def catalog_options(name: str, ids: list) -> dict[str, str] | None:
    """``{shown name: id}`` of the ``ids`` a model, GPU or engine dropdown offers, in catalog
    order: experiment 11's "all" first, an id the catalog does not know (e.g. from an older
    dataset) as itself, last; None for other inputs."""
    names = catalog_names(name)
    if names is None:
        return None
    offered = set(ids)
    known = {label: key for label, key in names.items() if key in offered}
    options = {ALL: ALL} if ALL in offered else {}  # experiment 11's filter "all" comes first
    options.update(known)
    options.update({str(key): key for key in ids if key not in options.values()})
    return options


def draft_list(widget: pmui.Select, owner: param.Parameterized) -> None:
    """Page 10's draft dropdown: names, not ids, and only the drafters the target can use
    (``owner.draft_options()``), kept so as the target changes; a draft in force that cannot
    serve stays listed with its reason in its name (the widget cannot hold a value it does not
    list), until another is chosen."""

    def refresh(*_events) -> None:
        widget.options = owner.draft_options()

    refresh()
    owner.param.watch(refresh, ["model", "draft"])


def improve(panel: pn.Param, owner: param.Parameterized) -> None:
    """Names in the catalog dropdowns, full decimals in number boxes, and a powers-of-two
    slider under each wide count, in ``panel`` (a ``pn.Param`` of ``owner``)."""
    for name, widget in list(param_widgets(panel).items()):
        if name not in owner.param:
            continue
        options = (catalog_options(name, owner.param[name].objects)
                   if isinstance(widget, pmui.Select) else None)
        if options is not None:
            widget.options = options
        if name == "draft" and isinstance(widget, pmui.Select) \
                and callable(getattr(owner, "draft_options", None)):
            draft_list(widget, owner)
        if isinstance(widget, pmui.FloatInput):
            widget.format = NumeralTickFormatter(format=NUMBER_FORMAT)
        if isinstance(widget, (pmui.FloatInput, pmui.IntInput)):
            widget.sx = STEP_BUTTONS_SX
        if is_wide_count(owner.param[name]) and widget in panel.layout.objects:
            index = panel.layout.objects.index(widget)
            slider = log2_slider(owner, name)
            slider.visible = widget.visible
            widget.param.watch(lambda e, s=slider: setattr(s, "visible", e.new), "visible")
            panel.layout.insert(index + 1, slider)
