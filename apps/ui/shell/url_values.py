"""Which values a page accepts for an experiment input, from its URL or from its widgets.

The experiment classes accept more than a page may: ``model``/``gpu`` take a file path on the
command line (their selectors do not check on set). A page accepts only the declared set: a
selector's objects (catalog ids), a number within its bounds, ``true``/``false`` for a switch.
Nothing here opens a file.
"""

from __future__ import annotations

import contextlib
import numbers
import re
from urllib.parse import parse_qsl, urlencode

import param
from panel.util import parse_query

from lab.errors import without_bidi

MAX_SHOWN_CHARS = 40
"""Longest piece of a rejected value quoted back on the page, characters."""
MAX_LISTED = 16
"""Most allowed values listed in a message."""


class CheckedText(param.String):
    """Text a page may take from its URL only when ``check(text)`` finds nothing wrong (a small
    grammar such as the grid explorer's constraints; never a path). ``check`` returns one
    sentence or None; ``allowed`` ends the sentence for a refused link value."""

    __slots__ = ["allowed", "check"]

    _slot_defaults = dict(param.String._slot_defaults, check=None, allowed="valid text")  # noqa: RUF012 (param reads it)

    def __init__(self, default="", *, check=None, allowed="valid text", **params):
        super().__init__(default=default, **params)
        self.check = check
        self.allowed = allowed


def quoted(value: object) -> str:
    """``value`` as text for a message, cut to :data:`MAX_SHOWN_CHARS` (shown escaped)."""
    text = without_bidi(str(value))
    return text if len(text) <= MAX_SHOWN_CHARS else text[:MAX_SHOWN_CHARS] + "…"


def _number(value: float) -> str:
    """A bound as a reader writes it: ``1,048,576``, ``0.01`` (never ``1.04858e+06``); a
    bound under 0.001 in Python's notation (``1e-200``, not ``0``; ``1.5e-06``)."""
    if float(value).is_integer():
        return f"{int(value):,}"
    if 0 < abs(value) < 1e-3:  # 0.0005, 1.5e-06, 1e-200: as Python writes them
        return repr(float(value))
    return f"{value:,.6f}".rstrip("0").rstrip(".")


def allowed_text(parameter: param.Parameter) -> str:
    """What ``parameter`` accepts, as the end of a sentence ('one of a, b', 'a number from…')."""
    if isinstance(parameter, CheckedText):
        return parameter.allowed
    if isinstance(parameter, param.Boolean):
        return "true or false"
    if isinstance(parameter, param.String) and parameter.regex is not None:
        return f"a valid {(parameter.label or parameter.name).lower()}"
    if isinstance(parameter, param.Selector):
        values = [str(v) for v in parameter.objects]
        more = f", … ({len(values)} in all)" if len(values) > MAX_LISTED else ""
        return "one of " + ", ".join(values[:MAX_LISTED]) + more
    if isinstance(parameter, param.Number):
        kind = "a whole number" if isinstance(parameter, param.Integer) else "a number"
        lo, hi = parameter.bounds or (None, None)
        if lo is not None and hi is not None:
            return f"{kind} from {_number(lo)} to {_number(hi)}"
        if lo is not None:
            return f"{kind} of at least {_number(lo)}"
        if hi is not None:
            return f"{kind} of at most {_number(hi)}"
        return kind
    return "a valid value"


def _in_bounds(parameter: param.Number, value: float) -> bool:
    lo, hi = parameter.bounds or (None, None)
    lo_in, hi_in = getattr(parameter, "inclusive_bounds", (True, True))
    if lo is not None and (value < lo or (value == lo and not lo_in)):
        return False
    return not (hi is not None and (value > hi or (value == hi and not hi_in)))


def accepts(parameter: param.Parameter, value: object) -> bool:
    """Whether a page may set ``parameter`` to ``value`` (only its declared set, never a path)."""
    if isinstance(parameter, CheckedText):
        return isinstance(value, str) and (parameter.check is None
                                           or parameter.check(value) is None)
    if isinstance(parameter, param.Boolean):
        return isinstance(value, bool)
    if isinstance(parameter, param.String) and parameter.regex is not None:
        # text its declared pattern admits (a row id: only looked up, never opened)
        return isinstance(value, str) and re.match(parameter.regex, value) is not None
    if isinstance(parameter, param.Selector):
        return any(type(value) is type(v) and value == v for v in parameter.objects)
    if isinstance(parameter, param.Integer):
        return (isinstance(value, numbers.Integral) and not isinstance(value, bool)
                and _in_bounds(parameter, value))
    if isinstance(parameter, param.Number):
        return (isinstance(value, numbers.Real) and not isinstance(value, bool)
                and value == value and _in_bounds(parameter, value))
    return False


def page_value_problem(parameter: param.Parameter, value: object) -> str | None:
    """One sentence when a page widget sends ``value`` that ``parameter`` may not take."""
    if accepts(parameter, value):
        return None
    label = parameter.label or parameter.name
    return f"{label} must be {allowed_text(parameter)}; '{quoted(value)}' was not applied."


def url_problems(experiment: param.Parameterized, names: list[str],
                 search: str) -> tuple[dict[str, object], list[str]]:
    """The URL query ``search`` (``?a=1&b=x``) split into accepted values and problems.

    Returns the accepted ``{name: value}`` among ``names`` (parsed as Panel's URL sync parses
    them) and one sentence per rejected value naming it, what is allowed and what is shown.
    """
    raw = dict(parse_qsl(search[1:] if search.startswith("?") else search,
                         keep_blank_values=True))
    parsed: dict[str, object] = {}
    for name in names:
        if name in raw:  # one value at a time: a 5,000-digit number raises in int()
            with contextlib.suppress(ValueError):
                parsed.update(parse_query("?" + urlencode({name: raw[name]})))
    accepted: dict[str, object] = {}
    problems: list[str] = []
    for name in names:
        if name not in raw:
            continue
        parameter = experiment.param[name]
        value = parsed.get(name, raw[name])
        with contextlib.suppress(Exception):  # text that does not parse is judged as it is
            value = parameter.deserialize(value)
        if accepts(parameter, value):
            accepted[name] = value
            continue
        current = parameter.serialize(getattr(experiment, name))
        shows = (f"{name}={quoted(current) if isinstance(parameter, CheckedText) else current}"
                 if current not in ("", None) else f"no {name}= (its default)")
        own = (parameter.check(value) if isinstance(parameter, CheckedText)
               and parameter.check is not None and isinstance(value, str) else None)
        if own:  # the text's own sentence (e.g. where=: too long, too many constraints)
            problems.append(f"The link's {name}= was not applied ({own[0].lower()}"
                            f"{own[1:].rstrip('.')}), so the page shows {shows}.")
            continue
        problems.append(f"The link's {name}={quoted(raw[name])} is not "
                        f"{allowed_text(parameter)}, so the page shows {shows}.")
    return accepted, problems


def strict_selectors(experiment: param.Parameterized, names: list[str]) -> None:
    """Make this instance's selectors among ``names`` refuse values outside their objects.

    The classes keep ``check_on_set=False`` for the command line (a file path for ``model`` or
    ``gpu``); the page's copy refuses anything but the listed ids, whatever route sets it.
    """
    for name in names:
        parameter = experiment.param[name]
        if isinstance(parameter, param.Selector) and not parameter.check_on_set:
            parameter.check_on_set = True
