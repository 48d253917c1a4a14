"""The measured data's entry in docs/sources.md, generated from the shipped files."""

from __future__ import annotations

import numpy as np

from lab.measured.measured_loader import KIND_NAMES, KINDS, SHIPPED_SOURCE, shipped_measurements


def measured_section() -> str:
    """Markdown: where the shipped measurements come from, their licence, and what they hold."""
    table = shipped_measurements()
    kind = np.asarray(table["kind"].values).astype(str)
    shape = np.asarray(table["shape"].values).astype(str)
    lines = [
        "## Measured kernel times (experiment 9)", "",
        f"Source: {SHIPPED_SOURCE} — <https://github.com/inference-sim/inference-sim>. "
        "Shipped unchanged in `lab/measured/data/` with its `NOTICE`; the rest of the lab is "
        "MIT-licensed. Measured on an NVIDIA H100 SXM 80 GB in BF16 by the publisher, who does "
        "not state the kernel library, clocks or driver: one data point per shape, evidence "
        "level **S** (a third party's measurement). The publisher's `mfu` column is not used; "
        "the lab recomputes every ratio from `latency_us` and the catalog figures above "
        "([model.md §9](model.md#9-floors-against-measurements-experiment-9)).", "",
        "| kind | points | shapes |",
        "|---|--:|---|",
    ]
    for k in KINDS:
        sel = kind == k
        shapes = ", ".join(dict.fromkeys(shape[sel].tolist()))
        lines.append(f"| {KIND_NAMES[k]} | {int(sel.sum()):,} | {shapes} |")
    return "\n".join(lines) + "\n"
