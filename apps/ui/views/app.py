"""The whole lab as one Panel app: a template, navigation, and the page named in the URL.

Pages are chosen by the ``view`` query parameter (``?view=batch``; not ``page``, which is an
experiment input), so ``panel serve apps/*.py`` serves one app and its root redirects to the
landing page.
"""

from __future__ import annotations

from html import escape
from urllib.parse import urlencode

import panel as pn
import panel_material_ui as pmui

from apps.ui.panel_compat import detach_busy, markdown_stylesheets, parse_query_value_by_value
from apps.ui.parts.input_extras import catalog_names
from apps.ui.parts.source_tables import sources_page
from apps.ui.shell import page_semantics  # noqa: F401 (its script goes in every page's head)
from apps.ui.shell.browser_state import (
    CARRIED,
    DERIVATION_CARRIED,
    BrowserState,
    follow_browser,
)
from apps.ui.shell.theme import CODE_CSS, FONT_STACK, HEADER_CSS, LOADER_CSS, MAIN_CSS
from apps.ui.shell.url_sync import OneHistoryEntry
from apps.ui.shell.url_values import accepts, quoted
from apps.ui.views.derivation import DerivationView
from apps.ui.views.grid import GridExplorer
from apps.ui.views.landing import landing_page
from apps.ui.views.pages import (
    DERIVATION,
    GRID,
    HOME,
    SOURCES,
    all_pages,
    experiment_class,
    href,
    page_builder,
    page_slug,
)

VIEW_ARG = "view"
"""Query argument naming the page (experiments sync their inputs to the other arguments)."""

THEME = {"palette": {"primary": {"main": "#0072B2"}, "secondary": {"main": "#E69F00"}},
         "typography": {"fontFamily": FONT_STACK}}
"""MUI theme: Okabe–Ito blue and orange, local system fonts."""

parse_query_value_by_value()  # a 5,000-digit query value must not blank the page
markdown_stylesheets(CODE_CSS)  # inline code at the text's contrast, not #82aaff on white


def requested_page() -> str:
    """The ``view`` query argument of the current request ('' for the landing page)."""
    args = pn.state.session_args or {}
    values = args.get(VIEW_ARG) or [b""]
    value = values[0]
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def unknown_page(slug: str) -> pn.pane.HTML:
    """One sentence saying there is no page ``slug`` (quoted escaped, never read as markup)."""
    return pn.pane.HTML(f"<p class=\"lab-unknown-page\" role=\"alert\">No page called "
                        f"'{escape(quoted(slug))}'. <a href=\"{href('')}\">Back to the lab</a>."
                        "</p>", sizing_mode="stretch_width")


def page_content(slug: str):
    """The content of the page with ``slug``; a slug that names no page gets one sentence."""
    if slug == HOME.slug:
        return landing_page()
    if slug == DERIVATION.slug:
        return DerivationView()
    if slug == SOURCES.slug:
        return sources_page()
    if slug == GRID.slug:
        return GridExplorer()
    cls, build = experiment_class(slug), page_builder(slug)
    if cls is None or build is None:
        return unknown_page(slug)
    return build(experiment=cls())


def carried_values(content, dark: bool, names: tuple[str, ...] = CARRIED,
                   target: type | None = None) -> dict[str, str]:
    """The query values a sidebar link carries to the next page: the inputs ``names`` in
    force on ``content``'s experiment (only values its inputs accept, and ``target``'s — the
    next page's experiment class — when given: catalog ids, never the raw URL's text), and the
    theme."""
    exp = getattr(content, "experiment", None)
    values = {}
    for name in names:
        if exp is None or name not in exp.param:
            continue
        value, ids = getattr(exp, name), catalog_names(name)  # model, GPU: catalog ids only
        if (accepts(exp.param[name], value) and (ids is None or value in ids.values())
                and (target is None or (name in target.param
                                        and accepts(target.param[name], value)))):
            values[name] = str(value)
    values["theme"] = "dark" if dark else "default"
    return values


def derivation_values(content, dark: bool) -> dict[str, str]:
    """What the link to the decode derivation carries: :data:`DERIVATION_CARRIED` where the
    derivation accepts them (experiment 9's tp 64 is not a decode tp), and the theme."""
    return carried_values(content, dark, DERIVATION_CARRIED, DerivationView.param.experiment.class_)


def navigation_markdown(current: str, carried: dict[str, str],
                        derivation: dict[str, str] | None = None) -> str:
    """Links to every page (each carrying ``carried`` in its address; the derivation's
    ``derivation`` when given), the current one in bold."""
    lines = []
    for info in all_pages():
        title = "Home" if info is HOME else info.title
        query = urlencode(derivation if info is DERIVATION and derivation is not None
                          else carried)
        link = href(info.slug)
        link = link + ("&" if "=" in link else "") + query if query else link
        lines.append(f"- **{title}**" if info.slug == current else f"- [{title}]({link})")
    return "\n".join(lines)


def navigation(current: str, carried: dict[str, str] | None = None) -> pn.pane.Markdown:
    """The sidebar's links to every page, the current one in bold."""
    return pn.pane.Markdown(navigation_markdown(current, carried or {}), css_classes=["lab-nav"],
                            sizing_mode="stretch_width")


def follow_carried(nav: pn.pane.Markdown, current: str, content, page: pmui.Page) -> None:
    """Keep ``nav``'s links carrying the values in force: rewritten when the experiment's
    model, GPU or precision (for the derivation's link any decode input: tp, batch, …) or the
    page's theme changes (a link opened in a new tab keeps them too)."""
    def update(*_events) -> None:
        nav.object = navigation_markdown(current, carried_values(content, page.dark_theme),
                                         derivation_values(content, page.dark_theme))

    exp = getattr(content, "experiment", None)
    if exp is not None:
        names = [n for n in DERIVATION_CARRIED if n in exp.param]
        if names:
            exp.param.watch(update, names)
    page.param.watch(update, "dark_theme")
    update()


def build_page(slug: str | None = None) -> pmui.Page:
    """The template holding the navigation and the requested page."""
    slug = page_slug(requested_page() if slug is None else slug)
    title = next((p.title for p in all_pages() if p.slug == slug), None)
    state = BrowserState()
    content, nav = page_content(slug), navigation(slug)
    page = pmui.Page(
        title=f"Inference Lab · {title}" if title and slug != HOME.slug else "Inference Lab",
        sidebar=[nav, state, OneHistoryEntry()], main=[content], theme_toggle=True,
        theme_config=THEME, sidebar_width=290, busy_indicator=None,
        stylesheets=[HEADER_CSS, MAIN_CSS])
    page.config.raw_css = [*page.config.raw_css, LOADER_CSS]
    follow_browser(page, state)
    follow_carried(nav, slug, content, page)
    # The page's busy flag follows ``pn.state.busy``; every toggle re-walks the page's whole
    # Bokeh model (~30 ms each, twice per widget change). Updates here take a few ms, so the
    # indicator is dropped and the flag unlinked (setting it replaces the reference).
    detach_busy(page)
    return page
