"""``--basic-auth``: the documented logins file works, and no reader receives a server path.

A file of ``user:password`` lines (or a JSON map; passwords as written or as ``htpasswd -B``
bcrypt / ``htpasswd -s`` SHA-1 hashes) logs in on the real server; a malformed file is refused
at start in one sentence naming its line, quoting no password. The served pages, HTML and the
websocket's first document, name neither the server's working directory nor its home.
"""

from __future__ import annotations

import asyncio
import http.client
import http.cookiejar
import json
import os
import re
import secrets
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import psutil
import pytest
from lab_browser import AUTH_PASSWORD, REPO, app_errors, free_port, server_log, start_server, stop_server
from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect

from apps.ui.server import logins as logins_module
from apps.ui.server.logins import Logins, logins_for
from apps.ui.views.pages import all_pages
from cli.main import main
from lab.errors import LabInputError
from tests.apps.thread_server import run_apart

# Lines as `htpasswd -nbB carol hashed-pass-7` and `htpasswd -nbs dave sha-pass-9` (Apache 2.4)
# and `htpasswd -nbm erin md5pass` wrote them.
CAROL = "carol:$2y$05$T22ZIoGholONYWtyKzwjLexG/CDTwT7IlL7a7LrkaLxe3XOBq.ThC"
DAVE = "dave:{SHA}vvWX6qZc0cDDP2kHl5zIj5+kc6U="
ERIN_MD5 = "erin:$apr1$2BrxuwUS$3TPV1yWPx6A9d/CE5C30E1"
PASSWORDS = {"alice": "wonder:land 1", "carol": "hashed-pass-7", "dave": "sha-pass-9"}
USERS_FILE = f"# readers of the lab\n\nalice:{PASSWORDS['alice']}\n{CAROL}\r\n{DAVE}\n"
WRONG = "not-the-password-42"
READER_ADDRESS = "127.0.0.2"
"""The 200-wrong-logins reader's source address (Linux routes all of 127/8 to loopback)."""


def written(tmp_path: Path, text: str | bytes, name: str = "users.txt") -> Path:
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


# -- the file: formats, hashes, constant-time checks ----------------------------------------
def test_user_password_lines_with_plain_bcrypt_and_sha_passwords(tmp_path):
    logins = Logins.from_file(written(tmp_path, USERS_FILE))
    assert len(logins) == 3
    for user, password in PASSWORDS.items():
        assert logins.check(user, password)
        assert not logins.check(user, WRONG)
        assert not logins.check(user, password + " ")
    assert not logins.check("mallory", PASSWORDS["alice"])
    assert not logins.check("carol", PASSWORDS["alice"])  # each user has their own password


def test_a_json_map_of_users(tmp_path):
    path = written(tmp_path, json.dumps({"alice": "pw1", "carol": CAROL.split(":", 1)[1]}),
                   "users.json")
    logins = logins_for(str(path))
    assert logins.check("alice", "pw1") and logins.check("carol", "hashed-pass-7")
    assert not logins.check("alice", "pw2") and not logins.check("bob", "pw1")


def test_a_shared_password_for_any_user_and_a_missing_path_is_not_a_password(tmp_path):
    logins = logins_for("lab-secret-123")
    assert logins.check("anyone", "lab-secret-123") and not logins.check("anyone", WRONG)
    with pytest.raises(LabInputError, match="names no file") as error:
        logins_for(str(tmp_path / "user.txt"))  # a typo must not become the password
    assert "user.txt" not in str(error.value)


def test_bcrypt_reads_the_first_72_bytes_as_htpasswd_does():
    import bcrypt

    long = "x" * 72
    stored = bcrypt.hashpw(long.encode(), bcrypt.gensalt(4)).decode().replace("$2b$", "$2y$")
    logins = Logins(users={"u": logins_module.stored_password(stored, "test")})
    assert logins.check("u", long) and logins.check("u", long + "more")  # no exception
    assert not logins.check("u", "x" * 71)


