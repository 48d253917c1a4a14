"""Experiment 11's own rows from ``vllm bench serve --save-result`` JSON (docs/model.md §11,
lab/served/vllm_bench.py): a run as vLLM writes it read into the row a CSV would give, by hand;
several runs per file (a list, JSON lines); the refit, and the sentence when it cannot be done;
the CLI; every bad file one sentence."""

from __future__ import annotations

import json

import numpy as np
import pytest

from cli.main import main
from lab.errors import LabInputError
from lab.limits import MAX_MEASUREMENT_BYTES
from lab.served.refit_note import unfitted_sentence
from lab.served.served_calc import served_table
from lab.served.served_loader import parse_served
from lab.served.vllm_bench import RunSetup

SETUP = RunSetup(gpu="h100-sxm", tp=1)


def vllm_result(**changes) -> dict:
    """One run as ``vllm bench serve --save-result`` writes it (no ``--save-detailed``): the
    setup fields, then the benchmark's metrics (vllm/benchmarks/serve.py; docs/sources.md).
    320 prompts of the random dataset with --random-range-ratio 0.1 (mean prompt 1,024.5
    tokens), 256 output tokens each, at most 32 in flight, Llama 3.1 8B."""
    result = {
        "date": "20261201-101500", "endpoint_type": "vllm", "backend": "vllm", "label": None,
        "model_id": "meta-llama/Llama-3.1-8B-Instruct",
        "tokenizer_id": "meta-llama/Llama-3.1-8B-Instruct", "num_prompts": 320,
        "request_rate": "inf", "burstiness": 1.0, "max_concurrency": 32,
        "duration": 41.73, "completed": 320, "failed": 0,
        "total_input_tokens": 327_840, "total_output_tokens": 81_920,
        "request_throughput": 7.668, "request_goodput": None, "output_throughput": 1963.1,
        "total_token_throughput": 9819.5, "max_output_tokens_per_s": 2304.0,
        "max_concurrent_requests": 32, "rtfx": 0.0,
        "mean_ttft_ms": 183.25, "median_ttft_ms": 171.4, "std_ttft_ms": 40.2,
        "p99_ttft_ms": 301.7, "mean_tpot_ms": 12.5, "median_tpot_ms": 12.41,
        "std_tpot_ms": 0.62, "p99_tpot_ms": 14.03, "mean_itl_ms": 12.48,
        "median_itl_ms": 11.9, "std_itl_ms": 3.1, "p99_itl_ms": 25.6,
    }
    result.update(changes)
    return result


def _one(ds, name: str):
    value = ds[name].values[0]
    return value.item() if hasattr(value, "item") else value


def test_a_run_becomes_the_row_a_csv_would_give_by_hand():
    data = json.dumps(vllm_result(gpu="h100-sxm", tp="2", version="0.11.0")).encode()
    ds = parse_served(data, "vllm-infqps-concurrency32-Llama-3.1-8B-Instruct.json")
    assert ds.sizes["row"] == 1
    assert _one(ds, "id") == "vllm-infqps-concurrency32-Llama-3.1-8B-Instruct"
    assert (_one(ds, "engine"), _one(ds, "engine_version")) == ("vllm", "0.11.0")
    assert (_one(ds, "model_path"), _one(ds, "system")) == ("meta-llama/Llama-3.1-8B-Instruct",
                                                            "h100-sxm")
    assert _one(ds, "mode") == "agg" and _one(ds, "precision_listed") == ""
    assert _one(ds, "isl") == 1025      # 327,840 / 320 = 1,024.5, rounded half up
    assert _one(ds, "osl") == 256       # 81,920 / 320
    assert _one(ds, "concurrency") == 32 and _one(ds, "decode_batch") == 32   # max_concurrency
    assert _one(ds, "tp") == 2 and _one(ds, "prefill_tp") == 2
    assert _one(ds, "ttft_measured_ms") == 183.25 and _one(ds, "tpot_measured_ms") == 12.5
    assert ds.attrs["source"].startswith("your measurements (vllm-infqps")


def test_its_floors_are_those_of_the_same_csv_row():
    run = parse_served(json.dumps(vllm_result()).encode(), "run.json", SETUP)
    csv = (b"id,backend,model_path,system,mode,isl,osl,batch_size,tp_size,silicon_ttft_ms,"
           b"silicon_tpot_ms\n"
           b"run,vllm,meta-llama/Llama-3.1-8B-Instruct,h100-sxm,agg,1025,256,32,1,183.25,12.5\n")
    a, b = served_table(run), served_table(parse_served(csv, "run.csv"))
    assert bool(a["modelled"].values[0]) and _one(a, "precision") == "bf16"
    for name in ("tpot_floor_ms", "ttft_floor_ms", "tpot_term_allreduce_ms",
                 "prefill_step_basis_ms", "batch_floor", "concurrency", "isl", "osl"):
        assert _one(a, name) == _one(b, name), name


