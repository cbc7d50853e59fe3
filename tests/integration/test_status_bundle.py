"""``status`` right after a site's first run says nothing about the bundle having changed, for every kind of
source a site uses (a kustomization with generators and a template, a helm chart with templated values, a wait, a
command, inline objects), on the real API server, also when the run records live in a namespace the plan itself makes
after its first phase (the digests' key is made once the namespace exists, not given up on); after documents are
edited, the phases they belong to say ``(bundle changed since)``, and only those."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import yaml
from conftest import summary_text

API = "phasekit.dev/v1alpha1"
CLUSTER = "target"
REPO = Path(__file__).resolve().parents[2]
PHASES = ("before", "ns", "kustomized", "templated", "chart", "ready", "smoke")


@pytest.fixture()
def site(clusters, tmp_path):
    target = clusters[CLUSTER]
    name = f"phasekit-same-{uuid.uuid4().hex[:6]}"
    root = tmp_path / "site"
    (root / "phases").mkdir(parents=True)
    kustomized = root / "manifests" / "kustomized"
    kustomized.mkdir(parents=True)
    (kustomized / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "namespace": name,
        "resources": ["config.yaml", "greeting.yaml.j2"],
        "configMapGenerator": [{"name": "generated", "literals": ["A=1", "B=2"]}],
        "secretGenerator": [{"name": "generated-secret", "literals": ["token=not-a-real-one"]}]}))
    (kustomized / "config.yaml").write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "plain"}, "data": {"v": "1"}}))
    (kustomized / "greeting.yaml.j2").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: greeting\ndata:\n  to: \"{{ inventory_hostname }}\"\n")
    templated = root / "manifests" / "templated"
    templated.mkdir(parents=True)
    (templated / "one.yaml.j2").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: templated\ndata:\n  host: \"{{ inventory_hostname }}\"\n")
    shutil.copytree(REPO / "examples" / "site" / "charts" / "settings", root / "charts" / "settings")
    (root / "values").mkdir()
    (root / "values" / "settings.yaml.j2").write_text("cluster: \"{{ inventory_hostname }}\"\n")

    def phase(phase_name, executor, source=None, **options):
        spec = {"cluster": CLUSTER, "executor": executor, "options": options}
        if source is not None:
            spec["source"] = source
        return {"apiVersion": API, "kind": "Phase", "metadata": {"name": phase_name}, "spec": spec}

    (root / "phases" / "site.yaml").write_text(yaml.safe_dump_all([
        phase("before", "command", argv=["true"], changed_when="never"),   # runs before the namespace exists
        phase("ns", "apply", [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}]),
        phase("kustomized", "apply", "../manifests/kustomized", applyset="same-kustomized", prune=True),
        phase("templated", "apply", "../manifests/templated", namespace=name),
        phase("chart", "helm", "../charts/settings", release_namespace=name,
              values_files=["../values/settings.yaml.j2"], release_values={"tier": "gold"}),
        phase("ready", "wait", "../manifests/templated", namespace=name, timeout=30),
        phase("smoke", "command", argv=["kubectl", "get", "configmap", "templated", "--namespace", name],
              changed_when="never"),
        {"apiVersion": API, "kind": "PhasePlan", "metadata": {"name": "same"}, "spec": {"phases": list(PHASES)}}]))
    (root / "inventory.yml").write_text(yaml.safe_dump({"all": {
        "vars": {"ansible_connection": "local", "plan_record_namespace": name},
        "hosts": {CLUSTER: {"kube_kubeconfig": str(target.admin_kubeconfig), "kube_context": target.context}}}}))
    yield root
    target.kubectl("delete", "namespace", name, "--wait=false", check=False)


def run(root: Path, collections_path: Path, *args) -> subprocess.CompletedProcess:
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(collections_path), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_PYTHON_INTERPRETER": sys.executable}
    env.pop("KUBECONFIG", None)
    done = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "phasekit.kube.run", "-i",
                           "inventory.yml", "-e", "plan_name=same", "-e", "plan_show_plan=false", *args], cwd=root,
                          env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def summary_rows(output: str) -> dict:
    assert "Summary of plan same" in output, output
    summary = summary_text(output)
    rows = {}
    for line in summary.splitlines():
        words = line.strip().strip('",').split()
        if len(words) > 3 and words[0] in PHASES and words[1] == CLUSTER:
            rows[words[0]] = line.strip().strip('",')
    return rows


def test_status_after_a_run_says_the_bundle_is_the_same_until_a_document_changes(clusters, site, collections_path):
    run(site, collections_path)
    rows = summary_rows(run(site, collections_path, "-e", "plan_action=status").stdout)
    assert set(rows) == set(PHASES), rows
    for phase, row in rows.items():
        assert "bundle changed since" not in row, (phase, rows)
        # the first phase ran before the records' namespace existed: its entry has no digest to compare
        assert ("bundle not compared" in row) == (phase == "before"), (phase, rows)

    kustomized = site / "manifests" / "kustomized" / "config.yaml"
    kustomized.write_text(kustomized.read_text().replace("v: '1'", "v: '2'"))
    values = site / "values" / "settings.yaml.j2"
    values.write_text(values.read_text() + "extra: added\n")
    rows = summary_rows(run(site, collections_path, "-e", "plan_action=status").stdout)
    changed = {phase for phase, row in rows.items() if "(bundle changed since)" in row}
    assert changed == {"kustomized", "chart"}, rows
