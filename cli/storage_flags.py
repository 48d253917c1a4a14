"""``--storage-option KEY=VALUE``: the fsspec options of object store URLs, shared by ``sweep``,
``export`` and ``serve`` (parsed by :func:`sweeps.object_store.parse_storage_options`)."""

from __future__ import annotations

import argparse

STORAGE_OPTION_HELP = ("an fsspec option of an object store URL (repeatable), e.g. "
                       "endpoint_url=http://localhost:9000; a secret is read from the "
                       "environment (secret=env:NAME) or a file (secret=@FILE), never given "
                       "here, where ps shows it; credentials otherwise come the cloud's usual "
                       "way (environment variables, config files, FSSPEC_S3_* variables)")


def add_storage_option(parser: argparse.ArgumentParser) -> None:
    """Add the repeatable ``--storage-option KEY=VALUE``."""
    parser.add_argument("--storage-option", action="append", metavar="KEY=VALUE",
                        help=STORAGE_OPTION_HELP)