def test_concurrency_is_max_concurrency_at_most_num_prompts():
    def concurrency(**changes) -> int:
        ds = parse_served(json.dumps(vllm_result(**changes)).encode(), "c.json", SETUP)
        return _one(ds, "concurrency")

    assert concurrency(max_concurrency=None) == 320    # every prompt sent at once
    assert concurrency(max_concurrency=1000) == 320
    assert concurrency(max_concurrency=8) == 8


def test_several_runs_a_list_or_json_lines_refitted_on_their_own():
    runs = [vllm_result(), vllm_result(total_input_tokens=655_360, mean_ttft_ms=350.0,
                                       mean_tpot_ms=14.0)]
    lines = "\n".join(json.dumps(r) for r in runs).encode()     # --append-result
    for data in (lines, json.dumps(runs).encode()):
        ds = parse_served(data, "sweep.json", SETUP)
        assert list(ds["id"].values) == ["sweep#1", "sweep#2"]
        assert list(ds["isl"].values) == [1025, 2048]
        table = served_table(ds)
        assert np.isfinite(table["tpot_predicted_ms"].values).all()   # each fitted on the other
        assert np.isfinite(table["ttft_predicted_ms"].values).all()


def test_one_workload_cannot_be_refitted_and_shows_floors_only():
    table = served_table(parse_served(json.dumps(vllm_result()).encode(), "one.json", SETUP))
    assert np.isfinite(table["tpot_floor_ms"].values).all()
    assert np.isnan(table["tpot_predicted_ms"].values).all()
    assert unfitted_sentence(1, 0).startswith("Your one modelled row cannot be refitted: ")
    assert unfitted_sentence(3, 0).startswith("None of your 3 modelled rows can be refitted")
    assert unfitted_sentence(5, 3).startswith("2 of your 5 modelled rows cannot be refitted")
    assert unfitted_sentence(4, 4) == "" and unfitted_sentence(0, 0) == ""


def test_rows_below_their_floor_are_named_as_why_they_cannot_be_refitted(tmp_path, capsys):
    """Three workloads of rows measured below their floor (tp 1 by default) were told "each
    needs runs of at least two workloads"; the reason is that no fit uses such a row."""
    path = tmp_path / "mine.csv"
    path.write_text("id,backend,model_path,system,mode,isl,osl,batch_size,silicon_ttft_ms,"
                    "silicon_tpot_ms\n" + "".join(
                        f"r{i},vllm,llama-3.1-70b,h200,agg,{isl},1024,16,200,15\n"
                        for i, isl in enumerate((1024, 4096, 8192))))
    assert main(["calc", "served", "--measurements", str(path), "--json"]) == 0
    note = json.loads(capsys.readouterr().out)["note"]
    assert note.startswith("None of your 3 modelled rows can be refitted: every one is measured "
                           "below its TPOT floor") and "workloads" not in note
    assert unfitted_sentence(5, 3, 1).endswith("workloads (1 row measured below its TPOT "
                                               "floor, which no fit uses); those rows show "
                                               "their floors only.")


