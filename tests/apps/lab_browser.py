"""Helpers of the browser tests: servers on free ports, Chromium checks, screenshots."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = REPO / "test-artifacts"
OFF_LOOPBACK_PROXY = "http://127.0.0.1:9"
"""Where Chromium sends every request that would leave loopback: a closed port, so each such
request fails (``net::ERR_PROXY_CONNECTION_FAILED``) before any DNS lookup; loopback addresses
bypass a proxy in Chromium by default. Done in the browser, not with Playwright's ``route``:
routing turns the HTTP cache off, and every page load then fetched and compiled the lab's
scripts again (about 15 % more Chromium CPU per load)."""

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run",
                 "--disable-quic", f"--proxy-server={OFF_LOOPBACK_PROXY}"]
"""Debian's Chromium, headless, quiet, and reaching nothing but loopback (every context)."""


START_TIMEOUT_S = 180.0
"""Longest wait for a test server to answer its first request, s."""

EXPECT_TIMEOUT_MS = 30_000
"""Longest wait for a condition on a page (an element shown, a value updated), ms: a few
seconds normally; tens of seconds on a 2-core machine busy with other work."""

NAVIGATION_TIMEOUT_MS = 60_000
"""Longest wait for a page to load and its documents to render, ms."""


AUTH_PASSWORD = "lab-secret-123"
"""The password of the ``--basic-auth`` server the login tests share."""


def free_port() -> int:
    """A free TCP port on loopback."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_http(url: str, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    """Poll ``url`` until it answers (the server process must stay alive)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}: {server_log(proc)}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(f"{url} did not answer within {timeout} s")


def server_log(proc: subprocess.Popen) -> str:
    """What the server wrote to stderr so far."""
    log = proc.log  # type: ignore[attr-defined]
    log.flush()
    log.seek(0)
    return log.read().decode(errors="replace")


def start_server(cmd: list[str], port: int, path: str = "/", cwd: Path = REPO,
                 env: dict[str, str] | None = None) -> subprocess.Popen:
    """Start a server process (stderr to a temporary file, never a pipe that can fill up)
    in ``cwd`` (with ``env``, default this process's environment) and wait until ``path``
    answers (up to :data:`START_TIMEOUT_S`: the warm-up builds three pages, which takes a
    minute on a loaded 2-core machine)."""
    log = tempfile.TemporaryFile()  # noqa: SIM115 (closed by stop_server)
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=log)
    proc.log = log  # type: ignore[attr-defined]
    try:
        wait_for_http(f"http://127.0.0.1:{port}{path}", proc, START_TIMEOUT_S)
    except BaseException:
        proc.kill()
        proc.wait()
        log.close()
        raise
    return proc


def stop_server(proc: subprocess.Popen) -> str:
    """Stop a server started by :func:`start_server`; return its stderr."""
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    text = server_log(proc)
    proc.log.close()  # type: ignore[attr-defined]
    return text


BENIGN = ("StreamClosedError", "WebSocketClosedError", "assert self._session is not None")
"""Tornado's report of a browser tab closing mid-write, and Bokeh's assertion when a websocket
closes before the server created its session (``bokeh/server/views/ws.py`` ``on_close``: a
page left while it was still loading; seen once in a fresh-clone run at the end of stop 50):
not an app error."""


def app_errors(log: str) -> list[str]:
    """Tracebacks in a server log other than closed-websocket noise."""
    blocks = log.split("Task exception was never retrieved")
    return [b for b in blocks if "Traceback" in b and not any(n in b for n in BENIGN)]


def require_chromium() -> None:
    """Skip without Chromium locally; fail on CI, where a missing browser is a broken setup."""
    if not Path(CHROMIUM).exists() and not shutil.which("chromium"):
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} is missing on CI; install Debian's chromium package.")
        pytest.skip(f"{CHROMIUM} is not installed")



IDLE = ("() => window.Bokeh && Bokeh.documents.length > 0 && "
        "Bokeh.documents.every(d => d.is_idle) && !document.querySelector('.pn-loading') && "
        "(document.getElementById('loader') || {style: {}}).style.display !== 'flex' && "
        "Bokeh.documents.every(d => [...d._all_models.values()].every(m => !(m.visible && "
        "Array.isArray(m.css_classes) && m.css_classes.includes('lab-busy-note'))))")
"""Every Bokeh document has rendered, no loading overlay (Panel's or the template's spinner,
which the template hides on a 100 ms timer) is shown, and no update is running (the page's
busy note, :mod:`apps.ui.shell.busy`, is off)."""


def wait_idle(page) -> None:
    """Wait until the page's Bokeh documents have rendered and no loading overlay shows."""
    page.wait_for_function(IDLE, timeout=NAVIGATION_TIMEOUT_MS)


