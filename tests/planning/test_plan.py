"""Experiment 12, plan a deployment: a plan cell is experiment 11's prediction and the point
call, each refusal one sentence, the pick meets its conservative targets, the frontier is
Pareto, candidates are ranked and hostile files refused, the regret study runs."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout

import numpy as np
import pytest

from lab.errors import LabInputError
from lab.plan.plan_calc import calc_plan, plan_point, rank_candidates
from lab.plan.plan_calibration import DEFAULT_QUANTILE, shipped_calibration
from lab.plan.plan_decide import (
    Targets,
    expected_tokens,
    frontier,
    monotone_chance,
    pick,
    planner_name,
    previous_planner_name,
)
from lab.plan.plan_space import PlanSpace, config_row, enumerate_rows, predict
from lab.served import gap
from lab.served.served_calc import run_keys
from lab.served.served_loader import MEASURED_VARIABLES, NUMBER_VARIABLES, TEXT_VARIABLES

RTOL = 1e-12
"""Same functions, same order of operations: equal to the last bits but for the summation."""


@pytest.fixture(scope="module")
def table():
    return shipped_calibration().table


def _row(table, i: int) -> dict:
    out = {}
    for name in (*TEXT_VARIABLES, *NUMBER_VARIABLES, *MEASURED_VARIABLES):
        value = table[name].values[i]
        out[name] = value.item() if hasattr(value, "item") else value
    out["system"] = str(table["gpu"].values[i])
    return out


def test_a_measured_configuration_is_predicted_exactly_as_calc_served(table):
    """With the row's workload left out of the fit (as experiment 11 does), the planner's
    prediction of a measured configuration is experiment 11's stored one."""
    ok = np.flatnonzero(np.asarray(table["modelled"].values, dtype=bool)
                        & np.isfinite(table["tpot_predicted_ms"].values))
    rows = np.random.default_rng(12).choice(ok, 24, replace=False)
    for i in rows:
        workload = str(table["workload"].values[i])
        plan = predict([_row(table, int(i))], shipped_calibration(workload), 0.9)
        for metric in ("tpot", "ttft"):
            np.testing.assert_allclose(plan[f"{metric}_ms"].values[0],
                                       table[f"{metric}_predicted_ms"].values[i], rtol=RTOL)


def test_the_planner_fits_each_group_on_the_rows_experiment_11_fits_on():
    """Every group's coefficients, both metrics, equal experiment 11's fit on all its rows —
    the rows no fit may use (measured below a stated floor) left out by both."""
    calibration = shipped_calibration()
    t = calibration.table
    modelled = np.asarray(t["modelled"].values, dtype=bool)
    groups = np.asarray(t["group"].values).astype(str)
    assert not np.asarray(t["fit_on"].values, dtype=bool)[modelled].all()
    for metric in ("tpot", "ttft"):
        fits = gap.fit_all(calibration.designs[metric], groups, modelled, runs=run_keys(t))
        for group, theta in fits.items():
            np.testing.assert_array_equal(calibration.theta(group, metric), theta)


def test_a_plan_cell_equals_the_point_call():
    result = calc_plan("deepseek-v3", "b200", 16, "trtllm", 1024, 1024)
    cells = [result["best"], *result["frontier"]["agg"][:2], *result["frontier"]["disagg"][:2]]
    for cell in cells:
        point = plan_point(cell["engine"], "deepseek-v3", "b200", cell["mode"], cell["tp"],
                           cell["attention_dp"], cell["moe_ep"], cell["precision"],
                           cell["concurrency"], 1024, 1024,
                           (cell["prefill_workers"], cell["decode_workers"]))
        for name in ("tpot_ms", "ttft_ms", "tpot_upper_ms", "tokens_per_s_gpu", "gpus"):
            assert point[name] == pytest.approx(cell[name], rel=RTOL), name


