# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""A plan over a fleet of 24 cluster hosts (contexts over the two local API servers, a namespace each).

Proves what must hold while the engine runs a phase for all clusters in one
controller task: plan order with a barrier per phase, a failure that fails
exactly its cluster in PLAY RECAP and stops the plan, ``--limit`` slices,
``tasks`` phases that run the user's task file on each host with its own
variables, and a re-run that changes nothing.
"""

from __future__ import annotations

import json
import re
import shutil
import uuid

import pytest
import yaml
from fleet_site import fleet_kubeconfig, recap

pytestmark = [pytest.mark.k8s_matrix]

API = "phasekit.dev/v1alpha1"
HOSTS = [f"fleet{i:02d}" for i in range(24)]
CANARY = HOSTS[:4]
RUN_ID = uuid.uuid4().hex[:6]


def namespace_of(host: str) -> str:
    return f"pk-fleet-{RUN_ID}-{host}"


def cluster_of(host: str, clusters) -> str:
    names = sorted(clusters)
    return names[int(host[-2:]) % len(names)]


def phase(name, **spec):
    return {"apiVersion": API, "kind": "Phase", "metadata": {"name": name}, "spec": spec}


CONFIG = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"fleet-{i}"}, "data": {"i": str(i)}}
          for i in range(5)]
# a .j2 bundle: rendered for each cluster host with its own variables
WIDE_TEMPLATE = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: fleet-wide
data:
  v: "1"
  host: "{{ inventory_hostname }}"
  tier: "{{ tier }}"
"""
SEEN = ("{{ inventory_hostname }} {{ tier }} {{ plan_kubeconfig['current-context'] }} "
        "{{ plan_kubeconfig.contexts[0].context.namespace }}")
FROM_TASKS = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "from-tasks"},
              "data": {"host": "{{ inventory_hostname }}"}}
LOOK = [
    {"name": "Record what this host sees",
     # a file per host: hosts run the task file at once, and lines added to one shared file could be lost
     "ansible.builtin.copy": {"dest": "{{ fleet_log }}/{{ inventory_hostname }}", "mode": "0600",
                              "content": SEEN + "\n"}},
    {"name": "A phasekit action in the task file reuses the resolved kubeconfig",
     "phasekit.kube.apply": {"definition": FROM_TASKS}},
]

DOCUMENTS = [
    phase("config", cluster="fleet", executor="apply", source="../manifests/config.yaml",
          options={"prune": True}),
    phase("ready", cluster="fleet", executor="wait", source="../manifests/config.yaml", options={"timeout": 30}),
    phase("look", cluster="canary", executor="tasks", source="../tasks/look.yml"),
    phase("gate", cluster="fleet", executor="command",
          options={"cmd": 'test "$PHASEKIT_HOST" != "$FLEET_BAD" || { echo "gate refused $PHASEKIT_HOST" >&2; exit 4; }',
                   "shell": True}),
    phase("wide", cluster="fleet", executor="apply", source="../manifests/wide.yaml.j2"),
    {"apiVersion": API, "kind": "PhasePlan", "metadata": {"name": "fleet"},
     "spec": {"phases": ["config", "ready", "gate", "wide"]}},
    {"apiVersion": API, "kind": "PhasePlan", "metadata": {"name": "mixed"},
     "spec": {"phases": ["config", "look", "wide"]}},
]


