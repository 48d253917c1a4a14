"""Experiment 10: speculative decoding — more tokens per step, until the batch makes
verification expensive."""

from __future__ import annotations

import numpy as np
import param
import xarray as xr

from lab.catalog import get_gpu, get_model, gpu_catalog
from lab.catalog.lookup import dense_attention_catalog
from lab.derivations.speculative_steps import speculative_steps
from lab.errors import LabInputError
from lab.experiments.base import Card, Experiment, Prediction
from lab.experiments.decode_inputs import batch_axis, labelled
from lab.limits import MAX_BATCH, MAX_CONTEXT, MAX_DRAFT_TOKENS, TP_DEGREES
from lab.models.decode_step import PRECISIONS
from lab.models.kv_shapes import KV_PRECISIONS
from lab.models.speculative import MTP, UNITS, speculative_metrics
from lab.points.speculative_points import SpeculativeConfig, calc_speculative, prepare_speculative
from lab.units import fmt_gb, fmt_int, fmt_ms, fmt_number, fmt_rate

DEFAULTS = SpeculativeConfig()
CHART_ALPHAS = (0.5, 0.7, 0.9)
"""Acceptance rates the chart draws beside the current one."""
LARGE_BATCH = 512
"""The batch the prediction asks about."""
DRAFT_MEMORY = {"long_name": "drafter memory per GPU (weights + KV)", "units": "B"}
"""Attributes of the chart's ``draft_memory_bytes``."""
CHARTED = ("speedup", "per_sequence_tokens_per_s", "aggregate_tokens_per_s")
"""Chart variables over acceptance rate × batch (the drafter's memory follows)."""


def draft_problem(target: str, draft: str) -> str | None:
    """Why catalog model ``draft`` cannot draft for ``target``, in a few words (None: it
    can): the point refuses another vocabulary and a draft that is not smaller."""
    if draft == MTP:
        return None
    try:
        model, drafter = get_model(target), get_model(draft)
    except LabInputError:
        return "not in the catalog"
    if drafter.vocab != model.vocab:
        return f"another vocabulary than {model.name}'s"
    if drafter.total_params >= model.total_params:
        return f"not smaller than {model.name}"
    return None


