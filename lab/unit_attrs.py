"""The lab's unit labels as CF ``units`` attributes that UDUNITS-2 and plain pint both parse.

The lab labels a quantity in the words a reader expects (``tokens``, ``tokens/s``, ``GPUs``,
``FLOP``, ``B``, ``GB``); neither UDUNITS-2 nor pint's default registry knows the counts, and
UDUNITS knows no ``B``. The files the lab writes (sweep datasets and their exports) follow the
CF conventions instead, and keep what is counted in an attribute of its own:

- a count is dimensionless, ``units = "1"``, with ``counted_as = "tokens"`` (``"sequences"``,
  ``"GPUs"``, ``"FLOP"``, …);
- a rate of a count is ``units = "1/s"`` with ``counted_as`` (``tokens/s`` is ``"1/s"``
  counted as ``"tokens"``); pint's default registry does not parse UDUNITS' ``"s-1"``;
- bytes are ``"byte"``, bytes per second ``"byte/s"`` and decimal gigabytes ``"Gbyte"``
  (10^9 bytes in both);
- seconds and their fractions (``s``, ``ms``, ``µs``) and ``"1"`` are already understood.

:func:`unit_label` turns the attributes back into the lab's label, so charts and tables keep
saying "tokens" and "GB"::

    cf_unit_attrs("tokens/s")                          # {"units": "1/s", "counted_as": "tokens"}
    unit_label({"units": "1/s", "counted_as": "tokens"})   # "tokens/s"
"""

from __future__ import annotations

from collections.abc import Mapping

COUNTED = ("tokens", "sequences", "GPUs", "FLOP", "requests", "blocks", "steps", "pairs",
           "experts", "heads", "layers")
"""What the lab counts: each label is a dimensionless count in a file (``counted_as``)."""
RATE_SUFFIX = "/s"
"""Suffix of a count's rate label (``tokens/s``)."""
COUNT_UNITS = "1"
"""CF ``units`` of a count."""
RATE_UNITS = "1/s"
"""CF ``units`` of a count per second (UDUNITS and plain pint both read it)."""
COUNTED_AS = "counted_as"
"""The attribute naming what a count (or a count's rate) counts."""

RENAMED = {"B": "byte", "B/s": "byte/s", "GB": "Gbyte", "×": "1"}
"""Labels spelled otherwise in a file: bytes, bytes per second, decimal gigabytes, a ratio
(``×``)."""
UNCHANGED = ("1", "s", "ms", "µs")
"""Labels that already are CF units both parsers read."""


def cf_unit_attrs(label: str) -> dict[str, str]:
    """``units`` (and ``counted_as`` for a count or a count's rate) of the lab label ``label``.

    A label that already is a CF unit of the lab (``"1/s"``, ``"byte"``) is returned as is, so
    converting twice changes nothing; any other label is returned unchanged too.
    """
    if label in COUNTED:
        return {"units": COUNT_UNITS, COUNTED_AS: label}
    if label.endswith(RATE_SUFFIX) and label.removesuffix(RATE_SUFFIX) in COUNTED:
        return {"units": RATE_UNITS, COUNTED_AS: label.removesuffix(RATE_SUFFIX)}
    return {"units": RENAMED.get(label, label)}


def unit_label(attrs: Mapping) -> str:
    """The lab's label of a variable's attributes (``"tokens"``, ``"GB"``, ``"B"``, ``"s"``).

    Inverse of :func:`cf_unit_attrs` for every label but ``×`` (a ratio reads ``"1"``); a
    variable without ``units`` has the label ``""``.
    """
    units = str(attrs.get("units", ""))
    counted = attrs.get(COUNTED_AS)
    if counted:
        return f"{counted}{RATE_SUFFIX}" if units == RATE_UNITS else str(counted)
    back = {cf: label for label, cf in RENAMED.items() if label != "×"}
    return back.get(units, units)
