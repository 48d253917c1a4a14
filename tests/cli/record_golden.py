"""Record (or re-record) the golden outputs of ``tests/cli/golden_cases.py``.

``python tests/cli/record_golden.py [NAME ...]`` writes ``tests/cli/golden/NAME.txt`` for the
named cases (every case without a name). Re-record only on purpose: ``test_golden.py`` holds
every later version to these bytes.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[2])]

from golden_cases import CASES  # noqa: E402
from golden_run import GOLDEN, golden_path, render  # noqa: E402


def record(names: list[str]) -> None:
    """Write the recordings of ``names`` (every case when empty)."""
    GOLDEN.mkdir(exist_ok=True)
    known = {name for name, _, _ in CASES}
    unknown = sorted(set(names) - known)
    if unknown:
        raise SystemExit(f"No golden case named {', '.join(unknown)}.")
    for name, argv, stdin in CASES:
        if names and name not in names:
            continue
        golden_path(name).write_text(render(argv, stdin), encoding="utf-8")
        print(name)


if __name__ == "__main__":
    record(sys.argv[1:])
