"""Experiment 12's calculation: one plan (``calc plan --json``), a user's candidates ranked,
one configuration's prediction (the point a grid cell equals) and the derivation.

:func:`calc_plan` enumerates the configuration space of :mod:`lab.plan.plan_space`, predicts
it with experiment 11's calibration (:mod:`lab.plan.plan_calibration`) and picks with
:mod:`lab.plan.plan_decide`. Every time is in ms as in experiment 11's records; the record
states the units.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import xarray as xr

from lab.catalog.entries import ModelSpec
from lab.derivations.decode_steps import Step
from lab.errors import LabInputError, shown
from lab.plan.plan_calibration import (
    DEFAULT_QUANTILE,
    MAX_QUANTILE,
    calibration_for,
    shipped_calibration,
)
from lab.plan.plan_decide import (
    Targets,
    expected_tokens,
    frontier,
    meets,
    monotone_chance,
    pick,
)
from lab.plan.plan_space import (
    ENGINE_NAMES,
    IDEAL,
    MODES,
    Layout,
    PlanSpace,
    config_row,
    enumerate_rows,
    model_key,
    predict,
)
from lab.plan.plan_study import nearest_measured_workload
from lab.served import gap
from lab.served.served_calc import TERM_NAMES, group_key
from lab.served.served_floors import catalog_gpu_id, catalog_model_id, unknown_model_sentence
from lab.units import fmt_count, fmt_number

DEFAULT_TARGETS = Targets(ttft_ms=2000.0, tokens_per_s_user=50.0)
"""The default targets: first token within 2 s, at least 50 tokens/s per user."""


def _value(v):
    if isinstance(v, np.bool_ | bool):
        return bool(v)
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating):
        return None if not np.isfinite(v) else float(v)
    return str(v)


def config_record(plan: xr.Dataset | dict, index: int) -> dict:
    """One configuration of a plan (or of its :func:`plan_arrays`) as a JSON-ready dict (ms;
    NaN as null)."""
    arrays = plan if isinstance(plan, dict) else plan_arrays(plan)
    return {name: _value(values[index]) for name, values in arrays.items()}


def plan_arrays(plan: xr.Dataset) -> dict:
    """Every variable of a plan as a NumPy array (reading a record from these is cheap)."""
    return {name: plan[name].values for name in plan.data_vars}


COEFFICIENT_TERMS = {"k_prefill": "prefill", "k_step_one": "step", "t_layer_ms": "fixed",
                     "t_moe_layer_ms": "moe", "k_comm": "collective", "k_queue": "queue",
                     "t_first_ms": "fixed", "k_chunk": "chunk", "k_queue_chunk": "queue_chunk",
                     "k_slots": "slots"}
"""Experiment 11's term (:data:`~lab.served.served_calc.TERMS`) each fitted coefficient
multiplies; a coefficient not listed is named by itself."""


def term_name(metric: str, mode: str, j: int) -> str:
    """Experiment 11's name of fitted term ``j`` (0-based, the design's column order: its
    coefficient's, :data:`lab.served.gap.TPOT_COEFFICIENTS` and ``TTFT_COEFFICIENTS``)."""
    names = gap.TPOT_COEFFICIENTS[mode] if metric == "tpot" else gap.TTFT_COEFFICIENTS
    if j >= len(names):
        return f"fitted term {j + 1}"
    key = COEFFICIENT_TERMS.get(names[j])
    name = TERM_NAMES.get((metric, key), OWN_TERM_NAMES.get(names[j], names[j]))
    return f"{name[:1].upper()}{name[1:]} ({names[j]})"  # not .capitalize(): "moe", "K_queue"


OWN_TERM_NAMES = {"k_inferred": "floor of a decode worker whose batch is inferred"}
"""Names of fitted terms experiment 11 shows inside another (its disaggregated floor)."""


