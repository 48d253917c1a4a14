"""``calc plan`` (and ``inference-lab plan``): experiment 12, the deployment to run for a model,
GPUs, workload and latency targets; ``--candidates FILE`` ranks a user's own configurations,
``--validate`` replays the decision on the public rows (docs/model.md §12)."""

from __future__ import annotations

import argparse

from cli.flags import add_json_flag, print_json
from lab.derivations.decode_steps import render_text
from lab.errors import LabInputError
from lab.limits import MAX_MS
from lab.plan.plan_calc import UNCALIBRATED_CANDIDATE, calc_plan, plan_steps, rank_candidates
from lab.plan.plan_calibration import DEFAULT_QUANTILE
from lab.plan.plan_decide import Targets
from lab.plan.plan_space import ENGINES
from lab.units import fmt_count, fmt_number, fmt_percent

DESCRIPTION = ("Experiment 12, plan a deployment: the configuration with the most output "
               "tokens/s per GPU whose conservative predicted latency meets the targets.")


def _targets(args) -> Targets:
    none = lambda v: v if v else None  # noqa: E731
    return Targets(none(args.ttft_ms), none(args.tpot_ms), none(args.tokens_per_s_user))


def _validate(args) -> int:
    from lab.plan.plan_calibration import shipped_calibration
    from lab.plan.plan_decide import planner_name, previous_planner_name, validate

    result = validate(shipped_calibration().table, strict=args.strict)
    if args.json:
        print_json({"validation": result, "default_quantile": DEFAULT_QUANTILE})
        return 0
    print("Regret study on the public rows, out of sample (leave the workload out): per "
          "(checkpoint, GPU, engine, mode, isl/osl) group of ≥ 3 configurations, TPOT targets "
          "at its 25/50/75th measured percentile. Median regret; share of picks missing the "
          "target in measurement; cases with no pick.")
    for name, r in result.items():
        o = r["overall"]
        print(f"- {name}: {o['cases']} cases; regret {fmt_percent(o['median_regret'])}; misses "
              f"{fmt_percent(o['misses'])}; no pick {o['no_pick']}")
    default, previous = planner_name(DEFAULT_QUANTILE), previous_planner_name(0.9)
    cv = result["cross-validated q"]
    print(f"Cross-validated q: chosen per fold of groups on the other fold(s) "
          f"({cv['folds']} folds by a hash of the group): "
          + "; ".join(f"fold {k}: q {q:g}, held out regret "
                      f"{fmt_percent(cv['per_fold'][k]['median_regret'])}, misses "
                      f"{fmt_percent(cv['per_fold'][k]['misses'])}"
                      for k, q in cv["quantile_per_fold"].items()))
    print("By the distance from the case's workload to the nearest other workload its group "
          f"measured ({default}):")
    for bucket, r in result[default]["per_distance"].items():
        print(f"- {bucket}: {r['cases']} cases; regret {fmt_percent(r['median_regret'])}, misses "
              f"{fmt_percent(r['misses'])}; no pick {r['no_pick']}")
    print(f"Per engine × mode ({default}, the default | {previous}, the first planner | "
          "floor only):")
    for key, r in result[default]["per_engine_mode"].items():
        p = result[previous]["per_engine_mode"].get(key, {})
        f = result["floor only"]["per_engine_mode"].get(key, {})
        print(f"- {key}: {r['cases']} cases; regret {fmt_percent(r['median_regret'])}, misses "
              f"{fmt_percent(r['misses'])} | regret {fmt_percent(p.get('median_regret'))}, misses "
              f"{fmt_percent(p.get('misses'))} | floor only regret {fmt_percent(f.get('median_regret'))}, "
              f"misses {fmt_percent(f.get('misses'))}")
    return 0


