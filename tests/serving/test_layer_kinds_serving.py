"""Issue 26 in experiments 6, 7, 8 and 10: sliding-window and chunked layers modelled layer
kind by layer kind — hand-computed figures for Gemma 3 27B (52 sliding-window layers of
1,024 tokens, 10 full) and brute-force pair counts for small mixes."""

from __future__ import annotations

from dataclasses import replace

import pytest
from goodput_reference import reference
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lab.catalog import get_gpu, get_model
from lab.errors import LabInputError
from lab.models.context_growth import attention_pairs
from lab.models.decode_step import attention_phase, linear_phase
from lab.models.goodput import make_trace, simulate
from lab.models.inputs import DecodeInputs
from lab.models.layer_kinds import read_layer_tokens_between
from lab.models.moe_params import active_linear_params
from lab.models.speculative import mtp_head, verify_layer_pairs, verify_pairs
from lab.points.decode_points import DecodeConfig
from lab.points.serving_points import calc_context, calc_goodput, calc_prefix
from lab.points.speculative_points import SpeculativeConfig, calc_speculative

GEMMA = get_model("gemma-3-27b")
H100 = get_gpu("h100-sxm")


def small_mix(full: int, window_layers: int, w: int, chunk_layers: int, c: int):
    """Gemma 3's record with a small mix of layer kinds (only the layer fields change)."""
    return replace(GEMMA, layers=full + window_layers + chunk_layers, window_layers=window_layers,
                   sliding_window=w if window_layers else 0, chunk_layers=chunk_layers,
                   attention_chunk=c if chunk_layers else 0)


def keys(kind: str, i: int, w: int, c: int) -> int:
    """Keys query ``i`` (0-based) attends to, itself included, by enumerating the mask."""
    if kind == "full":
        return sum(1 for j in range(i + 1))
    if kind == "window":
        return sum(1 for j in range(i + 1) if j > i - w)
    return sum(1 for j in range(i + 1) if j // c == i // c)


def brute_layer_pairs(model, start: int, end: int, w: int, c: int, diagonal: bool) -> int:
    """Σ over layers and queries ``[start, end)`` of the keys each query attends to."""
    counts = {"full": model.layers - model.window_layers - model.chunk_layers,
              "window": model.window_layers, "chunk": model.chunk_layers}
    return sum(layers * (keys(kind, i, w, c) - (0 if diagonal else 1))
               for kind, layers in counts.items() for i in range(start, end))


mixes = st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(1, 20), st.integers(0, 3),
                  st.integers(1, 20)).filter(lambda t: t[0] + t[1] + t[3] > 0)


# -- experiment 10: the verification step reads each layer kind's own keys -------------------

@settings(max_examples=150, deadline=None)
@given(mix=mixes, s=st.integers(0, 64), k=st.integers(0, 8))
def test_verify_pairs_against_brute_force(mix, s, k):
    full, wl, w, cl, c = mix
    model = small_mix(full, wl, w, cl, c)
    want = brute_layer_pairs(model, s, s + k + 1, w, c, diagonal=False)
    assert read_layer_tokens_between(model, s, s + k + 1) == want
    if wl or cl:
        assert verify_layer_pairs(model, k, s) * model.layers == pytest.approx(want, rel=1e-12)
    else:  # all full: the dense expression itself
        assert verify_layer_pairs(model, k, s) == verify_pairs(k, s)


def test_gemma_target_by_hand():
    """S 4,096, k 3: a window layer reads min(S + j, 1,023) keys besides its own.
    read(4,096) = 10·4,096 + 52·1,023 = 94,156 → S_eff = 94,156 / 62 = 1,518.645…;
    Σ_j read = 10·(4·4,096 + 6) + 4·52·1,023 = 376,684 → 6,075.548… pairs per sequence."""
    r = calc_speculative(SpeculativeConfig(model="gemma-3-27b", draft="mtp", context=4096, k=3))
    assert r["layer_mix"] == "52 sliding-window layers of 1,024 tokens, 10 full"
    assert r["verify_context_read"] == pytest.approx(94_156 / 62, rel=1e-15)
    assert r["verify_pairs_per_sequence"] == pytest.approx(376_684 / 62, rel=1e-15)
    kv_tok = 2 * 62 * 16 * 128 * 2                      # bytes per token, every layer
    assert r["verify_kv_read_bytes"] == pytest.approx(8 * 94_156 / 62 * kv_tok, rel=1e-12)
    assert r["verify_attention_flops"] == pytest.approx(8 * 376_684 / 62 * 4 * 62 * 32 * 128,
                                                        rel=1e-12)


