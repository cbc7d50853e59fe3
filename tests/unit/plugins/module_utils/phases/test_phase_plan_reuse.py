"""A plan read once per run: the next task asking for the same plan reuses it, unless what built it changed."""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from ansible_collections.phasekit.kube.plugins.module_utils.planning.inventory import Inventory
from ansible_collections.phasekit.kube.plugins.module_utils.planning.plan_reuse import (
    PlanStore,
    document_stamps,
    plan_key,
)
from ansible_collections.phasekit.kube.plugins.plugin_utils import plan as plan_source
from ansible_collections.phasekit.kube.plugins.plugin_utils.plan import PLAN_SOURCE_SPEC, plan_for_task

from phase_helpers import GROUPS, PARENTS, phase, plan

BUILD = {"name": "site", "only": [], "runnable": True}


def inventory(groups=None, parents=None, kubeconfigs=("child-a", "child-b")) -> Inventory:
    parents = PARENTS if parents is None else parents
    return Inventory(groups=groups or GROUPS, parent_of=parents.get, has_kubeconfig=lambda host: host in kubeconfigs)


def write_site(root: Path) -> Path:
    phases = root / "phases"
    phases.mkdir()
    (root / "manifests").mkdir()
    (phases / "10-base.yaml").write_text(yaml.safe_dump_all([
        phase("base", cluster="management", executor="apply", source="../manifests"),
        plan("site", "base", "children")]))
    (phases / "20-children.yaml").write_text(yaml.safe_dump(
        phase("children", cluster="ephemeral", executor="kubeconfig", options={"host": "workload"})))
    return phases


class CountingBuild:
    """A build that counts its calls, asks the inventory what a real build asks, and returns a plain value."""

    def __init__(self):
        self.calls = 0

    def __call__(self, inv: Inventory):
        self.calls += 1
        return {"parent": inv.parent_of("child-a"), "kubeconfig": inv.has_kubeconfig("child-b"), "build": self.calls}


def reuse(store: PlanStore, phases: Path, build: CountingBuild, inv=None, arguments=None):
    inv = inv or inventory()
    key = plan_key(arguments or BUILD, document_stamps([str(phases)], ""), inv)
    return store.reuse_or_build(key, inv, build)


def add_a_document_file(phases: Path) -> None:
    (phases / "30-more.yaml").write_text(yaml.safe_dump(phase("more", cluster="management", executor="apply",
                                                              source="../manifests")))


def grow_a_document(phases: Path) -> None:
    path = phases / "10-base.yaml"
    path.write_text(path.read_text() + "\n# a comment\n")


def touch_a_document(phases: Path) -> None:
    path = phases / "20-children.yaml"
    info = path.stat()
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns + 1_000_000))


# what changed between two tasks of a run -> the second builds the plan again
CHANGES = {
    "a document file added to a directory": (add_a_document_file, {}),
    "a document file's content changed": (grow_a_document, {}),
    "a document file touched (same content)": (touch_a_document, {}),
    "a host's kube_parent changed": (None, {"inv": inventory(parents={**PARENTS, "child-a": "target"})}),
    "a host's kube_kubeconfig removed": (None, {"inv": inventory(kubeconfigs=("child-a",))}),
    "a host added to a group": (None, {"inv": inventory(groups={**GROUPS,
                                                                "workload": ["child-a", "child-b", "lonely"]})}),
    "the selection changed": (None, {"arguments": {**BUILD, "only": ["base"]}}),
}


def test_the_same_documents_and_inventory_reuse_the_plan_built_first(tmp_path):
    phases, store, build = write_site(tmp_path), PlanStore(str(tmp_path / "store")), CountingBuild()
    first, reused_first = reuse(store, phases, build)
    second, reused_second = reuse(store, phases, build)
    assert (reused_first, reused_second, build.calls) == (False, True, 1)
    assert second == first


@pytest.mark.parametrize("change", CHANGES.values(), ids=CHANGES.keys())
def test_a_change_to_what_built_the_plan_builds_it_again(tmp_path, change):
    change_files, given = change
    phases, store, build = write_site(tmp_path), PlanStore(str(tmp_path / "store")), CountingBuild()
    reuse(store, phases, build)
    if change_files:
        change_files(phases)
    plan_again, reused = reuse(store, phases, build, **given)
    assert (reused, build.calls, plan_again["build"]) == (False, 2, 2)


