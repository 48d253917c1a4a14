"""The documentation in docs/ agrees with the code: sources.md with the catalogs, model.md with
the calculations, and every "docs/model.md §N" citation with a section that exists."""

from __future__ import annotations

import importlib.util
import re
import subprocess
from pathlib import Path

import param
import pytest

from lab.catalog import get_gpu, get_model, gpu_catalog, model_catalog
from lab.derivations.decode_steps import decode_steps, render_text
from lab.experiments import all_experiments
from lab.experiments.registry import count, count_words
from lab.points.decode_points import DecodeConfig, calc_decode

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
MODEL_MD = DOCS / "model.md"
CODE_DIRS = ("lab", "sweeps", "apps", "tests", "benchmarks", "datasets")


def _load_make_sources():
    spec = importlib.util.spec_from_file_location("make_sources", DOCS / "make_sources.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


make_sources = _load_make_sources()


def _code_files():
    for folder in CODE_DIRS:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix in (".py", ".toml", ".md", ".txt", ".cfg") and path.is_file():
                yield path


# -- sources.md ------------------------------------------------------------------------------

def test_sources_md_matches_the_catalogs():
    """Regenerate the page from the catalogs: it must equal the committed file."""
    current = (DOCS / "sources.md").read_text(encoding="utf-8")
    assert current == make_sources.render(), (
        "docs/sources.md is out of date; run python docs/make_sources.py")


def test_sources_md_lists_every_entry_with_its_source():
    text = (DOCS / "sources.md").read_text(encoding="utf-8")
    for entry in [*gpu_catalog().values(), *model_catalog().values()]:
        assert f"| `{entry.id}` |" in text
        assert f"- **`{entry.id}`** — " in text


def test_every_catalog_entry_has_an_evidence_level_and_a_checked_date():
    for entry in [*gpu_catalog().values(), *model_catalog().values()]:
        assert make_sources.evidence_levels(entry.source), entry.id
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", entry.checked), entry.id


def test_evidence_levels_are_read_from_the_source_text():
    levels = make_sources.evidence_levels
    assert levels("vendor page (P*: a copy); ml-eng (S); dense = sparse/2 (D)") == ("P*", "S", "D")
    assert levels("ROCm table (P: 1307.4); check (D)") == ("P", "D")
    assert levels("a compendium (S via ml-eng)") == ("S",)
    assert levels("HBM3e, 8 TB/s, DGX") == ()


def test_check_mode_reports_a_stale_page(tmp_path, monkeypatch, capsys):
    page = tmp_path / "sources.md"
    monkeypatch.setattr(make_sources, "OUTPUT", page)
    assert make_sources.main(["--check"]) == 1
    assert make_sources.main([]) == 0
    assert page.read_text(encoding="utf-8") == make_sources.render()
    assert make_sources.main(["--check"]) == 0
    page.write_text(page.read_text(encoding="utf-8").replace("989.4", "989.5"), encoding="utf-8")
    assert make_sources.main(["--check"]) == 1
    assert "out of date" in capsys.readouterr().err


# -- model.md --------------------------------------------------------------------------------

def _sections() -> dict[int, str]:
    """Section number → heading text of every ``## N. …`` heading of model.md."""
    text = MODEL_MD.read_text(encoding="utf-8")
    return {int(n): title for n, title in re.findall(r"^## (\d+)\. (.+)$", text, flags=re.M)}


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_model_md_has_a_section_per_experiment():
    """§0, then one section per registered experiment, then the validity rules and the units."""
    sections = _sections()
    assert sorted(sections) == list(range(count() + 3))
    for number in range(1, count() + 1):
        assert f"(experiment {number})" in sections[number]


def test_the_counts_in_prose_are_the_registrys():
    """README and model.md say how many experiments the registry holds ("Nine …")."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    words = count_words()
    assert readme.split("\n")[2].startswith(f"{words.capitalize()} interactive experiments ")
    assert f"## The {words} experiments\n" in readme
    assert f"every formula of the {words} experiments" in readme
    assert f"Each of the {words}\nexperiments" in MODEL_MD.read_text(encoding="utf-8")


def test_model_md_links_resolve():
    text = MODEL_MD.read_text(encoding="utf-8")
    anchors = {_slug(f"{n}. {title}") for n, title in _sections().items()}
    links = re.findall(r"\]\(#([^)]+)\)", text)
    assert links
    for link in links:
        assert link in anchors, link
    for target in re.findall(r"\]\(([\w.]+\.(?:md|ipynb))(?:#[^)]*)?\)", text):
        assert (DOCS / target).is_file(), target
    for page in (DOCS / "sources.md", DOCS / "notebook.ipynb", ROOT / "README.md"):
        for link in re.findall(r"model\.md#([\w-]+)", page.read_text(encoding="utf-8")):
            assert link in anchors, f"{page.name}: model.md#{link}"


def test_model_md_section_citations_exist():
    """Every ``docs/model.md §N`` in the code names a section of model.md."""
    sections = _sections()
    cited = []
    for path in _code_files():
        for number in re.findall(r"docs/model\.md §(\d+)", path.read_text(encoding="utf-8")):
            cited.append((path.relative_to(ROOT), int(number)))
    for where, number in cited:
        assert number in sections, f"{where} cites docs/model.md §{number}"


def test_model_md_acceptance_figures_match_the_calculation():
    """The §1 figures in model.md are the ones `calc decode` prints for the acceptance case."""
    text = MODEL_MD.read_text(encoding="utf-8")
    section = text.split("## 1. ", 1)[1].split("\n## 2. ", 1)[0]
    record = calc_decode(DecodeConfig(model="llama-3.1-8b", gpu="h100-sxm", batch=8,
                                      context=8192))
    printed = render_text(decode_steps(record, get_model("llama-3.1-8b"), get_gpu("h100-sxm")))
    figures = ("15.01 GB", "120.07 GFLOP", "4.48 ms", "0.12 ms", "8.59 GB", "34.36 GFLOP",
               "2.56 ms", "7.04 ms", "1,136 tok/s", "142 tok/s", "43.33 GB")
    for figure in figures:
        assert f"**{figure}**" in section, figure
        assert figure in printed, figure
    assert "7,504,658,432" in section and "7,504,658,432" in printed


@pytest.mark.parametrize("figure", ["1,079.04 ms", "134.88 ms", "1,367.04 ms", "42.72 ms",
                                    "1,362", "7,500", "81.8 %", "2,097,152"])
def test_model_md_worked_serving_cases_are_stated(figure):
    assert figure in MODEL_MD.read_text(encoding="utf-8")


def _section_text(number: int) -> str:
    text = MODEL_MD.read_text(encoding="utf-8")
    return text.split(f"\n## {number}. ", 1)[1].split("\n## ", 1)[0]


@pytest.mark.parametrize("cls", all_experiments(), ids=lambda cls: cls.slug)
def test_model_md_documents_every_input_of_every_experiment(cls):
    """Each experiment's section names its class, its headline and each of its inputs
    (experiments 2–4 share the decode inputs tabled in §1)."""
    section = _section_text(cls.number)
    assert f"`{cls.__name__}`" in section
    assert cls.headline in section
    documented = section + (_section_text(1) if cls.number <= 4 else "")
    for name in cls.input_names():
        assert f"`{name}`" in documented, f"{cls.__name__}.{name}"


_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?")


def _numbers(cell: str) -> list[float]:
    return [float(match.replace(",", "")) for match in _NUMBER.findall(cell)]


def _input_rows(section: str) -> dict[str, list[str]]:
    """Input-table rows naming one input: ``name → cells`` (the last two: bounds, default)."""
    rows = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        match = re.fullmatch(r"`(\w+)`", cells[0]) if line.startswith("| `") else None
        if match:
            rows[match.group(1)] = cells
    return rows


@pytest.mark.parametrize("cls", all_experiments(), ids=lambda cls: cls.slug)
def test_model_md_input_tables_match_the_parameters(cls):
    """Bounds and defaults in the input tables are those of the experiment's ``param`` inputs."""
    rows = _input_rows(_section_text(cls.number))
    if cls.number <= 4:
        rows = {**_input_rows(_section_text(1)), **rows}
    checked = 0
    for name in cls.input_names():
        if name not in rows:
            continue  # named in a shared row ("as §1"), checked through §1
        parameter = cls.param[name]
        bounds, default = rows[name][-2], rows[name][-1]
        if isinstance(parameter, param.Number):  # Integer too
            low, high = parameter.bounds
            assert _numbers(bounds)[:2] == [low, high], f"{name}: {bounds}"
            assert _numbers(default)[0] == parameter.default, f"{name}: {default}"
        elif isinstance(parameter, param.Selector) and isinstance(parameter.default, int):
            objects = list(parameter.objects)
            assert _numbers(bounds)[:len(objects)] == objects, f"{name}: {bounds}"
            assert _numbers(default) == [parameter.default], f"{name}: {default}"
        elif isinstance(parameter, param.Selector) and name in ("model", "gpu", "precision"):
            assert f"`{parameter.default}`" == default, f"{name}: {default}"
        elif isinstance(parameter, param.Boolean):
            assert default == ("on" if parameter.default else "off"), f"{name}: {default}"
        else:
            continue
        checked += 1
    assert checked >= 2


# -- no citations outside the repository -----------------------------------------------------

OUTSIDE = ("REFERENCE" + ".md", "EXPERIMENTS" + ".md", "../" + "shared", "/shared/" + "reference",
           "/shared/" + "spec", "/shared/" + "seed")
"""Names of documents outside the repository that code, tests and docs must not cite (spelled
in pieces so this file does not match itself)."""
CHECKED_PATHS = ("lab", "sweeps", "apps", "tests", "benchmarks", "datasets", "docs", "README.md",
                 "pyproject.toml")


def _repository_files() -> list[Path]:
    """Tracked and new (not ignored) files under :data:`CHECKED_PATHS`."""
    try:
        listing = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "--",
             *CHECKED_PATHS], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):  # not a git checkout: walk the folders
        return [p for name in CHECKED_PATHS for p in
                ([ROOT / name] if (ROOT / name).is_file() else (ROOT / name).rglob("*"))
                if p.is_file()]
    return [ROOT / line for line in listing.splitlines() if (ROOT / line).is_file()]


def test_no_file_cites_documents_outside_the_repository():
    files = _repository_files()
    assert any(path.name == "decode.py" for path in files)
    offending = []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:  # images and other binary files
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            if any(name in line for name in OUTSIDE):
                offending.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not offending, "cite docs/model.md or docs/sources.md instead:\n" + "\n".join(offending)


def test_sources_md_lists_the_moe_models_apart():
    """The catalog's mixture-of-experts entries are on the page, in their own section after the
    dense ones."""
    from lab.catalog.lookup import moe_model_catalog

    text = (DOCS / "sources.md").read_text(encoding="utf-8")
    shipped, moe = text.split("## Mixture-of-experts models\n")
    for entry in moe_model_catalog().values():
        assert f"| `{entry.id}` |" in moe and f"| `{entry.id}` |" not in shipped
        assert f"- **`{entry.id}`** — " in moe
        assert make_sources.evidence_levels(entry.source), entry.id
    assert "| 671,026,419,200 | 37,552,297,472 | 36,625,618,432 | 70,272 |" in moe
