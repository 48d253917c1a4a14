"""Unit constants and display helpers.

The lab's convention: GB = 10^9 bytes, GiB = 2^30 bytes, KiB = 2^10 bytes. Data is kept in SI
units (bytes, seconds, FLOP, FLOP/s); rounding happens only when formatting for display.
"""

from __future__ import annotations

import math

GB = 1e9
"""Bytes in a decimal gigabyte."""
GIB = 2**30
"""Bytes in a gibibyte."""
KIB = 2**10
"""Bytes in a kibibyte."""
TB_PER_S = 1e12
"""Bytes per second in one TB/s."""
GB_PER_S = 1e9
"""Bytes per second in one GB/s."""
TFLOPS = 1e12
"""FLOP/s in one TFLOPS."""
GFLOP = 1e9
"""FLOP in one GFLOP."""
MS = 1e-3
"""Seconds in a millisecond."""

MIB = 2**20
"""Bytes in a mebibyte (MiB)."""
MS_PER_S = 1e3
"""Milliseconds in a second (seconds × this = ms)."""
US = 1e-6
"""Seconds in a microsecond."""
US_PER_S = 1e6
"""Microseconds in a second (seconds × this = µs)."""
NS_PER_S = 1e9
"""Nanoseconds in a second (seconds × this = ns)."""


def fmt_number(value: float, digits: int = 2) -> str:
    """Format with thousands separators and a fixed number of decimals (``1,136`` or ``4.48``);
    a negative number with a minus sign (``−0.65``, not a hyphen), and one that rounds to
    zero without one (``0.00``, not ``-0.00``)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    text = f"{value:,.{digits}f}"
    if not text.startswith("-"):
        return text
    return text[1:] if not text.strip("-0.,") else MINUS + text[1:]


MINUS = "\u2212"
"""The minus sign of a printed negative number (the hyphen-minus is a hyphen)."""


def fmt_percent(fraction: float | None, digits: int = 1) -> str:
    """A fraction as a percentage (``0.101`` → ``10.1 %``; ``n/a`` for None, NaN or ±inf)."""
    if fraction is None or not math.isfinite(fraction):
        return "n/a"
    return f"{fmt_number(fraction * 100, digits)} %"


def fmt_count(n: int, noun: str) -> str:
    """A count and its noun, plural unless one (``1 row``, ``0 rows``, ``1,024 rows``)."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
"""Digits (and minus) as superscripts, for a power of ten (``10¹⁹⁸``)."""

PLAIN_RANGE = (1e-6, 1e15)
"""Magnitudes written out in full; outside it a number reads ``3.000 × 10¹⁹⁸`` (a float's
digits past its 17th are not the number's)."""


def fmt_sig(value: float, digits: int = 4) -> str:
    """``value`` to ``digits`` significant digits, written out with thousands separators
    (``100,000``, ``0.0005``) inside :data:`PLAIN_RANGE`, else as a power of ten
    (``3.000 × 10¹⁹⁸``); a minus sign, never a hyphen."""
    if value is None or not math.isfinite(value):
        return "n/a"
    if value == 0:
        return "0"
    sign, size = (MINUS if value < 0 else ""), abs(value)
    if not PLAIN_RANGE[0] <= size < PLAIN_RANGE[1]:
        mantissa, exponent = f"{size:.{digits - 1}e}".split("e")
        return f"{sign}{mantissa} × 10{str(int(exponent)).translate(SUPERSCRIPT)}"
    rounded = float(f"{size:.{digits}g}")
    decimals = max(digits - 1 - math.floor(math.log10(rounded)), 0)
    text = f"{rounded:,.{decimals}f}"
    return sign + (text.rstrip("0").rstrip(".") if "." in text else text)


def fmt_int(value: float) -> str:
    """Format a count rounded to the nearest integer with thousands separators (``8,192``);
    beyond 10¹⁵ as a power of ten (:func:`fmt_sig`), whose digits a float does hold."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if isinstance(value, float) and abs(value) >= PLAIN_RANGE[1]:
        return fmt_sig(value)
    return f"{round(value):,}".replace("-", MINUS)


def fmt_gb(num_bytes: float, digits: int = 2) -> str:
    """Format bytes as decimal GB (``15.01 GB``)."""
    return f"{fmt_number(num_bytes / GB, digits)} GB"


def fmt_gflop(flop: float, digits: int = 2) -> str:
    """Format FLOP as GFLOP (``120.07 GFLOP``)."""
    return f"{fmt_number(flop / GFLOP, digits)} GFLOP"


def fmt_params(count: float, digits: int = 2) -> str:
    """Format a parameter count in billions (10^9) (``46.70 billion``; the lab's ``B`` is
    bytes)."""
    return f"{fmt_number(count / 1e9, digits)} billion"


def fmt_ms(seconds: float, digits: int = 2) -> str:
    """Format seconds as milliseconds (``7.04 ms``)."""
    return f"{fmt_number(seconds / MS, digits)} ms"


def fmt_rate(tokens_per_s: float) -> str:
    """Format a token rate rounded to whole tokens per second (``1,136 tok/s``)."""
    return f"{fmt_int(tokens_per_s)} tok/s"


def nearest_on_log_scale(value: float, options: list[int]) -> int:
    """The one of ``options`` (whole numbers ≥ 1, ascending) nearest ``value`` on a log scale,
    the smaller of two as near (what a slider over powers of two or measured values shows)."""
    return min(options, key=lambda o: (abs(math.log2(o) - math.log2(max(value, 1))), o))
