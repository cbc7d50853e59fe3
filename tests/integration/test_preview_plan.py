# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The plan-wide preview (issue #40): a check-mode run ends with what every phase would add, change and destroy on
each cluster, and the totals as ``terraform plan`` says them; ``plan_report_json`` carries the same; then the real
run does exactly what the preview listed.

The plan, on a cluster that holds none of it: ``crds`` (a CRD and a Namespace), ``things`` (a Gadget and two
ConfigMaps, pruned as an ApplySet), ``ready`` (a wait on a ConfigMap and the Namespace that ``things`` and ``crds``
bring), ``seed`` (a command that writes a marker file). A second version drops a ConfigMap and changes another:
its preview lists the prune and the changed field. Each test uses its own API group and namespaces: the clusters are
shared.
"""

from __future__ import annotations

import json
import re
import uuid

import pytest
import yaml

from conftest import one_cluster_site, summary_text
from test_preview import API, CLUSTER, configmap, crd, gadget

PLAN_LINE = re.compile(r"^Plan: (\d+) to add, (\d+) to change, (\d+) to destroy\.", re.MULTILINE)


def documents(group: str, namespace: str, marker, configmaps: dict) -> list:
    """The plan: ``configmaps`` (name -> value) are the ConfigMaps of ``things``, besides its Gadget."""
    def phase(name, executor, source=None, **options):
        spec = {"cluster": CLUSTER, "executor": executor, "options": options}
        if source is not None:
            spec["source"] = source
        return {"apiVersion": API, "kind": "Phase", "metadata": {"name": name}, "spec": spec}

    things = [gadget(group, namespace, size=1)] + [dict(configmap(namespace, value), metadata={
        "name": name, "namespace": namespace}) for name, value in configmaps.items()]
    return [phase("crds", "apply", [crd(group), {"apiVersion": "v1", "kind": "Namespace",
                                                 "metadata": {"name": namespace}}]),
            phase("things", "apply", things, prune=True, namespace=namespace),
            phase("ready", "wait", [configmap(namespace, "v"), {"apiVersion": "v1", "kind": "Namespace",
                                                                "metadata": {"name": namespace}}],
                  namespace=namespace, timeout=30),
            phase("seed", "command", argv=["touch", str(marker)], changed_when="never"),
            {"apiVersion": API, "kind": "PhasePlan", "metadata": {"name": "site"},
             "spec": {"phases": ["crds", "things", "ready", "seed"]}}]


@pytest.fixture()
def site(clusters, tmp_path, collections_path):
    target = clusters[CLUSTER]
    token = uuid.uuid4().hex[:6]
    records = f"pk-plan-records-{token}"
    target.kubectl("create", "namespace", records)
    run, write = one_cluster_site(target, tmp_path / "site", records, collections_path, "-e", "plan_name=site")
    run.group, run.namespace, run.write, run.marker = f"p{token}.example.com", f"pk-plan-{token}", write, \
        tmp_path / "seeded"
    yield run
    for kind, name in (("namespace", run.namespace), ("namespace", records), ("crd", f"gadgets.{run.group}")):
        target.kubectl("delete", kind, name, "--wait=false", check=False)


def report(site, tmp_path, name: str, *args) -> tuple[str, dict]:
    path = tmp_path / f"{name}.json"
    rc, output = site("-e", f"plan_report_json={path}", *args)
    assert rc == 0, output
    return output, json.loads(path.read_text())


def by_phase(document: dict) -> dict:
    return {entry["phase"]: entry for entry in document["results"]}


def objects(entry: dict) -> list[tuple[str, str]]:
    return sorted((one["action"], one["object"]) for one in entry["changes"]["objects"])


def test_a_preview_ends_with_the_plan_and_the_run_does_what_it_listed(clusters, site, tmp_path):
    target, group, namespace = clusters[CLUSTER], site.group, site.namespace
    site.write(documents(group, namespace, site.marker, {"c1": "v", "old": "x"}))

    output, preview = report(site, tmp_path, "preview", "--check")
    phases = by_phase(preview)
    assert objects(phases["crds"]) == sorted([("add", f"CustomResourceDefinition gadgets.{group}"),
                                              ("add", f"Namespace {namespace}")])
    assert objects(phases["things"]) == sorted([("add", f"Gadget {namespace}/g1"), ("add", f"ConfigMap {namespace}/c1"),
                                                ("add", f"ConfigMap {namespace}/old")])
    # the wait previews what earlier phases would create: no failure, nothing waited for
    assert phases["ready"]["result"] == "ok", output
    assert phases["ready"]["changes"]["note"] == ("would wait for 2 object(s) (2 of them created or changed by "
                                                  "earlier phases of this preview)"), output
    assert phases["seed"]["changes"]["note"] == f"would run: touch {site.marker}", output
    assert not site.marker.exists()                    # a command does not run in a preview
    assert preview["changes"] == {"add": 5, "change": 0, "destroy": 0, "incomplete": [], "known_after_run": []}
    assert PLAN_LINE.findall(output) == [("5", "0", "0")], output
    assert f"  + ConfigMap {namespace}/old" in output, output
    assert target.kubectl("get", "namespace", namespace, check=False).returncode != 0   # nothing was written

    output, applied = report(site, tmp_path, "run")
    assert "Plan:" not in output, output                # a real run has no preview
    ran = by_phase(applied)
    for name in ("crds", "things"):                     # the run changed as many objects as the preview listed
        assert ran[name]["objects_changed"] == len(phases[name]["changes"]["objects"]), output
    assert ran["ready"]["result"] == "ok" and site.marker.exists(), output
    assert target.get_json("configmap", "old", "-n", namespace)["data"] == {"k": "x"}

    # the second version drops a ConfigMap and changes another: the preview lists the prune and the field
    site.write(documents(group, namespace, site.marker, {"c1": "w"}))
    output, preview = report(site, tmp_path, "preview2", "--check")
    phases = by_phase(preview)
    assert objects(phases["crds"]) == [] and objects(phases["things"]) == [
        ("change", f"ConfigMap {namespace}/c1"), ("destroy", f"ConfigMap {namespace}/old")], output
    changed = [one for one in phases["things"]["changes"]["objects"] if one["action"] == "change"]
    assert changed[0]["fields"] == ["data.k"], output
    assert phases["ready"]["changes"]["note"] == ("would wait for 2 object(s) (1 of them created or changed by "
                                                  "earlier phases of this preview)"), output   # c1, by things
    assert preview["changes"] == {"add": 0, "change": 1, "destroy": 1, "incomplete": [], "known_after_run": []}
    assert PLAN_LINE.findall(output) == [("0", "1", "1")], output
    assert f"  ~ ConfigMap {namespace}/c1: data.k" in output and f"  - ConfigMap {namespace}/old" in output, output
    assert target.get_json("configmap", "old", "-n", namespace)["data"] == {"k": "x"}   # still there

    output, applied = report(site, tmp_path, "run2")
    assert by_phase(applied)["things"]["objects_changed"] == 2, output
    assert target.kubectl("get", "configmap", "old", "-n", namespace, check=False).returncode != 0   # pruned
    assert target.get_json("configmap", "c1", "-n", namespace)["data"] == {"k": "w"}


def test_a_wait_preview_names_what_nothing_would_create_and_does_not_fail(clusters, site, tmp_path):
    group, namespace = site.group, site.namespace
    plan = documents(group, namespace, site.marker, {"c1": "v"})
    plan[2]["spec"]["source"].append(dict(configmap(namespace, "v"), metadata={"name": "nobody",
                                                                               "namespace": namespace}))
    plan[2]["spec"]["source"].append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    site.write(plan)
    output, preview = report(site, tmp_path, "preview", "--check")
    ready = by_phase(preview)["ready"]
    assert ready["result"] == "ok", output
    assert ready["changes"]["note"] == (
        f"would wait for 4 object(s) (2 of them created or changed by earlier phases of this preview; 1 not there "
        f"now and created by no earlier apply of this preview: ConfigMap {namespace}/nobody)"), output


def test_status_ends_with_the_same_plan(clusters, site, tmp_path):
    site.write(documents(site.group, site.namespace, site.marker, {"c1": "v"}))
    output, status = report(site, tmp_path, "status", "-e", "plan_action=status")
    assert status["changes"] == {"add": 4, "change": 0, "destroy": 0, "incomplete": [], "known_after_run": []}, output
    assert PLAN_LINE.findall(output) == [("4", "0", "0")], output
    assert not site.marker.exists()


def write_chart(root, group: str):
    """A chart whose objects need what phase ``crds`` brings: a Gadget of its CRD and a ConfigMap, both in the
    release's namespace (the plan's)."""
    (root / "templates").mkdir(parents=True)
    (root / "Chart.yaml").write_text("apiVersion: v2\nname: gadgets\nversion: 0.1.0\n")
    (root / "templates" / "objects.yaml").write_text(f"""\
