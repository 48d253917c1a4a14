"""The model catalog and model lookup: dense configs through :mod:`lab.catalog.loader`,
mixture-of-experts and MLA configs through :mod:`lab.catalog.moe_config`.

``models.toml`` holds both kinds, read entry by entry with :func:`model_from_entry` through
:func:`lab.catalog.loader.model_entries` (the one reader of ``[[model]]`` entries); a
mixture-of-experts architecture becomes a :class:`~lab.catalog.moe_spec.MoESpec`, anything
else a dense :class:`~lab.catalog.entries.ModelSpec`. Kept apart from the loader (which
:mod:`lab.catalog.moe_config` builds on) so the imports run one way. Models with per-layer
attention kinds (gpt-oss's and Gemma 3's sliding windows, Llama 4's chunks, a Mistral or Qwen
config with a sliding window) are read by the same reader into a :class:`MoESpec`
(:mod:`lab.models.layer_kinds`).
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from lab.catalog import loader
from lab.catalog.entries import SUPPORTED_ARCHITECTURES, ModelSpec
from lab.catalog.moe_config import READ_ARCHITECTURES, load_moe_config, moe_model_from_config
from lab.catalog.moe_spec import MoESpec, routes_experts
from lab.errors import CatalogError, shown


def _architecture(entry) -> object:
    """The config's architecture (``architecture`` or the first of ``architectures``)."""
    if not isinstance(entry, dict):
        return None
    architecture = entry.get("architecture")
    archs = entry.get("architectures")
    if architecture is None and isinstance(archs, list) and archs:
        architecture = archs[0]
    return architecture


def model_from_entry(entry, where: str, *, model_id: str, name: str) -> ModelSpec:
    """A model from Hugging Face ``config.json`` keys (a config file or a catalog entry): a
    :class:`MoESpec` for a mixture-of-experts architecture, else a dense :class:`ModelSpec`.
    ``where`` names the file (and entry) in error messages."""
    architecture = _architecture(entry)
    if isinstance(architecture, str) and architecture in READ_ARCHITECTURES:
        return moe_model_from_config(entry, where, model_id=model_id, name=name)
    if _slides(entry, architecture):
        return moe_model_from_config(entry, where, model_id=model_id, name=name, dense=True)
    return loader.model_from_config(entry, where, model_id=model_id, name=name)


def _slides(entry, architecture) -> bool:
    """True for a dense Llama-style config that enables a sliding window (Mistral's
    ``sliding_window``, Qwen's ``use_sliding_window``): read with its layer kinds."""
    if not isinstance(entry, dict) or architecture not in SUPPORTED_ARCHITECTURES:
        return False
    return entry.get("use_sliding_window") is True or (
        architecture == "MistralForCausalLM" and entry.get("sliding_window") is not None)


@cache
def model_catalog() -> dict[str, ModelSpec]:
    """Every catalog model by id, in catalog order: the dense models, then the
    mixture-of-experts ones (:class:`MoESpec`)."""
    return loader.model_entries(loader.MODEL_FILE, model_from_entry)


def dense_model_catalog() -> dict[str, ModelSpec]:
    """The catalog's dense models by id, in catalog order (what experiments 6 and 8, which use
    the dense formulas, offer)."""
    return {key: spec for key, spec in model_catalog().items() if not isinstance(spec, MoESpec)}


def dense_attention_catalog() -> dict[str, ModelSpec]:
    """The catalog's models without routed experts or latent attention, by id in catalog
    order: the dense models and the dense ones with sliding-window layers (Gemma 3), which
    experiment 10 models layer kind by layer kind."""
    return {key: spec for key, spec in model_catalog().items() if not routes_experts(spec)}


def moe_model_catalog() -> dict[str, MoESpec]:
    """The catalog's mixture-of-experts models by id, in catalog order."""
    return {key: spec for key, spec in model_catalog().items() if isinstance(spec, MoESpec)}


def load_model_config(path: str | Path) -> ModelSpec:
    """A model from a Hugging Face ``config.json`` on disk (id = its folder's name): a
    :class:`MoESpec` for a mixture-of-experts architecture."""
    entry, model_id, name = loader.read_config_json(path)
    return model_from_entry(entry, str(Path(path)), model_id=model_id, name=name)


