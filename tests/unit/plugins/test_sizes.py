# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Small functions and classes (issue 38): an AST scan of ``plugins/`` that no function is over 50 lines and no
class over 250 (from its ``def``/``class`` line to its last, docstring and comments included).

The few that were over when the rule came are listed with their size then as a ceiling: they may only shrink
(lower the ceiling when one does, and drop it once it is within the rule)."""

from __future__ import annotations

import ast
import os

import pytest

PLUGINS = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "plugins"))
MAX_FUNCTION, MAX_CLASS = 50, 250
# path under plugins/ and qualified name -> the most lines it may have until it is split
CEILINGS = {
}


def sized(tree: ast.AST, prefix: str = "") -> list[tuple[str, str, int]]:
    """Every class and function of a module (nested ones too) as (qualified name, "class"/"function", lines)."""
    found = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            name = f"{prefix}{node.name}"
            kind = "class" if isinstance(node, ast.ClassDef) else "function"
            found.append((name, kind, node.end_lineno - node.lineno + 1))
            found.extend(sized(node, f"{name}."))
        else:
            found.extend(sized(node, prefix))
    return found


def too_big(tree: ast.AST, where: str, ceilings: dict) -> list[str]:
    """What in a module is over the rule (or over its ceiling), as ``where:name: n lines (at most m)``."""
    offences = []
    for name, kind, lines in sized(tree):
        limit = ceilings.get(f"{where}:{name}", MAX_CLASS if kind == "class" else MAX_FUNCTION)
        if lines > limit:
            offences.append(f"{where}:{name}: {lines} lines (at most {limit})")
    return offences


def plugin_trees():
    for root, _dirs, files in os.walk(PLUGINS):
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(root, name)
                with open(path, encoding="utf-8") as handle:
                    yield os.path.relpath(path, PLUGINS).replace(os.sep, "/"), ast.parse(handle.read(), path)


def test_no_function_over_50_lines_and_no_class_over_250():
    offences = [offence for where, tree in plugin_trees() for offence in too_big(tree, where, CEILINGS)]
    assert not offences, "too big (split it):\n" + "\n".join(offences)


def test_every_ceiling_still_names_something_over_the_rule():
    """A ceiling goes once what it names is within the rule (or gone): the allow-list only shrinks."""
    found = {f"{where}:{name}": (kind, lines) for where, tree in plugin_trees() for name, kind, lines in sized(tree)}
    stale = [key for key in CEILINGS
             if key not in found or found[key][1] <= (MAX_CLASS if found[key][0] == "class" else MAX_FUNCTION)]
    assert not stale, "ceilings no longer needed (drop them):\n" + "\n".join(stale)


BIG_FUNCTION = "def f():\n" + "    x = 1\n" * 50
BIG_CLASS = "class C:\n" + "    x = 1\n" * 250
BIG_METHOD = "class C:\n    def f(self):\n" + "        x = 1\n" * 50


@pytest.mark.parametrize("source, ceilings, over", [
    pytest.param(BIG_FUNCTION, {}, ["m.py:f: 51 lines (at most 50)"], id="a_function_over_50_lines_is_found"),
    pytest.param("def f():\n" + "    x = 1\n" * 49, {}, [], id="a_function_of_50_lines_is_left"),
    pytest.param(BIG_CLASS, {}, ["m.py:C: 251 lines (at most 250)"], id="a_class_over_250_lines_is_found"),
    pytest.param(BIG_METHOD, {}, ["m.py:C.f: 51 lines (at most 50)"], id="a_method_is_measured_too"),
    pytest.param(BIG_FUNCTION, {"m.py:f": 51}, [], id="a_listed_one_within_its_ceiling_is_left"),
    pytest.param(BIG_FUNCTION, {"m.py:f": 50}, ["m.py:f: 51 lines (at most 50)"], id="a_listed_one_over_its_ceiling_is_found"),
])
def test_the_scan(source, ceilings, over):
    assert too_big(ast.parse(source), "m.py", ceilings) == over