def meet_chances(plan: xr.Dataset, arrays: dict, targets: Targets,
                 calibration) -> tuple[np.ndarray, np.ndarray]:
    """Each configuration's chance of meeting the targets and its expected output tokens/s
    per GPU delivered, read from its out-of-sample errors (docs/model.md §12): the chance is
    the share of its TPOT errors under which TPOT meets its limit times the share of its TTFT
    errors under which TTFT does, made non-increasing in concurrency within its worker layout
    (:func:`~lab.plan.plan_decide.monotone_chance`); the expected tokens are its tokens/s per
    GPU at its TTFT centred on its own error (when measured on other workloads) and each TPOT
    of its error sample, 0 where the target is missed. Configurations that miss the targets at
    the band's edge have chance 0 (they cap the chance of the same layout at higher
    concurrency); uncalibrated ones NaN."""
    n = plan.sizes["config"]
    chance, expected = np.full(n, np.nan), np.full(n, np.nan)
    calibrated = np.asarray(arrays["calibrated"], dtype=bool)
    usable = np.asarray(arrays["valid"], dtype=bool) & np.asarray(arrays["fits"], dtype=bool)
    candidates = meets(plan, targets) & calibrated
    chance[usable & calibrated & ~candidates] = 0.0
    expected[usable & calibrated & ~candidates] = 0.0
    index = np.flatnonzero(candidates)
    if not index.size:
        return chance, expected
    gpu, model = plan.attrs.get("gpu", ""), plan.attrs.get("model", "")
    tpot_limit, ttft_limit = targets.tpot_limit(), targets.ttft_limit()
    keys = np.asarray(arrays["config_key"]).astype(str)
    ttft_centre = calibration.centre(keys[index], "ttft")
    for k, i in enumerate(index.tolist()):
        group = group_key(arrays['engine'][i], gpu, arrays['mode'][i])
        concurrency = float(arrays["concurrency"][i])
        ttft = float(arrays["ttft_ms"][i])
        ttft_chance = 1.0
        if np.isfinite(ttft_limit):
            share, rows = calibration.sure(group, model, concurrency, "ttft", ttft_limit / ttft,
                                           keys[i])
            ttft_chance = share if rows else 1.0
        centre = ttft_centre[k]
        ttft_at = ttft * (np.exp(centre) if np.isfinite(centre) else 1.0)
        errors = calibration.errors(group, model, concurrency, "tpot", keys[i])
        tpot_chance, tokens = expected_tokens(errors, float(arrays["tpot_ms"][i]), ttft_at,
                                              tpot_limit, concurrency, float(arrays["osl"][i]),
                                              float(arrays["gpus"][i]))
        chance[i] = tpot_chance * ttft_chance
        expected[i] = tokens * ttft_chance
    layout = np.array([k.rsplit("|", 1)[0] for k in keys.tolist()])
    measured = np.isfinite(calibration.centre(keys, "tpot"))  # on other workloads
    adjusted = monotone_chance(chance, layout, np.asarray(arrays["concurrency"], dtype=float),
                               measured)
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = np.where(chance > 0, expected * adjusted / chance,
                            np.where(np.isfinite(chance), 0.0, np.nan))
    return adjusted, expected


