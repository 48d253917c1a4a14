"""Fixtures for the app tests: a served lab, Debian's Chromium, loopback-only pages."""

from __future__ import annotations

import glob
import sys

import pytest
from lab_browser import (
    CHROMIUM,
    CHROMIUM_ARGS,
    REPO,
    app_errors,
    free_port,
    require_chromium,
    start_server,
    stop_server,
)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    """Debian's Chromium, headless, with no network chatter of its own."""
    require_chromium()
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": CHROMIUM_ARGS}


@pytest.fixture(scope="session")
def lab_url():
    """``panel serve apps/*.py`` on a free port; yields the base URL (``/`` = landing)."""
    require_chromium()
    port = free_port()
    files = sorted(glob.glob(str(REPO / "apps" / "*.py")))
    cmd = [sys.executable, "-m", "panel", "serve", *files, "--port", str(port),
           "--address", "127.0.0.1", "--allow-websocket-origin", f"127.0.0.1:{port}"]
    proc = start_server(cmd, port)
    yield f"http://127.0.0.1:{port}"
    err = stop_server(proc)
    assert app_errors(err) == [], err


@pytest.fixture
def console_errors():
    """Console errors and page errors collected by :func:`lab_page`."""
    return []


@pytest.fixture
def lab_page(page, console_errors):
    """A page that reaches only loopback and records console errors."""

    def route(route):
        host = route.request.url.split("/")[2].split(":")[0]
        if host in ("127.0.0.1", "localhost"):
            route.continue_()
        else:
            route.abort()

    page.route("**/*", route)
    page.on("console", lambda msg: console_errors.append(msg.text)
            if msg.type == "error" else None)
    page.on("pageerror", lambda exc: console_errors.append(str(exc)))
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.set_default_timeout(20_000)
    yield page


