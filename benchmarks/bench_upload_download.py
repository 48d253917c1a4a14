"""Server memory while a trace upload arrives and while the whole grid is downloaded.

Each case runs in its own Python process and prints the peak resident memory above the
process's baseline (RSS sampled every 2 ms from /proc), in MB (10^6 B):

- ``upload-panel``: 200 MB sent in the browser's chunk messages to Panel's ``FileInput`` (what
  the trace upload used before): every chunk is held, then joined.
- ``upload-capped``: the same messages to the lab's ``CappedFileInput`` (the browser would not
  send them at all: it refuses files over the limit; this is a client that ignores that).
- ``download-export``: the grid page's NetCDF download as before: the CLI exporter's file
  read into memory, then base64-encoded for the browser.
- ``download-first`` / ``download-again``: the lab's whole-dataset button, first download in
  the process (builds the compressed file) and a later one (sends the kept bytes).

- ``server-upload [ROOT]``: a real ``panel serve`` of the app (from the checkout ROOT,
  default this one) and headless Chromium uploading a 200 MB trace on the goodput page; the
  server's peak RSS (``VmHWM``) before and after the upload.
- ``server-download [ROOT]``: the same server, two whole-grid NetCDF downloads from the grid
  page; the server's peak RSS before and after each.

Run: ``python benchmarks/bench_upload_download.py`` (all in-process cases), ``... <case>``, or
``... server-upload|server-download [ROOT]`` (needs /usr/bin/chromium and Playwright).
"""

from __future__ import annotations

import asyncio
import io
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo, for tests.apps

UPLOAD_BYTES = 200 * 10**6
CASES = ("upload-panel", "upload-capped", "download-export", "download-first", "download-again")