apiVersion: {group}/v1
kind: Gadget
metadata:
  name: {{{{ .Release.Name }}}}-g
spec:
  size: 2
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{{{ .Release.Name }}}}-cm
data:
  k: v
""")
    return root


def test_helm_phases_preview_against_what_earlier_phases_would_create(clusters, site, tmp_path):
    target, group, namespace = clusters[CLUSTER], site.group, site.namespace
    chart = write_chart(tmp_path / "chart", group)

    def phase(phase_name, executor, source, **options):
        return {"apiVersion": API, "kind": "Phase", "metadata": {"name": phase_name},
                "spec": {"cluster": CLUSTER, "executor": executor, "source": source, "options": options}}

    site.write([phase("crds", "apply", [crd(group), {"apiVersion": "v1", "kind": "Namespace",
                                                     "metadata": {"name": namespace}}]),
                phase("rendered", "helm", str(chart), helm_mode="apply", name="r1", release_namespace=namespace),
                phase("release", "helm", str(chart), name="r2", release_namespace=namespace),
                {"apiVersion": API, "kind": "PhasePlan", "metadata": {"name": "site"},
                 "spec": {"phases": ["crds", "rendered", "release"]}}])

    output, preview = report(site, tmp_path, "preview", "--check")
    phases = by_phase(preview)
    # the rendered chart is previewed against the CRD and namespace phase crds would create
    assert objects(phases["rendered"]) == sorted([("add", f"Gadget {namespace}/r1-g"),
                                                  ("add", f"ConfigMap {namespace}/r1-cm")]), output
    assert f"{CLUSTER}: would create Gadget {namespace}/r1-g: not checked by the server" in output, output
    # a release helm installs: helm decides on its objects; the preview says what helm would do
    assert phases["release"]["changes"]["note"] == f"release {namespace}/r2: would be installed", output
    assert PLAN_LINE.findall(output) == [("4", "0", "0")], output
    assert target.kubectl("get", "namespace", namespace, check=False).returncode != 0

    output, applied = report(site, tmp_path, "run")
    ran = by_phase(applied)
    assert ran["rendered"]["objects_changed"] == 2 and ran["release"]["result"] == "changed", output
    assert target.get_json(f"gadgets.{group}", "r1-g", "-n", namespace)["spec"]["size"] == 2
    assert target.get_json("configmap", "r2-cm", "-n", namespace)["data"] == {"k": "v"}   # helm installed r2


def test_a_cluster_whose_kubeconfig_the_run_makes_is_known_after_the_run(clusters, site, tmp_path):
    """Cluster API's flow: phase ``publish`` writes the child's kubeconfig as a Secret on target, phase ``adopt``
    makes it the child's kubeconfig, phase ``things`` applies on the child. On a target without that Secret the
    preview neither waits for it nor fails: the child's phases are known after the run, said per phase and in the
    totals; the real run then does them, and a preview after it reads the child's cluster."""
    target, child_cluster, namespace = clusters[CLUSTER], clusters["ephemeral"], site.namespace
    secret_name = f"child-kubeconfig-{site.namespace}"
    flat = child_cluster.kubectl("config", "view", "--raw", "--flatten", "--minify").stdout
    inventory = tmp_path / "site" / "inventory.yml"
    hosts = yaml.safe_load(inventory.read_text())
    hosts["all"]["hosts"]["child"] = {"kube_parent": CLUSTER, "kube_context": child_cluster.context,
                                      "kube_kubeconfig": [{"secret": {"name": secret_name, "namespace": namespace}}]}
    inventory.write_text(yaml.safe_dump(hosts))

    def phase(name, cluster, executor, source=None, **options):
        spec = {"cluster": cluster, "executor": executor, "options": options}
        if source is not None:
            spec["source"] = source
        return {"apiVersion": API, "kind": "Phase", "metadata": {"name": name}, "spec": spec}

    namespace_object = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
    site.write([
        phase("publish", CLUSTER, "apply", [namespace_object, {
            "apiVersion": "v1", "kind": "Secret", "metadata": {"name": secret_name, "namespace": namespace},
            "stringData": {"value": flat}}]),
        phase("adopt", CLUSTER, "kubeconfig", host="child"),
        phase("things", "child", "apply", [namespace_object, dict(configmap(namespace, "v"), metadata={
            "name": "on-child", "namespace": namespace})]),
        {"apiVersion": API, "kind": "PhasePlan", "metadata": {"name": "site"},
         "spec": {"phases": ["publish", "adopt", "things"]}}])
    try:
        output, preview = report(site, tmp_path, "preview", "--check")
        results = by_phase_and_cluster(preview)
        assert results[("publish", CLUSTER)]["changes"]["add"] == 2, output
        for name in ("adopt", "things"):
            assert results[(name, "child")]["result"] == "skipped", output
            assert results[(name, "child")]["changes"]["known_after_run"] is True, output
        assert "would resolve child's kubeconfig from Secret" in results[("adopt", "child")]["changes"]["note"]
        assert preview["changes"]["known_after_run"] == ["adopt on child", "things on child"], output
        assert "Known after the run (their cluster's kubeconfig is made by the run): adopt on child, things on " \
               "child." in output, output
        assert "did not appear within" not in output, output            # nothing waited for the Secret
        assert target.kubectl("get", "secret", secret_name, "-n", namespace, check=False).returncode != 0
        credentials = [str(value) for value in yaml.safe_load(flat)["users"][0]["user"].values()]
        assert credentials and not [value for value in credentials if value in output]

        rc, output = site()
        assert rc == 0, output
        assert child_cluster.get_json("configmap", "on-child", "-n", namespace)["data"] == {"k": "v"}

        output, after = report(site, tmp_path, "after", "--check")
        results = by_phase_and_cluster(after)
        assert results[("things", "child")]["result"] == "ok" and after["changes"]["known_after_run"] == [], output
    finally:
        child_cluster.kubectl("delete", "namespace", namespace, "--wait=false", check=False)