UPLOADED_PREFIX = "uploaded-"
"""How the id of a model read from an uploaded ``config.json`` starts: never a catalog id nor
a checkpoint path of the measured rows, so no row is taken for it."""
MAX_UPLOADED_ID_CHARS = 64
"""Longest part of an uploaded model's id taken from its file, characters."""


def uploaded_model_id(entry: object, file_name: str) -> str:
    """The id of a model from an uploaded ``config.json``: ``uploaded-`` and the last part of
    its ``_name_or_path`` (else the file's stem, unless that is just ``config``), letters,
    digits and ``.-_`` only."""
    named = entry.get("_name_or_path") if isinstance(entry, dict) else None
    base = named.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1] if isinstance(named, str) else ""
    if not base:
        stem = Path(file_name.replace("\\", "/")).stem
        base = "" if stem.lower() == "config" else stem
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", base).strip("-.")[:MAX_UPLOADED_ID_CHARS]
    return UPLOADED_PREFIX + (slug or "model")


def model_from_config_bytes(data: bytes, file_name: str) -> ModelSpec:
    """A model from the bytes of a Hugging Face ``config.json`` the reader uploaded (``file_name``
    names it in messages; nothing is read from disk): read as :func:`load_model_config` reads
    a file, its id from :func:`uploaded_model_id`, its name as a file's
    (:func:`lab.catalog.loader.config_name`)."""
    loader.check_spec_size(len(data), file_name)
    entry = loader.parse_config_json(loader.decode_text(data, file_name), file_name)
    model_id = uploaded_model_id(entry, file_name)
    fallback = unnamed_model_name(entry) if model_id == UPLOADED_PREFIX + "model" else model_id
    return model_from_entry(entry, file_name, model_id=model_id,
                            name=loader.config_name(entry, fallback))


def unnamed_model_name(entry: object) -> str:
    """A name for an uploaded ``config.json`` with no ``_name_or_path`` and no telling file
    name: its architecture, layers and hidden size ("DeepseekV3ForCausalLM, 61 layers,
    hidden size 7,168"), so the page says which model it plans; one line, capped as any name
    (:func:`lab.catalog.loader.config_name`)."""
    entry = entry if isinstance(entry, dict) else {}
    kinds = entry.get("architectures")
    kind = kinds[0] if isinstance(kinds, list) and kinds and isinstance(kinds[0], str) else ""
    parts = [" ".join(kind.split()) or "A model with no name"]
    for key, words in (("num_hidden_layers", "layers"), ("hidden_size", "hidden size")):
        value = entry.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 10**9:
            parts.append(f"{value:,} {words}" if key == "num_hidden_layers"
                         else f"{words} {value:,}")
    return loader.config_name({"_name_or_path": ", ".join(parts)}, "uploaded-model")


def get_model(model: str | ModelSpec) -> ModelSpec:
    """A model by catalog id or by path to a ``config.json`` (mixture of experts included)."""
    if isinstance(model, ModelSpec):
        return model
    catalog = model_catalog()
    if model in catalog:
        return catalog[model]
    if not isinstance(model, str):
        raise CatalogError(f"A model must be a catalog id or a path, not {shown(model)}.")
    if loader.is_file(Path(model)) or loader.looks_like_path(model):
        return load_model_config(model)
    raise CatalogError(
        f"Unknown model {shown(model)}; choose one of {', '.join(catalog)} or give a path to a "
        "config.json."
    )


def get_moe_model(model: str | MoESpec) -> MoESpec:
    """A mixture-of-experts model by catalog id or by path to a ``config.json``."""
    if isinstance(model, MoESpec):
        return model
    catalog = moe_model_catalog()
    if model in catalog:
        return catalog[model]
    if isinstance(model, str) and (loader.is_file(Path(model)) or loader.looks_like_path(model)):
        return load_moe_config(model)
    raise CatalogError(f"Unknown mixture-of-experts model {shown(model)}; choose one of "
                       f"{', '.join(catalog)} or give a path to a config.json.")

