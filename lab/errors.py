"""Errors the lab reports to people: one plain sentence, never a traceback.

Every check that can fail on user input raises :class:`LabInputError` with a message that
names what is wrong and why. The CLI prints the message and exits with status 2; the apps show
it in place of the numbers.
"""

from __future__ import annotations


class LabInputError(ValueError):
    """Bad input: an out-of-range value, an invalid combination, a malformed file.

    The message is a single sentence meant for the person who typed the input.
    """


class CatalogError(LabInputError):
    """A catalog entry or a bring-your-own file is missing, malformed or unsupported."""