def test_gemma_mtp_head_is_one_full_layer():
    head = mtp_head(GEMMA)
    assert (head.layers, head.window_layers, head.chunk_layers) == (1, 0, 0)


def test_a_mixture_of_experts_target_is_still_refused():
    with pytest.raises(LabInputError, match="gpt-oss-20b is a mixture-of-experts model"):
        calc_speculative(SpeculativeConfig(model="gpt-oss-20b", draft="mtp"))


# -- experiment 8: prefill pairs per layer kind -----------------------------------------------

@settings(max_examples=150, deadline=None)
@given(mix=mixes, n=st.integers(1, 64))
def test_context_pairs_against_brute_force(mix, n):
    full, wl, w, cl, c = mix
    model = small_mix(full, wl, w, cl, c)
    want = brute_layer_pairs(model, 0, n, w, c, diagonal=True)
    assert attention_pairs(n, model=model) * model.layers == pytest.approx(want, rel=1e-12)


def test_window_extension_against_brute_force():
    for n in range(1, 65):
        for w in (1, 5, 16, 64, 100):
            assert int(attention_pairs(n, w)) == sum(keys("window", i, w, 1) for i in range(n))


def test_gemma_context_by_hand():
    """n 32,768: full 32,768·32,769/2 = 536,887,296 per layer; window 1,024·1,025/2 +
    31,744·1,024 = 33,030,656 per layer; 10·536,887,296 + 52·33,030,656 = 7,086,467,072."""
    r = calc_context(tokens=32768, from_model=DecodeConfig(model="gemma-3-27b"))
    assert r["layer_pairs"] == 7_086_467_072
    assert r["layer_pairs_doubled"] == 10 * 2_147_516_416 + 52 * (524_800 + 64_512 * 1024)
    assert r["pairs"] == 7_086_467_072 / 62
    assert r["layers"] == 62 and r["layer_mix"].startswith("52 sliding-window layers")
    a, c = r["inputs"]["a_s"], r["inputs"]["c_s"]
    assert c == 4 * 62 * 32 * 128 / H100.peak_bf16
    assert r["time_s"] == pytest.approx(a * 32768 + c * 7_086_467_072 / 62, rel=1e-15)
    assert r["doubling_ratio"] < 2.2      # mostly windowed: far from the dense 2.7


def test_context_refuses_a_window_on_a_model_with_its_own():
    with pytest.raises(LabInputError, match="give no --window"):
        calc_context(window=4096, from_model=DecodeConfig(model="gemma-3-27b"))


def test_context_from_a_mixture_of_experts_uses_its_active_weights():
    model = get_model("gpt-oss-20b")
    r = calc_context(tokens=1000, from_model=DecodeConfig(model="gpt-oss-20b"))
    assert r["coefficients"]["linear_params"] == active_linear_params(model)
    assert r["inputs"]["a_s"] == 2.0 * active_linear_params(model) / H100.peak_bf16
    # 12 sliding-window layers of 128, 12 full
    assert r["layer_pairs"] == 12 * 500_500 + 12 * (128 * 129 // 2 + 872 * 128)


# -- experiment 6: a correct refusal ----------------------------------------------------------

def test_prefix_refuses_gemma_for_its_layer_kinds_not_as_a_mixture():
    with pytest.raises(LabInputError) as err:
        calc_prefix(model="gemma-3-27b")
    assert "52 sliding-window layers of 1,024 tokens, 10 full" in str(err.value)
    assert "mixture-of-experts" not in str(err.value)


# -- experiment 7: the simulation reads each request's own keys per layer kind ---------------

def test_goodput_single_request_by_hand():
    """One request, prompt 1,020 and 6 output tokens on Gemma 3 27B: the admission step costs
    c0 + c1·1,020; decode steps at lengths 1,021…1,025 read 10·S + 52·min(S, 1,023) layer-tokens,
    so the windows fill at S = 1,023 and the read grows by 10, not 62, a step after."""
    trace = make_trace([1], [0.0], [1020], [6])
    inputs = DecodeConfig(model="gemma-3-27b").decode_inputs(GEMMA, H100)
    sim = simulate(trace, inputs, 8, 0.002, 2e-5)
    first = 0.002 + 2e-5 * 1020
    lin = float(linear_phase(GEMMA, H100, tp=1, precision="bf16", batch=1)["linear_time_s"])
    reads = [10 * s + 52 * min(s, 1023) for s in range(1021, 1026)]
    assert reads == [63_302, 63_364, 63_426, 63_436, 63_446]
    finish = first
    for read in reads:
        finish += lin + float(attention_phase(GEMMA, H100, tp=1, kv_tokens=read / 62)[
            "attention_time_s"])
    assert sim.first_token_s[0] == first
    assert sim.finish_s[0] == pytest.approx(finish, rel=1e-12)


requests = st.lists(st.tuples(st.integers(0, 300).map(lambda ms: ms / 100),
                              st.integers(1, 2000), st.integers(1, 200)), min_size=1, max_size=20)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=requests, cap=st.sampled_from([1, 3, 16]), memory=st.booleans())
