"""Read the catalogs and bring-your-own files, checking every field.

Catalog entries live in ``gpus.toml`` and ``models.toml`` beside this module, each with its
source and the date it was checked. :mod:`lab.catalog.lookup` builds the model catalog from
``models.toml`` (dense entries with :func:`model_from_config`, mixture-of-experts entries with
:mod:`lab.catalog.moe_config`) through :func:`model_entries`, the one reader of ``[[model]]``
entries. A user's own model comes from a Hugging Face
``config.json``; a user's own GPU from a TOML file with the catalog's keys. Anything missing,
malformed, non-positive or unsupported raises :class:`~lab.errors.CatalogError` with one
sentence naming the file and the field.
"""

from __future__ import annotations

import json
import math
import tomllib
import unicodedata
from functools import cache
from pathlib import Path
from typing import Any

from lab.catalog.entries import SUPPORTED_ARCHITECTURES, GPUSpec, ModelSpec
from lab.catalog.moe_spec import MOE_ARCHITECTURES
from lab.catalog.params_count import total_parameters
from lab.errors import CatalogError, shown, shown_number
from lab.limits import GPU_FIELD_LIMITS, MAX_SPEC_BYTES, MAX_TOTAL_PARAMS, MODEL_FIELD_LIMITS
from lab.units import GB, GB_PER_S, TB_PER_S, TFLOPS

CATALOG_DIR = Path(__file__).parent
GPU_FILE = CATALOG_DIR / "gpus.toml"
MODEL_FILE = CATALOG_DIR / "models.toml"


def _positive_number(entry: dict, key: str, where: str, *, integer: bool,
                     high: float | None = None, low: float | None = None, unit: str = "") -> Any:
    """Return ``entry[key]`` checked to be a positive number (an integer when asked) within
    ``[low, high]`` when given (limits from :mod:`lab.limits`)."""
    if key not in entry:
        raise CatalogError(f"{where} is missing the field '{key}'.")
    value = entry[key]
    kind = "a positive integer" if integer else "a positive number"
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise CatalogError(f"{where} has '{key}' = {shown(value)}, which is not {kind}.")
    if isinstance(value, float) and (not math.isfinite(value) or (
            integer and not value.is_integer())):
        raise CatalogError(f"{where} has '{key}' = {shown(value)}, which is not {kind}.")
    if value <= 0:
        raise CatalogError(f"{where} has '{key}' = {shown(value)}, which is not {kind}.")
    if (high is not None and value > high) or (low is not None and value < low):
        units = f" {unit}" if unit else ""
        raise CatalogError(f"{where} has '{key}' = {shown_number(value)}, outside the accepted "
                           f"{_limit(low if low is not None else 1)} to {_limit(high)}{units}.")
    return int(value) if integer else float(value)


def _limit(value: float) -> str:
    """A limit as a message states it: ``1,048,576``, ``10,000,000``, ``0.001``."""
    return f"{int(value):,}" if float(value).is_integer() else f"{value:g}"


def _shape_field(entry: dict, key: str, where: str) -> int:
    """A model shape field: a positive integer up to its limit in :data:`MODEL_FIELD_LIMITS`."""
    return _positive_number(entry, key, where, integer=True, high=MODEL_FIELD_LIMITS[key])


def _gpu_figure(entry: dict, key: str, where: str) -> float:
    """A GPU figure in the file's units, within its range in :data:`GPU_FIELD_LIMITS`."""
    low, high, unit = GPU_FIELD_LIMITS[key]
    return _positive_number(entry, key, where, integer=False, low=low, high=high, unit=unit)


def _optional_positive(entry: dict, key: str, where: str) -> float:
    """Return ``entry[key]`` as a positive float in range, or NaN when the key is absent."""
    if key not in entry or entry[key] is None:
        return math.nan
    return _gpu_figure(entry, key, where)


def _text(entry: dict, key: str, default: str = "") -> str:
    value = entry.get(key, default)
    if value is None:
        return default
    return value if isinstance(value, str) else shown(value, quoted=False)


