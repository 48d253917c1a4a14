"""Reading a file a user named on the command line: one sentence for anything but a readable,
regular file within the size the lab reads."""

from __future__ import annotations

import stat
from pathlib import Path

from lab.errors import LabInputError, shown


def check_named(path: str | Path, what: str) -> None:
    """One sentence for an empty file name (``--trace ''``): ``Path("")`` is the current
    folder, which is not what was meant."""
    if isinstance(path, str) and not path.strip():
        raise LabInputError(f"The {what.lower()} file name is empty; give a file.")


def read_user_file(path: Path, name: str, what: str, max_bytes: int) -> bytes:
    """The bytes of the regular file at ``path`` (at most ``max_bytes``).

    ``name`` is the path as shown in messages, ``what`` the kind of file ("Trace",
    "Measurements"): every failure is one :class:`LabInputError` sentence naming both.
    """
    check_named(name, what)
    try:
        info = path.stat()
        if stat.S_ISDIR(info.st_mode):
            raise LabInputError(f"{what} path {name} is a directory, not a CSV file.")
        if not stat.S_ISREG(info.st_mode):
            raise LabInputError(f"{what} path {name} is not a regular file.")
        if info.st_size > max_bytes:
            raise LabInputError(f"{what} file {name} is larger than the {max_bytes:,} "
                                "bytes the lab reads.")
        return path.read_bytes()
    except FileNotFoundError:
        raise LabInputError(f"{what} file {name} does not exist.") from None
    except IsADirectoryError:
        raise LabInputError(f"{what} path {name} is a directory, not a CSV file.") from None
    except OSError as exc:
        raise LabInputError(f"{what} file {name} cannot be read ({exc.strerror}).") from None
    except ValueError as exc:
        if isinstance(exc, LabInputError):
            raise
        raise LabInputError(f"{what} path {shown(name)} is not a usable file name.") from None