def _candidates(args) -> int:
    from lab.catalog import get_model, model_catalog
    from lab.plan.plan_candidates import read_candidates

    data = read_candidates(args.candidates)
    own = None if args.model in model_catalog() else get_model(args.model)  # a config.json
    result = rank_candidates(data, _targets(args), args.quantile, model=own)
    if args.json:
        print_json(result)
        return 0
    rows = len(result["candidates"])
    print(f"Candidates from {args.candidates}: {fmt_count(rows, 'row')}, "
          f"{result['meeting']:,} {'meets' if result['meeting'] == 1 else 'meet'} the targets at "
          "the band's upper edge.")
    for r in result["candidates"]:
        if r.get("reason"):
            print(f"{r['rank']}. {r['id']}: refused: {r['reason']}")
            continue
        print(f"{r['rank']}. {r['id']}: {fmt_number(r['tokens_per_s_gpu'], 1)} tok/s/GPU, "
              f"{fmt_number(r['tokens_per_s_user'], 1)} tok/s/user, TPOT "
              f"{fmt_number(r['tpot_ms'], 2)} ms (upper {fmt_number(r['tpot_upper_ms'], 2)}), "
              f"{'meets' if r['meets'] else 'misses'}{uncalibrated_note(r)}")
    return 0


def uncalibrated_note(candidate: dict) -> str:
    """What a ranked candidate's line adds when its figures are the floor alone: no public run
    of its engine × GPU × mode calibrates it (its band has no width)."""
    return "" if candidate.get("calibrated", True) else f" ({UNCALIBRATED_CANDIDATE})"


def frontier_line(point: dict, mode: str, best: dict | None) -> str:
    """One point of ``mode``'s frontier in the text output: its tokens/s per user and per
    GPU, its configuration, and whether it is the pick (the same mode, label and figure)."""
    pick = (best is not None and mode == best["mode"] and point["label"] == best["label"]
            and point["tokens_per_s_gpu"] == best["tokens_per_s_gpu"])
    return (f"  {fmt_number(point['tokens_per_s_user'], 1)} → "
            f"{fmt_number(point['tokens_per_s_gpu'], 0)} ({point['label']})"
            + ("  ← the pick" if pick else ""))


def _catalog_gpu(gpu: str) -> str:
    """``gpu`` when it is a catalog id; a GPU file or an unknown id refused in one sentence (a
    plan's predictions are calibrated on the public runs of a catalog GPU)."""
    from pathlib import Path

    from lab.catalog import gpu_catalog

    if gpu in gpu_catalog():
        return gpu
    if Path(gpu).suffix.lower() == ".toml" or Path(gpu).is_file():
        raise LabInputError(f"plan takes a catalog GPU id, not a GPU file ({gpu}): its "
                            "predictions are calibrated on the public runs of catalog GPUs; "
                            f"choose one of {', '.join(gpu_catalog())}.")
    raise LabInputError(f"Unknown GPU '{gpu[:40]}'; choose one of {', '.join(gpu_catalog())}.")


