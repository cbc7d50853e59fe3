# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Jobs run the way AWX runs them, in the execution environment image `make ee` builds.

AWX (and Automation Platform's controller) runs a job through receptor as
``ansible-runner transmit`` of the job's private data dir, piped into
``ansible-runner worker`` inside the execution environment, piped into
``ansible-runner process``. Here: ``podman run -i phasekit-kube-ee:latest``
is the worker. First an inventory sync (``ansible-inventory`` over the
``phasekit.kube.clusters`` plugin, a job in the EE as well), then the example
site's plan over the synced inventory with the ``phasekit kubeconfigs``
credential injected as AWX renders it, then a plan with a failing phase.

The pipe exits 0 whatever the job did: the job's result is read from what
``process`` writes, ``artifacts/<ident>/status`` and ``rc``, and the per-host
events (what AWX shows as each host's status). No credential may be in them.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest
import yaml

from conftest import REPO, VENV_BIN, Cluster
from test_inventory import leaked, secret_strings
from test_runner import CREDENTIAL_TYPE, awx_inject, flattened

pytestmark = [pytest.mark.ee]

IMAGE = os.environ.get("PHASEKIT_EE_IMAGE", "phasekit-kube-ee:latest")
SITE = REPO / "examples/site"
RUNNER_DIR = "/runner"   # where the worker unpacks the private data dir in the container
SITE_CLUSTERS = ["ephemeral", "target", "workload01"]

# The AWX inventory source ("Sourced from a Project"): the contexts of the credential's
# KUBECONFIG list, a site file for parents and the Secret source, the example site's groups.
INVENTORY_SOURCE = """\
plugin: phasekit.kube.clusters
kubeconfigs:
  - env: KUBECONFIG
    contexts: [ephemeral, target]
site:
  - clusters.yml
groups:
  management: inventory_hostname == 'ephemeral'
  workload: inventory_hostname in ['target', 'workload01']
  mgmt_and_target: inventory_hostname in ['ephemeral', 'target']
"""
SITE_FILE = {"clusters": {
    "target": {"parent": "ephemeral"},
    "workload01": {"parent": "target", "context": "workload01",
                   "kubeconfig": {"secret": {"name": "workload01-kubeconfig", "namespace": "demo-platform"}}},
}}
FAILING_PHASE = {"apiVersion": "phasekit.dev/v1alpha1", "kind": "Phase", "metadata": {"name": "broken"},
                 "spec": {"cluster": "target", "executor": "command",
                          "options": {"cmd": "echo 'the broken phase fails' >&2; exit 3", "shell": True}}}
FAILING_PLAYBOOK = """\
- name: A plan whose only phase fails
  hosts: all
  gather_facts: false
  roles:
    - role: phasekit.kube.plan
      vars:
        plan_src: [failing]
"""


class Job:
    """What ``ansible-runner process`` wrote for one job: status, rc and the events."""

    def __init__(self, pipe: subprocess.CompletedProcess, artifacts: Path):
        self.pipe = pipe
        self.artifacts = artifacts
        self.status = (artifacts / "status").read_text().strip() if (artifacts / "status").exists() else None
        self.rc = (artifacts / "rc").read_text().strip() if (artifacts / "rc").exists() else None
        events_dir = artifacts / "job_events"
        self.events = sorted((json.loads(path.read_text()) for path in events_dir.glob("*.json")),
                             key=lambda event: event.get("counter", 0)) if events_dir.exists() else []
        self.stdout = (artifacts / "stdout").read_text() if (artifacts / "stdout").exists() else ""

    def text(self) -> str:
        """Every event as AWX stores it, and the stdout."""
        return "\n".join(json.dumps(event, default=str) for event in self.events) + self.stdout

    def hosts(self, event: str) -> set[str]:
        return {e["event_data"]["host"] for e in self.events if e["event"] == event and e["event_data"].get("host")}

    def stats(self) -> dict:
        found = [e["event_data"] for e in self.events if e["event"] == "playbook_on_stats"]
        return found[-1] if found else {}

    def __repr__(self):
        return (f"<Job status={self.status} rc={self.rc} pipe={self.pipe.returncode}>\n{self.pipe.stderr[-3000:]}\n"
                f"{self.stdout[-6000:]}")


# AWX sends a job with ansible-runner's Python API (the CLI's transmit wants a playbook, module or role; an
# inventory sync runs the ansible-inventory binary)
TRANSMIT = ("import json, sys, ansible_runner; ansible_runner.run(streamer='transmit', _output=sys.stdout.buffer, "
            "**json.loads(sys.argv[1]))")


def run_job(private_data_dir: Path, tmp_path: Path, **runner_kwargs) -> Job:
    """``ansible-runner transmit | podman run -i IMAGE ansible-runner worker | ansible-runner process``;
    ``runner_kwargs``: ansible_runner.run's (playbook, or binary and cmdline)."""
    ident = uuid.uuid4().hex[:12]
    out = tmp_path / f"processed-{ident}"
    out.mkdir()
    transmit = [sys.executable, "-c", TRANSMIT,
                json.dumps({"private_data_dir": str(private_data_dir), "ident": ident, **runner_kwargs})]
    worker = ["podman", "run", "--rm", "-i", "--network", "host", IMAGE,
              "ansible-runner", "worker", f"--private-data-dir={RUNNER_DIR}"]
    process = [str(VENV_BIN / "ansible-runner"), "process", str(out)]
    script = " | ".join(shlex.join(argv) for argv in (transmit, worker, process))
    pipe = subprocess.run(["bash", "-o", "pipefail", "-c", script], capture_output=True, text=True, check=False,
                          timeout=900)
    artifacts = out / "artifacts"  # the API's transmit leaves the ident out of the processed tree's path
    return Job(pipe, artifacts / ident if (artifacts / ident).is_dir() else artifacts)


@pytest.fixture(scope="module")
def ee_image():
    if subprocess.run(["podman", "image", "exists", IMAGE], check=False).returncode != 0:
        pytest.fail(f"the execution environment image {IMAGE} is not built: make ee builds it")
    return IMAGE


@pytest.fixture(scope="module")
def site_clusters(clusters):
    """The example site's three clusters (workload01 beside the two every test uses)."""
    subprocess.run([sys.executable, str(REPO / "hack/clusters.py"), "up", *SITE_CLUSTERS], check=True,
                   capture_output=True, text=True)
    return clusters


@pytest.fixture(scope="module")
def secrets(site_clusters) -> list[str]:
    return secret_strings(site_clusters["ephemeral"].dir.parent)


def credential(private_data_dir: Path, clusters, tmp_path: Path) -> dict:
    """The "phasekit kubeconfigs" credential, injected as AWX does: files in env/, the variables naming them where
    the job sees them (/runner/env/...)."""
    inputs = {"kubeconfig_1": flattened(clusters["ephemeral"], tmp_path / "e.yaml").read_text(),
              "kubeconfig_2": flattened(clusters["target"], tmp_path / "t.yaml").read_text()}
    env = awx_inject(CREDENTIAL_TYPE, inputs, private_data_dir / "env", shown_as=f"{RUNNER_DIR}/env")
    (private_data_dir / "env" / "envvars").write_text(yaml.safe_dump({**env, "ANSIBLE_NOCOLOR": "1"}))
    return env


@pytest.fixture(scope="module")
def synced_inventory(ee_image, site_clusters, tmp_path_factory) -> dict:
    """An AWX inventory sync: ansible-inventory over the plugin, in the EE, with the credential attached."""
    tmp_path = tmp_path_factory.mktemp("sync")
    root = tmp_path / "private"
    for name in ("project/inventory", "env"):
        (root / name).mkdir(parents=True)
    (root / "project/inventory/site.clusters.yml").write_text(INVENTORY_SOURCE)
    (root / "project/inventory/clusters.yml").write_text(yaml.safe_dump(SITE_FILE))
    credential(root, site_clusters, tmp_path)
    job = run_job(root, tmp_path, binary="ansible-inventory",
                  cmdline=f"-i {RUNNER_DIR}/project/inventory/site.clusters.yml --list --export")
    assert job.pipe.returncode == 0 and job.status == "successful" and job.rc == "0", job
    return json.loads(job.stdout[job.stdout.index("{"):])


def test_the_inventory_plugin_runs_in_the_ee(synced_inventory, secrets):
    hostvars = synced_inventory["_meta"]["hostvars"]
    assert sorted(hostvars) == SITE_CLUSTERS
    assert hostvars["ephemeral"]["kube_kubeconfig"] == {"env": "KUBECONFIG"}
    assert hostvars["workload01"]["kube_parent"] == "target"
    assert sorted(synced_inventory["mgmt_and_target"]["hosts"]) == ["ephemeral", "target"]
    assert leaked(json.dumps(synced_inventory), secrets) == []


@pytest.fixture()
def job_dir(synced_inventory, site_clusters, tmp_path) -> Path:
    """A job's private data dir as AWX writes it: the project, the synced inventory as a script, the credential."""
    root = tmp_path / "private"
    shutil.copytree(SITE, root / "project", ignore=shutil.ignore_patterns("inventory", "secrets"))
    (root / "inventory").mkdir()
    script = root / "inventory/hosts"
    script.write_text("#!/bin/sh\ncat <<'INVENTORY'\n" + json.dumps(synced_inventory) + "\nINVENTORY\n")
    script.chmod(0o755)
    (root / "env").mkdir()
    credential(root, site_clusters, tmp_path)
    # the example's stand-in for Cluster API reads workload01's kubeconfig from site_clusters_dir
    stand_in = root / "env/clusters/workload01"
    stand_in.mkdir(parents=True)
    flattened(Cluster("workload01", site_clusters["target"].dir.parent), stand_in / "admin.kubeconfig")
    (root / "env/extravars").write_text(yaml.safe_dump({"site_clusters_dir": f"{RUNNER_DIR}/env/clusters"}))
    return root


def test_the_example_sites_plan_runs_as_an_awx_job(job_dir, tmp_path, secrets):
    job = run_job(job_dir, tmp_path, playbook="site.yml")
    assert job.pipe.returncode == 0, job
    assert (job.status, job.rc) == ("successful", "0"), job
    # every cluster host has its own ok events and none failed: what AWX shows per host
    assert set(SITE_CLUSTERS) <= job.hosts("runner_on_ok"), job
    stats = job.stats()
    assert set(SITE_CLUSTERS) <= set(stats["ok"]) and not stats["failures"] and not stats["dark"], stats
    assert "Summary of plan deploy" in job.stdout, job
    # the summary's rows as AWX shows them: one verbose event per line, of the summary task, no quoted list
    rows = [event["stdout"] for event in job.events if event["event"] == "verbose"
            and event["event_data"].get("task", "").endswith("Summary of plan deploy")]
    assert rows and rows[0].split()[:3] == ["PHASE", "CLUSTER", "RESULT"], job
    assert any(row.split()[:2] == ["apps/hello", "workload01"] for row in rows), rows
    assert '"msg": [' not in job.stdout, job
    assert leaked(job.text(), secrets) == []


def test_a_failing_phase_is_a_failed_job_and_a_failed_host(job_dir, tmp_path, secrets):
    (job_dir / "project/failing").mkdir()
    (job_dir / "project/failing/broken.yaml").write_text(yaml.safe_dump(FAILING_PHASE))
    (job_dir / "project/failing.yml").write_text(textwrap.dedent(FAILING_PLAYBOOK))
    job = run_job(job_dir, tmp_path, playbook="failing.yml")
    # ansible-runner process exits 0 or with the job's rc, by version: the artifacts are what says the job failed
    assert job.pipe.returncode in (0, int(job.rc or 0)), job
    assert job.status == "failed" and job.rc not in (None, "0"), job
    assert job.hosts("runner_on_failed") == {"target"}, job
    assert job.stats()["failures"] == {"target": 1}, job.stats()
    assert "the broken phase fails" in job.text()
    assert leaked(job.text(), secrets) == []


def test_the_tools_are_in_the_image(ee_image):
    proc = subprocess.run(["podman", "run", "--rm", ee_image, "bash", "-c",
                           "kubectl version --client -o json && helm version --short && "
                           "sops --version --disable-version-check && ansible-galaxy collection list phasekit.kube"],
                          capture_output=True, text=True, check=False, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert '"gitVersion": "v1.37.2"' in proc.stdout and "v4." in proc.stdout and "sops 3.9.0" in proc.stdout
    assert "phasekit.kube" in proc.stdout
