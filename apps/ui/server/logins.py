"""Who may log in under ``--basic-auth``: one shared password, or a file of users.

The file holds one ``user:password`` line per reader (blank lines and ``#`` comments are
skipped), or a JSON map ``{"user": "password", …}``. A password may be written as a hash, the
way ``htpasswd`` writes it: bcrypt (``htpasswd -B``: ``$2y$…``, also ``$2a$``/``$2b$``) or
salt-less SHA-1 (``htpasswd -s``: ``{SHA}…``, weak: prefer bcrypt). Other hashes (``htpasswd``'s
default MD5 ``$apr1$``, crypt's ``$1$``/``$5$``/``$6$``) are refused when the file is read, so a
line never silently becomes a password equal to its own hash text. Every password is compared
in constant time (:func:`hmac.compare_digest`, :func:`bcrypt.checkpw`); a user the file does not
name costs the same check, so timing tells no one which users exist. Nothing here logs or
quotes a password: a malformed file is refused in one sentence naming its line.

No Panel import: the CLI reads the file before the server starts (``cli/serve_cmd.py``), and
the server's login handler checks each login against it (``apps/ui/panel_compat.py``).
"""

from __future__ import annotations

import base64
import collections
import hashlib
import hmac
import json
import math
import os
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import bcrypt

from lab.errors import LabInputError

BCRYPT_HASH = re.compile(r"\$2[aby]\$(0[4-9]|[12][0-9]|3[01])\$[./A-Za-z0-9]{53}")
"""A bcrypt hash as ``htpasswd -B`` writes it: ``$2y$``, the cost (4–31), 22 characters of
salt and 31 of hash."""
BCRYPT_PREFIXES = ("$2a$", "$2b$", "$2y$")
BCRYPT_MAX_BYTES = 72
"""bcrypt reads only the first 72 bytes of a password (``htpasswd -B`` hashes only those)."""
SHA_PREFIX = "{SHA}"
UNSUPPORTED_HASHES = {"$apr1$": "an MD5 ($apr1$) hash", "$1$": "an MD5-crypt ($1$) hash",
                      "$5$": "a SHA-256-crypt ($5$) hash", "$6$": "a SHA-512-crypt ($6$) hash",
                      "$argon2": "an Argon2 hash", "$md5": "an MD5 hash"}
"""Hash schemes the lab does not check, by the prefix that marks them."""
LOGINS_ENV = "INFERENCE_LAB_BASIC_AUTH"
"""Environment variable through which ``inference-lab serve`` hands the server its
``--basic-auth`` value (a shared password or a logins file): a process's command line is
readable by every local user (``ps``), its environment only by its owner."""

MAX_FILE_BYTES = 1024 * 1024
"""Largest logins file read, bytes (about ten thousand bcrypt lines)."""

MAX_BCRYPT_COST = 12
"""Dearest bcrypt cost accepted (``htpasswd -B -C 12``, about 0.25 s of one core per check;
each step doubles it, so one line of cost 31 would make every login take days)."""
DECOY_COST = 5
"""Cost of the bcrypt check an unknown user name pays (``htpasswd -B``'s default): fixed, so a
dear hash in the file does not make every guess at a user name dear."""

FAILURES_ALLOWED = 5
"""Failed logins a user name, or a client address, may have in :data:`FAILURE_WINDOW_S`; the
next attempt gets HTTP 429 until the oldest of them is that old."""
FAILURE_WINDOW_S = 60.0
"""Seconds a failed login counts against its user name and its client address."""
MAX_TRACKED = 10_000
"""Most user names and addresses whose failures are remembered at once (the oldest are
forgotten first), so a flood of made-up names cannot grow the server's memory."""


@dataclass(frozen=True)
class Password:
    """One stored password: as written (``plain``), or a bcrypt or ``{SHA}`` hash."""

    scheme: str
    """``"plain"``, ``"bcrypt"`` or ``"sha1"``."""
    stored: bytes
    """The password's UTF-8 bytes, the bcrypt hash, or the base64 SHA-1 digest."""

    def matches(self, candidate: str) -> bool:
        """Whether ``candidate`` is this password, in time that does not depend on where the
        two differ."""
        given = candidate.encode("utf-8", "surrogatepass")
        if self.scheme == "bcrypt":
            return bcrypt.checkpw(given[:BCRYPT_MAX_BYTES], self.stored)
        if self.scheme == "sha1":
            given = base64.b64encode(hashlib.sha1(given).digest())  # htpasswd -s
            return hmac.compare_digest(given, self.stored)
        # digests of equal length: the comparison's time tells nothing of the password's length
        return hmac.compare_digest(hashlib.sha256(given).digest(),
                                   hashlib.sha256(self.stored).digest())


