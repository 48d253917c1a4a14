"""Experiment 11, from floor to served: the shipped rows, floors and terms recomputed by hand,
the leave-one-workload-out fit, a user's file, the CLI and the dataset (docs/model.md §11)."""

from __future__ import annotations

import csv
import io
import json
from importlib import resources

import numpy as np
import pytest
import xarray as xr

from cli.main import main
from lab.catalog import get_gpu, get_model
from lab.errors import LabInputError
from lab.served import gap
from lab.served.served_calc import calc_served, served_table
from lab.served.served_floors import precision_of
from lab.served.served_loader import parse_served, shipped_rows
from sweeps.datasets import open_dataset


@pytest.fixture(scope="module")
def table():
    return served_table()


def _row(table, row_id: str) -> dict:
    index = int(np.flatnonzero(table["id"].values == row_id)[0])
    return {k: table[k].values[index].item() if hasattr(table[k].values[index], "item")
            else table[k].values[index] for k in table.variables if table[k].dims == ("row",)}


def _shipped_lines() -> list[str]:
    text = resources.files("lab.served").joinpath("data", "silicon_sample.csv").read_text()
    return text.splitlines()


def test_the_shipped_rows_load_with_their_coordinates_and_units():
    ds = shipped_rows()
    assert ds.sizes["row"] == 5221
    assert {"id", "engine", "mode", "isl", "osl", "concurrency", "tp"} <= set(ds.coords)
    assert ds["tpot_measured_ms"].attrs["units"] == "ms"
    assert "aiconfigurator" in ds.attrs["source"]
    notice = resources.files("lab.served").joinpath("data", "NOTICE").read_text()
    assert "Apache License" in notice and "095f58a51c4ca8e61b66ec108d86f223f8d559ce" in notice


def test_every_row_is_modelled_or_has_a_reason(table):
    modelled = table["modelled"].values
    reasons = table["reason"].values.astype(str)
    assert np.all((reasons == "") == modelled)
    assert modelled.sum() == 4692  # 89.9 %: expert parallelism, gpt-oss and Kimi-K2.5 too
    assert np.all(np.isfinite(table["tpot_floor_ms"].values[modelled]))
    assert np.all(np.isnan(table["tpot_floor_ms"].values[~modelled]))  # never guessed
    assert set(reasons[~modelled]) == {
        "hybrid Gated DeltaNet linear attention, which the lab does not model",
        "DeepSeek sparse attention (an indexer picks the keys), which the lab does not model",
        "tp 8 does not divide the 4 KV heads (replicated KV heads are not modelled)",
        "the row does not state its concurrency"}
    nvfp4 = table["precision"].values.astype(str) == "nvfp4"
    assert (modelled & nvfp4).sum() > 500  # NVFP4 weights from lab.models.weight_formats


def test_an_empty_precision_is_the_checkpoints():
    assert precision_of("", "", "", "meta-llama/Llama-3.1-8B-Instruct") == "bf16"
    assert precision_of("", "", "", "nvidia/Llama-3.1-8B-Instruct-FP8") == "fp8"
    assert precision_of("fp8", "fp8_block", "fp8_block", "x") == "fp8"
    assert precision_of("fp4", "nvfp4", "nvfp4", "x") == "nvfp4"
    assert precision_of("int4", "int4_wo", "int4_wo", "x") == "int4"
    # models that ship mixed formats: gpt-oss's MXFP4 experts, Kimi-K2.5's INT4 experts
    assert precision_of("fp4", "nvfp4", "nvfp4", "openai/gpt-oss-120b") == "mxfp4-experts"
    assert precision_of("int4", "int4_wo", "int4_wo", "moonshotai/Kimi-K2.5") == "int4-experts"
    assert precision_of("fp4", "nvfp4", "nvfp4", "moonshotai/Kimi-K2.5") == "nvfp4"


