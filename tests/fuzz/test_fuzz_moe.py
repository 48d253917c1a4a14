"""Fuzz the mixture-of-experts reader: whatever a config holds, only a one-sentence
LabInputError may escape, and a model that loads works in every MoE and KV formula."""

from __future__ import annotations

import json
import math
from pathlib import Path

from fuzz_inputs import FUZZ_SETTINGS, _corrupted
from hypothesis import given
from hypothesis import strategies as st
from test_fuzz_loaders import only_input_errors

from lab.catalog.moe_config import moe_model_from_config
from lab.models.kv_shapes import attention_flops, kv_tokens_bytes
from lab.models.moe import linear_flops, step_weight_bytes
from lab.models.moe_params import active_params, total_params

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "hf_configs"
BASES = {name: json.loads((CONFIGS / name / "config.json").read_text())
         for name in ("deepseek-v3", "deepseek-v2-lite", "qwen3-30b-a3b", "qwen1.5-moe-a2.7b",
                      "mixtral-8x7b-v0.1")}


def hostile_configs() -> st.SearchStrategy[dict]:
    """One of the real configs with one to three of its fields replaced or removed."""
    return st.one_of(*(_corrupted(base, base) for base in BASES.values()))


@FUZZ_SETTINGS
@given(hostile_configs())
def test_moe_config_fuzz(entry):
    model = only_input_errors(moe_model_from_config, entry, "fuzz", model_id="fuzz",
                              name="fuzz")
    if model is None:
        return
    assert 0 < active_params(model) <= total_params(model) == model.total_params
    for value in (step_weight_bytes(model, 8, "fp8", 1024), linear_flops(model, 8, 1024),
                  kv_tokens_bytes(model, 8, 16, "fp8"), kv_tokens_bytes(model, 8, 10**6),
                  attention_flops(model, 8, 10**6)):
        assert math.isfinite(value) and value > 0
