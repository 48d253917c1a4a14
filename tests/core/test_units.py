"""The figures' formatters (:mod:`lab.units`): separators, decimals, and the sign of a
negative number."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lab.units import MINUS, fmt_int, fmt_number, fmt_percent, fmt_sig


@pytest.mark.parametrize(("value", "digits", "text"), [
    (1136.0, 0, "1,136"), (4.4812, 2, "4.48"), (-0.65, 2, "−0.65"), (-33.456, 2, "−33.46"),
    (-1234.5, 1, "−1,234.5"), (-0.001, 2, "0.00"), (-0.0, 2, "0.00"), (float("nan"), 2, "n/a"),
])
def test_fmt_number(value, digits, text):
    """A residual of −0.65 ms printed "-0.65" (a hyphen) and −0.001 printed "-0.00"."""
    assert fmt_number(value, digits) == text


def test_fmt_int_and_percent_sign():
    assert fmt_int(-1.2) == "−1" and fmt_int(-0.4) == "0" and fmt_int(8192) == "8,192"
    assert fmt_percent(-0.101) == "−10.1 %" and fmt_percent(-0.0001) == "0.0 %"


@given(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e12, max_value=1e12),
       st.integers(min_value=0, max_value=4))
def test_no_hyphen_and_no_negative_zero(value, digits):
    text = fmt_number(value, digits)
    assert "-" not in text
    if text.startswith(MINUS):
        assert float(text[1:].replace(",", "")) > 0 and value < 0
    assert math.isclose(float(text.replace(MINUS, "-").replace(",", "")), value,
                        abs_tol=0.51 * 10 ** -digits, rel_tol=1e-12)


@pytest.mark.parametrize(("value", "text"), [
    (100000.5, "100,000"), (0.0005, "0.0005"), (1234.5678, "1,235"), (7.0, "7"), (0.0, "0"),
    (3e198, "3.000 × 10¹⁹⁸"), (-2.5e-9, "−2.500 × 10⁻⁹"), (1e15, "1.000 × 10¹⁵"),
])
def test_significant_digits_are_written_out_or_as_a_power_of_ten(value, text):
    """The context derivation wrote c as "1e+05 ns", and a crossover of 3e198 tokens as 199
    digits, most of them not the number's."""
    assert fmt_sig(value) == text


def test_a_count_past_a_floats_digits_is_a_power_of_ten():
    assert fmt_int(3e198) == "3.000 × 10¹⁹⁸"
    assert fmt_int(123_456_789_012_345.0) == "123,456,789,012,345"
    assert fmt_int(10**20) == f"{10**20:,}"  # an exact integer keeps its digits