def how_sure(plan: xr.Dataset, index: int, targets: Targets, calibration,
             chance: float | None = None) -> dict:
    """How sure the pick is: its ``chance`` of meeting the targets (:func:`meet_chances`) when
    given, else the least share of its out-of-sample TPOT and TTFT errors under which it would
    still meet them."""
    r = config_record(plan, index)
    if not r["calibrated"]:
        why = ("the ideal engine is the floor itself" if r["engine"] == IDEAL else
               f"no measured row of {r['engine']} × {plan.attrs.get('gpu', '')} × {r['mode']} "
               "calibrates it: predicted from the floor, uncalibrated")
        return {"share": None, "rows": 0, "sentence": f"Not known: {why}."}
    group = group_key(r['engine'], plan.attrs.get('gpu', ''), r['mode'])
    model = plan.attrs.get("model", "")
    shares, rows = [], 0
    for metric, limit in (("tpot", targets.tpot_limit()), ("ttft", targets.ttft_limit())):
        if np.isfinite(limit):
            share, n = calibration.sure(group, model, r["concurrency"], metric,
                                        limit / r[f"{metric}_ms"], r["config_key"])
            shares.append(share)
            rows = max(rows, n)
    if not shares:  # no target: every configuration meets, nothing to be sure of
        return {"share": 1.0, "rows": 0,
                "sentence": "With no target, every configuration meets; the pick is the one "
                            "with the most tokens/s per GPU."}
    share = float(min(shares))
    if chance is not None and np.isfinite(chance):
        share = float(chance)
    return {"share": share, "rows": rows,
            "sentence": f"It meets the targets with a chance of {fmt_number(share * 100, 0)} %, "
                        f"read from {rows:,} out-of-sample errors of {group} (same model and "
                        "nearby concurrency where there are enough, centred on this "
                        "configuration's own error on other workloads where it was measured; "
                        "no likelier than the same layout at a lower concurrency)."
                        + (every_error_meets(rows) if share >= 1.0 and rows else "")}


def every_error_meets(rows: int) -> str:
    """What a chance of 100 % read from ``rows`` errors says (all of them meet): only that the
    chance is at least ``0.05^(1/rows)``, at 95 % confidence (36 errors: 92 %)."""
    return (f" Every one of the {rows:,} errors meets, which says only that the chance is at "
            f"least {fmt_number(100 * 0.05 ** (1 / rows), 0)} % (95 % confidence).")


def measured_rows(model: str, gpu: str, engine: str, isl: int, osl: int) -> list[dict]:
    """The public measured rows of this model × GPU × engine × workload (for the overlay)."""
    cal = shipped_calibration()
    t = cal.table
    s = lambda n: np.asarray(t[n].values).astype(str)  # noqa: E731
    keep = (cal.modelled & (s("model") == model) & (s("gpu") == gpu) & (s("engine") == engine)
            & (np.asarray(t["isl"].values) == isl) & (np.asarray(t["osl"].values) == osl))
    out = []
    from lab.plan.plan_decide import throughput_of

    tput = throughput_of(t, np.asarray(t["ttft_measured_ms"].values),
                       np.asarray(t["tpot_measured_ms"].values))
    col = {n: np.asarray(t[n].values) for n in ("id", "mode", "tpot_measured_ms",
                                                "ttft_measured_ms", "concurrency", "tp")}
    for i in np.flatnonzero(keep):
        tpot = float(col["tpot_measured_ms"][i])
        out.append({"id": str(col["id"][i]), "mode": str(col["mode"][i]),
                    "tokens_per_s_user": 1e3 / tpot, "tokens_per_s_gpu": float(tput[i]),
                    "tpot_ms": tpot, "ttft_ms": float(col["ttft_measured_ms"][i]),
                    "concurrency": int(col["concurrency"][i]), "tp": int(col["tp"][i])})
    return out


