"""``status`` of a site whose namespace is gone, on the real API server: the phase whose objects live in it says
``differs`` and names them ``absent`` (a dry run cannot apply into a namespace that does not exist; it used to say
``failed``), and the last run is not said to have had another bundle when nothing changed."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import yaml
from conftest import summary_text

API = "phasekit.dev/v1alpha1"
CLUSTER = "target"


@pytest.fixture()
def site(clusters, tmp_path):
    """Phase ``ns`` makes a namespace, phase ``app`` puts three ConfigMaps in it; records in a namespace of their
    own, which stays."""
    target = clusters[CLUSTER]
    name = f"phasekit-gone-{uuid.uuid4().hex[:6]}"
    records = f"{name}-records"
    target.kubectl("create", "namespace", records)
    root = tmp_path / "site"
    (root / "phases").mkdir(parents=True)

    def phase(phase_name, source, **options):
        return {"apiVersion": API, "kind": "Phase", "metadata": {"name": phase_name},
                "spec": {"cluster": CLUSTER, "executor": "apply", "options": options, "source": source}}

    (root / "phases" / "site.yaml").write_text(yaml.safe_dump_all([
        phase("ns", [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}]),
        phase("app", [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c{index}"},
                       "data": {"v": "1"}} for index in range(3)], namespace=name),
        {"apiVersion": API, "kind": "PhasePlan", "metadata": {"name": "gone"}, "spec": {"phases": ["ns", "app"]}}]))
    (root / "inventory.yml").write_text(yaml.safe_dump({"all": {
        "vars": {"ansible_connection": "local", "plan_record_namespace": records},
        "hosts": {CLUSTER: {"kube_kubeconfig": str(target.admin_kubeconfig), "kube_context": target.context}}}}))
    yield root, name
    for namespace in (name, records):
        target.kubectl("delete", "namespace", namespace, "--wait=false", check=False)


def run(root: Path, collections_path: Path, *args) -> subprocess.CompletedProcess:
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(collections_path), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_PYTHON_INTERPRETER": sys.executable}
    env.pop("KUBECONFIG", None)
    return subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "phasekit.kube.run", "-i",
                           "inventory.yml", "-e", "plan_name=gone", "-e", "plan_show_plan=false", *args], cwd=root,
                          env=env, capture_output=True, text=True, timeout=300, check=False)


def summary_rows(output: str) -> dict:
    assert "Summary of plan gone" in output, output
    summary = summary_text(output)
    rows = {}
    for line in summary.splitlines():
        words = line.strip().strip('",').split()
        if len(words) > 3 and words[0] in ("ns", "app") and words[1] == CLUSTER:
            rows[words[0]] = line.strip().strip('",')
    return rows


def test_status_of_a_site_whose_namespace_is_gone_says_absent(clusters, site, collections_path):
    target = clusters[CLUSTER]
    root, namespace = site
    done = run(root, collections_path)
    assert done.returncode == 0, done.stdout + done.stderr
    in_sync = run(root, collections_path, "-e", "plan_action=status")
    assert in_sync.returncode == 0, in_sync.stdout + in_sync.stderr
    assert all(" in sync " in row and "bundle" not in row for row in summary_rows(in_sync.stdout).values()), \
        in_sync.stdout

    target.kubectl("delete", "namespace", namespace, "--wait=true")
    status = run(root, collections_path, "-e", "plan_action=status", "-e", "plan_fail_on_drift=true")
    output = status.stdout + status.stderr
    rows = summary_rows(status.stdout)
    assert status.returncode != 0 and set(rows) == {"ns", "app"}, output
    for phase in ("ns", "app"):
        assert rows[phase].split()[2] == "differs", rows     # not "failed"
        assert "bundle changed since" not in rows[phase], rows  # nothing changed in the bundle
    assert f"app on {CLUSTER}: differs: ConfigMap {namespace}/c0: absent; ConfigMap {namespace}/c1: absent" \
        in output, output
    assert "This cluster failed" not in output, output