def test_a_dense_rows_floors_and_terms_by_hand(table):
    """Llama 3.1 70B, vLLM on H200, FP8, tp 4, 1024/1024 at concurrency 64."""
    r = _row(table, "2026_04_06_llama_3_1_70b_h200_sxm_vllm_fp8_agg_1024x1024_c64_tp4_ep1_628")
    m, g = get_model("llama-3.1-70b"), get_gpu("h200")
    tp, b, isl, osl = 4, 64, 1024, 1024
    s = isl + osl / 2
    n_lin = m.layers * (m.hidden * m.heads * m.head_dim + 2 * m.hidden * m.kv_heads * m.head_dim
                        + m.heads * m.head_dim * m.hidden + 3 * m.hidden * m.intermediate) \
        + m.hidden * m.vocab
    linear = max(n_lin * 1 / tp / g.hbm_bw, 2 * n_lin * b / tp / g.peak_fp8)
    kv = b * s * 2 * m.layers * m.kv_heads * m.head_dim * 2 / tp
    attention = max(kv / g.hbm_bw, 4 * b * s * m.layers * m.heads * m.head_dim / tp / g.peak_bf16)
    assert r["tpot_floor_ms"] == pytest.approx((linear + attention) * 1e3, rel=1e-9)
    pairs = isl * (isl + 1) // 2
    ttft = (max(n_lin / tp / g.hbm_bw, 2 * n_lin * isl / tp / g.peak_fp8)
            + 4 * m.layers * m.heads * m.head_dim * pairs / tp / g.peak_bf16)
    assert r["ttft_floor_ms"] == pytest.approx(ttft * 1e3, rel=1e-9)
    link = g.interconnect_bw / 2
    allreduce = 2 * m.layers * (2 * (tp - 1) / tp * b * m.hidden * 2 / link + 5e-6)
    assert r["tpot_term_allreduce_ms"] == pytest.approx(allreduce * 1e3, rel=1e-9)
    # B/osl = 64/1024 prompts admitted per decode step, each a prefill pass of its own:
    # 1/16 of one request's ideal prefill (its weights read and its FLOPs) per step
    prompts = b / osl
    basis = prompts * ttft
    assert r["prefill_step_basis_ms"] == pytest.approx(basis * 1e3, rel=1e-9)
    assert r["batch_stated"]  # agg: the batch is the concurrency
    assert r["group"] == "vllm × h200 × agg"
    # the terms are the coefficients times their bases, and they add up
    assert r["tpot_term_prefill_ms"] == pytest.approx(r["tpot_k_prefill"] * basis * 1e3)
    # the step beyond its floor, in steps of one sequence (attention DP 1): the weights read
    # once and one sequence's KV cache at S tokens, 2 bytes a value
    one = n_lin / tp / g.hbm_bw + max(s * 2 * m.layers * m.kv_heads * m.head_dim * 2 / tp
                                      / g.hbm_bw,
                                      4 * s * m.layers * m.heads * m.head_dim / tp / g.peak_bf16)
    assert r["step_one_ms"] == pytest.approx(one * 1e3, rel=1e-9)
    assert r["tpot_term_step_ms"] == pytest.approx(r["tpot_k_step_one"] * one * 1e3)
    assert r["tpot_term_fixed_ms"] == 0 and np.isnan(r["tpot_t_layer_ms"])  # agg: no t_layer
    assert r["tpot_predicted_ms"] == pytest.approx(
        r["tpot_floor_ms"] + r["tpot_term_allreduce_ms"] + r["tpot_term_prefill_ms"]
        + r["tpot_term_step_ms"] + r["tpot_term_moe_ms"] + r["tpot_term_collective_ms"])
    # a dense model: no MoE layer; the collectives cost (1 + k_comm) times their ideal
    assert r["moe_layers"] == 0 and r["tpot_term_moe_ms"] == 0
    assert r["tpot_term_collective_ms"] == pytest.approx(r["tpot_k_comm"] * allreduce * 1e3)
    queue = (64 - 1) / 2 * r["ttft_floor_ms"]
    assert r["ttft_term_queue_ms"] == pytest.approx(r["ttft_k_queue"] * queue)
    # one 2,048-token chunk holds the 1,024-token prompt: one decode step (floor + comm)
    assert r["chunk_basis_ms"] == pytest.approx(r["tpot_floor_ms"] + r["tpot_term_allreduce_ms"])
    assert r["ttft_term_chunk_ms"] == pytest.approx(r["ttft_k_chunk"] * r["chunk_basis_ms"])
    # the 63/2 prompts ahead are chunked too: each rides its own decode step
    assert r["ttft_term_queue_chunk_ms"] == pytest.approx(
        r["ttft_k_queue_chunk"] * (64 - 1) / 2 * r["chunk_basis_ms"])
    assert r["ttft_predicted_ms"] == pytest.approx(
        r["ttft_floor_ms"] + r["ttft_term_queue_ms"] + r["ttft_term_fixed_ms"]
        + r["ttft_term_chunk_ms"] + r["ttft_term_queue_chunk_ms"])
    assert r["tpot_term_residual_ms"] == pytest.approx(r["tpot_measured_ms"]
                                                       - r["tpot_predicted_ms"])