def calc_plan(model: str | ModelSpec = "llama-3.1-70b", gpu: str = "h200", budget: int = 8,
              engine: str = "vllm", isl: int = 1024, osl: int = 1024,
              ttft_ms: float | None = DEFAULT_TARGETS.ttft_ms, tpot_ms: float | None = None,
              tokens_per_s_user: float | None = DEFAULT_TARGETS.tokens_per_s_user,
              quantile: float = DEFAULT_QUANTILE, modes=MODES) -> dict:
    """One plan: every configuration of the space, the frontier per mode, the pick under the
    targets with its derivation and how sure it is, the refusals counted with their sentences,
    and the public measured rows of this model × GPU × engine × workload. ``model``: a catalog
    id, a path to a ``config.json``, or a model already read (an uploaded ``config.json``:
    :func:`lab.catalog.lookup.model_from_config_bytes`)."""
    if not 0.5 <= quantile <= MAX_QUANTILE:  # the page's bounds (the CLI took 0.995)
        raise LabInputError(f"The band quantile must be from 0.5 to {MAX_QUANTILE}, not "
                            f"{shown(quantile)}.")
    targets = Targets(ttft_ms, tpot_ms, tokens_per_s_user)
    space = PlanSpace(model=model, gpu=gpu, budget=budget, engine=engine, isl=isl, osl=osl,
                      modes=tuple(modes))
    rows = enumerate_rows(space)
    calibration = shipped_calibration()
    spec = model if isinstance(model, ModelSpec) else None  # read from an uploaded config.json
    plan = predict(rows, calibration, quantile, model=spec)
    key = model_key(model)
    plan.attrs.update({"model": catalog_model_id(key) or key,
                       "gpu": catalog_gpu_id(gpu) or gpu})
    inputs = {"model": key, "gpu": gpu, "budget": budget, "engine": engine, "isl": isl,
              "osl": osl, "ttft_ms": ttft_ms, "tpot_ms": tpot_ms,
              "tokens_per_s_user": tokens_per_s_user, "quantile": quantile}
    if spec is not None:
        inputs["model_name"] = spec.name
    return plan_record(plan, targets, calibration, inputs, measured=measured_rows(
        catalog_model_id(key) or key, catalog_gpu_id(gpu) or gpu, engine, isl, osl))


def band_note(r: dict) -> str:
    """One sentence when configuration ``r``'s TPOT or TTFT band lies wholly above or below its
    prediction (the errors it is read from, its own on other workloads or its group's, lean
    one way); ``""`` when each prediction is inside its band."""
    leaning = []
    for metric in ("tpot", "ttft"):
        if r[f"{metric}_lower_ms"] > r[f"{metric}_ms"]:
            leaning.append((metric.upper(), "above", "slower"))
        elif r[f"{metric}_upper_ms"] < r[f"{metric}_ms"]:
            leaning.append((metric.upper(), "below", "faster"))
    if not leaning:
        return ""
    if len(leaning) == 2 and leaning[0][1:] == leaning[1][1:]:
        (_, way, ran), what = leaning[0], "TPOT and TTFT bands lie"
    elif len(leaning) == 2:
        (_, tpot_way, tpot_ran), (_, ttft_way, ttft_ran) = leaning
        return (f"The TPOT band lies wholly {tpot_way} the prediction and the TTFT band wholly "
                f"{ttft_way} it: the measured runs they are read from ran {tpot_ran} and "
                f"{ttft_ran} than experiment 11 predicts them, so the planner judges this "
                "configuration by the bands, not by the predictions.")
    else:
        what, way, ran = f"{leaning[0][0]} band lies", leaning[0][1], leaning[0][2]
    bands = "bands" if what.endswith("bands lie") else "band"
    return (f"The {what} wholly {way} the prediction: the measured runs it is read from ran "
            f"{ran} than experiment 11 predicts them, so the planner judges this configuration "
            f"by the {bands}, not by the prediction.")


