"""Every "§N" that cites docs/model.md — in the code, the tests and the docs — names a section
that exists, with the meaning the citing text gives it.

A renumbering once left six "§10" behind that meant another section; these checks find such a
reference by what surrounds it: the section number must be a ``## N.`` heading; a link's anchor
must be that heading's; a quoted subsection title after "§N" must be a ``###`` heading of §N;
"experiment K … docs/model.md §N" must cite experiment K's own section; and a module listed in
model.md's table of sections cites, in its docstring, its own section (or §0, the shared model
every experiment builds on). A "§" that cites another document (an arXiv report) is not
model.md's.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MODEL_MD = ROOT / "docs" / "model.md"
FOLDERS = ("lab", "sweeps", "apps", "cli", "tests", "benchmarks", "datasets", "docs")
TOP_FILES = ("README.md", "DEVELOPERS.md")
SUFFIXES = (".py", ".md", ".toml", ".txt", ".cfg", ".ipynb")
OTHER_DOCUMENT = re.compile(r"arXiv|technical report", re.I)
"""Words that, earlier on the same line, make a "§" another document's."""
REFERENCE = re.compile(r"§\s?(\d+)(?:\.(\d+))?")
SAID = re.compile(r"\bExperiment (\d+)\b[^.§\n]{0,80}?docs/model\.md §(\d+)")
"""A sentence about experiment K (its subject, capitalised) citing a section in passing."""


def sections() -> dict[int, str]:
    """Section number → heading text of every ``## N. …`` heading of model.md."""
    text = MODEL_MD.read_text(encoding="utf-8")
    return {int(n): title for n, title in re.findall(r"^## (\d+)\. (.+)$", text, flags=re.M)}


def subsections() -> dict[int, list[str]]:
    """Section number → the ``### …`` headings inside it."""
    found: dict[int, list[str]] = {}
    current = None
    for line in MODEL_MD.read_text(encoding="utf-8").splitlines():
        if match := re.match(r"^## (\d+)\. ", line):
            current = int(match.group(1))
            found[current] = []
        elif line.startswith("### ") and current is not None:
            found[current].append(line[4:].strip())
    return found


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def files() -> list[Path]:
    """The project's text files that may cite model.md."""
    found = [ROOT / name for name in TOP_FILES if (ROOT / name).is_file()]
    for folder in FOLDERS:
        found += [path for path in sorted((ROOT / folder).rglob("*"))
                  if path.suffix in SUFFIXES and path.is_file()
                  and not any(part.startswith(".") or part == "__pycache__"
                              for part in path.relative_to(ROOT).parts)]
    return found


def references(text: str) -> list[tuple[int, str | None, int]]:
    """``(section, subsection number or None, offset)`` of every "§N" or "§N.M" of ``text`` that
    cites model.md."""
    found = []
    for match in REFERENCE.finditer(text):
        line_start = text.rfind("\n", 0, match.start()) + 1
        if OTHER_DOCUMENT.search(text, line_start, match.start()):
            continue
        found.append((int(match.group(1)), match.group(2), match.start()))
    return found


def flat(text: str) -> str:
    """``text`` on one line: a line break with its indentation and comment or docstring marks
    becomes one space, so a citation broken over two lines reads as one."""
    return re.sub(r"\s*\n\s*(?:#+\s*|//\s*|\"\s*)?", " ", text)


def where(path: Path, text: str, offset: int) -> str:
    return f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, offset) + 1}"


@pytest.fixture(scope="module")
def texts() -> dict[Path, str]:
    return {path: path.read_text(encoding="utf-8", errors="replace") for path in files()
            if path != Path(__file__).resolve()}  # its own stale example below is on purpose


def test_the_files_are_read_and_cite_model_md(texts):
    cited = [path for path, text in texts.items() if references(text)]
    assert ROOT / "lab" / "models" / "goodput" / "simulate.py" in cited
    assert MODEL_MD in cited and len(cited) > 30


def test_every_reference_names_a_section(texts):
    known = sections()
    assert sorted(known) == list(range(len(known)))
    wrong = [f"{where(path, text, offset)} §{number}{'.' + sub if sub else ''}"
             for path, text in texts.items() for number, sub, offset in references(text)
             if number not in known or sub is not None]  # model.md numbers no subsections
    assert wrong == []


