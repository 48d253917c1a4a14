"""Experiment 7, goodput under a contract: trace loading, the batching model and its metrics."""

from lab.models.goodput.metrics import UNITS, goodput_metrics, per_request
from lab.models.goodput.simulate import Simulation, simulate
from lab.models.goodput.trace import COLUMNS, Trace, load_trace, make_trace

__all__ = ["COLUMNS", "UNITS", "Simulation", "Trace", "goodput_metrics", "load_trace",
           "make_trace", "per_request", "simulate"]
