"""What only the browser knows, and the state a reader carries from page to page.

:class:`BrowserState` is an invisible component in the page: it reports the window's width
(a phone starts with the menu closed) and the browser's dark preference. The sidebar links
carry the model, GPU, precision and theme in their own address (the derivation's link the whole
decode configuration: tp, batch, context, …) (``?view=memory&model=…&theme=
dark``; written by the server from the inputs in force, :func:`apps.ui.views.app.carried_values`,
so a link opened in a new tab keeps them too); a link followed in the tab gets the theme shown
at that moment. The theme comes from the ``theme`` query argument first, else the browser's
preference. Nothing user-given is read as markup or as a path.
"""

from __future__ import annotations

import panel as pn
import param

CARRIED = ("model", "gpu", "precision")
"""Inputs a sidebar link carries to the next page (besides ``theme``)."""

DERIVATION_CARRIED = (*CARRIED, "tp", "batch", "context", "kv_precision", "ep", "budget",
                      "reserve_gb", "page")
"""Inputs the sidebar's link to the decode derivation carries (besides ``theme``): the whole
decode configuration it derives, where the page in force has it."""

PHONE_WIDTH = 700
"""Windows narrower than this (CSS px) start with the menu closed."""


class BrowserState(pn.custom.JSComponent):
    """Reports ``window_width`` and ``prefers_dark``; a followed sidebar link gets ``dark``."""

    window_width = param.Integer(default=0, doc="Window width in CSS px (0 until reported).")
    prefers_dark = param.Boolean(default=False, doc="The browser prefers a dark scheme.")
    dark = param.Boolean(default=False, doc="The page is dark now (set by the server).")

    _esm = """
    function pageModel() {
      const models = [...window.Bokeh.documents].flatMap((d) => [...d._all_models.values()]);
      return models.find((m) => m.data && "sidebar_open" in m.data && "dark_theme" in m.data);
    }
    export function render({ model }) {
      const report = () => {
        model.window_width = window.innerWidth;
        model.prefers_dark = !!(window.matchMedia &&
          window.matchMedia("(prefers-color-scheme: dark)").matches);
      };
      setTimeout(report, 0);  // once the model is connected, so the values reach the server
      // The template's own state, set in the browser once per page load: a phone starts with
      // the menu closed, and without a theme in the URL the browser's dark preference
      // applies. This component sits in the menu, whose drawer on a phone draws it again each
      // time it opens: closing the menu then would undo the menu button.
      setTimeout(() => {
        const page = pageModel();
        if (!page || window.__labStarted) { return; }
        window.__labStarted = true;
        if (window.innerWidth < PHONE_WIDTH && page.data.sidebar_open) {
          page.data.sidebar_open = false;
        }
        const asked = new URLSearchParams(window.location.search).get("theme");
        const prefers = !!(window.matchMedia &&
          window.matchMedia("(prefers-color-scheme: dark)").matches);
        if (!asked && prefers && !page.data.dark_theme) { page.data.dark_theme = true; }
      }, 0);
      if (!window.__labNavigation) {
        window.__labNavigation = true;
        document.addEventListener("click", (event) => {
          const link = event.composedPath().find((el) => el.tagName === "A");
          const href = link && link.getAttribute("href");
          if (!href || !href.startsWith("?")) { return; }
          const next = new URLSearchParams(href.slice(1));
          const page = pageModel();
          const dark = page ? page.data.dark_theme : window.__labDark;
          next.set("theme", dark ? "dark" : "default");
          event.preventDefault();
          window.location.search = "?" + next.toString();
        }, true);
      }
      window.__labDark = model.dark;
      model.on("dark", () => { window.__labDark = model.dark; });
      const span = document.createElement("span");
      span.style.display = "none";
      return span;
    }
    """.replace("PHONE_WIDTH", str(PHONE_WIDTH))


def requested_theme() -> str | None:
    """``dark`` or ``default`` from the ``theme`` query argument, else None."""
    values = (pn.state.session_args or {}).get("theme") or [b""]
    value = values[0].decode(errors="replace") if isinstance(values[0], bytes) else values[0]
    return value if value in ("dark", "default") else None


def follow_browser(page, state: BrowserState) -> None:
    """Apply the URL's theme and keep ``state.dark`` in step with the page's theme (the
    component itself closes the menu on a phone and applies the browser's dark preference
    when the URL names no theme)."""
    explicit = requested_theme()
    if explicit is not None:
        page.dark_theme = explicit == "dark"
    state.dark = bool(page.dark_theme)

    page.param.watch(lambda e: setattr(state, "dark", bool(e.new)), "dark_theme")
