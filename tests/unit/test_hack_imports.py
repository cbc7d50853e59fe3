# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The layering of ``plugins/`` that docs/architecture.md declares (its "must not" column), checked on the tree with
hack/imports.py; and the tool itself on small trees.

A rule names the rooms it binds and the imports they must not make. Where the tree breaks a rule today the breaks
are listed exactly (``KNOWN``): a new one fails, and so does one that is gone (remove it from the list then).
"""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "hack" / "imports.py"
SPEC = importlib.util.spec_from_file_location("hack_imports", SCRIPT)
IMPORTS = importlib.util.module_from_spec(SPEC)
sys.modules["hack_imports"] = IMPORTS  # dataclasses look their module up
SPEC.loader.exec_module(IMPORTS)

PHASES = ("module_utils/phases", "module_utils/planning", "module_utils/running")  # before and after hack/split_phases.py
MODULE_UTILS_PACKAGES = ("module_utils/kube", "module_utils/kubeconfig", "module_utils/helm", "module_utils/inventory",
                         "module_utils/coordination", "module_utils/executors", "module_utils/airship",
                         "module_utils/records") + PHASES
# the parts of Ansible a module_utils package may use: what ships to modules (argument specs, validators, booleans)
ANSIBLE_MODULE_UTILS = "ansible.module_utils."


def is_ansible(name: str) -> bool:
    return name == "ansible" or name.startswith("ansible.")


def room_imports(drawing, room: str) -> list:
    """(importing module, imported name, imported room or None for outside) of every import a room makes."""
    rows = [(edge.source, edge.target, drawing.room_of(edge.target)) for edge in drawing.edges
            if drawing.room_of(edge.source) == room]
    return rows + [(edge.source, edge.target, None) for edge in drawing.outside if drawing.room_of(edge.source) == room]


def basename(module: str) -> str:
    return module.rpartition(".")[2]


# rule -> (rooms it binds, what each import must not be)
RULES = {
    "kube-imports-nothing-of-ansible-or-of-plans": (
        ("module_utils/kube",),
        lambda target, room: is_ansible(target) or room in PHASES + ("module_utils/executors", "module_utils/airship",
                                                                     "module_utils/inventory", "plugin_utils")),
    "helm-imports-nothing-of-ansible-or-of-plans": (
        ("module_utils/helm",),
        lambda target, room: is_ansible(target) or room in PHASES + ("module_utils/executors", "module_utils/airship",
                                                                     "module_utils/inventory", "plugin_utils")),
    "kubeconfig-imports-no-ansible-runtime-nor-plans": (
        ("module_utils/kubeconfig",),
        lambda target, room: (is_ansible(target) and not target.startswith(ANSIBLE_MODULE_UTILS))
        or room in PHASES + ("module_utils/executors", "plugin_utils")),
    "module-utils-packages-use-no-ansible-runtime": (
        MODULE_UTILS_PACKAGES,
        lambda target, room: is_ansible(target) and not target.startswith(ANSIBLE_MODULE_UTILS)),
    "module-utils-never-imports-the-glue-or-the-plugins": (
        MODULE_UTILS_PACKAGES,
        lambda target, room: room is not None and not room.startswith("module_utils")),
    "executors-do-not-import-running": (
        ("module_utils/executors",),
        lambda target, room: room == "module_utils/running"),
    "records-import-neither-running-nor-executors": (
        ("module_utils/records",),
        lambda target, room: room in ("module_utils/running", "module_utils/executors")),
    "planning-does-not-import-running": (
        ("module_utils/planning",),
        lambda target, room: room == "module_utils/running"),
    "the-core-does-not-import-airship": (
        tuple(room for room in MODULE_UTILS_PACKAGES if room != "module_utils/airship")
        + ("plugin_utils", "action", "inventory", "lookup", "filter", "modules"),
        lambda target, room: room == "module_utils/airship"),
}

# the breaks of today, as (rule, importing module, imported module's last name): the executors still take
# Outcome and a few constants from the runner (issue #38, goal 2: typed run entries, in progress on another branch)
KNOWN: set = set()   # none left: the executors take Outcome and the run's modes from executors/context.py


@pytest.fixture(scope="module")
def drawing():
    return IMPORTS.read_tree(REPO)


def breaks(drawing, rule: str) -> set:
    rooms, forbidden = RULES[rule]
    return {(rule, basename(source), basename(target))
            for room in rooms for source, target, target_room in room_imports(drawing, room)
            if forbidden(target, target_room)}


@pytest.mark.parametrize("rule", sorted(RULES), ids=sorted(RULES))
def test_layering(drawing, rule):
    assert breaks(drawing, rule) == {known for known in KNOWN if known[0] == rule}


def plans(drawing) -> list:
    """The rooms of plans: phases before hack/split_phases.py runs, planning and running after."""
    return [room for room in PHASES if room in drawing.rooms()]


# (lower rooms, higher rooms): every lower room's floor is below every higher room's
@pytest.mark.parametrize("lower, higher", [
    (("module_utils/kube", "module_utils/kubeconfig", "module_utils/helm"), ("plans",)),
    (("module_utils/errors.py", "module_utils/yaml_io.py"), ("module_utils/kube", "module_utils/kubeconfig")),
    (("module_utils/planning", "module_utils/executors"), ("module_utils/airship", "module_utils/running")),
    (("module_utils/records",), ("module_utils/executors", "module_utils/running")),
    (("plans", "module_utils/executors"), ("plugin_utils",)),
    (("plugin_utils",), ("action",)),
], ids=["clients-below-plans", "foundations-below-clients", "planning-and-executors-below-airship-and-running",
        "records-below-executors-and-running", "plans-below-the-glue", "glue-below-actions"])
def test_floors(drawing, lower, higher):
    floors = drawing.floors()

    def rooms(names):
        return [room for name in names for room in (plans(drawing) if name == "plans" else [name])]
    assert max(floors[room] for room in rooms(lower)) < min(floors[room] for room in rooms(higher))


def test_no_import_cycle_between_modules(drawing):
    assert drawing.module_cycles() == []


def test_only_formats_wires_airship(drawing):
    importers = {edge.source for edge in drawing.edges if drawing.room_of(edge.target) == "module_utils/airship"
                 and drawing.room_of(edge.source) != "module_utils/airship"}
    assert importers == {"module_utils.formats"}


def test_the_doc_states_every_rule():
    """The architecture doc's "must not" column names each rule by its words (the test ids are in the doc)."""
    doc = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert [rule for rule in sorted(RULES) if f"`{rule}`" not in doc] == []


