"""Fixtures for the app tests: a served lab, Debian's Chromium, loopback-only pages."""

from __future__ import annotations

import sys

import panel as pn
import pytest
from bokeh.document import Document
from lab_browser import (
    AUTH_PASSWORD,
    CHROMIUM,
    CHROMIUM_ARGS,
    EXPECT_TIMEOUT_MS,
    NAVIGATION_TIMEOUT_MS,
    app_errors,
    free_port,
    require_chromium,
    server_log,
    start_server,
    stop_server,
)
from panel.io.state import set_curdoc
from playwright.sync_api import expect

expect.set_options(timeout=EXPECT_TIMEOUT_MS)  # Playwright's default is 5 s


@pytest.fixture
def document():
    """A fresh Bokeh document as the current one (a page built in-process, no server); its
    URL location is forgotten afterwards."""
    doc = Document()
    with set_curdoc(doc):
        yield doc
    pn.state._locations.pop(doc, None)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    """Debian's Chromium, headless, with no network chatter of its own."""
    require_chromium()
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": CHROMIUM_ARGS}


@pytest.fixture(scope="session")
def lab_server():
    """``inference-lab serve`` (warm-up included) on a free port, once per test session;
    yields ``(base URL, server process)``. The server's log must hold no app error."""
    require_chromium()
    port = free_port()
    cmd = [sys.executable, "-m", "lab", "serve", "--port", str(port), "--address", "127.0.0.1"]
    proc = start_server(cmd, port)
    yield f"http://127.0.0.1:{port}", proc
    err = stop_server(proc)
    assert app_errors(err) == [], err


@pytest.fixture(scope="session")
def auth_lab_url():
    """Base URL of ``inference-lab serve --basic-auth`` (one server for every login test)."""
    port = free_port()
    cmd = [sys.executable, "-m", "lab", "serve", "--port", str(port), "--address", "127.0.0.1",
           "--basic-auth", AUTH_PASSWORD]
    proc = start_server(cmd, port, path="/login")
    yield f"http://127.0.0.1:{port}"
    err = stop_server(proc)
    assert app_errors(err) == [], err


@pytest.fixture(scope="session")
def lab_url(lab_server):
    """Base URL of the served lab (``/`` = landing page)."""
    return lab_server[0]


@pytest.fixture
def lab_log(lab_server):
    """What the served lab has logged so far."""
    return lambda: server_log(lab_server[1])


@pytest.fixture
def console_errors():
    """Console errors and page errors collected by :func:`lab_page`."""
    return []


@pytest.fixture(scope="session")
def lab_tab(browser, browser_context_args):
    """One browser tab per worker, reused by every :func:`lab_page`: a fresh context and tab
    per test cost Chromium about a second of CPU more per test (a new renderer process that
    compiles the lab's ~3 MB of scripts again) on a 2-core machine. Holds the tab's context
    and ``"page"``, which :func:`lab_page` replaces when it could not clean a tab up."""
    context = browser.new_context(**browser_context_args)
    holder = {"context": context, "page": None}
    yield holder
    context.close()


LOOPBACK = ("127.0.0.1", "localhost")
"""Hosts the lab's test servers answer on (a visited one has its storage cleared)."""


@pytest.fixture
def lab_page(lab_tab, console_errors):
    """A page that reaches only loopback (as every page of the browser: ``CHROMIUM_ARGS``)
    and records console errors.

    The tab is the worker's one tab (:func:`lab_tab`), handed over as if new: on
    ``about:blank``, with its viewport and timeouts set again. Afterwards it is sent back to
    ``about:blank`` and everything the test left is removed: the listeners it added (``on``,
    ``once``), its cookies, and each visited origin's storage (the theme the
    menu's colour scheme keeps in ``localStorage``). A tab that cannot be cleaned up is closed
    and the next test gets a new one."""
    page = lab_tab["page"]
    if page is None or page.is_closed():
        page = lab_tab["page"] = lab_tab["context"].new_page()
    origins: set[str] = set()

    def visited(request):
        parts = request.url.split("/")
        if parts[0] in ("http:", "https:") and parts[2].split(":")[0] in LOOPBACK:
            origins.add("/".join(parts[:3]))

    added: list[tuple[str, object]] = []

    def on(event, handler):
        added.append((event, handler))
        type(page).on(page, event, handler)

    def once(event, handler):
        added.append((event, handler))
        type(page).once(page, event, handler)

    page.on, page.once = on, once  # record what the test adds, to remove it afterwards
    page.on("request", visited)  # requests leaving loopback fail in the browser (CHROMIUM_ARGS)
    page.on("console", lambda msg: console_errors.append(msg.text)
            if msg.type == "error" else None)
    page.on("pageerror", lambda exc: console_errors.append(str(exc)))
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.set_default_timeout(EXPECT_TIMEOUT_MS)
    page.set_default_navigation_timeout(NAVIGATION_TIMEOUT_MS)
    yield page
    try:
        page.goto("about:blank", timeout=NAVIGATION_TIMEOUT_MS)
        del page.on, page.once
        for event, handler in added:
            page.remove_listener(event, handler)
        page.context.clear_cookies()
        cdp = page.context.new_cdp_session(page)
        for origin in origins:
            cdp.send("Storage.clearDataForOrigin", {"origin": origin, "storageTypes": "all"})
        cdp.detach()
    except Exception:  # a tab left hanging or closed: the next test gets a new one
        lab_tab["page"] = None
        if not page.is_closed():
            page.close()
