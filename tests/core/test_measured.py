"""Experiment 9 (docs/model.md §9): measured kernel times against the lab's floors.

The expected floors and ratios below are worked by hand from the shipped CSV rows and the
H100 SXM catalog figures (3.35 TB/s, 989.4 TFLOPS dense BF16), not by the code under test.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import lab
from cli.main import main
from lab.errors import LabInputError
from lab.measured.calc import Selection, calc_measured, measured_table, select_point
from lab.measured.measured_loader import parse_measurements, read_measurements, shipped_measurements


@pytest.fixture(scope="module")
def table():
    return measured_table()


def _point(table, **where) -> dict:
    mask = np.ones(table.sizes["point"], dtype=bool)
    for name, value in where.items():
        mask &= np.asarray(table[name].values) == value
    (index,) = np.flatnonzero(mask)
    return {name: table[name].values[index].item() for name in table.data_vars}


def test_shipped_data_is_all_there(table):
    kinds = np.asarray(table["kind"].values).astype(str)
    # 23 decode files (943 lines in all with the README and the other files), 6 prefill, 1 GEMM.
    assert (kinds == "gemm").sum() == 112
    assert (kinds == "prefill").sum() == 30
    assert (kinds == "decode").sum() == 755
    assert table["latency_s"].attrs["units"] == "s"
    assert table["ratio"].attrs["units"] == "1"
    assert "a410740f69ca0c7a8843b4800f402e2777636f58" in table.attrs["source"]


def test_decode_ratio_by_hand(table):
    # 32-8-128 tp 1, batch 16, 8,192 tokens: 182.171 µs measured.
    # KV = 16 · 8192 · (2 · 8 · 128 · 2) = 536,870,912 B; / 3.35e12 B/s = 160.25997 µs.
    p = _point(table, kind="decode", shape="32-8-128", tp=1, batch=16, context=8192)
    assert p["bytes"] == 536_870_912
    assert p["floor_s"] * 1e6 == pytest.approx(160.25997, rel=1e-6)
    assert p["ratio"] == pytest.approx(1.13672, rel=1e-5)
    assert not p["compute_bound"] and not p["below_floor"]
    assert p["achieved_bandwidth"] == pytest.approx(536_870_912 / 182.171e-6, rel=1e-9)


def test_decode_launch_cost_dominates_small_work(table):
    # 32-8-128 tp 1, batch 1 × 1,024: 4,194,304 B → 1.252031 µs floor; 39.718 µs measured.
    p = _point(table, kind="decode", shape="32-8-128", tp=1, batch=1, context=1024)
    assert p["ratio"] == pytest.approx(39.718 / 1.25203104, rel=1e-6)  # 31.7×


def test_prefill_ratio_by_hand(table):
    # 32-8-128, 16,384 tokens: pairs 16384 · 16385 / 2 = 134,225,920; FLOP = 4 · 32 · 128 · pairs
    # = 2,199,157,473,280 → 2,222.7183 µs at 989.4 TFLOPS (the memory floor is 100.2 µs).
    p = _point(table, kind="prefill", shape="32-8-128", context=16384)
    assert p["flops"] == 2_199_157_473_280
    assert p["floor_s"] * 1e6 == pytest.approx(2222.7183, rel=1e-6)
    assert p["ratio"] == pytest.approx(1.296684, rel=1e-5)
    assert p["compute_bound"]


def test_gemm_small_m_is_memory_bound_by_hand(table):
    # m 8, k 2048, n 6144: (2048·6144 + 8·2048 + 8·6144) · 2 = 25,296,896 B → 7.551312 µs.
    p = _point(table, kind="gemm", m=8, k=2048, n=6144)
    assert p["bytes"] == 25_296_896
    assert p["ratio"] == pytest.approx(8.988 / 7.551312, rel=1e-6)  # 1.190×


def test_gemm_large_m_is_below_the_bf16_floor(table):
    # m 8192, k 8192, n 6144: 2 · m · k · n = 824,633,720,832 FLOP → 833.46849 µs at the dense
    # BF16 peak; measured 641.031 µs = 0.769112× — 1,286.4 TFLOPS, impossible under the stated peak.
    p = _point(table, kind="gemm", m=8192, k=8192, n=6144)
    assert p["floor_s"] * 1e6 == pytest.approx(833.46849, rel=1e-6)
    assert p["ratio"] == pytest.approx(0.769112, rel=1e-5)
    assert p["below_floor"]
    result = calc_measured()
    assert result["summary"]["gemm"]["min_ratio"] == pytest.approx(0.769112, rel=1e-5)
    flagged = [q for q in result["below_floor"] if q["m"] == 8192 and q["k"] == 8192
               and q["n"] == 6144]
    assert len(flagged) == 1
    sentence = flagged[0]["sentence"]
    assert "impossible under the stated peaks" in sentence
    assert "1,286 TFLOPS" in sentence and "another precision than labelled" in sentence
    assert "timing artefact" in sentence


def test_open_dataset_measured():
    ds = lab.open_dataset("measured")
    assert ds.sizes["point"] == 897
    assert ds.attrs["gpu"] == "h100-sxm"


def test_selection_sentences(table):
    with pytest.raises(LabInputError, match="no decode attention measurement of 32-8-128 at "
                                            "batch 3"):
        select_point(table, Selection(batch=3))
    with pytest.raises(LabInputError, match="no GEMM measurement of shape '1×1'"):
        select_point(table, Selection(kind="gemm", shape="1x1", m=8))
    index = select_point(table, Selection(kind="gemm", shape="4096x6144", m=8))
    assert table["k"].values[index] == 4096


def test_user_file_same_as_shipped(tmp_path):
    text = ("heads,kv_heads,head_dim,tp,batch_size,kv_len,latency_us\n"
            "32,8,128,1,16,8192,182.171\n")
    path = tmp_path / "mine.csv"
    path.write_text(text)
    mine = measured_table(read_measurements(path))
    assert mine["ratio"].values[0] == pytest.approx(1.13672, rel=1e-5)
    assert parse_measurements(text.encode(), "up.csv")["latency_s"].values[0] == 182.171e-6


@pytest.mark.parametrize(("text", "message"), [
    ("m,k,n,latency_us\n8,2048,6144,abc\n", "row 2, column latency_us: 'abc' is not a number"),
    ("m,k,n,latency_us\n8,2048,6144,-1\n", "row 2, column latency_us: '-1' is not a time above 0"),
    ("m,k,n,latency_us\n8.5,2048,6144,1\n", "column m: '8.5' is not a whole number from 1"),
    ("m,k,n,latency_us\n8,2048,6144\n", "row 2: it has 3 values where the header names 4"),
    # rows as a spreadsheet numbers them, blank lines included (a trace's sentences count so)
    ("m,k,n,latency_us\n\n8,2048,6144,1\n8,2048,6144,x\n", "row 4, column latency_us: 'x'"),
    ("a,b\n1,2\n", "lacks the columns of any kind"),
    ("m,k,n,latency_us\n", "has no data rows"),
    ("heads,kv_heads,head_dim,seq_len,latency_us\n30,8,128,1024,5\n",
     "30 query heads are not a multiple of 8 KV heads"),
    ("heads,kv_heads,head_dim,tp,batch_size,kv_len,latency_us\n32,8,128,1,2000,1024,5\n",
     "column batch_size: '2000' is not a whole number from 1 to 1,024"),
    ("dtype,m,k,n,latency_us\nint4,8,2048,6144,1\n", "column dtype: 'int4' is not one of"),
])
def test_bad_rows_are_one_sentence(text, message):
    with pytest.raises(LabInputError, match=message.replace("(", r"\(")) as info:
        parse_measurements(text.encode(), "bad.csv")
    assert "\n" not in str(info.value)


def test_bad_bytes_are_one_sentence():
    with pytest.raises(LabInputError, match="not UTF-8"):
        parse_measurements(b"m,k,n,latency_us\n\xff\xfe,1,1,1\n", "bad.csv")
    with pytest.raises(LabInputError, match="NUL"):
        parse_measurements(b"m,k\x00", "bad.csv")


def test_shipped_loader_is_deterministic():
    assert shipped_measurements().identical(shipped_measurements())


# -- command line -----------------------------------------------------------------------------

def test_cli_json(capsys):
    assert main(["calc", "measured", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["selected"]["ratio"] == pytest.approx(1.13672, rel=1e-5)
    assert out["summary"]["gemm"]["below_floor"] == len(
        [p for p in out["below_floor"] if p["kind"] == "gemm"]) > 0
    assert len(out["points"]) == 897


def test_cli_text_shows_the_gemm_below_the_floor(capsys):
    assert main(["calc", "measured", "--kind", "gemm", "--shape", "8192x6144",
                 "--m", "8192"]) == 0
    out = capsys.readouterr().out
    assert "0.77×" in out and "impossible under the stated peaks" in out
    assert "Measured / floor = 641.03 µs / 833.47 µs = 0.77×" in out


def test_cli_measurements_file(tmp_path, capsys):
    path = tmp_path / "gemm.csv"
    path.write_text("m,k,n,latency_us\n8,2048,6144,8.988\n")
    assert main(["calc", "measured", "--measurements", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["selected"]["ratio"] == pytest.approx(1.190257, rel=1e-5)
    assert out["source"].startswith("your measurements")


@pytest.mark.parametrize(("args", "message"), [
    (["--measurements", "/nonexistent/x.csv"], "does not exist"),
    (["--batch", "3"], "There is no decode attention measurement"),
])
def test_cli_bad_input_exits_2(args, message, capsys):
    assert main(["calc", "measured", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and err.count("\n") == 1


def test_cli_bad_row_exits_2(tmp_path, capsys):
    path = tmp_path / "bad.csv"
    path.write_text("m,k,n,latency_us\n8,2048,6144,0\n")
    assert main(["calc", "measured", "--measurements", str(path)]) == 2
    assert "row 2, column latency_us" in capsys.readouterr().err


def test_overlay_on_experiment_1():
    from lab.catalog import get_gpu, get_model
    from lab.measured.overlay import measured_attention

    model = get_model("llama-3.1-8b")
    # Ideal attention phase at batch 16 × 8,192 (one GPU): 32 layers × 160.26 µs = 5.128 ms.
    hit = measured_attention(model, get_gpu("h100-sxm"), 1, 16, 8192, 32 * 160.25997e-6)
    assert hit["available"]
    assert hit["measured_s"] == pytest.approx(32 * 182.171e-6, rel=1e-12)
    assert hit["ratio"] == pytest.approx(1.13672, rel=1e-5)
    assert "real kernel" in hit["sentence"] and "a410740f" in hit["sentence"]
    miss = measured_attention(model, get_gpu("h100-sxm"), 1, 8, 8192, 1.0)
    assert not miss["available"] and "batch 8" in miss["sentence"]
    other = measured_attention(model, get_gpu("a100-sxm-80gb"), 1, 16, 8192, 1.0)
    assert not other["available"] and "H100 SXM only" in other["sentence"]


def test_fp8_gemm_uses_the_fp8_peak_and_needs_one(tmp_path, capsys):
    # m 8192, k 8192, n 6144 in FP8: 824,633,720,832 FLOP / 1,979 TFLOPS = 416.6921 µs.
    data = parse_measurements(b"dtype,m,k,n,latency_us\nfp8,8192,8192,6144,500\n", "fp8.csv")
    table = measured_table(data)
    assert table["floor_s"].values[0] * 1e6 == pytest.approx(416.6921, rel=1e-6)
    with pytest.raises(LabInputError, match="has no FP8 peak"):
        measured_table(data, "a100-sxm-80gb")


def test_cli_decode_measured_attention(capsys):
    assert main(["calc", "decode", "--batch", "16", "--measured-attention", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)["measured_attention"]
    # 182.171 µs per layer (32-8-128, tp 1, batch 16 × 8,192) × 32 layers, by hand.
    assert out["available"] and out["measured_s"] == pytest.approx(182.171e-6 * 32)
    assert out["ratio"] == pytest.approx(182.171e-6 * 32 / out["ideal_s"])
    assert "Apache License 2.0" in out["source"]
    assert main(["calc", "decode", "--measured-attention"]) == 0  # batch 8 was not measured
    assert capsys.readouterr().out.splitlines()[-1].startswith(
        "Measured attention: no real kernel was measured for this configuration.")
    assert main(["calc", "decode", "--batch", "16"]) == 0
    assert "Measured attention" not in capsys.readouterr().out  # off by default


def test_floors_of_another_gpu_than_the_data_ran_on_blame_no_kernel():
    """The shipped data ran on an H100 SXM; read against an H100 PCIe's floors most points sit
    below them, and the cards called that "impossible under the stated peaks" and blamed the
    kernel (another precision, a timing artefact). It is the parts that differ."""
    from lab.measured.experiment import FloorsAgainstMeasurements

    exp = FloorsAgainstMeasurements(gpu="h100-pcie")
    r = exp.result
    assert r["measured_elsewhere"] and r["below_floor_count"] > 0
    assert "it ran on the NVIDIA H100 SXM, not on this GPU" in r["worst_sentence"]
    assert "timing artefact" not in r["worst_sentence"]
    notes = " ".join(card.caption for card in exp.cards())
    assert "impossible" not in notes and "the data ran on another" in notes
    assert not FloorsAgainstMeasurements().result["measured_elsewhere"]
    own = calc_measured(None, "h100-sxm")["below_floor"]
    assert own and all("impossible under the stated peaks" in p["sentence"] for p in own)


def test_a_kind_alone_selects_its_first_measured_point(capsys):
    """``calc measured --kind gemm`` refused itself: the default shape 32-8-128 is an attention
    head shape, never a GEMM's. A kind alone now selects that kind's first measured point, as
    the page does when the kind changes; a shape given is still held to."""
    assert main(["calc", "measured", "--kind", "gemm", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["selected"]["kind"] == "gemm" and "×" in record["selected"]["shape"]
    assert main(["calc", "measured", "--kind", "gemm", "--shape", "32-8-128"]) == 2
    assert "There is no GEMM measurement of shape '32-8-128'" in capsys.readouterr().err
