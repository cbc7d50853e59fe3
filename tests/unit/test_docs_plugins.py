# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The README's 'Included content' and docs/README.md's reference table name every plugin, role and playbook the
collection ships, and nothing else: a user reading either finds the same collection."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FQCN = re.compile(r"`phasekit\.kube\.([a-z_]+)`|(?<=, )`([a-z_]+)`")


def shipped() -> set[str]:
    names = {path.stem for path in (REPO / "plugins/modules").glob("*.py")}
    names |= {path.stem for path in (REPO / "plugins/lookup").glob("*.py")}
    names |= {path.stem for path in (REPO / "plugins/inventory").glob("*.py")}
    names |= {path.stem for path in (REPO / "plugins/filter").glob("*.yml")}   # each filter's documentation
    names |= {path.name for path in (REPO / "roles").iterdir() if path.is_dir()}
    names |= {path.stem for path in (REPO / "playbooks").glob("*.yml")}
    return names


def table_names(page: str, heading: str) -> set[str]:
    text = (REPO / page).read_text(encoding="utf-8")
    section = text[text.index(heading):]
    rows = [line for line in section.splitlines()[1:] if line.startswith("| ")]
    names = set()
    for row in rows:
        first_cell = row.split("|")[1]
        names |= {one or two for one, two in FQCN.findall(first_cell)}
    return names


@pytest.mark.parametrize("page, heading", [
    ("README.md", "## Included content"),
    ("docs/README.md", "## Reference"),
], ids=["readme", "docs-readme"])
def test_every_shipped_plugin_is_listed(page, heading):
    assert table_names(page, heading) == shipped()


UNESCAPED_MARKUP = re.compile(r"\b([CIB])\(")   # these end at the first ')': no escape inside them


def garbled_spans(text: str) -> list[str]:
    """C(), I() and B() spans that hold a '(': ansible-doc ends them at the first ')', and the rest leaks out."""
    found = []
    for match in UNESCAPED_MARKUP.finditer(text):
        end = text.find(")", match.end())
        if end != -1 and "(" in text[match.end():end]:
            found.append(text[match.start():end + 1])
    return found


DOC_FILES = sorted([*(REPO / "plugins/modules").glob("*.py"), *(REPO / "plugins/doc_fragments").glob("*.py"),
                    *(REPO / "plugins/lookup").glob("*.py"), *(REPO / "plugins/inventory").glob("*.py"),
                    *(REPO / "plugins/filter").glob("*.yml"), *(REPO / "roles").glob("*/meta/argument_specs.yml")],
                   key=str)


@pytest.mark.parametrize("text, expected", [
    ("C(key in (a,b))", ["C(key in (a,b)"]),
    ("C(a) and V(env in \\(a,b\\))", []),
    ("I(x) B(y (z))", ["B(y (z)"]),
], ids=["parenthesis-inside", "escaped-in-V", "bold"])
def test_garbled_spans_are_found(text, expected):
    assert garbled_spans(text) == expected


@pytest.mark.parametrize("path", DOC_FILES, ids=[str(path.relative_to(REPO)) for path in DOC_FILES])
def test_ansible_doc_markup_is_not_cut_short(path):
    assert garbled_spans(path.read_text(encoding="utf-8")) == []
