# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The executor modules depend on what they are given (``executors.context.HostWork``), never on the class that calls
them nor on the runner: an AST scan of ``plugins/module_utils/executors/`` for imports of ``running.builtin`` and
``running.runner`` (at the top or inside a function)."""

from __future__ import annotations

import ast
import os

import pytest

PLUGINS = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "..", "plugins"))
EXECUTORS_PACKAGE = os.path.join(PLUGINS, "module_utils", "executors")
ABOVE = ("running.builtin", "running.runner")  # the host work that calls the executors, and the runner that calls it


def imported(tree: ast.AST) -> list[str]:
    """Every module a module imports (``from a.b import c`` gives ``a.b`` and ``a.b.c``)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.append(node.module)
            found.extend(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def upward_imports(tree: ast.AST) -> list[str]:
    """The imports of a module that reach above the executors (each module once)."""
    return sorted({name for name in imported(tree) if reaches_above(name)})


def reaches_above(module: str) -> bool:
    return any(module.endswith(above) or f"{above}." in module for above in ABOVE)


def test_no_executor_module_imports_the_host_work_or_the_runner():
    offences = []
    for name in sorted(os.listdir(EXECUTORS_PACKAGE)):
        if not name.endswith(".py"):
            continue
        path = os.path.join(EXECUTORS_PACKAGE, name)
        with open(path, encoding="utf-8") as handle:
            offences.extend(f"{name}: imports {module}" for module in upward_imports(ast.parse(handle.read(), path)))
    assert not offences, "executor modules importing above them:\n" + "\n".join(offences)


PREFIX = "ansible_collections.phasekit.kube.plugins.module_utils"


@pytest.mark.parametrize("source, upward", [
    pytest.param(f"from {PREFIX}.running.builtin import capped", True, id="an_import_from_the_host_work_is_found"),
    pytest.param(f"from {PREFIX}.running.runner import Outcome", True, id="an_import_from_the_runner_is_found"),
    pytest.param(f"from {PREFIX}.running import builtin", True, id="the_host_work_module_imported_is_found"),
    pytest.param(f"def f():\n    import {PREFIX}.running.runner", True, id="a_late_import_is_found"),
    pytest.param(f"from {PREFIX}.executors.context import Outcome", False, id="the_context_is_left"),
    pytest.param(f"from {PREFIX}.running.record import bundle_digest", False, id="a_floor_below_the_runner_is_left"),
])
def test_the_scan(source, upward):
    assert bool(upward_imports(ast.parse(source))) is upward
