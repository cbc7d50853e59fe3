# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""A small airshipctl-style site run as it is on the two local clusters: its own Phase, PhasePlan and
KubernetesApply documents (airshipit.org/v1alpha1), entry points with kustomizations under a target path,
clusterName naming the inventory hosts. It runs, re-runs as a no-op, and status finds it in sync; a phase of
an executor kind with no equivalent here stops validate before anything runs; Clusterctl phases run the
clusterctl first on PATH (a fake that records what it got)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import uuid
from pathlib import Path

import pytest
import yaml
from conftest import VENV_BIN, summary_text
from test_kubeconfig_sources import flat_kubeconfig, new_age_key

AIRSHIP = "airshipit.org/v1alpha1"
HOSTS = {"ephemeral-cluster": "ephemeral", "target-cluster": "target"}


def write(path: Path, *documents) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump_all(documents, sort_keys=False))


def phase(name: str, cluster: str, executor: str, entry: str | None = None, kind: str = "KubernetesApply") -> dict:
    config = {"executorRef": {"apiVersion": AIRSHIP, "kind": kind, "name": executor}}
    if entry:
        config["documentEntryPoint"] = entry
    return {"apiVersion": AIRSHIP, "kind": "Phase", "metadata": {"name": name, "clusterName": cluster},
            "config": config}


def entry_point(root: Path, path: str, namespace: str, objects: list) -> None:
    """A kustomization directory, as airshipctl's entry points are."""
    write(root / path / "resources.yaml", *objects)
    write(root / path / "kustomization.yaml", {"apiVersion": "kustomize.config.k8s.io/v1beta1",
                                               "kind": "Kustomization", "namespace": namespace,
                                               "resources": ["resources.yaml"]})


@pytest.fixture()
def airship_site(airship_clusters, tmp_path):
    clusters = airship_clusters  # held by this site until its cleanup (see the fixture)
    namespace = f"pk-airship-{uuid.uuid4().hex[:6]}"
    site = tmp_path / "manifests" / "site" / "test-site"
    for cluster in ("ephemeral", "target"):
        entry_point(site, f"{cluster}/initinfra", namespace, [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"initinfra-{cluster}"},
             "data": {"cluster": cluster}}])
    entry_point(site, "target/workload", namespace, [
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "workload"},
         "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "workload"}},
                  "template": {"metadata": {"labels": {"app": "workload"}},
                               "spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10"}]}}}}])
    write(site / "phases" / "executors.yaml",
          {"apiVersion": AIRSHIP, "kind": "KubernetesApply", "metadata": {"name": "kubernetes-apply"},
           "config": {"waitOptions": {"timeout": 120}, "pruneOptions": {"prune": False}}},
          {"apiVersion": AIRSHIP, "kind": "KubernetesApply", "metadata": {"name": "kubernetes-apply-prune"},
           "config": {"waitOptions": {"timeout": 120}, "pruneOptions": {"prune": True}}},
          {"apiVersion": AIRSHIP, "kind": "GenericContainer", "metadata": {"name": "encrypt-secrets"},
           "spec": {"type": "krm", "image": "quay.io/airshipit/toolbox:latest"}})
    write(site / "phases" / "phases.yaml",
          phase("initinfra-ephemeral", "ephemeral-cluster", "kubernetes-apply", "ephemeral/initinfra"),
          phase("initinfra-target", "target-cluster", "kubernetes-apply", "target/initinfra"),
          phase("workload-target", "target-cluster", "kubernetes-apply-prune", "target/workload"),
          phase("secret-generate", "target-cluster", "encrypt-secrets", kind="GenericContainer"))
    write(site / "phases" / "plan.yaml",
          {"apiVersion": AIRSHIP, "kind": "PhasePlan", "metadata": {"name": "deploy-gating"},
           "description": "the gating plan",
           "phases": [{"name": name} for name in ("initinfra-ephemeral", "initinfra-target", "workload-target")]},
          {"apiVersion": AIRSHIP, "kind": "PhasePlan", "metadata": {"name": "with-secrets"},
           "phases": [{"name": "initinfra-target"}, {"name": "secret-generate"}]})
    inventory = {"all": {"vars": {"ansible_connection": "local"}, "hosts": {
        host: {"kube_kubeconfig": str(clusters[cluster].admin_kubeconfig), "kube_context": cluster}
        for host, cluster in HOSTS.items()}}}
    (tmp_path / "inventory.yml").write_text(yaml.safe_dump(inventory))
    yield tmp_path, namespace
    for cluster in clusters.values():
        cluster.kubectl("delete", "namespace", namespace, "--ignore-not-found", "--wait=false")
    clusters["target"].kubectl("delete", "secret", "workload-target", "-n", "default", "--ignore-not-found")


