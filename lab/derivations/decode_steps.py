"""“Show the calculation”: each derivation with the actual numbers substituted.

The formatters take a record from :mod:`lab.points.decode_points` (full precision, SI units) and return
:class:`Step` rows in docs/model.md's order; rounding happens here and only here. The CLI prints
them as text (:func:`render_text`); the apps render the same rows.
"""

from __future__ import annotations

from dataclasses import dataclass

from lab.catalog import GPUSpec, ModelSpec
from lab.catalog.moe_spec import MoESpec
from lab.models import kv_shapes, layer_kinds
from lab.models.decode_step import linear_params, peak_flops
from lab.models.kv_shapes import kv_bytes_per_element, kv_bytes_per_token
from lab.models.memory import pages
from lab.models.moe import (
    all_experts_params,
    all_experts_weight_bytes,
    experts_touched,
    routed_expert_weights,
    step_weight_params,
)
from lab.models.moe_params import active_linear_params, shared_linear_params
from lab.models.weight_formats import expert_format, is_expert_only, is_fp4, rest_format, weight_bytes
from lab.units import (
    MIB,
    MS_PER_S,
    TB_PER_S,
    TFLOPS,
    fmt_gb,
    fmt_gflop,
    fmt_int,
    fmt_ms,
    fmt_number,
    fmt_rate,
)


@dataclass(frozen=True)
class Step:
    """One line of a derivation: ``label = expression = result``."""

    label: str
    expression: str
    result: str

    def text(self) -> str:
        """The line as plain text; the expression is left out when it equals the result."""
        if self.expression and self.expression != self.result:
            return f"{self.label} = {self.expression} = {self.result}"
        return f"{self.label} = {self.result}"


def weight_bytes_text(precision: str) -> str:
    """Bytes per weight as a derivation writes it: ``2``, ``1``, or ``0.53125`` (MXFP4)."""
    value = weight_bytes(precision)
    return f"{int(value)}" if float(value).is_integer() else f"{float(value):g}"


def split_weights_text(params: int, routed: int, tp: int, ep: int, precision: str,
                       what: str) -> str:
    """``params`` weights, ``routed`` of them routed experts, as one GPU of an ``ep × tp``
    layout holds or reads them, in an expert-only format or with expert parallelism:
    ``(N − R) params × 2 B / tp + R expert params × 0.53125 B / (ep × tp)``."""
    experts_split = f"({ep} × {tp})" if ep > 1 else f"{tp}"
    return (f"{fmt_int(params - routed)} other params × {weight_bytes_text(rest_format(precision))}"
            f" B / {tp} + {fmt_int(routed)} {what} params × "
            f"{weight_bytes_text(expert_format(precision))} B / {experts_split}")


def peak_name(precision: str) -> str:
    """The peak a linear layer at ``precision`` runs on: ``BF16``, ``FP8`` or ``FP4``."""
    if is_fp4(precision):
        return "FP4"
    return "FP8" if precision == "fp8" else "BF16"


def render_text(steps: list[Step]) -> str:
    """The derivation as plain text, one step per line."""
    return "\n".join(step.text() for step in steps)


def _tflops(flops: float) -> str:
    return f"{fmt_number(flops / TFLOPS, 1)} TFLOPS"


def _tbps(bw: float) -> str:
    return f"{fmt_number(bw / TB_PER_S, 3).rstrip('0').rstrip('.')} TB/s"


def memory_sentence(record: dict) -> str:
    """``43.33 GB remains inside the chosen budget.`` or how far over budget it is."""
    remaining = record["memory_remaining_bytes"]
    if remaining >= 0:
        return f"{fmt_gb(remaining)} remains inside the chosen budget."
    return f"{fmt_gb(-remaining)} over the chosen budget."


def _attention_phase_step(record: dict) -> Step:
    """The attention phase of a decode record: the larger of its memory and compute times."""
    return Step("Attention phase",
                f"max(KV / bandwidth, FLOPs / BF16 peak) = "
                f"max({fmt_ms(record['attention_memory_time_s'])}, "
                f"{fmt_ms(record['attention_compute_time_s'])})",
                fmt_ms(record["attention_time_s"]))


