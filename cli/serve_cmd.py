"""``inference-lab serve``: the lab in the browser, landing page at ``/``.

Runs ``panel serve`` on the lab's app script (``apps/inference_lab.py``) with that app as the
site index; the team-serving options are its own flags, and any other ``panel serve`` option
goes after ``--``. Panel is imported only by the server process this command starts, never by ``lab``.
"""

from __future__ import annotations

import argparse
import errno
import importlib.util
import json
import os
import re
import secrets
import socket
import sys
from pathlib import Path

from apps.ui.server.logins import LOGINS_ENV, logins_for
from apps.ui.server.page_gate import LIMIT_ENV, configured_limit
from cli.storage_flags import add_storage_option
from lab.errors import LabInputError
from lab.units import MIB
from sweeps.catalog_of_datasets import DATASETS_ENV

APP_MODULE = "apps.inference_lab"
"""The app script's module; its file is what ``panel serve`` runs."""

SETUP_MODULE = "apps.ui.views.serve_setup"
"""Script ``panel serve --setup`` runs before serving: it builds every page once."""
LOGINS_MODULE = "apps.ui.server.logins"
"""The module checking logins; the lab's login page is beside it."""
LOGIN_PAGE = "login.html"
"""The lab's login page, beside :data:`LOGINS_MODULE`: Panel's own loads images from a CDN. A
``--basic-login-template`` after ``--`` comes later on the command line and replaces it."""
WEBSOCKET_MAX_MESSAGE_BYTES = 4 * MIB
"""Largest websocket message the server reads, bytes: uploads arrive in 1 MiB pieces, and a
larger message closes that connection before it is held (Bokeh's default is 20 MiB)."""