def test_a_grid_cell_equals_the_point_call():
    from sweeps.grids.plan_grid import plan_block

    coords = {"model": np.array(["llama-3.1-70b"]), "gpu": np.array(["h200"]),
              "engine": np.array(["vllm", "ideal"]), "weight_precision": np.array(["fp8"]),
              "layout": np.array(["tp4", "tp8"]), "serving": np.array(["agg", "disagg-1p2d"]),
              "concurrency": np.array([16, 64]), "workload": np.array(["1024/1024"])}
    out = plan_block(coords, {"quantile": DEFAULT_QUANTILE})
    assert out["tpot_ms"].shape == (1, 1, 2, 1, 2, 2, 2, 1)
    for e, engine in enumerate(("vllm", "ideal")):
        for s, (mode, workers) in enumerate((("agg", (1, 1)), ("disagg", (1, 2)))):
            point = plan_point(engine, "llama-3.1-70b", "h200", mode, 8, 1, 1, "fp8", 64,
                               1024, 1024, workers)
            for name in ("tpot_ms", "ttft_ms", "tokens_per_s_gpu", "tpot_upper_ms"):
                assert out[name][0, 0, e, 0, 1, s, 1, 0] == pytest.approx(point[name],
                                                                           rel=RTOL)
            assert bool(out["calibrated"][0, 0, e, 0, 1, s, 1, 0]) == point["calibrated"]


def test_the_ideal_engine_is_the_floor_and_an_unmeasured_group_is_marked():
    ideal = plan_point("ideal", "llama-3.1-70b", "h200", "agg", 4, 1, 1, "fp8", 64, 1024, 1024)
    assert ideal["tpot_ms"] == ideal["tpot_floor_ms"] and not ideal["calibrated"]
    result = calc_plan("llama-3.1-8b", "a100-sxm-80gb", 4, "vllm", 1024, 1024)
    assert not result["calibrated"] and result["uncalibrated_note"]
    assert result["best"]["sure"]["share"] is None
    assert "uncalibrated" in result["best"]["sure"]["sentence"]


@pytest.mark.parametrize(("kwargs", "sentence"), [
    ({"model": "deepseek-v3", "gpu": "h100-sxm", "budget": 4},
     "The weights of DeepSeek-V3 at fp8 do not fit on 4 × NVIDIA H100 SXM"),
    ({"budget": 0}, "The GPU budget must be a whole number from 1 to 1,024, not 0."),
    ({"engine": "tgi"}, "Engine 'tgi' is not one of trtllm, vllm, sglang, ideal."),
    ({"quantile": 1.5}, "The band quantile must be from 0.5 to 0.99, not 1.5."),
    # the command line took these (the page's bounds were never checked there)
    ({"quantile": 0.995}, "The band quantile must be from 0.5 to 0.99, not 0.995."),
    ({"osl": 10**20}, "osl must be a whole number of tokens from 1 to 1,048,576, not "
                      "100000000000000000000."),  # a traceback (OverflowError)
    ({"isl": 200_000}, "A request of isl + osl = 201,024 tokens exceeds Llama 3.1 70B's "
                       "maximum context of 131,072 tokens."),  # it was planned
])
def test_a_plan_that_cannot_be_made_is_one_sentence(kwargs, sentence):
    with pytest.raises(LabInputError) as info:
        calc_plan(**kwargs)
    assert sentence in str(info.value) and "\n" not in str(info.value)


def test_each_refused_configuration_says_why_in_one_sentence():
    rows = enumerate_rows(PlanSpace(model="llama-3.1-70b", gpu="h200", budget=16))
    plan = predict(rows, shipped_calibration(), 0.9)
    reasons = set(plan["reason"].values.tolist()) - {""}
    assert "NVFP4 weights on the NVIDIA H200 SXM, a GPU without an FP4 peak." in reasons
    assert any(r.startswith("tp 16 does not divide the 8 KV heads") for r in reasons)
    assert any("do not fit on 1 × NVIDIA H200 SXM" in r for r in reasons)
    assert all(r.endswith(".") and r.count(". ") == 0 for r in reasons)
    dense_ep = config_row("vllm", "llama-3.1-8b", "h200", "agg", __import__(
        "lab.plan.plan_space", fromlist=["Layout"]).Layout(1, 8, 8), "bf16", 8, 1024, 1024)
    refused = predict([dense_ep], shipped_calibration(), 0.9)
    assert "dense model is not modelled" in str(refused["reason"].values[0])
    assert not refused["valid"].values[0] and np.isnan(refused["tpot_ms"].values[0])