def test_the_coefficients_never_see_the_rows_own_workload(table):
    """Refit by hand on the group's other workloads: the stored coefficients are those."""
    rid = "2026_04_06_llama_3_1_70b_h200_sxm_vllm_fp8_agg_1024x1024_c64_tp4_ep1_628"
    r = _row(table, rid)
    same = ((table["group"].values == r["group"]) & table["modelled"].values
            & (table["workload"].values != r["workload"]))
    same &= table["first_of_run"].values  # each run once: its copies count once
    same &= table["fit_on"].values  # a row measured below its stated floor is not fitted on

    def tpot_fit(sub):
        base = sub["tpot_floor_ms"].values + sub["tpot_term_allreduce_ms"].values  # agg rows
        columns = np.column_stack([sub["prefill_step_basis_ms"].values, sub["step_one_ms"].values,
                                   sub["moe_layers"].values, sub["tpot_term_allreduce_ms"].values])
        return gap.fit(base, columns, sub["tpot_measured_ms"].values)

    theta = tpot_fit(table.isel(row=np.flatnonzero(same)))
    assert (r["tpot_k_prefill"], r["tpot_k_step_one"], r["tpot_t_moe_layer_ms"],
            r["tpot_k_comm"]) == pytest.approx(tuple(theta))
    assert r["tpot_fitted_on"] == int(same.sum())
    # fitting with the row's workload included would give other coefficients
    everything = ((table["group"].values == r["group"]) & table["modelled"].values
                  & table["first_of_run"].values & table["fit_on"].values)
    assert tpot_fit(table.isel(row=np.flatnonzero(everything)))[0] != pytest.approx(theta[0])


def test_a_disaggregated_rows_step_term_and_its_group_by_hand(table):
    """TensorRT-LLM, DeepSeek-R1 FP8 on B200, disaggregated, 8192/1024 at concurrency 128: its
    4 decode workers of batch 32 hold every client (4 · 32 = 128), so the floor's batch is the
    row's own; no prefill interleaves, the decode step's excess over its floor is fitted in
    steps of one sequence per attention rank (k_step_one)."""
    from lab.served.served_floors import batch_stated

    r = _row(table, "dsr1_b200_trtllm_fp8_disagg_8192x1024_c128_cfg553")
    assert (r["concurrency"], r["decode_batch"], r["decode_workers"]) == (128, 32, 4)
    assert r["batch_stated"] and r["batch_floor"] == 32 and r["group"] == "trtllm × b200 × disagg"
    assert r["prefill_step_basis_ms"] == 0 and r["tpot_term_prefill_ms"] == 0
    assert np.isnan(r["tpot_k_prefill"])
    # TPOT = floor + k_step_one · step_one + communication + t_layer · L, k_step_one ≥ 0 (a
    # disaggregated group's third coefficient is k_slots, for the rows whose batch is
    # inferred; 0 on this one)
    assert r["tpot_k_step_one"] >= 0 and 0 < r["step_one_ms"] < r["tpot_floor_ms"]
    assert r["tpot_term_step_ms"] == pytest.approx(r["tpot_k_step_one"] * r["step_one_ms"])
    assert r["tpot_predicted_ms"] == pytest.approx(
        r["tpot_floor_ms"] + r["tpot_k_step_one"] * r["step_one_ms"]
        + r["tpot_term_allreduce_ms"] + r["tpot_t_layer_ms"] * 61)  # V3: 61 layers
    assert r["slots_basis_ms"] == 0 and r["tpot_term_slots_ms"] == 0
    assert np.isnan(r["tpot_t_moe_layer_ms"]) and np.isnan(r["tpot_k_slots"])
    # its coefficients: the group's other workloads, each run once, fitted by hand
    same = ((table["group"].values == r["group"]) & table["modelled"].values
            & (table["workload"].values != r["workload"]) & table["first_of_run"].values
            & table["fit_on"].values)
    sub = table.isel(row=np.flatnonzero(same))
    stated = sub["batch_stated"].values
    assert not stated.all()  # rows whose batch is inferred share the fit, with their k_inferred
    floor = sub["tpot_floor_ms"].values
    theta = gap.fit(sub["tpot_term_allreduce_ms"].values + np.where(stated, floor, 0),
                    np.column_stack([np.where(stated, sub["step_one_ms"].values, 0),
                                     sub["layers"].values,
                                     sub["slots_basis_ms"].values,
                                     np.where(stated, 0, floor)]),
                    sub["tpot_measured_ms"].values)
    assert (r["tpot_k_step_one"], r["tpot_t_layer_ms"]) == pytest.approx(tuple(theta[:2]))
    # a row whose listed pool (1 worker, batch 1) cannot hold its 4 clients: batch inferred
    # (c over one worker), in the same group, its floor's coefficient k_inferred
    q = _row(table, "2026_03_25_deepseek_r1_b200_sxm_trtllm_fp8_disagg_1024x1024_c4_tp8_0_ep8_0_387")
    assert not q["batch_stated"] and q["batch_floor"] == 4 and q["layout_from"] == ""
    assert q["group"] == "trtllm × b200 × disagg" and "tpot_group" not in table
    assert q["tpot_term_step_ms"] == pytest.approx((q["tpot_k_inferred"] - 1)
                                                   * q["tpot_floor_ms"])
    assert q["tpot_term_slots_ms"] == pytest.approx(q["tpot_k_slots"] * q["slots_basis_ms"])
    assert np.isnan(q["tpot_k_step_one"]) and np.isnan(r["tpot_k_inferred"])
    assert batch_stated(np.array([128, 4, 64]), np.array([32, 1, 64]),
                        np.array([4, 1, 1])).tolist() == [True, False, True]


