"""Model lookup for the decode experiments: dense configs through :mod:`lab.catalog.loader`,
mixture-of-experts and MLA configs through :mod:`lab.catalog.moe_config`.

Kept apart from the loader (which :mod:`lab.catalog.moe_config` builds on) so the imports run
one way. A Llama 4 config is refused with :func:`~lab.catalog.moe_config.decode_refusal`'s
sentence: its chunked attention is not what the decode step describes.
"""

from __future__ import annotations

from pathlib import Path

from lab.catalog import loader
from lab.catalog.entries import ModelSpec
from lab.catalog.moe_config import decode_refusal, moe_model_from_config
from lab.catalog.moe_spec import MOE_ARCHITECTURES
from lab.errors import CatalogError


def _architecture(entry) -> object:
    """The config's architecture (``architecture`` or the first of ``architectures``)."""
    if not isinstance(entry, dict):
        return None
    architecture = entry.get("architecture")
    archs = entry.get("architectures")
    if architecture is None and isinstance(archs, list) and archs:
        architecture = archs[0]
    return architecture


def load_model_config(path: str | Path) -> ModelSpec:
    """A model from a Hugging Face ``config.json`` on disk (id = its folder's name): a
    :class:`~lab.catalog.moe_spec.MoESpec` for a mixture-of-experts architecture."""
    entry, model_id, name = loader.read_config_json(path)
    architecture = _architecture(entry)
    if isinstance(architecture, str) and architecture in MOE_ARCHITECTURES:
        spec = moe_model_from_config(entry, str(Path(path)), model_id=model_id, name=name)
        refusal = decode_refusal(spec)
        if refusal:
            raise CatalogError(refusal)
        return spec
    return loader.model_from_config(entry, str(Path(path)), model_id=model_id, name=name)


def get_model(model: str | ModelSpec) -> ModelSpec:
    """A model by catalog id or by path to a ``config.json`` (mixture of experts included)."""
    if isinstance(model, ModelSpec) or model in loader.model_catalog() \
            or not isinstance(model, str):
        return loader.get_model(model)
    if loader._is_file(Path(model)) or loader._looks_like_path(model):
        return load_model_config(model)
    return loader.get_model(model)