def by_phase_and_cluster(document: dict) -> dict:
    return {(entry["phase"], entry["cluster"]): entry for entry in document["results"]}


def test_a_tasks_phase_between_does_not_make_the_preview_forget(clusters, site, tmp_path):
    """A plan with a ``tasks`` phase runs in steps, each its own controller task: what ``crds`` would create is
    carried into the step after the task file, so ``things`` previews against it (not as unknown kinds), the
    ``Namespace`` is not counted twice, and the real run does what the preview listed."""
    target, group, namespace = clusters[CLUSTER], site.group, site.namespace
    (tmp_path / "site" / "between.yml").write_text(
        '- name: between\n  ansible.builtin.debug:\n    msg: "between {{ inventory_hostname }}"\n')
    plan = documents(group, namespace, site.marker, {"c1": "v"})
    plan[1]["spec"]["source"].append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    between = {"apiVersion": API, "kind": "Phase", "metadata": {"name": "between"},
               "spec": {"cluster": CLUSTER, "executor": "tasks", "source": "../between.yml"}}
    plan[-1]["spec"]["phases"] = ["crds", "between", "things"]
    site.write(plan[:2] + [between, plan[-1]])
    output, preview = report(site, tmp_path, "preview", "--check")
    things = by_phase(preview)["things"]
    assert things["result"] == "changed", output
    # the Namespace crds would create is changed (its set's labels), not added again
    assert objects(things) == [("add", f"ConfigMap {namespace}/c1"), ("add", f"Gadget {namespace}/g1"),
                               ("change", f"Namespace {namespace}")], output
    assert (preview["changes"]["add"], preview["changes"]["change"], preview["changes"]["incomplete"]) == (4, 1, []), \
        output

    rc, output = site()
    assert rc == 0, output
    assert re.search(r"^things\s+target\s+changed\s+\S+\s+3\s", summary_text(output), re.M), output


def test_a_command_declared_safe_runs_in_the_preview_and_others_do_not(clusters, site, tmp_path):
    """``run_in_check_mode: true`` (a read-only command) runs in check mode and says so; a command without it is only
    listed."""
    checked = tmp_path / "checked"
    plan = documents(site.group, site.namespace, site.marker, {"c1": "v"})
    plan.insert(4, {"apiVersion": API, "kind": "Phase", "metadata": {"name": "look"}, "spec": {
        "cluster": CLUSTER, "executor": "command",
        "options": {"argv": ["touch", str(checked)], "changed_when": "never", "run_in_check_mode": True}}})
    plan[-1]["spec"]["phases"].append("look")
    site.write(plan)
    output, preview = report(site, tmp_path, "preview", "--check")
    phases = by_phase(preview)
    assert phases["look"]["changes"]["note"] == f"ran (run_in_check_mode): touch {checked}", output
    assert phases["seed"]["changes"]["note"] == f"would run: touch {site.marker}", output
    assert checked.exists() and not site.marker.exists()
