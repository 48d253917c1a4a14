"""Model boundaries and primary sources: limits, catalog figures with sources, units."""

from __future__ import annotations

import pandas as pd
import panel as pn

from apps.ui.pages import experiment_classes
from apps.ui.theme import PROSE_CSS
from lab.catalog import gpu_catalog, model_catalog
from lab.units import GB, TB_PER_S, TFLOPS

UNITS_TEXT = """
### Units

GB means 10⁹ bytes; GiB and KiB mean 2³⁰ and 2¹⁰ bytes. TB/s means 10¹² bytes per second and
TFLOPS 10¹² FLOP per second. Peaks are dense vendor figures (no structured sparsity), not achieved
performance. Times show in ms on screen and are kept in seconds in the data; every figure keeps
full precision and is rounded only for display.
"""


def gpu_frame() -> pd.DataFrame:
    """Every catalog GPU figure with its source and checked date."""
    rows = [{"GPU": g.name, "id": g.id, "memory (GB)": g.capacity_bytes / GB,
             "HBM (TB/s)": g.hbm_bw / TB_PER_S, "BF16 dense (TFLOPS)": g.peak_bf16 / TFLOPS,
             "FP8 dense (TFLOPS)": g.peak_fp8 / TFLOPS, "interconnect": g.interconnect,
             "source": g.source, "checked": g.checked} for g in gpu_catalog().values()]
    return pd.DataFrame(rows)


def model_frame() -> pd.DataFrame:
    """Every catalog model figure with its source and checked date."""
    rows = [{"model": m.name, "id": m.id, "d": m.hidden, "L": m.layers, "H": m.heads,
             "K": m.kv_heads, "h": m.head_dim, "F": m.intermediate, "V": m.vocab,
             "tied": m.tied, "P_total": m.total_params, "max context": m.max_context,
             "source": m.source, "checked": m.checked} for m in model_catalog().values()]
    return pd.DataFrame(rows)


def _table(frame: pd.DataFrame) -> pn.pane.HTML:
    html = frame.to_html(index=False, na_rep="—", float_format=lambda v: f"{v:,.3f}".rstrip(
        "0").rstrip("."), classes="lab-table", border=0)
    css = (".lab-table { border-collapse: collapse; font-size: 0.85rem; } "
           ".lab-table td, .lab-table th { padding: 4px 8px; border-bottom: 1px solid "
           "rgba(127,127,127,0.3); vertical-align: top; text-align: left; }")
    return pn.pane.HTML(html, stylesheets=[css], sizing_mode="stretch_width")


def sources_page() -> pn.Column:
    """Each experiment's limits and sources, the catalogs, and the units convention."""
    parts: list = [pn.pane.Markdown("# Model boundaries and primary sources",
                                    sizing_mode="stretch_width")]
    for cls in experiment_classes():
        sources = "\n".join(f"- {s}" for s in cls.sources)
        parts.append(pn.pane.Markdown(
            f"### {cls.number}. {cls.title}\n\n{cls.limits}\n\n{sources}",
            stylesheets=[PROSE_CSS], sizing_mode="stretch_width"))
    parts += [pn.pane.Markdown(UNITS_TEXT, stylesheets=[PROSE_CSS], sizing_mode="stretch_width"),
              pn.pane.Markdown("### GPUs", sizing_mode="stretch_width"), _table(gpu_frame()),
              pn.pane.Markdown("### Models", sizing_mode="stretch_width"),
              _table(model_frame())]
    return pn.Column(*parts, sizing_mode="stretch_width")