def _run(args: argparse.Namespace) -> int:
    if args.validate:
        return _validate(args)
    _catalog_gpu(args.gpu)
    if args.candidates:
        return _candidates(args)
    t = _targets(args)
    result = calc_plan(args.model, args.gpu, args.budget, args.engine, args.isl, args.osl,
                       t.ttft_ms, t.tpot_ms, t.tokens_per_s_user, args.quantile)
    if args.json:
        print_json(result)
        return 0
    i, c = result["inputs"], result["counts"]
    lines = [f"Inputs: --model {i['model']} --gpu {i['gpu']} --budget {i['budget']} --engine "
             f"{i['engine']} --isl {i['isl']} --osl {i['osl']} --ttft-ms {args.ttft_ms:g} "
             f"--tpot-ms {args.tpot_ms:g} --tokens-per-s-user {args.tokens_per_s_user:g} "
             f"--quantile {args.quantile:g}",
             f"{c['configurations']:,} configurations; {c['valid']:,} valid, {c['fit']:,} fit in "
             f"memory, {c['meet_targets']:,} meet the targets at the band's upper edge "
             f"({c['meet_targets_at_prediction']:,} at the prediction)."]
    for r in result["refusals"]:
        lines.append(f"- refused ({r['configurations']:,}): {r['reason']}")
    if result["uncalibrated_note"]:
        lines.append(result["uncalibrated_note"])
    b = result["best"]
    for mode, points in result["frontier"].items():
        lines.append(f"Frontier, {mode}: {len(points)} points, tok/s/user → tok/s/GPU"
                     + (":" if points else "."))
        lines += [frontier_line(p, mode, b) for p in points]
    if b is not None:
        lines += [f"Best: {b['mode']} {b['label']} on {fmt_count(b['gpus'], 'GPU')}. {b['sure']['sentence']}"
                  + (f" {b['band_note']}" if b["band_note"] else ""),
                  f"Measured rows: {b['served_link']}"]
        near = b.get("nearest_workload")
        if near and near["workload"] is not None:
            whose = "this model" if near["same_model"] else "any model (none of this one)"
            far = ("this workload itself" if near["octaves"] == 0 else
                   f"{fmt_number(near['octaves'], 1)} octaves away")
            lines.append(f"Nearest workload measured for {whose} on {b['engine']} × "
                         f"{b['mode']}: {near['workload']} ({far}; the regret study by "
                         "distance: calc plan --validate).")
    print("\n".join([*lines, "", render_text(plan_steps(result))]))
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The plan's inputs, targets and modes."""
    parser.add_argument("--model", default="llama-3.1-70b", help="catalog model id or a "
                        "config.json (default: %(default)s)")
    parser.add_argument("--gpu", default="h200", help="catalog GPU id (default: %(default)s)")
    parser.add_argument("--budget", type=int, default=8,
                        help="most GPUs to use (default: %(default)s)")
    parser.add_argument("--engine", default="vllm", choices=ENGINES,
                        help="engine whose measured rows calibrate the plan (ideal: the floor; "
                        "default: %(default)s)")
    parser.add_argument("--isl", type=int, default=1024,
                        help="prompt tokens per request (default: %(default)s)")
    parser.add_argument("--osl", type=int, default=1024,
                        help="output tokens per request (default: %(default)s)")
    parser.add_argument("--ttft-ms", type=float, default=2000.0,
                        help="TTFT target, ms (0: none; default: %(default)g)")
    parser.add_argument("--tpot-ms", type=float, default=0.0,
                        help="TPOT target, ms (0: none; default: %(default)g)")
    parser.add_argument("--tokens-per-s-user", type=float, default=50.0,
                        help="tokens/s per user target (0: none; default: %(default)g)")
    parser.add_argument("--quantile", type=float, default=DEFAULT_QUANTILE,
                        help="band quantile of the group's out-of-sample errors (conservatism; "
                        "default: %(default)g)")
    parser.add_argument("--candidates", metavar="FILE", default=None,
                        help="rank exactly your own configurations: a CSV with experiment 11's "
                        "columns (measurements optional); with --model config.json, rows whose "
                        "model_path is its _name_or_path are read as that model")
    parser.add_argument("--validate", action="store_true",
                        help="replay the decision on the public rows out of sample and report "
                        "regret and misses per engine × mode")
    parser.add_argument("--strict", action="store_true",
                        help="with --validate: read the bands' errors leaving two workloads out "
                        "(the held-out one and the row's own), so no coefficient behind them has "
                        "seen the held-out workload")
    add_json_flag(parser)


def _checked_run(args):
    for name in ("ttft_ms", "tpot_ms", "tokens_per_s_user"):
        value = getattr(args, name)
        if not (0 <= value <= MAX_MS):  # nan and inf too
            raise LabInputError(f"--{name.replace('_', '-')} must be 0 (none) or a number above "
                                f"it up to {MAX_MS:,.0f}, not {value:g}.")
    if args.strict and not args.validate:
        raise LabInputError("--strict reads the regret study's bands more strictly; give it "
                            "with --validate.")
    return _run(args)


def register(subparsers, name: str = "plan") -> None:
    """Add ``plan`` (under ``calc``, and at the top level as an alias)."""
    parser = subparsers.add_parser(name, help=DESCRIPTION.split(":")[0], description=DESCRIPTION)
    add_arguments(parser)
    parser.set_defaults(func=_checked_run)
