"""Experiment pages with a mixture-of-experts or MLA model, at the Bokeh-document level (issue
14): experiment 1 draws the weights a step reads against batch, rising until every expert is
read; experiment 2 shows MLA's latent KV per token. Every expected number is hand-computed from
the configs in tests/data/hf_configs/ (the catalog's entries are the same shapes)."""

from __future__ import annotations

from itertools import pairwise

import panel as pn
import pytest
from bokeh.models import HoverTool
from panel.io.location import Location

from apps.ui.views.experiment_view import ExperimentView
from apps.ui.views.pages import experiment_class

# Mixtral-8x7B (mixtral-8x7b-v0.1/config.json): d 4096, L 32, H 32, K 8, h 128, E 8, k 2,
# F_e 14336, V 32000, untied. Per layer: attention 2·4096·4096 + 2·4096·1024 = 41,943,040
# and the router 4096·8 = 32,768; one expert 3·4096·14336 = 176,160,768.
MIXTRAL_SHARED = 32 * (41_943_040 + 32_768) + 4096 * 32_000  # + the LM head = 1,474,297,856
MIXTRAL_EXPERT = 3 * 4096 * 14_336
MIXTRAL_TOUCHED_AT_8 = 8 * (1 - (6 / 8) ** 8)  # 7.1991 distinct experts per layer
GB = 1e9


def page(document, search: str) -> ExperimentView:
    """An experiment page as the server builds it for a request with ``search``."""
    pn.state._locations[document] = Location(search=search)
    slug = dict(p.split("=", 1) for p in search[1:].split("&"))["view"]
    view = ExperimentView(experiment=experiment_class(slug)())
    view.__panel__().get_root(document)
    assert view.message.object == "" or not view.message.visible, view.message.object
    return view


def cards(view: ExperimentView) -> dict[str, tuple[str, str]]:
    """The page's cards by label: (value, caption)."""
    return {c.label: (c.value, c.caption) for c in view.experiment.cards()}


def steps(view: ExperimentView) -> list[str]:
    return [s.text() for s in view.experiment.steps()]


def test_mixtral_on_experiment_1_draws_the_expert_read_curve(document):
    view = page(document, "?view=decode&model=mixtral-8x7b&batch=8")
    chart = view.chart._experts
    assert chart is not None and len(view.chart._grid) == 3
    assert abs(MIXTRAL_TOUCHED_AT_8 - 7.19909668) < 1e-8
    line = chart.series.data
    data = view.chart.data[0]  # what the chart data (CSV) download holds
    assert data["experts_touched"].sel(batch=8).item() == pytest.approx(MIXTRAL_TOUCHED_AT_8)
    assert list(line["batch"]) == [2.0**i for i in range(11)]
    assert list(line["experts_touched"][:3]) == pytest.approx([2.0, 3.5, 5.46875])
    # Weight reads (GB, tp 1, BF16): shared once + 32 layers × n(B) experts, 2 B each.
    expected = [(MIXTRAL_SHARED + 32 * n * MIXTRAL_EXPERT) * 2 / GB
                for n in line["experts_touched"]]
    assert list(line["linear_weight_bytes"]) == pytest.approx(expected, rel=1e-12)
    assert line["linear_weight_bytes"][0] == pytest.approx(25.50, abs=0.005)  # docs/model.md
    rising = line["linear_weight_bytes"][:6]  # batch 1 … 32: rising until every expert is read
    assert all(b > a for a, b in pairwise(rising))
    # The current batch, marked.
    point = chart.current.data
    assert list(point["batch"]) == [8.0]
    assert point["experts_touched"][0] == pytest.approx(MIXTRAL_TOUCHED_AT_8, rel=1e-12)
    assert point["linear_weight_bytes"][0] == pytest.approx(
        (MIXTRAL_SHARED + 32 * MIXTRAL_TOUCHED_AT_8 * MIXTRAL_EXPERT) * 2 / GB, rel=1e-12)
    assert point["linear_weight_bytes"][0] == pytest.approx(84.11, abs=0.005)
    # Every expert read: 46,571,454,464 params × 2 B = 93.14 GB, where the curve levels off.
    assert MIXTRAL_SHARED + 32 * 8 * MIXTRAL_EXPERT == 46_571_454_464
    assert chart.ceiling.location == pytest.approx(93.142908928, rel=1e-12)
    assert chart.ceiling_label.text == "every expert read (8 of 8 per layer): 93.14 GB"
    assert line["linear_weight_bytes"][-1] == pytest.approx(chart.ceiling.location, rel=1e-9)
    # Hover with units; the routing assumption stated under the chart.
    tips = dict(next(t for t in chart.figure.tools if isinstance(t, HoverTool)).tooltips)
    assert "Linear weight reads per GPU (GB)" in tips and "Batch (sequences)" in tips
    assert tips["Distinct experts read per MoE layer (experts)"] == (
        "@experts_touched{0,0.00} of @experts")
    assert view.chart._routing.visible
    assert "Uniform routing assumed" in view.chart._routing.object
    assert "E·(1 − (1 − k/E)^B)" in view.chart._routing.object