def app_script(module: str = APP_MODULE) -> Path:
    """Path of the app script (or another script of ``apps``), found through the package."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin:
        raise LabInputError("The lab's apps are not installed; run `pip install -e .` from "
                            "the repository.")
    return Path(spec.origin)


def panel_command(args: argparse.Namespace) -> list[str]:
    """The ``panel serve`` command line for the parsed arguments."""
    script = app_script()
    cmd = [sys.executable, "-m", "panel", "serve", str(script), "--index", script.stem,
           "--port", str(args.port), "--address", args.address,
           "--num-procs", str(args.num_procs),
           "--websocket-max-message-size", str(WEBSOCKET_MAX_MESSAGE_BYTES)]
    origins = args.allow_websocket_origin or [f"{host}:{args.port}" for host in
                                              ("localhost", "127.0.0.1", args.address)]
    for origin in dict.fromkeys(origins):
        cmd += ["--allow-websocket-origin", origin]
    if args.basic_auth is not None:  # the password and the secret: see server_environment
        cmd += ["--basic-login-template", str(app_script(LOGINS_MODULE).with_name(LOGIN_PAGE))]
    cmd += ["--setup", str(app_script(SETUP_MODULE))]
    if args.num_procs == 1:
        cmd.append("--warm")
    if args.prefix:
        cmd += ["--prefix", checked_prefix(args.prefix)]
    if args.use_xheaders:
        cmd.append("--use-xheaders")
    if args.liveness:
        cmd.append("--liveness")  # GET <prefix>/liveness answers while the server runs, no login
    if args.show:
        cmd.append("--show")
    return cmd + checked_passthrough(args.panel_options)


LOGIN_ON = "on"
"""``PANEL_BASIC_AUTH``'s value under ``inference-lab serve``: it only turns Panel's login on;
the logins themselves come from :data:`~apps.ui.server.logins.LOGINS_ENV`."""


def server_environment(args: argparse.Namespace) -> dict[str, str]:
    """The secrets of ``--basic-auth`` and ``--cookie-secret``, for the server's environment.

    Not on ``panel serve``'s command line, which every local user can read (``ps``): the
    environment of a process is readable by its owner only. Panel reads ``PANEL_BASIC_AUTH``
    (login on) and ``PANEL_COOKIE_SECRET``; the lab's login check reads
    :data:`~apps.ui.server.logins.LOGINS_ENV`.
    """
    if args.basic_auth is None:
        return {}
    return {LOGINS_ENV: checked_basic_auth(args.basic_auth), "PANEL_BASIC_AUTH": LOGIN_ON,
            "PANEL_COOKIE_SECRET": (args.cookie_secret or os.environ.get("PANEL_COOKIE_SECRET")
                                    or secrets.token_hex(32))}


def checked_basic_auth(value: str) -> str:
    """``--basic-auth``'s value as the server takes it: a logins file, read and checked now
    (:mod:`apps.ui.server.logins`: one sentence naming a malformed line, never quoting a password)
    and passed by its absolute path; else the one shared password as given."""
    logins_for(value)
    return str(Path(value).resolve()) if os.path.isfile(value) else value


OWN_OPTIONS = ("--port", "--address", "--num-procs", "--basic-auth", "--cookie-secret",
               "--prefix", "--use-xheaders", "--liveness", "--show", "--index", "--setup",
               "--warm", "--websocket-max-message-size", "--allow-websocket-origin")
"""``panel serve`` options this command sets itself: not accepted after ``--``."""


def checked_passthrough(options: list[str]) -> list[str]:
    """Extra ``panel serve`` options given after ``--``, or one sentence why not.

    Options this command sets itself (its own flags, the app script, the warm-up) are refused
    so the two never disagree; any other ``panel serve`` option (``--keep-alive 1000``,
    ``--session-token-expiration 600``, ``--ssl-certfile FILE``, …) is passed on as given, and
    ``panel serve`` reports an option it does not know.
    """
    for option in options:
        name = option.split("=", 1)[0]
        if name in OWN_OPTIONS:
            raise LabInputError(f"{name} after -- is set by inference-lab serve itself; give it "
                                "before -- as inference-lab serve's own option.")
    if options and not options[0].startswith("-"):
        raise LabInputError(f"{options[0]!r} after -- is not a panel serve option; the app "
                            "script is set by inference-lab serve itself.")
    return list(options)


PREFIX_SEGMENT = re.compile(r"[A-Za-z0-9._~-]+")
"""One segment of a URL prefix: letters, digits and ``. _ ~ -``."""


def checked_prefix(prefix: str) -> str:
    """``prefix`` as ``/a/b`` (slashes at either end optional), or one sentence why not."""
    segments = prefix.strip("/").split("/")
    if not all(PREFIX_SEGMENT.fullmatch(s) and s not in (".", "..") for s in segments):
        raise LabInputError(f"--prefix {prefix!r} is not a URL path like /lab (letters, digits "
                            "and . _ ~ - between slashes).")
    return "/" + "/".join(segments)


def checked_datasets(folder: str) -> str:
    """``--datasets``' folder as an absolute path (an object store prefix, ``s3://bucket/grids/``,
    as given once its bucket answers), or one sentence when it is no folder."""
    from sweeps.object_store import is_url

    if is_url(folder):
        from sweeps.remote_grid import check_prefix

        return check_prefix(folder)
    path = Path(folder).expanduser()
    if not path.is_dir():
        raise LabInputError(f"--datasets {folder!r} is not a folder; give the folder holding "
                            "the NAME.zarr datasets the grid explorer lists.")
    return str(path.resolve())


def pages_at_once(args: argparse.Namespace) -> str | None:
    """The server's page-load limit (:data:`LIMIT_ENV`) for the parsed arguments: as given;
    else None when the environment sets it already (checked) or with one process (the
    server's default, one per core); else ``"0"`` (none): several processes would each keep
    a line of their own. A negative limit is refused in one sentence."""
    if args.pages_at_once is not None:
        if args.pages_at_once < 0:
            raise LabInputError(f"--pages-at-once {args.pages_at_once} is negative (0 means no "
                                "limit).")
        return str(args.pages_at_once)
    try:
        configured_limit()  # a value set in the environment must be one the server takes
    except ValueError as error:
        raise LabInputError(str(error)) from None
    if LIMIT_ENV in os.environ:
        return None
    return "0" if args.num_procs != 1 else None


def check_port(address: str, port: int) -> None:
    """Refuse, in one sentence, a port the server could not listen on at ``address``: taken by
    another program, or privileged. Checked before the server starts, so a taken port is said at
    once rather than after the pages are prepared. Binds as the server does (every address the
    name resolves to, ``SO_REUSEADDR``) and closes at once; port 0 (any) is not checked."""
    if port == 0:
        return
    try:
        found = socket.getaddrinfo(address or None, port, socket.AF_UNSPEC, socket.SOCK_STREAM,
                                   0, socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError):
        raise LabInputError(f"--address {address!r} is not an address this machine can listen "
                            "on (it does not resolve).") from None
    for family, kind, proto, _, where in dict.fromkeys(found):
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(where)
            except OSError as error:
                if error.errno == errno.EADDRINUSE:
                    raise LabInputError(f"Port {port} at {address} is already in use (another "
                                        "server?); stop it or choose another with --port.") from None
                if error.errno == errno.EACCES:
                    raise LabInputError(f"Port {port} needs administrator rights on this machine; "
                                        "choose one above 1023 with --port.") from None
                # an address family the machine lacks (no IPv6): the server skips it too


def _run(args: argparse.Namespace) -> int:
    if args.port < 0 or args.port > 65535:
        raise LabInputError(f"Port {args.port} is not between 0 and 65535.")
    if args.num_procs < 0:
        raise LabInputError(f"--num-procs {args.num_procs} is negative (0 means one per CPU).")
    env = dict(os.environ)  # the server's environment; this process's own is left as it was
    if args.storage_option:  # secrets too: the server's environment, never its command line
        from sweeps.object_store import OPTIONS_ENV, parse_storage_options, set_storage_options

        options = parse_storage_options(args.storage_option)
        set_storage_options(options)
        env[OPTIONS_ENV] = json.dumps(options)
    if args.datasets is not None:
        env[DATASETS_ENV] = checked_datasets(args.datasets)  # read by the grid page
    limit = pages_at_once(args)
    if limit is not None:
        env[LIMIT_ENV] = limit  # read by the server's setup script
    cmd = panel_command(args)
    env.update(server_environment(args))  # the server inherits it through execve
    prefix = checked_prefix(args.prefix) if args.prefix else ""
    check_port(args.address, args.port)  # last: every other refusal is said without the port
    print(f"Serving Inference Lab at http://{args.address}:{args.port}{prefix}/ once its main pages are "
          "prepared, a few seconds from now (Ctrl+C stops).", file=sys.stderr, flush=True)
    os.execve(cmd[0], cmd, env)  # the server replaces this process: signals reach it directly
    return 0


def register(subparsers) -> None:
    """Add the ``serve`` subcommand."""
    parser = subparsers.add_parser(
        "serve", help="serve the lab in the browser (landing page at /)",
        description="Serve every page of the lab with Panel; the landing page is at /.")
    parser.add_argument("--port", type=int, default=5006, help="port (default 5006; 0 = any)")
    parser.add_argument("--address", default="localhost",
                        help="address to listen on (default localhost; 0.0.0.0 for all)")
    parser.add_argument("--num-procs", type=int, default=1,
                        help="server processes (default 1; 0 = one per CPU)")
    parser.add_argument("--pages-at-once", type=int, default=None, metavar="N",
                        help="pages that load at once; a reader who comes while N load gets "
                        "a small waiting page that opens the page on its turn (default: one "
                        "per CPU core with one process, no limit with several; 0 = no limit)")
    parser.add_argument("--basic-auth", metavar="PASSWORD_OR_FILE", default=None,
                        help="require a login: one shared password, or a file of "
                        "user:password lines (passwords may be htpasswd -B bcrypt hashes) "
                        "or a JSON map, checked at start")
    parser.add_argument("--cookie-secret", default=None,
                        help="cookie secret for --basic-auth (default: random per start)")
    parser.add_argument("--allow-websocket-origin", action="append", metavar="HOST[:PORT]",
                        help="extra origin allowed to connect (repeatable); default: this "
                        "address and localhost at the port")
    parser.add_argument("--prefix", default=None, metavar="PATH",
                        help="serve under this URL path, e.g. /lab behind a reverse proxy")
    parser.add_argument("--use-xheaders", action="store_true",
                        help="trust a reverse proxy's X-Real-Ip / X-Forwarded-For / "
                        "X-Scheme / X-Forwarded-Proto headers")
    parser.add_argument("--liveness", action=argparse.BooleanOptionalAction, default=True,
                        help="answer GET <prefix>/liveness without a login, for health checks "
                        "(default on)")
    parser.add_argument("--datasets", metavar="DIR", default=None,
                        help="folder whose NAME.zarr datasets the grid explorer lists, or an "
                        "object store prefix (s3://bucket/grids/) "
                        "(default: the lab's data directory)")
    add_storage_option(parser)
    parser.add_argument("--show", action="store_true", help="open a browser tab")
    parser.add_argument("panel_options", nargs="*", metavar="-- PANEL_SERVE_OPTION",
                        help="any other `panel serve` option, after --, passed on as given "
                        "(e.g. -- --keep-alive 1000)")
    parser.set_defaults(func=_run)