def summary(output: str) -> dict:
    rows = {}
    for line in summary_text(output).splitlines():
        found = re.match(r'^([\w-]+)\s+([\w-]+-cluster)\s+(in sync|\w+)', line)
        if found:
            rows[(found.group(1), found.group(2))] = found.group(3)
    return rows


@pytest.mark.first_full_line  # CI's time: airshipctl's documents, read below Ansible
def test_an_airshipctl_site_runs_as_it_is(airship_site, clusters, run_playbook):
    root, namespace = airship_site
    args = ("-e", f"plan_src={root}/manifests/site/test-site/phases", "-e", "plan_name=deploy-gating")
    playbook = "- ansible.builtin.import_playbook: phasekit.kube.run\n"
    listed = run_playbook(playbook, root / "inventory.yml", *args, "-e", "plan_action=list")
    assert listed.rc == 0, listed
    assert re.search(r"initinfra-target\s+target-cluster\s+target-cluster\s+apply", listed.output), listed

    first = run_playbook(playbook, root / "inventory.yml", *args)
    assert first.rc == 0, first
    assert summary(first.output) == {("initinfra-ephemeral", "ephemeral-cluster"): "changed",
                                     ("initinfra-target", "target-cluster"): "changed",
                                     ("workload-target", "target-cluster"): "changed"}, first
    assert clusters["ephemeral"].get_json("configmap", "initinfra-ephemeral", "-n", namespace)["data"] == {
        "cluster": "ephemeral"}
    live = clusters["target"].get_json("deployment", "workload", "-n", namespace)
    assert live["status"].get("availableReplicas") == 1            # waitOptions.timeout: waited until ready
    # pruneOptions.prune: an ApplySet named after the phase (its parent in the context's namespace, as the apply
    # executor's own)
    assert clusters["target"].get_json("secret", "workload-target", "-n", "default")["metadata"]["labels"][
        "applyset.kubernetes.io/id"]

    again = run_playbook(playbook, root / "inventory.yml", *args)
    assert again.rc == 0, again
    assert set(summary(again.output).values()) == {"ok"}, again

    status = run_playbook(playbook, root / "inventory.yml", *args, "-e", "plan_action=status")
    assert status.rc == 0, status
    assert set(summary(status.output).values()) == {"in sync"}, status


def test_a_generic_container_phase_validates_where_an_engine_is_and_names_what_is_missing_where_none_is(
        airship_site, run_playbook):
    """GenericContainer runs as a container phase: validate passes with podman on PATH; without podman or docker
    it fails naming the phase and what is missing (it was refused outright before containers were supported)."""
    root, _namespace = airship_site
    playbook = "- ansible.builtin.import_playbook: phasekit.kube.run\n"
    args = ("-e", f"plan_src={root}/manifests/site/test-site/phases", "-e", "plan_name=with-secrets",
            "-e", "plan_action=validate", "-e", "plan_offline=true")
    with_engine = run_playbook(playbook, root / "inventory.yml", *args)
    assert with_engine.rc == 0, with_engine
    no_engine = run_playbook(playbook, root / "inventory.yml", *args,
                             env={"PATH": f"{Path(__file__).parent}:/usr/sbin:/sbin"})
    assert no_engine.rc != 0, no_engine
    assert "Phase secret-generate" in no_engine.output and "needs podman or docker" in no_engine.output, no_engine
    assert "Traceback" not in with_engine.output + no_engine.output