@pytest.fixture(scope="module")
def fleet(clusters, tmp_path_factory):
    """The site and an inventory of 24 cluster hosts, each a context with a namespace of its own."""
    root = tmp_path_factory.mktemp("fleet")
    kubeconfig = fleet_kubeconfig(clusters, HOSTS, cluster_of, namespace_of)
    (root / "fleet.kubeconfig").write_text(yaml.safe_dump(kubeconfig))
    (root / "fleet.kubeconfig").chmod(0o600)
    (root / "phases").mkdir()
    (root / "phases" / "fleet.yaml").write_text(yaml.safe_dump_all(DOCUMENTS, sort_keys=False))
    (root / "manifests").mkdir()
    (root / "manifests" / "config.yaml").write_text(yaml.safe_dump_all(CONFIG))
    (root / "manifests" / "wide.yaml.j2").write_text(WIDE_TEMPLATE)
    (root / "tasks").mkdir()
    (root / "tasks" / "look.yml").write_text(yaml.safe_dump(LOOK, sort_keys=False))
    inventory = {"all": {
        "vars": {"ansible_connection": "local", "kube_kubeconfig": str(root / "fleet.kubeconfig"),
                 "kube_context": "{{ inventory_hostname }}", "fleet_log": str(root / "look")},
        "children": {"fleet": {"hosts": {host: {"tier": "canary" if host in CANARY else "main"} for host in HOSTS},
                               "children": {"canary": {"hosts": {host: {} for host in CANARY}}}}}}}
    (root / "inventory.yml").write_text(yaml.safe_dump(inventory))
    yield root
    for host in HOSTS:
        clusters[cluster_of(host, clusters)].kubectl("delete", "namespace", namespace_of(host), "--wait=false",
                                                     "--ignore-not-found")


@pytest.fixture()
def run_fleet(fleet, run_playbook):
    def run(*extra, verbosity=0):
        return run_playbook("- ansible.builtin.import_playbook: phasekit.kube.run\n", fleet / "inventory.yml",
                            "-f", "10", *extra, verbosity=verbosity)
    return run


RECORD = "phasekit-run-"  # each host's run record lives in its namespace too


def configmaps(clusters, host: str) -> list[str]:
    found = clusters[cluster_of(host, clusters)].get_json("configmaps", "-n", namespace_of(host))
    return sorted(item["metadata"]["name"] for item in found["items"]
                  if item["metadata"]["name"] != "kube-root-ca.crt" and not item["metadata"]["name"].startswith(RECORD))


def progress_lines(output: str) -> list[str]:
    """The phases in the order their outcome lines were printed (not the progress lines of a phase still running)."""
    return [line.split("]")[0].lstrip("[") for line in output.splitlines()
            if re.match(r"^\[[\w/-]+\] \w+ on \d+", line) and "still running" not in line]


@pytest.mark.smoke
def test_fleet_plan_order_failure_recap_and_rerun(run_fleet, fleet, clusters, monkeypatch):
    bad = HOSTS[7]
    monkeypatch.setenv("FLEET_BAD", bad)
    result = run_fleet("-e", "plan=fleet")
    assert result.rc == 2, result
    # plan order, one line per phase after its barrier; the failed gate stops the plan before 'wide'
    assert progress_lines(result.output) == ["config", "ready", "gate"]
    assert "[config] apply on 24 cluster(s): 24 changed" in result.output
    assert f"{bad}: failed: command /bin/sh -c" in result.output and f"gate refused {bad}" in result.output
    # exactly the failed cluster is a failed host (hosts with nothing to report run no task: they are not listed)
    rows = recap(result.output)
    assert {host for host, row in rows.items() if row.get("failed")} == {bad}
    assert set(rows) <= set(HOSTS)
    assert f"phase gate failed on cluster {bad}" in result.output
    for host in HOSTS:
        assert configmaps(clusters, host) == [f"fleet-{i}" for i in range(5)], host
    # every cluster host keeps its run record, the failure included (its API server was reachable)
    record = clusters[cluster_of(bad, clusters)].get_json("configmap", f"{RECORD}fleet.{bad.lower()}",
                                                          "-n", namespace_of(bad))["data"]
    assert [json.loads(record[phase])[0]["result"] for phase in ("config", "gate")] == ["changed", "failed"]
    assert "wide" not in record
    summary = result.stdout[result.stdout.index("Summary of plan fleet"):]
    assert re.search(r'^wide\s+fleet00\s+not run', summary, flags=re.MULTILINE), summary

    # the cause is gone: the whole plan completes, the first phases change nothing
    monkeypatch.setenv("FLEET_BAD", "nobody")
    result = run_fleet("-e", "plan=fleet")
    assert result.rc == 0, result
    assert "[config] apply on 24 cluster(s): 24 ok" in result.output
    assert "[wide] apply on 24 cluster(s): 24 changed" in result.output
    assert all(not row.get("failed") for row in recap(result.output).values())
    for host in HOSTS:
        wide = clusters[cluster_of(host, clusters)].get_json("configmap", "fleet-wide", "-n", namespace_of(host))
        assert wide["data"] == {"v": "1", "host": host, "tier": "canary" if host in CANARY else "main"}, host