def open_page(page, url: str) -> None:
    """Load ``url`` and wait until its documents have rendered (:func:`wait_idle`), so the
    widgets are connected before a test types or clicks."""
    page.goto(url, timeout=NAVIGATION_TIMEOUT_MS)
    wait_idle(page)


def choose(page, name: str, option: str) -> None:
    """Pick ``option`` (a catalog id, shown by its name or as itself) in the dropdown of
    input ``name``."""
    from lab.catalog import gpu_catalog, model_catalog

    shown = {**{k: v.name for k, v in model_catalog().items()},
             **{k: v.name for k, v in gpu_catalog().items()}}.get(option, option)
    page.locator(f".lab-input-{name} [role=combobox]").first.click()
    page.locator("li").filter(has_text=re.compile(
        rf"^({re.escape(shown)}|{re.escape(option)})$")).first.click()
    wait_idle(page)


def set_number(page, name: str, value: int) -> None:
    """Type ``value`` into the number box of input ``name`` and commit it with Enter.

    The box is emptied first and checked empty, and the typed text is checked before Enter:
    typing into a box whose old text was not selected gives e.g. "816" for "16". React
    number boxes ignore a bare ``fill`` of the new value, so it is typed key by key.
    """
    from playwright.sync_api import expect

    box = page.locator(f".lab-input-{name} input").first
    expect(box).to_be_editable()
    box.click()
    box.press("Control+A")
    box.press("Backspace")
    expect(box).to_have_value("")
    box.press_sequentially(str(value))
    expect(box).to_have_value(str(value))
    box.press("Enter")
    box.press("Tab")
    wait_idle(page)