class SpeculativeDecoding(Experiment):
    """Speculative decoding: k drafted tokens, one verification step, against plain decoding."""

    number = 10
    slug = "speculative"
    title = "Speculative decoding"
    headline = "More tokens per step. Until verification costs more."
    prediction = Prediction(
        question=(f"Drafting 4 tokens makes each sequence about twice as fast at batch 8. At "
                  f"batch {LARGE_BATCH}, does speculation still pay?"),
        choices=("Yes, just as much", "Yes, but less", "No: plain decoding is faster"),
        answer=2,
    )
    limits = (
        "Acceptance is one rate α per drafted token, independent of position and of the other "
        "tokens (Leviathan et al.'s i.i.d. assumption); real acceptance falls along the draft "
        "and varies by prompt. Greedy or sampled verification costs the same here; the "
        "rejection sampler, the KV writes of rejected tokens, tree drafts and a dynamic k are "
        "left out. Every step is experiment 1's ideal floor (dense GQA models only, their "
        "sliding-window layers read per kind; sequential linear and attention phases, vendor "
        "peaks); the draft model runs on the target's GPUs "
        "at its tp and precision, one step at a time, and its prefill of the accepted tokens is "
        "not charged. The MTP head is one transformer layer of the target plus its shared LM "
        "head and the d × 2d projection (DeepSeek-V3's MTP module), drafting k tokens by "
        "chaining itself. Memory uses the default budget (0.90 of capacity) and 4 GB reserve."
    )
    sources = (
        "Leviathan, Kalman, Matias: Fast inference from transformers via speculative decoding "
        "(ICML 2023, arXiv:2211.17192): expected tokens (1 − α^(k+1)) / (1 − α).",
        "Chen et al.: Accelerating large language model decoding with speculative sampling "
        "(arXiv:2302.01318, 2023).",
        "DeepSeek-AI: DeepSeek-V3 technical report (arXiv:2412.19437, 2024), §2.2 and §5.4.3: "
        "the MTP module; 85–90 % acceptance of the second token.",
        "GPU peaks and model shapes: the catalog (inference-lab catalog), each with its source.",
    )

    model = param.Selector(default=DEFAULTS.model, objects=list(dense_attention_catalog()),
                           check_on_set=False, label="Target model",
                           doc="The model whose tokens are kept (dense catalog models, sliding-window "
                               "layers included).")
    draft = param.Selector(default=DEFAULTS.draft, objects=[MTP, *dense_attention_catalog()],
                           check_on_set=False, label="Draft model or MTP head",
                           doc="A smaller dense model with the target's vocabulary, or mtp: "
                               "the target's multi-token-prediction head.")
    k = param.Integer(default=DEFAULTS.k, bounds=(0, MAX_DRAFT_TOKENS),
                      label="Draft tokens k (tokens)",
                      doc="Tokens drafted per cycle and sequence (0: plain decoding).")
    alpha = param.Number(default=DEFAULTS.alpha, bounds=(0.0, 1.0), step=0.01,
                         label="Acceptance rate α",
                         doc="Probability that the target accepts a drafted token, 0 to 1.")
    batch = param.Integer(default=DEFAULTS.batch, bounds=(1, MAX_BATCH),
                          label="Batch (sequences)", doc="Sequences decoding together.")
    context = param.Integer(default=DEFAULTS.context, bounds=(1, MAX_CONTEXT),
                            label="Context (tokens)",
                            doc="Tokens already in each sequence's KV cache.")
    gpu = param.Selector(default=DEFAULTS.gpu, objects=list(gpu_catalog()),
                         check_on_set=False, label="GPU", doc="Catalog GPU.")
    tp = param.Selector(default=DEFAULTS.tp, objects=list(TP_DEGREES), label="Tensor parallel",
                        doc="GPUs the target and the drafter are sharded over.")
    precision = param.Selector(default=DEFAULTS.precision, objects=list(PRECISIONS),
                               label="Precision",
                               doc="Linear-layer weights and arithmetic of both models.")
    kv_precision = param.Selector(default=DEFAULTS.kv_precision, objects=list(KV_PRECISIONS),
                                  label="KV cache precision",
                                  doc="KV cache elements of both models: BF16 (2 B) or FP8 (1 B).")

    @classmethod
    def inputs_used(cls, values: dict) -> tuple[bool, bool, tuple[str, ...]]:
        """The target model and GPU, then the drafter and every other input."""
        return True, True, ("draft", "k", "alpha", "batch", "context", "tp", "precision",
                            "kv_precision")

    def draft_options(self) -> dict[str, str]:
        """``{shown name: id}`` of the drafters for the target in force: the MTP head and the
        dense models that share the target's vocabulary and are smaller, plus the draft in
        force when it is neither, its reason in its name (the cards say it in full)."""
        options = {"MTP head (the target's own)": MTP}
        for key in self.param.draft.objects:
            if key == MTP:
                continue
            problem = draft_problem(self.model, key)
            if problem is None:
                options[get_model(key).name] = key
            elif key == self.draft:
                options[f"{get_model(key).name} ({problem})"] = key
        return options

    def config(self, **changes) -> SpeculativeConfig:
        """The current inputs as a :class:`~lab.points.speculative_points.SpeculativeConfig`."""
        return SpeculativeConfig(**{**self.inputs(), **changes})

    def compute(self) -> dict:
        return calc_speculative(self.config())

    def cards(self) -> list[Card]:
        r = self.result
        bound = "compute" if r["verify_compute_bound"] else "HBM"
        below = r["break_even_batch"]
        memory = (f"{fmt_gb(r['memory_remaining_with_draft_bytes'])} of the budget left"
                  if r["fits_with_draft"] else
                  f"{fmt_gb(-r['memory_remaining_with_draft_bytes'])} over the budget"
                  + (f" (the target alone is {fmt_gb(-r['memory_remaining_bytes'])} over it: "
                     "it does not fit at this tp)" if r["memory_remaining_bytes"] < 0 else ""))
        return [
            Card("Speed-up", f"{r['speedup']:.2f}×",
                 f"{fmt_rate(r['per_sequence_tokens_per_s'])} per sequence against "
                 f"{fmt_rate(r['plain_per_sequence_tokens_per_s'])} plain"),
            Card("Tokens per verification", fmt_number(r["expected_tokens"]),
                 f"k = {self.k} drafted, α = {self.alpha:g}: (1 − α^(k+1)) / (1 − α)"),
            Card("Cycle time", fmt_ms(r["cycle_time_s"]),
                 f"{fmt_ms(r['draft_time_s'])} drafting + {fmt_ms(r['verify_time_s'])} "
                 f"verifying ({bound}-bound)"),
            Card("Break-even batch", f"batch {below:,}" if below else "none",
                 f"slower than plain from there; verification is compute-bound past batch "
                 f"{fmt_int(r['verify_ridge_batch'])}" if below else
                 (f"faster than plain at every batch up to {MAX_BATCH:,}" if r["speedup"] > 1
                  else f"no slower than plain at any batch up to {MAX_BATCH:,}")),
            Card("Drafter memory", fmt_gb(r["draft_params_bytes"] + r["draft_kv_bytes"]),
                 f"{fmt_gb(r['draft_params_bytes'])} weights + {fmt_gb(r['draft_kv_bytes'])} "
                 f"KV / GPU; {memory}"),
            *([Card("Layer mix", r["layer_mix"],
                    f"per sequence and layer, verification reads "
                    f"{fmt_number(r['verify_context_read'])} of the {self.context:,} cached "
                    f"tokens and computes {fmt_number(r['verify_pairs_per_sequence'])} pairs")]
              if "layer_mix" in r else []),
        ]

    def steps(self):
        config = self.config()
        draft = None if config.draft == MTP else get_model(config.draft)
        return speculative_steps(self.result, get_model(config.model), draft,
                                 get_gpu(config.gpu))

    def explanation(self) -> str:
        r = self.result
        large = calc_speculative(self.config(batch=LARGE_BATCH))
        below = r["break_even_batch"]
        verdict = (f"From batch {below:,} on, plain decoding is faster." if below else
                   f"With these inputs it never falls below 1× up to batch {MAX_BATCH:,}: the "
                   "KV reads, which verification shares across its k + 1 tokens, dominate "
                   "the step.")
        return (
            f"At batch {self.batch:,} speculation gives {r['speedup']:.2f}× "
            f"({fmt_rate(r['per_sequence_tokens_per_s'])} against "
            f"{fmt_rate(r['plain_per_sequence_tokens_per_s'])} per sequence); at batch "
            f"{LARGE_BATCH} it gives {large['speedup']:.2f}×. A verification step reads the "
            f"weights once for k + 1 = {self.k + 1} tokens per sequence, nearly free while the "
            f"step is HBM-bound; but it multiplies the linear FLOPs by {self.k + 1}, so it turns "
            f"compute-bound past batch {fmt_int(r['verify_ridge_batch'])} instead of "
            f"{fmt_int(r['verify_ridge_batch'] * (self.k + 1))}, and the {self.k} draft steps "
            f"and the rejected tokens are paid at every batch. {verdict}"
        )

    def chart_data(self) -> xr.Dataset:
        """Speed-up and rates against batch (powers of two plus the current batch) for a few
        acceptance rates and the current one; the drafter's memory against batch."""
        config = self.config()
        model, draft, gpu = prepare_speculative(config)
        batch = labelled(batch_axis(self.batch), "batch", "batch", "sequences")
        alphas = np.unique(np.append(CHART_ALPHAS, self.alpha))
        alpha = labelled(alphas, "alpha", "acceptance rate α", "1")
        inputs = config.decode_config().decode_inputs(model, gpu, batch=batch)
        out = speculative_metrics(inputs, draft, self.k, alpha)
        names = (*CHARTED, "plain_per_sequence_tokens_per_s", "plain_aggregate_tokens_per_s")
        data = {name: out[name].transpose(*[d for d in ("alpha", "batch")
                                            if d in out[name].dims])
                .assign_attrs(long_name=UNITS[name][0], units=UNITS[name][1]) for name in names}
        memory = (out["draft_params_bytes"] + out["draft_kv_bytes"]).assign_attrs(DRAFT_MEMORY)
        ds = xr.Dataset({**{n: data[n] for n in CHARTED}, "draft_memory_bytes": memory,
                         **{n: data[n] for n in names[len(CHARTED):]}})
        return ds.assign_coords(batch=batch["batch"], alpha=alpha["alpha"])
