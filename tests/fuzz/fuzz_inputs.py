"""Hostile inputs for the loaders and the command line, as hypothesis strategies.

Each ``*_files`` strategy draws the bytes of one file a person could hand the lab: random
bytes, text that is not UTF-8, nesting deep enough to exhaust the recursion limit, or a valid
file with a few fields replaced by huge integers, non-finite floats, wrong types and empty
strings. ``cli_argv`` draws a command line for one ``calc`` experiment with hostile flag
values. ``run_isolated`` runs a call and reports any exception other than
:class:`~lab.errors.LabInputError` (what a person would see as a traceback).

``FUZZ_EXAMPLES`` (environment variable ``LAB_FUZZ_EXAMPLES``, default 200) sets how many
examples each fuzz test draws (the command-line test half as many); the suite keeps it small,
a long run sets it to 10,000.
"""

from __future__ import annotations

import json
import math
import os
import tomllib

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

FUZZ_EXAMPLES = int(os.environ.get("LAB_FUZZ_EXAMPLES", "200"))
"""Examples per fuzz test (``LAB_FUZZ_EXAMPLES``)."""

FUZZ_SETTINGS = settings(max_examples=FUZZ_EXAMPLES, deadline=None, database=None,
                         suppress_health_check=[HealthCheck.too_slow,
                                                HealthCheck.filter_too_much,
                                                HealthCheck.data_too_large])
"""Bounded, deadline-free settings shared by every fuzz test."""
CLI_SETTINGS = settings(FUZZ_SETTINGS, max_examples=max(1, FUZZ_EXAMPLES // 2))
"""The command-line fuzz test draws half as many (each example runs a whole calculation)."""

HUGE_INTEGERS = (2**31, 2**53 + 1, 2**63 - 1, 2**63, 2**64, 10**18, 10**308, 10**309,
                 10**400, -(2**63) - 1, 10**4299)
"""Integers that overflow int64, float64 or both (10^4299 is just under Python's str limit)."""
EDGE_FLOATS = (math.nan, math.inf, -math.inf, 1e300, 1e308, -1e308, 5e-324, 1e-320, -0.0,
               0.0, 0.5, 1.5, 2.0**63, 2.0**64)
"""Floats that are non-finite, huge, subnormal or fractional."""
NUMBER_TEXTS = ("nan", "NaN", "inf", "-inf", "Infinity", "1e308", "1e309", "1e400", "-1e400",
                "1" + "0" * 309, "9" * 400, "9223372036854775807", "9223372036854775808",
                "18446744073709551616", "-9223372036854775809", "0", "-0", "1e-400", "5e-324",
                "0.5", "1.5", "-1", "1_000", "0x10", "1e3", " 7 ", "", " ", "١٢", "8B", "true")
"""Number-like text a CSV cell or a flag value may hold."""

integers = st.one_of(st.integers(min_value=-(2**70), max_value=2**70),
                     st.sampled_from(HUGE_INTEGERS))
floats = st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                   st.sampled_from(EDGE_FLOATS))
short_text = st.text(max_size=12)
scalars = st.one_of(integers, floats, short_text, st.booleans(), st.none(),
                    st.sampled_from(NUMBER_TEXTS))
"""One hostile scalar of any JSON/TOML type."""
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(short_text, inner, max_size=3)), max_leaves=8)
"""A hostile value: a scalar, or a small list or table of them."""

random_bytes = st.binary(max_size=400)
not_utf8 = st.binary(min_size=1, max_size=60).map(lambda b: b"\xff\xfe\x80" + b + b"\xc3(")
"""Bytes that cannot be UTF-8 (an invalid start byte and a broken two-byte sequence)."""


def nested(open_: str, close: str, prefix: str = "") -> st.SearchStrategy[bytes]:
    """Text nested deeper than the recursion limit allows (or just within it)."""
    return st.sampled_from((50, 900, 1200, 5000, 100_000)).map(
        lambda depth: (prefix + open_ * depth + close * depth).encode())


LLAMA_CONFIG = {
    "architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "num_hidden_layers": 32,
    "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
    "intermediate_size": 14336, "vocab_size": 128256, "max_position_embeddings": 131072,
    "tie_word_embeddings": False, "_name_or_path": "meta-llama/Llama-3.1-8B",
}
"""A valid Hugging Face ``config.json`` (Llama 3.1 8B) that the fuzzers corrupt."""
MODEL_KEYS = (*LLAMA_CONFIG, "architecture", "total_params", "num_local_experts",
              "sliding_window", "use_sliding_window", "attention_bias", "source", "notes")

