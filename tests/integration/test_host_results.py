# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Every cluster host in PLAY RECAP and in AWX's host summaries (issue 37, point 1), on the local clusters.

A fleet of 24 cluster hosts over the two API servers (a context and a namespace each). The plan applies one
ConfigMap, rendered per host, rolled out in batches of 12 with no failure allowed. The first run changes every host;
the second changes 6 (a new value), leaves 5 as they are, fails 1 (a name the API server refuses) and never reaches
the 12 of the second batch (the rollout stopped). With ``plan_host_results``, each host's PLAY RECAP line, each
host's ``runner_on_*`` event of its result task and the ``playbook_on_stats`` counts say exactly that, through the
playbook ``phasekit.kube.run``, through the role in a user's ``site.yml`` and through ansible-runner (AWX's engine).
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import ansible_runner
import pytest
import yaml
from fleet_site import fleet_kubeconfig, recap

API = "phasekit.dev/v1alpha1"
RUN = uuid.uuid4().hex[:5]
HOSTS = [f"hr{number:02d}" for number in range(24)]
CHANGED, OK, FAILED, NEVER = HOSTS[:6], HOSTS[6:11], HOSTS[11:12], HOSTS[12:]
FIRST = HOSTS[0]   # the play's first host also runs the role's run-once tasks
VENV_BIN = Path(sys.executable).parent
RESULT_TASK = "This cluster's result in plan fleet"
OUTCOME_EVENTS = ("runner_on_ok", "runner_on_failed", "runner_on_skipped", "runner_on_unreachable")
MANIFEST = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: "{{ cm_name | default('fleet') }}"
data:
  v: "{{ cm_value }}"
"""
DOCUMENTS = [
    {"apiVersion": API, "kind": "Phase", "metadata": {"name": "apps"},
     "spec": {"cluster": "all", "executor": "apply", "source": "../manifests/fleet.yaml.j2",
              "rollout": {"batches": [12, "100%"], "max_fail_percentage": 0, "order": "inventory"}}},
    {"apiVersion": API, "kind": "PhasePlan", "metadata": {"name": "fleet"}, "spec": {"phases": ["apps"]}},
]
SITE_YML = """\
- name: Deploy the fleet
  hosts: all
  gather_facts: false
  roles:
    - role: phasekit.kube.plan
      vars:
        plan_src: [phases]
        plan_name: fleet
        plan_show_plan: false
        plan_host_results: true
