"""What a ``calc`` flag needs beyond an input's ``param`` description: its metadata.

An experiment's inputs are its ``param`` parameters (name, default, bounds, ``doc``); the
command line (``cli/calc_generic.py``) makes one flag of each. Where the flag differs from what
the parameter alone says, the parameter carries a :class:`Flag` as ``metadata={"cli": …}``
(read with :func:`flag_of`): a model or GPU that may also be a file path, a trace read from
standard input, a value left unset so the calculation derives it, a second name. Plain data,
nothing of ``argparse``: ``lab`` knows nothing of the layers above.
"""

from __future__ import annotations

from dataclasses import dataclass

import param

MODEL_FILE = "a Hugging Face config.json"
GPU_FILE = "a GPU TOML file"
"""The files a model and a GPU input may name instead of a catalog id."""

CLI = "cli"
"""The key of a parameter's ``metadata`` holding its :class:`Flag`."""


@dataclass(frozen=True)
class Flag:
    """How one input appears as a ``calc`` flag (every field optional)."""

    name: str | None = None
    """The flag's name when it is not the parameter's (``page`` for experiment 6's ``block``)."""
    aliases: tuple[str, ...] = ()
    """Other names the flag is accepted under (``block``: its old name)."""
    group: str | None = None
    """The ``--help`` group the flag is listed in (default: ``inputs``)."""
    checked_by_point: bool = False
    """No ``argparse`` choices: the point function checks the value and names what is wrong
    in its own sentence (``tp 16``, a precision the GPU lacks)."""
    accepted: tuple = ()
    """Every value the point accepts, when more than the page offers (``--precision mxfp4``);
    shown in ``--help`` with ``checked_by_point``."""
    path: str = ""
    """The file the value may be a path to instead of a catalog id (``a Hugging Face
    config.json``, ``a GPU TOML file``); empty: a catalog id only."""
    stdin: bool = False
    """``-`` reads the value's file from standard input (``--trace -``)."""
    unset: bool = False
    """Left out, the flag parses as None and the calculation uses its own default or derives
    the value (``--decode-ms`` is derived with ``--decode-from``; ``--window`` absent is
    dense)."""
    default_shown: str | None = None
    """What ``--help`` says the default is, when not the parsed default (None with ``unset``;
    the shipped trace rather than its absolute path)."""


NO_FLAG = Flag()


def flag_of(parameter: param.Parameter) -> Flag:
    """The command-line metadata of ``parameter`` (an empty :class:`Flag` when it has none)."""
    return (parameter.metadata or {}).get(CLI, NO_FLAG)


def cli(**fields) -> dict:
    """``metadata`` for a parameter whose flag is ``Flag(**fields)``."""
    return {CLI: Flag(**fields)}
