"""Every process-wide side effect and every private Panel hook the apps rely on, in one place.

It imports nothing of ``apps.ui`` (the lowest of its roles, ``tests/architecture/test_ui_roles.py``):
what a hook needs of the lab (the page gate and its waiting page, the logins, the upload
limits) is given to it by its caller.

Panel and panel-material-ui do not promise these internals; :data:`TESTED_PANEL` and
:data:`TESTED_PANEL_MATERIAL_UI` are the versions they were checked against, and
``tests/apps/test_panel_compat.py`` fails when another version is installed, so an upgrade
re-checks each hook here:

- :data:`PRIORITY_CHANGES` (``Syncable._priority_changes``): properties processed on the next
  tick instead of after Panel's 50 ms debounce;
- :func:`cleanup_doc` (``panel.io.document._cleanup_doc``): releases a throwaway document's
  sessions and models after a warm-up build;
- :func:`detach_busy` (``pmui.Page.busy``, read-only, linked to ``pn.state.busy`` by a watcher):
  drops the link and its watcher so a page is not re-walked on every busy toggle;
- :func:`freeze_gc` (``gc.freeze``): moves every object alive now out of later collections;
  called by the server's start-up only (:mod:`apps.ui.server.warmup`);
- :func:`gate_page_requests` (``panel.io.server.DocHandler.get`` and ``.get_session``): page
  requests pass an :class:`~apps.ui.server.page_gate.PageGate`, and wait on the page of
  :mod:`apps.ui.server.waiting_page`, both given by the caller; called by the server's start-up only
  (``apps/ui/views/serve_setup.py``);
- :func:`markdown_stylesheets` (``pn.pane.Markdown``'s ``stylesheets`` default): inline code
  readable on the light theme; installed when :mod:`apps.ui.views.app` is imported;
- :func:`parse_query_value_by_value` (``Location.query_params``): one unparseable query value
  (a 5,000-digit number) no longer blanks the page; installed when :mod:`apps.ui.views.app` is
  imported;
- :func:`answer_long_requests` (``DocHandler.prepare``, Tornado's
  ``HTTP1ConnectionParameters``): an over-long page address gets HTTP 414 and a sentence;
  called by the server's start-up only;
- :func:`check_logins` (``BasicLoginHandler._validate``, ``.post``, ``.set_cookie``,
  ``panel.auth._validate_next_url``): logins checked off the event loop, throttled and logged,
  cookies ``SameSite=Lax`` (``Secure`` over https);
- :func:`quiet_anonymous_autoload` (``AutoloadJsHandler.get_session``): an anonymous autoload
  request is redirected without a traceback;
- :func:`build_pages_off_loop` (Bokeh's ``ApplicationContext.create_session_if_needed``,
  ``ServerSession._handle_pull``, ``bokeh.server.session._needs_document_lock``,
  ``bokeh.io.doc._PATCHED_CURDOCS``, ``panel.io.state._thread_id_``): a page's document is
  built, and serialised for its browser, on worker threads, so the event loop keeps answering
  (``/liveness``, other readers' websockets) during a burst;
- :class:`NativeBundleImport` (es-module-shims' ``importShim``, wrapped in the browser): the
  widget bundle is imported by the browser's own loader, its compiled code cached;
- :func:`discard_left_sessions` (``ServerSession.unsubscribe``,
  ``ApplicationContext._discard_session``): a session whose reader closed the page is discarded
  seconds later instead of Bokeh's 15-32 s, so a burst's documents do not pile up.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import functools
import gc
import inspect
import io
import logging
import numbers
import os
import re
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import parse_qsl, urlencode

import bokeh.io.doc as bokeh_doc
import panel as pn
import panel_material_ui as pmui
from bokeh.core.has_props import is_DataModel
from bokeh.document import Document
from bokeh.model import Model
from bokeh.protocol.exceptions import ProtocolError
from bokeh.server.contexts import ApplicationContext, BokehSessionContext, _RequestProxy
from bokeh.server.session import ServerSession, _needs_document_lock
from bokeh.util.token import get_token_payload
from panel.auth import BasicLoginHandler, _validate_next_url
from panel.io.document import _cleanup_doc
from panel.io.location import Location
from panel.io.server import AutoloadJsHandler, DocHandler
from panel.util import edit_readonly, parse_query
from tornado.escape import url_escape
from tornado.http1connection import HTTP1ConnectionParameters
from tornado.web import Finish, RequestHandler

from lab.errors import LabInputError
from lab.units import MIB

TESTED_PANEL = "1.9.4"
"""The Panel version these hooks were checked against."""
TESTED_PANEL_MATERIAL_UI = "0.16.6"
"""The panel-material-ui version these hooks were checked against."""

PRIORITY_CHANGES = ["value", "value_throttled"]
"""A widget's properties that skip Panel's debounce (``_priority_changes``)."""


def cleanup_doc(doc) -> None:
    """Release a Bokeh document built outside a session (Panel's ``_cleanup_doc``)."""
    _cleanup_doc(doc)


def detach_busy(page: pmui.Page) -> None:
    """Set ``page.busy`` False for good and remove the watcher linking it to ``pn.state``.

    Setting the read-only flag drops the link but not its watcher on ``pn.state``, which then
    holds every page ever served (about 3 MB each) and re-sets each one on every busy toggle.
    """
    with edit_readonly(page):
        page.busy = False
    for watchers in pn.state.param.watchers.get("busy", {}).values():
        for watcher in list(watchers):
            if getattr(getattr(watcher.fn, "__self__", None), "self", None) is page:
                pn.state.param.unwatch(watcher)


def freeze_gc() -> None:
    """Collect, then exempt every object alive now from later collections (process-wide)."""
    gc.collect()
    gc.freeze()


async def _settled(result):
    """``result`` awaited if it is awaitable: Tornado's ``authenticated`` decorator returns
    None, not a coroutine, when it redirects a visitor who is not logged in."""
    return await result if inspect.isawaitable(result) else result


_TICKET: contextvars.ContextVar[Any] = contextvars.ContextVar("lab_page_ticket", default=None)
"""The page request's place in the gate, seen by the session it builds (same task)."""


@dataclass(frozen=True)
class WaitingLine:
    """How a reader waits for a page (:mod:`apps.ui.server.waiting_page`): the waiting page's
    HTML for ``(reader, place)``, the header of its request for its turn, the start of the
    cookie's name with which the reloaded page claims its place, and the answer when the turn
    has come."""

    page: Callable[[str, int], str]
    turn_header: str
    turn_cookie: str
    your_turn: str


def gate_page_requests(gate, line: WaitingLine) -> None:
    """Send every page load of this server process through ``gate`` (a
    :class:`~apps.ui.server.page_gate.PageGate`), readers who must wait getting ``line``'s
    page (process-wide; a second call replaces both).

    Every page request of a logged-in visitor is counted. A browser's navigation
    (``Sec-Fetch-Dest: document``) admitted builds its session as usual, and the session gives the place back
    on its ``document_ready`` event (the browser has drawn the page); :meth:`PageGate.sent`
    covers a browser that disconnects or never connects. A load that has to wait gets
    ``line.page``, whose request for its turn (header ``line.turn_header``) is answered here
    when the turn comes.
    Any other page request (a script's, ``curl``'s) waits its turn on the server and gives its
    place back once its page is sent (:func:`_script_page`): it costs the server the build
    alone."""
    already = getattr(DocHandler, "_lab_gate", None) is not None
    DocHandler._lab_gate = gate
    DocHandler._lab_line = line
    if already:
        return
    original_get, original_get_session = DocHandler.get, DocHandler.get_session

    async def get(self, *args, **kwargs):
        gate, line = DocHandler._lab_gate, DocHandler._lab_line
        reader = self.request.headers.get(line.turn_header)
        if reader is not None and self.current_user:  # a waiting page asks for its turn
            self.set_header("Cache-Control", "no-store")
            self.set_header("Content-Type", "text/plain; charset=utf-8")
            self.write(line.your_turn if await gate.turn(reader) else "not in line")
            return None
        if not self.current_user:  # the login page's redirect
            return await _settled(original_get(self, *args, **kwargs))
        if self.request.headers.get("Sec-Fetch-Dest") != "document":
            return await _script_page(self, gate, original_get, *args, **kwargs)
        ticket = None
        for name in self.request.cookies:
            if name.startswith(line.turn_cookie):
                ticket = gate.claim(name.removeprefix(line.turn_cookie))
                if ticket is not None:
                    self.clear_cookie(name, path="/")
                    break
        ticket = ticket or gate.enter()
        if ticket is None:
            self.set_header("Cache-Control", "no-store")
            place = gate.wait_in_line()
            if place is None:
                self.set_status(503)
                self.set_header("Retry-After", "10")
                self.set_header("Content-Type", "text/plain; charset=utf-8")
                self.write(TOO_MANY_WAITING)
                return None
            self.set_header("Content-Type", "text/html; charset=utf-8")
            self.write(line.page(*place))
            return None
        token = _TICKET.set(ticket)
        try:
            return await _settled(original_get(self, *args, **kwargs))
        finally:
            _TICKET.reset(token)
            gate.sent(ticket)

    async def get_session(self):
        session = await _settled(original_get_session(self))
        if session is None:  # redirected to the login page
            return None
        ticket = _TICKET.get()
        if ticket is not None and not ticket.done and ticket.session is None:
            ticket.session = session
            gate = DocHandler._lab_gate
            session.document.on_event("document_ready", lambda event: gate.leave(ticket))
        return session

    DocHandler.get, DocHandler.get_session = get, get_session


class _PerThreadStack:
    """Bokeh's stack of patched current documents (``bokeh.io.doc._PATCHED_CURDOCS``), one per
    thread: a page built on a worker thread must not become the current document of a callback
    running meanwhile on the event loop (the stack is a plain module-wide list)."""

    def __init__(self) -> None:
        self._local = threading.local()

    def _stack(self) -> list:
        stack = getattr(self._local, "stack", None)
        if stack is None:
            stack = self._local.stack = []
        return stack

    def __len__(self) -> int:
        return len(self._stack())

    def __getitem__(self, index):
        return self._stack()[index]

    def append(self, item) -> None:
        self._stack().append(item)

    def pop(self, *args):
        return self._stack().pop(*args)

    def clear(self) -> None:
        self._stack().clear()


_BUILDER = concurrent.futures.ThreadPoolExecutor(max_workers=1,
                                                 thread_name_prefix="lab-page-build")
"""The thread that builds the pages' documents, one at a time, first come first served."""
_SENDER = concurrent.futures.ThreadPoolExecutor(max_workers=1,
                                                thread_name_prefix="lab-page-send")
"""The thread that serialises a new page's document for its browser (``PULL-DOC-REPLY``)."""


def build_pages_off_loop() -> None:
    """Build each new session's document on :data:`_BUILDER`'s thread instead of the event
    loop (process-wide; idempotent; called by the server's start-up).

    Bokeh's ``ApplicationContext.create_session_if_needed`` runs the app script
    (``initialize_document``) on the event loop: a page costs 0.3–0.9 s of CPU there, so sixty
    readers arriving together held every other request, ``/liveness`` included, for a minute.
    Here the same steps run with the build awaited on the worker thread (with the request's
    context variables), the loop answering everything else meanwhile; the document is then
    handed to the loop's thread (``panel.io.state._thread_id_``) as if built there. Bokeh's
    current-document stack is made per thread first (:class:`_PerThreadStack`). The browser's
    first request for the document (``PULL-DOC-REQ``) is answered from :data:`_SENDER`'s
    thread too, under the session's lock as Bokeh answers it."""
    if getattr(ApplicationContext, "_lab_off_loop", False):
        return
    bokeh_doc._PATCHED_CURDOCS = _PerThreadStack()

    async def create_session_if_needed(self, session_id, request=None, token=None):
        if len(session_id) == 0:
            raise ProtocolError("Session ID must not be empty")
        if session_id not in self._sessions and session_id not in self._pending_sessions:
            future = self._pending_sessions[session_id] = asyncio.Future()
            try:
                doc = Document()
                session_context = BokehSessionContext(session_id, self.server_context, doc,
                                                      logout_url=self._logout_url)
                if request is not None:
                    payload = get_token_payload(token) if token else {}
                    if ("cookies" in payload and "headers" in payload
                            and "Cookie" not in payload["headers"]):
                        payload["headers"]["Cookie"] = "; ".join(
                            f"{k}={v}" for k, v in payload["cookies"].items())
                    session_context._request = _RequestProxy(
                        request, arguments=payload.get("arguments"),
                        cookies=payload.get("cookies"), headers=payload.get("headers"))
                session_context._token = token
                doc._session_context = weakref.ref(session_context)
                try:
                    await self._application.on_session_created(session_context)
                except Exception as error:
                    logging.getLogger("bokeh").error("Failed to run session creation hooks %r",
                                                     error, exc_info=True)
                context = contextvars.copy_context()
                await asyncio.get_running_loop().run_in_executor(
                    _BUILDER, context.run, self._application.initialize_document, doc)
                pn.state._thread_id_[doc] = threading.get_ident()  # the loop's, from now on
                session = ServerSession(session_id, doc, io_loop=self._loop, token=token)
            except BaseException as error:
                del self._pending_sessions[session_id]
                future.set_exception(error)
                future.exception()  # retrieved: the caller gets the error below
                raise
            del self._pending_sessions[session_id]
            self._sessions[session_id] = session
            session_context._set_session(session)
            self._session_contexts[session_id] = session_context
            future.set_result(session)
        if session_id in self._pending_sessions:
            return await self._pending_sessions[session_id]
        return self._sessions[session_id]

    ApplicationContext.create_session_if_needed = create_session_if_needed
    ApplicationContext._lab_off_loop = True

    async def pull_off_loop(self, message, connection):
        # The whole document, serialised for the browser (0.1-0.3 s of CPU per page), on the
        # sending thread; the session's lock is held meanwhile, as Bokeh holds it.
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(_SENDER, connection.protocol.create, "PULL-DOC-REPLY",
                                          message.header["msgid"], self.document)

    ServerSession._handle_pull = _needs_document_lock(pull_off_loop)


_DISCARDS: set[asyncio.Task] = set()
"""Discards of left sessions under way (a task not referenced may be collected unfinished)."""


def discard_left_sessions(linger_s: float) -> None:
    """Discard a session ``linger_s`` seconds after its last websocket closed, when none has
    opened since (process-wide; idempotent; called by the server's start-up).

    Bokeh discards an unused session only when its periodic check (every 17 s) finds it
    unused for 15 s, so a reader's document outlived the reader by 15-32 s, and a burst of
    readers who come and go held twenty documents at once: the interpreter's small-object
    allocator then keeps the pages those documents filled, pinned by the few objects that
    outlive them (``apps/ui/server/session_memory.py``). A session that never had a websocket
    (a page whose browser is still loading its scripts) keeps Bokeh's lifetime. Hooks
    ``ServerSession.unsubscribe`` and discards with ``ApplicationContext._discard_session``, as
    Bokeh's own check does (the session's destroy hooks run)."""
    if getattr(ServerSession, "_lab_discard_left", False):
        return
    original_unsubscribe = ServerSession.unsubscribe

    def unsubscribe(self, connection) -> None:
        original_unsubscribe(self, connection)
        if self.connection_count:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not on the server's loop: Bokeh's own check discards it
            return
        loop.call_later(linger_s, _discard_if_left, self, linger_s)

    ServerSession.unsubscribe = unsubscribe
    ServerSession._lab_discard_left = True


def _discard_if_left(session: ServerSession, linger_s: float) -> None:
    """Discard ``session`` if it has had no websocket for ``linger_s`` seconds (on the loop)."""
    if (session.destroyed or session.connection_count or session.expiration_blocked
            or session.milliseconds_since_last_unsubscribe < linger_s * 1000 * 0.99):
        return
    session_context = session.document.session_context
    server_context = getattr(session_context, "server_context", None)
    context = getattr(server_context, "application_context", None)
    if context is None or context._sessions.get(session.id) is not session:
        return

    async def discard() -> None:
        try:
            await context._discard_session(session, lambda s: s.connection_count == 0)
        except Exception as error:  # Bokeh's periodic check will try again
            logging.getLogger("bokeh").error("Inference Lab: a closed session was not "
                                             "discarded: %r", error)

    task = asyncio.ensure_future(discard())
    _DISCARDS.add(task)
    task.add_done_callback(_DISCARDS.discard)


TOO_MANY_WAITING = "Too many readers are waiting for the lab; try again in a minute."


async def _script_page(handler, gate, original_get, *args, **kwargs):
    """A page request that is no browser's navigation (a script, ``curl``, a prefetch): it
    waits its turn in the gate's line on the server (it runs no waiting page), and holds its
    place while its page is built and sent."""
    ticket = gate.enter()
    if ticket is None:
        place = gate.wait_in_line()
        if place is None:
            handler.set_status(503)
            handler.set_header("Retry-After", "10")
            handler.set_header("Content-Type", "text/plain; charset=utf-8")
            handler.write(TOO_MANY_WAITING)
            return None
        if await gate.turn(place[0]):
            ticket = gate.claim(place[0])
    try:
        return await _settled(original_get(handler, *args, **kwargs))
    finally:
        if ticket is not None:
            gate.leave(ticket)


def markdown_stylesheets(css: str) -> None:
    """Every Markdown pane made from now on has ``css`` among its stylesheets (the default of
    ``pn.pane.Markdown.stylesheets``; a pane given stylesheets of its own keeps only those, so
    they should hold ``css`` too)."""
    pn.pane.Markdown.param.stylesheets.default = [css]


def parse_query_value_by_value() -> None:
    """``Location.query_params`` parses each query value on its own and skips one that Panel's
    ``parse_query`` cannot parse (process-wide; idempotent).

    Panel parses the whole query whenever a page's location is created or changed; a value of
    more than 4,300 digits raises in ``int()`` (Python's integer-string limit) and blanks the
    page with a traceback in the log. The pages read their inputs through
    :class:`apps.ui.shell.url_sync.UrlInputs`, which refuses such a value in one sentence.
    """
    if getattr(Location, "_lab_value_by_value", False):
        return

    def query_params(self) -> dict:
        parsed: dict = {}
        for key, value in parse_qsl(self.search[1:]):
            with contextlib.suppress(ValueError):
                parsed.update(parse_query("?" + urlencode({key: value})))
        return parsed

    Location.query_params = property(query_params)
    Location._lab_value_by_value = True


MAX_HEADER_BYTES = 1 << 20
"""Request header bytes the server reads before it gives up on a request (Tornado's default is
64 KiB, past which it closes the connection without an answer)."""

MAX_PAGE_URI_CHARS = 16_384
"""Longest page address (path and query) a page request may have, characters; a longer one
gets HTTP 414 with one sentence."""

TOO_LONG = ("This address is too long for the lab (its query holds more than "
            f"{MAX_PAGE_URI_CHARS:,} characters), so open the page without it and set the "
            "inputs on the page.")
"""The answer to a page request whose address is over :data:`MAX_PAGE_URI_CHARS`."""


def answer_long_requests() -> None:
    """Answer an over-long page address with HTTP 414 and one sentence, not a dropped
    connection (process-wide; idempotent; called by the server's start-up).

    Tornado reads at most 64 KiB of headers and closes the connection silently past that; the
    limit is raised to :data:`MAX_HEADER_BYTES` for servers created after this call (so not
    for ``--num-procs`` above 1, whose servers start before the set-up script runs), and a
    page request whose address is longer than :data:`MAX_PAGE_URI_CHARS` gets the sentence.
    """
    if getattr(DocHandler, "_lab_long_requests", False):
        return
    original_init = HTTP1ConnectionParameters.__init__

    def init(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        self.max_header_size = max(self.max_header_size, MAX_HEADER_BYTES)

    HTTP1ConnectionParameters.__init__ = init
    original_prepare = DocHandler.prepare

    async def prepare(self):
        if len(self.request.uri or "") > MAX_PAGE_URI_CHARS:
            self.set_status(414)
            self.set_header("Content-Type", "text/plain; charset=utf-8")
            self.finish(TOO_LONG)
            return None
        return await _settled(original_prepare(self))

    DocHandler.prepare = prepare
    DocHandler._lab_long_requests = True


def quiet_anonymous_autoload() -> None:
    """An autoload script requested without a login gets the login page's redirect and
    nothing in the log (process-wide; idempotent; called by the server's start-up).

    Panel's ``AutoloadJsHandler.get`` awaits ``get_session``, which Tornado's ``authenticated``
    decorator turns into a redirect returning None for a visitor not logged in; awaiting None
    wrote a ``TypeError`` traceback per request, so anyone could flood the log."""
    if getattr(AutoloadJsHandler, "_lab_quiet", False):
        return
    original = AutoloadJsHandler.get_session

    async def get_session(self):
        session = await _settled(original(self))
        if session is None:  # redirected to the login page: the answer is complete
            raise Finish()
        return session

    AutoloadJsHandler.get_session = get_session
    AutoloadJsHandler._lab_quiet = True


@dataclass(frozen=True)
class LoginChecks:
    """What :func:`check_logins` checks logins with (:mod:`apps.ui.server.logins`): the reader
    of a ``--basic-auth`` value (a file name, a password or a mapping) into an object whose
    ``check(user, password)`` says whether a login is valid, the environment variable that
    ``inference-lab serve`` passes the value in, the throttle of failed logins
    (``retry_after(user, address)``, ``failed(user, address)``) and the log line of a failure
    (``log_line(outcome, user, address)``)."""

    logins_for: Callable[[str | dict], Any]
    env: str
    throttle: Any
    log_line: Callable[[str, str, str], str]


_LOGIN_CHECKS: list[LoginChecks] = []
"""The checks :func:`check_logins` was last given (one at most)."""


def _login_option(handler) -> str | dict | None:
    """The ``--basic-auth`` value the server was started with: from the checks' environment
    variable when ``inference-lab serve`` started it, else where Panel's own
    ``BasicLoginHandler._validate`` looks for it (plain ``panel serve --basic-auth``)."""
    env = _LOGIN_CHECKS[0].env
    if os.environ.get(env):  # inference-lab serve: never on the command line
        return os.environ[env]
    server_config = pn.state._server_config.get(handler.application, {})
    return server_config.get("basic_auth", pn.config.basic_auth)


@functools.lru_cache(maxsize=4)
def _logins(checks: LoginChecks, option: str, version: tuple):
    """The logins of ``option``, read again when its file changes (``version``)."""
    return checks.logins_for(option)


def _file_version(option) -> tuple:
    """What changes when the logins file named by ``option`` is edited (empty for a
    password)."""
    try:
        stat = os.stat(option)
    except (OSError, TypeError, ValueError):
        return ()
    return (stat.st_mtime_ns, stat.st_size, stat.st_ino)


def check_logins(checks: LoginChecks) -> None:
    """Check every ``--basic-auth`` login of this server process with ``checks``
    (:mod:`apps.ui.server.logins`; process-wide, a second call replaces them). The file is
    read at the first login and again after it changes; a file that has become unreadable or
    malformed refuses every login and logs its one sentence (never a password)."""
    _LOGIN_CHECKS[:] = [checks]

    def _validate(self, username: str, password: str) -> bool:
        option = _login_option(self)
        if not option:
            return False
        checks = _LOGIN_CHECKS[0]
        try:
            logins = (checks.logins_for(option) if isinstance(option, dict)
                      else _logins(checks, option, _file_version(option)))
        except LabInputError as error:
            logging.getLogger("bokeh").error("Inference Lab: login refused: %s", error)
            return False
        return logins.check(username, password)

    BasicLoginHandler._validate = _validate
    BasicLoginHandler.post = _post_login
    BasicLoginHandler.set_cookie = _set_login_cookie


_LOGIN_THREADS = concurrent.futures.ThreadPoolExecutor(max_workers=2,
                                                      thread_name_prefix="lab-login")
"""Threads that check passwords (a bcrypt check holds its thread, not the event loop)."""

TOO_MANY_LOGINS = ("Too many failed logins for this user name or from this address; try "
                   "again in {seconds} s.")


async def _post_login(self) -> None:
    """Panel's login form, checked off the event loop and throttled
    (the checks' throttle, :class:`~apps.ui.server.logins.LoginThrottle`); every failure and every refusal is
    logged once with the user name and the client address, never the password."""
    username = self.get_argument("username", "")
    password = self.get_argument("password", "")
    address = self.request.remote_ip or "unknown address"
    log = logging.getLogger("bokeh")
    checks = _LOGIN_CHECKS[0]
    wait = checks.throttle.retry_after(username, address)
    if wait:
        log.warning(checks.log_line(f"refused for {wait} s (too many failures)", username,
                                   address))
        self.set_status(429)
        self.set_header("Retry-After", str(wait))
        self.set_header("Content-Type", "text/plain; charset=utf-8")
        self.finish(TOO_MANY_LOGINS.format(seconds=wait))
        return
    loop = asyncio.get_running_loop()
    valid = await loop.run_in_executor(_LOGIN_THREADS, self._validate, username, password)
    if valid:
        self.set_current_user(username)
        self.redirect(_validate_next_url(self.get_cookie("next_url", pn.state.base_url)))
        return
    checks.throttle.failed(username, address)
    log.warning(checks.log_line("failed", username, address))
    self.redirect(self.request.uri + "?error=" + url_escape("Invalid username or password!"))


def _set_login_cookie(self, name, value, *args, **kwargs) -> None:
    """The login handler's cookies: ``SameSite=Lax``, and ``Secure`` when the request came over
    https (directly, or through a proxy trusted with ``--use-xheaders``)."""
    kwargs.setdefault("samesite", "Lax")
    if self.request.protocol == "https":
        kwargs.setdefault("secure", True)
    RequestHandler.set_cookie(self, name, value, *args, **kwargs)


def server_path(text: str) -> bool:
    """Whether ``text`` names a place on this server: the working directory, the home
    directory, anything under either, or another absolute path that exists here."""
    if not isinstance(text, str) or not os.path.isabs(text):
        return False
    places = {str(Path.cwd()), str(Path.home())}
    if any(text == place or text.startswith(place.rstrip(os.sep) + os.sep) for place in places):
        return True
    return text != os.sep and os.path.exists(text)


def hide_server_paths() -> int:
    """Blank every default of a Bokeh data model that names a server path (process-wide);
    return how many. Bokeh sends the definition of every data model class with every
    document, and panel-material-ui's ``FileSelector`` has the working directory as its
    ``directory`` default; the lab uses no file selector, so nothing reads these defaults."""
    hidden = 0
    for cls in list(Model.model_class_reverse_map.values()):
        if not is_DataModel(cls):
            continue
        for name in cls.__properties__:
            prop = cls.lookup(name).property
            if server_path(prop._default):
                prop._default = ""
                hidden += 1
    return hidden


class DimensionSlider(pmui.DiscreteSlider):
    """A slider over a dimension's values whose every move reaches the server.

    The lab serves with ``pn.extension(throttled=True)``, so a slider reports only its released
    value (``value_throttled``). panel-material-ui's ``DiscreteSlider`` (0.16) sends that as
    the option's index but reads it back as the option itself (an error on the server), and
    sends the browser the option, not its index, so a keyboard step landing on an index equal
    to that stale number sent nothing. Here both directions use the index."""

    def _process_param_change(self, msg):
        # New options with the value unchanged: the browser keeps its index, which now points
        # at another option (prefill → decode showed context 512 for 4,096), so it is re-sent.
        resend = "options" in msg and "value" not in msg
        msg = super()._process_param_change(msg)
        msg.pop("value_throttled", None)
        if resend and self.value in self.values:
            msg["value"] = self.values.index(self.value)
        if "options" in msg:  # whole numbers grouped as everywhere else: 131,072, not 131072
            msg["options"] = [f"{v:,}" if isinstance(v, numbers.Integral) and not isinstance(
                v, bool) else label for label, v in zip(msg["options"], self.values, strict=True)]
        if "value" in msg:  # an index by now
            msg["value_throttled"] = msg["value"]
        return msg

    def _process_property_change(self, msg):
        index = msg.get("value_throttled")
        if isinstance(index, int) and 0 <= index < len(self.labels):
            msg["value_throttled"] = self.labels[index]
        elif isinstance(index, int):  # past the options now offered (they changed while the
            # browser's move was on its way): ignored, not "ValueError: 2 not in list"
            msg = {k: v for k, v in msg.items() if k not in ("value", "value_throttled")}
        msg = super()._process_property_change(msg)
        if "value" in msg:
            msg["value_throttled"] = msg["value"]
        return msg


def param_widgets(panel: pn.Param) -> dict:
    """``{parameter name: widget}`` of a ``pn.Param`` (its private ``_widgets``)."""
    return panel._widgets


class CheckedInput:
    """Mixin for input widgets: a browser value the input's parameter refuses is not applied.

    Param raises ``ValueError`` when a value is out of bounds (or, for the page's strict
    selectors, not a listed id); set from a widget, that would end as a traceback in the
    server log. Here the value is checked first: a refused one is reported in one sentence
    (``report``), the browser is set back to the value in force, and nothing else happens.
    """

    check: Callable[[Any], str | None] | None = None
    report: Callable[[str | None], None] | None = None

    def _process_events(self, events: dict[str, Any]) -> None:
        values = {k: v for k, v in events.items() if k in ("value", "value_throttled")}
        if self.check is not None and values:
            try:
                changed = self._process_property_change(dict(values))  # type: ignore[attr-defined]
            except (ValueError, KeyError, TypeError):  # e.g. a label no option has
                changed = values
            for key in ("value", "value_throttled"):
                if key in changed and (problem := self.check(changed[key])):
                    if self.report is not None:
                        self.report(problem)
                    self.param.trigger("value")  # type: ignore[attr-defined]
                    return
        super()._process_events(events)  # type: ignore[misc]
        if self.report is not None and values:
            self.report(None)


class IntSlider(CheckedInput, pmui.EditableIntSlider):
    """An editable integer slider whose changes reach the server without Panel's debounce.

    Panel holds browser changes 50 ms to batch them (``_debounce``); the released value of a
    slider is one change, so it is processed on the next tick (``_priority_changes``).
    """

    _priority_changes: ClassVar[list[str]] = PRIORITY_CHANGES


TOO_LARGE = re.compile(r'File "(?P<name>.*)" \((?P<size>[\d.]+) MB\) exceeds maximum file size')
"""The browser's reason for a file over ``max_file_size`` (its "MB" are 2**20 bytes)."""


class LimitedFileInput(pmui.FileInput):
    """A file input that never holds more than ``max_file_size`` bytes of an upload.

    ``max_file_size`` makes the browser refuse a larger file before sending it; a client that
    ignores it is cut off here when its declared chunk count or the bytes received pass the
    limit (the chunks held so far are dropped). ``on_refused`` gets one sentence, also for an
    empty file (the browser sends no chunk for it, so nothing would change otherwise).

    The limits are a subclass's (:class:`apps.ui.parts.trace_upload.CappedFileInput`):
    :attr:`max_bytes`, :attr:`chunk_bytes`, :attr:`max_reason_chars`, :meth:`limit_sentence`
    and :meth:`shown_name`.
    """

    on_refused: Callable[[str], None] | None = None
    max_bytes: ClassVar[int]
    """The default ``max_file_size``, bytes."""
    chunk_bytes: ClassVar[int]
    """The default ``chunk_size``, bytes."""
    max_reason_chars: ClassVar[int]
    """Longest browser-side reason quoted when the browser stops an upload, characters."""

    def limit_sentence(self) -> str:
        """The limit as the end of a sentence."""
        raise NotImplementedError

    def shown_name(self, name: str) -> str:
        """A browser-given file name as shown back (to be escaped)."""
        raise NotImplementedError

    def empty_sentence(self) -> str:
        """What is said when the file chosen is empty (0 bytes)."""
        return "The file chosen is empty (0 bytes), so nothing was loaded."

    def limit_bytes(self) -> int:
        """Most bytes this input holds: its ``max_file_size``, else the class's ``max_bytes``."""
        return self.max_file_size or self.max_bytes

    def size_text(self) -> str:
        """The limit as a size ('20 MiB')."""
        return f"{self.limit_bytes() // MIB} MiB"

    def __init__(self, **params):
        params.setdefault("max_file_size", type(self).max_bytes)
        params.setdefault("chunk_size", type(self).chunk_bytes)
        super().__init__(**params)
        self._received = 0
        self._refused = False

    def _refuse(self, sentence: str) -> None:
        self._refused = True
        self._file_buffer.clear()
        self._buffer.clear()
        if self.on_refused is not None:
            self.on_refused(sentence)

    def _handle_msg(self, msg: Any) -> None:
        status = msg.get("status") if isinstance(msg, dict) else None
        if status == "initializing":
            self._received, self._refused = 0, False
            self._file_buffer.clear()
            self._buffer.clear()
        elif status == "upload_event":
            self._chunk(msg)
        elif status == "finished":
            if self._refused:
                self._send_msg({"status": "finished"})
            elif self._received == 0 and not self._buffer:  # only empty files were chosen
                self._send_msg({"status": "finished"})
                if self.on_refused is not None:
                    self.on_refused(self.empty_sentence())
            else:
                super()._handle_msg(msg)
        elif status == "error":
            reason = str(msg.get("error", ""))[:self.max_reason_chars]
            too_large = TOO_LARGE.match(reason)
            if too_large:  # its "MB" are MiB: said in the lab's own words and units
                self._refuse(f"The browser did not send {self.shown_name(too_large['name'])} "
                             f"({too_large['size']} MiB); {self.limit_sentence()}.")
            else:
                self._refuse(f"The browser did not send the file ({reason}); "
                             f"{self.limit_sentence()}.")

    def _chunk(self, msg: dict) -> None:
        if self._refused:
            return
        limit = self.limit_bytes()
        try:
            declared = int(msg["total_chunks"]) * self.chunk_size
            self._received += len(msg["data"])
        except (KeyError, TypeError, ValueError):
            self._refuse("The upload was malformed and has been dropped.")
            return
        if declared > limit + self.chunk_size or self._received > limit:
            name = self.shown_name(str(msg.get("name", "")))
            self._refuse(f"{name} is larger than {self.size_text()}; {self.limit_sentence()}.")
            return
        self._process_chunk(msg)


class NativeBundleImport(pn.custom.JSComponent):
    """Never placed on a page: defining it puts ``apps/ui/native_bundle_import.js`` in every
    page's head (Panel adds each loaded custom component's ``__javascript__`` to the page).

    Panel loads panel-material-ui's widget bundle (1.4 MB, React and Material UI) with
    ``importShim(url)``; in es-module-shims' shim mode, which Panel sets, that fetches the
    bundle, rewrites it and imports it from a new ``blob:`` URL on every page load, so the
    browser compiles it afresh each time and keeps no code cache. The bundle imports nothing,
    so the script hands just that URL to the browser's own ``import()`` (the shim again if it
    fails): same module, one copy per page, compiled code cached across loads. Measured in
    Chromium on repeat loads of experiment 1, two servers alternated: 2.17–2.35 s of CPU →
    1.84–1.90 s (``benchmarks/bench_page_load.py``,
    ``benchmarks/results/page-load-2026-12-07.json``). The bundle's lack of imports is checked by
    ``tests/apps/test_panel_compat.py``.
    """

    __javascript__: ClassVar[list[str]] = ["native_bundle_import.js"]
    _esm = "export function render() { return document.createElement('span') }"


BUNDLE_PATH = Path(pmui.__file__).parent / "dist" / "panel-material-ui.bundle.js"
"""panel-material-ui's widget bundle (served to pages as a static extension file)."""

IMPORT_STATEMENT = re.compile(r"(?:^|[;}\s])import\s*(?:[{*\"'(]|[A-Za-z_$][\w$]*\s+from\b)")
"""An ``import`` of another module (static, or ``import(``) in minified JavaScript."""


def bundle_imports(source: str) -> list[str]:
    """Every ``import`` of another module in ``source`` (a bundle the browser may load
    natively has none), each with a little context."""
    return [source[max(m.start() - 20, 0):m.end() + 40] for m in IMPORT_STATEMENT.finditer(source)]


class OffLoopFileDownload(pmui.FileDownload):
    """A download button whose file is made by :meth:`prepare` (a coroutine, so the server
    keeps answering while it runs) and handed to the browser by :meth:`send`.

    Panel's ``FileDownload`` runs a coroutine callback through ``_async_sync_data`` and sends a
    file with ``_sync_data``; both are private, hence here."""

    def __init__(self, **params):
        super().__init__(callback=self._coroutine_marker, embed=False, **params)

    async def _coroutine_marker(self):  # FileDownload runs coroutine callbacks asynchronously
        return None

    async def _async_sync_data(self) -> None:
        await self.prepare()

    async def prepare(self) -> None:
        """Make the file and :meth:`send` it (or say why not)."""
        raise NotImplementedError

    def send(self, data: bytes) -> None:
        """Give the browser ``data`` to save. The browser saves when the data changes, so a
        repeat download of the same bytes clears the last one first."""
        self.data = None
        self._sync_data(io.BytesIO(data))