def test_at_most_four_coefficients_per_metric_engine_gpu_and_mode(table):
    """The issue's rule: rows of one engine × GPU × mode and left-out workload share one set of
    at most four TPOT coefficients and at most four TTFT ones, whether their decode batch is
    stated or inferred."""
    ok = table["modelled"].values & np.isfinite(table["tpot_fitted_on"].values) & (
        table["tpot_fitted_on"].values > 0)
    names = {"tpot": ("k_prefill", "k_step_one", "k_inferred", "t_layer_ms", "t_moe_layer_ms",
                      "k_comm", "k_slots"), "ttft": ("k_queue", "t_first_ms", "k_chunk", "k_queue_chunk")}
    for metric, coefficient_names in names.items():
        keys = np.array([f"{g}|{w}" for g, w in zip(table["group"].values[ok],
                                                    table["workload"].values[ok], strict=True)])
        for key in np.unique(keys):
            rows = np.flatnonzero(ok)[keys == key]
            used = 0
            for name in coefficient_names:
                values = table[f"{metric}_{name}"].values[rows]
                values = {round(float(v), 12) for v in values[np.isfinite(values)]}
                assert len(values) <= 1, (metric, key, name)  # one value per group and fit
                used += len(values)
            assert used <= gap.MAX_COEFFICIENTS, (metric, key)
    mixed = table["batch_stated"].values[ok]
    assert mixed.any() and not mixed.all()


def test_nnls2_keeps_both_coefficients_non_negative():
    x = np.column_stack([np.arange(1.0, 6.0), np.ones(5)])
    assert gap.nnls2(x, 2 * x[:, 0] + 3) == pytest.approx([2, 3])
    theta = gap.nnls2(x, -x[:, 0] + 10)  # the free fit has a negative slope
    assert np.all(theta >= 0) and theta[0] == 0


def test_the_summary_reports_errors_and_targets(table):
    result = calc_served(rows=False)
    errors = result["errors"]
    for metric in ("tpot", "ttft"):
        terms, floor = errors[metric]["floor_plus_terms"], errors[metric]["floor"]
        assert terms["median"] < floor["median"]  # the terms close most of the gap
        assert set(errors[metric]["met"]) == {"median", "p90"}
    assert result["counts"]["modelled"] == 4692
    subsets = errors["subsets"]
    assert [subsets[k]["rows"] for k in subsets] == [3119, 1573, 590, 983]
    assert subsets["agg"]["rows"] + subsets["disagg"]["rows"] == result["counts"]["modelled"]
    # copies of one run count once per run; the stricter split (input length held out) too
    assert result["counts"]["distinct_runs"] == 4065
    assert errors["tpot"]["floor_plus_terms_runs"]["rows"] == subsets["agg"]["runs"] \
        + subsets["disagg"]["runs"] < 4692
    assert errors["ttft"]["isl_held_out"]["rows"] == 4692
    assert sum(result["counts"]["not_modelled"].values()) == 5221 - 4692
    below = result["below_floor"]
    assert below and all("impossible as labelled" in r["below_floor_sentence"] for r in below)


def _user_csv(prefix: str) -> bytes:
    lines = _shipped_lines()
    body = [line for line in lines[1:] if line.startswith(prefix)]
    return ("\n".join([lines[0], *body]) + "\n").encode()


def test_a_users_file_is_refitted_on_its_own_rows(tmp_path):
    data = _user_csv("2026_04_06_llama_3_1_70b_h200_sxm_vllm")
    ds = parse_served(data, "mine.csv")
    assert 10 < ds.sizes["row"] < 200
    result = calc_served(ds, rows=False)
    assert result["counts"]["rows"] == ds.sizes["row"]
    assert result["source"] == "your measurements (mine.csv)"
    path = tmp_path / "mine.csv"
    path.write_bytes(data)
    assert main(["calc", "served", "--measurements", str(path), "--json"]) == 0


MINIMAL_HEADER = ("id,backend,model_path,system,mode,isl,osl,batch_size,tp_size,"
                  "silicon_ttft_ms,silicon_tpot_ms")
"""The columns of a small user's file of measurements (the required ones, batch and tp)."""


def user_table(name: str, *rows: str):
    """Experiment 11's table of a user's file ``name`` holding :data:`MINIMAL_HEADER` and
    ``rows`` (CSV lines)."""
    return served_table(parse_served("\n".join((MINIMAL_HEADER, *rows, "")).encode(), name))