def stored_password(text: str, where: str) -> Password:
    """The :class:`Password` written as ``text``, or one sentence naming ``where`` (e.g.
    ``"line 3 of users.txt (user alice)"``) why not; the sentence never quotes ``text``."""
    if not text:
        raise LabInputError(f"{where} has an empty password.")
    if text.startswith(BCRYPT_PREFIXES):
        if not BCRYPT_HASH.fullmatch(text):
            raise LabInputError(f"{where} has a malformed bcrypt hash (expected $2y$, a cost "
                                "of 04-31 and 53 characters, as htpasswd -B writes it).")
        cost = int(text[4:6])
        if cost > MAX_BCRYPT_COST:
            raise LabInputError(f"{where} has a bcrypt cost of {cost}, and the lab accepts at "
                                f"most {MAX_BCRYPT_COST} (each step doubles every login's "
                                f"time): write the line again with htpasswd -B -C "
                                f"{MAX_BCRYPT_COST} or less.")
        return Password("bcrypt", text.encode("ascii"))
    if text.startswith(SHA_PREFIX):
        digest = text.removeprefix(SHA_PREFIX)
        try:
            valid = len(base64.b64decode(digest, validate=True)) == hashlib.sha1().digest_size
        except ValueError:
            valid = False
        if not valid:
            raise LabInputError(f"{where} has a malformed {{SHA}} hash (expected 28 base64 "
                                "characters, as htpasswd -s writes them).")
        return Password("sha1", digest.encode("ascii"))
    for prefix, name in UNSUPPORTED_HASHES.items():
        if text.startswith(prefix):
            raise LabInputError(f"{where} has {name}, which the lab does not check; write the "
                                "line with htpasswd -B (bcrypt).")
    return Password("plain", text.encode("utf-8", "surrogatepass"))


def check_cost(password: Password) -> int:
    """How dear checking ``password`` is, in bcrypt's cost units (a bcrypt cost of c means
    2^c rounds; any other scheme counts as 0)."""
    return int(password.stored[4:6]) if password.scheme == "bcrypt" else 0


class Logins:
    """The users and passwords a login is checked against.

    ``Logins.shared_password(password)``: one password, any user name; ``Logins.from_file(path)``:
    the users of a file (see the module docstring).
    """

    def __init__(self, users: dict[str, Password] | None = None,
                 shared: Password | None = None) -> None:
        self._users = users or {}
        self._shared = shared
        # checked when the user is unknown: a bcrypt check at the fixed DECOY_COST when the
        # file holds bcrypt lines (else a plain comparison), never the dearest hash of the file
        schemes = {p.scheme for p in self._users.values()}
        self._decoy = (decoy_hash() if "bcrypt" in schemes
                       else next(iter(self._users.values()), None))

    @classmethod
    def shared_password(cls, password: str) -> Logins:
        """Every user name with this one password (``--basic-auth PASSWORD``)."""
        if not password:
            raise LabInputError("--basic-auth needs a password or a file of user:password "
                                "lines, not an empty value.")
        return cls(shared=Password("plain", password.encode("utf-8", "surrogatepass")))

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> Logins:
        """The users of the file at ``path``, or one sentence naming the file (and the line)
        that is wrong."""
        name = Path(path).name
        try:
            with open(path, "rb") as file:
                data = file.read(MAX_FILE_BYTES + 1)
        except OSError as error:
            raise LabInputError(f"The logins file {name} cannot be read "
                                f"({error.strerror or error}).") from None
        if len(data) > MAX_FILE_BYTES:
            raise LabInputError(f"The logins file {name} is larger than 1 MiB; it should hold "
                                "one user:password line per reader.")
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as error:
            line = data[:error.start].count(b"\n") + 1
            raise LabInputError(f"Line {line} of the logins file {name} is not UTF-8 text.") \
                from None
        users = (users_of_json(text, name) if text.lstrip().startswith("{")
                 else users_of_lines(text, name))
        if not users:
            raise LabInputError(f"The logins file {name} names no user; write one "
                                "user:password line per reader.")
        return cls(users=users)

    def __len__(self) -> int:
        return len(self._users)

    def check(self, user: str, password: str) -> bool:
        """Whether ``user`` may log in with ``password`` (constant time in the password; an
        unknown user costs a bcrypt check at :data:`DECOY_COST`, as much as a user whose line
        ``htpasswd -B`` wrote with its default cost). Seconds of CPU at a bcrypt line's cost:
        call it off the server's event loop."""
        if self._shared is not None:
            return self._shared.matches(password)
        stored = self._users.get(user)
        if stored is None:
            if self._decoy is not None:
                self._decoy.matches(password)
            return False
        return stored.matches(password)


_DECOY: Password | None = None


def decoy_hash() -> Password:
    """A bcrypt hash of a random password at :data:`DECOY_COST`, made once per process."""
    global _DECOY
    if _DECOY is None:
        salt = bcrypt.gensalt(DECOY_COST)
        _DECOY = Password("bcrypt", bcrypt.hashpw(os.urandom(16).hex().encode(), salt))
    return _DECOY


def users_of_lines(text: str, name: str) -> dict[str, Password]:
    """The users of ``user:password`` lines (blank lines and ``# comments`` skipped)."""
    users: dict[str, Password] = {}
    first_line: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        user, colon, password = line.partition(":")
        if not colon or not user.strip():
            raise LabInputError(f"Line {number} of the logins file {name} is not a "
                                "user:password line (a user name, a colon, a password).")
        if user != user.strip():
            raise LabInputError(f"Line {number} of the logins file {name} has spaces around "
                                "its user name.")
        if user in users:
            raise LabInputError(f"Line {number} of the logins file {name} names the user "
                                f"{user_shown(user)} again (first on line {first_line[user]}).")
        users[user] = stored_password(password, f"Line {number} of the logins file {name} "
                                                f"(user {user_shown(user)})")
        first_line[user] = number
    return users