def model_from_config(entry: dict, where: str, *, model_id: str, name: str) -> ModelSpec:
    """Build a :class:`ModelSpec` from Hugging Face ``config.json`` keys.

    ``where`` names the file (and entry) in error messages.
    """
    if not isinstance(entry, dict):
        raise CatalogError(f"{where} does not hold a JSON object of configuration fields.")
    architecture = entry.get("architecture")
    if architecture is None:
        archs = entry.get("architectures")
        if isinstance(archs, list) and archs:
            architecture = archs[0]
    if architecture is None:
        raise CatalogError(f"{where} is missing the field 'architectures'.")
    if isinstance(architecture, str) and architecture in MOE_ARCHITECTURES:
        raise CatalogError(
            f"{where} has architecture {shown(architecture)}, a mixture-of-experts model that "
            "the dense reader does not build (lab.catalog.get_model reads it with "
            "lab.catalog.moe_config)."
        )
    if not isinstance(architecture, str) or architecture not in SUPPORTED_ARCHITECTURES:
        raise CatalogError(
            f"{where} has architecture {shown(architecture)}, which the lab does not model "
            f"(supported: {', '.join(SUPPORTED_ARCHITECTURES)})."
        )
    for moe_key in ("num_local_experts", "num_experts", "n_routed_experts"):
        if entry.get(moe_key):
            raise CatalogError(
                f"{where} has '{moe_key}' on the dense architecture {architecture}; "
                f"mixture-of-experts models are read for {', '.join(MOE_ARCHITECTURES)} only."
            )
    if entry.get("use_sliding_window") is True or (
        architecture == "MistralForCausalLM" and entry.get("sliding_window")
    ):
        raise CatalogError(
            f"{where} enables sliding-window attention ('sliding_window'), which the decode "
            "model does not describe."
        )
    hidden = _shape_field(entry, "hidden_size", where)
    layers = _shape_field(entry, "num_hidden_layers", where)
    heads = _shape_field(entry, "num_attention_heads", where)
    kv_heads = heads
    if entry.get("num_key_value_heads") is not None:
        kv_heads = _shape_field(entry, "num_key_value_heads", where)
    if entry.get("head_dim") is not None:
        head_dim = _shape_field(entry, "head_dim", where)
    else:
        if hidden % heads:
            raise CatalogError(
                f"{where} is missing the field 'head_dim' and hidden_size {hidden} is not a "
                f"multiple of num_attention_heads {heads}."
            )
        head_dim = hidden // heads
    if heads % kv_heads:
        raise CatalogError(
            f"{where} has num_attention_heads {heads}, which is not a multiple of "
            f"num_key_value_heads {kv_heads}."
        )
    intermediate = _shape_field(entry, "intermediate_size", where)
    vocab = _shape_field(entry, "vocab_size", where)
    max_context = _shape_field(entry, "max_position_embeddings", where)
    tied = entry.get("tie_word_embeddings", False)
    if not isinstance(tied, bool):
        raise CatalogError(f"{where} has 'tie_word_embeddings' = {shown(tied)}, which is not "
                           "true/false.")
    shape = {"hidden": hidden, "layers": layers, "heads": heads, "kv_heads": kv_heads,
             "head_dim": head_dim, "intermediate": intermediate, "vocab": vocab, "tied": tied}
    total = total_parameters(architecture=architecture, **shape,
                             attention_bias=bool(entry.get("attention_bias", False)))
    if total > MAX_TOTAL_PARAMS:
        raise CatalogError(f"{where} describes {total:,} parameters, beyond the "
                           f"{MAX_TOTAL_PARAMS:,} the lab accepts.")
    declared = entry.get("total_params")
    if declared is not None:
        if isinstance(declared, bool) or not isinstance(declared, int | float):
            raise CatalogError(f"{where} has 'total_params' = {shown(declared)}, which is not "
                               "a whole number of parameters.")
        if declared != total:
            raise CatalogError(f"{where} declares 'total_params' = {shown_number(declared)}, "
                               f"but its shape gives {total:,}.")
    return ModelSpec(
        id=model_id,
        name=name,
        **shape,
        total_params=total,
        max_context=max_context,
        architecture=architecture,
        source=_text(entry, "source"),
        checked=_text(entry, "checked"),
        notes=_text(entry, "notes"),
    )


