"""The served lab, checked from outside (issue 33's "done when"): no URL makes the server open
a file it names, a 5,000-digit value renders the page with one sentence and no traceback, and
an address too long for the server gets HTTP 414 with a sentence, not a dropped connection."""

from __future__ import annotations

import os
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlencode

import pytest
from lab_browser import ARTIFACTS, app_errors
from playwright.sync_api import expect

from apps.ui.views.pages import all_pages

FILE_KEYS = ("model", "gpu", "trace", "measurements", "dataset", "grid", "config", "path", "file")
"""Query keys a hostile link may name a server file under."""

LONG_DIGITS = "9" * 5000

DAY_S = 86_400


def probe_files(folder: Path) -> list[Path]:
    """Readable files whose access time is two days old: with ``relatime`` (or ``strictatime``)
    any read moves it to now."""
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for name, text in (("config.json", '{"hidden_size": 4096, "num_hidden_layers": 2}'),
                       ("gpu.toml", 'name = "probe"\n'), ("trace.csv", "arrival_s,prompt\n0,1\n"),
                       ("dataset.zarr", "not a dataset")):
        path = folder / name
        path.write_text(text)
        past = time.time() - 2 * DAY_S
        os.utime(path, (past, past - DAY_S))
        files.append(path)
    return files


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=120) as answer:
            return answer.status, answer.read().decode(errors="replace")
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(errors="replace")


def test_no_page_opens_a_file_its_url_names(lab_server, tmp_path):
    url, _proc = lab_server
    absolute = probe_files(tmp_path / "probe")
    relative_folder = ARTIFACTS / "url-probe"
    relative = probe_files(relative_folder)  # named relative to the server's folder
    atimes = {p: p.stat().st_atime for p in absolute + relative}
    names = [str(p) for p in absolute] + [p.relative_to(ARTIFACTS.parent).as_posix()
                                          for p in relative]
    for page in all_pages():
        for shift in range(len(names)):  # every file under every key, over the requests
            query = urlencode({"view": page.slug, **{key: names[(i + shift) % len(names)]
                                                     for i, key in enumerate(FILE_KEYS)}})
            status, html = get(f"{url}/?{query}")
            assert status == 200, (page.slug, status)
            assert not [name for name in names if name in html]
            if page.slug not in ("derivation", "decode"):
                break  # one request per other page; the two that once read a path get all
    assert {p: p.stat().st_atime for p in atimes} == atimes


def test_5000_digit_values_render_every_page_without_a_traceback(lab_server, lab_log):
    url, _proc = lab_server
    for page in all_pages():
        query = urlencode({"view": page.slug, "batch": LONG_DIGITS, "context": LONG_DIGITS,
                           "theme": LONG_DIGITS})
        status, _html = get(f"{url}/?{query}")
        assert status == 200, page.slug
    assert app_errors(lab_log()) == []  # closed-websocket noise of other tests aside


def test_an_address_too_long_for_the_server_gets_a_sentence(lab_url):
    for digits in (70_000, 600_000):  # past Tornado's 64 KiB header limit, and far past it
        status, text = get(f"{lab_url}/?view=decode&batch={'9' * digits}")
        assert status == 414
        assert text.startswith("This address is too long for the lab")


@pytest.mark.parametrize("slug", ["derivation", "decode"])
def test_the_5000_digit_sentence_is_shown_in_the_browser(lab_url, lab_page, console_errors,
                                                          slug):
    lab_page.goto(f"{lab_url}/?view={slug}&batch={LONG_DIGITS}")
    expect(lab_page.locator(".lab-input-problem")).to_contain_text(
        "The link's batch= value is 5,000 characters long")
    # The URL then shows the value in force (the server rewrites what the browser reported).
    lab_page.wait_for_function("() => !window.location.search.includes('9'.repeat(300))")
    assert console_errors == []