def test_a_kustomized_phase_bundle_is_listed_as_kubectl_kustomize_builds_it(airship_site, run_playbook):
    """The phases directory gets a kustomization: a phase pulled in from another directory, the plan patched to
    run it and a phase's cluster patched; list shows the built documents, a broken build fails naming it."""
    root, _namespace = airship_site
    site = root / "manifests" / "site" / "test-site"
    write(site / "more-phases" / "phases.yaml",
          phase("workload-ephemeral", "ephemeral-cluster", "kubernetes-apply", "target/workload"))
    write(site / "more-phases" / "kustomization.yaml", {"resources": ["phases.yaml"]})
    write(site / "phases" / "kustomization.yaml", {
        "resources": ["phases.yaml", "executors.yaml", "plan.yaml", "../more-phases"],
        "patches": [
            {"target": {"kind": "PhasePlan", "name": "deploy-gating"},
             "patch": '[{"op": "add", "path": "/phases/-", "value": {"name": "workload-ephemeral"}}]'},
            {"target": {"kind": "Phase", "name": "initinfra-target"},
             "patch": f"apiVersion: {AIRSHIP}\nkind: Phase\nmetadata:\n  name: initinfra-target\n"
                      "  clusterName: ephemeral-cluster\n"}]})
    args = ("-e", f"plan_src={site / 'phases'}", "-e", "plan_name=deploy-gating", "-e", "plan_action=list")
    playbook = "- ansible.builtin.import_playbook: phasekit.kube.run\n"
    listed = run_playbook(playbook, root / "inventory.yml", *args)
    assert listed.rc == 0, listed
    assert re.search(r"initinfra-target\s+ephemeral-cluster\s+ephemeral-cluster\s+apply", listed.output), listed
    assert re.search(r"workload-ephemeral\s+ephemeral-cluster\s+ephemeral-cluster\s+apply\s+target/workload",
                     listed.output), listed

    (site / "phases" / "kustomization.yaml").write_text("resources: [phases.yaml, missing.yaml]\n")
    broken = run_playbook(playbook, root / "inventory.yml", *args)
    assert broken.rc != 0, broken
    assert "kustomization " in broken.output and "missing.yaml" in broken.output, broken
    assert "Traceback" not in broken.output


FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "airshipctl" / "site"


def test_a_31_phase_airshipctl_plan_lists_in_order_with_its_clusters(airship_site, run_playbook):
    """The fixture modelled on airshipctl's manifests/phases: every phase of its plan, in plan order, each on the
    cluster its clusterName names (phases of executor kinds with no equivalent listed with their kind)."""
    root, _namespace = airship_site
    plan = yaml.safe_load((FIXTURE / "phases" / "plan.yaml").read_text())
    wanted = [entry["name"] for entry in plan["phases"]]
    clusters_of = {document["metadata"]["name"]: document["metadata"].get("clusterName")
                   for document in yaml.safe_load_all((FIXTURE / "phases" / "phases.yaml").read_text())}
    result = run_playbook("- ansible.builtin.import_playbook: phasekit.kube.run\n", root / "inventory.yml",
                          "-e", f"plan_src={FIXTURE}/phases", "-e", "plan_name=deploy-gating", "-e", "plan_action=list")
    assert result.rc == 0, result
    rows = [line.strip().strip('",').split() for line in result.output.splitlines()
            if line.strip().strip('"').split(" ")[0] in clusters_of]
    assert len(wanted) >= 30 and [row[0] for row in rows] == wanted, result
    for row in rows:
        assert row[1] == (clusters_of[row[0]] or "-"), row
    assert any(row[3].startswith("airship:") for row in rows) and any(row[3] == "apply" for row in rows), rows