def test_limit_restricts_the_clusters_touched(run_fleet, clusters, monkeypatch):
    monkeypatch.setenv("FLEET_BAD", "nobody")
    chosen = [HOSTS[2], HOSTS[13]]
    for host in HOSTS:
        clusters[cluster_of(host, clusters)].kubectl("delete", "configmap", "fleet-3", "-n", namespace_of(host),
                                                     "--ignore-not-found")
    result = run_fleet("-e", "plan=fleet", "-e", "only=config", "--limit", ",".join(chosen))
    assert result.rc == 0, result
    assert "[config] apply on 2 cluster(s): 2 changed" in result.output
    assert set(recap(result.output)) <= set(chosen)
    for host in HOSTS:
        assert ("fleet-3" in configmaps(clusters, host)) == (host in chosen), host
    summary = result.stdout[result.stdout.index("Summary of plan fleet"):]
    assert re.search(rf'^config\s+{HOSTS[0]}\s+not in play', summary, flags=re.MULTILINE), summary


@pytest.mark.smoke
def test_tasks_phase_runs_on_each_host_with_its_own_variables(run_fleet, fleet, clusters):
    shutil.rmtree(fleet / "look", ignore_errors=True)
    (fleet / "look").mkdir()
    result = run_fleet("-e", "plan=mixed", "--diff")
    assert result.rc == 0, result
    assert progress_lines(result.output) == ["config", "look", "wide"]
    seen = sorted(path.read_text().split() for path in (fleet / "look").iterdir())
    assert seen == [[host, "canary", host, namespace_of(host)] for host in CANARY]
    for host in HOSTS:
        assert ("from-tasks" in configmaps(clusters, host)) == (host in CANARY), host
    assert all(not row.get("failed") for row in recap(result.output).values())


def test_an_unreachable_cluster_fails_alone_at_the_barrier(fleet, run_playbook, clusters, tmp_path):
    """One host's API server is down: that host fails with the server and the error, the phase completes on the
    others, and the plan stops after it."""
    inventory = yaml.safe_load((fleet / "inventory.yml").read_text())
    group = inventory["all"]["children"]["fleet"]
    group["hosts"] = {host: group["hosts"][host] for host in HOSTS[:4]}
    group["children"]["canary"]["hosts"] = {HOSTS[0]: {}}
    dead = yaml.safe_load(clusters["target"].kubectl("config", "view", "--raw", "--flatten", "--minify").stdout)
    dead["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:1"
    dead["contexts"][0]["context"]["namespace"] = namespace_of(HOSTS[0])
    group["hosts"]["dead"] = {"tier": "main", "kube_kubeconfig": {"content": dead}, "kube_context": dead["contexts"][0]["name"]}
    path = tmp_path / "inventory.yml"
    path.write_text(yaml.safe_dump(inventory))
    for host in HOSTS[:4]:
        clusters[cluster_of(host, clusters)].kubectl("delete", "configmap", "fleet-0", "-n", namespace_of(host),
                                                     "--ignore-not-found")
    result = run_playbook("- ansible.builtin.import_playbook: phasekit.kube.run\n", path, "-e", "plan=fleet",
                          "-e", f"phases={fleet / 'phases'}")
    assert result.rc == 2, result
    assert {host for host, row in recap(result.output).items() if row.get("failed")} == {"dead"}
    assert "dead: failed: cannot reach the API server https://127.0.0.1:1" in result.output, result
    assert progress_lines(result.output) == ["config"]
    for host in HOSTS[:4]:
        assert "fleet-0" in configmaps(clusters, host), host
