"""Provenance stored with every dataset: grid spec, catalog figures, version, and their hash.

The hash covers exactly what the numbers depend on: the expanded grid spec, the catalog
records of the models and GPUs it uses (figures and sources), the package version and the
fingerprint of the models' code and data (:func:`models_fingerprint`: every file of ``lab/``,
so a changed formula or refitted calibration makes every grid computed before it stale even
under one version number). A dataset whose stored hash differs from the hash of its own spec
against today's catalog, version and models is stale.
"""

from __future__ import annotations

import hashlib
import json
import math
from functools import lru_cache
from pathlib import Path

import lab.catalog
from lab.catalog import get_gpu, get_model
from sweeps.conventions import cf_attrs, package_version
from sweeps.grid_schema import ExperimentSpec

ATTR_SPEC = "grid_spec"
ATTR_NAME = "grid_name"
ATTR_CATALOG = "catalog"
ATTR_VERSION = "inference_lab_version"
ATTR_HASH = "grid_hash"
ATTR_EXPERIMENT = "experiment"
ATTR_MODELS = "models_fingerprint"
"""SHA-256 of the models' code and data the dataset was computed with (:func:`models_fingerprint`)."""
ATTR_COMPLETE = "sweep_complete"
"""Set to 1 once every chunk is written (an integer, so NetCDF exports keep it)."""
ATTR_DIGESTS = "file_digests"
"""``{store key: BLAKE2b digest}`` of every file of the store but its root metadata, recorded
when the sweep completes; checked on open (every file present) and on every read."""
ATTR_EXPORTED = "exported"
"""Set to 1 on a Zarr export (``inference-lab export -o x.zarr``): a selection of a grid for
the reader's own analysis, without the sweep's checksums (its files are not the sweep's)."""
REQUIRED_ATTRS = (ATTR_EXPERIMENT, ATTR_NAME, ATTR_SPEC, ATTR_CATALOG, ATTR_VERSION, ATTR_HASH,
                  ATTR_COMPLETE)
"""Attributes every finished dataset carries."""


def _ids(spec: ExperimentSpec, key: str) -> list[str]:
    values = list(spec.axes.get(key, ()))
    if key in spec.constants:
        values.append(spec.constants[key])
    return [v for v in dict.fromkeys(values) if isinstance(v, str)]


def _json_ready(record: dict) -> dict:
    return {k: (None if isinstance(v, float) and math.isnan(v) else v)
            for k, v in record.items()}


def catalog_figures(spec: ExperimentSpec) -> dict:
    """Catalog records (figures, source, date checked) of the models and GPUs ``spec`` uses."""
    return {
        "models": {m: _json_ready(get_model(m).as_dict()) for m in _ids(spec, "model")},
        "gpus": {g: _json_ready(get_gpu(g).as_dict()) for g in _ids(spec, "gpu")},
    }


def _lab_root() -> Path:
    """The folder of the ``lab`` package (``lab/catalog/`` is one of its folders)."""
    return Path(lab.catalog.__file__).resolve().parents[1]


@lru_cache(maxsize=1)
def models_fingerprint() -> str:
    """SHA-256 (hex) of every file of the ``lab`` package — its formulas, catalogs and the
    public rows experiments 11 and 12 are calibrated on — each named by its path inside the
    package (compiled caches left out). Computed once per process."""
    root = _lab_root()
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()
                       and "__pycache__" not in p.parts and p.suffix != ".pyc"):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def grid_hash(spec: ExperimentSpec, catalog: dict, version: str) -> str:
    """SHA-256 of the spec, the catalog records it uses, the package version and the models'
    fingerprint (:func:`models_fingerprint`) (hex)."""
    payload = json.dumps({"spec": spec.to_dict(), "catalog": catalog, "version": version,
                          "models": models_fingerprint()},
                         sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(payload.encode()).hexdigest()


def dataset_attrs(spec: ExperimentSpec, grid_name: str, description: str) -> dict:
    """The attributes of a dataset computed for ``spec`` today (JSON strings where nested)."""
    catalog = catalog_figures(spec)
    return {
        "title": f"Inference Lab {spec.experiment} grid",
        "description": description,
        ATTR_EXPERIMENT: spec.experiment,
        ATTR_NAME: grid_name,
        ATTR_SPEC: json.dumps(spec.to_dict()),
        ATTR_CATALOG: json.dumps(catalog),
        ATTR_VERSION: package_version(),
        ATTR_MODELS: models_fingerprint(),
        ATTR_HASH: grid_hash(spec, catalog, package_version()),
        **cf_attrs(f"sweep: experiment {spec.experiment}, grid '{grid_name}'"),
    }


def expected_hash(spec: ExperimentSpec) -> str:
    """The hash a dataset of ``spec`` would carry if computed now."""
    return grid_hash(spec, catalog_figures(spec), package_version())
