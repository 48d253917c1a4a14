"""Untrusted input on the pages: URL values, uploads, downloads.

Nothing from a URL or an upload is read as markup (the ``view`` page name, upload file names,
messages quoting a file's cells); error texts name no server folder; an upload is capped while
it arrives; the whole-dataset download is built once, compressed, one at a time per process.
Document-level tests first, then browser tests (headless Chromium, ``CI=true``).
"""

from __future__ import annotations

import asyncio
import re
import threading
from urllib.parse import quote

import numpy as np
import panel as pn
import pytest
import xarray as xr
from lab_browser import (
    AUTH_PASSWORD,
    IDLE,
    NAVIGATION_TIMEOUT_MS,
    open_page,
)
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import expect

from apps.ui.parts import downloads
from apps.ui.parts.cards import CardsView
from apps.ui.parts.downloads import DOWNLOAD_LOCK, WholeDatasetDownload, busy_sentence
from apps.ui.parts.prediction import PredictionView
from apps.ui.parts.trace_upload import MAX_UPLOAD_BYTES, UPLOAD_CHUNK_BYTES, TraceUpload
from apps.ui.views.app import page_content
from apps.ui.views.pages import page_slug
from cli.main import build_parser
from cli.serve_cmd import WEBSOCKET_MAX_MESSAGE_BYTES, panel_command
from lab.experiments.goodput_contract import GoodputContract

PAYLOADS = ["<img src=x onerror=alert(document.domain)>", "<script>alert(1)</script>",
            "<svg onload=alert(1)>", "[x](javascript:alert(1))"]
GOOD = b"request_id,arrival_s,prompt_tokens,output_tokens\n1,0.0,100,5\n2,0.1,200,3\n"
BAD = b"request_id,arrival_s,prompt_tokens\n1,0.0,100\n"
EVIL_CELL = (b"request_id,arrival_s,prompt_tokens,output_tokens\n"
             b"1,<img src=x onerror=alert(1)>,100,5\n")


def upload(widget: TraceUpload, name: str, data: bytes) -> None:
    widget._file.filename = name
    widget._file.value = data


# -- item 1: nothing from the URL or an upload is read as markup ----------------------------
@pytest.mark.parametrize("payload", PAYLOADS)
def test_unknown_view_is_one_escaped_sentence(payload):
    pane = page_content(payload)
    html = pane.object
    assert "No page called" in html
    assert "<img" not in html and "<script" not in html and "<svg" not in html
    assert isinstance(pane, pn.pane.HTML) and 'href="javascript' not in html


def test_a_page_name_in_capitals_or_with_spaces_opens_its_page():
    assert [page_slug(s) for s in ("DECODE", " Decode ", "batch", "BATCH", "Grid", "SOURCES")] == [
        "decode", "decode", "decode", "decode", "grid", "sources"]
    assert page_slug("") == "" and page_slug("Decoder") == "Decoder"  # home; no such page
    assert "No page called 'Decoder'" in page_content(page_slug("Decoder")).object


def test_upload_file_name_is_shown_escaped_and_not_used_as_a_path():
    experiment = GoodputContract()
    widget = TraceUpload(experiment=experiment)
    upload(widget, "<img src=x onerror=alert(1)>.csv", GOOD)
    assert experiment.error is None and experiment.result["requests"] == 2
    assert "<img" not in widget._status.object and "&lt;img" in widget._status.object
    assert "<" not in experiment.trace and "img_src_x" in experiment.trace
    upload(widget, "..", GOOD + b"3,0.2,50,2\n")  # a name that is a folder on the server
    assert experiment.error is None and experiment.result["requests"] == 3
    assert experiment.trace.endswith("/trace.csv")


def test_errors_quoting_an_upload_name_no_server_folder():
    experiment = GoodputContract()
    widget = TraceUpload(experiment=experiment)
    upload(widget, "broken.csv", BAD)
    cards = CardsView(experiment=experiment)._html(None)
    assert "Trace file broken.csv lacks the column output_tokens" in cards
    assert "inference-lab-trace-" not in cards and "/tmp" not in cards


def test_prediction_quotes_a_file_cell_as_text():
    experiment = GoodputContract()
    widget = TraceUpload(experiment=experiment)
    upload(widget, "evil.csv", EVIL_CELL)
    assert "<img" in experiment.error  # the loader quotes the cell
    view = PredictionView(experiment=experiment)
    text = view._answer_text(True, None, None)
    assert "<img" not in text and "inference-lab-trace-" not in text
    assert "yours differ (" in text  # the question's trace is the shipped one: worked there


