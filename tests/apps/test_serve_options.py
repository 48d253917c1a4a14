"""``inference-lab serve`` passes the team-serving options and any other ``panel serve`` option."""

from __future__ import annotations

import pytest

from apps.ui.server.logins import LOGINS_ENV
from cli.main import build_parser, main
from cli.serve_cmd import pages_at_once, panel_command, server_environment
from lab.errors import LabInputError


def command(*argv: str) -> list[str]:
    return panel_command(build_parser().parse_args(["serve", *argv]))


def environment(*argv: str) -> dict[str, str]:
    return server_environment(build_parser().parse_args(["serve", *argv]))


def test_every_team_option_reaches_panel_serve():
    cmd = command("--prefix", "/lab", "--num-procs", "3", "--basic-auth", "users.txt",
                  "--cookie-secret", "s3cret", "--allow-websocket-origin", "lab.example.org",
                  "--use-xheaders", "--liveness")
    assert cmd[cmd.index("--prefix") + 1] == "/lab"
    assert cmd[cmd.index("--num-procs") + 1] == "3"
    env = environment("--basic-auth", "users.txt", "--cookie-secret", "s3cret")
    assert env[LOGINS_ENV] == "users.txt" and env["PANEL_COOKIE_SECRET"] == "s3cret"
    assert "--basic-auth" not in cmd and "s3cret" not in cmd  # secrets: environment only
    assert cmd[cmd.index("--allow-websocket-origin") + 1] == "lab.example.org"
    assert "--use-xheaders" in cmd and "--liveness" in cmd


def test_liveness_is_on_by_default_and_can_be_turned_off():
    assert "--liveness" in command()
    assert "--liveness" not in command("--no-liveness")


def test_other_panel_serve_options_pass_through_after_double_dash():
    cmd = command("--port", "5100", "--", "--keep-alive", "1000", "--session-token-expiration=600")
    assert cmd[-3:] == ["--keep-alive", "1000", "--session-token-expiration=600"]
    assert cmd[cmd.index("--port") + 1] == "5100"


@pytest.mark.parametrize("extra", [["--port", "9"], ["--setup=x.py"], ["--index", "x"],
                                   ["other_app.py"]])
def test_options_the_command_sets_are_refused_after_double_dash(extra):
    with pytest.raises(LabInputError, match="after --"):
        command("--", *extra)


def test_a_refused_passthrough_is_one_sentence_and_exit_2(capsys):
    assert main(["serve", "--", "--port", "9"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_pages_at_once_is_passed_to_the_server_and_off_by_default_with_several_processes():
    def limit(*argv: str) -> str | None:
        return pages_at_once(build_parser().parse_args(["serve", *argv]))

    assert limit() is None  # the server's own default: one per core
    assert limit("--pages-at-once", "3") == "3" and limit("--pages-at-once", "0") == "0"
    assert limit("--num-procs", "2") == "0"
    assert limit("--num-procs", "2", "--pages-at-once", "4") == "4"


def test_a_negative_pages_at_once_is_one_sentence_and_exit_2(capsys):
    assert main(["serve", "--pages-at-once", "-1"]) == 2
    err = capsys.readouterr().err
    assert "--pages-at-once -1 is negative" in err and "Traceback" not in err


def test_a_limit_in_the_environment_is_checked_before_the_server_starts(monkeypatch, capsys):
    from apps.ui.server.page_gate import LIMIT_ENV

    monkeypatch.setenv(LIMIT_ENV, "<script>")
    assert main(["serve"]) == 2
    err = capsys.readouterr().err
    assert "is not a whole number of pages" in err and "Traceback" not in err
    monkeypatch.setenv(LIMIT_ENV, "3")
    assert pages_at_once(build_parser().parse_args(["serve", "--num-procs", "2"])) is None


def test_a_port_in_use_is_said_at_once_before_the_server_starts(monkeypatch, capsys):
    """``serve`` on a taken port used to prepare every page (8 s) before Bokeh said "Cannot
    start Bokeh server, port 5006 is already in use"; now it is one sentence, exit 2, and the
    server is never started."""
    import socket

    from cli import serve_cmd

    monkeypatch.setattr(serve_cmd.os, "execve", lambda *a: pytest.fail("server started"))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", "--address", "127.0.0.1", "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert f"Port {port} at 127.0.0.1 is already in use" in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_an_address_that_does_not_resolve_is_one_sentence(monkeypatch, capsys):
    from cli import serve_cmd

    monkeypatch.setattr(serve_cmd.os, "execve", lambda *a: pytest.fail("server started"))
    assert main(["serve", "--address", "no-such-host.invalid", "--port", "5999"]) == 2
    err = capsys.readouterr().err
    assert "does not resolve" in err and err.count("\n") == 1 and "Traceback" not in err


def test_a_free_port_starts_the_server(monkeypatch):
    import socket

    from cli import serve_cmd

    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    calls = []
    monkeypatch.setattr(serve_cmd.os, "execve", lambda *a: calls.append(a))
    assert main(["serve", "--address", "127.0.0.1", "--port", str(port)]) == 0
    assert calls and "--port" in calls[0][1] and str(port) in calls[0][1]
