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

NEUTRAL = "#808080"
"""The colour of lines and marks that name no series (a phase, a limit, a ceiling): mid grey,
which reads on the light and the dark theme alike (3.9:1 on white, 4.7:1 on Material UI's dark
#121212); Okabe & Ito's black vanished on the dark theme."""

PRIMARY = OKABE_ITO[0]
"""Main series colour."""
HIGHLIGHT = OKABE_ITO[3]
"""Colour of the current point."""

FONT_STACK = ("system-ui, -apple-system, 'Segoe UI', 'Helvetica Neue', Arial, "
              "sans-serif")
"""Local fonts only: the lab makes no request beyond its own server. The Material UI theme's
font too, and so the charts' text (:data:`CHART_LIGHT_STYLE`)."""

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
table.lab-steps td { padding: 3px 10px 3px 0; vertical-align: top; overflow-wrap: anywhere; }
table.lab-steps td.label { font-weight: 600; min-width: 8em; }
table.lab-steps td.result { font-variant-numeric: tabular-nums; min-width: 6em; }
@media (max-width: 600px) {
  table.lab-steps tr { display: block; padding: 4px 0;
    border-bottom: 1px solid rgba(127, 127, 127, 0.25); }
  table.lab-steps td { display: block; padding: 0; min-width: 0; }
}
""".replace("FONT", FONT_STACK)
"""Styles of the "Show the calculation" table. Its lines wrap inside the page: kept on one line
(``nowrap``), a verdict or a configuration ran off the page's right edge at 1440 px, and a
phone showed no result at all. On a phone each row is a block: label, expression, result."""

CODE_CSS = """
code { color: inherit; background: rgba(127, 127, 127, 0.14); padding: 0 0.25em;
  border-radius: 3px; }
"""
"""Inline code in the page's text colour on a faint grey: Panel's theme writes it in #82aaff,
2.3:1 on white (text needs 4.5:1). Every Markdown pane has it (``apps.ui.panel_compat``'s
:func:`~apps.ui.panel_compat.markdown_stylesheets`)."""

PROSE_CSS = """
:host { font-family: FONT; font-size: 1rem; line-height: 1.55; max-width: 860px;
  overflow-wrap: anywhere; }
""".replace("FONT", FONT_STACK) + CODE_CSS
"""Readable measure for long text (a commit hash or a path breaks rather than widen a
phone's page)."""

HEADER_CSS = """
@media (max-width: 600px) {
  .title { font-size: 1.1rem !important; line-height: 1.25 !important;
    display: -webkit-box; -webkit-line-clamp: 2; -webkit-box-orient: vertical;
    overflow: hidden; }
}
"""
"""The page header's title on a phone: smaller, at most two lines (the page's own heading
below it gives the full title)."""

MAIN_CSS = """
.main-content > *, .main-content > * > * { max-height: none; }
"""
"""The page in the template's main area as tall as its content. Bokeh caps every layout at its
parent's height (``max-height: 100%``), so a page was held to the window's height below the
header and whatever ran past it was painted over what came next: on a phone the results covered
the lower inputs and took their taps. The main area scrolls, so nothing needs the cap."""

LOADER_CSS = """
#loader .spinner { animation: none; border: none; border-radius: 0; width: auto; height: auto; }
#loader .spinner::after { content: "Loading the page\\2026"; color: #fff; font: 1.1rem FONT; }
""".replace("FONT", FONT_STACK)
"""The template's loading overlay, still: its spinning ring keeps the browser redrawing every
frame while a page waits for the server (about 0.02 of a core per waiting tab, measured in
headless Chromium); a line of text says the same at no cost."""

_TEXT, _MUTED, _AXIS = "rgba(0, 0, 0, 0.87)", "rgba(0, 0, 0, 0.6)", "rgba(0, 0, 0, 0.22)"

CHART_LIGHT_STYLE = {
    "figure": {"background_fill_color": "#fff", "border_fill_color": "#fff",
               "outline_line_color": _TEXT, "outline_line_alpha": 0},
    "title": {"text_color": _TEXT, "text_font": FONT_STACK, "text_font_size": "1.05em",
              "text_font_style": "normal"},
    "axis": {"axis_line_color": _AXIS, "major_tick_line_color": _AXIS,
             "minor_tick_line_color": _AXIS, "axis_line_alpha": 0, "major_tick_line_alpha": 0,
             "minor_tick_line_alpha": 0, "major_label_text_color": _MUTED,
             "major_label_text_font": FONT_STACK, "major_label_text_font_size": "0.925em",
             "major_label_text_font_style": "normal", "axis_label_text_color": _TEXT,
             "axis_label_text_font": FONT_STACK, "axis_label_text_font_size": "1em",
             "axis_label_text_font_style": "normal", "axis_label_standoff": 12},
    "grid": {"grid_line_color": "rgba(0, 0, 0, 0.1)"},
    "legend": {"background_fill_color": "#fff", "border_line_alpha": 0,
               "background_fill_alpha": 0, "label_text_color": _TEXT, "label_text_font": FONT_STACK,
               "label_text_font_size": "0.95em", "label_text_font_style": "normal",
               "title_text_color": _MUTED, "title_text_font": FONT_STACK,
               "title_text_font_size": "0.95em", "title_text_font_style": "normal",
               "spacing": 8, "label_standoff": 8, "glyph_width": 14, "glyph_height": 14},
    "colorbar": {"background_fill_color": "#fff", "background_fill_alpha": 0,
                 "major_tick_line_alpha": 0, "minor_tick_line_alpha": 0, "bar_line_alpha": 0,
                 "title_text_color": _TEXT, "title_text_font": FONT_STACK,
                 "title_text_font_size": "0.95em", "title_text_font_style": "normal",
                 "major_label_text_color": _MUTED, "major_label_text_font": FONT_STACK,
                 "major_label_text_font_size": "0.9em", "major_label_text_font_style": "normal"},
}
"""What the Material UI page's light theme sets on a Bokeh figure in the browser (minimal
chart style; read back from a rendered page). A figure built with these values already is
left alone there: no re-render of the chart and no message back to the server for each of
its ~40 properties (more with a legend or a colour bar) while the page loads. The dark
theme still restyles it in the browser."""
