"""The model: full names, order, inheritance, documents from files, directories and variables."""

from __future__ import annotations

import pytest
import yaml

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.planning.documents import read_paths
from ansible_collections.phasekit.kube.plugins.module_utils.planning.executors import executor_registry
from ansible_collections.phasekit.kube.plugins.module_utils.planning.inventory import Inventory
from ansible_collections.phasekit.kube.plugins.module_utils.planning.planner import build_plan

from phase_helpers import build, inventory, phase, plan, run_list

ECHO = {"argv": ["true"]}


def command(name, **spec):
    return {"name": name, "executor": "command", "options": ECHO, **spec}


TREE = [
    phase("foo", cluster="ephemeral", phases=[command("bar"), command("baz", phases=[command("deep")])]),
    phase("qux", cluster="target", executor="command", options=ECHO),
]


@pytest.mark.parametrize("documents, expected", [
    (TREE, ["foo", "foo/bar", "foo/baz", "foo/baz/deep", "qux"]),
    (list(reversed(TREE)), ["qux", "foo", "foo/bar", "foo/baz", "foo/baz/deep"]),
    (TREE + [plan("deploy", "qux", "foo")], ["qux", "foo", "foo/bar", "foo/baz", "foo/baz/deep"]),
    (TREE + [plan("deploy", "foo/baz", "qux")], ["foo/baz", "foo/baz/deep", "qux"]),
], ids=["depth-first-parent-before-children", "document-order", "plan-order-wins", "plan-entry-brings-descendants"])
def test_run_order(tmp_path, documents, expected):
    assert run_list(build(documents, tmp_path)) == expected


def test_children_inherit_cluster_and_may_override(tmp_path):
    documents = [phase("top", cluster="ephemeral", phases=[command("mine"), command("other", cluster="target")])]
    phases = {planned.phase.full_name: planned for planned in build(documents, tmp_path).phases}
    assert phases["top/mine"].placement.hosts == ["ephemeral"]
    assert phases["top/other"].placement.hosts == ["target"]
    assert phases["top"].placement.hosts == []          # a group phase runs nothing itself


@pytest.mark.parametrize("cluster, hosts", [
    ("target", ["target"]),
    ("management", ["ephemeral", "target"]),
    ("all", ["ephemeral", "target", "child-a", "child-b", "lonely"]),
], ids=["host", "group", "all"])
def test_cluster_names_host_or_group(tmp_path, cluster, hosts):
    result = build([phase("p", cluster=cluster, executor="command", options=ECHO)], tmp_path)
    assert result.phases[0].placement.hosts == hosts


def test_to_dict_is_what_the_role_consumes(tmp_path):
    (tmp_path / "tasks.yml").write_text("- ansible.builtin.debug: {}\n")
    result = build([phase("p", cluster="management", executor="tasks", source="tasks.yml",
                          description="run my tasks", options={"anything": [1, 2]})], tmp_path)
    assert result.phases[0].to_dict() == {
        "name": "p", "full_name": "p", "short_name": "p", "entry": None, "occurrence": None, "parent": None,
        "level": 0, "children": [], "description": "run my tasks",
        "cluster": "management", "hosts": ["ephemeral", "target"], "cluster_hosts": ["ephemeral", "target"],
        "parents": {}, "executor": "tasks", "source": str(tmp_path / "tasks.yml"), "options": {"anything": [1, 2]},
        "retries": 0, "delay": 5.0, "timeout": None, "origin": "plan document 1 (Phase p)", "selected": True, "reason": None,
        "rollout": None, "outputs": {}, "in_plans": [],
    }


def test_retries_delay_and_timeout_reach_the_runner(tmp_path):
    result = build([phase("p", cluster="target", executor="command", options=ECHO, retries=2, delay=0.5, timeout=90)],
                   tmp_path)
    shown = result.phases[0].to_dict()
    assert (shown["retries"], shown["delay"], shown["timeout"]) == (2, 0.5, 90.0)


def test_path_options_are_relative_to_the_document(tmp_path):
    result = build([phase("p", cluster="target", executor="command", options={"cmd": "ls", "chdir": "sub/dir"})],
                   tmp_path)
    assert result.phases[0].phase.options == {"cmd": "ls", "chdir": str(tmp_path / "sub/dir")}


def test_inline_objects_are_a_source(tmp_path):
    objects = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "demo"}}]
    result = build([phase("p", cluster="target", executor="apply", source=objects)], tmp_path)
    assert result.phases[0].to_dict()["source"] == objects


def write_documents(path, *documents):
    path.write_text(yaml.safe_dump_all(documents))