def test_the_cli_reads_runs_with_the_setup_flags(tmp_path, capsys):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(vllm_result()))
    b.write_text(json.dumps(vllm_result(total_input_tokens=655_360, mean_ttft_ms=350.0)))
    assert main(["calc", "served", "--measurements", str(a), str(b), "--gpu", "h100-sxm",
                 "--tp", "1", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["counts"] == {"rows": 2, "distinct_runs": 2, "modelled": 2, "predicted": 2,
                                "not_modelled": {}, "never_fitted_on": 0}
    assert record["selected"]["id"] == "a" and "note" not in record
    assert record["source"] == f"your measurements ({a}, {b})"
    assert main(["calc", "served", "--measurements", str(a), "--gpu", "h100-sxm", "--tp", "1",
                 "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["note"].startswith("Your one modelled row cannot be refitted")
    assert main(["calc", "served", "--measurements", str(a), "--gpu", "h100-sxm",
                 "--tp", "1"]) == 0
    out = capsys.readouterr().out
    assert "--gpu h100-sxm; --tp 1" in out and "show their floors only" in out


def test_runs_in_a_folder_each_are_named_by_their_folder(tmp_path, capsys):
    """One folder per run, each holding run.json, was refused: "the id 'run' appears more than
    once"."""
    paths = []
    for folder, ttft in (("c32", 183.25), ("c64", 350.0)):
        (tmp_path / folder).mkdir()
        path = tmp_path / folder / "run.json"
        path.write_text(json.dumps(vllm_result(mean_ttft_ms=ttft)))
        paths.append(str(path))
    assert main(["calc", "served", "--measurements", *paths, "--gpu", "h100-sxm", "--tp", "1",
                 "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["counts"]["rows"] == 2 and record["selected"]["id"] == "c32/run"
    assert main(["calc", "served", "--measurements", paths[0], paths[0], "--gpu", "h100-sxm",
                 "--tp", "1"]) == 2  # the same file twice is still one run twice
    assert "the id 'c32/run' appears more than once" in capsys.readouterr().err


@pytest.mark.parametrize("args, sentence", [
    ([], "the run does not say its GPU and tensor-parallel degree (tp), which vllm bench serve "
         "does not save; give --gpu and --tp"),
    (["--gpu", "h100", "--tp", "1"], "The GPU: 'h100' is not a GPU the lab catalogs"),
    (["--gpu", "h100-sxm", "--tp", "0"], "The tp: 0 is not a tensor-parallel degree"),
])
def test_the_cli_says_what_is_missing_in_one_sentence(tmp_path, capsys, args, sentence):
    path = tmp_path / "run.json"
    path.write_text(json.dumps(vllm_result()))
    assert main(["calc", "served", "--measurements", str(path), *args, "--json"]) == 2
    err = capsys.readouterr().err
    assert sentence in err and err.count("\n") == 1 and "Traceback" not in err


def test_the_setup_flags_need_json_runs(tmp_path, capsys):
    assert main(["calc", "served", "--gpu", "h100-sxm"]) == 2
    assert "give the files too" in capsys.readouterr().err
    path = tmp_path / "rows.csv"
    path.write_text("id,backend,model_path,system,mode,isl,osl,silicon_ttft_ms,silicon_tpot_ms\n"
                    "a,vllm,llama-3.1-8b,h100-sxm,agg,1024,1024,50,8\n")
    assert main(["calc", "served", "--measurements", str(path), "--tp", "2"]) == 2
    assert "is a CSV, which names the GPU, tp, precision and model" in capsys.readouterr().err


def _refused(data, setup=SETUP) -> str:
    with pytest.raises(LabInputError) as info:
        parse_served(data if isinstance(data, bytes) else json.dumps(data).encode(), "r.json",
                     setup)
    return str(info.value)


@pytest.mark.parametrize("change, sentence", [
    ({"mean_tpot_ms": None}, "r.json: the field mean_tpot_ms is missing (vllm bench serve "
                             "writes it when tpot is among --percentile-metrics"),
    ({"mean_ttft_ms": 0.0}, "mean_ttft_ms is 0, which vLLM writes when it measured no such time"),
    ({"mean_ttft_ms": "183"}, "mean_ttft_ms '183' is not a number"),
    ({"mean_tpot_ms": float("nan")}, "mean_tpot_ms nan is not a time above 0"),
    ({"mean_tpot_ms": 1e300}, "mean_tpot_ms 1e+300 is not a time above 0"),
    ({"completed": True}, "completed True is not a whole number from 1"),
    ({"completed": 0}, "completed 0 is not a whole number from 1"),
    ({"total_input_tokens": 10 ** 40}, "total_input_tokens a 41-digit integer is not a whole"),
    ({"total_output_tokens": 100}, "total_output_tokens over completed is 0.3125 tokens per "
                                   "request, not from 1"),
    ({"request_rate": 4.0}, "paced requests at request_rate 4.0 per second, so its concurrency "
                            "was not held fixed"),
    ({"ramp_up_strategy": "linear"}, "ramped its request rate up (--ramp-up-strategy)"),
    ({"max_concurrency": -4}, "max_concurrency -4 is not a whole number from 1"),
    ({"model_id": "/models/llama"}, "model_id '/models/llama' is not a checkpoint the lab "
                                    "catalogs; give --model"),
    ({"gpu": "h200"}, "its metadata says gpu 'h200' but 'h100-sxm' was given for it"),
    ({"tp": "two"}, "metadata tp: 'two' is not a tensor-parallel degree"),
    ({"precision": "int3"}, "metadata precision: 'int3' is not a precision the lab reads"),
    ({"backend": ["vllm"]}, "backend ['vllm'] is not text"),
    ({"model": "llama-3.1-70b"}, "its model_id 'meta-llama/Llama-3.1-8B-Instruct' is not the "
                                 "model 'llama-3.1-70b' given for it"),
    ({"model_id": None}, "model_id None is not a checkpoint the lab catalogs"),
    ({"model_id": "meta-llama/Llama-3.1-70B-Instruct"},
     "model_id 'meta-llama/Llama-3.1-70B-Instruct' is not a checkpoint the lab catalogs; if it "
     "is the catalog's Llama 3.1 70B, give --model llama-3.1-70b (on the page: beside the "
     "upload) or save --metadata model=llama-3.1-70b."),
])
def test_a_bad_run_is_one_sentence(change, sentence):
    assert sentence in _refused(vllm_result(**change))


def test_a_bad_file_is_one_sentence():
    assert "r.json is not valid JSON (Expecting value at line 1, column 15)" in _refused(
        b'{"completed": }')
    assert "r.json, line 2 is not valid JSON" in _refused(
        (json.dumps(vllm_result()) + "\n{oops}\n").encode())
    assert "holds a number too long to read" in _refused(
        b'{"completed": ' + b"9" * 5000 + b"}")
    assert "nests arrays or objects too deeply" in _refused(b"[" * 100_000 + b"]" * 100_000)
    assert "holds 'int' where a vllm bench serve result (a JSON object) belongs" in _refused(
        b"[1]")
    assert "r.json is not a vllm bench serve result: it has none of completed" in _refused({})
    assert "holds no vllm bench serve result" in _refused(b"[]")
    assert "more than 100,000 runs" in _refused(b"[" + b"{}," * 100_000 + b"{}]")
    assert "is not a text file (it holds NUL bytes)" in _refused(b'{"a": 1}\x00')
    assert f"larger than the {MAX_MEASUREMENT_BYTES:,} bytes" in _refused(
        b"[" + b" " * MAX_MEASUREMENT_BYTES + b"]")
    two = [vllm_result(), vllm_result()]
    assert "r.json, run 2: the field completed is missing" in _refused(
        [two[0], {**two[1], "completed": None}])


def test_a_local_model_path_with_its_catalog_model_given():
    data = json.dumps(vllm_result(model_id="/models/llama-8b")).encode()
    ds = parse_served(data, "r.json", RunSetup(gpu="h100-sxm", tp=1, model="llama-3.1-8b"))
    assert _one(ds, "model_path") == "llama-3.1-8b"
    fp8 = json.dumps(vllm_result(model_id="nvidia/Llama-3.1-8B-Instruct-FP8")).encode()
    same = RunSetup(gpu="h100-sxm", tp=1, model="llama-3.1-8b")  # agrees with the model_id
    table = served_table(parse_served(fp8, "r.json", same))
    assert _one(table, "model_path") == "nvidia/Llama-3.1-8B-Instruct-FP8"
    assert _one(table, "precision") == "fp8"     # the checkpoint's own, as its name says


def test_text_in_a_run_stays_text():
    """HTML in a run's strings is kept as text (the page escapes every string it shows)."""
    ds = parse_served(json.dumps(vllm_result(engine="<b>x</b>")).encode(), "r.json", SETUP)
    assert _one(ds, "engine") == "<b>x</b>"


def test_an_empty_file_with_run_flags_says_it_is_empty(tmp_path, capsys):
    """An empty file given --gpu/--tp is neither JSON nor CSV: it says it has no rows, not that
    it is a CSV naming its own GPU."""
    empty = tmp_path / "empty.json"
    empty.write_bytes(b"")
    assert main(["calc", "served", "--measurements", str(empty), "--gpu", "h100-sxm",
                 "--tp", "1"]) == 2
    err = capsys.readouterr().err
    assert "has no data rows" in err and "is a CSV" not in err


def test_runs_in_same_named_folders_are_told_apart_by_more_of_their_path():
    """x/a/run.json and y/a/run.json were both named a/run and refused again."""
    from lab.served.served_loader import _folder_ids

    ids = [r["id"] for r in _folder_ids([("x/a/run.json", True, [{"id": "run"}]),
                                         ("y/a/run.json", True, [{"id": "run"}]),
                                         ("own.csv", False, [{"id": "q"}])])]
    assert ids == ["x/a/run", "y/a/run", "q"]
