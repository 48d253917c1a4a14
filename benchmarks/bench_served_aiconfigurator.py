"""AIConfigurator beside experiment 11 (a benchmark only): its per-row estimate on a
deterministic sample of the public rows, scored against the lab's out-of-sample predictions on
exactly the rows both predict.

AIConfigurator (``pip install aiconfigurator``, the ``bench`` extra, never a runtime or test
dependency) estimates a served configuration's TTFT and TPOT from its kernel database. As its
own nightly accuracy script does (``tools/accuracy_regression_testing/predict_silicon_sample.py``
in ai-dynamo/aiconfigurator), each row is passed to ``aiconfigurator.cli.api.cli_estimate`` with
the row's model, system, mode, backend, (isl, osl), quantization, and the listed layout
(aggregated: batch size, tp, pp, attention DP, MoE tp/ep; disaggregated: each stage's layout,
batch size and worker count; a disaggregated row without both stages' batch and workers is not
estimated, as in that script). Nothing downloads at run time:

- the backend version: the row's own, read as AIConfigurator's raw data coordinate
  (``AIC_ALLOW_UNLISTED_VERSIONS=1``); when that has no database, its default version (the
  nightly script's fallback);
- the model: three of the file's model names are older names of configurations AIConfigurator
  bundles (``ALIASES``; same architecture); a model whose configuration it does not bundle
  would need a download from Hugging Face, which is disabled (``HF_HUB_OFFLINE=1``), so the
  row counts as not estimated.

Rows AIConfigurator cannot estimate (no configuration, no kernel data for the shape, no worker
split) are counted, with the reason, and left out of the comparison. The lab's predictions are
``lab.served.served_calc.served_table``'s (workload left out; the stricter input-length split
beside it). It prints and writes (``--json``) median and p90 |predicted − measured| / measured
for both, overall and per mode, and per engine × GPU × mode, and each sampled row's estimate or
reason (``rows``), so ``--rescore FILE`` scores a changed lab against the stored estimates
without running AIConfigurator again.

Usage::

    python benchmarks/bench_served_aiconfigurator.py [--rows 250] [--seed 0] [--budget 1080]
    python benchmarks/bench_served_aiconfigurator.py --rescore benchmarks/results/FILE.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time
from contextlib import redirect_stdout
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("AIC_ALLOW_UNLISTED_VERSIONS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lab.served.served_calc import served_table

CSV = Path(__file__).resolve().parents[1] / "lab/served/data/silicon_sample.csv"
PARALLEL = ("tp_size", "pp_size", "attention_dp_size", "moe_tp_size", "moe_ep_size")
AGG_FIELDS = ("batch_size", *PARALLEL)
DISAGG_FIELDS = tuple(f"{stage}_{field}" for stage in ("prefill", "decode")
                      for field in (*PARALLEL, "batch_size", "num_workers"))
REQUIRED_DISAGG = ("prefill_batch_size", "prefill_num_workers", "decode_batch_size",
                   "decode_num_workers")
ALIASES = {
    # the file's name → the name AIConfigurator bundles the same configuration under
    "meta-llama/Llama-3.1-70B": "meta-llama/Meta-Llama-3.1-70B",
    "meta-llama/Llama-3.1-8B-Instruct": "meta-llama/Meta-Llama-3.1-8B",
    "zhipuai/GLM-5": "zai-org/GLM-5",
}


def estimate_args(row: pd.Series) -> dict:
    fields = AGG_FIELDS if row["mode"] == "agg" else DISAGG_FIELDS
    text = lambda v: v if isinstance(v, str) and v else None  # noqa: E731
    return dict(model_path=ALIASES.get(row["model_path"], row["model_path"]),
                system_name=row["system"], mode=row["mode"], backend_name=row["backend"],
                backend_version=text(str(row["backend_version"])) if pd.notna(
                    row["backend_version"]) else None,
                isl=int(row["isl"]), osl=int(row["osl"]),
                gemm_quant_mode=text(row["gemm_quant_mode"]),
                moe_quant_mode=text(row["moe_quant_mode"]),
                **{f: int(row[f]) for f in fields if pd.notna(row[f])})


def aic_estimate(args: dict, cache: dict) -> tuple[float, float] | str:
    """(ttft, tpot) in ms, or the reason it has none."""
    from aiconfigurator.cli.api import cli_estimate

    if args["mode"] == "disagg" and any(args.get(f) is None for f in REQUIRED_DISAGG):
        return "disaggregated row without both stages' batch and workers"
    key = tuple(sorted(args.items()))
    if key in cache:
        return cache[key]

    def run(a):
        with open(os.devnull, "w") as sink, redirect_stdout(sink):
            result = cli_estimate(**a)
        return float(result.ttft), float(result.tpot)

    try:
        try:
            out = run(args)
        except Exception:
            if args["backend_version"] is None:
                raise
            out = run(args | {"backend_version": None})  # its default database
        if not (np.isfinite(out[0]) and np.isfinite(out[1]) and out[0] > 0 and out[1] > 0):
            out = "no finite estimate"
    except Exception as e:  # every failure is a reason, counted
        text = str(e)
        if "HuggingFace" in text or "huggingface" in text:
            out = "model configuration not bundled (would download)"
        elif "MoE data missing" in text:
            out = "no MoE kernel data for the shape"
        else:
            out = f"{type(e).__name__}: {text.splitlines()[0][:120] if text else ''}"
    cache[key] = out
    return out


def summary(error: np.ndarray) -> dict:
    ok = error[np.isfinite(error)]
    return {"rows": int(ok.size), "median": round(float(np.median(ok)) * 100, 1) if ok.size else None,
            "p90": round(float(np.percentile(ok, 90)) * 100, 1) if ok.size else None}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=250, help="rows sampled per mode (seeded, "
                        "without replacement; disaggregated: among rows listing both stages' "
                        "batch and workers)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--budget", type=float, default=1080.0,
                        help="seconds; rows not reached are reported as not run")
    parser.add_argument("--json", default="benchmarks/results/served-aiconfigurator.json")
    parser.add_argument("--rescore", default=None, help="a results JSON of this script: its "
                        "stored estimates beside the current lab (AIConfigurator not run)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    rows = pd.read_csv(CSV)
    table = served_table()
    assert list(np.asarray(table["id"].values).astype(str)) == list(rows["id"].astype(str))
    position = {row_id: i for i, row_id in enumerate(rows["id"].astype(str))}
    reasons: dict[str, int] = {}
    if args.rescore:
        stored = json.loads(Path(args.rescore).read_text(encoding="utf-8"))
        sample = np.array([position[r["id"]] for r in stored["rows"]])
        aic = np.array([[r.get("aic_ttft_ms") or np.nan, r.get("aic_tpot_ms") or np.nan]
                        for r in stored["rows"]], dtype=float)
        for r in stored["rows"]:
            if "reason" in r:
                reasons[r["reason"]] = reasons.get(r["reason"], 0) + 1
        version, args.seed = stored["aiconfigurator"], stored["seed"]
        aic_seconds = stored.get("aic_seconds")
        per_row = stored["rows"]
    else:
        import aiconfigurator

        version = getattr(aiconfigurator, "__version__", None) or "0.12.0"
        # per mode, ``--rows`` rows in a seeded random order (a cut by the budget leaves a
        # random subsample): aggregated rows, and disaggregated rows that list both stages'
        # batch and workers (the others AIConfigurator does not estimate)
        lists_split = rows[list(REQUIRED_DISAGG)].notna().all(axis=1).to_numpy()
        agg_rows = np.flatnonzero(rows["mode"].to_numpy() == "agg")
        disagg_rows = np.flatnonzero((rows["mode"].to_numpy() == "disagg") & lists_split)
        rng = np.random.default_rng(args.seed)
        picked = [rng.choice(pool, min(args.rows, len(pool)), replace=False)
                  for pool in (agg_rows, disagg_rows)]
        sample = np.array([r for pair in itertools.zip_longest(*picked) for r in pair
                           if r is not None])
        cache: dict = {}
        aic = np.full((len(sample), 2), np.nan)
        why: dict[int, str] = {}
        for i, r in enumerate(sample):
            if time.perf_counter() - started > args.budget:
                out = "not run (time budget)"
            else:
                out = aic_estimate(estimate_args(rows.iloc[r]), cache)
            if isinstance(out, str):
                reasons[out] = reasons.get(out, 0) + 1
                why[i] = out
            else:
                aic[i] = out
        aic_seconds = round(time.perf_counter() - started, 1)
        per_row = [{"id": str(rows["id"].iloc[r])} | (
            {"aic_ttft_ms": float(aic[i, 0]), "aic_tpot_ms": float(aic[i, 1])}
            if i not in why else {"reason": why[i]}) for i, r in enumerate(sample)]
    measured = {m: rows[f"silicon_{m}_ms"].to_numpy()[sample] for m in ("ttft", "tpot")}
    lab = {m: np.asarray(table[f"{m}_predicted_ms"].values, dtype=float)[sample]
           for m in ("ttft", "tpot")}
    errors = {"aic_ttft": np.abs(aic[:, 0] - measured["ttft"]) / measured["ttft"],
              "aic_tpot": np.abs(aic[:, 1] - measured["tpot"]) / measured["tpot"]}
    for m in ("ttft", "tpot"):
        errors[f"lab_{m}"] = np.abs(lab[m] - measured[m]) / measured[m]
        errors[f"lab_{m}_isl_out"] = np.asarray(table[f"{m}_error_isl_out"].values,
                                                dtype=float)[sample]
    both = np.isfinite(aic).all(axis=1) & np.isfinite(lab["ttft"]) & np.isfinite(lab["tpot"])
    mode = rows["mode"].to_numpy()[sample]
    group = (rows["backend"] + " " + rows["system"] + " " + rows["mode"]).to_numpy()[sample]
    masks = {"all": both, "agg": both & (mode == "agg"), "disagg": both & (mode == "disagg")}
    masks |= {g: both & (group == g) for g in sorted(set(group[both]))}
    result = {
        "aiconfigurator": version, "sampled": len(sample), "seed": args.seed,
        "aic_seconds": aic_seconds,
        "aic_estimated": int(np.isfinite(aic).all(axis=1).sum()),
        "lab_modelled": int((np.isfinite(lab["ttft"]) & np.isfinite(lab["tpot"])).sum()),
        "both": int(both.sum()), "aic_not_estimated": dict(sorted(reasons.items(),
                                                                  key=lambda kv: -kv[1])),
        "subsets": {name: {k: summary(v[mask]) for k, v in errors.items()}
                    for name, mask in masks.items()},
        "seconds": round(time.perf_counter() - started, 1), "rows": per_row}
    pct = lambda s: f"{s['median']:5.1f} / {s['p90']:5.1f}" if s["rows"] else "   —"  # noqa: E731
    print(f"{result['sampled']} sampled, AIConfigurator estimates {result['aic_estimated']}, "
          f"the lab models {result['lab_modelled']}, both {result['both']}")
    print("subset | rows | TPOT AIC | TPOT lab | TTFT AIC | TTFT lab   (median / p90 %; lab "
          "workload left out, [input length held out])")
    for name, sub in result["subsets"].items():
        print(f"{name} | {sub['aic_tpot']['rows']} | {pct(sub['aic_tpot'])} | "
              f"{pct(sub['lab_tpot'])} [{pct(sub['lab_tpot_isl_out'])}] | {pct(sub['aic_ttft'])} | "
              f"{pct(sub['lab_ttft'])} [{pct(sub['lab_ttft_isl_out'])}]")
    print("not estimated by AIConfigurator:", result["aic_not_estimated"])
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"{result['seconds']} s; written to {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
