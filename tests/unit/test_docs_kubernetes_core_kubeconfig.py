# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The migration guide maps kubernetes.core's kubeconfig module (6.5) option by option: every option and suboption
of its DOCUMENTATION (vendored as tests/fixtures/kubernetes.core/kubeconfig-module-options.yml) has a row, every
choice of an option with choices has one, no row names an option that module lacks, and a row that says "no
equivalent" says what to do instead."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
GUIDE = REPO / "docs" / "migrating-from-kubernetes-core.md"
OPTIONS = REPO / "tests" / "fixtures" / "kubernetes.core" / "kubeconfig-module-options.yml"
HEADING = "## `kubeconfig` (kubernetes.core 6.5) to `phasekit.kube.kubeconfig`"
FIRST_CODE = re.compile(r"`([^`]+)`")


def option_paths(options: dict, prefix: str = "") -> dict[str, dict]:
    """Every option by its path as the guide writes it: ``clusters[].cluster.server`` (``[]``: an entry of a list)."""
    paths = {}
    for name, spec in options.items():
        path = prefix + name
        paths[path] = spec
        if spec.get("suboptions"):
            paths.update(option_paths(spec["suboptions"], path + ("[]." if spec.get("type") == "list" else ".")))
    return paths


def guide_rows() -> list[list[str]]:
    """The cells of the section's table rows (the header and its rule left out)."""
    text = GUIDE.read_text()
    assert HEADING in text, f"{GUIDE.name}: no section {HEADING!r}"
    section = text.split(HEADING, 1)[1].split("\n## ", 1)[0]
    rows = [[cell.strip() for cell in line.strip().strip("|").split(" | ")]
            for line in section.splitlines() if line.startswith("| ")]
    return rows[1:]


def mapped() -> dict[str, list[str]]:
    """The row of each kubernetes.core option (the first code span of its first cell: ``path`` or ``path: choice``)."""
    rows = {}
    for cells in guide_rows():
        first = FIRST_CODE.search(cells[0])
        if first:
            rows[first.group(1)] = cells
    return rows


PATHS = option_paths(yaml.safe_load(OPTIONS.read_text())["options"])


@pytest.mark.parametrize("path", sorted(PATHS))
def test_every_option_has_a_row(path):
    assert path in mapped(), f"{GUIDE.name} ({HEADING}): no row for kubernetes.core.kubeconfig's {path}"


@pytest.mark.parametrize("path, choice", sorted((path, choice) for path, spec in PATHS.items()
                                                for choice in spec.get("choices") or []))
def test_every_choice_has_a_row(path, choice):
    """A choice is mapped once for every option of that name (the sections' ``behavior`` take the same values)."""
    leaf = path.rsplit(".", 1)[-1]
    assert any(key.partition(": ")[0].rsplit(".", 1)[-1] == leaf and key.partition(": ")[2] == choice
               for key in mapped()), f"{GUIDE.name} ({HEADING}): no row for {path}: {choice}"


def test_no_row_names_an_option_the_module_lacks():
    assert sorted(key for key in mapped() if key.partition(": ")[0] not in PATHS) == []


def test_a_row_without_an_equivalent_says_what_to_do_instead():
    bare = [cells[0] for cells in mapped().values()
            if "no equivalent" in cells[1] and (len(cells) < 3 or not cells[2].strip())]
    assert bare == []
