"""Model boundaries and primary sources: limits, catalog figures with sources, units."""

from __future__ import annotations

import re

import pandas as pd
import panel as pn

from apps.ui.shell.theme import PROSE_CSS
from lab.catalog import gpu_catalog, model_catalog
from lab.experiments import all_experiments
from lab.units import GB, TB_PER_S, TFLOPS

UNITS_TEXT = """
### Units

GB means 10⁹ bytes; GiB, MiB and KiB mean 2³⁰, 2²⁰ and 2¹⁰ bytes. TB/s means 10¹² bytes per second and
TFLOPS 10¹² FLOP per second. Peaks are dense vendor figures (no structured sparsity), not achieved
performance. Times show in ms on screen and are kept in seconds in the data; every figure keeps
full precision and is rounded only for display.
"""


LEGEND_TEXT = """
### How to read the tables

**Evidence levels** (the *evidence* column; every level in an entry's source, strongest first):
**P** primary — the vendor's or model author's own text, read directly; **P\\*** primary
text read through a verbatim copy (named in the source); **S** secondary — a compendium or
third party citing the vendor; **D** derived — computed from other figures with the formula
in the source text (e.g. dense = with-sparsity ÷ 2).

**Model shape columns**: *d* hidden size; *L* layers; *H* query heads; *K* KV heads;
*h* head dimension; *F* MLP intermediate size; *V* vocabulary; *tied* input and output
embeddings shared; *P_total* total parameters; *max context* longest context, tokens.

**GPU memory**: read as decimal GB (10⁹ B). Where the vendor's own table labels the figure
in GiB, the *memory label* column says so; the lab keeps the vendor's number as GB.
"""
"""Legend of the evidence levels, the model shape columns and the memory label."""

EVIDENCE = re.compile(r"\((P\*?|S|D)[:)]")
"""An evidence mark in a catalog source text: ``(P: …)``, ``(P*: …)``, ``(S)``, ``(D)``."""


def evidence(source: str) -> str:
    """The evidence levels in ``source``, strongest first (``P, S, D``)."""
    found = set(EVIDENCE.findall(source))
    return ", ".join(level for level in ("P", "P*", "S", "D") if level in found)


def memory_label(notes: str, capacity_gb: float) -> str:
    """How the vendor labels the capacity: ``192 GiB (vendor table); read as 192 GB`` for a
    GiB-labelled part, else ``GB``."""
    if "Capacity label kept" in notes and "GiB" in notes:
        return f"{capacity_gb:,.0f} GiB in the vendor's table; read as {capacity_gb:,.0f} GB"
    return "GB"


def gpu_frame() -> pd.DataFrame:
    """Every catalog GPU figure with its source and checked date."""
    rows = [{"GPU": g.name, "id": g.id, "memory (GB)": g.capacity_bytes / GB,
             "memory label": memory_label(g.notes, g.capacity_bytes / GB),
             "HBM (TB/s)": g.hbm_bw / TB_PER_S, "BF16 dense (TFLOPS)": g.peak_bf16 / TFLOPS,
             "FP8 dense (TFLOPS)": g.peak_fp8 / TFLOPS, "interconnect": g.interconnect,
             "evidence": evidence(g.source), "source": g.source, "checked": g.checked}
            for g in gpu_catalog().values()]
    return pd.DataFrame(rows)


def model_frame() -> pd.DataFrame:
    """Every catalog model figure with its source and checked date."""
    rows = [{"model": m.name, "id": m.id, "d": m.hidden, "L": m.layers, "H": m.heads,
             "K": m.kv_heads, "h": m.head_dim, "F": m.intermediate, "V": m.vocab,
             "tied": m.tied, "P_total": m.total_params, "max context": m.max_context,
             "evidence": evidence(m.source), "source": m.source, "checked": m.checked}
            for m in model_catalog().values()]
    return pd.DataFrame(rows)


TABLE_CSS = """
:host { width: 100%; max-width: 100%; }
.lab-table-box { max-width: 100%; overflow-x: auto; }
.lab-table { border-collapse: collapse; font-size: 0.85rem; }
.lab-table td, .lab-table th { padding: 4px 8px; border-bottom: 1px solid rgba(127,127,127,0.3);
  vertical-align: top; text-align: left; }
.lab-table th { white-space: nowrap; }
.lab-table td:nth-last-child(2) { min-width: 22em; overflow-wrap: anywhere; }
"""
"""A catalog table in a box of its own that scrolls sideways when the table is wider than
the page (the long source column wraps), so the page itself never does."""


def _table(frame: pd.DataFrame) -> pn.pane.HTML:
    html = frame.to_html(index=False, na_rep="—", float_format=lambda v: f"{v:,.3f}".rstrip(
        "0").rstrip("."), classes="lab-table", border=0)
    return pn.pane.HTML(f'<div class="lab-table-box" tabindex="0">{html}</div>',
                        stylesheets=[TABLE_CSS], sizing_mode="stretch_width",
                        css_classes=["lab-sources-table"])


def sources_page() -> pn.Column:
    """Each experiment's limits and sources, the catalogs, and the units convention."""
    parts: list = [pn.pane.Markdown("# Model boundaries and primary sources",
                                    sizing_mode="stretch_width")]
    for cls in all_experiments():  # the pages' order (apps.ui.views.pages)
        sources = "\n".join(f"- {s}" for s in cls.sources)
        parts.append(pn.pane.Markdown(
            f"### {cls.number}. {cls.title}\n\n{cls.limits}\n\n{sources}",
            stylesheets=[PROSE_CSS], sizing_mode="stretch_width"))
    parts += [pn.pane.Markdown(UNITS_TEXT, stylesheets=[PROSE_CSS], sizing_mode="stretch_width"),
              pn.pane.Markdown(LEGEND_TEXT, stylesheets=[PROSE_CSS], sizing_mode="stretch_width",
                               css_classes=["lab-sources-legend"]),
              pn.pane.Markdown("### GPUs", sizing_mode="stretch_width"), _table(gpu_frame()),
              pn.pane.Markdown("### Models", sizing_mode="stretch_width"),
              _table(model_frame())]
    return pn.Column(*parts, sizing_mode="stretch_width")