def users_of_json(text: str, name: str) -> dict[str, Password]:
    """The users of a JSON map ``{"user": "password", …}``."""
    def no_repeats(pairs: list[tuple[str, object]]) -> dict:
        seen: dict = {}
        for key, value in pairs:
            if key in seen:
                raise LabInputError(f"The logins file {name} names the user {user_shown(key)} "
                                    "twice; keep one entry per user.")
            seen[key] = value
        return seen

    try:
        data = json.loads(text, object_pairs_hook=no_repeats)
    except json.JSONDecodeError as error:
        raise LabInputError(f"Line {error.lineno} of the logins file {name} is not valid "
                            f"JSON ({error.msg}).") from None
    if not isinstance(data, dict):
        raise LabInputError(f"The logins file {name} is not a JSON map of user names to "
                            "passwords.")
    return users_of_map(data, f"The logins file {name}")


def users_of_map(data: dict, name: str) -> dict[str, Password]:
    """The users of a map of user names to passwords; ``name`` says where it comes from."""
    users: dict[str, Password] = {}
    for user, password in data.items():
        if not isinstance(user, str) or not user.strip() or not isinstance(password, str):
            raise LabInputError(f"{name} maps the user {user_shown(user)} to something other "
                                "than a password string.")
        users[user] = stored_password(password, f"{name} (user {user_shown(user)})")
    return users


def user_shown(user: object) -> str:
    """A user name as a sentence quotes it: short and on one line (``repr`` escapes control
    characters; bidirectional controls such as U+202E are escaped too)."""
    text = str(user)
    shown = repr(text if len(text) <= 40 else text[:39] + "…")
    return "".join(f"\\u{ord(c):04x}" if c in BIDI_CONTROLS else c for c in shown)


BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e"
                          "\u2066\u2067\u2068\u2069")
"""Characters that reorder the text around them when shown (Unicode's bidirectional controls)."""


def logins_for(option: str | dict) -> Logins:
    """The logins ``--basic-auth OPTION`` asks for: the users of the file it names, or, when
    it names no file, ``OPTION`` as the one shared password. A value that looks like a path
    (it holds a ``/``) but names no file is refused in one sentence, so a mistyped path never
    becomes the password. A map (``pn.serve(basic_auth={...})``) holds the users itself."""
    if isinstance(option, dict):
        return Logins(users=users_of_map(option, "The basic_auth map"))
    if os.path.isfile(option):
        return Logins.from_file(option)
    if "/" in option or os.sep in option:
        raise LabInputError("--basic-auth names no file (a value with a slash is read as a "
                            "path; a shared password cannot hold one).")
    return Logins.shared_password(option)


class LoginThrottle:
    """Failed logins counted per user name and per client address: after
    :data:`FAILURES_ALLOWED` failures within :data:`FAILURE_WINDOW_S`, either one is refused
    until the oldest of them is that old (the server answers HTTP 429 with ``Retry-After``).
    Thread-safe; remembers at most :data:`MAX_TRACKED` names and addresses."""

    def __init__(self, allowed: int = FAILURES_ALLOWED, window_s: float = FAILURE_WINDOW_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.allowed, self.window_s, self.clock = allowed, window_s, clock
        self._failures: collections.OrderedDict[tuple[str, str], collections.deque] = \
            collections.OrderedDict()
        self._lock = threading.Lock()

    def _recent(self, key: tuple[str, str], now: float) -> collections.deque:
        times = self._failures.get(key)
        if times is None:
            return collections.deque()
        while times and now - times[0] >= self.window_s:
            times.popleft()
        if not times:
            del self._failures[key]
        return times

    def retry_after(self, user: str, address: str) -> int:
        """Whole seconds until ``user`` may try again from ``address``; 0: now."""
        now = self.clock()
        wait = 0.0
        with self._lock:
            for key in (("user", user), ("address", address)):
                times = self._recent(key, now)
                if len(times) >= self.allowed:
                    wait = max(wait, times[-self.allowed] + self.window_s - now)
        return math.ceil(wait) if wait > 0 else 0

    def failed(self, user: str, address: str) -> None:
        """Count a failed login of ``user`` from ``address``."""
        now = self.clock()
        with self._lock:
            for key in (("user", user), ("address", address)):
                times = self._recent(key, now)
                times.append(now)
                self._failures[key] = times
                self._failures.move_to_end(key)
            while len(self._failures) > MAX_TRACKED:
                self._failures.popitem(last=False)


def login_log_line(outcome: str, user: str, address: str) -> str:
    """One log line about a login attempt: the outcome, the user name (quoted, cut, control
    characters escaped) and the client address; never the password."""
    return f"Inference Lab: login {outcome} for user {user_shown(user)} from {address}."