def _linear_time_steps(record: dict, gpu, peak_name: str, peak: float,
                       bottleneck: str) -> list[Step]:
    """HBM time, compute time and the linear phase of a decode record (dense or MoE)."""
    return [
        Step("HBM time", f"{fmt_gb(record['linear_weight_bytes'])} / {_tbps(gpu.hbm_bw)}",
             fmt_ms(record["hbm_time_s"])),
        Step("Linear compute time",
             f"{fmt_gflop(record['linear_flops'])} / {_tflops(peak)} {peak_name}",
             fmt_ms(record["linear_compute_time_s"])),
        Step("Linear phase", "max(HBM, compute)",
             f"{fmt_ms(record['linear_time_s'])} ({bottleneck}-bound)"),
    ]


def decode_steps(record: dict, model: ModelSpec, gpu: GPUSpec) -> list[Step]:
    """Experiment 1's derivation, in the lab page's order, from a
    :func:`~lab.points.decode_points.calc_decode` record."""
    inputs = record["inputs"]
    tp, batch, context, precision = (inputs["tp"], inputs["batch"], inputs["context"],
                                     inputs["precision"])
    n_lin = int(linear_params(model))
    nbytes = weight_bytes_text(precision)
    kv_tok = int(kv_bytes_per_token(model, inputs.get("kv_precision", "bf16")))
    peak = peak_flops(gpu, precision)
    bottleneck = "HBM" if record["linear_bottleneck"] == "hbm" else "compute"
    if isinstance(model, MoESpec):
        return _moe_decode_steps(record, model, gpu, peak_name(precision), peak, bottleneck)
    steps = [
        Step("Linear weight reads", f"{fmt_int(n_lin)} params × {nbytes} B / {tp}",
             f"{fmt_gb(record['linear_weight_bytes'])} / GPU"),
        Step("Linear FLOPs", f"2 × {fmt_int(n_lin)} × {batch} / {tp}",
             f"{fmt_gflop(record['linear_flops'])} / GPU"),
        *_linear_time_steps(record, gpu, peak_name(precision), peak, bottleneck),
        Step("KV reads", f"{batch:,} × {context:,} × {kv_tok:,} B / {tp}",
             f"{fmt_gb(record['kv_read_bytes'])} / GPU"),
        Step("Attention FLOPs",
             f"4 × {batch:,} × {context:,} × {model.layers} × {model.heads} × {model.head_dim} / {tp}",
             f"{fmt_gflop(record['attention_flops'])} / GPU"),
        _attention_phase_step(record),
    ]
    return steps + _step_and_memory(record, model, batch, gpu)


def all_to_all_step(record: dict, model: MoESpec, gpu: GPUSpec) -> Step:
    """The all-to-all extension of an ``ep × tp`` record: dispatch and combine bytes per GPU
    over one direction of the interconnect (:mod:`lab.models.expert_parallel`)."""
    inputs = record["inputs"]
    ep, tp, batch = inputs["ep"], inputs["tp"], inputs["batch"]
    return Step("All-to-all (extension)",
                f"2 × {model.moe_layers} MoE layers × {batch:,} × {model.experts_per_token} "
                f"experts × ({ep} − 1)/{ep} × {model.hidden:,} × 2 B / ({ep} × {tp}) = "
                f"{fmt_number(record['all_to_all_bytes_per_gpu'] / MIB)} MiB per GPU, / "
                f"{_tbps(gpu.interconnect_bw / 2)} one direction (uniform routing)",
                fmt_ms(record["all_to_all_time_s"]))


def _group_batch(record: dict) -> str:
    """The batch one ``tp`` group runs: ``8`` or, with expert parallelism, ``64/4``."""
    inputs = record["inputs"]
    ep = inputs.get("ep", 1)
    return f"{inputs['batch']:,}" if ep == 1 else f"{inputs['batch']:,}/{ep}"