def test_an_unknown_user_costs_a_bcrypt_check_like_a_known_one(tmp_path, monkeypatch):
    import bcrypt

    checked = []
    real = bcrypt.checkpw
    monkeypatch.setattr(bcrypt, "checkpw", lambda pw, h: checked.append(h) or real(pw, h))
    logins = Logins.from_file(written(tmp_path, USERS_FILE))
    assert not logins.check("mallory", "hashed-pass-7")  # carol's password, another name
    assert len(checked) == 1


def test_plain_passwords_are_compared_in_constant_time(tmp_path, monkeypatch):
    import hmac

    compared = []
    real = hmac.compare_digest
    monkeypatch.setattr(logins_module.hmac, "compare_digest",
                        lambda a, b: compared.append((a, b)) or real(a, b))
    logins = Logins.from_file(written(tmp_path, USERS_FILE))
    assert logins.check("alice", PASSWORDS["alice"]) and not logins.check("alice", "w")
    assert not logins.check("dave", WRONG)
    assert len(compared) == 3 and all(len(a) == len(b) for a, b in compared)


@pytest.mark.parametrize(("text", "expected"), [
    ("alice:pw\nbob\n", "Line 2 of the logins file users.txt is not a user:password line"),
    ("alice:pw\n:hunter2\n", "Line 2 of the logins file users.txt is not a user:password"),
    ("alice:pw\nbob:\n", "Line 2 of the logins file users.txt (user 'bob') has an empty "),
    ("alice:hunter2\n\nalice:hunter3\n", "Line 3 of the logins file users.txt names the user "
     "'alice' again (first on line 1)"),
    (f"alice:pw\n{ERIN_MD5}\n", "Line 2 of the logins file users.txt (user 'erin') has an "
     "MD5 ($apr1$) hash, which the lab does not check; write the line with htpasswd -B"),
    (CAROL[:-5] + "\n", "Line 1 of the logins file users.txt (user 'carol') has a malformed "
     "bcrypt hash"),
    ("dave:{SHA}hunter2\n", "(user 'dave') has a malformed {SHA} hash"),
    (" alice:hunter2\n", "Line 1 of the logins file users.txt has spaces around its user name"),
    ("# nobody yet\n\n", "The logins file users.txt names no user"),
    (b"alice:pw\nb\xffb:hunter2\n", "Line 2 of the logins file users.txt is not UTF-8 text"),
    ('{"alice": "hunter2",\n "bob": }\n', "Line 2 of the logins file users.txt is not valid "
     "JSON"),
    ('{"alice": ["hunter2"]}', "maps the user 'alice' to something other than a password"),
])
def test_a_malformed_file_is_refused_at_start_in_one_sentence(tmp_path, capsys, text,
                                                              expected):
    path = written(tmp_path, text)
    assert main(["serve", "--basic-auth", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("inference-lab: error: ") and err.count("\n") == 1
    assert expected in err and "Traceback" not in err
    assert "hunter" not in err  # no password, whole or in part
    assert str(tmp_path) not in err


def test_an_unreadable_or_empty_value_is_refused(tmp_path, capsys):
    assert main(["serve", "--basic-auth", ""]) == 2
    assert "not an empty value" in capsys.readouterr().err
    assert main(["serve", "--basic-auth", str(tmp_path)]) == 2  # a folder
    assert "names no file" in capsys.readouterr().err


def test_the_login_check_reads_the_file_again_after_an_edit(tmp_path, monkeypatch):
    import os
    import types

    import panel as pn
    from panel.auth import BasicLoginHandler

    from apps.ui import panel_compat

    monkeypatch.setattr(BasicLoginHandler, "_validate", BasicLoginHandler._validate)  # undone
    from apps.ui.server.logins import LOGINS_ENV, LoginThrottle, login_log_line, logins_for

    panel_compat.check_logins(panel_compat.LoginChecks(logins_for, LOGINS_ENV, LoginThrottle(),
                                                       login_log_line))
    path = written(tmp_path, "alice:first-pw\n")
    monkeypatch.setattr(pn.config, "basic_auth", str(path))
    application = type("Application", (), {})()  # no per-server config: pn.config's is read
    handler = types.SimpleNamespace(application=application)
    assert BasicLoginHandler._validate(handler, "alice", "first-pw")
    path.write_text("alice:second-pw\nbob:{SHA}\n")  # a broken edit: every login refused
    os.utime(path, ns=(1, 1))
    assert not BasicLoginHandler._validate(handler, "alice", "second-pw")
    path.write_text("alice:second-pw\n")
    os.utime(path, ns=(2, 2))
    assert BasicLoginHandler._validate(handler, "alice", "second-pw")
    assert not BasicLoginHandler._validate(handler, "alice", "first-pw")


# -- the real server: logins, and no server path in what readers receive --------------------
@pytest.fixture(scope="module")
def login_server(tmp_path_factory):
    """``inference-lab serve --basic-auth users.txt`` started in a working directory and with
    a home whose names occur nowhere else; yields ``(base URL, process, server paths)``."""
    token = secrets.token_hex(4)
    cwd = tmp_path_factory.mktemp(f"server-cwd-{token}-")
    home = tmp_path_factory.mktemp(f"server-home-{token}-")
    written(cwd, USERS_FILE)
    port = free_port()
    cmd = [sys.executable, "-m", "lab", "serve", "--port", str(port), "--address", "127.0.0.1",
           "--basic-auth", "users.txt"]
    proc = start_server(cmd, port, path="/login", cwd=cwd, env={**os.environ, "HOME": str(home)})
    yield f"http://127.0.0.1:{port}", proc, [str(cwd), str(home), str(REPO)]
    err = stop_server(proc)
    assert app_errors(err) == [], err


class Reader:
    """A reader's HTTP client: follows redirects and keeps the server's cookies."""

    def __init__(self) -> None:
        self.cookies = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(
            self.cookies))

    def get(self, url: str, data: bytes | None = None) -> tuple[str, str]:
        """The final URL and HTML of ``url`` (posted ``data`` if given)."""
        with self.opener.open(url, data=data, timeout=120) as response:
            return response.url, response.read().decode()

    def cookie_header(self) -> str:
        return "; ".join(f"{cookie.name}={cookie.value}" for cookie in self.cookies)


def log_in(base: str, user: str, password: str) -> tuple[Reader, str, str]:
    """A browser-like login: the login page, then its form posted; returns the reader (with
    the login cookie) and the final page's URL and HTML."""
    reader = Reader()
    reader.get(f"{base}/login")
    form = urllib.parse.urlencode({"username": user, "password": password}).encode()
    url, html = reader.get(f"{base}/login", data=form)
    return reader, url, html


def test_each_user_of_the_file_logs_in_to_the_lab(login_server):
    base, _, _ = login_server
    for user, password in PASSWORDS.items():
        reader, url, html = log_in(base, user, password)
        assert url == f"{base}/" and "<title>Inference Lab</title>" in html, user
        assert "login-form" not in html
        url, html = reader.get(f"{base}/?view=decode")
        assert url == f"{base}/?view=decode" and "login-form" not in html


def test_a_wrong_password_gets_the_login_page_with_its_message(login_server):
    base, proc, _ = login_server
    for user, password in [("alice", WRONG), ("carol", PASSWORDS["dave"]),
                           ("mallory", PASSWORDS["alice"])]:
        reader, url, html = log_in(base, user, password)
        assert url.startswith(f"{base}/login?error="), user
        assert "Invalid username or password!" in html and "login-form" in html
        assert "<title>Inference Lab | Log in</title>" in html
        assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)  # nothing from outside
        url, html = reader.get(f"{base}/?view=decode")  # still not logged in
        assert "/login" in url and "login-form" in html
    log = server_log(proc)
    assert "Traceback" not in log and " 500 " not in log
    for password in [*PASSWORDS.values(), WRONG]:
        assert password not in log


