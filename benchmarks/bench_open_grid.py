"""Time to open the default decode grid, and to read one heatmap slice of it, in ms.

Computes the ``default`` decode grid into a temporary data directory (``$INFERENCE_LAB_DATA``)
with ``lab.open_dataset``, then times ``--repeats`` further opens (every check the lab makes
on open) and ``--repeats`` reads of one batch × context slice (what the grid page reads per
selection, each file checked against its checksum). Prints median and minimum of each.

    python benchmarks/bench_open_grid.py --repeats 20
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time


def timed_ms(action, repeats: int) -> list[float]:
    """Wall time of ``repeats`` calls of ``action``, ms each."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        times.append((time.perf_counter() - start) * 1e3)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20, help="timed calls of each step")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-open-grid-") as folder:
        os.environ["INFERENCE_LAB_DATA"] = folder
        import lab

        start = time.perf_counter()
        ds = lab.open_dataset("decode")
        print(f"first use (computes the default grid): {time.perf_counter() - start:.2f} s")
        opens = timed_ms(lambda: lab.open_dataset("decode"), args.repeats)
        one = {"model": "llama-3.1-8b", "gpu": "h100-sxm", "tp": 1, "precision": "bf16",
               "kv_precision": "bf16"}
        reads = timed_ms(lambda: ds["step_time_s"].sel(one).values, args.repeats)
        for label, times in (("open", opens), ("slice read", reads)):
            print(f"{label}: median {statistics.median(times):.1f} ms, "
                  f"min {min(times):.1f} ms over {len(times)}")


if __name__ == "__main__":
    main()
