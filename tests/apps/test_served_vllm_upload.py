"""Experiment 11's page reads ``vllm bench serve`` JSON uploads in-process (no browser): the GPU
and tp chosen beside the upload, the upload read again when they change, the sentence when the
rows cannot be refitted, and every string from the file escaped (docs/model.md §11)."""

from __future__ import annotations

import json

from apps.ui.views.served_page import ServedPage
from tests.core.test_served_vllm_bench import vllm_result


def _upload(page: ServedPage, name: str, data: bytes) -> None:
    page.upload._file.filename = name
    page.upload._file.value = data


def test_a_vllm_json_upload_with_its_gpu_and_tp_chosen_beside_it(document):
    page = ServedPage()
    page.__panel__().get_root(document)
    exp, upload = page.experiment, page.upload
    assert not upload._file.accept  # a file of any type reaches the parser, which explains
    # no GPU or tp chosen yet: one sentence, escaped; the shipped rows stay in force
    _upload(page, "<img src=x onerror=alert(1)>.json",
            json.dumps(vllm_result(backend="<script>x</script>")).encode())
    status = upload._status.object
    assert "does not say its GPU and tensor-parallel degree (tp)" in status
    assert "<img" not in status and "&lt;img" in status
    assert exp.measurements is None and exp.result["rows"] == 5221
    # choosing them reads the same upload again
    upload._gpu.value = "h100-sxm"
    upload._tp.value = 1
    assert exp.error is None and exp.result["rows"] == 1
    assert exp.result["selected"]["engine"] == "<script>x</script>"
    assert "&lt;img" in upload._status.object
    assert "Your one modelled row cannot be refitted" in page.refit.object
    steps = page.calculation._html(exp.result)
    assert "&lt;script&gt;x&lt;/script&gt;" in steps and "<script>" not in steps
    # two workloads (JSON lines, as --append-result writes them): refitted, no sentence
    runs = [vllm_result(), vllm_result(total_input_tokens=655_360, mean_ttft_ms=350.0)]
    _upload(page, "sweep.jsonl", "\n".join(json.dumps(r) for r in runs).encode())
    assert exp.error is None and exp.result["rows"] == 2 and page.refit.object == ""
    assert exp.result["selected"]["tpot_predicted_ms"] is not None
    # a run paced at a request rate: one sentence, the two rows stay
    _upload(page, "paced.json", json.dumps(vllm_result(request_rate=2.0)).encode())
    assert "so its concurrency was not held fixed" in upload._status.object
    assert exp.result["rows"] == 2
    upload._use_shipped(None)
    assert exp.measurements is None and exp.result["rows"] == 5221 and page.refit.object == ""
    upload._precision.value = "fp8"  # nothing uploaded to read again
    assert exp.measurements is None