def test_the_pick_meets_its_conservative_targets_and_moves_with_them():
    loose = calc_plan(tokens_per_s_user=20.0, ttft_ms=None)
    tight = calc_plan(tokens_per_s_user=80.0, ttft_ms=None)
    for result, speed in ((loose, 20.0), (tight, 80.0)):
        best = result["best"]
        assert best["calibrated"] and best["fits"] and best["valid"]
        assert 1e3 / best["tpot_upper_ms"] >= speed
        assert best["sure"]["share"] >= DEFAULT_QUANTILE  # its chance of meeting, as kept
    assert loose["best"]["label"] != tight["best"]["label"]
    assert loose["best"]["tokens_per_s_gpu"] > tight["best"]["tokens_per_s_gpu"]
    impossible = calc_plan(tokens_per_s_user=100_000.0)
    assert impossible["best"] is None and "No configuration" in impossible["none_sentence"]


def test_the_frontier_is_pareto():
    rows = enumerate_rows(PlanSpace(model="qwen3-235b-a22b", gpu="h200", budget=16,
                                    engine="trtllm"))
    plan = predict(rows, shipped_calibration(), 0.9)
    for mode in ("agg", "disagg"):
        index = frontier(plan, mode)
        assert index.size >= 2
        user = plan["tokens_per_s_user"].values[index]
        gpu = plan["tokens_per_s_gpu"].values[index]
        assert np.all(np.diff(user) > 0) and np.all(np.diff(gpu) < 0)
        usable = (plan["valid"].values & plan["fits"].values
                  & (plan["mode"].values == mode))
        for u, g in zip(user, gpu, strict=True):  # nothing beats a frontier point on both
            better = usable & (plan["tokens_per_s_user"].values >= u) & (
                plan["tokens_per_s_gpu"].values > g)
            assert not better.any()
    assert pick(plan, Targets(tokens_per_s_user=30.0)) is not None


def test_candidates_are_ranked_exactly(table):
    from lab.served.served_loader import parse_served

    ids = ["llama_3_1_70b_h200_sxm_vllm_fp8_agg_1024x1024_c64_tp4"]
    keep = [i for i, x in enumerate(table["id"].values) if any(k in str(x) for k in ids)][:1]
    keep += list(np.flatnonzero(table["model"].values == "qwen3-32b")[:4])
    data = parse_served(_csv(table, keep), "mine.csv")
    ranking = rank_candidates(data, Targets(tokens_per_s_user=20.0))
    assert sorted(r["id"] for r in ranking["candidates"]) == sorted(
        str(table["id"].values[i]) for i in keep)
    assert [r["rank"] for r in ranking["candidates"]] == list(range(1, len(keep) + 1))
    meets = [r["meets"] for r in ranking["candidates"]]
    assert meets == sorted(meets, reverse=True)


def _csv(table, index) -> bytes:
    head = "id,backend,model_path,system,mode,isl,osl,silicon_ttft_ms,silicon_tpot_ms,batch_size,tp_size"
    lines = [head]
    for i in index:
        v = lambda n, i=i: table[n].values[i]  # noqa: E731
        lines.append(",".join(str(x) for x in (v("id"), v("engine"), v("model_path"), v("system"),
                                                v("mode"), v("isl"), v("osl"),
                                                v("ttft_measured_ms"), v("tpot_measured_ms"),
                                                v("concurrency"), v("tp"))))
    return ("\n".join(lines) + "\n").encode()


def _cli(*argv) -> tuple[int, str, str]:
    from cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_the_command_line_plans_and_its_alias_is_the_same(tmp_path):
    code, out, _ = _cli("calc", "plan", "--json")
    assert code == 0
    record = json.loads(out)
    assert record["best"]["tokens_per_s_gpu"] > 0 and record["frontier"]["agg"]
    code, alias, _ = _cli("plan", "--json")
    assert code == 0 and json.loads(alias)["best"] == record["best"]
    code, text, _ = _cli("plan")
    assert code == 0 and text.startswith("Inputs: --model llama-3.1-70b --gpu h200 --budget 8")
    assert "Tokens/s per GPU = " in text
    for mode, points in record["frontier"].items():  # every point, the pick marked once
        assert f"Frontier, {mode}: {len(points)} points" in text
        for p in points:
            assert f"({p['label']})" in text
    assert text.count("← the pick") == 1
    best = record["best"]
    assert f"({best['label']})  ← the pick" in text
    assert text.count("- refused (") == len(record["refusals"])