# -- item 3: uploads capped before they are held ---------------------------------------------
def chunk(name: str, index: int, total: int, size: int = UPLOAD_CHUNK_BYTES) -> dict:
    return {"type": "status", "status": "upload_event", "chunk": index, "data": b"x" * size,
            "name": name, "total_chunks": total, "mime_type": "text/csv"}


def held_bytes(widget: TraceUpload) -> int:
    files = widget._file._file_buffer.values()
    return sum(len(c) for f in files for c in f["chunks"].values())


def test_browser_refuses_large_files_and_chunks_fit_a_websocket_message():
    widget = TraceUpload(experiment=GoodputContract())
    assert widget._file.max_file_size == MAX_UPLOAD_BYTES
    assert widget._file.chunk_size == UPLOAD_CHUNK_BYTES <= WEBSOCKET_MAX_MESSAGE_BYTES // 2
    cmd = panel_command(build_parser().parse_args(["serve"]))
    assert cmd[cmd.index("--websocket-max-message-size") + 1] == str(WEBSOCKET_MAX_MESSAGE_BYTES)


def test_upload_declaring_more_than_the_limit_is_dropped_at_its_first_chunk():
    experiment = GoodputContract()
    widget = TraceUpload(experiment=experiment)
    widget._file._handle_msg({"type": "status", "status": "initializing"})
    widget._file._handle_msg(chunk("big.csv", 1, 200))  # 200 MiB declared
    assert held_bytes(widget) == 0
    assert "big.csv is larger than 20 MiB" in widget._status.object
    widget._file._handle_msg({"type": "status", "status": "finished"})
    assert widget._file.value is None and experiment.error is None


def test_upload_sending_more_than_it_declared_is_cut_off():
    widget = TraceUpload(experiment=GoodputContract())
    widget._file._handle_msg({"type": "status", "status": "initializing"})
    limit_chunks = MAX_UPLOAD_BYTES // UPLOAD_CHUNK_BYTES
    for index in range(1, limit_chunks + 5):  # claims 1000 chunks... of which it sends many
        widget._file._handle_msg(chunk("liar.csv", index, limit_chunks))
        assert held_bytes(widget) <= MAX_UPLOAD_BYTES
    assert held_bytes(widget) == 0 and "larger than 20 MiB" in widget._status.object


def test_browser_side_upload_error_is_a_sentence_not_a_traceback():
    widget = TraceUpload(experiment=GoodputContract())
    widget._file._handle_msg({"type": "status", "status": "error",
                              "error": 'File "<b>x</b>.csv" exceeds maximum file size'})
    assert "The browser did not send the file" in widget._status.object
    assert "<b>" not in widget._status.object


def test_a_file_the_browser_found_too_large_is_named_in_the_labs_units():
    """The browser's own words read "(28.25 MB) exceeds maximum file size of 20 MB" beside the
    lab's "20 MiB"; its MB are MiB."""
    widget = TraceUpload(experiment=GoodputContract())
    widget._file._handle_msg({"type": "status", "status": "error", "error":
                              'File "<img src=x onerror=alert(1)>.csv" (28.25 MB) exceeds maximum '
                              'file size of 20 MB'})
    assert ("The browser did not send &lt;img src=x onerror=alert(1)&gt;.csv (28.25 MiB); "
            "traces up to 20 MiB are accepted.") in widget._status.object


def test_upload_within_the_limit_in_chunks_is_served():
    experiment = GoodputContract()
    widget = TraceUpload(experiment=experiment)
    file = widget._file
    file._handle_msg({"type": "status", "status": "initializing"})
    file._handle_msg({**chunk("mine.csv", 1, 1), "data": GOOD})
    file._send_msg = lambda _msg: None  # no browser to tell
    file._handle_msg({"type": "status", "status": "finished"})
    assert experiment.result["requests"] == 2 and "mine.csv" in widget._status.object


# -- item 4: the whole-dataset download -----------------------------------------------------
def small_grid() -> xr.Dataset:
    rng = np.random.default_rng(0)
    data = rng.random((3, 4))
    data[0, 0] = np.nan
    ds = xr.Dataset({"step_time_s": (("batch", "context"), data,
                                     {"units": "s", "long_name": "Step time"}),
                     "fits": (("batch", "context"), data > 0.5, {"units": "1"})},
                    coords={"batch": [1, 8, 64], "context": [128, 256, 512, 1024],
                            "model": "llama-3.1-8b"},
                    attrs={"experiment": "decode", "complete": True})
    return ds.chunk({"batch": 1})


