# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""airshipctl lives behind one boundary: outside ``module_utils/airship/`` no module of ``plugins/`` names it.

An AST scan of ``plugins/``: no identifier (a name, attribute, function, class, argument, keyword or imported
module) and no string (docstrings aside: prose may say what is airshipctl-compatible) holds ``airship`` or one of
airshipctl's own document kinds and fields. ``Phase``, ``PhasePlan`` and ``ClusterMap`` are not listed: they are
the collection's own kinds and model too, and airshipctl's documents are told apart by their group
(``airshipit.org``), which is listed.

Left out, because users read them: the module doc stubs (``plugins/modules/``), ``doc_fragments/`` and every
plugin's ``DOCUMENTATION``/``EXAMPLES``/``RETURN`` (the inventory plugin's ``airship_cluster_map`` option). And the
one place that registers the bundled formats (``module_utils/formats.py``): dropping airshipctl support is
removing the package and its line there.
"""

from __future__ import annotations

import ast
import os
import re

import pytest

PLUGINS = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "..", "plugins"))
AIRSHIP_PACKAGE = os.path.join("module_utils", "airship")
REGISTRATION = os.path.join("module_utils", "formats.py")
READ_BY_USERS = ("modules", "doc_fragments")
DOC_STRINGS = frozenset({"DOCUMENTATION", "EXAMPLES", "RETURN"})
# the kinds' casing matters: clusterctl (the program) and kubeconfig (the file) are everyone's
CASED = re.compile(r"\b(KubernetesApply|GenericContainer|Clusterctl|ManifestMetadata|KubeConfig|BaremetalManager"
                   r"|BootConfiguration|IsoConfiguration|documentEntryPoint|executorRef)\b")


def foreign(text: str) -> bool:
    return "airship" in text.lower() or bool(CASED.search(text))


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring constants of a module, its classes and functions."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                found.add(id(first.value))
    return found


def _read_by_users(tree: ast.AST) -> set[int]:
    """The ids of the string constants bound to DOCUMENTATION, EXAMPLES or RETURN at module level."""
    found = set()
    for node in getattr(tree, "body", []):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id in DOC_STRINGS for t in node.targets):
            found.update(id(inner) for inner in ast.walk(node.value))
    return found


def _spelled(node) -> list[str]:
    """What a node spells: identifiers, imported module paths, or a string's text."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, ast.keyword):
        return [node.arg or ""]
    if isinstance(node, ast.alias):
        return [node.name, node.asname or ""]
    if isinstance(node, ast.ImportFrom):
        return [node.module or ""]
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    return []


def foreign_names(tree: ast.AST) -> list[str]:
    """Each place a module names airshipctl, as ``line: what``."""
    skipped = _docstrings(tree) | _read_by_users(tree)
    found = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        for text in _spelled(node):
            if foreign(text):
                found.append(f"{getattr(node, 'lineno', '?')}: {text.strip().splitlines()[0][:80]}")
    return found


def plugin_modules(plugins: str = PLUGINS) -> list[str]:
    paths = []
    for root, _dirs, files in os.walk(plugins):
        relative = os.path.relpath(root, plugins)
        if relative.split(os.sep, maxsplit=1)[0] in READ_BY_USERS or relative.startswith(AIRSHIP_PACKAGE):
            continue
        paths.extend(os.path.join(root, name) for name in files
                     if name.endswith(".py") and os.path.relpath(os.path.join(root, name), plugins) != REGISTRATION)
    return sorted(paths)


def parsed(path: str) -> ast.AST:
    with open(path, encoding="utf-8") as handle:
        return ast.parse(handle.read(), path)


def offences(plugins: str = PLUGINS) -> list[str]:
    """Every place a module outside the package names airshipctl, as ``module:line: what``."""
    return [f"{os.path.relpath(path, plugins)}:{use}" for path in plugin_modules(plugins) for use in foreign_names(parsed(path))]


def test_no_module_outside_the_airship_package_names_airshipctl():
    found = offences()
    assert not found, "airshipctl's names outside plugins/module_utils/airship/:\n" + "\n".join(found)


@pytest.mark.parametrize("source, named", [
    pytest.param("from x.airship.phases import read", True, id="an_import_of_the_package_is_found"),
    pytest.param("def read_airship_documents(): pass", True, id="a_function_named_after_it_is_found"),
    pytest.param('GROUP = "airshipit.org"', True, id="its_api_group_is_found"),
    pytest.param('kind == "KubernetesApply"', True, id="one_of_its_kinds_is_found"),
    pytest.param('option = get("airship_cluster_map")', True, id="an_option_named_after_it_is_found"),
    pytest.param('f"{where}: a {kind} of airshipctl"', True, id="a_message_naming_it_is_found"),
    pytest.param('def f():\n    """As airshipctl does."""', False, id="a_docstring_is_left"),
    pytest.param('DOCUMENTATION = "airship_cluster_map: ..."', False, id="a_plugins_documentation_is_left"),
    pytest.param('PLAN_KIND = "PhasePlan"', False, id="a_kind_the_collection_shares_is_left"),
    pytest.param('run(["clusterctl", "init"])', False, id="the_clusterctl_program_is_left"),
    pytest.param('kind = "kubeconfig"', False, id="a_kubeconfig_is_left"),
])
def test_the_scan(source, named):
    assert bool(foreign_names(ast.parse(source))) is named