@pytest.mark.parametrize(("argv", "sentence"), [
    (("--ttft-ms", "nan"), "--ttft-ms must be 0 (none) or a number above it up to "
                           "1,000,000,000, not nan."),
    (("--tpot-ms", "-1"), "--tpot-ms must be 0 (none) or a number above it up to "
                          "1,000,000,000, not -1."),
    (("--tokens-per-s-user", "inf"), "--tokens-per-s-user must be 0 (none) or a number above "
                                     "it up to 1,000,000,000, not inf."),
    (("--strict",), "--strict reads the regret study's bands more strictly; give it with "
                    "--validate."),
])
def test_a_bad_target_or_flag_is_one_sentence_naming_the_flag(argv, sentence):
    code, out, err = _cli("plan", *argv)
    assert code == 2 and out == ""
    assert err == f"inference-lab: error: {sentence}\n"


@pytest.mark.parametrize(("content", "sentence"), [
    (b"id,backend\nx,y\n", "lacks the columns "),
    (b"\x00\x01\x02", "NUL bytes"),
    (b"", "has no data rows; it needs a header and at least one configuration"),
    (b"id,backend,model_path,system,mode,isl,osl\n\n", "at least one configuration (measurements are "
     "optional)"),
])
def test_a_hostile_candidates_file_is_one_sentence(tmp_path, content, sentence):
    path = tmp_path / "candidates.csv"
    path.write_bytes(content)
    code, out, err = _cli("plan", "--candidates", str(path))
    assert code == 2 and out == ""
    assert sentence in err and err.count("\n") == 1
    assert err.startswith("inference-lab: error: Candidates file ") and "Serving" not in err


def test_a_candidates_path_that_is_a_folder_is_named_a_candidates_path(tmp_path):
    code, out, err = _cli("plan", "--candidates", str(tmp_path))
    assert code == 2 and out == ""
    assert err.startswith("inference-lab: error: Candidates path ") and "directory" in err


def test_the_regret_study_runs_per_engine_and_mode():
    code, out, _ = _cli("plan", "--validate", "--json")
    assert code == 0
    study = json.loads(out)["validation"]
    default = planner_name(DEFAULT_QUANTILE)
    floor, band = study["floor only"]["overall"], study[default]["overall"]
    assert floor["cases"] == band["cases"] == 612
    assert band["misses"] < floor["misses"]
    assert {"trtllm × agg", "vllm × agg", "sglang × disagg"} <= set(
        study[default]["per_engine_mode"])
    cv = study["cross-validated q"]  # the quantile chosen on the other fold of groups
    assert cv["overall"]["cases"] == 612 and len(cv["quantile_per_fold"]) == cv["folds"]
    # the monotone chance keeps fewer configurations than the band's edge alone: fewer misses
    for q in (0.8, 0.9):
        assert (study[planner_name(q)]["overall"]["misses"]
                <= study[previous_planner_name(q)]["overall"]["misses"])


def test_a_chance_never_rises_with_concurrency_within_a_layout():
    chance = np.array([0.9, 0.95, 0.5, 0.7, np.nan, 1.0, 0.2])
    layout = np.array(["a", "a", "a", "a", "a", "b", "b"])
    concurrency = np.array([1, 2, 4, 8, 16, 8, 4])
    out = monotone_chance(chance, layout, concurrency)
    np.testing.assert_array_equal(out, [0.9, 0.9, 0.5, 0.5, np.nan, 0.2, 0.2])
    evidence = np.array([False, True, True, True, True, True, True])  # 0.9 read from a bucket
    out = monotone_chance(chance, layout, concurrency, evidence)
    np.testing.assert_array_equal(out, [0.9, 0.95, 0.5, 0.5, np.nan, 0.2, 0.2])


def test_the_expected_tokens_count_a_missed_target_as_nothing():
    errors = np.log(np.array([0.5, 1.0, 2.0, 4.0]))
    chance, tokens = expected_tokens(errors, 10.0, 100.0, 25.0, 64, 1024, 8)
    assert chance == 0.75
    at = lambda tpot: 64 * 1024 / ((100.0 + 1023 * tpot) / 1e3) / 8  # noqa: E731
    assert tokens == pytest.approx((at(5.0) + at(10.0) + at(20.0)) / 4, rel=1e-12)


