"""The shipped trace teaches the lesson: goodput rises then falls while throughput rises."""

from __future__ import annotations

import runpy
from pathlib import Path

import numpy as np

from lab.models.goodput import load_trace
from lab.models.goodput.sweep import DEFAULT_CAPS, cap_sweep
from lab.models.inputs import DecodeInputs
from lab.points.serving_points import DEFAULT_TRACE, GOODPUT_DEFAULTS
from lab.units import MS


def test_goodput_rises_then_falls_while_throughput_rises(llama8b, h100):
    d = GOODPUT_DEFAULTS
    s = cap_sweep(load_trace(DEFAULT_TRACE), DEFAULT_CAPS, DecodeInputs(llama8b, h100, 1, "bf16"),
                  d["c0_ms"] * MS, d["c1_ms"] * MS, d["ttft_ms"] * MS, d["tpot_ms"] * MS)
    goodput, throughput = s["goodput_rps"], s["throughput_tokens_per_s"]
    assert np.all(np.diff(throughput) > 0)
    peak = int(np.argmax(goodput))
    assert 0 < peak < len(DEFAULT_CAPS) - 1
    assert np.all(np.diff(goodput[: peak + 1]) > 0)          # rises to the peak
    assert np.all(np.diff(goodput[peak:]) < 0) or goodput[-1] < 0.5 * goodput[peak]
    assert goodput[-1] < 0.5 * goodput[peak]                 # and clearly falls after it
    assert DEFAULT_CAPS[peak] == d["batch_cap"]              # the default sits at the peak


def test_generator_reproduces_the_shipped_file(tmp_path):
    script = Path(DEFAULT_TRACE).with_name("make_default_trace.py")
    module = runpy.run_path(str(script))
    out = tmp_path / "default.csv"
    module["main"](out)
    assert out.read_bytes() == Path(DEFAULT_TRACE).read_bytes()
