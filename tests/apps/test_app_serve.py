"""``inference-lab serve`` serves the lab with the landing page at ``/``."""

from __future__ import annotations

import argparse
import urllib.request

import pytest
from lab_browser import (
    REPO,
    app_errors,
    open_page,
)
from playwright.sync_api import expect

from apps.ui.server.logins import LOGINS_ENV
from cli.main import build_parser
from cli.serve_cmd import SETUP_MODULE, app_script, panel_command, server_environment
from lab.errors import LabInputError


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["serve", *argv])


def test_panel_command_serves_the_app_as_the_index():
    cmd = panel_command(parse("--port", "5100", "--address", "0.0.0.0", "--num-procs", "2",
                              "--basic-auth", "secret"))
    script = app_script()
    assert script == REPO / "apps" / "inference_lab.py"
    assert cmd[1:5] == ["-m", "panel", "serve", str(script)]
    assert cmd[cmd.index("--index") + 1] == "inference_lab"
    assert cmd[cmd.index("--num-procs") + 1] == "2"
    assert "--warm" not in cmd
    assert not [part for part in cmd if "secret" in part or part.startswith("--cookie")]
    assert "0.0.0.0:5100" in cmd
    assert cmd[cmd.index("--setup") + 1] == str(REPO / "apps" / "ui" / "views" / "serve_setup.py")
    assert app_script(SETUP_MODULE).exists()


def test_login_secrets_reach_the_server_by_its_environment_not_its_command_line():
    """A command line is readable by every local user (``ps``); the environment is not."""
    args = parse("--basic-auth", "secret", "--cookie-secret", "c00kie")
    env = server_environment(args)
    assert env == {LOGINS_ENV: "secret", "PANEL_BASIC_AUTH": "on", "PANEL_COOKIE_SECRET": "c00kie"}
    assert not [part for part in panel_command(args) if "secret" in part or "c00kie" in part]
    generated = {server_environment(parse("--basic-auth", "secret"))["PANEL_COOKIE_SECRET"]
                 for _ in range(3)}
    assert len(generated) == 3 and all(len(g) == 64 for g in generated)
    assert server_environment(parse()) == {}


def test_warm_pages_are_pages_of_the_lab():
    from apps.ui.server.warmup import WARM_PAGES
    from apps.ui.views.pages import all_pages

    assert set(WARM_PAGES) <= {info.slug for info in all_pages()}


def test_inference_lab_serve_has_the_landing_page_at_root(lab_url, lab_log, lab_page,
                                                           console_errors):
    """The session's server (``lab_url``) is ``inference-lab serve``."""
    open_page(lab_page, f"{lab_url}/")
    expect(lab_page.get_by_text("Change the inputs. Understand the tradeoff.")).to_be_visible()
    assert lab_page.url == f"{lab_url}/"
    open_page(lab_page, f"{lab_url}/?view=batch")
    expect(lab_page.locator(".lab-card .value").first).to_have_text("7.04 ms")
    assert console_errors == []
    log = lab_log()
    assert "Inference Lab: pages prepared in" in log  # the --setup warm-up ran
    assert app_errors(log) == [], log


def test_prefix_and_proxy_headers_reach_panel_serve():
    cmd = panel_command(parse("--prefix", "/teams/lab/", "--use-xheaders"))
    assert cmd[cmd.index("--prefix") + 1] == "/teams/lab"
    assert "--use-xheaders" in cmd and "--liveness" in cmd
    plain = panel_command(parse())
    assert "--prefix" not in plain and "--use-xheaders" not in plain


@pytest.mark.parametrize("prefix", ["lab/../etc", "/a b", "/<script>", "//", "/lab?x=1"])
def test_a_prefix_that_is_not_a_plain_path_is_one_sentence(prefix):
    with pytest.raises(LabInputError, match="is not a URL path"):
        panel_command(parse("--prefix", prefix))


