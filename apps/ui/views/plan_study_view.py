"""Experiment 12's validation on its page: how often the default planner's pick held in
measurement (the regret study, :func:`lab.plan.plan_study.study_summary`), per engine × mode
with the plan's own row marked, and at the plan's distance from the workloads its group
measured. Every value is escaped; nothing here is read from the page's inputs but numbers and
catalog ids already checked by the experiment."""

from __future__ import annotations

from html import escape

from lab.plan.plan_decide import CV_MISSES
from lab.plan.plan_study import FLOOR_ONLY
from lab.units import fmt_number, fmt_percent

STUDY_TITLE = "How often a pick holds: the regret study"
"""The section's heading."""


def _aim(value: float) -> str:
    """Whether a study figure meets the aim for both the median regret and the share of
    picks missing (at most :data:`~lab.plan.plan_decide.CV_MISSES`, docs/model.md §12)."""
    return "met" if value <= CV_MISSES else "not met"


def _distance_sentence(best: dict, study: dict, isl: int, osl: int) -> str:
    near = best.get("nearest_workload")
    if not near:
        return ""
    group = f"{best['engine']} × {best['mode']}"
    if near["workload"] is None:
        return (f"<p>No workload of this engine × GPU × mode was measured: the study has no "
                f"case like this plan ({escape(group)}).</p>")
    whose = "this model" if near["same_model"] else "any model (none of this one)"
    bucket = near["bucket"]
    figures = study["default"]["per_distance"].get(bucket)
    far = bucket if bucket.startswith("within") else f"{bucket} away"
    where = (f"In the study, with the nearest other measured workload {escape(far)}, "
             f"the picks missed in {fmt_percent(figures['misses'])} of {figures['cases']:,} cases, at a "
             f"median regret of {fmt_percent(figures['median_regret'])}." if figures else "")
    if near["octaves"] == 0:
        return (f"<p>This workload, {isl}/{osl}, was itself measured for {whose} on "
                f"{escape(best['engine'])} × {escape(best['mode'])}: its measurements inform the "
                "pick, which no case of the study had (each case's workload was held out). "
                f"{where}</p>")
    return (f"<p>The nearest workload measured for {whose} on {escape(best['engine'])} × "
            f"{escape(best['mode'])} is {escape(near['workload'])}, "
            f"{fmt_number(near['octaves'], 1)} octaves from {isl}/{osl} (octaves: "
            f"|log2| of the isl ratio plus that of the osl ratio). {where}</p>")


def study_html(result: dict | None, study: dict) -> str:
    """The regret study's section for the plan ``result`` (None: the study alone)."""
    default, floor = study["default"], study[FLOOR_ONLY]
    overall, floor_overall = default["overall"], floor["overall"]
    best = (result or {}).get("best")
    mine = None if best is None else f"{best['engine']} × {best['mode']}"
    rows = []
    for key, r in default["per_engine_mode"].items():
        f = floor["per_engine_mode"].get(key, {})
        figures = (f"<td>{r['cases']:,}</td><td>{fmt_percent(r['misses'])}</td>"
                   f"<td>{fmt_percent(r['median_regret'])}</td><td>{fmt_percent(f.get('misses'))}</td>")
        if key == mine:
            rows.append(f'<tr class="lab-plan-study-mine"><td><strong>{escape(key)} (this '
                        f"pick)</strong></td>{figures}</tr>")
        else:
            rows.append(f"<tr><td>{escape(key)}</td>{figures}</tr>")
    rows.append(f"<tr><td><strong>all</strong></td><td>{overall['cases']:,}</td>"
                f"<td><strong>{fmt_percent(overall['misses'])}</strong></td>"
                f"<td><strong>{fmt_percent(overall['median_regret'])}</strong></td>"
                f"<td>{fmt_percent(floor_overall['misses'])}</td></tr>")
    quantile = (result or {}).get("inputs", {}).get("quantile", study["quantile"])
    other_q = ("" if quantile == study["quantile"] else
               f" These are the figures at the default band quantile {study['quantile']:g}; "
               f"this plan reads its band at {fmt_number(float(quantile), 2)}.")
    distance = ("" if best is None else _distance_sentence(
        best, study, int(result["inputs"]["isl"]), int(result["inputs"]["osl"])))
    return (
        '<div class="lab-plan-study">'
        f"<p><strong>{STUDY_TITLE}</strong>. The planner replayed on the public measured rows, "
        "out of sample (each case's workload left out of every prediction and band): per "
        "(checkpoint, GPU, engine, mode, workload) group of at least 3 measured configurations, "
        "a TPOT target at its 25th, 50th and 75th measured percentile. Its picks missed the "
        f"target in measurement in {fmt_percent(overall['misses'])} of {overall['cases']:,} cases, at a "
        f"median regret of {fmt_percent(overall['median_regret'])} (1 − the pick's measured tokens/s "
        "per GPU / the best measured one meeting the target; a miss counts as 1); the floor "
        f"alone missed in {fmt_percent(floor_overall['misses'])}. The aims, at most 10 % each: "
        f"misses {_aim(overall['misses'])}, regret {_aim(overall['median_regret'])} "
        "(docs/model.md §12 says why)." + other_q + "</p>"
        '<div class="lab-plan-study-table" style="overflow-x: auto">'
        "<table><tr><th>engine × mode</th><th>cases</th><th>picks missing</th>"
        "<th>median regret</th><th>floor only: missing</th></tr>" + "".join(rows)
        + "</table></div>" + distance + "</div>")