def test_a_minimal_user_file_with_catalog_ids():
    table = user_table("tiny.csv", "a,vllm,llama-3.1-8b,h100-sxm,agg,1024,1024,8,1,50,8",
                       "b,vllm,llama-3.1-8b,h100-sxm,agg,2048,1024,8,1,90,9")
    assert table["modelled"].values.all()
    assert np.isfinite(table["tpot_predicted_ms"].values).all()  # each fitted on the other


def test_a_path_in_a_users_file_is_never_opened(tmp_path, monkeypatch):
    """Rule 4: an uploaded table's model_path and system are catalog names or nothing; a cell
    naming a config.json or a GPU TOML on the server's disk is not read (the row is not
    modelled, with its reason)."""
    from lab.catalog import gpu_catalog, loader, model_catalog

    model_catalog(), gpu_catalog()  # the lab's own catalogs, read before the watch
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"hidden_size": 4096}))
    gpu = tmp_path / "gpu.toml"
    gpu.write_text("[gpu]\n")
    opened = []
    monkeypatch.setattr(loader, "_read_text", lambda path: opened.append(path) or "")
    monkeypatch.setattr(loader, "read_config_json", lambda path: opened.append(path))
    table = user_table("paths.csv", f"a,vllm,{config},h100-sxm,agg,1024,1024,8,1,50,8",
                       f"b,vllm,llama-3.1-8b,{gpu},agg,2048,1024,8,1,90,9",
                       "c,vllm,../../etc/passwd,/etc/hostname,agg,2048,1024,8,1,90,9")
    assert opened == []
    assert not table["modelled"].values.any()
    assert all(str(r) for r in table["reason"].values)


@pytest.mark.parametrize("path, like", [
    ("meta-llama/Llama-3.1-70B-Instruct", "llama-3.1-70b"),
    ("meta-llama/Meta-Llama-3.1-70B-Instruct", "llama-3.1-70b"),  # "Meta-" dropped
    ("Qwen/Qwen2.5-72B-Instruct", "qwen2.5-72b"),
    ("mistralai/Mixtral-8x7B-Instruct-v0.1", "mixtral-8x7b"),  # by the catalog's name
    ("google/gemma-3-27b-it", "gemma-3-27b"),
    ("Qwen/Qwen3-8B-FP8", "qwen3-8b"),
    ("deepseek-ai/DeepSeek-V3-0324", "deepseek-v3"),  # a date dropped
    ("acme/Llama-Tiny-2B", ""),
    ("<b>llama-3.1-8b</b>", ""),
    ("", ""),
])
def test_a_checkpoint_outside_the_catalog_is_matched_by_its_shape_words(path, like):
    from lab.served.served_floors import catalog_model_id, catalog_model_like

    assert catalog_model_like(path) == like
    assert catalog_model_id(path) == ""  # a suggestion only, never a silent reading


def test_a_row_of_an_instruct_checkpoint_names_the_catalog_id_to_write():
    table = user_table("mine.csv",
                       "a,vllm,meta-llama/Llama-3.1-70B-Instruct,h100-sxm,agg,1024,1024,8,8,50,8",
                       "b,vllm,acme/Unknown-7B,h100-sxm,agg,1024,1024,8,8,50,8")
    assert not table["modelled"].values.any()
    assert list(table["reason"].values) == [
        "model meta-llama/Llama-3.1-70B-Instruct is not in the lab's catalog; if it is the "
        "catalog's Llama 3.1 70B, write llama-3.1-70b",
        "model acme/Unknown-7B is not in the lab's catalog"]


@pytest.mark.parametrize("change, sentence", [
    (("mode", "both"), "column mode: 'both' is not agg or disagg"),
    (("isl", "-3"), "column isl: '-3' is not a whole number"),
    (("silicon_tpot_ms", "fast"), "column silicon_tpot_ms: 'fast' is not a number"),
    (("id", "x" * 201), "column id: an id is at most 200 characters of text with no control"),
    (("id", "a\x07b"), "column id: an id is at most 200 characters of text with no control"),
])
def test_a_bad_cell_is_one_sentence(change, sentence):
    header = ["id", "backend", "model_path", "system", "mode", "isl", "osl", "batch_size",
              "silicon_ttft_ms", "silicon_tpot_ms"]
    row = dict(zip(header, ["a", "vllm", "llama-3.1-8b", "h100-sxm", "agg", "1024", "1024", "8",
                            "50", "8"], strict=True))
    row[change[0]] = change[1]
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(header)
    writer.writerow([row[h] for h in header])
    with pytest.raises(LabInputError, match=sentence) as info:
        parse_served(out.getvalue().encode(), "bad.csv")
    assert "bad.csv, row 2" in str(info.value)


def test_a_file_without_the_columns_is_refused():
    with pytest.raises(LabInputError, match="lacks the column"):
        parse_served(b"id,backend\na,vllm\n", "x.csv")