GPU_KEYS = ("id", "name", "vendor", "capacity_gb", "hbm_bandwidth_tbps", "bf16_tflops",
            "fp8_tflops", "fp4_tflops", "interconnect_gbps", "interconnect", "scale_up_gpus",
            "network_gbps", "source", "checked", "notes")
"""Every field a GPU table may hold (the catalog's keys, units in the names)."""


def gpu_from_entry(entry: dict, where: str, *, default_id: str) -> GPUSpec:
    """Build a :class:`GPUSpec` from a TOML table with the catalog's keys (units in key names)."""
    if not isinstance(entry, dict):
        raise CatalogError(f"{where} does not hold a table of GPU fields.")
    unknown = sorted(str(k) for k in entry if k not in GPU_KEYS)
    if unknown:  # a misspelt fp8_tflops would silently make a GPU without FP8
        raise CatalogError(f"{where}: {shown(unknown[0])} is not a GPU field; the fields are "
                           f"{', '.join(GPU_KEYS)}.")
    gpu_id = _text(entry, "id", default_id) or default_id
    return GPUSpec(
        id=gpu_id,
        name=one_line(_text(entry, "name", gpu_id)) or gpu_id,
        vendor=one_line(_text(entry, "vendor")),
        capacity_bytes=_gpu_figure(entry, "capacity_gb", where) * GB,
        hbm_bw=_gpu_figure(entry, "hbm_bandwidth_tbps", where) * TB_PER_S,
        peak_bf16=_gpu_figure(entry, "bf16_tflops", where) * TFLOPS,
        peak_fp8=_optional_positive(entry, "fp8_tflops", where) * TFLOPS,
        interconnect_bw=_optional_positive(entry, "interconnect_gbps", where) * GB_PER_S,
        interconnect=_text(entry, "interconnect"),
        peak_fp4=_optional_positive(entry, "fp4_tflops", where) * TFLOPS,
        scale_up_gpus=_optional_positive(entry, "scale_up_gpus", where),
        network_bw=_optional_positive(entry, "network_gbps", where) * GB_PER_S,
        source=_text(entry, "source"),
        checked=_text(entry, "checked"),
        notes=_text(entry, "notes"),
    )


def is_file(path: Path) -> bool:
    """True when ``path`` names a regular file (False for names the OS cannot even look up)."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def check_spec_size(size: int, where: str) -> None:
    """One sentence for a file (``where``) of more than :data:`MAX_SPEC_BYTES` bytes."""
    if size > MAX_SPEC_BYTES:
        raise CatalogError(f"{where} is larger than {MAX_SPEC_BYTES:,} bytes.")


def decode_text(data: bytes, where: str) -> str:
    """``data`` (the bytes of file ``where``) as UTF-8 text, or one sentence naming the first
    byte that is not."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CatalogError(f"{where} is not UTF-8 text (byte {exc.start + 1:,} is not).") from None


def _read_text(path: Path) -> str:
    """The UTF-8 text of a regular file of at most :data:`MAX_SPEC_BYTES` bytes."""
    try:
        if path.exists() and not is_file(path):
            raise CatalogError(f"{path} is not a regular file.")
        check_spec_size(path.stat().st_size, str(path))
        return decode_text(path.read_bytes(), str(path))
    except CatalogError:  # said above; a CatalogError is a ValueError, caught last below
        raise
    except FileNotFoundError:
        raise CatalogError(f"{path} does not exist.") from None
    except OSError as exc:
        raise CatalogError(f"{path} cannot be read ({exc.strerror}).") from None
    except ValueError:  # a NUL in the name
        raise CatalogError(f"{shown(str(path))} is not a usable file name.") from None


def _read_toml(path: Path) -> dict:
    text = _read_text(path)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError(f"{path} is not valid TOML ({exc}).") from None
    except RecursionError:
        raise CatalogError(f"{path} nests arrays or tables too deeply to be read.") from None
    except ValueError as exc:  # e.g. an integer of more digits than Python converts
        raise CatalogError(f"{path} is not valid TOML ({shown(str(exc), quoted=False)}).") \
            from None