def test_directory_files_in_name_order_and_sources_relative_to_each_file(tmp_path):
    site = tmp_path / "site"
    (site / "phases").mkdir(parents=True)
    (site / "phases" / "tasks").mkdir()
    (site / "phases" / "tasks" / "t.yml").write_text("[]\n")
    write_documents(site / "phases" / "20-second.yaml", phase("second", cluster="target", executor="tasks",
                                                              source="tasks/t.yml"))
    write_documents(site / "phases" / "10-first.yml", phase("first", cluster="target", executor="command",
                                                            options=ECHO))
    (site / "phases" / "notes.txt").write_text("not a document")
    (site / "phases" / "manifests").mkdir()
    write_documents(site / "phases" / "manifests" / "cm.yaml", {"apiVersion": "v1", "kind": "ConfigMap"})
    documents = read_paths(["phases"], str(site))
    result = build_plan(documents, executors=executor_registry(), inventory=inventory())
    assert run_list(result) == ["first", "second"]
    assert result.phases[1].to_dict()["source"] == str(site / "phases" / "tasks" / "t.yml")
    assert result.phases[1].to_dict()["origin"] == "phases/20-second.yaml document 1 (Phase second)"


def test_several_paths_in_order(tmp_path):
    write_documents(tmp_path / "b.yaml", phase("b", cluster="target", executor="command", options=ECHO))
    write_documents(tmp_path / "a.yaml", phase("a", cluster="target", executor="command", options=ECHO))
    documents = read_paths(["b.yaml", "a.yaml"], str(tmp_path))
    assert run_list(build_plan(documents, executors=executor_registry(), inventory=inventory())) == ["b", "a"]


@pytest.mark.parametrize("files, paths, message", [
    ({}, ["missing.yaml"], r"^phase documents missing.yaml: no such file or directory"),
    ({"empty/.keep": ""}, ["empty"], r"^phase directory empty: no \*.yaml or \*.yml files"),
    ({"bad.yaml": "a: [1\n"}, ["bad.yaml"], r"^bad.yaml line 2 column 1: invalid YAML"),
], ids=["missing-path", "empty-directory", "invalid-yaml-names-line"])
def test_reading_errors(tmp_path, files, paths, message):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    with pytest.raises(PhasekitError, match=message):
        read_paths(paths, str(tmp_path))


def test_error_names_file_document_and_field(tmp_path):
    write_documents(tmp_path / "phases.yaml", phase("ok", cluster="target", executor="command", options=ECHO),
                    phase("bad", cluster="target", executor="aply", source="x"))
    documents = read_paths(["phases.yaml"], str(tmp_path))
    with pytest.raises(PhasekitError) as error:
        build_plan(documents, executors=executor_registry(), inventory=inventory())
    assert str(error.value) == ("phases.yaml document 2 (Phase bad) field spec.executor: unknown executor 'aply' "
                                "(did you mean 'apply'?); expected one of apply, command, container, helm, kubeconfig, tasks, wait")


def test_no_documents(tmp_path):
    with pytest.raises(PhasekitError, match="no phase documents"):
        build([], tmp_path)


class Untouchable(dict):
    """Host variables that fail when a value other than kube_parent is read (as a sops source would)."""

    def __getitem__(self, key):
        if key != "kube_parent":
            raise AssertionError(f"{key} was read")
        return super().__getitem__(key)

    def get(self, key, default=None):
        return self[key] if key in self else default


def test_inventory_from_task_vars_reads_only_names_and_parents():
    task_vars = {
        "groups": {"all": ["mgmt", "child"], "ungrouped": ["mgmt"], "children_of_mgmt": ["child"]},
        "hostvars": {"mgmt": Untouchable(kube_kubeconfig={"sops": "/x.enc.yaml"}),
                     "child": Untouchable(kube_parent="mgmt", kube_kubeconfig={"secret": {"name": "c"}})},
    }
    seen = Inventory.from_task_vars(task_vars)
    assert seen.hosts_for("children_of_mgmt") == ["child"]
    assert seen.hosts_for("mgmt") == ["mgmt"]
    assert seen.hosts_for("nowhere") is None
    assert (seen.parent_of("child"), seen.parent_of("mgmt"), seen.parent_of("unknown")) == ("mgmt", None, None)
    assert (seen.has_kubeconfig("child"), seen.has_kubeconfig("unknown")) == (True, False)


def test_each_entry_names_the_documents_plans_that_run_its_phase(tmp_path):
    """Plans that share a phase share what it applies (kube.ownership): a child phase counts as run by the plans
    that name its parent, a plan with a broken entry still counts for the phases it names."""
    documents = [phase("config", cluster="ephemeral", executor="apply", source=[],
                       phases=[{"name": "inner", "executor": "apply", "source": []}]),
                 phase("wide", cluster="ephemeral", executor="apply", source=[]),
                 plan("fleet", "config", "wide"), plan("mixed", "config/inner"), plan("broken", "wide", "nope")]
    result = build(documents, tmp_path, name="mixed")
    assert {p.phase.full_name: p.to_dict()["in_plans"] for p in result.phases} == {"config/inner": ["fleet", "mixed"]}
    result = build(documents, tmp_path, name="fleet")
    assert {p.phase.full_name: p.in_plans for p in result.phases} == {
        "config": ["fleet"], "config/inner": ["fleet", "mixed"], "wide": ["broken", "fleet"]}
