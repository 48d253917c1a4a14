"""``--json`` and its printing, shared by the subcommands (the ``calc`` input flags are generated
from the experiments' ``param`` classes: :mod:`cli.calc_generic`)."""

from __future__ import annotations

import argparse
import json
import math
import sys


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    """Add ``--json``."""
    parser.add_argument("--json", action="store_true",
                        help="print JSON instead of text (units as its 'units' key and the "
                             "key names say: '_ms' milliseconds, '_s' seconds, bytes, FLOP)")


def _clean(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


SCHEMA_VERSION = 1
"""Version of the layout of every ``--json`` record (its ``schema_version`` key): raised when
a key is renamed or removed or changes meaning, not when one is added."""


def print_json(payload) -> None:
    """Print ``payload`` as JSON (NaN and infinities as null), a record led by its
    ``schema_version``."""
    if isinstance(payload, dict):
        payload = {"schema_version": SCHEMA_VERSION, **payload}
    json.dump(_clean(payload), sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")