def test_every_link_to_a_section_goes_to_its_heading(texts):
    anchors = {number: slug(f"{number}. {title}") for number, title in sections().items()}
    link = re.compile(r"\[[^\]]*?§(\d+)[^\]]*\]\((?:[\w./]*model\.md)?#([\w-]+)\)")
    checked, wrong = 0, []
    for path, text in texts.items():
        for match in link.finditer(text):
            checked += 1
            number, anchor = int(match.group(1)), match.group(2)
            if anchors.get(number) != anchor:
                wrong.append(f"{where(path, text, match.start())}: §{number} → #{anchor}")
    assert checked > 10 and wrong == []


def test_a_quoted_subsection_is_a_heading_of_the_section_cited(texts):
    inside = subsections()
    quoted = re.compile(r"§(\d+)(?:'s)?,? \"([^\"]{4,})")
    checked, wrong = 0, []
    for path, text in texts.items():
        for match in quoted.finditer(flat(text)):
            number, title = int(match.group(1)), match.group(2).strip().rstrip(",;.)")
            checked += 1
            if not any(heading.lower().startswith(title.lower())
                       or title.lower().startswith(heading.lower())
                       for heading in inside.get(number, [])):
                wrong.append(f"{path.relative_to(ROOT)}: §{number} \"{title}\"")
    assert checked >= 5 and wrong == []


def test_experiment_k_cites_its_own_section(texts):
    experiments = {number for number, title in sections().items()
                   if f"(experiment {number})" in title}
    checked, wrong = 0, []
    for path, text in texts.items():
        for match in SAID.finditer(flat(text)):
            experiment, number = int(match.group(1)), int(match.group(2))
            if number in experiments:
                checked += 1
                if number != experiment:
                    wrong.append(f"{path.relative_to(ROOT)}: experiment {experiment} "
                                 f"cites §{number}")
    assert checked >= 3 and wrong == []


def listed_code() -> dict[str, int]:
    """Each path of model.md's table of sections (a file or a folder ending in ``/``) → its
    section, for the paths listed under one section only."""
    owners: dict[str, set[int]] = {}
    for line in MODEL_MD.read_text(encoding="utf-8").splitlines():
        if match := re.match(r"^\| \[§(\d+)\]", line):
            for path in re.findall(r"`([\w/]+(?:\.py|/))`", line.split("|")[3]):
                owners.setdefault(path, set()).add(int(match.group(1)))
    return {path: next(iter(numbers)) for path, numbers in owners.items() if len(numbers) == 1}


def test_a_listed_module_cites_its_own_section():
    listed = listed_code()
    assert listed["lab/models/prefill.py"] == 5 and listed["lab/served/"] == 11
    checked, wrong = 0, []
    for path in files():
        name = str(path.relative_to(ROOT))
        owner = next((number for listed_path, number in listed.items()
                      if name == listed_path or (listed_path.endswith("/")
                                                 and name.startswith(listed_path))), None)
        if owner is None or path.suffix != ".py":
            continue
        docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        for number, _, offset in references(docstring):
            checked += 1
            if number not in (owner, 0):
                wrong.append(f"{name} (§{owner}) cites §{number} in its docstring: "
                             f"{docstring[max(0, offset - 60):offset + 4]!r}")
    assert checked >= 10 and wrong == []


def test_the_checks_see_a_stale_reference():
    """A "§10" meaning the validity rules, as the renumbering left them, fails two checks."""
    text = ('Experiment 11\'s rows (docs/model.md §10); see [§10](model.md#12-validity-rules-and-'
            'reason-codes) and §10, "Range checks".')
    assert [number for number, _, _ in references(text)] == [10, 10, 10]
    assert references("DeepSeek-V3 technical report (arXiv:2412.19437), §2.2") == []
    assert SAID.search(text).groups() == ("11", "10")
    assert "Range checks" in subsections()[13] and "Range checks" not in subsections()[10]
    assert slug(f"10. {sections()[10]}") != "12-validity-rules-and-reason-codes"
