"""Builders shared by the phase engine's unit tests."""

from __future__ import annotations

from ansible_collections.phasekit.kube.plugins.module_utils.planning.documents import inline_documents
from ansible_collections.phasekit.kube.plugins.module_utils.planning.executors import executor_registry
from ansible_collections.phasekit.kube.plugins.module_utils.planning.inventory import Inventory
from ansible_collections.phasekit.kube.plugins.module_utils.planning.model import API_VERSION
from ansible_collections.phasekit.kube.plugins.module_utils.planning.planner import RunEntry, build_plan

GROUPS = {
    "all": ["ephemeral", "target", "child-a", "child-b", "lonely"],
    "ungrouped": ["ephemeral", "target", "lonely"],
    "workload": ["child-a", "child-b"],
    "management": ["ephemeral", "target"],
    "empty": [],
}
PARENTS = {"child-a": "ephemeral", "child-b": "ephemeral"}

# A stand-in for phasekit.kube.apply's argument spec: enough to test option checking.
APPLY_SPEC = {
    "src": {"type": "path"},
    "definition": {"type": "raw"},
    "kubeconfig": {"type": "raw"},
    "context": {"type": "str"},
    "prune": {"type": "bool", "default": False},
    "timeout": {"type": "int", "default": 300},
    "field_manager": {"type": "str"},
}


def phase(name, **spec):
    return {"apiVersion": API_VERSION, "kind": "Phase", "metadata": {"name": name}, "spec": spec}


def plan(name, *phases, **spec):
    return {"apiVersion": API_VERSION, "kind": "PhasePlan", "metadata": {"name": name},
            "spec": {"phases": list(phases), **spec}}


WITH_KUBECONFIG = {"ephemeral", "target", "child-a", "child-b", "lonely"}


def inventory(groups=None, parents=None, with_kubeconfig=None):
    parents = PARENTS if parents is None else parents
    with_kubeconfig = WITH_KUBECONFIG if with_kubeconfig is None else with_kubeconfig
    return Inventory(groups=GROUPS if groups is None else groups, parent_of=parents.get,
                     has_kubeconfig=with_kubeconfig.__contains__)


def build(documents, base_dir, *, groups=None, parents=None, with_kubeconfig=None, **selection):
    """The plan for inline ``documents`` whose relative paths start at ``base_dir``."""
    return build_plan(inline_documents(documents, str(base_dir)), executors=executor_registry(apply_spec=APPLY_SPEC),
                      inventory=inventory(groups, parents, with_kubeconfig), **selection)


def run_list(plan_):
    return [planned.phase.full_name for planned in plan_.selected]


def run_entry(name, executor="apply", hosts=(), **fields):
    """A run entry as the planner makes it, from the fields a test cares about (``rollout``: as JSON)."""
    return RunEntry.from_dict({"name": name, "executor": executor, "hosts": list(hosts), **fields})