async def first_document(base: str, html: str, cookies: str) -> str:
    """The websocket's first document message (Bokeh's ``PULL-DOC-REPLY``) for the session
    of a page's ``html``, as the text the browser receives."""
    token = re.search(r'"token":\s*"([^"]+)"', html).group(1)
    request = HTTPRequest(base.replace("http", "ws", 1) + "/inference_lab/ws",
                          headers={"Origin": base, "Cookie": cookies})
    connection = await websocket_connect(request, subprotocols=["bokeh", token])

    async def message() -> tuple[dict, list]:
        header = json.loads(await connection.read_message())
        parts = [await connection.read_message() for _ in range(2)]  # metadata, content
        for _ in range(2 * header.get("num_buffers", 0)):
            parts.append(await connection.read_message())
        return header, parts

    try:
        await message()  # ACK
        for part in ({"msgid": "1", "msgtype": "PULL-DOC-REQ"}, {}, {}):
            await connection.write_message(json.dumps(part))
        header, parts = await message()
    finally:
        connection.close()
        while await asyncio.wait_for(connection.read_message(), 30) is not None:
            pass  # until the server has closed its end too
    assert header["msgtype"] == "PULL-DOC-REPLY"
    return "".join(p if isinstance(p, str) else p.decode("latin-1") for p in parts)