def plan_record(plan: xr.Dataset, targets: Targets, calibration, inputs: dict,
                measured: list[dict] | None = None) -> dict:
    """The JSON-ready record of a predicted plan."""
    valid = np.asarray(plan["valid"].values, dtype=bool)
    fits = np.asarray(plan["fits"].values, dtype=bool)
    refusals = Counter(str(r) for r in plan["reason"].values if r)
    if not valid.any():
        weights = [r for r in refusals if "do not fit" in r]
        first = weights[-1] if weights else refusals.most_common(1)[0][0]
        raise LabInputError(f"No configuration can be planned; for example: {first}")
    arrays = plan_arrays(plan)
    chance, expected = meet_chances(plan, arrays, targets, calibration)
    chosen = pick(plan, targets, chance=chance, score=expected,
                  quantile=inputs.get("quantile", DEFAULT_QUANTILE))
    optimistic = pick(plan, targets, conservative=False)
    calibrated = np.asarray(plan["calibrated"].values, dtype=bool)
    result = {
        "inputs": inputs,
        "units": {"time": "ms", "throughput": "output tokens/s"},
        "counts": {"configurations": int(plan.sizes["config"]), "valid": int(valid.sum()),
                   "fit": int((valid & fits).sum()),
                   "meet_targets": int(meets(plan, targets).sum()),
                   "meet_targets_at_prediction": int(meets(plan, targets, False).sum())},
        "refusals": [{"reason": r, "configurations": n} for r, n in refusals.most_common()],
        "calibrated": bool(calibrated[valid].all()),
        "uncalibrated_note": "" if calibrated[valid].all() else (
            "Configurations of an engine × GPU × mode without measured rows (or the ideal "
            "engine) are predicted from the floor with no calibration."),
        "frontier": {str(m): [config_record(arrays, int(i)) for i in frontier(plan, m)]
                     for m in dict.fromkeys(np.asarray(plan["mode"].values).astype(str))},
        "best": None, "best_at_prediction": None,
        "measured": measured or [],
    }
    if chosen is not None:
        best = config_record(arrays, chosen)
        best["sure"] = how_sure(plan, chosen, targets, calibration, float(chance[chosen]))
        best["band_note"] = band_note(best)
        best["steps"] = [s.__dict__ for s in config_steps(best)]
        best["served_row"] = measured_row_id(best, calibration)
        best["served_link"] = served_link(best, plan.attrs.get("model", ""),
                                          plan.attrs.get("gpu", ""), best["served_row"])
        best["served_link_text"] = served_link_text(best, plan.attrs.get("model", ""),
                                                    best["served_row"])
        if "isl" in inputs and "osl" in inputs:
            best["nearest_workload"] = nearest_measured_workload(
                calibration, group_key(best["engine"], plan.attrs.get("gpu", ""), best["mode"]),
                plan.attrs.get("model", ""), int(inputs["isl"]),
                int(inputs["osl"]))
        result["best"] = best
    else:
        result["none_sentence"] = ("No configuration that fits meets the targets at the "
                                   "band's upper edge with a chance of at least the band's "
                                   "quantile; loosen a target or raise the budget.")
    if optimistic is not None:
        result["best_at_prediction"] = config_record(arrays, optimistic)
    return result


def measured_row_id(r: dict, calibration) -> str:
    """The id of the first modelled row of ``calibration``'s table that is configuration
    ``r`` (same :data:`~lab.plan.plan_calibration.CONFIG_KEY` values and workload), ``""``
    when this configuration was not measured."""
    if calibration is None or not r.get("config_key"):
        return ""
    cal = calibration
    workload = f"{r['isl']}/{r['osl']}"
    hits = np.flatnonzero(cal.modelled & (cal.keys == r["config_key"])
                          & (cal.workloads == workload))
    return str(cal.table["id"].values[hits[0]]) if hits.size else ""


def served_link(r: dict, model: str, gpu: str, row_id: str = "") -> str:
    """Experiment 11's page filtered to this configuration's model, GPU, engine, mode and
    workload (its measured rows), with ``row_id`` (the configuration itself, when measured:
    :func:`measured_row_id`) selected."""
    from urllib.parse import quote

    from lab.catalog import model_catalog

    engine = r["engine"] if r["engine"] != IDEAL else "all"
    model = model if model in model_catalog() else "all"  # a config.json has no rows
    row = f"&row={quote(row_id, safe='')}" if row_id else ""
    return (f"?view=served&model={model}&gpu={gpu}&engine={engine}&mode={r['mode']}"
            f"&workload={r['isl']}/{r['osl']}{row}")