def test_whole_dataset_download_is_compressed_and_equal_to_the_data(tmp_path):
    ds = small_grid()
    data = downloads.compressed_netcdf(ds)
    path = tmp_path / "grid.nc"
    path.write_bytes(data)
    with xr.open_dataset(path, engine=downloads.netcdf_engine()) as back:
        xr.testing.assert_equal(back.load(), ds.load())
        assert back["step_time_s"].attrs["units"] == "s" and back.attrs["complete"] == 1
        assert back["step_time_s"].encoding.get("zlib") or back["step_time_s"].encoding.get(
            "compression") == "gzip"


def run_coroutine(coroutine_function) -> None:
    """Run an ``async def`` to its end on a thread of its own (the browser tests keep a loop
    running in the test thread)."""
    thread = threading.Thread(target=asyncio.run, args=(coroutine_function(),))
    thread.start()
    thread.join()


def test_second_concurrent_download_gets_a_sentence():
    view = WholeDatasetDownload(dataset=small_grid(), filename="grid.nc")
    assert DOWNLOAD_LOCK.acquire(blocking=False)
    try:
        run_coroutine(view.button._async_sync_data)
    finally:
        DOWNLOAD_LOCK.release()
    assert not view.button.data and view.message.visible
    assert "Another whole-dataset download is being prepared" in view.message.object
    assert busy_sentence().startswith("Another")


def test_download_is_built_once_per_process(monkeypatch):
    ds = small_grid()
    built = []
    real = downloads.compressed_netcdf
    monkeypatch.setattr(downloads, "compressed_netcdf", lambda d: built.append(1) or real(d))
    view = WholeDatasetDownload(dataset=ds, filename="grid.nc")
    sent = []  # the browser saves the file each time ``data`` changes to a file
    view.button.param.watch(lambda event: sent.append(event.new) if event.new else None, "data")
    for _ in range(2):
        run_coroutine(view.button._async_sync_data)
        assert view.button.data.startswith("data:") and not view.message.visible
    assert built == [1] and not DOWNLOAD_LOCK.locked()
    assert len(sent) == 2 and sent[0] == sent[1]


# -- browser ---------------------------------------------------------------------------------
def watch_dialogs(page) -> list[str]:
    """Every dialog (alert, confirm, prompt) the page opens; each is dismissed."""
    dialogs: list[str] = []

    def seen(dialog):
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", seen)
    return dialogs


INJECTED = """() => {
  const hits = [];
  const walk = (root) => {
    for (const el of root.querySelectorAll('*')) {
      const handlers = Array.from(el.attributes).filter(a => a.name.startsWith('on'));
      if (handlers.some(a => a.value.includes('alert')) ||
          (el.tagName === 'SCRIPT' && el.textContent.includes('alert(')))
        hits.push(el.outerHTML);
      if (el.shadowRoot) walk(el.shadowRoot);
    }
  };
  walk(document);
  return hits;
}"""
"""Elements in the page (shadow roots included) carrying an injected handler or script."""


def assert_no_injection(page, dialogs: list[str]) -> None:
    page.wait_for_function(IDLE, timeout=30_000)
    expect(page.get_by_text("No page called")).to_be_visible(timeout=30_000)
    assert dialogs == []
    assert page.evaluate(INJECTED) == []
    expect(page.locator(".lab-unknown-page")).to_contain_text("No page called")


@pytest.mark.parametrize("payload", PAYLOADS[:3])
def test_view_payload_does_not_run_in_the_page(lab_url, lab_page, payload):
    dialogs = watch_dialogs(lab_page)
    lab_page.goto(f"{lab_url}/inference_lab?view={quote(payload)}")
    assert_no_injection(lab_page, dialogs)
    expect(lab_page.locator(".lab-unknown-page")).to_contain_text(payload[:20])


def test_view_payload_does_not_run_after_the_login_redirect(auth_lab_url, lab_page):
    dialogs = watch_dialogs(lab_page)
    lab_page.goto(f"{auth_lab_url}/inference_lab?view={quote(PAYLOADS[0])}")
    lab_page.locator("input[name=username]").fill("reader")
    lab_page.locator("input[name=password]").fill(AUTH_PASSWORD)
    lab_page.locator("input[name=password]").press("Enter")
    lab_page.wait_for_url("**/inference_lab?*", timeout=30_000)
    assert_no_injection(lab_page, dialogs)


def test_bad_url_value_is_reported_on_the_page(lab_url, lab_page, console_errors):
    lab_page.goto(f"{lab_url}/inference_lab?view=batch&batch=abc&precision=zzz")
    problem = lab_page.locator(".lab-input-problem")
    expect(problem).to_contain_text("The link's batch=abc is not a whole number from 1 to",
                                    timeout=30_000)
    expect(problem).to_contain_text("The link's precision=zzz is not one of bf16, fp8")
    expect(lab_page.locator(".lab-card .value").first).to_have_text("7.04 ms")
    assert console_errors == []


