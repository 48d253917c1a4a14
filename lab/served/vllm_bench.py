"""Results of ``vllm bench serve --save-result`` read as served rows (docs/model.md §11).

vLLM's benchmark client writes one JSON object per run (``vllm/benchmarks/serve.py``, the
``result_json`` it saves; file and commit in docs/sources.md); ``--append-result`` adds further
runs to the same file, one JSON object per line. Each run becomes one row of
:mod:`lab.served.served_loader` with the CSV's columns, then goes through the loader's row checks:

============================  ===========================================================
row (the CSV's column)        from the result
============================  ===========================================================
``id``                        the file's name without folder and ``.json`` (``#k`` for its
                              k-th run)
``backend`` (the engine)      ``--metadata engine=…`` if saved, else ``backend`` (the
                              client's request format, ``openai`` by default)
``model_path``                ``model_id`` when the lab knows the checkpoint, else
                              ``--metadata model=…`` or the reader's model (a catalog id;
                              given for a known ``model_id``, it must be the same model)
``system`` (the GPU)          ``--metadata gpu=…`` or the reader's GPU (not in the file)
``tp_size``                   ``--metadata tp=…`` or the reader's tp (not in the file)
``precision``                 ``--metadata precision=…`` or the reader's precision (empty:
                              the checkpoint's own, as for a CSV row)
``mode``                      ``agg`` (one server prefills and decodes)
``isl``, ``osl``              ``total_input_tokens`` and ``total_output_tokens`` over
                              ``completed``, rounded to the nearest token (the run's mean
                              prompt and output lengths; the per-request ``input_lens`` and
                              ``output_lens`` are saved only with ``--save-detailed``)
``batch_size`` (concurrency)  ``max_concurrency``, at most ``num_prompts``; with no
                              ``max_concurrency`` every one of ``num_prompts`` requests is
                              sent at once, so ``num_prompts``
``silicon_ttft_ms``           ``mean_ttft_ms``
``silicon_tpot_ms``           ``mean_tpot_ms`` (vLLM's mean of ``(latency − ttft) /
                              (output tokens − 1)``, the CSV's TPOT)
``backend_version``           ``--metadata version=…`` if saved
============================  ===========================================================

A run is refused, in one sentence naming the file, the run and the field, when a field it
needs is missing or is not a number in range, when it paced requests (a finite
``request_rate``, or a ramp-up), since its concurrency was then not held fixed, when the GPU
or tp is stated nowhere, or when its model is not one the lab catalogs. Nothing in the file
is opened as a path: the GPU and the model must be catalog ids or checkpoints the loader
knows. No Panel here.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from lab.catalog.loader import gpu_catalog
from lab.catalog.lookup import model_catalog
from lab.errors import LabInputError, shown
from lab.limits import MAX_CONTEXT, MAX_MS
from lab.served.served_floors import GPU_OF_SYSTEM, MODEL_OF_PATH, catalog_model_like
from lab.served.served_limits import MAX_CONCURRENCY, MAX_PARALLEL, MAX_SERVED_ROWS

SOURCE = ("vllm-project/vllm, vllm/benchmarks/serve.py, commit "
          "009e6d4a1cd6ba3fb2a9fc00f4ec06f5297232a1, Apache License 2.0")
"""Where the fields read here are defined (docs/sources.md)."""
PRECISIONS = ("bf16", "fp16", "fp8", "fp8_block", "nvfp4", "mxfp4", "fp4", "int4")
"""Precisions a reader may name (as a CSV row may list them; docs/model.md §11)."""
MAX_TP = MAX_PARALLEL
"""Largest tensor-parallel degree accepted (the loader's largest parallelism)."""
MAX_RUNS = MAX_SERVED_ROWS
"""Most runs one file may hold (the loader's most rows)."""
MAX_REQUESTS = 10 ** 9
"""Most requests one run may count (``num_prompts``, ``completed``, ``max_concurrency``)."""
MAX_TOKENS_TOTAL = MAX_REQUESTS * MAX_CONTEXT
"""Largest token total accepted (every request at the longest context)."""
MISSING = {
    "completed": "vllm bench serve writes it for every run",
    "num_prompts": "vllm bench serve writes it for every run",
    "request_rate": "vllm bench serve writes it for every run",
    "model_id": "vllm bench serve writes it for every run",
    "total_input_tokens": "vllm bench serve writes it for every run",
    "total_output_tokens": "vllm bench serve writes it for every text-generation run",
    "mean_ttft_ms": "vllm bench serve writes it when ttft is among --percentile-metrics (the "
                    "default) and its tokenizer is loaded",
    "mean_tpot_ms": "vllm bench serve writes it when tpot is among --percentile-metrics (the "
                    "default) and its tokenizer is loaded",
}
"""Fields a run needs, with when vLLM writes them (said when one is missing)."""


def sources_section() -> str:
    """Markdown for docs/sources.md: the vLLM source of the fields read, and what each is."""
    return "\n".join([
        "## vllm bench serve results (experiment 11)", "",
        f"The fields of a `vllm bench serve --save-result` JSON that `lab/served/vllm_bench.py` "
        f"reads are those vLLM writes: {SOURCE} — <https://github.com/vllm-project/vllm/blob/"
        "009e6d4a1cd6ba3fb2a9fc00f4ec06f5297232a1/vllm/benchmarks/serve.py>. `main_async` "
        "saves `date`, `backend`, `model_id`, `num_prompts`, `request_rate` (`\"inf\"` when "
        "unpaced), `max_concurrency` and each `--metadata KEY=VALUE` as a top-level string, "
        "then the benchmark's `completed`, `total_input_tokens` (prompt tokens of the "
        "completed requests), `total_output_tokens`, `mean_ttft_ms` and `mean_tpot_ms` "
        "(`calculate_metrics`: the mean over completed requests of more than one output token "
        "of `(latency − ttft) / (output tokens − 1)`; 0 when none was measured); "
        "`input_lens`, `output_lens`, `ttfts` and `itls` only with `--save-detailed`; "
        "`--append-result` adds one JSON object per line. Nothing of vLLM is shipped; the lab "
        "reads these fields of the user's own file "
        "([model.md §11](model.md#11-from-floor-to-served-experiment-11)).", ""])


@dataclass(frozen=True)
class RunSetup:
    """What the result file does not say, stated by the reader for every run in it.

    ``gpu``: a catalog GPU id (or a system name the shipped CSV uses); ``tp``: tensor-parallel
    GPUs; ``precision``: weight precision (:data:`PRECISIONS`; empty: the checkpoint's own);
    ``model``: a catalog model id, for a ``model_id`` the lab does not know (a local path).
    Empty or None: not stated."""

    gpu: str = ""
    tp: int | None = None
    precision: str = ""
    model: str = ""

    def stated(self) -> bool:
        """Whether anything is stated."""
        return bool(self.gpu or self.tp is not None or self.precision or self.model)


def looks_like_json(text: str) -> bool:
    """Whether ``text`` (a decoded upload) is JSON rather than a CSV: it opens with ``{`` or
    ``[`` (a CSV opens with its header)."""
    return text.lstrip()[:1] in ("{", "[")


def _gpu(value, where: str) -> str:
    text = value.strip().lower() if isinstance(value, str) else None
    catalog = gpu_catalog()
    if text in GPU_OF_SYSTEM:
        return GPU_OF_SYSTEM[text]
    if text in catalog:
        return text
    raise LabInputError(f"{where}: {shown(value)} is not a GPU the lab catalogs; name one of "
                        f"{', '.join(catalog)}.")


def _model(value, where: str) -> str:
    text = value.strip() if isinstance(value, str) else None
    if text in MODEL_OF_PATH:
        return text
    catalog = model_catalog()
    if text in catalog:
        return text
    raise LabInputError(f"{where}: {shown(value)} is not a model the lab catalogs; name one of "
                        f"{', '.join(catalog)}.")


def _tp(value, where: str) -> int:
    if isinstance(value, str) and value.strip().isdigit() and len(value.strip()) < 8:
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_TP:
        raise LabInputError(f"{where}: {shown(value)} is not a tensor-parallel degree, a whole "
                            f"number from 1 to {MAX_TP:,}.")
    return value


def _precision(value, where: str) -> str:
    text = value.strip().lower() if isinstance(value, str) else None
    if text == "":
        return ""
    if text not in PRECISIONS:
        raise LabInputError(f"{where}: {shown(value)} is not a precision the lab reads; name one "
                            f"of {', '.join(PRECISIONS)}.")
    return text


CHECKS = {"gpu": _gpu, "tp": _tp, "precision": _precision, "model": _model}
"""Each stated field's check: the value as the row takes it, or one sentence."""


def check_setup(setup: RunSetup) -> RunSetup:
    """``setup`` with each stated field checked and normalised (one sentence naming the
    input when one is not usable)."""
    return RunSetup(
        gpu=_gpu(setup.gpu, "The GPU") if setup.gpu else "",
        tp=_tp(setup.tp, "The tp") if setup.tp is not None else None,
        precision=_precision(setup.precision, "The precision") if setup.precision else "",
        model=_model(setup.model, "The model") if setup.model else "")


def _documents(text: str, name: str) -> list:
    """The JSON values in ``text``: one document, or one per line (``--append-result``)."""
    def load(part: str, where: str):
        try:
            return json.loads(part)
        except json.JSONDecodeError as exc:
            raise LabInputError(f"{where} is not valid JSON ({exc.msg} at line {exc.lineno}, "
                                f"column {exc.colno}).") from None
        except RecursionError:
            raise LabInputError(f"{where} nests arrays or objects too deeply to be "
                                "read.") from None
        except ValueError:  # an integer of more digits than Python converts
            raise LabInputError(f"{where} holds a number too long to read.") from None

    try:
        return [json.loads(text)]
    except json.JSONDecodeError as exc:
        if exc.msg != "Extra data":
            return [load(text, f"Serving file {name}")]
    except (RecursionError, ValueError):
        return [load(text, f"Serving file {name}")]
    lines = text.splitlines()
    return [load(line, f"Serving file {name}, line {number}")
            for number, line in enumerate(lines, start=1) if line.strip()]


def _results(text: str, name: str) -> list[dict]:
    documents = _documents(text, name)
    results = []
    for document in documents:
        items = document if isinstance(document, list) else [document]
        for item in items:
            if not isinstance(item, dict):
                raise LabInputError(f"Serving file {name} holds {shown(type(item).__name__)} "
                                    "where a vllm bench serve result (a JSON object) belongs.")
            results.append(item)
            if len(results) > MAX_RUNS:
                raise LabInputError(f"Serving file {name} has more than {MAX_RUNS:,} runs, the "
                                    "most the lab reads.")
    if not results:
        raise LabInputError(f"Serving file {name} holds no vllm bench serve result.")
    return results


def _field(result: dict, key: str, where: str):
    if key not in result or result[key] is None:
        raise LabInputError(f"{where}: the field {key} is missing ({MISSING[key]}).")
    return result[key]


def _whole(result: dict, key: str, where: str, low: int, high: int) -> int:
    value = _field(result, key, where)
    if isinstance(value, float) and math.isfinite(value) and value == int(value):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise LabInputError(f"{where}: {key} {shown(value)} is not a whole number from {low:,} "
                            f"to {high:,}.")
    return value


def _time_ms(result: dict, key: str, where: str) -> float:
    value = _field(result, key, where)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise LabInputError(f"{where}: {key} {shown(value)} is not a number.")
    if value == 0:
        raise LabInputError(f"{where}: {key} is 0, which vLLM writes when it measured no such "
                            "time (a server that did not stream tokens, or outputs of one "
                            "token).")
    if not math.isfinite(value) or not 0 < value <= MAX_MS:
        raise LabInputError(f"{where}: {key} {shown(value)} is not a time above 0 and at most "
                            f"{MAX_MS:,.0f} ms.")
    return float(value)


def _mean_tokens(total: int, completed: int, key: str, where: str) -> int:
    """``total / completed`` rounded half up to a whole token, from 1 to ``MAX_CONTEXT``."""
    mean = (2 * total + completed) // (2 * completed)
    if not 1 <= mean <= MAX_CONTEXT:
        raise LabInputError(f"{where}: {key} over completed is {shown(total / completed)} "
                            f"tokens per request, not from 1 to {MAX_CONTEXT:,}.")
    return mean


def _concurrency(result: dict, where: str) -> int:
    if result.get("ramp_up_strategy") is not None:
        raise LabInputError(f"{where}: the run ramped its request rate up "
                            "(--ramp-up-strategy), so its concurrency was not held fixed; the "
                            "lab's rows keep a fixed number of requests in flight "
                            "(--request-rate inf with --max-concurrency).")
    rate = _field(result, "request_rate", where)
    if not (rate == "inf" or (isinstance(rate, float) and rate == math.inf)):
        raise LabInputError(f"{where}: the run paced requests at request_rate {shown(rate)} per "
                            "second, so its concurrency was not held fixed; the lab's rows keep "
                            "a fixed number of requests in flight (--request-rate inf with "
                            "--max-concurrency).")
    prompts = _whole(result, "num_prompts", where, 1, MAX_REQUESTS)
    if result.get("max_concurrency") is None:
        concurrency = prompts  # every request sent at once
    else:
        concurrency = min(_whole(result, "max_concurrency", where, 1, MAX_REQUESTS), prompts)
    if concurrency > MAX_CONCURRENCY:
        raise LabInputError(f"{where}: a concurrency of {concurrency:,} requests is more than the "
                            f"{MAX_CONCURRENCY:,} the lab reads.")
    return concurrency


def _stated(result: dict, setup: RunSetup, key: str, where: str):
    """The run's ``key`` from its saved ``--metadata`` or the reader's setup (both: they must
    agree); None when neither states it."""
    check = CHECKS[key]
    saved = result.get(key)
    from_file = check(saved, f"{where}, metadata {key}") if saved not in (None, "") else None
    given = getattr(setup, key)
    given = given if given not in ("", None) else None
    if from_file is not None and given is not None and from_file != given:
        raise LabInputError(f"{where}: its metadata says {key} {shown(from_file)} but "
                            f"{shown(given)} was given for it.")
    return from_file if from_file is not None else given


def _text(result: dict, key: str, where: str) -> str:
    value = result.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise LabInputError(f"{where}: {key} {shown(value)} is not text.")
    return value.strip()


def run_row(result: dict, row_id: str, where: str, setup: RunSetup) -> dict:
    """One ``vllm bench serve`` result as the loader's CSV row (every cell a string)."""
    if not any(k in result for k in ("completed", "mean_tpot_ms", "total_input_tokens")):
        raise LabInputError(f"{where} is not a vllm bench serve result: it has none of "
                            "completed, mean_tpot_ms, total_input_tokens (save one with "
                            "vllm bench serve --save-result).")
    missing = [k for k in ("gpu", "tp") if _stated(result, setup, k, where) is None]
    if missing:
        names = " and ".join({"gpu": "GPU", "tp": "tensor-parallel degree (tp)"}[k]
                             for k in missing)
        raise LabInputError(f"{where}: the run does not say its {names}, which vllm bench serve "
                            f"does not save; give {' and '.join('--' + k for k in missing)} (on "
                            "the page: beside the upload) or save them with --metadata "
                            f"{' '.join(k + '=…' for k in missing)}.")
    gpu, tp = _stated(result, setup, "gpu", where), _stated(result, setup, "tp", where)
    precision = _stated(result, setup, "precision", where) or ""
    model = _stated(result, setup, "model", where)
    model_id = result.get("model_id")
    known = model_id.strip() if isinstance(model_id, str) else None
    known = known if known in (*MODEL_OF_PATH, *model_catalog()) else None
    if model is None:
        if known is None:
            like = catalog_model_like(model_id) if isinstance(model_id, str) else ""
            if like:
                raise LabInputError(
                    f"{where}: model_id {shown(model_id)} is not a checkpoint the lab "
                    f"catalogs; if it is the catalog's {model_catalog()[like].name}, give "
                    f"--model {like} (on the page: beside the upload) or save --metadata "
                    f"model={like}.")
            raise LabInputError(f"{where}: model_id {shown(model_id)} is not a checkpoint the "
                                "lab catalogs; give --model (on the page: beside the upload) or "
                                "save --metadata model=… with one of "
                                f"{', '.join(model_catalog())}.")
        model = known
    elif known is not None:
        if MODEL_OF_PATH.get(known, known) != MODEL_OF_PATH.get(model, model):
            raise LabInputError(f"{where}: its model_id {shown(known)} is not the model "
                                f"{shown(model)} given for it.")
        model = known  # the checkpoint's name also says its precision (an -FP8 checkpoint)
    engine = _text(result, "engine", where) or _text(result, "backend", where)
    if not engine:
        raise LabInputError(f"{where}: the run names no backend (vllm bench serve writes it "
                            "for every run).")
    completed = _whole(result, "completed", where, 1, MAX_REQUESTS)
    total_in = _whole(result, "total_input_tokens", where, 0, MAX_TOKENS_TOTAL)
    total_out = _whole(result, "total_output_tokens", where, 0, MAX_TOKENS_TOTAL)
    return {
        "id": row_id, "backend": engine, "backend_version": _text(result, "version", where),
        "model_path": model, "system": gpu, "mode": "agg", "precision": precision,
        "isl": str(_mean_tokens(total_in, completed, "total_input_tokens", where)),
        "osl": str(_mean_tokens(total_out, completed, "total_output_tokens", where)),
        "batch_size": str(_concurrency(result, where)), "tp_size": str(tp),
        "silicon_ttft_ms": repr(_time_ms(result, "mean_ttft_ms", where)),
        "silicon_tpot_ms": repr(_time_ms(result, "mean_tpot_ms", where)),
        "silicon_data_source": f"vllm bench serve {_text(result, 'date', where)}".strip(),
    }


def run_rows(text: str, name: str, setup: RunSetup | None = None) -> list[tuple[str, dict]]:
    """Every run in a results file's text as ``(where, CSV row)`` (``name`` only quoted in
    messages and the rows' ids)."""
    setup = check_setup(setup or RunSetup())
    results = _results(text, name)
    base = name.replace("\\", "/").rsplit("/", 1)[-1] or name
    lower = base.lower()
    stem = base[:-6] if lower.endswith(".jsonl") else base[:-5] if lower.endswith(".json") else base
    out = []
    for number, result in enumerate(results, start=1):
        several = len(results) > 1
        where = f"Serving file {name}" + (f", run {number}" if several else "")
        row_id = f"{stem}#{number}" if several else stem
        out.append((where, run_row(result, row_id, where, setup)))
    return out
