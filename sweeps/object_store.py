"""Object storage for grids: fsspec URLs (``s3://``, ``gs://``, ``abfs://``, …), their storage
options, bounded timeouts and retries, and every failure of a store as one sentence.

A *URL* is any ``scheme://…`` string (:func:`is_url`). A URL whose scheme fsspec knows and whose
filesystem package is installed (``s3fs`` ships with the lab; ``gcsfs`` for ``gs://`` and
``adlfs`` for ``abfs://`` are installed by hand) is read and written through fsspec; any other
scheme is refused in one sentence, so a URL never becomes a local folder named ``s3:``.

Credentials and endpoints come the standard way: the cloud's environment variables and config
files (``AWS_ACCESS_KEY_ID``, ``AWS_PROFILE``, ``~/.aws/credentials``, ``AWS_ENDPOINT_URL``,
``GOOGLE_APPLICATION_CREDENTIALS``, ``AZURE_STORAGE_…``), fsspec's ``FSSPEC_<PROTOCOL>_<KEY>``
variables, and repeatable ``--storage-option KEY=VALUE`` (:func:`parse_storage_options`). A
secret is never taken from the command line, where every local user can read it (``ps``): give
``KEY=env:NAME`` (read from the environment) or ``KEY=@FILE`` (read from a file).

This module imports nothing heavy; fsspec loads on first use.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from lab.errors import LabInputError

URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
"""What makes a string a URL rather than a path."""
OPTIONS_ENV = "INFERENCE_LAB_STORAGE_OPTIONS"
"""Environment variable holding the storage options as JSON (how ``serve`` passes them to its
server process: the environment is readable by its owner only, the command line by everyone)."""
SECRET_WORDS = ("secret", "key", "token", "password", "credential", "sas", "connection_string",
                "signature")
"""Storage-option names whose value is a secret: refused as a literal on the command line."""
NOT_SECRET = ("endpoint_url", "region_name", "key_prefix")
"""Names holding a secret word that are not secrets."""
PACKAGES = {"s3": "s3fs", "s3a": "s3fs", "gs": "gcsfs", "gcs": "gcsfs", "abfs": "adlfs",
            "abfss": "adlfs", "az": "adlfs"}
"""The object stores the lab keeps grids in (fsspec's asynchronous filesystems, which Zarr
writes through), and the package each one's filesystem lives in; any other scheme is refused."""
CONNECT_TIMEOUT_S = 5
"""Seconds to open a connection to the store before a retry."""
READ_TIMEOUT_S = 30
"""Seconds a request may wait for the store's answer before a retry."""
MAX_ATTEMPTS = 3
"""Attempts of one request (the first and two retries, backing off) before it fails."""
S3_DEFAULTS: dict[str, Any] = {
    "config_kwargs": {"connect_timeout": CONNECT_TIMEOUT_S, "read_timeout": READ_TIMEOUT_S,
                      "retries": {"max_attempts": MAX_ATTEMPTS, "mode": "standard"}},
}
"""s3fs's options unless given: every request bounded (timeouts, retries)."""
OTHER_DEFAULTS: dict[str, dict[str, Any]] = {"gs": {"timeout": READ_TIMEOUT_S},
                                             "gcs": {"timeout": READ_TIMEOUT_S}}

_options: dict[str, Any] | None = None


def is_url(value: object) -> bool:
    """Whether ``value`` is a ``scheme://…`` string (a URL, not a local path)."""
    return isinstance(value, str) and bool(URL.match(value))


def scheme(url: str) -> str:
    """The scheme of ``url``, lower case (``s3``)."""
    return url.split("://", 1)[0].lower()


def _secret(key: str) -> bool:
    low = key.lower()
    return low not in NOT_SECRET and any(word in low for word in SECRET_WORDS)


