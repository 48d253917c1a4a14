"""Fuzz the command line: hostile flag values and files give exit status 2, never a traceback.

``main()`` runs in-process with stdout and stderr captured; any exception escaping it fails
the test, and a bad input must end with status 2 and one ``inference-lab: error:`` line (or an
argparse usage error) on stderr.
"""

from __future__ import annotations

import contextlib
import io
import tempfile
from pathlib import Path

from fuzz_inputs import (
    CLI_SETTINGS,
    cli_argv,
    config_json_files,
    gpu_toml_files,
    trace_csv_files,
)
from hypothesis import given
from hypothesis import strategies as st

from cli.main import EXIT_BAD_INPUT, main


def run_main(argv: list[str]) -> tuple[int, str]:
    """Run ``inference-lab argv`` in-process; return the status and what went to stderr."""
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        status = main(argv)
    return status, err.getvalue()


def check_cli(config: bytes, gpu: bytes, trace: bytes, data) -> None:
    """Draw a command line over the three files and check its status and stderr."""
    with tempfile.TemporaryDirectory() as folder:
        paths = {}
        for name, content in (("config.json", config), ("gpu.toml", gpu), ("trace.csv", trace)):
            paths[name] = Path(folder) / name
            paths[name].write_bytes(content)
        argv = data.draw(cli_argv(str(paths["config.json"]), str(paths["gpu.toml"]),
                                  str(paths["trace.csv"])))
        status, err = run_main(argv)
    assert "Traceback" not in err, err
    assert status in (0, EXIT_BAD_INPUT), (status, err)
    if status == EXIT_BAD_INPUT:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and "error:" in lines[0], err


@CLI_SETTINGS
@given(config_json_files(), gpu_toml_files(), trace_csv_files(), st.data())
def test_calc_flags_and_files_fuzz(config, gpu, trace, data):
    check_cli(config, gpu, trace, data)


def test_batch_of_310_digits_is_one_sentence():
    status, err = run_main(["calc", "decode", "--batch", "1" + "0" * 309])
    assert status == EXIT_BAD_INPUT
    assert err.count("\n") == 1 and "batch must be between 1 and 1,024" in err