def inventory_list(path: Path, collections_path: Path) -> dict:
    """``ansible-inventory --list`` of ``path``, with Ansible's unsafe-string wrappers removed."""
    def plain(node):
        if isinstance(node, dict):
            if set(node) == {"__ansible_unsafe"}:
                return node["__ansible_unsafe"]
            return {key: plain(value) for key, value in node.items()}
        return [plain(item) for item in node] if isinstance(node, list) else node

    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(collections_path), "ANSIBLE_NOCOLOR": "1"}
    proc = subprocess.run([str(VENV_BIN / "ansible-inventory"), "-i", str(path), "--list"], env=env,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and "Unable to parse" not in proc.stderr, proc.stdout + proc.stderr
    listed = plain(json.loads(proc.stdout))
    for variables in listed["_meta"]["hostvars"].values():
        variables.pop("inventory_file", None)
        variables.pop("inventory_dir", None)
    return listed


@pytest.mark.smoke
def test_a_cluster_map_is_the_inventory_and_a_converted_site_runs_the_same(
        airship_site, clusters, run_playbook, tmp_path, collections_path):
    """No hand-written inventory: the phasekit.kube.clusters plugin reads the site's ClusterMap (filesystem
    sources); then phase_plan converts the airshipctl documents and the ClusterMap, ansible-inventory lists the
    written inventory as the ClusterMap's, and the converted site with it is a no-op re-run."""
    root, namespace = airship_site
    phases = root / "manifests" / "site" / "test-site" / "phases"
    write(phases / "cluster-map.yaml", {
        "apiVersion": AIRSHIP, "kind": "ClusterMap", "metadata": {"name": "main-map"},
        "map": {host: {**({"parent": "ephemeral-cluster"} if cluster == "target" else {}),
                       "kubeconfigSources": [{"type": "filesystem", "filesystem": {
                           "path": str(clusters[cluster].admin_kubeconfig), "contextName": cluster}}]}
                for host, cluster in HOSTS.items()}})
    inventory = root / "airship.clusters.yml"
    inventory.write_text(yaml.safe_dump({"plugin": "phasekit.kube.clusters", "airship_cluster_map": [str(phases)]}))
    args = ("-e", f"plan_src={phases}", "-e", "plan_name=deploy-gating", "-e", "ansible_connection=local")
    playbook = "- ansible.builtin.import_playbook: phasekit.kube.run\n"
    first = run_playbook(playbook, inventory, *args)
    assert first.rc == 0, first
    assert set(summary(first.output).values()) == {"changed"} and len(summary(first.output)) == 3, first
    assert clusters["target"].get_json("configmap", "initinfra-target", "-n", namespace)["data"] == {
        "cluster": "target"}

    converted = tmp_path / "converted"
    convert = run_playbook(f"""
        - hosts: localhost
          gather_facts: false
          tasks:
            - name: Convert
              phasekit.kube.phase_plan:
                src: {phases}
                convert_to: {converted}
        """, None, "-e", "ansible_connection=local")
    assert convert.rc == 0, convert
    written = converted / "inventory" / "site.clusters.yml"
    assert written.is_file(), convert
    assert inventory_list(written, collections_path) == inventory_list(inventory, collections_path)
    again = run_playbook(playbook, written, "-e", f"plan_src={converted}", "-e", "plan_name=deploy-gating",
                         "-e", "ansible_connection=local")
    assert again.rc == 0, again
    # the converted phases apply the same objects with the same field manager: nothing to change
    assert summary(again.output) == {key: "ok" for key in summary(first.output)}, again


FAKE_CLUSTERCTL = """#!/bin/sh
# Records what a real clusterctl would get, and checks that each kubeconfig it was given reaches its cluster,
# and that each provider url of its --config (the last argument of init) is a file that holds the built
# components, with the provider's metadata.yaml beside it.
record={record}
printf '%s\\n' "$@" > "$record.argv"
cp "$KUBECONFIG" "$record.kubeconfig"
{kubectl} --kubeconfig "$KUBECONFIG" get --raw /version > /dev/null || exit 7
if [ "$1" = move ]; then
  cp "$3" "$record.from-kubeconfig"
  {kubectl} --kubeconfig "$3" get --raw /version > /dev/null || exit 8
fi
if [ "$1" = init ]; then
  for config; do :; done
  cp "$config" "$record.config"
  grep -o 'file://[^ ]*' "$config" | while read -r url; do
    file=${{url#file://}}
    grep -q {marker} "$file" || exit 9
    grep -q 'kind: Metadata' "$(dirname "$file")/metadata.yaml" || exit 10
    cp "$file" "$record.components"
  done || exit $?
fi
"""
COMPONENTS_MARKER = "capd-components-built-from-the-bundle"


@pytest.mark.first_full_line  # CI's time: airshipctl's documents, read below Ansible
def test_clusterctl_phases_run_clusterctl_with_the_clusters_kubeconfigs(airship_site, bin_dir, run_playbook,
                                                                        tmp_path):
    """Clusterctl init and move run the clusterctl first on PATH (a fake that records its arguments and the
    kubeconfigs it got, and reaches the clusters with kubectl): init on the phase's cluster, move from the
    target's kube_parent to the target."""
    root, _namespace = airship_site
    phases = root / "manifests" / "site" / "test-site" / "phases"
    write(phases / "clusterctl.yaml",
          {"apiVersion": AIRSHIP, "kind": "Clusterctl", "metadata": {"name": "clusterctl_init"}, "action": "init",
           "init-options": {"core-provider": "cluster-api:v1.8.0", "infrastructure-providers": ["docker:v1.8.0"]},
           "providers": [{"name": "docker", "type": "InfrastructureProvider",
                          "versions": {"v1.8.0": "function/capd/v1.8.0"}}],
           "additional-vars": {"CLUSTER_TOPOLOGY": "true"}},
          {"apiVersion": AIRSHIP, "kind": "Clusterctl", "metadata": {"name": "clusterctl_move"}, "action": "move",
           "move-options": {"namespace": "capi-system"}},
          phase("clusterctl-init-ephemeral", "ephemeral-cluster", "clusterctl_init", kind="Clusterctl"),
          phase("clusterctl-move", "target-cluster", "clusterctl_move", kind="Clusterctl"),
          {"apiVersion": AIRSHIP, "kind": "PhasePlan", "metadata": {"name": "clusterctl"},
           "phases": [{"name": "clusterctl-init-ephemeral"}, {"name": "clusterctl-move"}]})
    # the provider's version, built from the bundle into the repository clusterctl reads (relative to the target path)
    write(phases.parent / "function" / "capd" / "v1.8.0" / "docs.yaml",
          {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": COMPONENTS_MARKER}},
          {"apiVersion": "clusterctl.cluster.x-k8s.io/v1alpha3", "kind": "Metadata",
           "metadata": {"name": "repository-metadata", "labels": {"airshipit.org/deploy-k8s": "false"}},
           "releaseSeries": [{"major": 1, "minor": 8, "contract": "v1beta1"}]})
    write(phases.parent / "function" / "capd" / "v1.8.0" / "kustomization.yaml", {"resources": ["docs.yaml"]})
    inventory = yaml.safe_load((root / "inventory.yml").read_text())
    inventory["all"]["hosts"]["target-cluster"]["kube_parent"] = "ephemeral-cluster"
    (root / "inventory.yml").write_text(yaml.safe_dump(inventory))
    fake_bin, record = tmp_path / "fake-bin", tmp_path / "clusterctl-record"
    fake_bin.mkdir()
    (fake_bin / "clusterctl").write_text(FAKE_CLUSTERCTL.format(record=record, kubectl=Path(bin_dir) / "kubectl",
                                                                marker=COMPONENTS_MARKER))
    (fake_bin / "clusterctl").chmod(0o755)
    args = ("-e", f"plan_src={phases}", "-e", "plan_name=clusterctl")
    playbook = "- ansible.builtin.import_playbook: phasekit.kube.run\n"

    without = run_playbook(playbook, root / "inventory.yml", *args, "-e", "plan_action=validate",
                           "-e", "plan_only=clusterctl-init-ephemeral", env={"PATH": f"{bin_dir}:/usr/bin:/bin"})
    assert without.rc != 0 and "runs clusterctl, which is not on the controller's PATH" in without.output, without
    listed = run_playbook(playbook, root / "inventory.yml", *args, "-e", "plan_action=list",
                          env={"PATH": f"{bin_dir}:/usr/bin:/bin"})
    assert listed.rc == 0 and re.search(r"clusterctl-move\s+target-cluster\s+target-cluster\s+command",
                                        listed.output), listed

    path = {"PATH": f"{fake_bin}:{bin_dir}:{os.environ.get('PATH', '')}"}
    checked = run_playbook(playbook, root / "inventory.yml", *args, env=path, check=True)
    assert checked.rc == 0 and not Path(f"{record}.argv").exists(), checked   # check mode runs nothing

    init = run_playbook(playbook, root / "inventory.yml", *args, "-e", "plan_only=clusterctl-init-ephemeral",
                        env=path)
    assert init.rc == 0, init
    argv = Path(f"{record}.argv").read_text().splitlines()
    assert argv[:6] == ["init", "--core", "cluster-api:v1.8.0", "--infrastructure", "docker:v1.8.0", "--config"]
    assert yaml.safe_load(Path(f"{record}.kubeconfig").read_text())["current-context"] == "ephemeral"
    # the provider's url: the built components in a private repository, gone once clusterctl ended
    url = yaml.safe_load(Path(f"{record}.config").read_text())["providers"][0]["url"]
    assert url.startswith("file:///") and url.endswith("/infrastructure-docker/v1.8.0/infrastructure-components.yaml")
    assert not Path(url[len("file://"):]).exists()
    components = Path(f"{record}.components").read_text()
    assert COMPONENTS_MARKER in components and "kind: Metadata" not in components

    move = run_playbook(playbook, root / "inventory.yml", *args, "-e", "plan_only=clusterctl-move", env=path)
    assert move.rc == 0, move
    argv = Path(f"{record}.argv").read_text().splitlines()
    assert argv[0] == "move" and argv[3] == "--to-kubeconfig" and argv[5:] == ["--namespace", "capi-system"]
    assert yaml.safe_load(Path(f"{record}.from-kubeconfig").read_text())["current-context"] == "ephemeral"
    assert yaml.safe_load(Path(f"{record}.kubeconfig").read_text())["current-context"] == "target"
    assert "Traceback" not in init.output + move.output


@pytest.mark.first_full_line  # CI's time: airshipctl's documents, read below Ansible
def test_a_cluster_maps_bundle_sources_read_its_sops_encrypted_kubeconfig_document(
        airship_site, clusters, run_playbook, bin_dir):
    """airshipctl's layout: the ClusterMap's clusters take their kubeconfig from the site's KubeConfig document,
    SOPS-encrypted with its identity in clear, beside other documents. The inventory plugin maps the bundle
    sources to it; list needs no key (nothing is decrypted); the plan decrypts it and runs on both clusters."""
    root, namespace = airship_site
    phases = root / "manifests" / "site" / "test-site" / "phases"
    config = {"apiVersion": "v1", "kind": "Config", "clusters": [], "users": [], "contexts": []}
    for cluster in HOSTS.values():  # both clusters' admin kubeconfigs in one document, as airshipctl keeps them
        flat = yaml.safe_load(flat_kubeconfig(clusters[cluster].admin_kubeconfig))
        for section in ("clusters", "users", "contexts"):
            config[section].extend(flat[section])
    key_file, recipient = new_age_key(root, bin_dir)
    plain = root / "kubeconfig.plain.yaml"
    write(plain, {"apiVersion": AIRSHIP, "kind": "KubeConfig", "metadata": {"name": "default"}, "config": config})
    encrypted = subprocess.run([str(bin_dir / "sops"), "--encrypt", "--age", recipient, "--unencrypted-regex",
                                "^(kind|apiVersion|group|metadata)$", str(plain)],
                               check=True, capture_output=True, text=True).stdout
    plain.unlink()
    cluster_map = {
        "apiVersion": AIRSHIP, "kind": "ClusterMap", "metadata": {"name": "main-map"},
        "map": {host: {**({"parent": "ephemeral-cluster"} if cluster == "target" else {}),
                       "kubeconfigSources": [{"type": "bundle", "bundle": {"contextName": cluster}}]}
                for host, cluster in HOSTS.items()}}
    # one file: the plain ClusterMap, then the KubeConfig document encrypted on its own
    (phases / "cluster-map.yaml").write_text(yaml.safe_dump(cluster_map, sort_keys=False) + "---\n" + encrypted)
    inventory = root / "airship.clusters.yml"
    inventory.write_text(yaml.safe_dump({"plugin": "phasekit.kube.clusters", "airship_cluster_map": [str(phases)]}))
    args = ("-e", f"plan_src={phases}", "-e", "plan_name=deploy-gating", "-e", "ansible_connection=local")
    playbook = "- ansible.builtin.import_playbook: phasekit.kube.run\n"

    listed = run_playbook(playbook, inventory, *args, "-e", "plan_action=list",
                          env={"SOPS_AGE_KEY_FILE": str(root / "no-such-key")})
    assert listed.rc == 0, listed
    first = run_playbook(playbook, inventory, *args, env={"SOPS_AGE_KEY_FILE": str(key_file)})
    assert first.rc == 0, first
    assert set(summary(first.output).values()) == {"changed"} and len(summary(first.output)) == 3, first
    assert clusters["target"].get_json("configmap", "initinfra-target", "-n", namespace)["data"] == {
        "cluster": "target"}
    without_key = run_playbook(playbook, inventory, *args, env={"SOPS_AGE_KEY_FILE": str(root / "no-such-key")})
    assert without_key.rc != 0
    assert f"kubeconfig source 1 (bundle: {phases}): {phases}/cluster-map.yaml document 2 (KubeConfig default): " \
           "sops could not decrypt" in without_key.output, without_key
    assert "client-key-data" not in without_key.output