def test_number_typed_out_of_range_is_reported_by_the_inputs(lab_url, lab_page, console_errors):
    lab_page.goto(f"{lab_url}/inference_lab?view=batch")
    expect(lab_page.locator(".lab-card .value").first).to_have_text("7.04 ms", timeout=30_000)
    box = lab_page.locator(".lab-input-budget input").first
    box.click()
    box.press("Control+A")
    box.press_sequentially("1.5")
    box.press("Enter")
    box.press("Tab")
    expect(lab_page.locator(".lab-input-problem")).to_contain_text(
        "Memory budget (share of capacity) must be a number from 0.01 to 1", timeout=30_000)
    expect(lab_page.locator(".lab-card .value").first).to_have_text("7.04 ms")
    assert console_errors == []


def test_upload_named_like_markup_is_shown_as_text(lab_url, lab_page, console_errors):
    dialogs = watch_dialogs(lab_page)
    lab_page.goto(f"{lab_url}/inference_lab?view=goodput")
    expect(lab_page.locator(".lab-card .value").first).to_contain_text("req/s", timeout=30_000)
    name = "<img src=x onerror=alert(1)>.csv"
    lab_page.set_input_files("input[type=file]", files=[
        {"name": name, "mimeType": "text/csv", "buffer": GOOD}])
    expect(lab_page.get_by_text("2 of 2 meet the contract")).to_be_visible(timeout=30_000)
    expect(lab_page.get_by_text(name, exact=True)).to_be_visible()
    assert dialogs == [] and lab_page.locator("img[src='x']").count() == 0
    assert console_errors == []


def test_upload_over_the_limit_is_refused_before_it_is_sent(lab_url, lab_page, tmp_path):
    open_page(lab_page, f"{lab_url}/inference_lab?view=goodput")
    values = lab_page.locator(".lab-card .value")
    expect(values.first).to_contain_text("req/s", timeout=30_000)
    # Read the shipped trace's cards once every card shows a value (under load the page can
    # still be filling them in when the first one shows).
    expect(values).to_have_text([re.compile(r"\S")] * values.count(), timeout=30_000)
    shipped = values.all_inner_texts()
    big = tmp_path / "big.csv"  # a path: the local browser reads it itself (no 25 MB over the driver)
    big.write_bytes(b"request_id,arrival_s,prompt_tokens,output_tokens\n" + b"1,0.0,100,5\n" * (2 * 2**20))
    assert big.stat().st_size > MAX_UPLOAD_BYTES
    lab_page.set_input_files("input[type=file]", files=[big])
    expect(lab_page.locator(".lab-upload-problem")).to_contain_text(re.compile(
        r"The browser did not send big\.csv \(2\d(\.\d+)? MiB\); traces up to 20 MiB are accepted"),
        timeout=30_000)
    expect(values).to_have_text(shipped)  # the refused file changed nothing


@pytest.mark.parametrize("address", ["http://example.com/", "http://192.0.2.1/"])
def test_the_test_browser_reaches_nothing_beyond_loopback(lab_url, lab_page, address):
    """Every request of the browser tests that would leave loopback fails in Chromium itself
    (``lab_browser.OFF_LOOPBACK_PROXY``), by name or by address, a page's own fetch too; the
    lab on loopback answers."""
    failed: list[str] = []
    lab_page.on("requestfailed", lambda request: failed.append(request.failure or ""))
    lab_page.goto(f"{lab_url}/liveness", timeout=NAVIGATION_TIMEOUT_MS)
    fetched = lab_page.evaluate("a => fetch(a, {mode: 'no-cors'}).then(() => 'reached', "
                                "() => 'refused')", address)
    assert fetched == "refused"
    with pytest.raises(PlaywrightError, match="ERR_PROXY_CONNECTION_FAILED"):
        lab_page.goto(address, timeout=NAVIGATION_TIMEOUT_MS)
    assert failed and all("ERR_PROXY_CONNECTION_FAILED" in f for f in failed), failed


def test_an_unknown_view_is_titled_once():
    """`?view=<b>x</b>` was titled "Inference Lab · Inference Lab" (the home page's title as
    the unknown page's)."""
    from apps.ui.views.app import build_page

    assert build_page("<b>x</b>").title == "Inference Lab"
    assert build_page("memory").title.startswith("Inference Lab · ")
