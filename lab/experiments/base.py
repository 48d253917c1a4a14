"""What every experiment has, as a ``param.Parameterized`` base with no Panel in sight.

An experiment's inputs are ``param`` parameters (bounds, defaults, units in ``label``/``doc``).
Whenever an input changes, :meth:`Experiment.compute` runs and sets ``result`` (a JSON-ready
record from :mod:`lab.points.decode_points`) or, for bad input, ``error`` (one sentence) with ``result`` None;
``computing`` is True while it runs. A new reason while ``result`` stays None also triggers
``result``, so a view that follows ``result`` alone never shows a stale reason.
Subclasses add the text of the seven elements: headline, prediction, cards, chart data, the
substituted derivation, and the limits with their sources.

The same parameters are the experiment's ``calc`` command (``cli/calc_generic.py`` makes a flag
of each, reading :mod:`lab.experiments.command_line` metadata where a flag needs more); the
class methods :meth:`Experiment.calculate`, :meth:`~Experiment.derivation` and
:meth:`~Experiment.text_lines` and :meth:`~Experiment.inputs_used` give the command its
record and its text from the parsed values.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

import param

from lab.derivations.decode_steps import Step
from lab.errors import LabInputError
from lab.points.validity import check_range


@dataclass(frozen=True)
class Card:
    """One headline figure: a label, the value as displayed, and a one-line caption."""

    label: str
    value: str
    caption: str = ""


def label_unit(label: str | None) -> str:
    """The unit an input's label ends with in parentheses (``Context (tokens)`` → ``tokens``,
    ``TPOT at most (ms; 0 = none)`` → ``ms``), else ``""``."""
    match = re.search(r"\(([^()]+)\)\s*$", label or "")
    unit = match.group(1).split(";")[0].strip() if match else ""
    return "" if "=" in unit else unit


@dataclass(frozen=True)
class Prediction:
    """The question a reader answers before the reveal, its choices and the right one."""

    question: str
    choices: tuple[str, ...]
    answer: int


class Experiment(param.Parameterized):
    """Base class: inputs are the subclass's parameters; outputs update when they change."""

    number: ClassVar[int] = 0
    slug: ClassVar[str] = ""
    title: ClassVar[str] = ""
    headline: ClassVar[str] = ""
    prediction: ClassVar[Prediction]
    limits: ClassVar[str] = ""
    sources: ClassVar[tuple[str, ...]] = ()

    result = param.Dict(default=None, allow_None=True, precedence=-1,
                        doc="The current calculation (SI units), or None when inputs are invalid.")
    error = param.String(default=None, allow_None=True, precedence=-1,
                         doc="One sentence saying why the inputs are invalid, else None.")
    computing = param.Boolean(default=False, precedence=-1,
                              doc="True while the calculation for new inputs runs (set before "
                                  "compute, cleared after result/error are set), so a view can "
                                  "say it is busy.")

    OUTPUTS: ClassVar[tuple[str, ...]] = ("result", "error", "computing", "name")

    command_line_extras: ClassVar[dict[str, param.Parameter]] = {}
    """Inputs only the ``calc`` command offers, by name: parameters not bound to the class
    (default, ``doc``, ``metadata``), e.g. experiment 1's ``--measured-attention``."""

    def __init__(self, **params):
        super().__init__(**params)
        self.param.watch(self._refresh, self.input_names())
        self._refresh()

    @classmethod
    def input_names(cls) -> list[str]:
        """Names of the input parameters, in declaration order."""
        return [p for p in cls.param if p not in cls.OUTPUTS]

    def changed_inputs(self) -> list[str]:
        """The inputs whose value is not their default, in declaration order: the prediction's
        question is asked at the defaults, so its answer is worked there when these exist."""
        changed = []
        for name in self.input_names():
            value, default = getattr(self, name), self.param[name].default
            try:
                same = bool(value == default)
            except (TypeError, ValueError):  # arrays, tables: compared by identity
                same = value is default
            if not same:
                changed.append(name)
        return changed

    @classmethod
    def command_line_inputs(cls) -> dict[str, param.Parameter]:
        """Every input of the ``calc`` command, by name: the class's, then its extras."""
        return {**{name: cls.param[name] for name in cls.input_names()},
                **cls.command_line_extras}

    @classmethod
    def calculate(cls, values: dict) -> dict:
        """The record for the command line's ``values`` (every :meth:`command_line_inputs`
        name); raise ``LabInputError`` with one sentence for bad input. By default an instance
        computes it, ``param`` checking the bounds first."""
        return cls._instance(values).result

    @classmethod
    def derivation(cls, result: dict, values: dict) -> list[Step]:
        """The substituted derivation of ``result``, computed from ``values``."""
        return cls._instance(values).steps()

    @classmethod
    def text_lines(cls, result: dict, values: dict) -> tuple[list[str], list[str]]:
        """Lines the ``calc`` text prints before its ``Inputs:`` line and after the
        derivation (none by default)."""
        return [], []

    @classmethod
    def inputs_used(cls, values: dict) -> tuple[bool, bool, tuple[str, ...]] | None:
        """What the ``calc`` text's ``Inputs:`` line names for ``values``: ``(model used, GPU
        used, the other inputs in order)``, or None for no such line (the default)."""
        return None

    @classmethod
    def _instance(cls, values: dict) -> Experiment:
        for name in cls.input_names():  # in the lab's words, not param's ('Class.k' …)
            parameter = cls.param[name]
            if (isinstance(parameter, param.Number) and parameter.bounds is not None
                    and name in values and values[name] is not None):
                low, high = parameter.bounds
                check_range(name, values[name], low, high,
                            integer=isinstance(parameter, param.Integer),
                            unit=label_unit(parameter.label))
        try:
            experiment = cls(**{name: values[name] for name in cls.input_names()})
        except ValueError as exc:  # param's own bounds check, before any calculation
            raise LabInputError(str(exc).split("\n")[0]) from None
        if experiment.error is not None:
            raise LabInputError(experiment.error)
        return experiment

    def inputs(self) -> dict:
        """Current input values by name."""
        return {name: getattr(self, name) for name in self.input_names()}

    def _refresh(self, *_events) -> None:
        self.computing = True
        try:
            try:
                result = self.compute()
            except LabInputError as exc:
                unchanged = self.result is None and self.error != str(exc)
                self.param.update(result=None, error=str(exc))
                if unchanged:  # a new reason: views that follow ``result`` show it too
                    self.param.trigger("result")
            else:
                self.param.update(result=result, error=None)
        finally:
            self.computing = False

    # -- what subclasses provide -------------------------------------------------------------
    def compute(self) -> dict:
        """The calculation for the current inputs; raise ``LabInputError`` for bad input."""
        raise NotImplementedError

    def cards(self) -> list[Card]:
        """3–5 headline figures for the current result."""
        raise NotImplementedError

    def steps(self) -> list[Step]:
        """The derivation with the numbers substituted, in the order of docs/model.md."""
        raise NotImplementedError

    def explanation(self) -> str:
        """The prediction's answer explained with the numbers on screen."""
        raise NotImplementedError

    def chart_data(self):
        """The swept axis and its series, as an ``xarray.Dataset`` with units in attrs."""
        raise NotImplementedError
