"""What a screen reader is not told by the widgets the lab is drawn with, told in the browser.

Defining :class:`PageSemantics` puts ``page_semantics.js`` in every page's head (Panel adds each
loaded custom component's ``__javascript__`` to the page), so pages without inputs (the landing
page, the sources) get it too. The script, when the browser is idle after a load, a focus
move, a click or a key:

- **says whether a card is open**: Panel's card header is a button with no state; it gets
  ``aria-expanded`` from its chevron ("Show the calculation", collapsed → ``false``);
- **drops empty headings**: Material UI's page header draws ``h5`` elements with no text,
  which a screen reader listed as headings; an empty heading gets ``aria-hidden``;
- **names each chart**: a Bokeh chart is a stack of unnamed canvases; its drawing becomes one
  image named by its title and axis labels ("Chart: Step time, Ideal decode step time (ms)
  against Batch (sequences)"). The figures themselves are in the page's derivation and its
  "Chart data (CSV)" download.

It reads Bokeh's own models (``Bokeh.index.all_views()``), never page text given by a reader,
and writes attributes only (no markup).
"""

from __future__ import annotations

from typing import ClassVar

import panel as pn


class PageSemantics(pn.custom.JSComponent):
    """Never placed on a page: defining it loads ``page_semantics.js`` in every page's head."""

    __javascript__: ClassVar[list[str]] = ["page_semantics.js"]
    _esm = "export function render() { return document.createElement('span') }"