def test_the_predict_first_answer_is_the_pick_at_the_defaults():
    """The question's right choice names the layout the page picks at its defaults."""
    from lab.plan.plan_experiment import PlanDeployment

    experiment = PlanDeployment()
    best = experiment.result["best"]
    gpus = best["tp"] * best["attention_dp"]
    chosen = 3 if best["mode"] == "disagg" else {8: 0, 4: 1}.get(gpus, 2)
    assert chosen == experiment.prediction.answer
    assert best["label"] in experiment.explanation()


def test_candidates_may_leave_the_measurements_out(tmp_path):
    path = tmp_path / "mine.csv"
    path.write_text("id,backend,model_path,system,mode,isl,osl,batch_size,tp_size,"
                    "silicon_ttft_ms,silicon_tpot_ms\n"
                    "a,vllm,llama-3.1-70b,h200,agg,1024,1024,16,4,,\n"
                    "b,vllm,llama-3.1-70b,h200,agg,1024,1024,64,4,120,17\n")
    code, out, _ = _cli("plan", "--candidates", str(path), "--json")
    assert code == 0
    ranked = {r["id"]: r for r in json.loads(out)["candidates"]}
    assert set(ranked) == {"a", "b"} and "tpot_measured_ms" not in ranked["a"]
    assert ranked["b"]["tpot_measured_ms"] == 17.0
    no_columns = tmp_path / "bare.csv"
    no_columns.write_text("id,backend,model_path,system,mode,isl,osl,batch_size,tp_size\n"
                          "a,vllm,llama-3.1-70b,h200,agg,1024,1024,16,4\n")
    code, out, _ = _cli("plan", "--candidates", str(no_columns), "--json")
    assert code == 0 and json.loads(out)["candidates"][0]["tokens_per_s_gpu"] > 0


def test_an_uncalibrated_candidate_is_said_so_and_ranked_after_calibrated_ones(tmp_path):
    """A candidate of an engine with no public runs (``foo``) was ranked first on the bare
    floor (2.5× a real engine's speed) and its line never said it was uncalibrated."""
    path = tmp_path / "mine.csv"
    path.write_text("id,backend,model_path,system,mode,isl,osl,precision,batch_size,tp_size\n"
                    "floor,foo,llama-3.1-70b,h200,agg,1024,1024,fp8,64,8\n"
                    "real,vllm,llama-3.1-70b,h200,agg,1024,1024,fp8,64,8\n")
    code, out, _ = _cli("plan", "--candidates", str(path), "--json")
    ranked = json.loads(out)["candidates"]
    assert code == 0 and [r["id"] for r in ranked] == ["real", "floor"]
    assert ranked[1]["calibrated"] is False and ranked[1]["tokens_per_s_gpu"] > \
        ranked[0]["tokens_per_s_gpu"]
    code, out, _ = _cli("plan", "--candidates", str(path))
    lines = out.splitlines()
    assert lines[1].startswith("1. real:") and "uncalibrated" not in lines[1]
    assert lines[2].startswith("2. floor:") and lines[2].endswith(
        "meets (the floor alone, uncalibrated: no public run of its engine, GPU and mode)")
    from apps.ui.views.plan_page import candidates_html  # the page's row says the same

    html = candidates_html(json.loads(_cli("plan", "--candidates", str(path), "--json")[1]))
    assert "meets (the floor alone, uncalibrated: no public run of its engine, GPU and " \
        "mode)</td>" in html


def test_strict_band_errors_never_see_the_held_out_workload(table):
    """Leaving two workloads out, no band error moves when the held-out workload's
    measurements do (not even through the coefficients)."""
    from lab.plan.plan_calibration import Calibration

    held_out = "1024/1024"
    strict = shipped_calibration().excluding_strictly(held_out)
    changed = table.copy(deep=True)
    rows = np.asarray(changed["workload"].values).astype(str) == held_out
    for name in ("tpot_measured_ms", "ttft_measured_ms"):
        changed[name].values[rows] *= 1.7
    again = Calibration(changed).excluding_strictly(held_out)
    np.testing.assert_array_equal(strict.band_rows, again.band_rows)
    assert strict.band_rows.sum() > 100 and not (strict.band_rows & rows).any()
    for metric in ("tpot", "ttft"):
        np.testing.assert_allclose(again.residual[metric][strict.band_rows],
                                   strict.residual[metric][strict.band_rows], rtol=1e-9)