def _step_and_memory(record: dict, model: ModelSpec, batch: int,
                     gpu: GPUSpec | None = None) -> list[Step]:
    """The step floor, the aggregate ceiling and the memory card, any model."""
    steps: list[Step] = []
    step_terms = (f"{fmt_number(record['linear_time_s'] * MS_PER_S)} + "
                  f"{fmt_number(record['attention_time_s'] * MS_PER_S)}")
    if record.get("allreduce_time_s"):
        steps.append(Step("All-reduce (extension)",
                          f"2 × {model.layers} layers × ring all-reduce of "
                          f"{_group_batch(record)} × {model.hidden:,} × 2 B",
                          fmt_ms(record["allreduce_time_s"])))
        step_terms += f" + {fmt_number(record['allreduce_time_s'] * MS_PER_S)}"
    if record.get("all_to_all_time_s") and gpu is not None:
        steps.append(all_to_all_step(record, model, gpu))
        step_terms += f" + {fmt_number(record['all_to_all_time_s'] * MS_PER_S)}"
    steps += [
        Step("Step floor", step_terms, fmt_ms(record["step_time_s"])),
        Step("Aggregate ceiling", f"{batch:,} / {record['step_time_s']:.6f} s",
             f"{fmt_rate(record['aggregate_tokens_per_s'])} "
             f"({fmt_rate(record['per_sequence_tokens_per_s'])} per sequence)"),
        Step("Memory remaining",
             f"{fmt_gb(record['memory_budget_bytes'])} budget − "
             f"{fmt_gb(record['memory_params_bytes'])} weights − "
             f"{fmt_gb(record['memory_kv_bytes'])} KV − "
             f"{fmt_gb(record['memory_reserve_bytes'])} reserve",
             memory_sentence(record)),
    ]
    return steps


def _mla_kv_steps(model: MoESpec, kv_precision: str) -> list[Step]:
    """MLA: the cached latent per token, replicated across the tp group, and what per-head
    keys and values of the same heads would take instead (none for GQA)."""
    if model.kv_lora_rank <= 0:
        return []
    b_kv = int(kv_bytes_per_element(kv_precision))
    latent = int(kv_shapes.kv_bytes_per_token(model, kv_precision))
    heads = int(kv_shapes.head_kv_bytes_per_token(model, kv_precision))
    return [
        Step("KV per token (MLA latent)",
             f"({model.kv_lora_rank} + {model.qk_rope_head_dim}) × {model.layers} layers × "
             f"{b_kv} B, whole on every GPU (replicated across the tp group, not split)",
             f"{latent:,} B"),
        Step("Per-head K and V instead (comparison)",
             f"{model.heads} heads × ({model.qk_nope_head_dim} + {model.qk_rope_head_dim} + "
             f"{model.v_head_dim}) × {model.layers} layers × {b_kv} B",
             f"{heads:,} B ({heads / latent:.1f}× the latent)"),
    ]