H100_FIELDS = {
    "id": "fuzz-gpu", "name": "Fuzz GPU", "vendor": "Nobody", "capacity_gb": 80.0,
    "hbm_bandwidth_tbps": 3.35, "bf16_tflops": 989.4, "fp8_tflops": 1978.9,
    "interconnect_gbps": 900.0, "interconnect": "NVLink 4",
}
"""A valid GPU table (H100 SXM figures) that the fuzzers corrupt."""


def _corrupted(base: dict, keys) -> st.SearchStrategy[dict]:
    """``base`` with one to three keys replaced by hostile values or removed."""
    changes = st.dictionaries(st.sampled_from(tuple(keys)),
                              st.one_of(values, st.just(KeyError)), min_size=1, max_size=3)

    def apply(change: dict) -> dict:
        out = dict(base)
        for key, value in change.items():
            if value is KeyError:
                out.pop(key, None)
            else:
                out[key] = value
        return out

    return changes.map(apply)


def model_dicts() -> st.SearchStrategy[dict]:
    """A ``config.json`` object with hostile fields."""
    return _corrupted(LLAMA_CONFIG, MODEL_KEYS)


def _json_bytes(value) -> bytes:
    # Python's json writes NaN/Infinity literals and reads them back, as a config.json may hold.
    # Integers beyond Python's digit limit for str() cannot be written at all: keep them short.
    try:
        return json.dumps(value).encode()
    except ValueError:
        return b"{}"


def config_json_files() -> st.SearchStrategy[bytes]:
    """Bytes of a hostile ``config.json``."""
    return st.one_of(model_dicts().map(_json_bytes), random_bytes, not_utf8,
                     nested("[", "]"), nested('{"a":', "}"),
                     values.map(_json_bytes),
                     st.just(b'{"hidden_size": ' + b"1" * 5000 + b"}"))


def toml_value(value) -> str:
    """``value`` written as TOML (None as an empty string; tables inline)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value) if value.bit_length() < 14_000 else "0"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if value is None:
        return '""'
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))} = {toml_value(v)}"
                               for k, v in value.items()) + "}"
    return json.dumps(str(value))


def toml_table(entry: dict, header: str | None = None) -> str:
    """A TOML document: ``entry``'s keys at the top level or under ``[header]``."""
    lines = [f"[{header}]"] if header else []
    lines += [f"{json.dumps(str(k))} = {toml_value(v)}" for k, v in entry.items()]
    return "\n".join(lines) + "\n"


def gpu_toml_files() -> st.SearchStrategy[bytes]:
    """Bytes of a hostile GPU TOML file."""
    tables = _corrupted(H100_FIELDS, H100_FIELDS)
    return st.one_of(
        st.tuples(tables, st.sampled_from((None, "gpu", "[gpu]"))).map(
            lambda pair: toml_table(*pair).encode()),
        random_bytes, not_utf8, nested("[", "]", "a = "), nested("{b=", "}", "a = "),
        st.just(b"bf16_tflops = 1e300\ncapacity_gb = 80\nhbm_bandwidth_tbps = 3\n"),
        st.just(b"capacity_gb = 1" + b"0" * 400 + b"\n"),
    )


TRACE_HEADER = "request_id,arrival_s,prompt_tokens,output_tokens"
cells = st.one_of(st.sampled_from(NUMBER_TEXTS), integers.map(str), floats.map(repr),
                  st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=8),
                  st.integers(1, 500).map(str))
rows = st.lists(cells, min_size=0, max_size=6).map(
    lambda row: ",".join(cell.replace('"', '""') if "," not in cell and "\n" not in cell
                         else '"' + cell.replace('"', '""') + '"' for cell in row))


def trace_csv_files() -> st.SearchStrategy[bytes]:
    """Bytes of a hostile trace CSV."""
    header = st.one_of(st.just(TRACE_HEADER), st.just("\ufeff" + TRACE_HEADER),
                       st.just(TRACE_HEADER + ",extra"), rows)
    documents = st.tuples(header, st.lists(rows, max_size=8)).map(
        lambda pair: ("\n".join([pair[0], *pair[1]]) + "\n").encode())
    return st.one_of(documents, random_bytes, not_utf8,
                     st.just((TRACE_HEADER + "\n1,0,9223372036854775808,5\n").encode()),
                     st.just((TRACE_HEADER + "\n1,0,5,1" + "0" * 309 + "\n").encode()))


