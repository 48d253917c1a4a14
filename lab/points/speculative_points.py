"""Experiment 10's single point: speculative decoding checked and ready for JSON.

:func:`calc_speculative` checks every input with a one-sentence
:class:`~lab.errors.LabInputError`, then calls :func:`lab.models.speculative.speculative_metrics`
(the function the grid broadcasts) for the point and over every batch 1 to
:data:`~lab.limits.MAX_BATCH` for the break-even batch. Outputs in SI units (s, B, tokens/s).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from lab.catalog import ModelSpec, get_model
from lab.catalog.moe_spec import routes_experts
from lab.errors import LabInputError
from lab.limits import MAX_BATCH, MAX_DRAFT_TOKENS
from lab.models.decode_step import ridge_batch
from lab.models.layer_kinds import effective_context, has_local_layers, layer_mix
from lab.models.memory import memory_fit
from lab.models.speculative import MTP, speculative_metrics, verify_layer_pairs
from lab.points.decode_points import DecodeConfig, prepare, to_python
from lab.points.validity import check_decode_point, check_range

WHAT = "Experiment 10 (speculative decoding)"
"""How refusals name the experiment."""


@dataclass(frozen=True)
class SpeculativeConfig:
    """Experiment 10's inputs: the target's decode configuration, the drafter, ``k`` and ``α``.

    ``draft`` is a dense catalog model id (or a ``config.json`` path) sharing the target's
    vocabulary, or ``"mtp"`` for the target's own multi-token-prediction head; ``k`` tokens
    are drafted per cycle and sequence, each accepted with probability ``alpha``.
    """

    model: str = "llama-3.1-8b"
    draft: str = "llama-3.2-1b"
    gpu: str = "h100-sxm"
    tp: int = 1
    precision: str = "bf16"
    kv_precision: str = "bf16"
    batch: int = 8
    context: int = 512
    k: int = 4
    alpha: float = 0.8

    def decode_config(self) -> DecodeConfig:
        """The target's decode configuration (default memory budget, reserve and page)."""
        return DecodeConfig(model=self.model, gpu=self.gpu, tp=self.tp, precision=self.precision,
                            batch=self.batch, context=self.context,
                            kv_precision=self.kv_precision)


def refuse_moe(model, role: str) -> None:
    """One sentence for a mixture-of-experts or MLA target or draft (a dense model with
    sliding-window layers, Gemma 3, is modelled: :func:`~lab.models.speculative.verify_step`)."""
    if routes_experts(model):
        kind = "a multi-head latent attention" if model.kv_lora_rank else "a mixture-of-experts"
        raise LabInputError(f"{WHAT} models dense grouped-query-attention models only; the "
                            f"{role} {model.name} is {kind} model.")


def resolve_draft(config: SpeculativeConfig, model: ModelSpec, gpu) -> ModelSpec | None:
    """The draft model checked against the target (None: the MTP head)."""
    if config.draft == MTP:
        return None
    draft = get_model(config.draft)
    refuse_moe(draft, "draft model")
    if draft.vocab != model.vocab:
        raise LabInputError(f"The draft model {draft.name} has a vocabulary of {draft.vocab:,} "
                            f"tokens and {model.name} one of {model.vocab:,}; a draft must share "
                            "the target's tokenizer.")
    if draft.total_params >= model.total_params:
        raise LabInputError(f"The draft model {draft.name} is not smaller than {model.name}; "
                            "a draft model must be the smaller one.")
    check_decode_point(draft, gpu, config.tp, config.precision, config.context)
    return draft


def prepare_speculative(config: SpeculativeConfig) -> tuple[ModelSpec, ModelSpec | None, object]:
    """Check every input; return the target model, the draft model (None: MTP) and the GPU."""
    check_range("k", config.k, 0, MAX_DRAFT_TOKENS, unit="drafted tokens")
    check_range("alpha", config.alpha, 0, 1, integer=False)
    model, gpu = prepare(config.decode_config())
    refuse_moe(model, "target")
    return model, resolve_draft(config, model, gpu), gpu


def break_even_batch(speedups: np.ndarray) -> int | None:
    """The smallest batch (``speedups[i]`` is at batch ``i + 1``) where speculation is slower
    than plain decoding, or None when it never is up to :data:`~lab.limits.MAX_BATCH`."""
    below = np.flatnonzero(np.asarray(speedups) < 1.0)
    return int(below[0]) + 1 if below.size else None


def calc_speculative(config: SpeculativeConfig) -> dict:
    """Experiment 10: the cycle of drafting and verification against plain decoding, one record.

    Keys: ``inputs``; every output of :func:`~lab.models.speculative.speculative_metrics`;
    ``verify_ridge_batch`` (the batch where the verification's linear phase turns
    compute-bound, ``ridge / (k + 1)``); ``break_even_batch`` (or None); the target's memory
    (``memory_params_bytes``, ``memory_kv_bytes``, ``memory_budget_bytes``,
    ``memory_remaining_bytes``) and ``memory_remaining_with_draft_bytes`` and
    ``fits_with_draft`` once the drafter's weights and KV are added.
    """
    model, draft, gpu = prepare_speculative(config)
    inputs = config.decode_config().decode_inputs(model, gpu)
    raw = speculative_metrics(inputs, draft, config.k, config.alpha)
    record = {key: to_python(value) for key, value in raw.items()}
    every_batch = inputs.with_(batch=np.arange(1, MAX_BATCH + 1))
    record["break_even_batch"] = break_even_batch(
        speculative_metrics(every_batch, draft, config.k, config.alpha)["speedup"])
    record["verify_ridge_batch"] = to_python(ridge_batch(gpu, config.precision) / (config.k + 1))
    memory = {key: to_python(value) for key, value in memory_fit(inputs).items()}
    record.update({key: memory[key] for key in ("memory_params_bytes", "memory_kv_bytes",
                                                "memory_budget_bytes", "memory_reserve_bytes",
                                                "memory_remaining_bytes")})
    record["memory_remaining_with_draft_bytes"] = (
        memory["memory_remaining_bytes"] - record["draft_params_bytes"] - record["draft_kv_bytes"])
    record["fits_with_draft"] = record["memory_remaining_with_draft_bytes"] >= 0
    if has_local_layers(model):
        record["layer_mix"] = layer_mix(model)
        record["verify_context_read"] = to_python(effective_context(model, config.context))
        record["verify_pairs_per_sequence"] = to_python(
            verify_layer_pairs(model, config.k, config.context))
    shown = asdict(config)
    shown.update(model=model.id, gpu=gpu.id, draft=draft.id if draft else MTP)
    return {"inputs": shown, **record}