def _moe_decode_steps(record: dict, model: MoESpec, gpu: GPUSpec, peak_name: str, peak,
                      bottleneck: str) -> list[Step]:
    """Experiment 1's derivation for a mixture-of-experts or MLA model (docs/model.md §0,
    "Mixture of experts, MLA and KV precision")."""
    inputs = record["inputs"]
    tp, batch, context, precision = (inputs["tp"], inputs["batch"], inputs["context"],
                                     inputs["precision"])
    ep = inputs.get("ep", 1)
    kv_precision = inputs.get("kv_precision", "bf16")
    nbytes = weight_bytes_text(precision)
    n_read = round(float(step_weight_params(model, batch)))
    n_act = int(active_linear_params(model))
    n_all = int(all_experts_params(model))
    mla = model.kv_lora_rank > 0
    kv_tok_gpu = int(kv_shapes.kv_bytes_per_token_per_gpu(model, 1, kv_precision))
    kv_split = " (MLA latent, replicated on every GPU)" if mla else f" / {tp}"
    per_pair = int(kv_shapes.attention_flops_per_pair(model))
    if model.experts == 0:  # a dense model read for its layer kinds (Gemma 3)
        steps = [
            Step("Linear weight reads", f"{fmt_int(n_read)} params × {nbytes} B / {tp}",
                 f"{fmt_gb(record['linear_weight_bytes'])} / GPU"),
            Step("Linear FLOPs", f"2 × {fmt_int(n_act)} × {batch:,} / {tp}",
                 f"{fmt_gflop(record['linear_flops'])} / GPU"),
            *_linear_time_steps(record, gpu, peak_name, peak, bottleneck),
            *_local_read_steps(record, model, batch, context, kv_tok_gpu, kv_split, per_pair, tp),
            _attention_phase_step(record),
        ]
        return steps + _step_and_memory(record, model, batch, gpu)
    # after the dense branch: a dense model has no experts to touch (a division by 0)
    touched = float(experts_touched(model.experts, model.experts_per_token, batch))
    reads = (f"{fmt_int(n_read)} params (shared + touched experts) × {nbytes} B, / {tp} "
             "(routers and MLA down-projections whole)")
    every = (f"{fmt_int(n_all)} params (shared + all {model.experts} experts) × {nbytes} B, "
             f"/ {tp} (routers and MLA down-projections whole)")
    flops_batch = f"{batch:,}"
    if ep > 1 or is_expert_only(precision):
        shared = int(shared_linear_params(model))
        reads = split_weights_text(n_read, n_read - shared, tp, ep, precision, "touched-expert")
        every = split_weights_text(n_all, n_all - shared, tp, ep, precision, "expert")
        flops_batch = _group_batch(record)
    steps = [
        Step("Experts touched per MoE layer",
             f"{model.experts} × (1 − (1 − {model.experts_per_token}/{model.experts})^{batch:,}) "
             "(uniform routing)", f"{touched:.2f} of {model.experts}"),
        Step("Linear weight reads", reads, f"{fmt_gb(record['linear_weight_bytes'])} / GPU"),
        Step("Weight reads once every expert is read", every,
             f"{fmt_gb(all_experts_weight_bytes(model, tp, precision, ep))} / GPU "
             "(the ceiling as the batch grows)"),
        Step("Linear FLOPs", f"2 × {fmt_int(n_act)} active params × {flops_batch}, / {tp}",
             f"{fmt_gflop(record['linear_flops'])} / GPU"),
        *_linear_time_steps(record, gpu, peak_name, peak, bottleneck),
        *_mla_kv_steps(model, kv_precision),
        *(_local_read_steps(record, model, flops_batch, context, kv_tok_gpu, kv_split,
                            per_pair, tp)
          if layer_kinds.has_local_layers(model) else [
              Step("KV reads", f"{flops_batch} × {context:,} × {kv_tok_gpu:,} B{kv_split}",
                   f"{fmt_gb(record['kv_read_bytes'])} / GPU"),
              Step("Attention FLOPs",
                   f"{fmt_int(per_pair)} FLOP per pair{' (MLA, absorbed)' if mla else ''} × "
                   f"{flops_batch} × {context:,} / {tp}",
                   f"{fmt_gflop(record['attention_flops'])} / GPU")]),
        _attention_phase_step(record),
    ]
    return steps + _step_and_memory(record, model, batch, gpu)


def _read_terms(model: MoESpec, context: int) -> str:
    """``18 × 8,192 + 18 × min(8,192, 127)``: the layer-tokens each kind reads at ``context``."""
    terms = []
    full, window, chunk = (int(layer_kinds.full_layers(model)),
                           int(layer_kinds.window_layers(model)),
                           int(layer_kinds.chunk_layers(model)))
    if full:
        terms.append(f"{full} × {context:,}")
    if window:
        terms.append(f"{window} × min({context:,}, {model.sliding_window - 1:,})")
    if chunk:
        terms.append(f"{chunk} × ({context:,} mod {model.attention_chunk:,})")
    return " + ".join(terms)


def _local_read_steps(record: dict, model: MoESpec, batch: int | str, context: int,
                      kv_tok_gpu: int, kv_split: str, per_pair: int, tp: int) -> list[Step]:
    """KV reads and attention FLOPs of a model with sliding-window or chunked layers: each
    layer kind reads what its mask sees (:mod:`lab.models.layer_kinds`)."""
    read = int(layer_kinds.read_layer_tokens(model, context))
    per_layer = kv_tok_gpu // model.layers
    return [
        Step("Layer mix", "", layer_kinds.layer_mix(model)),
        Step("Layer-tokens read per sequence", _read_terms(model, context), f"{read:,}"),
        Step("KV reads", f"{batch:,} × {read:,} × {per_layer:,} B per layer-token{kv_split}"
             if isinstance(batch, int) else
             f"{batch} × {read:,} × {per_layer:,} B per layer-token{kv_split}",
             f"{fmt_gb(record['kv_read_bytes'])} / GPU"),
        Step("Attention FLOPs",
             f"{fmt_int(per_pair // model.layers)} FLOP per pair and layer × "
             f"{batch if isinstance(batch, str) else f'{batch:,}'} × "
             f"{read:,} / {tp}",
             f"{fmt_gflop(record['attention_flops'])} / GPU"),
    ]


