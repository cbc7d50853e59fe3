# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Every example of docs/architecture.md is true: what it names in backticks exists.

- a path (``plugins/module_utils/kube/apply.py``, ``kube/``, ``registry.py``, ``tasks/plan.yml``) is a file or
  directory of the repository, looked up from the root, ``plugins/``, ``plugins/module_utils/``, the plan role, the
  example site, or by its file name under ``plugins/``;
- ``module.name`` and ``Class.name`` (``readers.read_unit``, ``ApiSession.request``, ``helm/release.values_masks``)
  name a module or class of ``plugins/`` that defines that name; a dotted name whose first part is neither (a
  result variable, ``plan_result.flow.steps``) is not code and is not checked;
- ``phasekit.kube.<name>`` is a plugin, role or playbook of the collection;
- a class name (``BuiltinExecutors``) is defined in ``plugins/``, and a snake_case name with an underscore
  (``kind_of``, ``plan_host_results``) is a name or a string of ``plugins/`` or a word of the role and playbooks.

The page describes the layout after ``hack/split_phases.py``; until it has run, a path under ``planning/`` or
``running/`` is looked up where the script takes it from.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
from collections import defaultdict
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "architecture.md"
PLUGINS = REPO / "plugins"
LOOKUP_ROOTS = (REPO, PLUGINS, PLUGINS / "module_utils", REPO / "roles" / "plan", REPO / "roles" / "plan" / "tasks",
                REPO / "examples" / "site")

SPEC = importlib.util.spec_from_file_location("split_phases", REPO / "hack" / "split_phases.py")
SPLIT = importlib.util.module_from_spec(SPEC)
sys.modules["split_phases"] = SPLIT
SPEC.loader.exec_module(SPLIT)

FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
INLINE_CODE = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
PATH_LIKE = re.compile(r"^[\w.*/-]+$")
DOTTED = re.compile(r"^(?P<path>(?:[\w]+/)*)(?P<first>[A-Za-z_]\w*)\.(?P<rest>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)(?:\([^)]*\))?$")
CLASS_NAME = re.compile(r"^[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+$")
SNAKE = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)+$")
FILE_SUFFIXES = (".py", ".yml", ".yaml", ".md", ".txt")


def code_spans(markdown: str) -> list:
    """(line, text) of every inline code span outside fenced blocks."""
    spans, fence = [], None
    for number, line in enumerate(markdown.splitlines(), start=1):
        opening = FENCE.match(line)
        if opening and (fence is None or opening.group(1).startswith(fence)):
            fence = None if fence else opening.group(1)[:3]
            continue
        if fence is None:
            spans.extend((number, match.group(1)) for match in INLINE_CODE.finditer(line))
    return spans


def before_the_split(relative: str) -> str:
    """A path under planning/ or running/ as it is until hack/split_phases.py runs."""
    match = re.search(r"\b(planning|running)/(\w+)\.py$", relative)
    if match and SPLIT.PACKAGE_OF.get(match.group(2)) == match.group(1):
        return relative[:match.start()] + f"phases/{match.group(2)}.py"
    return re.sub(r"\b(planning|running)/?$", "phases/", relative)


def path_exists(text: str) -> bool:
    relative = text.rstrip("*").rstrip("/") or text
    for candidate in (relative, before_the_split(relative)):
        if any((root / candidate).exists() for root in LOOKUP_ROOTS):
            return True
        if "/" not in candidate and any(PLUGINS.rglob(candidate)):
            return True
    return False


class CodeIndex:
    """What plugins/ defines: modules by their last name, class members, every name and string."""

    def __init__(self):
        self.module_names = defaultdict(set)  # module stem -> names it defines at top level
        self.class_members = defaultdict(set)  # class name -> its methods, class attributes and self.attributes
        self.words = set()
        for path in PLUGINS.rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            stem = path.parent.name if path.stem == "__init__" else path.stem
            for node in tree.body:
                self.module_names[stem].update(defined_names(node))
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef):
                    for member in ast.walk(node):
                        if member is not node:
                            self.class_members[node.name].update(defined_names(member))
                        if isinstance(member, ast.Attribute) and isinstance(member.ctx, ast.Store):
                            self.class_members[node.name].add(member.attr)
                self.words.update(words_of(node))
        for path in [*(REPO / "roles").rglob("*.yml"), *(REPO / "playbooks").rglob("*.yml")]:
            self.words.update(re.findall(r"\w+", path.read_text(encoding="utf-8")))

    def defines(self, first: str, name: str) -> bool:
        return name in self.module_names.get(first, ()) or name in self.class_members.get(first, ())

    def knows(self, first: str) -> bool:
        return first in self.module_names or first in self.class_members