def _value(key: str, text: str, flag: str) -> Any:
    """A storage option's value: ``env:NAME``, ``@FILE``, JSON (``true``, ``3``, ``{…}``) or text."""
    if text.startswith("env:"):
        name = text[4:]
        if name not in os.environ:
            raise LabInputError(f"{flag} {key}=env:{name} names the environment variable {name}, "
                                "which is not set.")
        return _structured(os.environ[name])
    if text.startswith("@"):
        try:
            with open(os.path.expanduser(text[1:]), encoding="utf-8") as handle:
                return _structured(handle.read().strip())
        except OSError as exc:
            raise LabInputError(f"{flag} {key}=@{text[1:]} cannot be read "
                                f"({(exc.strerror or type(exc).__name__).lower()}).") from None
    try:
        value = json.loads(text)
    except ValueError:
        value = text
    if _secret(key) or _holds_secret(value):
        raise LabInputError(f"{flag} {key}=… would show the secret to every user of this machine "
                            f"(ps); give {key}=env:NAME (an environment variable) or {key}=@FILE.")
    return value


def _structured(text: str) -> Any:
    """A value read from the environment or a file: a JSON object or list as such (e.g.
    ``client_kwargs``), anything else as the text it is (a secret stays a string)."""
    if text[:1] in "{[" and text:
        try:
            return json.loads(text)
        except ValueError:
            pass
    return text


