"""Experiment 9's own-measurements upload: a CSV read in memory by
:func:`lab.measured.measured_loader.parse_measurements` (:class:`apps.ui.parts.table_upload.TableUpload`)."""

from __future__ import annotations

import param

from apps.ui.parts.table_upload import TableUpload
from lab.measured.experiment import FloorsAgainstMeasurements
from lab.measured.measured_loader import USER_COLUMNS, parse_measurements

COLUMNS_HELP = "; ".join(f"{kind}: `{','.join(cols)}`" for kind, cols in USER_COLUMNS.items())
"""The accepted headers, as the page lists them."""


class MeasurementsUpload(TableUpload):
    """Upload a measurements CSV, or go back to the shipped H100 data."""

    experiment = param.ClassSelector(class_=FloorsAgainstMeasurements,
                                     doc="The experiment whose data the upload replaces.")
    reset_label = "Use the shipped H100 data"
    shipped_text = "the shipped H100 SXM measurements"
    status_class = "lab-measured-status"

    def parse(self, data: bytes, name: str):
        return parse_measurements(data, name)

    def help_markdown(self) -> str:
        return (f"**Your own measurements** (CSV, one kind per file; {COLUMNS_HELP}; "
                "optional `dtype`)")

