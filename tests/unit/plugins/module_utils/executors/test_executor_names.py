# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Adding an executor is one new file in ``executors/`` plus one registry line: no other module names one.

An AST scan of ``plugins/``: outside ``module_utils/executors/`` no module compares an executor's name against a
string literal of a registered executor (``phase["executor"] == "tasks"``, ``executor in ("apply", "wait")``), keeps a
table keyed by executor names, or binds an executor's name to a constant.
"""

from __future__ import annotations

import ast
import os

import pytest

PLUGINS = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "..", "plugins"))
EXECUTORS_PACKAGE = os.path.join(PLUGINS, "module_utils", "executors")
# airshipctl's translators name phasekit's executors in the phases they build; they move to their own package
# (issue 38, goal 3) and keep to dict values, which this scan does not read.
EXECUTOR_NAMES = frozenset({"apply", "wait", "helm", "kubeconfig", "command", "container", "tasks"})


def named_literals(node) -> set[str]:
    """The executor names a node spells as a string literal (or a tuple, list or set of them)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in EXECUTOR_NAMES:
        return {node.value}
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return set().union(*(named_literals(element) for element in node.elts)) if node.elts else set()
    return set()


def about_executor(node) -> bool:
    return "executor" in ast.unparse(node).lower()


def name_uses(tree: ast.AST) -> list[str]:
    """Each place a module branches on, keys by or binds an executor's name, as ``line: what``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            for operand in operands:
                others = [other for other in operands if other is not operand]
                if named_literals(operand) and any(about_executor(other) for other in others):
                    found.append(f"{node.lineno}: compares {ast.unparse(node)}")
                    break
        elif isinstance(node, ast.Dict):
            keyed = [key for key in node.keys if key is not None and named_literals(key)]
            if len(keyed) >= 2:
                found.append(f"{node.lineno}: a table keyed by executor names {sorted(map(ast.unparse, keyed))}")
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if node.value is not None and named_literals(node.value) and any(isinstance(t, ast.Name) and about_executor(t) for t in targets):
                found.append(f"{node.lineno}: binds {ast.unparse(node)}")
    return found


def plugin_modules() -> list[str]:
    paths = []
    for root, _dirs, files in os.walk(PLUGINS):
        if os.path.commonpath([root, EXECUTORS_PACKAGE]) == EXECUTORS_PACKAGE:
            continue
        paths.extend(os.path.join(root, name) for name in files if name.endswith(".py"))
    return sorted(paths)


def test_no_module_outside_executors_names_an_executor():
    offences = []
    for path in plugin_modules():
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read(), path)
        offences.extend(f"{os.path.relpath(path, PLUGINS)}:{use}" for use in name_uses(tree))
    assert not offences, "executor names outside plugins/module_utils/executors/:\n" + "\n".join(offences)


@pytest.mark.parametrize("source, named", [
    pytest.param('phase["executor"] == "tasks"', True, id="a_comparison_with_an_executor_name_is_found"),
    pytest.param('executor in ("apply", "wait")', True, id="a_membership_in_a_tuple_of_executor_names_is_found"),
    pytest.param('{"helm": 1, "command": 2}', True, id="a_table_keyed_by_executor_names_is_found"),
    pytest.param('TASKS_EXECUTOR = "tasks"', True, id="a_constant_bound_to_an_executor_name_is_found"),
    pytest.param('{"executor": "apply"}', False, id="a_phase_built_with_an_executor_name_as_value_is_left"),
    pytest.param('phase.executor = "command"', False, id="a_phase_given_its_executor_is_left"),
    pytest.param('action == "apply"', False, id="a_comparison_not_about_an_executor_is_left"),
    pytest.param('{"command": {"type": "list"}}', False, id="an_option_named_like_an_executor_is_left"),
])
def test_the_scan(source, named):
    assert bool(name_uses(ast.parse(source))) is named