def write_tree(root: Path, files: dict) -> Path:
    for path, text in files.items():
        target = root / "plugins" / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


P = "ansible_collections.phasekit.kube.plugins"


@pytest.mark.parametrize("files, expected", [
    ({"module_utils/a/__init__.py": "", "module_utils/a/x.py": f"from {P}.module_utils.b.y import f\n",
      "module_utils/b/__init__.py": "", "module_utils/b/y.py": f"from {P}.module_utils.a.x import g\n"},
     [["module_utils.a.x", "module_utils.b.y", "module_utils.a.x"]]),
    ({"module_utils/a/__init__.py": "", "module_utils/a/x.py": "from .y import f\n",
      "module_utils/a/y.py": "from . import x\n"},
     [["module_utils.a.x", "module_utils.a.y", "module_utils.a.x"]]),
    ({"module_utils/a/__init__.py": "", "module_utils/a/x.py": f"from {P}.module_utils.a.y import f\n",
      "module_utils/a/y.py": f"def late():\n    from {P}.module_utils.a import x\n"},
     []),
], ids=["a-cycle-across-packages", "a-cycle-of-relative-imports", "an-import-inside-a-function-makes-no-cycle"])
def test_module_cycles(tmp_path, files, expected):
    assert IMPORTS.read_tree(write_tree(tmp_path, files)).module_cycles() == expected


def test_floors_and_arrows(tmp_path):
    drawing = IMPORTS.read_tree(write_tree(tmp_path, {
        "module_utils/errors.py": "",
        "module_utils/low/__init__.py": "", "module_utils/low/x.py": f"from {P}.module_utils.errors import E\n",
        "action/a.py": f"from {P}.module_utils.low.x import f\nfrom {P}.module_utils.low import x\nimport yaml\n"}))
    assert drawing.floors() == {"action": 2, "module_utils/errors.py": 0, "module_utils/low": 1}
    assert dict(drawing.room_arrows()) == {("action", "module_utils/low"): 2, ("module_utils/low", "module_utils/errors.py"): 1}
    assert [edge.target for edge in drawing.outside] == ["yaml"]


def test_an_import_of_no_module_fails_loudly(tmp_path):
    write_tree(tmp_path, {"action/a.py": f"from {P}.module_utils.gone import f\n"})
    with pytest.raises(SystemExit, match=r"a.py:1: imports .*module_utils.gone.f, which is not a module of plugins/"):
        IMPORTS.read_tree(tmp_path)
