"""Experiment 12's model upload: a Hugging Face ``config.json`` read in memory by
:func:`lab.catalog.lookup.model_from_config_bytes` and planned instead of the catalog's model.

Built on :class:`apps.ui.parts.table_upload.TableUpload`: the bytes are parsed where they arrive,
nothing is written to disk, no path from the page is opened, and the file's name and the
model's name are only shown, escaped. Choosing a catalog model in the dropdown replaces the
upload (:meth:`lab.plan.plan_experiment.PlanDeployment._refresh`).
"""

from __future__ import annotations

from html import escape

import param

from apps.ui.parts.table_upload import TableUpload
from apps.ui.parts.trace_upload import CappedFileInput, shown_name
from apps.ui.parts.upload_limits import MAX_CONFIG_UPLOAD_BYTES
from lab.catalog.entries import ModelSpec
from lab.catalog.lookup import model_from_config_bytes
from lab.errors import LabInputError
from lab.plan.plan_experiment import PlanDeployment
from lab.units import MIB


def config_limit_sentence() -> str:
    """The config upload's limit as the end of a sentence."""
    return f"a config.json of up to {MAX_CONFIG_UPLOAD_BYTES // MIB} MiB is accepted"


class ConfigFileInput(CappedFileInput):
    """The capped file input for one ``config.json`` (:data:`MAX_CONFIG_UPLOAD_BYTES`)."""

    max_bytes = MAX_CONFIG_UPLOAD_BYTES

    def limit_sentence(self) -> str:
        return config_limit_sentence()

    def shown_name(self, name: str) -> str:
        return shown_name(name or "config.json")


class ModelConfigUpload(TableUpload):
    """Upload a model's ``config.json`` to plan it, or go back to the catalog's model."""

    experiment = param.ClassSelector(class_=PlanDeployment,
                                     doc="The plan whose model the upload replaces.")
    file_input = ConfigFileInput
    file_label = "Upload a model's config.json (Hugging Face)"
    reset_label = "Use the catalog's model"
    shipped_text = "the catalog model chosen above"
    status_class = "lab-model-status"

    def __init__(self, **params):
        super().__init__(**params)
        self.experiment.param.watch(self._model_chosen, ["model"])

    def parse(self, data: bytes, name: str) -> ModelSpec:
        return model_from_config_bytes(data, name)

    def use(self, table: ModelSpec | None) -> None:
        """Plan the uploaded model; one that cannot be planned at all puts the model in force
        back and says why."""
        exp = self.experiment
        previous = exp.model_config
        exp.model_config = table
        if table is not None and exp.result is None and exp.error:
            reason = exp.error
            exp.model_config = previous
            raise LabInputError(reason)

    def help_markdown(self) -> str:
        return ("**Your own model**: a Hugging Face `config.json` (dense, mixture-of-experts or "
                "MLA; the keys the CLI's `--model config.json` reads), planned instead of the "
                "catalog's model. No public row measured it, so its band is read from its "
                "engine × GPU × mode's errors.")

    def _describe(self, name: str | None) -> str:
        spec = self.experiment.model_config if self.experiment is not None else None
        if name is None or spec is None:
            return f"<p>Model: <em>{self.shipped_text}</em></p>"
        return (f"<p>Model: <em>{escape(spec.name)}</em> (from {escape(shown_name(name))}), "
                "instead of the catalog model chosen above.</p>")

    def _model_chosen(self, _event) -> None:
        """A catalog model chosen in the dropdown has replaced the upload: say so, and let the
        same file be chosen again."""
        if self.experiment.model_config is None:
            self.forget_file()
            self._in_force = None
            self._status.object = self._describe(None)