def served_link_text(r: dict, model: str, row_id: str = "") -> str:
    """What :func:`served_link` opens, in words: the configuration's own measured row among
    its group's, or the group's rows — of every model when the model is a reader's config.json
    (it has no public rows, and the link says ``model=all``), of every engine when the pick is
    the floor."""
    from lab.catalog import model_catalog

    if row_id:
        return ("This configuration's measured row, among the measured rows of this model, GPU, "
                "engine, mode and workload in experiment 11")
    own, ideal = model not in model_catalog(), r["engine"] == IDEAL
    return {
        (False, False): "The measured rows of this model, GPU, engine, mode and workload in "
                        "experiment 11 (this configuration was not measured)",
        (False, True): "The measured rows of this model, GPU, mode and workload on every engine "
                       "in experiment 11 (the floor is no engine's run)",
        (True, False): "The measured rows of every model on this GPU, engine, mode and workload "
                       "in experiment 11 (your model has no public runs)",
        (True, True): "The measured rows of every model and engine on this GPU, mode and "
                      "workload in experiment 11 (your model has no public runs, and the floor "
                      "is no engine's run)",
    }[own, ideal]


def config_steps(r: dict) -> list[Step]:
    """The derivation of one predicted configuration: floor, each named term, prediction,
    band, throughput."""
    ms = lambda v: "n/a" if v is None else f"{fmt_number(v, 2)} ms"  # noqa: E731
    engine = ENGINE_NAMES.get(r["engine"], r["engine"])
    steps = [Step("Configuration", "", f"{engine}, {r['mode']}, {r['label']}"),
             Step("TPOT floor", "one ideal decode step of the decode worker's batch (§11)",
                  ms(r["tpot_floor_ms"]))]
    if r["calibrated"]:
        steps.append(Step("Communication term", "all-reduces and expert all-to-all (§11)",
                          ms(r["tpot_term_allreduce_ms"])))
        j = 1
        while f"tpot_fitted_term_{j}_ms" in r:
            name = term_name("tpot", r["mode"], j - 1)
            steps.append(Step(name, "fitted on the group's measured rows",
                              ms(r[f"tpot_fitted_term_{j}_ms"])))
            j += 1
    steps.append(Step("TPOT predicted", ("experiment 11's fixed part (floor + communication; a "
                                         "disaggregated worker whose batch is inferred carries "
                                         "its floor in a fitted term) + the fitted terms")
                      if r["calibrated"] else "the floor (uncalibrated)", ms(r["tpot_ms"])))
    steps.append(Step("TTFT floor", "one request's ideal prefill (§11)", ms(r["ttft_floor_ms"])))
    if r["calibrated"]:
        j = 1
        while f"ttft_fitted_term_{j}_ms" in r:
            steps.append(Step(term_name("ttft", r["mode"], j - 1), "fitted on "
                              "the group's measured rows", ms(r[f"ttft_fitted_term_{j}_ms"])))
            j += 1
    steps += [
        Step("TTFT predicted", "floor + terms" if r["calibrated"] else "the floor",
             ms(r["ttft_ms"])),
        Step("Band (upper edge)", "the group's out-of-sample errors at the band quantile",
             f"TPOT {ms(r['tpot_upper_ms'])}, TTFT {ms(r['ttft_upper_ms'])}"),
        Step("Tokens/s per user", f"1,000 ms/s / {ms(r['tpot_ms'])}",
             fmt_number(r["tokens_per_s_user"], 1)),
        Step("Tokens/s per GPU", f"{r['concurrency']:,} · {r['osl']:,} tokens / (({ms(r['ttft_ms'])}"
             f" + {r['osl'] - 1:,} · {ms(r['tpot_ms'])}) / 1,000 ms/s) / "
             f"{fmt_count(r['gpus'], 'GPU')}",
             fmt_number(r["tokens_per_s_gpu"], 1)),
    ]
    return steps


def plan_steps(result: dict, _gpu=None) -> list[Step]:
    """The derivation of a plan's pick (or the sentence that nothing meets the targets)."""
    if result.get("best") is None:
        return [Step("Pick", "", result.get("none_sentence", "none"))]
    return [Step(**s) for s in result["best"]["steps"]]