def test_mixtral_cards_show_total_active_and_experts_touched(document):
    view = page(document, "?view=decode&model=mixtral-8x7b&batch=8")
    shown = cards(view)
    assert shown["Parameters"][0] == "46.70 billion total"  # 46,702,792,704 (card: 46.7 B)
    assert shown["Parameters"][1].startswith("12.88 billion active per token: 2 of 8 experts")
    assert shown["Experts read per MoE layer"][0] == "7.20 of 8"
    assert "84.11 GB of weights read / GPU" in shown["Experts read per MoE layer"][1]
    html = view.cards._pane.object
    assert "7.20 of 8" in html and "46.70 billion total" in html


def test_mixtral_calculation_has_the_expert_lines(document):
    view = page(document, "?view=decode&model=mixtral-8x7b&batch=8")
    text = steps(view)
    assert ("Experts touched per MoE layer = 8 × (1 − (1 − 2/8)^8) (uniform routing) "
            "= 7.20 of 8") in text
    assert ("Weight reads once every expert is read = 46,571,454,464 params (shared + all 8 "
            "experts) × 2 B, / 1 (routers and MLA down-projections whole) = 93.14 GB / GPU "
            "(the ceiling as the batch grows)") in text
    assert not any("MLA latent" in line for line in text)  # Mixtral caches K and V per head


def test_a_dense_model_has_no_expert_chart(document):
    view = page(document, "?view=decode&model=llama-3.1-8b")
    assert view.chart._experts is None and len(view.chart._grid) == 2
    assert not view.chart._routing.visible
    assert "Parameters" not in cards(view) and "experts_touched" not in view.chart.data[0]
    assert not any("expert" in line for line in steps(view))


def test_switching_between_dense_and_moe_adds_and_removes_the_chart(document):
    view = page(document, "?view=decode&model=llama-3.1-8b")
    exp = view.experiment
    exp.model = "qwen3-30b-a3b"
    view.chart._draw()
    chart = view.chart._experts
    assert chart is not None and len(view.chart._grid) == 3 and view.chart._routing.visible
    # Qwen3-30B-A3B: E 128, k 8; batch 8 touches 128·(1 − (120/128)^8) experts per layer.
    assert chart.current.data["experts_touched"][0] == pytest.approx(
        128 * (1 - (120 / 128) ** 8), rel=1e-12)
    assert chart.ceiling_label.text.startswith("every expert read (128 of 128 per layer)")
    exp.batch = 64
    view.chart._draw()
    assert view.chart._experts is chart  # moved in place
    assert chart.current.data["experts_touched"][0] == pytest.approx(
        128 * (1 - (120 / 128) ** 64), rel=1e-12)
    exp.model = "llama-3.1-8b"
    view.chart._draw()
    assert view.chart._experts is None and len(view.chart._grid) == 2
    assert not view.chart._routing.visible


# DeepSeek-V2-Lite (deepseek-v2-lite/config.json): kv_lora_rank 512, qk_rope_head_dim 64,
# 27 layers, 16 heads, qk_nope_head_dim 128, v_head_dim 128.
LATENT_BF16 = (512 + 64) * 27 * 2  # 31,104 B per token
HEADS_BF16 = 16 * (128 + 64 + 128) * 27 * 2  # 276,480 B per token without the latent


def test_deepseek_v2_lite_memory_page_shows_the_latent_kv(document):
    assert (LATENT_BF16, HEADS_BF16) == (31_104, 276_480)
    view = page(document, "?view=memory&model=deepseek-v2-lite")
    value, caption = cards(view)["KV per token (MLA latent)"]
    assert value == "31,104 B"
    assert caption.startswith("(512 + 64) × 27 layers × 2 B on every GPU")
    assert "replicated across the tp group, not split by tp" in caption
    assert "276,480 B (8.9×)" in caption
    assert "31,104 B" in view.cards._pane.object
    # KV per sequence: ceil((8,192 + 1) / 16) = 513 pages of 16 tokens, not divided by tp.
    per_sequence = 513 * 16 * LATENT_BF16
    assert view.experiment.result["kv_bytes_per_sequence"] == per_sequence
    text = steps(view)
    assert ("KV per token (MLA latent) = (512 + 64) × 27 layers × 2 B, whole on every GPU "
            "(replicated across the tp group, not split) = 31,104 B") in text
    assert ("Per-head K and V instead (comparison) = 16 heads × (128 + 64 + 128) × 27 layers "
            "× 2 B = 276,480 B (8.9× the latent)") in text


def test_mla_latent_is_not_split_by_tp_and_halves_at_fp8(document):
    view = page(document, "?view=memory&model=deepseek-v2-lite&tp=2&kv_precision=fp8")
    value, caption = cards(view)["KV per token (MLA latent)"]
    assert value == f"{LATENT_BF16 // 2:,} B" == "15,552 B"
    assert "× 1 B on every GPU" in caption
    assert view.experiment.result["kv_bytes_per_sequence"] == 513 * 16 * LATENT_BF16 // 2


def test_a_gqa_model_has_no_latent_card(document):
    for search in ("?view=memory&model=llama-3.1-8b", "?view=memory&model=mixtral-8x7b"):
        view = page(document, search)
        assert "KV per token (MLA latent)" not in cards(view), search
        assert not any("MLA latent" in line for line in steps(view)), search