def test_the_cli_prints_the_summary_and_the_json(capsys):
    assert main(["calc", "served"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Inputs: the shipped public rows")
    assert "TPOT |error|" in out and "TTFT predicted" in out
    row = "2026_04_06_llama_3_1_70b_h200_sxm_vllm_fp8_agg_1024x1024_c64_tp4_ep1_628"
    assert main(["calc", "served", "--row", row, "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["selected"]["id"] == row and "rows" not in record
    assert main(["calc", "served", "--row", "nope"]) == 2
    assert "There is no row with id 'nope'." in capsys.readouterr().err


def test_a_file_with_no_modelled_row_says_so_instead_of_empty_figures(tmp_path, capsys):
    """No modelled row: the reasons and one sentence, not "0 rows … median n/a … missed"."""
    path = tmp_path / "none.csv"
    path.write_text("\n".join((MINIMAL_HEADER,
                               "a,vllm,meta-llama/Llama-3.1-70B-Instruct,h100-sxm,agg,1024,1024,8,"
                               "8,50,8", "b,vllm,foo/bar,h100-sxm,agg,2048,1024,8,1,90,9", "")))
    assert main(["calc", "served", "--measurements", str(path)]) == 0
    out = capsys.readouterr().out
    assert "2 rows; 0 modelled exactly" in out
    assert "- 1: model foo/bar is not in the lab's catalog" in out
    assert "No row is modelled, so there is no error to report; the reasons are above." in out
    assert "|error|" not in out and "missed" not in out and "By mode" not in out


def test_one_modelled_row_without_a_fit_is_not_judged_against_the_targets(tmp_path, capsys):
    path = tmp_path / "one.csv"
    path.write_text("\n".join((MINIMAL_HEADER,
                               "a,vllm,llama-3.1-8b,h100-sxm,agg,1024,1024,8,1,50,8", "")))
    assert main(["calc", "served", "--measurements", str(path)]) == 0
    out = capsys.readouterr().out
    assert "1 row; 1 modelled exactly (100.0 %)" in out
    assert "Not modelled:" not in out and "missed" not in out
    assert "(targets 12.0 % and 40.0 %: no row to judge them on)" in out
    assert "- agg: 1 row; " in out


def test_open_dataset_served():
    ds = open_dataset("served")
    assert ds.sizes["row"] == 5221
    for name in ("id", "engine", "gpu", "model", "mode", "isl", "osl", "concurrency", "tp",
                 "precision"):
        assert name in ds.coords, name
    for name in ("modelled", "reason", "tpot_measured_ms", "tpot_floor_ms", "tpot_predicted_ms",
                 "ttft_measured_ms", "ttft_floor_ms", "ttft_predicted_ms",
                 "tpot_term_prefill_ms", "tpot_term_fixed_ms", "tpot_term_allreduce_ms",
                 "tpot_term_step_ms", "batch_stated",
                 "ttft_term_queue_ms", "ttft_term_fixed_ms"):
        assert name in ds.data_vars, name
    assert ds["tpot_floor_ms"].attrs["units"] == "ms"


def test_an_expert_parallel_rows_floor_and_all_to_all_by_hand(table):
    """TensorRT-LLM, DeepSeek-R1 NVFP4 on B200, attention DP 8 × tp 1, experts over ep 8,
    8192/1024 at concurrency 256 (its batch_size 32 is one rank's share)."""
    from lab.models import kv_shapes, moe

    r = _row(table, "2026_03_25_deepseek_r1_b200_sxm_trtllm_fp4_agg_8192x1024_c256_tp8_0_ep8_0_974")
    m, g = get_model("deepseek-v3"), get_gpu("b200")
    assert (r["tp"], r["attention_dp"], r["moe_ep"], r["concurrency"]) == (1, 8, 8, 256)
    b, dp, s = 256, 8, 8192 + 1024 / 2
    # one GPU: every shared weight (tp 1), 1/8 of the experts the whole batch touches
    touched = m.experts * (1 - (1 - m.experts_per_token / m.experts) ** b)
    routed = m.moe_layers * touched * 3 * m.hidden * m.expert_intermediate
    weights = moe.step_weight_bytes(m, 1, "nvfp4", b)  # all of them on one GPU
    per_gpu = weights - routed * 0.5625 + routed / dp * 0.5625
    flops = moe.linear_flops(m, 1, b / dp)  # its own 32 sequences
    linear = max(per_gpu / g.hbm_bw, flops / g.peak_fp4)
    kv = b / dp * s * m.layers * (m.kv_lora_rank + m.qk_rope_head_dim) * 2  # MLA latent, BF16
    att_flops = b / dp * s * kv_shapes.attention_flops_per_pair(m)
    attention = max(kv / g.hbm_bw, att_flops / g.peak_bf16)
    assert r["kv_precision_floor"] == "bf16"
    assert r["tpot_floor_ms"] == pytest.approx((linear + attention) * 1e3, rel=1e-9)
    # the all-to-all: each token's k experts, 7/8 of them remote, there and back, BF16,
    # one GPU's share of 8 over one direction of its NVLink; tp 1 has no all-reduce
    a2a = 2 * m.moe_layers * b * m.experts_per_token * 7 / 8 * m.hidden * 2 / 8
    assert r["tpot_term_allreduce_ms"] == pytest.approx(a2a / (g.interconnect_bw / 2) * 1e3,
                                                        rel=1e-9)


def test_a_gpt_oss_rows_floor_reads_its_sliding_window_layers_by_hand(table):
    """vLLM, gpt-oss-120b as it ships (MXFP4 experts, BF16 rest) on H100, tp 4, 1024/1024 at
    concurrency 64: half its layers read at most 127 cached tokens."""
    from lab.models import moe

    r = _row(table, "2026_03_25_gpt_oss_120b_h100_sxm_vllm_fp4_agg_1024x1024_c64_tp4_0_ep1_0_185")
    m, g = get_model("gpt-oss-120b"), get_gpu("h100-sxm")
    assert r["precision"] == "mxfp4-experts"
    b, tp, s = 64, 4, 1024 + 1024 / 2
    read = 18 * s + 18 * min(s, 128 - 1)  # full layers see S, sliding ones their window
    kv = b * read * m.kv_heads * m.head_dim * 2 * 2 / tp
    att_flops = 4 * b * read * m.heads * m.head_dim / tp
    attention = max(kv / g.hbm_bw, att_flops / g.peak_bf16)
    linear = max(moe.step_weight_bytes(m, tp, "mxfp4-experts", b) / g.hbm_bw,
                 moe.linear_flops(m, tp, b) / g.peak_bf16)  # BF16 arithmetic
    assert r["tpot_floor_ms"] == pytest.approx((linear + attention) * 1e3, rel=1e-9)
    # the prefill counts each layer kind's pairs: 18 causal, 18 within 128 tokens
    pairs = (18 * (1024 * 1025 // 2) + 18 * (128 * 129 // 2 + (1024 - 128) * 128)) / 36
    assert pairs < 1024 * 1025 / 2
    expected = (max(moe.step_weight_bytes(m, tp, "mxfp4-experts", 1024) / g.hbm_bw,
                    moe.linear_flops(m, tp, 1024) / g.peak_bf16)
                + 4 * m.layers * m.heads * m.head_dim * pairs / tp / g.peak_bf16)
    assert r["ttft_floor_ms"] == pytest.approx(expected * 1e3, rel=1e-9)


def test_squared_layouts_are_read_as_the_layout_that_ran():
    """A db-dump row writes tp 8 with ep 8 as tp_size 64, moe_tp 8, moe_ep 8; its plain twin
    has the identical measurements."""
    from lab.served.served_loader import pool_layout

    assert pool_layout(64, 1, 8, 8, "db-dump/2026-04-27; config_id=201") == (8, 1)
    assert pool_layout(1, 64, 8, 8, "source_file=2026-04-06.csv; model=x") == (1, 8)
    assert pool_layout(64, 1, 8, 8, "a user's own file") == (64, 1)  # only those exports
    assert pool_layout(4, 1, 2, 2, "source_file=/data/h100_sxm/trtllm.csv") == (4, 1)
    assert pool_layout(0, 0, 0, 0, "") == (1, 1)
    ds = shipped_rows()
    ids = ds["id"].values.astype(str)
    twin = ds.isel(row=int(np.flatnonzero(ids == "dsr1_b200_sglang_fp4_agg_1024x1024_c64_cfg201")[0]))
    assert (int(twin["tp"]), int(twin["moe_ep"])) == (8, 8)


def test_kimi_k25_ships_int4_experts_in_groups_of_32():
    from lab.models import moe
    from lab.models.moe_params import replicated_linear_params

    m = get_model("kimi-k2.5")
    assert (m.layers, m.heads, m.experts, m.experts_per_token) == (61, 64, 384, 8)
    held = moe.resident_weight_bytes(m, 8, "int4-experts")
    experts = m.moe_layers * m.experts * 3 * m.hidden * m.expert_intermediate
    whole = replicated_linear_params(m)  # MLA down-projections and routers on every GPU
    rest = m.total_params - experts - whole
    # the experts' biases are none: DeepSeek-style experts have no bias
    assert held == pytest.approx((experts * 4.5 / 8 + rest * 2) / 8 + whole * 2, rel=1e-9)


def test_the_rows_modelled_card_says_why_the_others_are_not():
    """The page said "Rows modelled 2 of 4" and nowhere why, unless a row's id was typed in;
    the card names how many rows shown are left out and their reason."""
    from lab.served.served_experiment import FromFloorToServed, left_out_note

    rows = [f"i{k},vllm,meta-llama/Llama-3.1-70B-Instruct,h100-sxm,agg,{1024 * (k + 1)},1024,"
            "8,8,50,8" for k in range(2)] + [
        f"p{k},vllm,llama-3.1-8b,h100-sxm,agg,{1024 * (k + 1)},1024,8,1,50,8" for k in range(2)]
    exp = FromFloorToServed(measurements=parse_served(
        "\n".join((MINIMAL_HEADER, *rows, "")).encode(), "mine.csv"))
    card = next(c for c in exp.cards() if c.label == "Rows modelled")
    assert card.value == "2 of 4"
    assert card.caption == (
        "4 shown with these filters; 2 not modelled, because: model "
        "meta-llama/Llama-3.1-70B-Instruct is not in the lab's catalog; if it is the catalog's "
        "Llama 3.1 70B, write llama-3.1-70b")
    assert left_out_note([]) == ""
    assert left_out_note([{"reason": "a", "rows": 3}, {"reason": "b", "rows": 1},
                          {"reason": "c", "rows": 1}]) == (
        "; 5 not modelled, most often: a (and 2 other reasons; the row's own in Row id)")


def test_filters_that_keep_no_modelled_row_say_so_not_n_a():
    """`?view=served&model=Qwen/Qwen3.5-397B-A17B` (no modelled row: hybrid attention) showed
    "n/a×" and "median over 0 modelled rows shown"."""
    from lab.served.served_experiment import FromFloorToServed

    exp = FromFloorToServed(model="Qwen/Qwen3.5-397B-A17B")
    assert exp.error is None and exp.result["modelled_shown"] == 0
    card = next(c for c in exp.cards() if c.label == "Measured / floor (TPOT)")
    assert (card.value, card.caption) == ("none", "no modelled row is shown with these filters")
    assert "n/a" not in exp.explanation() and exp.explanation().startswith("No modelled row")
    errors = [c for c in exp.cards() if "|error|" in c.label]
    assert len(errors) == 2 and all(c.value == "none" and "n/a" not in c.caption for c in errors)
    shown = next(c for c in FromFloorToServed().cards() if c.label == "Measured / floor (TPOT)")
    assert shown.value.endswith("×") and "modelled rows shown" in shown.caption


def test_the_shipped_table_is_computed_once_and_each_caller_gets_its_own_copy(monkeypatch):
    """Every experiment 11 page and plan computed the shipped rows' table again (about 1 s of
    the server per page load); it is computed once per process, and a caller that changes its
    copy changes nobody else's."""
    from lab.served import served_calc

    first = served_calc.served_table()
    monkeypatch.setattr(served_calc, "_table_of", lambda data: pytest.fail("computed again"))
    second = served_calc.served_table()
    xr.testing.assert_identical(first, second)
    first["tpot_predicted_ms"].values[:] = -1.0
    first.attrs["source"] = "changed"
    assert (served_calc.served_table()["tpot_predicted_ms"].fillna(0).values >= 0).all()
    assert served_calc.served_table().attrs["source"] != "changed"


def test_fp8_rows_on_a_gpu_without_fp8_are_not_modelled():
    """Rows of FP8 weights on an A100 were 'modelled exactly' with no floor (n/a) and a
    prediction of terms on a floor of 0; such a row has no floor, so it is not modelled."""
    text = (b"id,backend,model_path,system,mode,isl,osl,batch_size,tp_size,precision,"
            b"silicon_ttft_ms,silicon_tpot_ms\n"
            b"a,vllm,llama-3.1-8b,a100-sxm-80gb,agg,1024,1024,8,1,fp8,50,8\n"
            b"b,vllm,llama-3.1-8b,a100-sxm-80gb,agg,1024,1024,8,1,bf16,50,8\n")
    table = served_table(parse_served(text, "own.csv"))
    assert table["modelled"].values.tolist() == [False, True]
    assert table["reason"].values[0] == ("FP8 weights on the NVIDIA A100 SXM 80GB, a GPU "
                                         "without an FP8 peak")
    assert np.isnan(table["tpot_predicted_ms"].values[0])


def test_the_reveal_answers_at_the_concurrency_the_question_names():
    """The question asks at concurrency 64; the reveal quoted the median over every concurrency
    (2.61×) as its answer. At 64 it is 2.29× over 589 rows: still "About 3×"."""
    from lab.served.served_experiment import QUESTION_CONCURRENCY, FromFloorToServed

    exp = FromFloorToServed()
    assert f"At concurrency {QUESTION_CONCURRENCY}," in exp.prediction.question
    text = exp.explanation()
    assert text.startswith("At concurrency 64, over the 589 modelled rows shown there, measured "
                           "TPOT is a median 2.29× the ideal decode step (over all 4,692 shown, "
                           "2.61×)")
    assert exp.prediction.choices[exp.prediction.answer] == "About 3×"
