"""The Dockerfile builds and serves with commands that exist (no docker daemon needed).

Each instruction is one Docker knows; the base is ``python:3.11-slim``; every ``COPY`` source
exists and together they hold what ``pip install .`` needs (``pyproject.toml``, the readme it
names and every package it finds); every ``inference-lab`` command line parses with the real
parser; the health check is valid Python that asks for ``/liveness``.
"""

from __future__ import annotations

import ast
import json
import re
import shlex
import tomllib
from pathlib import Path

from cli.main import build_parser

REPO = Path(__file__).resolve().parents[1]
KNOWN = {"FROM", "ENV", "WORKDIR", "COPY", "RUN", "USER", "EXPOSE", "HEALTHCHECK", "ENTRYPOINT",
         "CMD", "ARG", "LABEL"}


def instructions() -> list[tuple[str, str]]:
    """``(INSTRUCTION, arguments)`` of the Dockerfile, continuation lines joined."""
    text = (REPO / "Dockerfile").read_text(encoding="utf-8")
    logical, current = [], ""
    for line in text.splitlines():
        if not current and (not line.strip() or line.lstrip().startswith("#")):
            continue
        current += line.rstrip().removesuffix("\\") + " "
        if not line.rstrip().endswith("\\"):
            logical.append(current.strip())
            current = ""
    assert not current, "the Dockerfile ends inside a continued line"
    return [(line.split(None, 1)[0], line.split(None, 1)[1] if " " in line else "")
            for line in logical]


def test_every_instruction_is_known_and_the_base_is_python_311_slim():
    steps = instructions()
    assert {name for name, _ in steps} <= KNOWN
    assert steps[0] == ("FROM", "python:3.11-slim")


def test_copy_sources_hold_what_pip_install_needs():
    copied = {shlex.split(args)[i] for name, args in instructions() if name == "COPY"
              for i in range(len(shlex.split(args)) - 1)}
    assert all((REPO / source).exists() for source in copied)
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert {"pyproject.toml", project["project"]["readme"]} <= copied
    packages = project["tool"]["setuptools"]["packages"]["find"]["include"]
    assert {pattern.rstrip("*") for pattern in packages} <= copied


def _lab_commands() -> list[list[str]]:
    steps = dict(reversed(instructions()))   # the first of each kind is enough here
    found = []
    for name, args in instructions():
        if name == "RUN":
            for part in re.split(r"&&|;", args):
                words = shlex.split(part)
                if words and words[0] == "inference-lab":
                    found.append(words[1:])
    entry = json.loads(steps["ENTRYPOINT"]) + json.loads(steps["CMD"])
    assert entry[0] == "inference-lab"
    found.append(entry[1:])
    return found


def test_every_inference_lab_command_parses():
    commands = _lab_commands()
    assert [c[0] for c in commands] == ["sweep", "serve"]
    for argv in commands:
        build_parser().parse_args(argv)      # exits (fails the test) on an unknown option
    serve = build_parser().parse_args(commands[-1] + ["--allow-websocket-origin", "x.org:8080"])
    assert serve.address == "0.0.0.0" and serve.port == 5006 and serve.liveness


def test_healthcheck_asks_for_liveness_in_valid_python():
    check = dict(instructions())["HEALTHCHECK"]
    code = shlex.split(check.split("CMD", 1)[1])[2]
    ast.parse(code)
    assert "/liveness" in code and ":5006/" in code