def memory_steps(record: dict, model: ModelSpec, gpu: GPUSpec) -> list[Step]:
    """Experiment 2's derivation: free memory, KV per sequence, and how many sequences fit."""
    inputs = record["inputs"]
    tp, context, page = inputs["tp"], inputs["context"], inputs["page"]
    kv_tok = int(kv_bytes_per_token(model, inputs.get("kv_precision", "bf16")))
    split = f" / {tp}"
    if isinstance(model, MoESpec):
        kv_tok = int(kv_shapes.kv_bytes_per_token_per_gpu(model, 1, inputs.get("kv_precision",
                                                                               "bf16")))
        if model.kv_lora_rank > 0:
            split = " (MLA latent, replicated on every GPU)"
    n_pages = int(pages(context, page))
    mla = (_mla_kv_steps(model, inputs.get("kv_precision", "bf16"))
           if isinstance(model, MoESpec) else [])
    steps = [
        Step("Budget", f"{inputs['budget']:.2f} × {fmt_gb(gpu.capacity_bytes)}",
             fmt_gb(record["memory_budget_bytes"])),
        Step("Weights per GPU", _resident_text(model, inputs), fmt_gb(record["memory_params_bytes"])),
        Step("Free for KV", f"{fmt_gb(record['memory_budget_bytes'])} − "
             f"{fmt_gb(record['memory_params_bytes'])} − {fmt_gb(record['memory_reserve_bytes'])}",
             fmt_gb(record["free_for_kv_bytes"])),
        Step("Pages per sequence", f"ceil(({context:,} + 1) / {page})", f"{n_pages:,}"),
        *mla,
        Step("KV per sequence", f"{n_pages:,} × {page} × {kv_tok:,} B{split}",
             fmt_gb(record["kv_bytes_per_sequence"])),
        Step("Page-rounding waste", f"({n_pages * page:,} − {context + 1:,}) × {kv_tok:,} B{split}",
             f"{fmt_number(record['page_waste_bytes_per_sequence'] / MIB)} MiB per sequence"),
    ]
    if isinstance(model, MoESpec) and layer_kinds.has_local_layers(model):
        steps[3:6] = _local_memory_steps(record, model, context, page, kv_tok, split)
    if record["weights_fit"]:
        steps.append(Step("Max sequences", f"floor({fmt_gb(record['free_for_kv_bytes'])} / "
                          f"{fmt_gb(record['kv_bytes_per_sequence'])})",
                          f"{int(record['max_sequences']):,}"))
        if "max_sequences_full_length" in record:
            steps.append(Step("Max sequences, every layer full length",
                              f"floor({fmt_gb(record['free_for_kv_bytes'])} / "
                              f"{fmt_gb(record['kv_bytes_per_sequence_full_length'])})",
                              f"{int(record['max_sequences_full_length']):,}"))
    else:
        steps.append(Step("Max sequences", "", "0 (the weights alone do not fit the budget)"))
    return steps


def _resident_text(model: ModelSpec, inputs: dict) -> str:
    """The expression of the weights one GPU holds: every parameter at the precision, or the
    routed experts apart (expert parallelism, an expert-only format)."""
    tp, precision, ep = inputs["tp"], inputs["precision"], inputs.get("ep", 1)
    whole = (" (every expert; routers and MLA down-projections whole)"
             if isinstance(model, MoESpec) and model.experts else "")
    if isinstance(model, MoESpec) and (ep > 1 or is_expert_only(precision)):
        return split_weights_text(int(model.total_params), int(routed_expert_weights(model)),
                                  tp, ep, precision, "expert-matrix") + whole
    return f"{fmt_int(model.total_params)} params × {weight_bytes_text(precision)} B / {tp}" + whole


def _pages_terms(model: MoESpec, context: int, page: int) -> tuple[str, int]:
    """The layer-pages of each kind at ``context`` in words, and their sum."""
    full, window, chunk = (int(layer_kinds.full_layers(model)),
                           int(layer_kinds.window_layers(model)),
                           int(layer_kinds.chunk_layers(model)))
    terms, total = [], 0
    if full:
        n = int(pages(context, page))
        terms.append(f"{full} full × {n:,}")
        total += full * n
    if window:
        n = int(layer_kinds.window_pages(context, model.sliding_window, page))
        terms.append(f"{window} sliding × {n:,} (the last {model.sliding_window:,} tokens)")
        total += window * n
    if chunk:
        n = int(layer_kinds.chunk_pages(context, model.attention_chunk, page))
        terms.append(f"{chunk} chunked × {n:,} (this {model.attention_chunk:,}-token chunk)")
        total += chunk * n
    return " + ".join(terms), total