def test_no_page_sends_a_server_path(login_server):
    base, _, paths = login_server
    reader, _, _ = log_in(base, "alice", PASSWORDS["alice"])
    received = {"login": Reader().get(f"{base}/login")[1]}
    for page in all_pages():
        _, html = reader.get(f"{base}/?view={page.slug}" if page.slug else f"{base}/")
        document = run_apart(first_document(base, html, reader.cookie_header()))
        assert '"FileSelector' in document, page.slug  # the model definitions are in it
        received[page.slug or "home"] = html + document
    for name, text in received.items():
        for path in paths:
            assert path not in text, (name, path)


def test_no_password_or_cookie_secret_on_the_servers_command_line(auth_lab_url):
    """Every local user can read a process's command line (``ps``); the shared password and
    the cookie secret reach the server through its environment instead."""
    port = auth_lab_url.rsplit(":", 1)[1]
    servers = [p for p in psutil.process_iter(["cmdline"])
               if p.info["cmdline"] and "panel" in p.info["cmdline"]
               and port in p.info["cmdline"]]
    assert servers
    for server in servers:
        line = " ".join(server.info["cmdline"])
        assert AUTH_PASSWORD not in line and "--cookie-secret" not in line
        assert "--basic-auth" not in line


# -- issue 38 item 3: guessing is slow, logged and never holds the server ------------------
def test_a_bcrypt_cost_above_12_is_refused_at_start_in_one_sentence(tmp_path, capsys):
    import bcrypt

    dear = bcrypt.hashpw(b"hunter2", bcrypt.gensalt(4)).decode().replace("$2b$04$", "$2y$14$")
    path = written(tmp_path, f"alice:pw\nbob:{dear}\n")
    assert main(["serve", "--basic-auth", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Line 2 of the logins file users.txt (user 'bob')" in err
    assert "cost of 14" in err and "at most 12" in err and "$2y$" not in err


def test_a_json_file_naming_a_user_twice_is_refused(tmp_path, capsys):
    path = written(tmp_path, '{"alice": "hunter2", "bob": "pw", "alice": "hunter3"}',
                   "users.json")
    assert main(["serve", "--basic-auth", str(path)]) == 2
    err = capsys.readouterr().err
    assert "The logins file users.json names the user 'alice' twice" in err
    assert err.count("\n") == 1 and "hunter" not in err


def test_an_unknown_user_costs_a_fixed_decoy_not_the_dearest_hash(tmp_path, monkeypatch):
    import bcrypt

    dear = bcrypt.hashpw(b"pw", bcrypt.gensalt(12)).decode().replace("$2b$", "$2y$")
    logins = Logins.from_file(written(tmp_path, f"{CAROL}\nbob:{dear}\n"))
    checked = []
    real = bcrypt.checkpw
    monkeypatch.setattr(bcrypt, "checkpw", lambda pw, h: checked.append(h) or real(pw, h))
    assert not logins.check("mallory", "pw")
    assert len(checked) == 1 and checked[0][4:6] == b"05"  # htpasswd -B's default cost


def test_five_failures_in_a_minute_throttle_the_user_and_the_address():
    from apps.ui.server.logins import LoginThrottle

    now = [1000.0]
    throttle = LoginThrottle(clock=lambda: now[0])
    for _ in range(5):
        assert throttle.retry_after("alice", "10.0.0.1") == 0
        throttle.failed("alice", "10.0.0.1")
        now[0] += 1
    assert throttle.retry_after("alice", "10.0.0.9") == 55  # the user, from anywhere
    assert throttle.retry_after("bob", "10.0.0.1") == 55  # the address, any user
    assert throttle.retry_after("bob", "10.0.0.9") == 0
    now[0] += 55
    assert throttle.retry_after("alice", "10.0.0.1") == 0


def test_an_anonymous_autoload_request_writes_no_traceback(login_server):
    """Issue 38 item 4: anyone may ask for a page's autoload script; without a login it is
    refused (a redirect to the login page), and the log gets no traceback."""
    base, proc, _ = login_server
    before = server_log(proc)
    for query in ("?bokeh-autoload-element=x&bokeh-app-path=/inference_lab", ""):
        try:
            with urllib.request.urlopen(f"{base}/inference_lab/autoload.js{query}",
                                        timeout=60) as response:
                body = response.read().decode()
        except urllib.error.HTTPError as error:
            error.close()  # an HTTPError holds the response's socket
            assert error.code in (400, 403), error.code
            continue
        assert "login-form" in body  # redirected to the login page
    import time

    time.sleep(0.5)
    log = server_log(proc)[len(before):]
    assert "Traceback" not in log and "TypeError" not in log, log


def test_login_cookies_are_samesite_lax_and_not_secure_over_plain_http(login_server):
    base, _, _ = login_server

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    form = urllib.parse.urlencode({"username": "dave", "password": PASSWORDS["dave"]}).encode()
    with pytest.raises(urllib.error.HTTPError) as redirected:  # 302 to the lab, not followed
        urllib.request.build_opener(NoRedirect).open(f"{base}/login", data=form, timeout=60)
    redirected.value.close()  # an HTTPError holds the response's socket
    cookies = redirected.value.headers.get_all("Set-Cookie")
    user = [c for c in cookies if c.startswith("user=")]
    assert user and all("samesite=lax" in c.lower() for c in cookies), cookies
    assert not any("secure" in c.lower().split(";")[-1] or "; secure" in c.lower()
                   for c in cookies), cookies


def test_two_hundred_wrong_passwords_are_throttled_after_five_and_each_logged(login_server):
    """Also: the right password is refused while throttled, the log names user and address
    but never a password, the login cookie is SameSite=Lax (Secure only over https).

    The reader is dave from 127.0.0.2 (loopback too): no other test of this module fails a
    login as dave or from that address, so the throttle's counts start at zero here."""
    base, proc, _ = login_server
    before = server_log(proc)
    host, port = urllib.parse.urlsplit(base).hostname, urllib.parse.urlsplit(base).port

    def post(password: str) -> tuple[int, str | None]:
        """One login form posted from :data:`READER_ADDRESS`: the status and Retry-After
        (the connection closed each time: no socket outlives its request)."""
        conn = http.client.HTTPConnection(host, port, timeout=30,
                                          source_address=(READER_ADDRESS, 0))
        try:
            body = urllib.parse.urlencode({"username": "dave", "password": password})
            conn.request("POST", "/login", body=body,
                         headers={"Content-Type": "application/x-www-form-urlencoded"})
            response = conn.getresponse()
            response.read()
            return response.status, response.getheader("Retry-After")
        finally:
            conn.close()

    answers = [post(WRONG) for _ in range(200)]
    codes = [code for code, _ in answers]
    retry = next((after for code, after in answers if code == 429 and after), None)
    assert codes[:5] == [302] * 5 and codes[5:] == [429] * 195, codes[:8]
    assert retry is not None and 0 < int(retry) <= 60
    assert post(PASSWORDS["dave"])[0] == 429  # the right password, while throttled
    log = server_log(proc)[len(before):]
    lines = [line for line in log.splitlines() if "login" in line and "'dave'" in line]
    assert len(lines) == 201 and all(READER_ADDRESS in line for line in lines), lines[:3]
    assert WRONG not in log and PASSWORDS["dave"] not in log