def plan_point(engine: str, model: str, gpu: str, mode: str, tp: int, dp: int, ep: int,
               precision: str, concurrency: int, isl: int, osl: int,
               workers: tuple[int, int] = (1, 1), quantile: float = DEFAULT_QUANTILE,
               calibration=None) -> dict:
    """One configuration predicted alone (the point a plan cell and a grid cell equal)."""
    row = config_row(engine, model, gpu, mode, Layout(tp, dp, ep), precision, concurrency,
                     isl, osl, workers)
    plan = predict([row], shipped_calibration() if calibration is None else calibration,
                   quantile)
    return config_record(plan, 0)


UNCALIBRATED_CANDIDATE = ("the floor alone, uncalibrated: no public run of its engine, GPU and "
                          "mode")
"""What a ranked candidate predicted by the floor alone is called (the CLI's line, the page's
row): no public run of its engine × GPU × mode calibrates it, so its band has no width."""


def rank_candidates(data: xr.Dataset, targets: Targets, quantile: float = DEFAULT_QUANTILE,
                    calibration_table: xr.Dataset | None = None,
                    model: ModelSpec | None = None) -> dict:
    """A user's own configurations (experiment 11's table columns, measurements optional)
    ranked: those meeting the targets at the band's upper edge first, calibrated ones before
    those predicted by the floor alone (no public run of their engine × GPU × mode: the floor
    is a median 2.5× faster than a real engine, so it would head the list), then by predicted
    tokens/s per GPU; every refused row with its sentence. ``model``: a model read from a
    ``config.json`` (the page's upload, the CLI's ``--model config.json``); rows whose
    ``model_path`` is its name (the config's ``_name_or_path``) or id are predicted as it."""
    calibration = calibration_for(calibration_table)
    names = [n for n in data.data_vars if data[n].dims == ("row",)] + [
        n for n in data.coords if data[n].dims == ("row",) and n != "row"]
    rows = [{n: _value(data[n].values[i]) for n in names} for i in range(data.sizes["row"])]
    for r in rows:
        for k in ("ttft_measured_ms", "tpot_measured_ms"):
            r[k] = np.nan if r.get(k) is None else r[k]
    out = []
    by_pair: dict[tuple, list[int]] = {}
    for i, r in enumerate(rows):
        by_pair.setdefault((r["model_path"], r["system"]), []).append(i)
    for (path, system), index in by_pair.items():
        own = model is not None and path in (model.id, model.name)
        model_id = model_key(model) if own else catalog_model_id(path)
        gpu_id = catalog_gpu_id(system)
        if not model_id or not gpu_id:
            nor = f" nor the config.json's ({model.name})" if model is not None else ""
            what = (unknown_model_sentence(path, nor) if not model_id
                    else f"GPU {system} is not in the lab's catalog")
            for i in index:
                out.append({"id": rows[i]["id"], "reason": f"The {what}.", "meets": False})
            continue
        sub = [{**rows[i], "system": gpu_id} for i in index]
        plan = predict(sub, calibration, quantile, model=model if own else None)
        plan.attrs.update({"model": model_id, "gpu": gpu_id})
        ok = meets(plan, targets)
        for k, i in enumerate(index):
            rec = config_record(plan, k)
            rec.update({"id": rows[i]["id"], "meets": bool(ok[k])})
            if np.isfinite(rows[i]["tpot_measured_ms"]):
                rec["tpot_measured_ms"] = float(rows[i]["tpot_measured_ms"])
            out.append(rec)
    out.sort(key=lambda r: (not r["meets"], not r.get("calibrated", True),
                            -(r.get("tokens_per_s_gpu") or -np.inf)
                            if r.get("tokens_per_s_gpu") is not None else np.inf))
    for rank, r in enumerate(out, 1):
        r["rank"] = rank
    return {"targets": targets.__dict__, "quantile": quantile, "candidates": out,
            "meeting": int(sum(r["meets"] for r in out))}