def defined_names(node: ast.AST) -> set:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return {name.id for target in targets for name in ast.walk(target) if isinstance(name, ast.Name)}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {alias.asname or alias.name for alias in node.names}
    return set()


def words_of(node: ast.AST) -> set:
    if isinstance(node, ast.Name):
        return {node.id}
    if isinstance(node, ast.Attribute):
        return {node.attr}
    if isinstance(node, ast.arg):
        return {node.arg}
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return set(re.findall(r"\w+", node.value))
    return defined_names(node)


def collection_names() -> set:
    names = {path.stem for path in PLUGINS.glob("*/*.py")}
    names.update(path.name for path in (REPO / "roles").iterdir())
    names.update(path.stem for path in (REPO / "playbooks").glob("*.yml"))
    return names


def untrue(span: str, index: CodeIndex) -> str | None:
    """Why a code span names nothing that exists, or None."""
    if span.startswith("phasekit.kube."):
        name = span[len("phasekit.kube."):]
        return None if name in collection_names() else f"no plugin, role or playbook {name}"
    dotted = DOTTED.match(span)
    if dotted and not span.endswith(FILE_SUFFIXES):
        if dotted.group("path") and not path_exists(dotted.group("path") + dotted.group("first") + ".py"):
            return f"no module {dotted.group('path')}{dotted.group('first')}.py"
        first, rest = dotted.group("first"), dotted.group("rest").split(".")
        if not index.knows(first):
            return None  # a result variable or a field path, not code
        if not index.defines(first, rest[0]):
            return f"{first} defines no {rest[0]}"
        missing = [name for name in rest[1:] if name not in index.words]
        return f"no {', '.join(missing)} in plugins/" if missing else None
    if PATH_LIKE.match(span) and ("/" in span or span.endswith(FILE_SUFFIXES)):
        return None if path_exists(span) else "no such file or directory"
    if CLASS_NAME.match(span):
        return None if index.knows(span) or span in index.words else "no such class in plugins/"
    if SNAKE.match(span):
        return None if span in index.words else "no such name in plugins/, roles/ or playbooks/"
    return None


@pytest.fixture(scope="module")
def index():
    return CodeIndex()


def test_every_named_thing_exists(index):
    spans = code_spans(DOC.read_text(encoding="utf-8"))
    assert len(spans) > 100  # the page was read
    assert [f"docs/architecture.md:{line}: `{span}`: {reason}" for line, span in spans
            for reason in [untrue(span, index)] if reason] == []


@pytest.mark.parametrize("span, expected", [
    ("plugins/module_utils/kube/apply.py", None),
    ("plugins/module_utils/kube/gone.py", "no such file or directory"),
    ("readers.read_unit", None),
    ("readers.read_nothing", "readers defines no read_nothing"),
    ("ApiSession.request", None),
    ("helm/release.values_masks", None),
    ("plan_result.flow.steps", None),
    ("BuiltinExecutors", None),
    ("NoSuchExecutors", "no such class in plugins/"),
    ("kind_of", None),
    ("no_such_function_here", "no such name in plugins/, roles/ or playbooks/"),
    ("phasekit.kube.run_phases", None),
    ("phasekit.kube.nothing", "no plugin, role or playbook nothing"),
    ("running/runner.py", None),
    ("planning/runner.py", "no such file or directory"),
], ids=["a-path-that-exists", "a-path-that-does-not", "a-module-function", "a-module-without-that-function",
        "a-class-method", "a-path-and-a-function", "a-result-variable-is-not-code", "a-class", "a-class-that-is-gone",
        "a-function-name", "a-name-nowhere", "a-plugin", "no-such-plugin", "a-module-in-its-package-after-the-split",
        "a-module-in-the-wrong-package"])
def test_rules(index, span, expected):
    assert untrue(span, index) == expected
