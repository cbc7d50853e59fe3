"""`make demo` in CI: the same script, on the same three local clusters, must pass."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from conftest import REPO, VENV_BIN, Cluster

pytestmark = [pytest.mark.first_full_line]  # CI's time: make demo runs on the default line

DEMO_CLUSTERS = ["ephemeral", "target", "workload01"]


def held_objects(output: str) -> dict[str, set]:
    """The demo's "what the clusters hold now" section: per cluster, its (kind, name) rows."""
    section = output[output.index("what the clusters hold now"):output.index("the Helm release apps/settings")]
    held: dict[str, set] = {}
    cluster = None
    for line in section.splitlines():
        if line.startswith("--- "):
            cluster = line[4:].strip()
            held[cluster] = set()
        elif cluster and line.startswith("    ") and not line.strip().startswith("KIND"):
            kind, *rest = line.split()
            held[cluster].add((kind, rest[-1] if rest else ""))
    return held


def check_preview(section: str, site_absent: bool, secret_absent: bool) -> None:
    """The demo's preview: it ends with the plan's totals, nothing failed; on clusters that never had the demo its
    objects are counted as added; without workload01's kubeconfig Secret on target, workload01's phases are known
    after the run (the run makes that Secret), not waited for."""
    assert "Preview of the plan (nothing was changed):" in section, section
    totals = re.search(r"^Plan: (\d+) to add, (\d+) to change, (\d+) to destroy\.(.*)$", section, re.M)
    assert totals, section
    assert "Not counted (failed or not run)" not in totals.group(4), totals.group(0)
    assert not re.search(r"^\S+\s+(ephemeral|target|workload01)\s+failed\b", section, re.M), section
    if site_absent:
        assert int(totals.group(1)) > 0, totals.group(0)
    if secret_absent:
        assert "Known after the run (their cluster's kubeconfig is made by the run): workload01/kubeconfig on " \
               "workload01, apps/namespaces on workload01" in totals.group(4), totals.group(0)
    else:
        assert "Known after the run" not in totals.group(4), totals.group(0)


def test_demo_runs_end_to_end(clusters, collections_path):
    subprocess.run([sys.executable, str(REPO / "hack/clusters.py"), "up", *DEMO_CLUSTERS], check=True,
                   capture_output=True, text=True)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(collections_path), ANSIBLE_NOCOLOR="1",
               PATH=f"{os.environ['PHASEKIT_BIN']}{os.pathsep}{VENV_BIN}{os.pathsep}{os.environ['PATH']}")
    env.pop("KUBECONFIG", None)
    target = clusters["target"]
    site_absent = target.kubectl("get", "namespace", "demo-apps", check=False).returncode != 0
    secret_absent = target.kubectl("get", "secret", "workload01-kubeconfig", "-n", "demo-platform",
                                   check=False).returncode != 0
    proc = subprocess.run(["bash", str(REPO / "hack/demo.sh")], env=env, capture_output=True, text=True,
                          check=False, timeout=900)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-8000:]
    assert "What just happened" in output
    preview = output[output.index("preview the whole plan first"):output.index("run the deploy plan across")]
    check_preview(preview, site_absent, secret_absent)
    # the run then does what the preview counted: per phase and cluster, its objects changed are the preview's
    ran = output[output.index("run the deploy plan across"):output.index("start at phase 'apps'")]
    changed = {(phase, cluster): int(count) for phase, cluster, count in re.findall(
        r"^(\S+)\s+(ephemeral|target|workload01)\s+(?:ok|changed)\s+\S+\s+(\d+)\s", ran, re.M)}
    counted = {(phase, cluster): int(add) + int(change) + int(destroy) for phase, cluster, add, change, destroy in
               re.findall(r"^(\S+)\s+(ephemeral|target|workload01)\s+(\d+)\s+(\d+)\s+(\d+)\s", preview, re.M)}
    assert counted and {key: changed.get(key) for key in counted} == counted, (counted, changed)
    # The deploy plan's summary lists every phase on every cluster it ran on, none failed (plain lines).
    summary_rows = re.findall(r"^(\S+)\s+(ephemeral|target|workload01)\s+(ok|changed|failed|not run)\b",
                              output, re.M)
    ran = {(phase, cluster) for phase, cluster, _result in summary_rows}
    assert ("workload01/kubeconfig", "workload01") in ran
    assert ("apps/hello", "workload01") in ran
    assert ("infra/namespaces", "ephemeral") in ran
    assert not [row for row in summary_rows if row[2] in ("failed", "not run")], summary_rows
    # "what the clusters hold now": each cluster lists what the plan applied there (its ApplySets' members)
    held = held_objects(output)
    expected = {
        "ephemeral": {("Namespace", "demo-apps"), ("ServiceAccount", "deployer"), ("RoleBinding", "app-deployer")},
        "target": {("Namespace", "demo-apps"), ("CustomResourceDefinition", "widgets.demo.phasekit.dev"),
                   ("Widget", "small"), ("Widget", "large"), ("Deployment", "hello"), ("Service", "hello")},
        "workload01": {("Namespace", "demo-apps"), ("Deployment", "hello"), ("Service", "hello"),
                       ("ConfigMap", "hello-greeting")},
    }
    for cluster, objects in expected.items():
        assert objects <= held[cluster], (cluster, held[cluster])
    assert ("Widget", "small") not in held["ephemeral"] | held["workload01"]   # only target serves the CRD
    # The Mermaid graph and the resumed run are part of the demo.
    assert "flowchart TD" in output
    # history: the demo's runs, read back from each cluster's run record (the full run, then the start_at one)
    history = re.findall(r"\bworkload01\s+\d{4}-\d\d-\d\dT\S+Z\s+\d{8}T\d{6}Z-[0-9a-f]{4}\s+run\s+\S+@\S+", output)
    assert len(history) >= 2, output   # the full run and the start_at run, newest first
    workload01 = Cluster("workload01", clusters["target"].dir.parent)
    live = workload01.get_json("deployment", "hello", "-n", "demo-apps")
    assert live["status"]["availableReplicas"] == 2
    # greeting.yaml.j2 in the app's kustomization, rendered with each cluster host's variables
    for cluster in (workload01, clusters["target"]):
        greeting = cluster.get_json("configmap", "hello-greeting", "-n", "demo-apps")["data"]["greeting"]
        assert greeting == f"hello from {cluster.name}"
    # The site's Helm chart, with values rendered for each cluster host, then destroyed by the last step.
    assert ("apps/settings", "workload01") in ran
    assert '--- workload01: {"cluster":"workload01","tier":"gold"}' in output   # before the destroy
    assert re.search(r"^apps/settings\s+workload01\s+destroyed\b", output, re.M), output[-3000:]
    assert workload01.kubectl("get", "configmap", "settings", "-n", "demo-apps", check=False).returncode != 0