def _holds_secret(value: Any) -> bool:
    """Whether a JSON value names a secret-like key at any depth (``client_kwargs={…}``)."""
    if isinstance(value, dict):
        return any(_secret(str(k)) or _holds_secret(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_holds_secret(v) for v in value)
    return False


def parse_storage_options(items: Iterable[str] | None,
                          flag: str = "--storage-option") -> dict[str, Any]:
    """``{key: value}`` from ``KEY=VALUE`` strings (see :func:`_value`), or one sentence why not."""
    options: dict[str, Any] = {}
    for item in items or ():
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise LabInputError(f"{flag} {item.split('=')[0][:40]!r} must look like KEY=VALUE "
                                "(e.g. endpoint_url=http://localhost:9000).")
        if key in options:
            raise LabInputError(f"{flag} {key} is given twice.")
        options[key] = _value(key, text, flag)
    return options


def set_storage_options(options: Mapping[str, Any] | None) -> None:
    """Use ``options`` for every URL this process opens (the command line's, parsed); None or
    none given: the environment's (:data:`OPTIONS_ENV`)."""
    global _options
    _options = dict(options) if options else None


@contextmanager
def using_storage_options(options: Mapping[str, Any] | None) -> Iterator[None]:
    """:func:`set_storage_options` for the duration of a command, then the previous ones."""
    global _options
    previous = _options
    set_storage_options(options)
    try:
        yield
    finally:
        _options = previous


def storage_options() -> dict[str, Any]:
    """The options given to this process: :func:`set_storage_options`, else :data:`OPTIONS_ENV`."""
    if _options is not None:
        return dict(_options)
    raw = os.environ.get(OPTIONS_ENV)
    if not raw:
        return {}
    try:
        loaded = json.loads(raw)
    except ValueError:
        loaded = None
    if not isinstance(loaded, dict):
        raise LabInputError(f"${OPTIONS_ENV} is not a JSON object of storage options.")
    return loaded


def _merged(base: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _merged(out[key], value)
        else:
            out[key] = value
    return out


def options_for(url: str, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The fsspec options for ``url``: the bounded timeouts and retries, then ``options`` (or
    this process's, :func:`storage_options`)."""
    proto = scheme(url)
    defaults = S3_DEFAULTS if proto in ("s3", "s3a") else OTHER_DEFAULTS.get(proto, {})
    return _merged(defaults, storage_options() if options is None else options)


def check_url(url: str, what: str = "--out") -> str:
    """``url`` without a trailing slash when its scheme can be used, else one sentence why not."""
    proto = scheme(url)
    from fsspec.registry import known_implementations

    if proto in ("file", "local"):
        raise LabInputError(f"{what} {url} is a file:// URL; give the local path itself "
                            f"({url.split('://', 1)[1] or '/'}).")
    if proto not in PACKAGES or proto not in known_implementations:
        raise LabInputError(f"{what} {url} is a URL of a kind the lab cannot store grids in "
                            f"('{proto}://'); give a local path or an object store URL (s3://, "
                            "gs://, abfs://).")
    package = PACKAGES[proto]
    try:
        from fsspec.registry import get_filesystem_class

        get_filesystem_class(proto)
    except ImportError:
        raise LabInputError(f"{what} {url} needs the package {package} to reach {proto}:// "
                            f"storage; run `pip install {package}`.") from None
    rest = url.split("://", 1)[1].strip("/")
    if not rest:
        raise LabInputError(f"{what} {url} names no bucket; give e.g. {proto}://BUCKET/grids/.")
    return f"{proto}://{rest}"


S3FS_RETRIES = 1
"""s3fs's own attempts per request around botocore's (which already retries
:data:`MAX_ATTEMPTS` times): its default, 5, would multiply a slow store's wait fivefold."""


def bound_retries(url: str) -> None:
    """Let botocore alone retry a request to ``url`` (s3fs's own loop set to one attempt:
    ``S3FileSystem.retries`` is a class attribute, so this is process-wide; the lab's sweep
    and server processes and Dask workers call it before their first request)."""
    if scheme(url) in ("s3", "s3a"):
        import s3fs

        s3fs.S3FileSystem.retries = S3FS_RETRIES


def filesystem(url: str, options: Mapping[str, Any] | None = None):
    """``(fsspec filesystem, path inside it)`` for ``url`` with :func:`options_for`."""
    from fsspec.core import url_to_fs

    bound_retries(url)

    try:
        return url_to_fs(url, **options_for(url, options))
    except (TypeError, ValueError) as exc:
        raise LabInputError(f"The storage options for {url} are not ones its filesystem takes "
                            f"({type(exc).__name__}: {str(exc)[:160]}).") from None


def join(url: str, *parts: str) -> str:
    """``url`` with ``parts`` appended, one slash between each."""
    return "/".join([url.rstrip("/"), *(p.strip("/") for p in parts)])


def bucket(url: str) -> str:
    """The bucket (container) of ``url``."""
    return url.split("://", 1)[1].split("/", 1)[0]


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    while exc is not None and exc not in seen:
        seen.append(exc)
        exc = exc.__cause__ or exc.__context__
    return seen


def reason(exc: BaseException, url: str) -> str | None:
    """Why a request on ``url`` failed, in plain words, or None when it is not a store's error:
    a missing bucket, a refused permission, an endpoint that cannot be reached, a request that
    timed out."""
    names = " ".join(type(e).__name__ for e in _chain(exc))
    text = " ".join(str(e) for e in _chain(exc)).lower()
    if "nosuchbucket" in text or "bucket does not exist" in text or "containernotfound" in text:
        return f"the bucket '{bucket(url)}' does not exist"
    if isinstance(exc, PermissionError) or "accessdenied" in text or "forbidden" in text \
            or "invalidaccesskeyid" in text or "signaturedoesnotmatch" in text \
            or "authorization" in names.lower():
        return "access was refused (check the credentials and the bucket's permissions)"
    if "endpointresolution" in names.lower() or "not a valid uri" in text \
            or "invalid endpoint" in text:
        return "the store's endpoint is not a valid URL (check endpoint_url)"
    if "nocredentials" in names.lower() or "unable to locate credentials" in text:
        return ("no credentials were found (set the cloud's usual environment variables or "
                "config files, or --storage-option key=env:NAME secret=env:NAME)")
    if "timeout" in names.lower() or "timed out" in text or "timeout" in text:
        return (f"the store did not answer within {READ_TIMEOUT_S} s after {MAX_ATTEMPTS} "
                "attempts")
    if "endpointconnection" in names.lower() or "connect" in names.lower() \
            or "could not connect" in text or "cannot connect" in text \
            or "name or service not known" in text or "connection refused" in text:
        return f"the store's endpoint could not be reached after {MAX_ATTEMPTS} attempts"
    return None


def store_error(exc: BaseException, url: str, doing: str) -> LabInputError | None:
    """One sentence for a store's failure while ``doing`` (``"read"``…), or None."""
    why = reason(exc, url)
    if why is None:
        return None
    return LabInputError(f"Could not {doing} {url}: {why}.")