def test_the_store_is_private_to_its_user(tmp_path):
    phases, store = write_site(tmp_path), PlanStore(str(tmp_path / "store"))
    reuse(store, phases, CountingBuild())
    files = list((tmp_path / "store").iterdir())
    assert len(files) == 1
    assert (tmp_path / "store").stat().st_mode & 0o077 == 0 and files[0].stat().st_mode & 0o077 == 0


# what cannot be kept -> no stamps: the plan is built every time
NOT_KEPT = {
    "a kustomization directory (kustomize reads elsewhere too)": "kustomized",
    "a path that does not exist (the build says so)": "missing",
}


@pytest.mark.parametrize("given", NOT_KEPT.values(), ids=NOT_KEPT.keys())
def test_documents_that_cannot_be_stamped_are_not_kept(tmp_path, given):
    (tmp_path / "kustomized").mkdir()
    (tmp_path / "kustomized" / "kustomization.yaml").write_text("resources: []\n")
    assert document_stamps([given], str(tmp_path)) is None


def test_a_plan_that_cannot_be_stored_is_built_each_time_without_error(tmp_path):
    phases, store = write_site(tmp_path), PlanStore(str(tmp_path / "store"))
    calls = []

    def unpicklable(_inventory):
        calls.append(1)
        return lambda: "a plan pickle cannot hold"

    reuse(store, phases, unpicklable)
    _plan, reused = reuse(store, phases, unpicklable)
    assert (reused, len(calls)) == (False, 2)
    assert not list((tmp_path / "store").glob("*.tmp"))


def test_an_unreadable_stored_plan_is_built_again(tmp_path):
    phases, store, build = write_site(tmp_path), PlanStore(str(tmp_path / "store")), CountingBuild()
    reuse(store, phases, build)
    stored = next((tmp_path / "store").iterdir())
    stored.write_bytes(pickle.dumps("x")[:3])
    _plan, reused = reuse(store, phases, build)
    assert (reused, build.calls) == (False, 2)


# Through the plan source of both actions: phase_plan's plan is the one a step's run_phases runs.
def task_plan(tmp_path, monkeypatch, **given):
    phases_dir = tmp_path / "site"
    phases_dir.mkdir(exist_ok=True)
    if not (phases_dir / "phases").exists():
        write_site(phases_dir)
    monkeypatch.setattr(plan_source, "plan_store", lambda: PlanStore(str(tmp_path / "store")))
    read = []
    real_read = plan_source.read_paths
    monkeypatch.setattr(plan_source, "read_paths", lambda *a, **k: read.append(a) or real_read(*a, **k))
    args = {**{name: rule.get("default") for name, rule in PLAN_SOURCE_SPEC.items()}, "src": ["phases"], **given}
    hostvars = {host: ({"kube_parent": PARENTS[host], "kube_kubeconfig": {"secret": {"name": host}}}
                       if host in PARENTS else {}) for host in GROUPS["all"]}
    task_vars = {"groups": GROUPS, "hostvars": hostvars, "playbook_dir": str(phases_dir)}
    action = SimpleNamespace(_loader=SimpleNamespace(get_basedir=lambda: "/not/used"))
    return plan_for_task(action, args, task_vars), len(read)


def run_list(built) -> list:
    return [(entry.name, entry.placement.hosts, entry.reason) for entry in built.phases]


def test_a_step_runs_the_plan_the_plan_task_read_without_reading_the_documents(tmp_path, monkeypatch):
    shown, reads_shown = task_plan(tmp_path, monkeypatch)
    ran, reads_ran = task_plan(tmp_path, monkeypatch)
    assert (reads_shown, reads_ran) == (1, 0)
    assert run_list(ran) == run_list(shown) and ran.name == "site"


def test_inline_documents_are_read_each_time_and_never_written(tmp_path, monkeypatch):
    documents = [phase("base", cluster="management", executor="apply",
                       source=str(tmp_path / "site" / "manifests")), plan("site", "base")]
    task_plan(tmp_path, monkeypatch, src=None, plan=documents)
    task_plan(tmp_path, monkeypatch, src=None, plan=documents)
    assert not (tmp_path / "store").exists()


def test_without_ansible_playbook_above_there_is_no_store():
    assert plan_source.plan_store() is None    # pytest's process is no Ansible worker
