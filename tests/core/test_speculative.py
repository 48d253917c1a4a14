"""Experiment 10, speculative decoding: hand-computed figures, properties, the CLI and refusals."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cli.main import main
from lab.catalog import get_gpu, get_model
from lab.derivations.decode_steps import render_text
from lab.errors import LabInputError
from lab.experiments.speculative_decoding import SpeculativeDecoding
from lab.models.decode_step import decode_step
from lab.models.inputs import DecodeInputs
from lab.models.speculative import expected_tokens, mtp_head, speculative_metrics
from lab.points.speculative_points import SpeculativeConfig, calc_speculative

H100_BW, H100_BF16 = 3.35e12, 989.4e12
"""H100 SXM's HBM bandwidth (B/s) and dense BF16 peak (FLOP/s), from the catalog's sources."""
N_LIN_8B, N_LIN_1B = 7_504_658_432, 1_235_746_816
"""Linear parameters read per step (docs/model.md §1 for 8B; 1B: 16 layers of 2048·2048 +
2·2048·512 + 2048·2048 + 3·2048·8192 plus the 2048 × 128,256 head)."""
KV_TOK_8B, KV_TOK_1B = 2 * 32 * 8 * 128 * 2, 2 * 16 * 8 * 64 * 2
"""KV bytes per token, BF16: 2·L·K·h·2."""


def test_expected_tokens_alpha_08_k4_is_3_36():
    # (1 − 0.8^5) / (1 − 0.8) = (1 − 0.32768) / 0.2 = 3.3616
    assert expected_tokens(4, 0.8) == pytest.approx(3.3616, rel=1e-12)
    assert calc_speculative(SpeculativeConfig(k=4, alpha=0.8))["expected_tokens"] == \
        pytest.approx(3.3616, rel=1e-12)
    assert expected_tokens(4, 1.0) == 5 and expected_tokens(4, 0.0) == 1


def test_the_default_cycle_by_hand_from_the_decode_formulas():
    """Llama 3.1 8B drafted by Llama 3.2 1B, H100 SXM, batch 8, context 512, k 4, α 0.8."""
    batch, context, k = 8, 512, 4
    # verification: weights once, linear FLOPs × (k+1); KV once, pairs (k+1)·S + k(k+1)/2
    hbm = N_LIN_8B * 2 / H100_BW
    linear = max(hbm, 2 * N_LIN_8B * batch * (k + 1) / H100_BF16)
    kv = batch * context * KV_TOK_8B / H100_BW
    pairs = (k + 1) * context + k * (k + 1) // 2
    assert pairs == 2_570
    attention = max(kv, batch * pairs * 4 * 32 * 32 * 128 / H100_BF16)
    verify = linear + attention
    # one draft step is experiment 1's step of the 1B model
    draft_step = (max(N_LIN_1B * 2 / H100_BW, 2 * N_LIN_1B * batch / H100_BF16)
                  + max(batch * context * KV_TOK_1B / H100_BW,
                        batch * context * 4 * 16 * 32 * 64 / H100_BF16))
    cycle = k * draft_step + verify
    plain = verify  # batch × (k+1) = 40 is below the ridge and the KV read is the same
    r = calc_speculative(SpeculativeConfig())
    assert r["verify_time_s"] == pytest.approx(verify, rel=1e-12)
    assert r["verify_time_s"] == pytest.approx(4.6407e-3, rel=1e-4)
    assert r["draft_step_time_s"] == pytest.approx(draft_step, rel=1e-12)
    assert r["draft_step_time_s"] == pytest.approx(0.7778e-3, rel=1e-4)
    assert r["cycle_time_s"] == pytest.approx(cycle, rel=1e-12)
    assert r["plain_step_time_s"] == pytest.approx(plain, rel=1e-12)
    assert r["per_sequence_tokens_per_s"] == pytest.approx(3.3616 / cycle, rel=1e-12)
    assert r["aggregate_tokens_per_s"] == pytest.approx(batch * 3.3616 / cycle, rel=1e-12)
    assert r["speedup"] == pytest.approx(3.3616 * plain / cycle, rel=1e-12)
    assert round(r["speedup"], 2) == 2.01
    assert r["verify_ridge_batch"] == pytest.approx(H100_BF16 * 2 / (2 * H100_BW) / 5)
    assert r["draft_params_bytes"] == get_model("llama-3.2-1b").total_params * 2
    assert r["draft_kv_bytes"] == batch * 33 * 16 * KV_TOK_1B  # ceil(513 / 16) pages of 16
    printed = render_text(SpeculativeDecoding().steps())
    for figure in ("3.36 tokens", "4.64 ms", "0.78 ms", "3.11 ms", "7.75 ms", "434 tok/s",
                   "215 tok/s", "2.01×", "batch 250", "2,570 pairs"):
        assert figure in printed, figure


def test_break_even_batch_is_where_the_speedup_falls_below_one():
    def speedup(batch):
        return calc_speculative(SpeculativeConfig(batch=batch))["speedup"]

    assert calc_speculative(SpeculativeConfig())["break_even_batch"] == 250
    assert speedup(249) >= 1 > speedup(250)
    # at 8k context the shared KV read dominates: speculation pays at every batch
    assert calc_speculative(SpeculativeConfig(context=8192))["break_even_batch"] is None


def test_the_mtp_head_is_one_layer_and_the_projection():
    model = get_model("llama-3.1-8b")
    per_layer = 4096 * 4096 + 2 * 4096 * 1024 + 4096 * 4096 + 3 * 4096 * 14336
    assert mtp_head(model).total_params == per_layer + 2 * 4096 * 4096 == 251_658_240
    r = calc_speculative(SpeculativeConfig(draft="mtp"))
    assert r["inputs"]["draft"] == "mtp"
    assert r["draft_params_bytes"] == 251_658_240 * 2
    # one MTP step reads its layer, M and the shared LM head: (per layer + 2d² + d·V) × 2 B
    head_bytes = (per_layer + 2 * 4096 * 4096 + 4096 * 128_256) * 2
    kv = 8 * 512 * 2 * 8 * 128 * 2  # one layer's KV
    assert r["draft_step_time_s"] == pytest.approx(head_bytes / H100_BW + kv / H100_BW, rel=1e-12)


dense = st.sampled_from(["llama-3.1-8b", "llama-3.1-70b"])
drafts = st.sampled_from(["llama-3.2-1b", "llama-3.2-3b", "mtp"])
gpus = st.sampled_from(["h100-sxm", "a100-sxm-80gb", "l4", "b200"])


@settings(max_examples=60, deadline=None)
@given(dense, drafts, gpus, st.integers(1, 1024), st.integers(1, 65_536),
       st.floats(0, 1))
def test_k_zero_is_plain_decoding(model, draft, gpu, batch, context, alpha):
    target, drafter = get_model(model), None if draft == "mtp" else get_model(draft)
    inputs = DecodeInputs(target, get_gpu(gpu), batch=batch, context=context)
    out = speculative_metrics(inputs, drafter, 0, alpha)
    plain = decode_step(inputs)
    assert out["expected_tokens"] == 1
    assert out["draft_time_s"] == 0
    assert out["cycle_time_s"] == plain["step_time_s"]
    assert out["per_sequence_tokens_per_s"] == plain["per_sequence_tokens_per_s"]
    assert out["speedup"] == 1


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 16), st.floats(0, 1), st.floats(0, 1))
def test_expected_tokens_rise_with_alpha_to_k_plus_one(k, a1, a2):
    lo, hi = sorted((a1, a2))
    assert 1 <= expected_tokens(k, lo) <= expected_tokens(k, hi) * (1 + 1e-12)
    assert expected_tokens(k, hi) <= k + 1 + 1e-9
    assert expected_tokens(k, 1.0) == k + 1
    assert expected_tokens(k, 1 - 1e-9) == pytest.approx(k + 1, rel=1e-6)


@pytest.mark.parametrize(("changes", "sentence"), [
    ({"draft": "qwen2.5-7b"}, "a draft must share the target's tokenizer"),
    ({"draft": "llama-3.1-70b"}, "a draft model must be the smaller one"),
    ({"model": "mixtral-8x7b"}, "the target Mixtral 8x7B v0.1 is a mixture-of-experts model"),
    ({"k": 17}, "k must be between 0 and 16 drafted tokens, not 17"),
    ({"alpha": 1.5}, "alpha must be between 0 and 1, not 1.5"),
    ({"tp": 3}, "tp 3 does not divide"),
])
def test_bad_input_is_one_sentence(changes, sentence):
    with pytest.raises(LabInputError, match=sentence):
        calc_speculative(SpeculativeConfig(**changes))


def _cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(list(argv))
    return code, out.getvalue()


def test_calc_speculative_json_is_the_point(capsys):
    code, out = _cli("calc", "speculative", "--draft", "mtp", "--k", "1", "--alpha", "0.85",
                     "--batch", "16", "--json")
    assert code == 0
    record = json.loads(out)
    assert record.pop("schema_version") == 1
    assert record == json.loads(json.dumps(calc_speculative(
        SpeculativeConfig(draft="mtp", k=1, alpha=0.85, batch=16))))
    assert record["expected_tokens"] == pytest.approx(1.85)
    code, out = _cli("calc", "speculative")
    assert code == 0 and "Expected tokens per verification step = (1 − 0.8^5) / (1 − 0.8) = " \
        "3.36 tokens per sequence" in out
    assert _cli("calc", "speculative", "--draft", "qwen2.5-7b")[0] == 2
    assert "tokenizer" in capsys.readouterr().err
    assert _cli("calc", "speculative", "--k", "99")[0] == 2


def test_numeric_choices_are_read_as_numbers_on_the_command_line(capsys):
    """``--tp 4`` is the choice 4 (argparse compared the text '4' with the number 4)."""
    assert main(["calc", "speculative", "--tp", "4", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["inputs"]["tp"] == 4
    assert main(["calc", "speculative", "--tp", "3"]) == 2
    assert "invalid choice: 3 (choose from 1, 2, 4, 8)" in capsys.readouterr().err


def test_plain_decoding_loads_no_drafter():
    """k = 0 is §0's decode step (docs/model.md §10), yet the drafter's 2.47 GB of weights and
    its KV were charged against the budget."""
    from lab.points.speculative_points import SpeculativeConfig, calc_speculative

    plain = calc_speculative(SpeculativeConfig(k=0))
    assert plain["draft_params_bytes"] == 0 and plain["draft_kv_bytes"] == 0
    assert plain["memory_remaining_with_draft_bytes"] == plain["memory_remaining_bytes"]
    drafting = calc_speculative(SpeculativeConfig(k=1))
    assert drafting["draft_params_bytes"] > 2e9 and drafting["draft_kv_bytes"] > 0


def test_memory_says_when_the_target_alone_does_not_fit():
    """Llama 3.1 70B at tp 1 on an H100: the drafter's card said "77.10 GB over the budget"
    beside its own 2.61 GB, as if the drafter were to blame, and the derivation's
    "2.47 GB weights + 0.14 GB KV / GPU = 48.78 GB of the budget left" did not follow."""
    from lab.experiments.speculative_decoding import SpeculativeDecoding

    exp = SpeculativeDecoding(model="llama-3.1-70b", tp=1)
    card = next(c for c in exp.cards() if c.label == "Drafter memory")
    assert card.caption.endswith("77.10 GB over the budget (the target alone is 74.49 GB over it: "
                                "it does not fit at this tp)")
    step = next(s for s in exp.steps() if s.label == "Memory with the drafter")
    assert step.expression == ("72.00 GB budget − 4.00 GB reserve − 141.11 GB target weights − "
                               "1.38 GB target KV − 2.47 GB drafter weights − 0.14 GB drafter KV "
                               "(per GPU)")
    assert "does not fit" not in next(c for c in SpeculativeDecoding().cards()
                                      if c.label == "Drafter memory").caption


def test_k_0_is_no_faster_than_plain_and_verifies_one_token():
    """k = 0 drafts nothing: 1.00×, so the break-even card may not call it faster, and the
    derivation read "× 1 tokens"."""
    from lab.experiments.speculative_decoding import SpeculativeDecoding

    exp = SpeculativeDecoding(k=0)
    card = next(c for c in exp.cards() if c.label == "Break-even batch")
    assert card.value == "none" and card.caption == "no slower than plain at any batch up to 1,024"
    step = next(s for s in exp.steps() if s.label == "Verification linear FLOPs")
    assert step.expression.endswith("× 8 sequences × 1 token / 1")