def test_goodput_matches_naive_reference_with_windows(rows, cap, memory):
    """Long runs (vectorised windows) and short ones against the per-step reference."""
    trace = make_trace(range(1, len(rows) + 1), *zip(*rows, strict=True))
    model = replace(GEMMA, sliding_window=64)              # windows that fill within a trace
    inputs = DecodeInputs(model=model, gpu=H100, tp=2, precision="bf16", batch=1, context=1,
                          budget_fraction=0.9, reserve_bytes=4e9, page=16)
    memo = {"page": 16, "budget_fraction": 0.9, "reserve_bytes": 4e9} if memory else None
    sim = simulate(trace, inputs, cap, 0.002, 2e-5, memory_check=memory)
    want = reference(trace, model, H100, 2, "bf16", cap, 0.002, 2e-5, memory=memo)
    for i, rid in enumerate(trace.ids):
        if want[rid] is None:
            assert sim.rejected[i]
            continue
        assert sim.first_token_s[i] == pytest.approx(want[rid][0], rel=1e-9)
        assert sim.finish_s[i] == pytest.approx(want[rid][1], rel=1e-9)


def test_calc_goodput_models_gemma_and_names_its_mix():
    r = calc_goodput(decode=DecodeConfig(model="gemma-3-27b", tp=2), batch_cap=16)
    assert r["layer_mix"] == "52 sliding-window layers of 1,024 tokens, 10 full"
    assert r["completed_requests"] == r["requests"] == 400
    assert "layer_mix" not in calc_goodput(batch_cap=16)


# -- the pages show the layer mix -------------------------------------------------------------

def test_pages_of_experiments_7_and_10_show_the_layer_mix():
    from lab.experiments.goodput_contract import GoodputContract
    from lab.experiments.speculative_decoding import SpeculativeDecoding

    spec = SpeculativeDecoding(model="gemma-3-27b", draft="mtp", context=4096, k=4)
    assert spec.error is None
    card = next(c for c in spec.cards() if c.label == "Layer mix")
    # read(4,096) / 62 = 94,156 / 62; Σ_{j≤4} read(4,096 + j) / 62 = 470,880 / 62
    assert "1,518.65 of the 4,096 cached tokens" in card.caption
    assert "7,594.84 pairs" in card.caption
    goodput = GoodputContract(model="gemma-3-27b", tp=2, batch_cap=8)
    assert goodput.error is None
    assert [c.value for c in goodput.cards() if c.label == "Layer mix"] == [
        "52 sliding-window layers of 1,024 tokens, 10 full"]
    assert not [c for c in SpeculativeDecoding().cards() if c.label == "Layer mix"]


# -- experiment 5: its one model term, d, is experiment 1's step per layer kind ----------------

def test_prefill_decode_from_reads_each_layer_kind():
    """d = §1's step of Gemma 3 27B at batch 8, context 8,192: the KV read is B·S_eff with
    S_eff = (10·8,192 + 52·1,023) / 62 = 2,179.23, not 8,192 (the prefill curve c0 + c1·n has
    no attention term to cost)."""
    from lab.points.decode_points import calc_decode
    from lab.points.serving_points import calc_prefill

    config = DecodeConfig(model="gemma-3-27b", batch=8, context=8192)
    r = calc_prefill(decode_from=config)
    step = calc_decode(config)
    assert r["inputs"]["decode_s"] == step["step_time_s"]
    kv_tok = 2 * 62 * 16 * 128 * 2
    assert step["kv_read_bytes"] == pytest.approx(8 * (10 * 8192 + 52 * 1023) / 62 * kv_tok,
                                                  rel=1e-12)