def test_basic_auth_asks_for_a_login(auth_lab_url):
    with urllib.request.urlopen(f"{auth_lab_url}/", timeout=10) as response:
        assert "/login" in response.url
    # A health check needs no login: /liveness answers while the server runs.
    with urllib.request.urlopen(f"{auth_lab_url}/liveness", timeout=10) as response:
        assert response.status == 200 and "/login" not in response.url


def test_a_served_page_is_not_held_by_panel_state():
    """``pmui.Page`` links its busy flag to the process-wide ``pn.state`` by a watcher;
    ``build_page`` drops the link, and must drop the watcher too, or ``pn.state`` keeps every
    page the server ever built (the memory of each closed session) and re-sets each one on
    every busy toggle."""
    import panel as pn
    from bokeh.document import Document
    from panel.io.state import set_curdoc

    from apps.ui.views.app import build_page

    def state_watchers() -> list:
        return [w for ws in pn.state.param.watchers.get("busy", {}).values() for w in ws]

    before = len(state_watchers())
    with set_curdoc(Document()):
        pages = [build_page(slug) for slug in ("batch", "", "grid")]
    assert len(state_watchers()) == before
    held = {id(getattr(getattr(w.fn, "__self__", None), "self", None)) for w in state_watchers()}
    assert not held & {id(page) for page in pages}


def test_operations_guide_names_exactly_the_serve_options():
    """docs/operations.md documents every ``inference-lab serve`` option and no other."""
    import re

    serve = build_parser()._subparsers._group_actions[0].choices["serve"]
    offered = {opt for action in serve._actions for opt in action.option_strings
               if opt.startswith("--") and opt != "--help"}
    guide = (REPO / "docs" / "operations.md").read_text(encoding="utf-8")
    table = {m for row in re.findall(r"^\| `(--[^|]*)\|", guide, flags=re.M)
             for m in re.findall(r"--[a-z-]+", row)}
    assert table == offered


def test_start_up_computes_the_grids_the_explorer_lists(tmp_path, monkeypatch):
    """The explorer never computes in a page request, so a fresh clone's server prepares the
    default grids before its first request (and leaves another --datasets folder alone)."""
    from apps.ui.server.warmup import prepare_datasets
    from sweeps.catalog_of_datasets import DATASETS_ENV
    from sweeps.grid_kinds import GRIDS
    from sweeps.paths import ENV_VAR

    monkeypatch.setenv(ENV_VAR, str(tmp_path / "data"))
    monkeypatch.setenv(DATASETS_ENV, str(tmp_path / "elsewhere"))
    assert prepare_datasets() == [] and not (tmp_path / "data").exists()
    monkeypatch.delenv(DATASETS_ENV)
    assert prepare_datasets() == []
    assert sorted(p.name for p in (tmp_path / "data").glob("*.zarr")) == sorted(
        f"{name}.zarr" for name in GRIDS)


def test_stopping_a_server_of_several_processes_stops_every_one(tmp_path):
    """``serve --num-procs 2`` stopped with SIGTERM left both forked processes serving on the
    port, orphaned (``apps/ui/server/end_with_parent.py``)."""
    import os
    import socket
    import sys
    import time

    import psutil
    from lab_browser import free_port, start_server, stop_server

    port = free_port()  # the lab's own data folder, as the session's served lab (no new grids)
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    proc = start_server([sys.executable, "-m", "lab", "serve", "--port", str(port), "--address",
                         "127.0.0.1", "--num-procs", "2"], port, path="/liveness", env=env)
    children = psutil.Process(proc.pid).children()
    assert len(children) == 2
    log = stop_server(proc)  # SIGTERM to the first process only, as `kill PID` sends
    # a child still in its warm-up handles the signal when the warm-up ends: a minute at most
    _gone, alive = psutil.wait_procs(children, timeout=120)
    for child in alive:  # leave nothing running, then fail
        child.kill()
    assert alive == [], log
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # the port is closed: nothing answers on it
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) != 0:
                break
        time.sleep(0.2)
    else:
        raise AssertionError(f"port {port} still answers after the server was stopped")
    assert app_errors(log) == []