"""


def namespace_of(host: str, tag: str) -> str:
    return f"pk-hr-{RUN}-{tag}-{host}"


def cluster_of(host: str, clusters) -> str:
    names = sorted(clusters)
    return names[int(host[2:]) % len(names)]


def write_fleet(root: Path, second_run: bool) -> None:
    """The site: kubeconfig, inventory (the second run's values when ``second_run``), phases, bundle."""
    (root / "phases").mkdir(parents=True, exist_ok=True)
    (root / "manifests").mkdir(exist_ok=True)
    (root / "phases" / "site.yaml").write_text(yaml.safe_dump_all(DOCUMENTS))
    (root / "manifests" / "fleet.yaml.j2").write_text(MANIFEST)
    hosts = {host: {"cm_value": "one"} for host in HOSTS}
    if second_run:
        hosts.update({host: {"cm_value": "two"} for host in CHANGED})
        hosts.update({host: {"cm_value": "two", "cm_name": "Not_A_Valid_Name"} for host in FAILED})
        hosts.update({host: {"cm_value": "two"} for host in NEVER})
    (root / "inventory.yml").write_text(yaml.safe_dump({"all": {
        "vars": {"ansible_connection": "local", "kube_kubeconfig": str(root / "fleet.kubeconfig"),
                 "kube_context": "{{ inventory_hostname }}"},
        "hosts": hosts}}))
    (root / "site.yml").write_text(SITE_YML)


@pytest.fixture()
def fleet(clusters, tmp_path, request):
    """24 cluster hosts over the local clusters, each with a context and a namespace of its own."""
    tag = uuid.uuid4().hex[:4]
    kubeconfig = fleet_kubeconfig(clusters, HOSTS, cluster_of, lambda host: namespace_of(host, tag))
    (tmp_path / "fleet.kubeconfig").write_text(yaml.safe_dump(kubeconfig))
    (tmp_path / "fleet.kubeconfig").chmod(0o600)
    write_fleet(tmp_path, second_run=False)
    yield tmp_path
    for host in HOSTS:
        clusters[cluster_of(host, clusters)].kubectl("delete", "namespace", namespace_of(host, tag), "--wait=false",
                                                     "--ignore-not-found")


def ansible_playbook(root: Path, collections_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(collections_path), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_PYTHON_INTERPRETER": sys.executable, "ANSIBLE_RETRY_FILES_ENABLED": "0"}
    env.pop("KUBECONFIG", None)
    done = subprocess.run([str(VENV_BIN / "ansible-playbook"), *args, "-i", "inventory.yml", "-f", "12"], cwd=root,
                          env=env, capture_output=True, text=True, check=False)
    assert "Traceback" not in done.stdout + done.stderr, done.stdout[-4000:] + done.stderr[-2000:]
    return done


def expected_counts(step: str) -> dict:
    """Each host's (changed, failed, skipped) in PLAY RECAP after the first or the second run."""
    if step == "first":
        return {host: (1, 0, 0) for host in HOSTS}
    return {**{host: (1, 0, 0) for host in CHANGED}, **{host: (0, 0, 0) for host in OK},
            **{host: (0, 1, 0) for host in FAILED}, **{host: (0, 0, 1) for host in NEVER}}


def assert_recap(output: str, step: str) -> None:
    """Each host's own line: one task of the role ran for it, its result."""
    rows = recap(output)
    assert sorted(rows) == sorted(HOSTS), output[-6000:]
    for host, (changed, failed, skipped) in expected_counts(step).items():
        row = rows[host]
        if host == FIRST:   # the run-once tasks count for it too (the engine's task changed the fleet)
            assert (row["changed"] >= changed, row["failed"], row["skipped"]) == (True, failed, skipped), (host, row)
            continue
        assert (row["ok"], row["changed"], row["failed"], row["skipped"]) == (
            1 - failed - skipped, changed, failed, skipped), (host, row, output[-3000:])


def result_lines(output: str) -> dict:
    """The result task's outcome line per host ('changed', 'ok', 'fatal', 'skipping')."""
    lines, inside = {}, False
    for line in output.splitlines():
        if line.startswith("TASK ["):
            inside = RESULT_TASK in line
        elif inside and ": [" in line:
            word, host = line.split(": [", 1)
            lines[host.split("]", 1)[0]] = word
    return lines


@pytest.mark.parametrize("entry", ["playbook", "role"])
def test_every_cluster_host_has_its_own_line_in_play_recap(clusters, collections_path, fleet, entry):
    command = (["phasekit.kube.run", "-e", "plan=fleet", "-e", "plan_show_plan=false", "-e", "plan_host_results=true"]
               if entry == "playbook" else ["site.yml"])
    first = ansible_playbook(fleet, collections_path, *command)
    assert first.returncode == 0, first.stdout[-6000:]
    assert_recap(first.stdout, "first")
    assert set(result_lines(first.stdout).values()) == {"changed"}, first.stdout[-4000:]
    write_fleet(fleet, second_run=True)
    second = ansible_playbook(fleet, collections_path, *command)
    assert second.returncode != 0, second.stdout[-6000:]
    assert_recap(second.stdout, "second")
    words = result_lines(second.stdout)
    assert words == {**{host: "changed" for host in CHANGED}, **{host: "ok" for host in OK},
                     **{host: "fatal" for host in FAILED}, **{host: "skipping" for host in NEVER}}, second.stdout[-6000:]
    # the failed cluster's result names its phase and the phase's document; no banner without an outcome line
    assert f"phase apps failed on cluster {FAILED[0]}" in second.stdout, second.stdout[-4000:]
    assert "Clusters with nothing left to do leave the role" not in second.stdout


def runner_job(root: Path, collections_path: Path, bin_dir: Path):
    """The role's site.yml as an AWX job: ansible-runner with a private data dir, as AWX lays it out."""
    data = root / "runner"
    for name in ("project", "inventory", "env"):
        (data / name).mkdir(parents=True, exist_ok=True)
    for name in ("site.yml",):
        (data / "project" / name).write_text((root / name).read_text())
    for name in ("phases", "manifests"):
        target = data / "project" / name
        if not target.exists():
            target.symlink_to(root / name)
    (data / "inventory" / "hosts.yml").write_text((root / "inventory.yml").read_text())
    (data / "env" / "envvars").write_text(yaml.safe_dump({
        "ANSIBLE_COLLECTIONS_PATH": str(collections_path), "ANSIBLE_PYTHON_INTERPRETER": sys.executable,
        "ANSIBLE_NOCOLOR": "1", "PATH": f"{bin_dir}{os.pathsep}{VENV_BIN}{os.pathsep}{os.environ['PATH']}"}))
    saved = os.environ.pop("KUBECONFIG", None)
    try:
        return ansible_runner.run(private_data_dir=str(data), playbook="site.yml", quiet=True, forks=12)
    finally:
        if saved is not None:
            os.environ["KUBECONFIG"] = saved


def test_awx_job_has_one_result_event_and_a_host_summary_per_cluster(clusters, collections_path, bin_dir, fleet):
    first = runner_job(fleet, collections_path, bin_dir)
    assert first.status == "successful", first.stdout.read()[-4000:]
    write_fleet(fleet, second_run=True)
    job = runner_job(fleet, collections_path, bin_dir)
    assert job.status == "failed", job.stdout.read()[-4000:]
    events = {}
    for event in job.events:
        data = event.get("event_data", {})
        if event["event"] in OUTCOME_EVENTS and data.get("task") == RESULT_TASK:
            events.setdefault(data["host"], []).append(event["event"])
    assert events == {**{host: ["runner_on_ok"] for host in CHANGED + OK},
                      **{host: ["runner_on_failed"] for host in FAILED},
                      **{host: ["runner_on_skipped"] for host in NEVER}}, events
    changed = {event["event_data"]["host"]: event["event_data"]["res"]["changed"] for event in job.events
               if event["event"] == "runner_on_ok" and event["event_data"].get("task") == RESULT_TASK}
    assert changed == {**{host: True for host in CHANGED}, **{host: False for host in OK}}
    # AWX's job host summaries are made from the playbook_on_stats event: every cluster host, its own counts
    stats = next(event["event_data"] for event in job.events if event["event"] == "playbook_on_stats")
    assert set(stats["processed"]) == set(HOSTS), stats["processed"]
    assert set(stats["failures"]) == set(FAILED), stats["failures"]
    assert set(stats["skipped"]) == set(NEVER), stats["skipped"]
    assert set(stats["changed"]) == set(CHANGED), stats["changed"]
    assert set(stats["ok"]) == set(HOSTS) - set(FAILED) - set(NEVER), stats["ok"]
    assert {host: stats["ok"][host] for host in OK} == {host: 1 for host in OK}, stats["ok"]


@pytest.mark.parametrize("entry", ["playbook", "role"])
def test_a_plan_with_tasks_phases_ends_with_each_cluster_result(clusters, collections_path, tmp_path, entry):
    """A plan in steps (an apply phase, then a tasks phase per host): the task files run, then every host's result;
    status (read only) reports each host ok."""
    namespace = f"pk-hr-{RUN}-steps-{entry}"
    command = (["phasekit.kube.run", "-e", "plan=fleet", "-e", "plan_show_plan=false", "-e", "plan_host_results=true"]
               if entry == "playbook" else ["site.yml"])
    (tmp_path / "phases").mkdir()
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "note.yml").write_text(
        "- name: The task file ran\n  ansible.builtin.debug:\n    msg: \"task file on {{ inventory_hostname }}\"\n")
    source = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "steps"}, "data": {"v": "1"}}]
    (tmp_path / "phases" / "site.yaml").write_text(yaml.safe_dump_all([
        {"apiVersion": API, "kind": "Phase", "metadata": {"name": "apps"},
         "spec": {"cluster": "all", "executor": "apply", "source": source, "options": {"namespace": namespace}}},
        {"apiVersion": API, "kind": "Phase", "metadata": {"name": "note"},
         "spec": {"cluster": "all", "executor": "tasks", "source": "../tasks/note.yml"}},
        {"apiVersion": API, "kind": "PhasePlan", "metadata": {"name": "fleet"}, "spec": {"phases": ["apps", "note"]}},
    ]))
    (tmp_path / "inventory.yml").write_text(yaml.safe_dump({"all": {
        "vars": {"ansible_connection": "local", "plan_record_namespace": namespace},
        "hosts": {name: {"kube_kubeconfig": str(cluster.admin_kubeconfig), "kube_context": name}
                  for name, cluster in clusters.items()}}}))
    (tmp_path / "site.yml").write_text(SITE_YML)
    for cluster in clusters.values():
        cluster.kubectl("create", "namespace", namespace)
    try:
        done = ansible_playbook(tmp_path, collections_path, *command)
        assert done.returncode == 0, done.stdout[-6000:]
        assert all(f"task file on {name}" in done.stdout for name in clusters), done.stdout[-4000:]
        assert result_lines(done.stdout) == {name: "changed" for name in clusters}, done.stdout[-4000:]
        assert sorted(recap(done.stdout)) == sorted(clusters)
        done = ansible_playbook(tmp_path, collections_path, *command, "-e", "plan_action=status")
        assert done.returncode == 0, done.stdout[-6000:]
        assert result_lines(done.stdout) == {name: "ok" for name in clusters}, done.stdout[-4000:]
        assert all(row["changed"] == 0 for row in recap(done.stdout).values()), done.stdout[-3000:]
    finally:
        for cluster in clusters.values():
            cluster.kubectl("delete", "namespace", namespace, "--ignore-not-found", "--wait=false")
