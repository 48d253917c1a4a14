"""Experiment 12's validation tables in docs/model.md §12, regenerated from ``calc plan
--validate`` (and ``--strict``) on the code at hand.

The blocks between ``<!-- plan-validation -->``, ``<!-- plan-cv -->``, ``<!-- plan-per-engine
-->``, ``<!-- plan-per-distance -->`` and ``<!-- plan-strict -->`` and their closing markers are
rewritten; the prose around
them is not. The regret study moves with experiment 11's predictions, so rerun this after
lab/served changes: ``python benchmarks/bench_plan_tables.py [--doc docs/model.md]
[--json FILE]`` (about 3 minutes on one core: the study twice).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lab.units import fmt_percent

WIDTH = 96
"""Characters per line of a passage wrapped inside the prose."""
FIRST_QUANTILE = 0.9
"""The first planner's quantile (band q 0.9 × chance), kept in the tables for comparison."""


def validation_table(result: dict, default_q: float) -> str:
    """The planners' table: overall median regret, misses and no pick."""
    from lab.plan.plan_decide import planner_name, previous_planner_name

    default, first = planner_name(default_q), previous_planner_name(FIRST_QUANTILE)
    lines = ["| planner | median regret | picks missing the target | no pick |",
             "|---|---|---|---|"]
    for name, r in result.items():
        o = r["overall"]
        label = name
        if name == "cross-validated q":
            label = "q cross-validated over 2 folds of groups (held-out cases pooled)"
        if name == default:
            lines.append(f"| **{name} (the default)** | **{fmt_percent(o['median_regret'])}** | "
                         f"**{fmt_percent(o['misses'])}** | {o['no_pick']} |")
            continue
        if name == first:
            label = f"{name} (the first default)"
        lines.append(f"| {label} | {fmt_percent(o['median_regret'])} | {fmt_percent(o['misses'])} | "
                     f"{o['no_pick']} |")
    return "\n".join(lines)


def cv_sentence(result: dict) -> str:
    """The folds' quantiles and held-out figures, one sentence."""
    cv = result["cross-validated q"]
    parts = [f"fold {k} chose q {q:g} on the other fold and scored regret "
             f"{fmt_percent(cv['per_fold'][k]['median_regret'])}, misses "
             f"{fmt_percent(cv['per_fold'][k]['misses'])} ({cv['per_fold'][k]['cases']} cases)"
             for k, q in cv["quantile_per_fold"].items()]
    o = cv["overall"]
    text = (f"Held out: {'; '.join(parts)}; pooled {fmt_percent(o['median_regret'])} / "
            f"{fmt_percent(o['misses'])}.")
    if len(set(cv["quantile_per_fold"].values())) > 1:
        text += (" The two folds of groups do not agree on q: the miss rate of a rule is "
                 "itself uncertain by several points on these groups.")
    return text


def per_engine_table(result: dict, default_q: float) -> str:
    """Per engine × mode: the default planner, the first planner and the floor alone."""
    from lab.plan.plan_decide import planner_name, previous_planner_name

    default = result[planner_name(default_q)]
    first = result[previous_planner_name(FIRST_QUANTILE)]
    floor = result["floor only"]
    lines = ["| engine × mode | cases | default: median regret | default: misses | first "
             "planner: regret | first planner: misses | floor only: regret | floor only: "
             "misses |", "|---|---|---|---|---|---|---|---|"]
    for key, r in default["per_engine_mode"].items():
        p, f = first["per_engine_mode"][key], floor["per_engine_mode"][key]
        lines.append(f"| {key} | {r['cases']} | {fmt_percent(r['median_regret'])} | "
                     f"{fmt_percent(r['misses'])} | {fmt_percent(p['median_regret'])} | "
                     f"{fmt_percent(p['misses'])} | "
                     f"{fmt_percent(f['median_regret'])} | {fmt_percent(f['misses'])} |")
    o, p, f = default["overall"], first["overall"], floor["overall"]
    lines.append(f"| **all** | {o['cases']} | **{fmt_percent(o['median_regret'])}** | "
                 f"**{fmt_percent(o['misses'])}** | {fmt_percent(p['median_regret'])} | "
                 f"{fmt_percent(p['misses'])} | "
                 f"{fmt_percent(f['median_regret'])} | {fmt_percent(f['misses'])} |")
    return "\n".join(lines)


