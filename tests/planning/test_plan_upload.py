"""Experiment 12 plans a model from the bytes of an uploaded ``config.json``: read as the CLI
reads the same file from disk, planned exactly as ``calc plan --model config.json`` plans it,
each bad file one sentence, the page's upload shows names as text and a catalog model chosen
afterwards replaces the upload in one calculation."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from lab.catalog import get_model
from lab.catalog.lookup import UPLOADED_PREFIX, model_from_config_bytes, uploaded_model_id
from lab.errors import CatalogError
from lab.limits import MAX_SPEC_BYTES
from lab.plan.plan_calc import calc_plan
from lab.plan.plan_experiment import PlanDeployment
from tests.planning.test_plan import _cli

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "hf_configs"
LLAMA = {"architectures": ["LlamaForCausalLM"], "_name_or_path": "acme/Llama-Tiny-2B",
         "hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 32,
         "num_key_value_heads": 8, "intermediate_size": 8192, "vocab_size": 128256,
         "max_position_embeddings": 131072}
"""A small Llama-shaped model (2 B parameters) no catalog entry has."""


def _same_shape(a, b) -> None:
    """Every field of two specs but their id and name is equal."""
    fields = {f.name for f in dataclasses.fields(a)} - {"id", "name"}
    assert {f: getattr(a, f) for f in fields} == {f: getattr(b, f) for f in fields}


@pytest.mark.parametrize("folder", ["deepseek-v3", "mixtral-8x7b-v0.1", "gemma-3-27b-it"])
def test_uploaded_bytes_read_as_the_same_file_on_disk(folder):
    path = CONFIGS / folder / "config.json"
    uploaded = model_from_config_bytes(path.read_bytes(), "config.json")
    _same_shape(uploaded, get_model(str(path)))
    assert uploaded.id.startswith(UPLOADED_PREFIX)


@pytest.mark.parametrize(("entry", "file_name", "model_id"), [
    ({"_name_or_path": "meta-llama/Llama-3.1-70B-Instruct"}, "config.json",
     "uploaded-Llama-3.1-70B-Instruct"),
    ({}, "my model.json", "uploaded-my-model"),
    ({}, "config.json", "uploaded-model"),
    ({"_name_or_path": "<script>alert(1)</script>"}, "config.json", "uploaded-script"),
    ({"_name_or_path": 7}, "../../etc/passwd", "uploaded-passwd"),
    ({"_name_or_path": "x" * 500}, "config.json", "uploaded-" + "x" * 64),
])
def test_an_uploaded_models_id_is_plain_and_never_a_catalog_id(entry, file_name, model_id):
    assert uploaded_model_id(entry, file_name) == model_id


@pytest.mark.parametrize(("data", "sentence"), [
    (b"{oops", "bad.json is not valid JSON (Expecting property name enclosed in double quotes "
               "at line 1)."),
    (b"\xff\xfe{}", "bad.json is not UTF-8 text (byte 1 is not)."),
    (b"[1, 2]", "bad.json does not hold a JSON object of configuration fields."),
    (b"[" * 100_000, "bad.json nests arrays or objects too deeply to be read."),
    (json.dumps({**LLAMA, "hidden_size": 0}).encode(),
     "'hidden_size' = 0, which is not a positive integer"),
    (b" " * (MAX_SPEC_BYTES + 1), f"bad.json is larger than {MAX_SPEC_BYTES:,} bytes."),
])
def test_a_bad_upload_is_one_sentence(data, sentence):
    with pytest.raises(CatalogError) as info:
        model_from_config_bytes(data, "bad.json")
    message = str(info.value)
    assert sentence in message
    assert "\n" not in message and "Traceback" not in message


def test_an_uploaded_model_is_planned_as_the_same_file_on_the_command_line(tmp_path):
    path = tmp_path / "llama-tiny" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(LLAMA))
    from_disk = calc_plan(str(path))
    uploaded = calc_plan(model_from_config_bytes(path.read_bytes(), "config.json"))
    assert uploaded["inputs"]["model"] == "uploaded-Llama-Tiny-2B"
    assert uploaded["inputs"]["model_name"] == "acme/Llama-Tiny-2B"
    assert uploaded["counts"] == from_disk["counts"]
    for key in ("label", "mode", "gpus", "tokens_per_s_gpu", "tpot_ms", "tpot_upper_ms",
                "ttft_ms", "ttft_upper_ms"):
        assert uploaded["best"][key] == from_disk["best"][key], key
    def without_ids(frontier: dict) -> dict:  # a configuration's id and key name its model's
        return {mode: [{k: v for k, v in point.items() if k not in ("id", "config_key")}
                       for point in points]
                for mode, points in frontier.items()}

    assert json.dumps(without_ids(uploaded["frontier"])) == json.dumps(
        without_ids(from_disk["frontier"]))  # as text: NaN (a term a mode lacks) equals itself
    assert uploaded["measured"] == []  # no public row measured it
    assert "model=all" in uploaded["best"]["served_link"]
    # and its card says so (it said "the measured rows of this model")
    assert uploaded["best"]["served_link_text"].startswith(
        "The measured rows of every model on this GPU, engine, mode and workload")
    assert "among the measured rows of this model, GPU, engine, mode and workload" in \
        calc_plan()["best"]["served_link_text"]


def test_a_catalog_model_chosen_after_an_upload_replaces_it_in_one_calculation():
    plan = PlanDeployment()
    computed = []
    compute = plan.compute
    plan.compute = lambda: (computed.append(plan.model_config), compute())[1]
    spec = model_from_config_bytes(json.dumps(LLAMA).encode(), "tiny.json")
    plan.model_config = spec
    assert computed == [spec]
    assert plan.result["inputs"]["model"] == spec.id
    assert plan.explanation().startswith("For acme/Llama-Tiny-2B (your config.json), the pick")
    plan.model = "llama-3.1-8b"
    assert computed == [spec, None]
    assert plan.model_config is None
    assert plan.result["inputs"]["model"] == "llama-3.1-8b"


def test_the_pages_upload_shows_names_as_text_and_a_bad_file_keeps_the_plan():
    from apps.ui.views.plan_page import PlanPage

    page = PlanPage()
    hostile = {**LLAMA, "_name_or_path": "<img src=x onerror=alert(1)>"}
    page.model_upload._load(json.dumps(hostile).encode(), "<i>tiny.json")
    status = page.model_upload._status.object
    assert "&lt;img src=x onerror=alert(1)&gt;" in status and "<img" not in status
    assert "&lt;i&gt;tiny.json" in status
    before = page.experiment.result
    page.model_upload._load(b"{oops", "broken.json")
    assert "broken.json is not valid JSON" in page.model_upload._status.object
    assert page.experiment.result is before  # the plan in force is kept, and the status says so
    assert ("Model: <em>&lt;img src=x onerror=alert(1)&gt;</em> (from &lt;i&gt;tiny.json)"
            in page.model_upload._status.object)
    choice = page.experiment.prediction.choices[0]
    page.prediction.committed, page.prediction.revealed = choice, True
    answer = page.prediction._answer_text(True, choice, None)
    assert "<img" not in answer  # the question is the catalog model's: worked at the defaults
    assert "yours differ (" in answer
    page.model_upload._use_shipped(None)
    assert page.experiment.model_config is None
    assert "the catalog model chosen above" in page.model_upload._status.object


def test_the_pages_upload_holds_at_most_one_mib_and_says_so():
    from apps.ui.parts.upload_limits import MAX_CONFIG_UPLOAD_BYTES
    from apps.ui.views.plan_page import PlanPage

    page = PlanPage()
    assert page.model_upload._file.max_file_size == MAX_CONFIG_UPLOAD_BYTES == 2**20
    page.model_upload._load(b" " * (MAX_CONFIG_UPLOAD_BYTES + 1), "big.json")
    assert "big.json is 1.0 MiB; a config.json of up to 1 MiB is accepted." in (
        page.model_upload._status.object)
    assert page.experiment.model_config is None


CANDIDATES = ("id,backend,model_path,system,mode,isl,osl,batch_size,tp_size,precision\n"
              "a,vllm,acme/Llama-Tiny-2B,h200,agg,1024,1024,64,1,fp8\n"
              "b,vllm,uploaded-Llama-Tiny-2B,h200,agg,1024,1024,512,2,fp8\n"
              "c,vllm,llama-3.1-70b,h200,agg,1024,1024,64,8,fp8\n"
              "d,vllm,other/unknown,h200,agg,1024,1024,64,8,fp8\n")
"""Two rows of the small model (by its ``_name_or_path`` and by its uploaded id), one of the
catalog and one of neither."""


def test_candidates_of_your_own_model_are_ranked_as_its_plan_predicts_them(tmp_path):
    from lab.plan.plan_calc import rank_candidates
    from lab.plan.plan_calibration import DEFAULT_QUANTILE, shipped_calibration
    from lab.plan.plan_candidates import parse_candidates
    from lab.plan.plan_decide import Targets
    from lab.plan.plan_space import Layout, config_row, predict

    spec = model_from_config_bytes(json.dumps(LLAMA).encode(), "config.json")
    table = parse_candidates(CANDIDATES.encode(), "mine.csv")
    ranked = {r["id"]: r for r in rank_candidates(table, Targets(tokens_per_s_user=50.0),
                                                  model=spec)["candidates"]}
    assert not ranked["a"].get("reason") and not ranked["b"].get("reason")
    assert not ranked["c"].get("reason")  # a catalog row is read as before
    assert ranked["d"]["reason"] == ("The model other/unknown is not in the lab's catalog nor "
                                     "the config.json's (acme/Llama-Tiny-2B).")
    row = config_row("vllm", spec.id, "h200", "agg", Layout(1), "fp8", 64, 1024, 1024)
    planned = predict([row], shipped_calibration(), DEFAULT_QUANTILE, model=spec)
    assert float(planned["tpot_ms"].values[0]) == ranked["a"]["tpot_ms"]  # as a plan cell
    assert float(planned["ttft_ms"].values[0]) == ranked["a"]["ttft_ms"]
    without = {r["id"]: r for r in rank_candidates(table, Targets(tokens_per_s_user=50.0))[
        "candidates"]}
    assert without["a"]["reason"] == "The model acme/Llama-Tiny-2B is not in the lab's catalog."
    instruct = parse_candidates(CANDIDATES.replace("other/unknown",
                                                   "meta-llama/Llama-3.1-70B-Instruct").encode(),
                                "mine.csv")
    named = {r["id"]: r for r in rank_candidates(instruct, Targets(tokens_per_s_user=50.0),
                                                 model=spec)["candidates"]}
    assert named["d"]["reason"] == (
        "The model meta-llama/Llama-3.1-70B-Instruct is not in the lab's catalog nor the "
        "config.json's (acme/Llama-Tiny-2B); if it is the catalog's Llama 3.1 70B, write "
        "llama-3.1-70b.")
    path = tmp_path / "mine.csv"
    path.write_text(CANDIDATES)
    config = tmp_path / "tiny" / "config.json"
    config.parent.mkdir()
    config.write_text(json.dumps(LLAMA))
    code, out, err = _cli("calc", "plan", "--candidates", str(path), "--model", str(config),
                          "--json")
    assert code == 0, err
    cli = {r["id"]: r for r in json.loads(out)["candidates"]}
    assert cli["a"]["tpot_ms"] == ranked["a"]["tpot_ms"]


HUGE = {**LLAMA, "_name_or_path": "Huge", "hidden_size": 65536, "num_hidden_layers": 400,
        "num_attention_heads": 512, "intermediate_size": 262144}
"""A model too large for any layout of 8 H200 (about 6 T parameters)."""


def test_an_upload_that_cannot_be_planned_keeps_the_plan_in_force_and_says_why():
    from apps.ui.views.plan_page import PlanPage

    page = PlanPage()
    page.model_upload._load(json.dumps(LLAMA).encode(), "tiny.json")
    tiny = page.experiment.result
    page.model_upload._load(json.dumps(HUGE).encode(), "huge.json")
    status = page.model_upload._status.object
    assert 'role="alert"' in status and "The weights of Huge at fp8 do not fit" in status
    assert page.experiment.model_config.name == "acme/Llama-Tiny-2B"  # the upload in force
    assert page.experiment.error is None
    assert page.experiment.result["best"] == tiny["best"]


@pytest.mark.parametrize(("named", "name"), [
    ("acme/Tiny  see\n\nhttps://evil.example.com\n===\n- click", "acme/Tiny see "
     "https://evil.example.com === - click"),
    ("x" * 500, "x" * 79 + "…"),
    (7, "7"),
])
def test_a_models_name_is_one_line_and_short_from_a_file_and_an_upload_alike(tmp_path, named,
                                                                            name):
    config = {**LLAMA, "_name_or_path": named}
    path = tmp_path / "m" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(config))
    assert get_model(str(path)).name == name
    assert model_from_config_bytes(path.read_bytes(), "config.json").name == name


def test_the_same_file_again_after_a_catalog_model_is_an_upload_again():
    from apps.ui.views.plan_page import PlanPage

    page = PlanPage()
    upload = page.model_upload
    upload._file.value = json.dumps(LLAMA).encode()  # as the browser's finished upload sets it
    assert page.experiment.model_config is not None
    page.experiment.model = "llama-3.1-8b"
    assert page.experiment.model_config is None and upload._file.value is None
    upload._file.value = json.dumps(LLAMA).encode()  # the same bytes: a change again
    assert page.experiment.model_config.name == "acme/Llama-Tiny-2B"


def test_an_upload_with_no_name_is_named_by_its_shape():
    """A config.json with no ``_name_or_path`` (none of the shipped ones has one) showed as
    "uploaded-model": its name now says which model it is; its id stays plain."""
    from lab.catalog.lookup import unnamed_model_name

    data = (Path(__file__).parents[1] / "data/hf_configs/deepseek-v3/config.json").read_bytes()
    spec = model_from_config_bytes(data, "config.json")
    assert spec.id == "uploaded-model"
    assert spec.name == "DeepseekV3ForCausalLM, 61 layers, hidden size 7,168"
    assert unnamed_model_name({}) == "A model with no name"
    assert unnamed_model_name([]) == "A model with no name"
    long = unnamed_model_name({"architectures": ["X" * 200], "num_hidden_layers": True})
    assert len(long) == 80 and long.endswith("…")  # capped as any name; a bool is no count