def test_a_disaggregated_configuration_lists_its_decode_pools(table):
    """The planner's disaggregated rows list ⌈c / D⌉ sequences per decode worker, so
    experiment 11 reads their batch as stated (k_step_one), exactly as a measured row that lists
    the same pools is predicted."""
    from lab.plan.plan_space import Layout, decode_share
    from lab.served.served_floors import batch_stated

    for c, d in ((1, 1), (3, 2), (64, 3), (1024, 8)):
        row = config_row("trtllm", "deepseek-v3", "b200", "disagg", Layout(4, 2, 8), "fp8", c,
                         1024, 1024, (1, d))
        assert row["decode_batch"] == decode_share(c, d) == -(-c // d)
        assert batch_stated(c, row["decode_batch"], d)
    v = lambda n: np.asarray(table[n].values)  # noqa: E731
    listed = (v("modelled") & (v("mode").astype(str) == "disagg") & v("batch_stated")
              & np.isfinite(v("tpot_predicted_ms").astype(float))
              & (v("decode_batch") == -(-v("concurrency") // v("decode_workers")))
              & (v("prefill_tp") == v("tp")) & (v("prefill_attention_dp") == v("attention_dp"))
              & (v("prefill_moe_ep") == v("moe_ep")))
    assert listed.sum() > 50
    for i in np.random.default_rng(39).choice(np.flatnonzero(listed), 12, replace=False):
        i = int(i)
        row = config_row(str(v("engine")[i]), str(v("model")[i]), str(v("gpu")[i]), "disagg",
                         Layout(int(v("tp")[i]), int(v("attention_dp")[i]), int(v("moe_ep")[i])),
                         str(v("precision")[i]), int(v("concurrency")[i]), int(v("isl")[i]),
                         int(v("osl")[i]), (int(v("prefill_workers")[i]),
                                            int(v("decode_workers")[i])))
        plan = predict([row], shipped_calibration(str(v("workload")[i])), DEFAULT_QUANTILE)
        assert plan["batch_floor"].values[0] == v("batch_floor")[i]
        for metric in ("tpot", "ttft"):
            np.testing.assert_allclose(plan[f"{metric}_ms"].values[0],
                                       v(f"{metric}_predicted_ms")[i], rtol=RTOL)


@pytest.mark.parametrize("kwargs", [{}, {"model": "deepseek-v3", "gpu": "b200", "budget": 16,
                                         "engine": "trtllm"}])
def test_the_link_to_experiment_11_opens_the_same_configuration(kwargs):
    """The card's link, parsed as the served page parses a URL, selects a row of experiment
    11 that is the card's configuration (when it was measured; else the group's rows)."""
    from urllib.parse import parse_qsl

    from lab.served.served_experiment import FromFloorToServed

    best = calc_plan(**kwargs)["best"]
    query = dict(parse_qsl(best["served_link"].split("?", 1)[1]))
    assert query.pop("view") == "served"
    served = FromFloorToServed()
    served.table_built(served.table())
    served.param.update(**query)
    selected = served.result["selected"]
    for name in ("model", "gpu", "engine", "mode", "isl", "osl"):
        assert str(selected[name]) == str(best[name] if name not in ("model", "gpu")
                                          else query[name]), name
    if best["served_row"]:
        assert selected["id"] == best["served_row"]
        for name in ("precision", "tp", "attention_dp", "moe_ep", "concurrency",
                     "prefill_workers", "decode_workers"):
            assert selected[name] == best[name], name
    assert kwargs or best["served_row"]  # the default pick was measured: it is opened


def test_workload_distances_by_hand():
    from lab.plan.plan_decide import (
        NO_OTHER_WORKLOAD,
        distance_bucket,
        nearest_octaves,
        workload_octaves,
    )

    assert workload_octaves("1024/1024", "8192/1024") == 3.0  # 8× the prompt
    assert workload_octaves("1024/1024", "1024/8192") == 3.0
    assert workload_octaves("2048/128", "1024/1024") == 4.0  # 1 + 3
    assert workload_octaves("4096/512", "8192/1024") == 2.0  # 1 + 1
    assert nearest_octaves("4096/512", ["1024/1024", "8192/1024", "4096/512"]) == 2.0
    assert nearest_octaves("1024/1024", ["1024/1024"]) == np.inf  # itself is not another
    assert [distance_bucket(d) for d in (0.0, 1.0, 1.5, 3.0, 4.0, np.inf)] == [
        "within 1 octave", "within 1 octave", "1 to 2 octaves", "2 to 3 octaves",
        "over 3 octaves", NO_OTHER_WORKLOAD]


def test_the_regret_study_by_distance_partitions_its_cases():
    from lab.plan.plan_study import FLOOR_ONLY, study_summary

    study = study_summary()
    for planner in ("default", FLOOR_ONLY):
        r = study[planner]
        by_distance = r["per_distance"]
        assert sum(b["cases"] for b in by_distance.values()) == r["overall"]["cases"] == 612
        misses = sum(b["misses"] * b["cases"] for b in by_distance.values())
        assert misses == pytest.approx(r["overall"]["misses"] * 612)
    # the public groups: most cases have their other workloads 3 octaves away, the groups
    # with many nearby workloads (1024/256, 2048/128, …) the rest
    assert set(study["default"]["per_distance"]) >= {"within 1 octave", "2 to 3 octaves"}


def test_a_plan_says_how_far_the_nearest_measured_workload_is():
    r = calc_plan()  # vllm × h200 × agg measured Llama 3.1 70B at 1024/1024 itself
    assert r["best"]["nearest_workload"] == {"workload": "1024/1024", "octaves": 0.0,
                                             "bucket": "within 1 octave", "same_model": True}
    r = calc_plan(isl=4096, osl=512)
    near = r["best"]["nearest_workload"]
    assert near["workload"] == "8192/1024" and near["octaves"] == 2.0  # 1024/1024 is 3 away
    assert near["bucket"] == "1 to 2 octaves"
    code, out, _ = _cli("plan", "--isl", "4096", "--osl", "512")
    assert code == 0 and "Nearest workload measured for this model on vllm × agg: 8192/1024 " \
        "(2.0 octaves away" in out


def test_the_study_is_computed_once_however_many_threads_ask():
    """Pages built at once on the server's threads wait for one computation of the study
    instead of each starting its own."""
    from concurrent.futures import ThreadPoolExecutor

    from lab.plan.plan_study import study_summary

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: study_summary(), range(4)))
    assert all(r is results[0] for r in results) and study_summary() is results[0]


def test_a_band_wholly_off_the_prediction_is_explained():
    """sglang's pick for Llama 3.1 70B at 50 tokens/s per user had the band 16.97–18.65 ms
    about a prediction of 18.81 ms, and the card did not say why."""
    from lab.plan.plan_calc import band_note

    inside = {"ttft_lower_ms": 90.0, "ttft_ms": 100.0, "ttft_upper_ms": 120.0}
    assert band_note({"tpot_lower_ms": 10.0, "tpot_ms": 11.0, "tpot_upper_ms": 12.0,
                      **inside}) == ""
    above = band_note({"tpot_lower_ms": 7.31, "tpot_ms": 7.29, "tpot_upper_ms": 9.03, **inside})
    assert above.startswith("The TPOT band lies wholly above the prediction") and "slower" in above
    below = band_note({"tpot_lower_ms": 16.97, "tpot_ms": 18.81, "tpot_upper_ms": 18.65,
                       **inside})
    assert "wholly below" in below and "ran faster" in below
    # the default plan's pick: TTFT 99 ms predicted, its band 146-399 ms (unexplained before)
    ttft = band_note({"tpot_lower_ms": 10.86, "tpot_ms": 11.46, "tpot_upper_ms": 19.91,
                      "ttft_lower_ms": 146.4, "ttft_ms": 99.0, "ttft_upper_ms": 399.1})
    assert ttft.startswith("The TTFT band lies wholly above the prediction")
    both = band_note({"tpot_lower_ms": 12.0, "tpot_ms": 11.0, "tpot_upper_ms": 19.0,
                      "ttft_lower_ms": 146.4, "ttft_ms": 99.0, "ttft_upper_ms": 399.1})
    assert both.startswith("The TPOT and TTFT bands lie wholly above the prediction")
    best = calc_plan(engine="sglang")["best"]
    assert best["band_note"] == band_note(best)
    text = _cli_text(["calc", "plan", "--engine", "sglang"])
    assert f"on {best['gpus']} GPU{'' if best['gpus'] == 1 else 's'}. " in text
    assert best["band_note"] in text


def _cli_text(argv: list[str]) -> str:
    from cli.main import main

    out = io.StringIO()
    with redirect_stdout(out):
        assert main(argv) == 0
    return out.getvalue()


def test_a_gpu_file_for_plan_is_refused_without_contradiction(tmp_path, capsys):
    """`plan --gpu g/ok.toml` (a valid GPU file) said "Unknown GPU 'ok'; choose one of … or
    give a path to a TOML file": a plan needs a catalog GPU, whose public runs calibrate it."""
    from cli.main import main

    gpu = tmp_path / "ok.toml"
    gpu.write_text('name = "Mine"\ncapacity_gb = 24\nhbm_bandwidth_tbps = 0.3\n'
                   "bf16_tflops = 121\n", encoding="utf-8")
    assert main(["plan", "--gpu", str(gpu)]) == 2
    err = capsys.readouterr().err
    assert "plan takes a catalog GPU id, not a GPU file" in err and "give a path" not in err
    assert main(["calc", "plan", "--gpu", "nope"]) == 2
    err = capsys.readouterr().err
    assert "Unknown GPU 'nope'; choose one of" in err and "give a path" not in err


def test_with_no_pick_how_sure_is_not_uncalibrated():
    """With no configuration picked, the "How sure" card said "uncalibrated"."""
    from lab.plan.plan_experiment import PlanDeployment

    experiment = PlanDeployment(tpot_ms=0.001)
    assert experiment.result["best"] is None
    card = next(c for c in experiment.cards() if c.label == "How sure")
    assert (card.value, card.caption) == ("n/a", "no configuration is picked")


def test_the_derivation_names_its_terms_and_its_arithmetic_holds():
    """"K_queue_chunk (k_queue_chunk)" and "Fixed time per moe layer" (str.capitalize), and
    tokens/s per GPU written as ms over ms (followed literally it gave 0.69, not 692.6)."""
    steps = {s["label"]: s for s in calc_plan()["best"]["steps"]}
    assert "Decode steps the queued prompts' chunks ride (k_queue_chunk)" in steps
    assert "Fixed time per MoE layer × MoE layers (t_moe_layer_ms)" in steps
    assert not any(name.startswith("K_") for name in steps)
    per_gpu = steps["Tokens/s per GPU"]["expression"]
    assert "/ 1,000 ms/s) /" in per_gpu and steps["Tokens/s per user"]["expression"].startswith(
        "1,000 ms/s / ")
    # The engine as its project writes it, as the page's dropdown does (it read "vllm, agg").
    assert steps["Configuration"]["result"].startswith("vLLM, agg, ")


def test_with_no_target_the_card_says_so():
    """With every target 0 (none) the card said "a chance of 100 %, read from 0 out-of-sample
    errors"."""
    best = calc_plan(ttft_ms=None, tpot_ms=None, tokens_per_s_user=None)["best"]
    assert best["sure"]["sentence"] == ("With no target, every configuration meets; the pick is "
                                        "the one with the most tokens/s per GPU.")


def test_the_per_user_card_names_the_band_edge_not_an_upper_value():
    """Budget 3 read "TPOT 17.39 ms (upper 17.31)": an "upper" below the prediction."""
    from lab.plan.plan_experiment import PlanDeployment

    card = next(c for c in PlanDeployment(budget=3).cards() if c.label == "Per user")
    assert "at the band's edge" in card.caption and "upper" not in card.caption


def test_a_chance_of_100_percent_says_what_its_errors_allow():
    """"How sure 100 %" read from 30 errors claimed a certainty the errors cannot give: with n
    of n meeting, the chance is at least 0.05^(1/n) at 95 % confidence."""
    from lab.plan.plan_calc import every_error_meets

    assert "at least 92 % (95 % confidence)" in every_error_meets(36)
    assert "at least 90 %" in every_error_meets(30)
    r = calc_plan(engine="sglang", gpu="h200", ttft_ms=20000.0, tokens_per_s_user=5.0)
    sure = r["best"]["sure"]
    assert sure["share"] == 1.0 and every_error_meets(sure["rows"]) in sure["sentence"]