def per_distance_table(result: dict, default_q: float) -> str:
    """By the distance from a case's workload to the nearest other workload its group
    measured: the default planner and the floor alone."""
    from lab.plan.plan_decide import planner_name

    default, floor = result[planner_name(default_q)], result["floor only"]
    lines = ["| nearest other measured workload | cases | default: median regret | default: "
             "misses | default: no pick | floor only: misses |", "|---|---|---|---|---|---|"]
    for bucket, r in default["per_distance"].items():
        f = floor["per_distance"][bucket]
        lines.append(f"| {bucket} | {r['cases']} | {fmt_percent(r['median_regret'])} | "
                     f"{fmt_percent(r['misses'])} | {r['no_pick']} | {fmt_percent(f['misses'])} |")
    return "\n".join(lines)


def strict_sentence(strict: dict, default_q: float) -> str:
    """The strict study's figures in one passage."""
    from lab.plan.plan_decide import QUANTILES, planner_name, previous_planner_name

    d = strict[planner_name(default_q)]["overall"]
    p = strict[previous_planner_name(FIRST_QUANTILE)]["overall"]
    top = strict[planner_name(max(QUANTILES))]["overall"]
    worst = max(strict[planner_name(default_q)]["per_engine_mode"].items(),
                key=lambda kv: kv[1]["misses"])
    met = [q for q in QUANTILES if strict[planner_name(q)]["overall"]["misses"] <= 0.10]
    text = (f"the default planner {fmt_percent(d['median_regret'])} regret / {fmt_percent(d['misses'])} "
            f"misses, the first planner {fmt_percent(p['median_regret'])} / {fmt_percent(p['misses'])}, "
            f"q {max(QUANTILES):g} {fmt_percent(top['median_regret'])} / {fmt_percent(top['misses'])} "
            f"({worst[0]} misses most: {fmt_percent(worst[1]['misses'])}). ")
    if met:
        text += (f"Under it the misses stay ≤ 10 % from q {min(met):g} up (regret "
                 f"{fmt_percent(strict[planner_name(min(met))]['overall']['median_regret'])} there).")
    else:
        text += ("Under it no q on the grid keeps the misses ≤ 10 %; the misses figure above "
                 "leans on the band errors being read from fits as good as the prediction's.")
    return text


def replace_block(text: str, marker: str, body: str) -> str:
    """``text`` with the block between ``<!-- marker -->`` and ``<!-- /marker -->`` set to
    ``body`` (one sentence when the markers are missing)."""
    pattern = re.compile(rf"(<!-- {re.escape(marker)} -->)(.*?)(<!-- /{re.escape(marker)} -->)",
                         re.S)
    if not pattern.search(text):
        raise SystemExit(f"The markers <!-- {marker} --> … <!-- /{marker} --> are not in the "
                         "document.")
    inline = marker == "plan-strict"
    sep = "" if inline else "\n"
    if inline:  # a passage inside a paragraph: wrapped as the prose around it
        body = "\n".join(textwrap.wrap(body, width=WIDTH))
    return pattern.sub(lambda m: f"{m.group(1)}{sep}{body}{sep}{m.group(3)}", text, count=1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--doc", default="docs/model.md")
    parser.add_argument("--json", default=None, help="also write both studies here")
    args = parser.parse_args()
    from lab.plan.plan_calibration import DEFAULT_QUANTILE, shipped_calibration
    from lab.plan.plan_decide import validate

    started = time.perf_counter()
    table = shipped_calibration().table
    result = validate(table)
    strict = validate(table, strict=True)
    path = Path(args.doc)
    text = path.read_text(encoding="utf-8")
    text = replace_block(text, "plan-validation", validation_table(result, DEFAULT_QUANTILE))
    text = replace_block(text, "plan-cv", cv_sentence(result))
    text = replace_block(text, "plan-per-engine", per_engine_table(result, DEFAULT_QUANTILE))
    text = replace_block(text, "plan-per-distance", per_distance_table(result, DEFAULT_QUANTILE))
    text = replace_block(text, "plan-strict", strict_sentence(strict, DEFAULT_QUANTILE))
    path.write_text(text, encoding="utf-8")
    if args.json:
        Path(args.json).write_text(json.dumps({"validation": result, "strict": strict,
                                               "default_quantile": DEFAULT_QUANTILE},
                                              indent=1) + "\n", encoding="utf-8")
    print(f"{path} updated in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