def _local_memory_steps(record: dict, model: MoESpec, context: int, page: int, kv_tok: int,
                        split: str) -> list[Step]:
    """Experiment 2's pages and KV per sequence for a model with sliding-window or chunked
    layers: the ideal (each kind its own pages) beside every layer held full length."""
    terms, layer_pages = _pages_terms(model, context, page)
    per_layer = kv_tok // model.layers
    full_pages = int(pages(context, page))
    return [
        Step("Layer mix", "", layer_kinds.layer_mix(model)),
        Step("Layer-pages per sequence", terms, f"{layer_pages:,}"),
        Step("KV per sequence (pages per layer kind)",
             f"{layer_pages:,} × {page} × {per_layer:,} B{split}",
             fmt_gb(record["kv_bytes_per_sequence"])),
        Step("KV per sequence, every layer full length",
             f"{model.layers} × {full_pages:,} × {page} × {per_layer:,} B{split} (an allocator "
             "without layer kinds)",
             fmt_gb(record.get("kv_bytes_per_sequence_full_length",
                               model.layers * full_pages * page * per_layer))),
        Step("Page-rounding waste",
             f"({layer_pages * page:,} − "
             f"{int(layer_kinds.held_layer_tokens(model, context)):,}) layer-tokens × "
             f"{per_layer:,} B{split}",
             f"{fmt_number(record['page_waste_bytes_per_sequence'] / MIB)} MiB per sequence"),
    ]


def tp_steps(result: dict, model: ModelSpec, gpu: GPUSpec) -> list[Step]:
    """Experiment 3's comparison: one line per tp degree (or the reason it is unavailable)."""
    steps = []
    for entry in result["records"]:
        label = f"tp {entry['tp']}"
        if not entry["valid"]:
            steps.append(Step(label, "", f"unavailable: {entry['reason']}"))
            continue
        speedup = entry.get("speedup_vs_tp1")
        speed = f", {speedup:.2f}× tp 1" if speedup else ""
        steps.append(Step(
            label,
            f"{fmt_ms(entry['linear_time_s'])} + {fmt_ms(entry['attention_time_s'])}"
            + (f" + {fmt_ms(entry['allreduce_time_s'])} all-reduce"
               if entry["allreduce_time_s"] else ""),
            f"{fmt_ms(entry['step_time_s'])} per step{speed}; "
            f"{fmt_rate(entry['per_sequence_tokens_per_s'])} per sequence; "
            f"{fmt_rate(entry['aggregate_tokens_per_s'])} per group = "
            f"{fmt_rate(entry['aggregate_tokens_per_s_per_gpu'])} per GPU; "
            f"{fmt_gb(entry['memory_params_bytes'] + entry['memory_kv_bytes'])} per GPU",
        ))
    return steps


def precision_steps(result: dict, model: ModelSpec, gpu: GPUSpec) -> list[Step]:
    """Experiment 4's comparison: both step times, the speed-up, and the memory it frees."""
    bf16, fp8 = result["bf16"], result["fp8"]
    return [
        Step("BF16 step", f"{fmt_ms(bf16['linear_time_s'])} linear + "
             f"{fmt_ms(bf16['attention_time_s'])} attention", fmt_ms(bf16["step_time_s"])),
        Step("FP8 step", f"{fmt_ms(fp8['linear_time_s'])} linear + "
             f"{fmt_ms(fp8['attention_time_s'])} attention (attention stays BF16)",
             fmt_ms(fp8["step_time_s"])),
        Step("Speed-up", f"{fmt_ms(bf16['step_time_s'])} / {fmt_ms(fp8['step_time_s'])}",
             f"{result['speedup']:.2f}×"),
        Step("Weights per GPU", f"{fmt_gb(bf16['memory_params_bytes'])} → "
             f"{fmt_gb(fp8['memory_params_bytes'])}",
             f"{int(bf16['max_sequences']):,} → {int(fp8['max_sequences']):,} sequences fit"),
    ]