def spec_toml_files(experiments: tuple[str, ...], keys: dict[str, tuple[str, ...]]
                    ) -> st.SearchStrategy[bytes]:
    """Bytes of a hostile grid spec: one experiment section with hostile axes or constants.

    ``keys`` maps each experiment to the keys its section may hold.
    """
    generators = st.one_of(
        st.fixed_dictionaries({"pow2": st.lists(integers, min_size=2, max_size=2)}),
        st.fixed_dictionaries({"range": st.lists(integers, min_size=2, max_size=2),
                               "step": integers}),
        st.fixed_dictionaries({"logspace": st.lists(integers, min_size=2, max_size=2),
                               "num": integers}),
        st.sampled_from(({"range": [1, 10**12]}, {"range": [0, 2**63]},
                         {"logspace": [1, 10**400], "num": 10**9},
                         {"pow2": [1, 10**400]}, {"range": [1, 1_048_576]})))
    entry_values = st.one_of(values, generators, st.just(""), st.just("all"),
                             st.sampled_from(EDGE_FLOATS), st.sampled_from(HUGE_INTEGERS))

    def section(experiment: str) -> st.SearchStrategy[str]:
        body = st.dictionaries(st.sampled_from(keys[experiment]), entry_values, max_size=3)
        return body.map(lambda entry: toml_table(entry, experiment))

    sections = st.sampled_from(experiments).flatmap(section)
    return st.one_of(sections.map(str.encode), random_bytes, not_utf8,
                     nested("[", "]", "name = "),
                     st.just(b"[decode]\nbatch = {range = [1, 1024]}\n"
                             b"context = {range = [1, 1048576]}\nmodel = \"all\"\n"),
                     st.just(b'[goodput]\ntrace = ""\n'), st.just(b'[goodput]\ntrace = "/"\n'),
                     st.just(b'[goodput]\ntrace = "/dev/null"\n'),
                     st.just(b"[decode]\nbudget = nan\n"),
                     st.just(b"[decode]\ncontext = [1" + b"0" * 400 + b"]\n"))


def parses_as_toml(data: bytes) -> bool:
    """True when ``data`` is a TOML document Python can read (for filtering in tests)."""
    try:
        tomllib.loads(data.decode())
    except (ValueError, RecursionError):
        return False
    return True


FLAG_TEXTS = st.one_of(st.sampled_from(NUMBER_TEXTS), integers.map(str),
                       floats.map(repr), st.integers(0, 4096).map(str))
"""Values of a number flag."""

CALC_FLAGS = {
    "decode": ("--tp", "--batch", "--context", "--budget", "--reserve-gb", "--page",
               "--allreduce-latency-us"),
    "memory": ("--tp", "--batch", "--context", "--budget", "--reserve-gb", "--page"),
    "tp": ("--batch", "--context", "--budget", "--reserve-gb", "--page",
           "--allreduce-latency-us"),
    "precision": ("--tp", "--batch", "--context", "--budget", "--reserve-gb", "--page"),
    "prefill": ("--prompt", "--chunk", "--decode-ms", "--c0-ms", "--c1-ms", "--deadline-ms",
                "--itl-ms", "--batch", "--context"),
    "prefix": ("--prefix", "--own", "--requests", "--block", "--tp"),
    "goodput": ("--batch-cap", "--ttft-ms", "--tpot-ms", "--c0-ms", "--c1-ms", "--tp",
                "--budget", "--reserve-gb", "--page"),
    "context": ("--tokens", "--a-ms", "--c-ms", "--window"),
}
"""Number flags of each ``calc`` experiment."""
SWITCHES = {"decode": ("--allreduce",), "tp": ("--allreduce",), "prefill": ("--decode-from",),
            "goodput": ("--memory-check",), "context": ("--from-model",)}
"""Switches each experiment takes."""


@st.composite
def cli_argv(draw, model_path: str, gpu_path: str, trace_path: str) -> list[str]:
    """``calc <experiment>`` with hostile number flags; the model, GPU and trace may be the
    files at the given paths (whose contents the caller draws)."""
    experiment = draw(st.sampled_from(tuple(CALC_FLAGS)))
    argv = ["calc", experiment]
    for flag in draw(st.lists(st.sampled_from(CALC_FLAGS[experiment]), max_size=3,
                              unique=True)):
        argv += [flag + "=" + draw(FLAG_TEXTS)]
    for switch in SWITCHES.get(experiment, ()):
        if draw(st.booleans()):
            argv.append(switch)
    if experiment != "prefix" and draw(st.booleans()):
        argv += ["--gpu", gpu_path]
    if draw(st.booleans()):
        argv += ["--model", model_path]
    if experiment == "goodput" and draw(st.booleans()):
        argv += ["--trace", trace_path]
    if draw(st.booleans()):
        argv.append("--json")
    return argv