def screenshot(page, name: str) -> Path:
    """Save a full-page screenshot under ``test-artifacts/``."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    wait_idle(page)
    page.screenshot(path=str(path), full_page=True)
    return path


OVERFLOW = """() => {
  const find = (root) => {
    const hit = root.querySelector('.main-content');
    if (hit) { return hit; }
    for (const el of root.querySelectorAll('*')) {
      const inner = el.shadowRoot && find(el.shadowRoot);
      if (inner) { return inner; }
    }
    return null;
  };
  const main = find(document);
  return {page: document.scrollingElement.scrollWidth, window: window.innerWidth,
          main: main ? main.scrollWidth : 0, mainBox: main ? main.clientWidth : 0};
}"""
"""How wide the document and the template's main area are against what shows. The main area
scrolls on its own, so content too wide for it (a table, an unbroken line of text) widens
it, not the document: both are measured."""


def overflow(page, name: str) -> dict | None:
    """None when the page fits its window's width; else the widths measured
    (:data:`OVERFLOW`), with a full-page screenshot ``name`` kept under ``test-artifacts/``."""
    got = page.evaluate(OVERFLOW)
    if got["page"] <= got["window"] and got["main"] <= got["mainBox"] + 1:
        return None
    screenshot(page, name)
    return got


REACH = """() => {
  const CONTROLS = 'input, button, textarea, select, a[href], [role="slider"], '
    + '[role="combobox"], [role="button"], [role="switch"]';
  const SKIP = '.MuiToolbar-root, .MuiDrawer-root, .bk-toolbar';
  const up = (el) => el.parentNode instanceof ShadowRoot ? el.parentNode.host : el.parentElement;
  const inside = (el, outer) => { for (let e = el; e; e = up(e)) if (e === outer) return true;
                                  return false; };
  const within = (el, sel) => { for (let e = el; e; e = up(e)) if (e.matches && e.matches(sel))
                                  return true;
                                return false; };
  const hitAt = (x, y) => {  // the element a tap at (x, y) reaches, through shadow roots
    let root = document, hit = null;
    for (;;) {
      const h = root.elementFromPoint(x, y);
      if (!h || h === hit) return hit;
      hit = h;
      if (!h.shadowRoot) return hit;
      root = h.shadowRoot;
    }
  };
  const name = (el) => {
    for (let e = el; e; e = up(e)) {
      const c = typeof e.className === 'string' && e.className.match(/lab-[\\w-]+/);
      if (c) return `${c[0]} ${el.tagName.toLowerCase()}`;
    }
    return (el.getAttribute('aria-label') || el.textContent || el.tagName).trim().slice(0, 40);
  };
  const controls = [];
  const walk = (root) => {
    for (const el of root.querySelectorAll('*')) {
      if (el.matches(CONTROLS)) controls.push(el);
      if (el.shadowRoot) walk(el.shadowRoot);
    }
  };
  walk(document);
  const box = (el) => el.getClientRects()[0] || el.getBoundingClientRect();  // a link's 1st line
  const targets = [];
  for (let el of controls) {
    if (el.type === 'hidden' || within(el, SKIP)) continue;
    let style = getComputedStyle(el);
    // A visually hidden input (a slider's range, 0-size or clipped) is tapped through its
    // drawn parent (the slider's thumb).
    if (el.type === 'range' || style.clip.startsWith('rect(0px') || box(el).width < 3) {
      el = up(el);
      style = getComputedStyle(el);
    }
    const r = box(el);
    if (r.width < 3 || r.height < 3 || style.visibility === 'hidden'
        || style.pointerEvents === 'none' || targets.includes(el)) continue;
    targets.push(el);
  }
  const missed = [];
  for (const el of targets) {
    el.scrollIntoView({block: 'center', inline: 'center', behavior: 'instant'});
    const r = box(el);
    const hit = hitAt(r.x + r.width / 2, r.y + r.height / 2);
    if (!inside(hit, el)) missed.push(`${name(el)} is covered by ${hit ? name(hit) : 'nothing'}`);
  }
  // The page's blocks: the leaves of Bokeh's view tree (a widget, a pane, a chart), each with
  // what it paints beyond its box (content that overflows it).
  const blocks = [];
  const visit = (view) => {
    if (!view || !view.el) return;
    const kids = view.child_views ? [...view.child_views] : [];
    const kind = view.model.constructor.__name__;
    if (kids.length && !/Figure|Plot/.test(kind)) { kids.forEach(visit); return; }
    if (within(view.el, SKIP)) return;
    const r = view.el.getBoundingClientRect();
    if (r.width < 2 || r.height < 2) return;
    const paints = /Figure|Plot/.test(kind) || getComputedStyle(view.el).overflowY !== 'visible'
      ? r.height : Math.max(r.height, view.el.scrollHeight);
    const label = (view.model.css_classes || []).join(' ') || kind;
    blocks.push({label, el: view.el, x0: r.left, x1: r.right, y0: r.top, y1: r.top + paints});
  }
  for (const view of Object.values(Bokeh.index)) visit(view);
  const overlaps = [];
  for (const [i, a] of blocks.entries()) for (const b of blocks.slice(i + 1)) {
    const w = Math.min(a.x1, b.x1) - Math.max(a.x0, b.x0);
    const h = Math.min(a.y1, b.y1) - Math.max(a.y0, b.y0);
    if (w > 2 && h > 2 && !a.el.contains(b.el) && !b.el.contains(a.el))
      overlaps.push(`${a.label} overlaps ${b.label} by ${Math.round(w)}×${Math.round(h)} px`);
  }
  return {controls: targets.length, blocks: blocks.length, problems: [...missed, ...overlaps]};
}"""
"""Whether every control of the page can be tapped, in one call: each input, button, select,
slider, switch and link outside the header and the menu is scrolled to the middle of the
window and ``elementFromPoint`` at its centre must be that control or inside it; and no two
of the page's blocks (the leaves of Bokeh's layout: a widget, a pane, a chart, with any content
that runs past their box) overlap. Returns the number of controls and blocks checked and a
sentence per problem."""


def unreachable(page) -> list[str]:
    """One sentence per control a tap at its centre does not reach and per pair of blocks
    drawn over each other (:data:`REACH`); checks that the page has controls or blocks at all."""
    got = page.evaluate(REACH)
    assert got["blocks"] > 0, got
    return got["problems"]


def loads_cleanly(page, view: str, fits: bool = True) -> None:
    """The page shown (at the viewport set) has the lab's bar, no traceback, no width beyond
    the window (issue 29 item 14 at desktop size; the phone size is ``test_phone_browser.py``'s;
    an overflowing page's screenshot is kept under test-artifacts/) unless not ``fits``, and a
    tap at the centre of each of its controls reaches that control with no two blocks
    overlapping (issue 37 item 2). A screenshot ``page-<view>`` is kept."""
    from playwright.sync_api import expect

    expect(page.locator(".MuiToolbar-root").first).to_contain_text("Inference Lab")
    expect(page.get_by_text("Traceback")).to_have_count(0)
    screenshot(page, f"page-{view or 'landing'}")
    if fits:
        assert overflow(page, f"overflow-{view or 'home'}-desktop") is None
    assert unreachable(page) == [], view


def page_url(base: str, view: str, **query) -> str:
    """The lab's address of page ``view`` (``""``: the landing page) with ``query`` values."""
    parts = [f"view={view}"] if view else []
    parts += [f"{k}={v}" for k, v in query.items()]
    return f"{base}/inference_lab?{'&'.join(parts)}" if parts else f"{base}/"


def type_in(box, text: str) -> None:
    """Select the box's text, type ``text`` key by key (checked shown) and press Enter; the
    cursor stays in the box, as a reader's does."""
    from playwright.sync_api import expect

    box.press("Control+A")
    box.press_sequentially(text)
    expect(box).to_have_value(text)
    box.press("Enter")