def rss_bytes() -> int:
    """Resident memory of this process, bytes."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class PeakRSS:
    """Peak RSS above the value at entry, sampled every 2 ms on a thread."""

    def __enter__(self):
        self.base = self.peak = rss_bytes()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        self.start = time.perf_counter()
        return self

    def _sample(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, rss_bytes())
            time.sleep(0.002)

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.start
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss_bytes())

    @property
    def mb(self) -> float:
        return (self.peak - self.base) / 1e6


def send_upload(widget, chunk_bytes: int) -> None:
    """The messages a browser sends for a :data:`UPLOAD_BYTES` file in ``chunk_bytes`` pieces."""
    total = -(-UPLOAD_BYTES // chunk_bytes)
    widget._send_msg = lambda _msg: None
    widget._handle_msg({"type": "status", "status": "initializing"})
    for index in range(1, total + 1):
        size = min(chunk_bytes, UPLOAD_BYTES - (index - 1) * chunk_bytes)
        widget._handle_msg({"type": "status", "status": "upload_event", "chunk": index,
                            "data": bytes(size), "name": "big.csv", "total_chunks": total,
                            "mime_type": "text/csv"})
    widget._handle_msg({"type": "status", "status": "finished"})


def run(case: str) -> None:
    import panel_material_ui as pmui

    from apps.ui.parts import downloads
    from apps.ui.parts.trace_upload import UPLOAD_CHUNK_BYTES, CappedFileInput

    if case.startswith("upload"):
        widget = (pmui.FileInput(accept=".csv") if case == "upload-panel"
                  else CappedFileInput(accept=".csv"))
        chunk = widget.chunk_size if case == "upload-panel" else UPLOAD_CHUNK_BYTES
        with PeakRSS() as peak:
            send_upload(widget, chunk)
        held = len(widget.value or b"")
        print(f"{case:16s} peak +{peak.mb:7.1f} MB  {peak.seconds:5.2f} s  "
              f"held {held / 1e6:.1f} MB of a {UPLOAD_BYTES / 1e6:.0f} MB upload")
        return

    import lab

    ds = lab.open_dataset("decode").load()  # the grid page's default dataset, in memory
    if case == "download-export":
        button = pmui.FileDownload(callback=lambda: io.BytesIO(downloads.dataset_netcdf(ds)),
                                   filename="decode-grid.nc", embed=False)
        with PeakRSS() as peak:
            button._transfer()
    else:
        view = downloads.WholeDatasetDownload(dataset=ds, filename="decode-grid.nc")
        if case == "download-again":
            asyncio.run(view.button._async_sync_data())
            view.button.data = None
        with PeakRSS() as peak:
            asyncio.run(view.button._async_sync_data())
        button = view.button
    print(f"{case:16s} peak +{peak.mb:7.1f} MB  {peak.seconds:5.2f} s  "
          f"sent {len(button.data) / 1e6:.1f} MB (base64) for a {ds.nbytes / 1e6:.0f} MB dataset")


def status_kb(pid: int, field: str) -> int:
    """A ``/proc/<pid>/status`` memory field (``VmRSS``, ``VmHWM``), kB."""
    with open(f"/proc/{pid}/status") as status:
        line = next(x for x in status if x.startswith(field + ":"))
    return int(line.split()[1])


def server_upload(root: str, case: str = "server-upload") -> None:
    """Peak RSS of a served lab (checkout ``root``) across a 200 MB upload from Chromium, or
    (``server-download``) across two downloads of the whole grid from the grid page."""
    import socket
    import urllib.request

    from playwright.sync_api import sync_playwright

    from tests.apps.lab_browser import CHROMIUM, CHROMIUM_ARGS

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": root}
    proc = subprocess.Popen([sys.executable, "-m", "panel", "serve", "apps/inference_lab.py",
                             "--port", str(port), "--address", "127.0.0.1",
                             "--allow-websocket-origin", f"127.0.0.1:{port}"],
                            cwd=root, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/inference_lab", timeout=2)
                break
            except OSError:
                time.sleep(0.2)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(accept_downloads=True)
            page.set_default_timeout(300_000)
            if case == "server-download":
                page.goto(f"http://127.0.0.1:{port}/inference_lab?view=grid")
                button = page.get_by_text("Whole dataset (NetCDF)")
                button.wait_for()
                for attempt in (1, 2):
                    before = status_kb(proc.pid, "VmHWM")
                    start = time.perf_counter()
                    with page.expect_download() as info:
                        button.click()
                    size = Path(info.value.path()).stat().st_size
                    seconds = time.perf_counter() - start
                    after = status_kb(proc.pid, "VmHWM")
                    print(f"server-download  {root}: download {attempt}: peak RSS "
                          f"{before / 1e3:.0f} MB before, {after / 1e3:.0f} MB after; "
                          f"{size / 1e6:.1f} MB file in {seconds:.1f} s")
                browser.close()
                return
            big = Path(f"/tmp/bench-upload-{os.getpid()}.csv")
            row = b"1,0.0,100,5\n"
            big.write_bytes(b"request_id,arrival_s,prompt_tokens,output_tokens\n"
                            + row * (UPLOAD_BYTES // len(row)))
            page.goto(f"http://127.0.0.1:{port}/inference_lab?view=goodput")
            page.locator(".lab-card .value").first.wait_for()
            before = status_kb(proc.pid, "VmHWM")
            start = time.perf_counter()
            page.set_input_files("input[type=file]", str(big))
            page.get_by_text("traces up to 20 MiB are accepted").first.wait_for()
            seconds = time.perf_counter() - start
            after = status_kb(proc.pid, "VmHWM")
            browser.close()
            big.unlink()
        print(f"server-upload    {root}: peak RSS {before / 1e3:.0f} MB before, "
              f"{after / 1e3:.0f} MB after a {UPLOAD_BYTES / 1e6:.0f} MB upload "
              f"(refused after {seconds:.1f} s)")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] in ("server-upload", "server-download"):
        server_upload(sys.argv[2] if len(sys.argv) > 2 else
                      str(Path(__file__).resolve().parents[1]), sys.argv[1])
        return
    if len(sys.argv) > 1:
        run(sys.argv[1])
        return
    for case in CASES:
        subprocess.run([sys.executable, __file__, case], check=True)


if __name__ == "__main__":
    main()
