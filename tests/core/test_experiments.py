"""The param classes of experiments 1–4: inputs in, outputs and explanations out."""

from __future__ import annotations

import numpy as np
import pytest

from lab.experiments import all_experiments
from lab.experiments.batch_bottleneck import BatchBottleneck
from lab.experiments.precision_switch import PrecisionSwitch
from lab.experiments.sequences_fit import SequencesFit
from lab.experiments.tensor_parallel import TensorParallel


def test_batch_defaults_show_the_page_cards():
    values = {card.label: card.value for card in BatchBottleneck().cards()}
    assert values["Ideal step time"] == "7.04 ms"
    assert values["Aggregate ceiling"] == "1,136 tok/s"
    assert values["Linear bottleneck"] == "HBM"
    assert values["What attention adds"] == "2.56 ms"
    assert values["Memory remaining"] == "43.33 GB"


def test_changing_an_input_recomputes():
    experiment = BatchBottleneck()
    experiment.batch = 16
    assert experiment.result["inputs"]["batch"] == 16
    assert experiment.result["step_time_s"] > 0.00704


def test_invalid_input_sets_error_not_exception():
    experiment = BatchBottleneck(model="qwen2.5-7b", tp=8)
    assert experiment.result is None
    assert "does not divide the 28 query heads" in experiment.error
    experiment.tp = 4
    assert experiment.error is None and experiment.result is not None


def test_fp8_on_a100_is_reported():
    experiment = PrecisionSwitch(gpu="a100-sxm-80gb")
    assert "no FP8" in experiment.error


def test_precision_explanation_names_the_kv_cache_precision():
    """The KV cache keeps its own precision in both runs of experiment 4: with an FP8 KV cache
    the attention phase reads half the bytes (llama-3.1-8b, batch 8, context 8,192:
    8.59 → 4.29 GB at 3.35 TB/s, 2.56 → 1.28 ms), and the explanation says FP8, not BF16."""
    default = PrecisionSwitch().explanation()
    assert "reads a BF16 KV cache and stays at 2.56 ms" in default
    fp8_kv = PrecisionSwitch(kv_precision="fp8")
    assert fp8_kv.result["fp8"]["kv_read_bytes"] == 8_589_934_592 / 2
    text = fp8_kv.explanation()
    assert "reads an FP8 KV cache and stays at 1.28 ms" in text and "BF16" not in text


def test_param_bounds():
    with pytest.raises(ValueError, match="batch"):
        BatchBottleneck(batch=0)
    assert BatchBottleneck.param.batch.bounds == (1, 1024)


def test_chart_over_budget_points_flagged():
    data = BatchBottleneck().chart_data()
    fits = data["fits"].values
    assert fits[0] and not fits[-1]
    assert data["step_time_s"].attrs["units"] == "s"
    assert data["batch"].attrs["units"] == "sequences"
    assert np.all(np.diff(data["step_time_s"].values) > 0)


@pytest.mark.parametrize("cls", all_experiments())
def test_every_experiment_has_the_seven_elements(cls):
    experiment = cls()
    assert experiment.error is None
    assert experiment.headline.count(".") == 2
    assert experiment.prediction.question.endswith("?")
    assert 0 <= experiment.prediction.answer < len(experiment.prediction.choices)
    assert 3 <= len(experiment.cards()) <= 5
    assert experiment.steps()
    assert experiment.explanation()
    assert experiment.limits and experiment.sources
    chart = experiment.chart_data()
    for name in [*chart.data_vars, *chart.coords]:
        assert "units" in chart[name].attrs, name
        assert "long_name" in chart[name].attrs, name
    for name in experiment.input_names():
        assert experiment.param[name].doc, name


def test_sequences_fit_halves_with_context():
    experiment = SequencesFit()
    assert experiment.result["max_sequences"] == 48
    experiment.context = 16384
    assert experiment.result["max_sequences"] == 24


def test_tensor_parallel_cards_for_invalid_tp():
    experiment = TensorParallel(model="qwen2.5-7b", tp=8)
    cards = experiment.cards()
    assert cards[0].value == "unavailable"
    assert "28 query heads" in cards[0].caption


def test_tensor_parallel_allreduce_reduces_speedup():
    experiment = TensorParallel(tp=8, allreduce=True, batch=64)
    assert "only" in experiment.explanation()
    assert experiment.current()["speedup_vs_tp1"] < 8


def test_precision_speedup_falls_with_context():
    speedup = PrecisionSwitch().chart_data()["speedup"].sel(batch=8).values
    assert np.all(np.diff(speedup) < 0)
    assert np.all((speedup > 1) & (speedup < 2))


def test_page_bounds_are_the_cli_limits():
    """One limit per input: the experiment classes bound tp and the reserve as the CLI does."""
    from lab.experiments.batch_bottleneck import BatchBottleneck
    from lab.limits import MAX_RESERVE_GB, TP_DEGREES

    assert BatchBottleneck.param.tp.objects == list(TP_DEGREES)
    assert BatchBottleneck.param.reserve_gb.bounds[1] == MAX_RESERVE_GB


def _bounded_inputs():
    import param

    for cls in all_experiments():
        for name in cls.input_names():
            parameter = cls.param[name]
            if isinstance(parameter, param.Number) and parameter.bounds is not None \
                    and parameter.bounds[1] is not None:
                yield pytest.param(cls, name, id=f"{cls.slug}-{name}")


@pytest.mark.parametrize("cls,name", list(_bounded_inputs()))
def test_an_input_out_of_its_bounds_is_refused_in_the_labs_words(cls, name):
    """param's own sentence ("Integer parameter 'SpeculativeDecoding.k' must be at most 16")
    names a class the reader never sees; the lab's names the input and its range."""
    from lab.errors import LabInputError

    values = {n: p.default for n, p in cls.command_line_inputs().items()}
    high = cls.param[name].bounds[1]
    values[name] = high * 2 + 1
    with pytest.raises(LabInputError) as refused:
        cls.calculate(values)
    message = str(refused.value)
    assert "parameter '" not in message and cls.__name__ not in message
    assert "must be" in message and message.endswith(".")


def test_a_crossover_below_one_token_says_what_it_means(capsys):
    """n* = 2a/c − 1 is −1 tokens at a = 0 (the spec's formula, kept exact); the card and the
    derivation now say that attention outweighs the linear part from the first token."""
    from cli.main import main
    from lab.experiments.context_growth_experiment import ContextGrowth

    exp = ContextGrowth(a_ms=0.0)
    card = next(c for c in exp.cards() if c.label == "Crossover n*")
    assert card.value == "−1 tokens" and card.caption.startswith("below 1: attention outweighs")
    assert main(["calc", "context", "--a-ms", "0"]) == 0
    assert "= −1 tokens (below 1: the attention part outweighs" in capsys.readouterr().out
    assert "where a·n = c·pairs" in next(c for c in ContextGrowth().cards()
                                         if c.label == "Crossover n*").caption