@cache
def gpu_catalog() -> dict[str, GPUSpec]:
    """Every catalog GPU by id, in catalog order."""
    data = _read_toml(GPU_FILE)
    out: dict[str, GPUSpec] = {}
    for index, entry in enumerate(data.get("gpu", [])):
        where = f"{GPU_FILE.name} entry {entry.get('id', index + 1)}"
        spec = gpu_from_entry(entry, where, default_id=str(entry.get("id", "")))
        out[spec.id] = spec
    return out


def model_entries(file: Path, build) -> dict:
    """Every ``[[model]]`` entry of the catalog ``file``, by id in file order, made by
    ``build(entry, where, model_id=…, name=…)`` (dense or mixture-of-experts)."""
    out = {}
    for index, entry in enumerate(_read_toml(file).get("model", [])):
        model_id = str(entry.get("id", index + 1))
        out[model_id] = build(entry, f"{file.name} entry {model_id}", model_id=model_id,
                              name=_text(entry, "name", model_id))
    return out


def looks_like_path(value: str) -> bool:
    return "/" in value or "\\" in value or value.endswith((".json", ".toml"))


def read_config_json(path: str | Path) -> tuple[object, str, str]:
    """A Hugging Face ``config.json`` on disk as ``(parsed JSON, model id, name)``: the id is
    its folder's name (or the file's stem), the name its ``_name_or_path`` or the id."""
    path = Path(path)
    entry = parse_config_json(_read_text(path), str(path))
    stem = path.parent.name if path.name == "config.json" and path.parent.name else path.stem
    model_id = stem or "custom-model"
    return entry, model_id, config_name(entry, model_id)


MAX_MODEL_NAME_CHARS = 80
"""Longest name a model read from a ``config.json`` keeps, characters."""


def one_line(text: str, limit: int = MAX_MODEL_NAME_CHARS) -> str:
    """A name from a reader's file as the lab shows it: control characters dropped (an escape
    sequence from a file reached the terminal), every run of whitespace one space (a newline
    split the pasteable ``Inputs:`` line), cut to ``limit`` characters with ``…``."""
    text = "".join(ch for ch in text if unicodedata.category(ch)[0] != "C" or ch.isspace())
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def config_name(entry: object, fallback: str) -> str:
    """The name of a model read from a ``config.json``: its ``_name_or_path`` as
    :func:`one_line` shows it; ``fallback`` when it has none."""
    name = _text(entry, "_name_or_path") if isinstance(entry, dict) else ""
    return one_line(name) or fallback


def parse_config_json(text: str, where: str) -> object:
    """The JSON of a ``config.json``'s ``text`` (``where`` names it in the one sentence a
    malformed file gets)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CatalogError(f"{where} is not valid JSON ({exc.msg} at line {exc.lineno}).") from None
    except RecursionError:
        raise CatalogError(f"{where} nests arrays or objects too deeply to be read.") from None
    except ValueError:  # an integer of more digits than Python converts
        raise CatalogError(f"{where} holds a number too long to read.") from None


def load_gpu_file(path: str | Path) -> GPUSpec:
    """A GPU from a TOML file: top-level keys, a ``[gpu]`` table or one ``[[gpu]]`` entry."""
    path = Path(path)
    data = _read_toml(path)
    entry = data.get("gpu", data)
    if isinstance(entry, list):
        if len(entry) != 1:
            raise CatalogError(f"{path} holds {len(entry)} [[gpu]] entries; give exactly one.")
        entry = entry[0]
    return gpu_from_entry(entry, str(path), default_id=path.stem)


def get_gpu(gpu: str | GPUSpec) -> GPUSpec:
    """A GPU by catalog id or by path to a TOML file."""
    if isinstance(gpu, GPUSpec):
        return gpu
    catalog = gpu_catalog()
    if gpu in catalog:
        return catalog[gpu]
    if not isinstance(gpu, str):
        raise CatalogError(f"A GPU must be a catalog id or a path, not {shown(gpu)}.")
    if is_file(Path(gpu)) or looks_like_path(gpu):
        return load_gpu_file(gpu)
    raise CatalogError(
        f"Unknown GPU {shown(gpu)}; choose one of {', '.join(catalog)} or give a path to a TOML file."
    )
