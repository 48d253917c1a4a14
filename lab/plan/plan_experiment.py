"""Experiment 12: plan a deployment — the configuration with the most output tokens/s per GPU
whose conservative predicted latency meets the targets (docs/model.md §12).

Its page is :mod:`apps.ui.views.plan_page`, its command ``cli/calc_plan.py``; its dataset is
the ``plan`` grid (:mod:`sweeps.grids.plan_grid`).
"""

from __future__ import annotations

import math
import numbers
import re

import numpy as np
import param
import xarray as xr

from lab.catalog import gpu_catalog, model_catalog
from lab.catalog.entries import ModelSpec
from lab.experiments.base import Card, Experiment, Prediction
from lab.limits import MAX_CONTEXT, MAX_MS
from lab.plan.plan_calc import calc_plan, plan_steps
from lab.plan.plan_calibration import DEFAULT_QUANTILE, MAX_QUANTILE
from lab.plan.plan_space import ENGINES, MAX_BUDGET
from lab.served.served_loader import SHIPPED_SOURCE
from lab.units import fmt_count, fmt_number

NO_TARGET = 0.0
"""A target of 0 means none."""


class PlanDeployment(Experiment):
    """The best deployment of a model on a GPU budget under latency targets."""

    number = 12
    slug = "plan"
    title = "Plan a deployment"
    headline = "More tokens per GPU. As long as each user still gets theirs."
    prediction = Prediction(
        question="Llama 3.1 70B on 8 H200 with vLLM, 1024/1024 tokens, at least 50 tokens/s per "
                 "user and the first token within 2 s: which layout does the planner pick, the "
                 "most output tokens per GPU it can promise with both targets met?",
        choices=("One tp 8 worker", "Two tp 4 replicas", "tp 2 or tp 1 replicas",
                 "A disaggregated layout"),
        answer=0,
    )
    limits = (
        "A plan is experiment 11's floor plus named terms over every layout, precision and "
        "concurrency, its coefficients fitted on the public rows of the engine × GPU × mode "
        "(none: the floor, marked uncalibrated). Its band is read from that group's "
        "out-of-sample errors; the regret study (calc plan --validate) says how often a pick "
        "holds in measurement. Disaggregated workers share one layout; the KV cache is BF16 "
        "where the batch fits, else FP8, as experiment 11 reads it; pipeline parallelism is "
        "not planned."
    )
    sources = (f"Measured serving latency: {SHIPPED_SOURCE} (github.com/ai-dynamo/aiconfigurator).",
               "GPU and model figures: docs/sources.md.")

    model = param.Selector(default="llama-3.1-70b", objects=list(model_catalog()),
                           label="Model", doc="The model to deploy (catalog id).")
    gpu = param.Selector(default="h200", objects=list(gpu_catalog()), label="GPU",
                         doc="The GPU of the deployment.")
    budget = param.Integer(default=8, bounds=(1, MAX_BUDGET), label="GPU budget",
                           doc="Most GPUs the deployment may use.")
    engine = param.Selector(default="vllm", objects=list(ENGINES), label="Engine",
                            doc="Serving engine whose measured rows calibrate the prediction "
                                "(ideal: the floor).")
    isl = param.Integer(default=1024, bounds=(1, MAX_CONTEXT), label="Prompt tokens (isl)",
                        doc="Input tokens per request.")
    osl = param.Integer(default=1024, bounds=(1, MAX_CONTEXT), label="Output tokens (osl)",
                        doc="Output tokens per request.")
    ttft_ms = param.Number(default=2000.0, bounds=(0, MAX_MS), label="TTFT at most (ms; 0 = none)",
                           doc="Time-to-first-token target, ms (0: none).")
    tpot_ms = param.Number(default=0.0, bounds=(0, MAX_MS), label="TPOT at most (ms; 0 = none)",
                           doc="Time-per-output-token target, ms (0: none).")
    tokens_per_s_user = param.Number(default=50.0, bounds=(0, MAX_MS),
                                     label="Tokens/s per user ≥ (0 = none)",
                                     doc="Per-user output speed target (0: none).")
    model_config = param.ClassSelector(
        class_=ModelSpec, default=None, allow_None=True, precedence=-1,
        doc="A model read from the reader's uploaded config.json "
            "(lab.catalog.lookup.model_from_config_bytes), planned instead of ``model``; None: "
            "the catalog model. Never a widget: the page's upload sets it, and choosing a "
            "catalog model clears it.")
    quantile = param.Number(default=DEFAULT_QUANTILE, bounds=(0.5, MAX_QUANTILE), step=0.05,
                            label="Band quantile",
                            doc="How conservative: latency read at this quantile of the "
                                "group's out-of-sample errors, and the least chance of "
                                "meeting the targets a pick needs.")

    @staticmethod
    def grid_link_inputs(values: dict, row: dict) -> dict:
        """A ``plan`` grid cell's coordinates ``values`` as this page's inputs: its ``isl/osl``
        workload as ``isl`` and ``osl``, and the GPUs of the cell (``row["gpus"]``) as the
        budget (the grid's "Open" carried neither, so every row opened the default 1024/1024
        plan on 8 GPUs). The cell's predicted latencies are no targets, so none travels."""
        out = dict(values)
        workload = re.fullmatch(r"([0-9]+)/([0-9]+)", str(values.get("workload", "")))
        if workload:
            out["isl"], out["osl"] = int(workload[1]), int(workload[2])
        gpus = row.get("gpus")
        if isinstance(gpus, numbers.Real) and math.isfinite(gpus) and 1 <= gpus <= MAX_BUDGET:
            out["budget"] = int(gpus)  # a larger deployment than a plan may hold: not carried
        return out

    def _refresh(self, *events) -> None:
        """Recompute; a catalog model chosen while an uploaded one is in force replaces it
        (cleared without a second calculation)."""
        if self.model_config is not None and any(e.name == "model" for e in events):
            with param.discard_events(self):
                self.model_config = None
        super()._refresh(*events)

    def compute(self) -> dict:
        target = lambda v: None if not v else float(v)  # noqa: E731
        model = self.model if self.model_config is None else self.model_config
        return calc_plan(model, self.gpu, self.budget, self.engine, self.isl, self.osl,
                         target(self.ttft_ms), target(self.tpot_ms),
                         target(self.tokens_per_s_user), self.quantile)

    def cards(self) -> list[Card]:
        r = self.result
        b = r["best"]
        if b is None:
            best = Card("Best configuration", "none", r["none_sentence"])
        else:
            best = Card("Best configuration", f"{fmt_number(b['tokens_per_s_gpu'], 0)} tok/s/GPU",
                        f"{b['mode']}, {b['label']}; {fmt_count(b['gpus'], 'GPU')}")
        sure = ("" if b is None else b["sure"]["sentence"])
        return [
            best,
            Card("Per user", "n/a" if b is None else f"{fmt_number(b['tokens_per_s_user'], 1)} "
                 # "at the band's edge", the figure the planner judges by: "upper" read as a
                 # contradiction when the band lies below the prediction (17.39, upper 17.31)
                 "tok/s", "" if b is None else f"TPOT {fmt_number(b['tpot_ms'], 2)} ms predicted, "
                 f"{fmt_number(b['tpot_upper_ms'], 2)} at the band's edge; TTFT "
                 f"{fmt_number(b['ttft_ms'], 0)} ms, {fmt_number(b['ttft_upper_ms'], 0)} at the "
                 "edge"),
            Card("How sure", "n/a" if b is None else "uncalibrated"
                 if b["sure"]["share"] is None else
                 f"{fmt_number(b['sure']['share'] * 100, 0)} %",
                 sure or "no configuration is picked"),
            Card("Configurations", f"{r['counts']['meet_targets']:,} meet",
                 f"of {r['counts']['fit']:,} that fit ({r['counts']['configurations']:,} "
                 "enumerated)"),
        ]

    def steps(self):
        return plan_steps(self.result)

    def explanation(self) -> str:
        r = self.result
        b = r["best"]
        if b is None:
            return r["none_sentence"]
        optimistic = r["best_at_prediction"]
        bolder = ("" if optimistic is None or optimistic["label"] == b["label"] else
                  f" Read at the prediction instead of the band's edge, the pick would be "
                  f"{optimistic['mode']} {optimistic['label']} "
                  f"({fmt_number(optimistic['tokens_per_s_gpu'], 0)} tokens/s per GPU), closer "
                  "to the target and more likely to miss it.")
        uploaded = r["inputs"].get("model_name")
        whose = f"For {uploaded} (your config.json), the" if uploaded else "The"
        return (f"{whose} pick is {b['mode']} {b['label']} on {fmt_count(b['gpus'], 'GPU')}: "
                f"{fmt_number(b['tokens_per_s_gpu'], 0)} output tokens/s per GPU at "
                f"{fmt_number(b['tokens_per_s_user'], 1)} tokens/s per user (predicted; "
                f"{fmt_number(1e3 / b['tpot_upper_ms'], 1)} at the band's upper edge). "
                "A wider worker makes each decode step faster, so more clients fit under the "
                "per-user target; a narrower one reads the weights on fewer GPUs per client."
                + bolder)

    def chart_data(self) -> xr.Dataset:
        """The frontier of every mode: tokens/s per GPU against tokens/s per user."""
        points = [p for ps in self.result["frontier"].values() for p in ps]
        user = np.array([p["tokens_per_s_user"] for p in points], dtype=float)
        order = np.argsort(user)
        gpu = np.array([p["tokens_per_s_gpu"] for p in points], dtype=float)[order]
        ds = xr.Dataset({"tokens_per_s_gpu": ("tokens_per_s_user", gpu,
                                              {"long_name": "output tokens/s per GPU",
                                               "units": "tokens/s"})},
                        coords={"tokens_per_s_user": ("tokens_per_s_user", user[order],
                                                      {"long_name": "tokens/s per user",
                                                       "units": "tokens/s"})})
        return ds
