# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""plan_action=destroy on the two local clusters: a 3-phase plan (two apply phases on both clusters, a helm
phase) undone in reverse order, foreign objects left alone, check mode, and a cluster that is gone."""

from __future__ import annotations

import uuid

import pytest
import yaml

from test_helm import helm, revision, write_chart

pytestmark = [pytest.mark.first_full_line]  # CI's time: the teardown engine, the same on every ansible-core line

API = "phasekit.dev/v1alpha1"


def phase(name, **spec):
    return {"apiVersion": API, "kind": "Phase", "metadata": {"name": name}, "spec": spec}


@pytest.fixture()
def site(clusters, tmp_path, run_playbook):
    """base: a namespace and a ConfigMap (ApplySet, no prune); app: a Deployment and a ConfigMap in a namespace
    the plan does not own (pruned ApplySet); chart: a Helm release. run(*args, inventory=) runs the plan."""
    suffix = uuid.uuid4().hex[:6]
    owned, foreign, applyset = f"pk-destroy-{suffix}", f"pk-foreign-{suffix}", f"destroy-base-{suffix}"
    root = tmp_path / "site"
    (root / "phases").mkdir(parents=True)
    (root / "manifests" / "base").mkdir(parents=True)
    (root / "manifests" / "app").mkdir(parents=True)
    (root / "manifests" / "base" / "base.yaml").write_text(yaml.safe_dump_all([
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": owned}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "base", "namespace": owned},
         "data": {"k": "v"}}]))
    (root / "manifests" / "app" / "app.yaml").write_text(yaml.safe_dump_all([
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "app", "namespace": foreign},
         "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "app"}}, "template": {
             "metadata": {"labels": {"app": "app"}},
             "spec": {"containers": [{"name": "app", "image": "registry.example/app:1"}]}}}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app", "namespace": foreign},
         "data": {"k": "v"}}]))
    write_chart(root / "charts", "1.0.0")
    (root / "phases" / "site.yaml").write_text(yaml.safe_dump_all([
        phase("base", cluster="management", executor="apply", source="../manifests/base",
              options={"applyset": applyset}),
        phase("app", cluster="management", executor="apply", source="../manifests/app",
              options={"prune": True, "namespace": foreign, "wait": {"timeout": 120}}),
        phase("chart", cluster="target", executor="helm", source="../charts/hello",
              options={"release_namespace": owned, "release_values": {"password": "not-shown-1234"}}),
        {"apiVersion": API, "kind": "PhasePlan", "metadata": {"name": "site"},
         "spec": {"phases": ["base", "app", "chart"]}}]))
    hosts = {name: {"kube_kubeconfig": str(cluster.admin_kubeconfig), "kube_context": name}
             for name, cluster in clusters.items()}

    def inventory(extra_hosts=None):
        every = {**hosts, **(extra_hosts or {})}
        return yaml.safe_dump({"all": {"vars": {"ansible_connection": "local"}, "hosts": every,
                                       "children": {"management": {"hosts": {name: {} for name in every}}}}})

    def run(*args, inventory_text=None):
        (root / "inventory.yml").write_text(inventory_text or inventory())
        return run_playbook("- ansible.builtin.import_playbook: phasekit.kube.run\n", root / "inventory.yml", *args)

    for cluster in clusters.values():
        cluster.kubectl("create", "namespace", foreign)
        cluster.kubectl("create", "configmap", "bystander", "-n", foreign, "--from-literal=k=v")
    run.owned, run.foreign, run.inventory, run.root, run.applyset = owned, foreign, inventory, root, applyset
    yield run
    for cluster in clusters.values():
        helm(cluster, "uninstall", "chart", "-n", owned, check=False)
        for namespace in (owned, foreign):
            cluster.kubectl("delete", "namespace", namespace, "--ignore-not-found", "--wait=false")


def exists(cluster, *args) -> bool:
    return cluster.kubectl("get", *args, check=False).returncode == 0


def test_destroy_undoes_the_plan_in_reverse_order(site, clusters):
    target = clusters["target"]
    result = site()
    assert result.rc == 0, result
    assert revision(target, "chart", site.owned) == 1
    for cluster in clusters.values():
        assert exists(cluster, "deployment", "app", "-n", site.foreign)

    checked = site("-e", "plan_action=destroy", "--check")
    assert checked.rc == 0, checked
    assert f"target: would delete ConfigMap {site.foreign}/app, Deployment {site.foreign}/app" in checked.stdout
    assert revision(target, "chart", site.owned) == 1
    for cluster in clusters.values():
        assert exists(cluster, "deployment", "app", "-n", site.foreign)
        assert exists(cluster, "namespace", site.owned)

    destroyed = site("-e", "plan_action=destroy")
    assert destroyed.rc == 0, destroyed
    out = destroyed.stdout
    # reverse plan order: each phase finished on every cluster before the previous one started
    assert out.index("[chart] helm on 1 cluster(s)") < out.index("[app] apply on 2 cluster(s)") \
        < out.index("[base] apply on 2 cluster(s)"), out
    assert f"ephemeral: deleted ConfigMap {site.owned}/base, Namespace {site.owned}" in out
    summary = out[out.index("Summary of plan site"):]
    for row in ("chart  target     destroyed", "app    ephemeral  destroyed", "base   target     destroyed"):
        assert row in summary, summary
    assert "not-shown-1234" not in destroyed.output
    assert revision(target, "chart", site.owned) is None
    for cluster in clusters.values():
        assert not exists(cluster, "namespace", site.owned)
        assert not exists(cluster, "deployment", "app", "-n", site.foreign)
        assert not exists(cluster, "configmap", "app", "-n", site.foreign)
        assert not exists(cluster, "secret", site.applyset, "-n", "default")   # the ApplySet parent
        # what the plan did not make stays
        assert exists(cluster, "configmap", "bystander", "-n", site.foreign)

    again = site("-e", "plan_action=destroy")
    assert again.rc == 0, again
    summary = again.stdout[again.stdout.index("Summary of plan site"):]
    assert "destroyed" not in summary and "base   target     nothing left" in summary, summary


def test_destroy_keeps_a_namespace_holding_what_the_plan_did_not_apply(site, clusters):
    """Another team's Secret and ConfigMap in the plan's namespace on ephemeral: destroy (and destroy --check) keep
    that namespace and name them; on target, holding only the plan's objects (and a Helm release the plan
    uninstalls first), the namespace goes; plan_destroy_nonempty_namespaces=true deletes the kept one."""
    ephemeral, target = clusters["ephemeral"], clusters["target"]
    assert site().rc == 0
    ephemeral.kubectl("create", "secret", "generic", "other-team", "-n", site.owned, "--from-literal=token=s3cr3t-x")
    ephemeral.kubectl("create", "configmap", "settings", "-n", site.owned, "--from-literal=k=v")
    held = ("it holds 2 object(s) the plan did not apply (1 ConfigMap, 1 Secret): ConfigMap settings, Secret "
            "other-team; to delete it with them, set plan_destroy_nonempty_namespaces=true")

    checked = site("-e", "plan_action=destroy", "--check")
    assert checked.rc == 0, checked
    assert f"ephemeral: Namespace {site.owned} would be kept: {held}" in checked.stdout
    summary = checked.stdout[checked.stdout.index("Summary of plan site"):]
    assert "base   ephemeral  would be destroyed, namespace would be kept" in summary, summary
    assert "base   target     would be destroyed  " in summary, summary
    assert "  destroyed" not in summary, summary
    for cluster in clusters.values():
        assert exists(cluster, "configmap", "base", "-n", site.owned)

    destroyed = site("-e", "plan_action=destroy")
    assert destroyed.rc == 0, destroyed
    assert f"ephemeral: Namespace {site.owned} kept: {held}" in destroyed.stdout
    summary = destroyed.stdout[destroyed.stdout.index("Summary of plan site"):]
    assert "base   ephemeral  destroyed, namespace kept" in summary and "base   target     destroyed  " in summary
    assert f"ephemeral: deleted ConfigMap {site.owned}/base\n" in destroyed.stdout
    assert f"target: deleted ConfigMap {site.owned}/base, Namespace {site.owned}" in destroyed.stdout
    assert "s3cr3t-x" not in destroyed.output
    assert not exists(target, "namespace", site.owned)
    assert exists(ephemeral, "namespace", site.owned) and exists(ephemeral, "secret", "other-team", "-n", site.owned)
    assert exists(ephemeral, "configmap", "settings", "-n", site.owned)
    assert not exists(ephemeral, "configmap", "base", "-n", site.owned)
    assert exists(ephemeral, "secret", site.applyset, "-n", "default")    # the set still holds the namespace

    forced = site("-e", "plan_action=destroy", "-e", "plan_destroy_nonempty_namespaces=true")
    assert forced.rc == 0, forced
    assert f"ephemeral: deleted Namespace {site.owned}" in forced.stdout
    assert not exists(ephemeral, "namespace", site.owned)
    assert not exists(ephemeral, "secret", site.applyset, "-n", "default")


def test_destroy_skips_a_cluster_that_is_gone_when_asked(site, clusters, tmp_path):
    gone = yaml.safe_load(clusters["target"].admin_kubeconfig.read_text())
    gone["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:1"
    path = tmp_path / "gone.kubeconfig"
    path.write_text(yaml.safe_dump(gone))
    inventory = site.inventory({"gone": {"kube_kubeconfig": str(path), "kube_context": "target"}})
    failed = site("-e", "plan_action=destroy", "-e", '{"plan_only": ["app"]}', inventory_text=inventory)
    assert failed.rc != 0
    assert "phase app failed on cluster gone" in failed.output
    skipped = site("-e", "plan_action=destroy", "-e", '{"plan_only": ["app"]}', "-e",
                   "plan_destroy_unreachable=skip", inventory_text=inventory)
    assert skipped.rc == 0, skipped
    assert "gone: skipped: cluster unreachable, skipped: cannot reach the API server https://127.0.0.1:1" \
        in skipped.stdout
