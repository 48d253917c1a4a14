"""Issue 38 item 7: the server's sentences read as one sentence each, a suggested command can
be pasted as it is, and an upload limit is said in one unit (MiB)."""

from __future__ import annotations

import shlex

import pytest

from apps.ui import panel_compat
from apps.ui.parts import table_upload
from lab.limits import MAX_MEASUREMENT_BYTES
from lab.units import MIB
from sweeps import catalog_of_datasets as catalog


def sentences(text: str) -> int:
    return text.count(". ") + text.count("! ") + 1


def test_the_414_answer_is_one_sentence():
    assert sentences(panel_compat.TOO_LONG) == 1 and panel_compat.TOO_LONG.endswith(".")


def test_a_missing_datasets_command_names_its_real_path_shell_quoted(tmp_path, monkeypatch):
    from apps.ui.views.grid import page_sentence

    folder = tmp_path / "team's data sets"
    folder.mkdir()
    monkeypatch.setenv(catalog.DATASETS_ENV, str(folder))
    with pytest.raises(catalog.LabInputError) as error:
        catalog.open_named("large")
    shown = page_sentence(error.value, "large")
    command = shown.split("`")[1]
    assert command == ("inference-lab sweep --grid large --experiment decode --out "
                       + shlex.quote(str(folder / "large.zarr")))
    assert shlex.split(command)[-1] == str(folder / "large.zarr")  # pasteable as it is


def test_the_measurements_upload_limit_is_said_in_mib():
    assert MAX_MEASUREMENT_BYTES == 10 * MIB
    assert table_upload.limit_sentence() == "measurements up to 10 MiB are accepted"
    assert table_upload.MeasurementsFileInput().size_text() == "10 MiB"
