"""The lab's look: a colour-blind-safe palette, typography and shared CSS."""

from __future__ import annotations

OKABE_ITO = (
    "#0072B2",  # blue
    "#E69F00",  # orange
    "#009E73",  # bluish green
    "#D55E00",  # vermillion
    "#CC79A7",  # reddish purple
    "#56B4E9",  # sky blue
    "#F0E442",  # yellow
    "#000000",  # black
)
"""Okabe & Ito's palette, distinguishable with the common colour-vision deficiencies."""

PRIMARY = OKABE_ITO[0]
"""Main series colour."""
HIGHLIGHT = OKABE_ITO[3]
"""Colour of the current point."""

FONT_STACK = ("system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, "
              "sans-serif")
"""Local fonts only: the lab makes no request beyond its own server."""

CARD_CSS = """
:host { width: 100%; }
.lab-cards { display: flex; flex-wrap: wrap; gap: 12px; font-family: FONT; }
.lab-card { flex: 1 1 120px; min-width: 120px; border: 1px solid rgba(127,127,127,0.35);
  border-radius: 10px; padding: 10px 14px; }
.lab-card .label { font-size: 0.85rem; opacity: 0.8; }
.lab-card .value { font-size: 1.45rem; font-weight: 650; line-height: 1.3;
  font-variant-numeric: tabular-nums; }
.lab-card .caption { font-size: 0.8rem; opacity: 0.75; }
.lab-card-over { border: 2px solid #D55E00; }
.lab-error { border-left: 4px solid ERR; padding: 8px 14px; font-family: FONT;
  font-size: 1rem; }
""".replace("FONT", FONT_STACK).replace("ERR", OKABE_ITO[3])
"""Styles of the headline cards and of the invalid-input message."""

STEPS_CSS = """
table.lab-steps { border-collapse: collapse; font-family: FONT; font-size: 0.95rem; }
table.lab-steps td { padding: 3px 10px 3px 0; vertical-align: top; }
table.lab-steps td.label { font-weight: 600; white-space: nowrap; }
table.lab-steps td.result { font-variant-numeric: tabular-nums; white-space: nowrap; }
""".replace("FONT", FONT_STACK)
"""Styles of the "Show the calculation" table."""

PROSE_CSS = """
:host { font-family: FONT; font-size: 1rem; line-height: 1.55; max-width: 860px; }
""".replace("FONT", FONT_STACK)
"""Readable measure for long text."""
