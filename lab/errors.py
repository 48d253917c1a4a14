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


SHOWN_CHARACTERS = 40
"""Characters of an untrusted value that a message quotes before shortening it."""


def shown(value, *, quoted: bool = True, limit: int = SHOWN_CHARACTERS) -> str:
    """``value`` as a message may quote it: short, one line, never raising.

    Integers with more digits than fit in a sentence are described by their digit count (and
    Python refuses to print those beyond 4,300 digits anyway); any other value is its ``repr``
    (``str`` when ``quoted`` is false) cut to ``limit`` characters with ``…``.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        if value.bit_length() > 100:
            digits = len(str(abs(value))) if value.bit_length() < 14_000 else "over 4,000"
            return f"{'-' if value < 0 else ''}a {digits}-digit integer"
        return str(value)
    try:
        text = repr(value) if quoted else str(value)
    except (ValueError, RecursionError):
        text = f"a {type(value).__name__}"
    text = text.replace("\n", " ").replace("\r", " ")
    if len(text) > limit:
        text = text[:limit - 1] + "…"
    return text


def shown_number(value) -> str:
    """A number as a range message quotes it: with thousands separators while that stays short
    (``1,024``, ``1,500.0``), else as :func:`shown` gives it (``1e+300``, ``a 310-digit
    integer``)."""
    try:
        if isinstance(value, bool):
            return shown(value)
        if (isinstance(value, int) and value.bit_length() <= 64) or (
                isinstance(value, float) and abs(value) < 1e16):
            return f"{value:,}"
        if hasattr(value, "item") and not isinstance(value, int | float):
            return shown_number(value.item())  # a numpy scalar
    except (TypeError, ValueError):
        pass
    return shown(value)


BIDI_CONTROLS = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
"""Unicode's bidirectional controls: shown as they are, they reorder the text around them (a
U+202E in a link's value made an echoed sentence read backwards)."""


def without_bidi(text: str) -> str:
    """``text`` with each bidirectional control written as its escape (``\\u202e``), so a
    sentence quoting an untrusted value reads in the order it was written."""
    if not any(c in text for c in BIDI_CONTROLS):
        return text
    return "".join(f"\\u{ord(c):04x}" if c in BIDI_CONTROLS else c for c in text)
