# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Progressive rollouts over a fleet of 25 cluster hosts (contexts over the two local API servers, a namespace each).

Proves on real clusters: batch sizes and order (the objects' creation times), the subtree as the gate, the failure
budget stopping at the right batch with no later cluster touched (not even its kubeconfig decrypted), stop after N
batches then resume finishing exactly the rest, the soak watch, ``--limit``, check mode, ``list``, the play's
``serial`` refused with a pointer to rollouts, and bad rollout values refused before anything runs.
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import yaml
from fleet_site import fleet_kubeconfig, recap

pytestmark = [pytest.mark.first_full_line]

API = "phasekit.dev/v1alpha1"
HOSTS = [f"roll{i:02d}" for i in range(24)]
LATE = "late"           # the last cluster of the rollout: its kubeconfig is vault-encrypted for someone else
RUN_ID = uuid.uuid4().hex[:6]
BATCHES = [1, "25%", "100%"]          # over the 25 clusters: 1, 6, 18
FIRST, SECOND, THIRD = HOSTS[:1], HOSTS[1:7], HOSTS[7:] + [LATE]
RECORD = "phasekit-run-"


def namespace_of(host: str) -> str:
    return f"pk-roll-{RUN_ID}-{host}"


def cluster_of(host: str, clusters) -> str:
    names = sorted(clusters)
    return names[int(host[-2:]) % len(names)]


def phase(name, **spec):
    return {"apiVersion": API, "kind": "Phase", "metadata": {"name": name}, "spec": spec}


def config_map(name):
    return [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"v": "1"}}]


GATE = 'test "$PHASEKIT_HOST" != "$ROLL_BAD" || { echo "gate refused $PHASEKIT_HOST" >&2; exit 4; }'
DEPLOYMENT = [{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "soak"},
               "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "soak"}},
                        "template": {"metadata": {"labels": {"app": "soak"}},
                                     "spec": {"containers": [{"name": "c", "image": "example.invalid/soak:1"}]}}}}]
DOCUMENTS = [
    phase("cni", cluster="fleet", rollout={"batches": BATCHES, "max_fail_percentage": 0, "order": "inventory"},
          phases=[{"name": "apply", "executor": "apply", "source": config_map("cni-a")},
                  {"name": "gate", "executor": "command", "options": {"cmd": GATE, "shell": True}},
                  {"name": "after", "executor": "apply", "source": config_map("cni-b")}]),
    phase("apps", cluster="fleet", executor="apply", source=config_map("apps")),
    phase("soaked", cluster="fleet", rollout={"batches": [1], "pause": 25},
          phases=[{"name": "deploy", "executor": "apply", "source": DEPLOYMENT},
                  {"name": "ready", "executor": "wait", "source": DEPLOYMENT, "options": {"timeout": 60}}]),
    {"apiVersion": API, "kind": "PhasePlan", "metadata": {"name": "roll"}, "spec": {"phases": ["cni", "apps"]}},
    {"apiVersion": API, "kind": "PhasePlan", "metadata": {"name": "soak"}, "spec": {"phases": ["soaked"]}},
]


@pytest.fixture(scope="module")
def fleet(clusters, tmp_path_factory):
    """The site and an inventory of 24 cluster hosts and one more, ``late``, whose kubeconfig nobody here can
    decrypt (an ansible-vault value without its password): touching it would fail the run."""
    root = tmp_path_factory.mktemp("rollout")
    kubeconfig = fleet_kubeconfig(clusters, HOSTS, cluster_of, namespace_of)
    (root / "fleet.kubeconfig").write_text(yaml.safe_dump(kubeconfig))
    (root / "fleet.kubeconfig").chmod(0o600)
    (root / "phases").mkdir()
    (root / "phases" / "roll.yaml").write_text(yaml.safe_dump_all(DOCUMENTS, sort_keys=False))
    inventory = {"all": {
        "vars": {"ansible_connection": "local", "kube_kubeconfig": str(root / "fleet.kubeconfig"),
                 "kube_context": "{{ inventory_hostname }}"},
        "children": {"fleet": {"hosts": {**{host: {} for host in HOSTS}, LATE: {}}}}}}
    (root / "inventory.yml").write_text(yaml.safe_dump(inventory, sort_keys=False))
    (root / "secret.txt").write_text("not given to ansible-playbook\n")
    sealed = subprocess.run([str(Path(sys.executable).parent / "ansible-vault"), "encrypt_string", "--vault-password-file",
                             str(root / "secret.txt"), "--name", "kube_kubeconfig", "/nowhere/late.kubeconfig"],
                            capture_output=True, text=True, check=True).stdout
    (root / "host_vars").mkdir()
    (root / "host_vars" / f"{LATE}.yml").write_text(sealed)
    yield root
    for host in HOSTS:
        clusters[cluster_of(host, clusters)].kubectl("delete", "namespace", namespace_of(host), "--wait=false",
                                                     "--ignore-not-found")


@pytest.fixture()
def run_fleet(fleet, run_playbook):
    def run(*extra, verbosity=0, check=False):
        return run_playbook("- ansible.builtin.import_playbook: phasekit.kube.run\n", fleet / "inventory.yml",
                            "-f", "10", *extra, verbosity=verbosity, check=check)
    return run


def objects(clusters, host: str) -> dict:
    """The host's ConfigMaps (its run record left out): name -> creation time."""
    if host == LATE:
        return {}
    found = clusters[cluster_of(host, clusters)].get_json("configmaps", "-n", namespace_of(host))
    return {item["metadata"]["name"]: item["metadata"]["creationTimestamp"] for item in found["items"]
            if item["metadata"]["name"] != "kube-root-ca.crt" and not item["metadata"]["name"].startswith(RECORD)}


def record_of(clusters, host: str, plan: str = "roll") -> dict:
    found = clusters[cluster_of(host, clusters)].kubectl("get", "configmap", f"{RECORD}{plan}.{host}", "-n",
                                                         namespace_of(host), "-o", "json", check=False)
    if found.returncode:
        return {}
    return {key: json.loads(value) for key, value in json.loads(found.stdout)["data"].items()}


def test_budget_stop_then_stop_after_then_resume(run_fleet, clusters, monkeypatch):
    bad = SECOND[2]
    monkeypatch.setenv("ROLL_BAD", bad)
    result = run_fleet("-e", "plan=roll")
    assert result.rc == 2, result
    # the gate of batch 2 failed on one of its 6 clusters: 17% > 0%, the rollout stops there
    assert "[cni/gate] command on 6 cluster(s) (batch 2/3 of cni): 5 changed, 1 failed" in result.output
    assert "[cni/after] apply on 5 cluster(s) (batch 2/3 of cni)" not in result.output   # no later phase of it
    assert "(batch 3/3 of cni)" not in result.output and "[apps]" not in result.output
    # a line of the summary, after its table
    stopped = re.search(r'^(plan roll: rollout of phase cni stopped at batch 2 of 3: .*)$', result.output, flags=re.MULTILINE)
    assert stopped, result
    assert f"1 of 6 cluster(s) failed (17% > max_fail_percentage 0%): {bad}: phase cni/gate:" in stopped.group(1)
    assert f"{bad}: phase cni/gate: command /bin/sh -c" in stopped.group(1) and f"gate refused {bad}" in \
        stopped.group(1)
    assert f"18 cluster(s) never touched: {', '.join(THIRD)}" in stopped.group(1)
    rows = recap(result.output)
    assert {host for host, row in rows.items() if row.get("failed")} == {bad}
    assert f"phase cni/gate failed on cluster {bad} in batch 2 of 3 of the rollout of cni" in result.output
    # batch sizes and order, by creation times: batch 1 did its whole subtree before batch 2 began
    first = objects(clusters, FIRST[0])
    assert set(first) == {"cni-a", "cni-b"}
    second = {host: objects(clusters, host) for host in SECOND}
    assert all(set(found) == {"cni-a"} for found in second.values()), second   # the gate held 'after' back
    assert first["cni-b"] <= min(found["cni-a"] for found in second.values())
    # nothing of batch 3 was touched: no object, no run record; late's kubeconfig was never decrypted
    assert all(objects(clusters, host) == {} and record_of(clusters, host) == {} for host in THIRD[:-1])
    assert "no vault secrets" not in result.output and "Decryption failed" not in result.output
    # the credentials the run resolved (client keys, embedded as data) appear in no message
    for cluster in clusters.values():
        user = yaml.safe_load(cluster.admin_kubeconfig.read_text())["users"][0]["user"]
        key = user.get("client-key-data") or base64.b64encode(Path(user["client-key"]).read_bytes()).decode()
        assert key[:40] not in result.output and key[-60:-20] not in result.output
    entries = record_of(clusters, SECOND[0])
    assert entries["cni.apply"][0]["rollout"] == {"phase": "cni", "batch": 2, "of": 3}
    summary = result.stdout[result.stdout.index("Summary of plan roll"):]
    assert re.search(r"cni\s+3/3\s+roll07 \.\. late \(18\)\s+not run \(rollout stopped after batch 2\)", summary), \
        summary

    # the cause is gone: a canary run resumes, runs batch 2 (batch 1 is done: it does not count) and pauses
    monkeypatch.setenv("ROLL_BAD", "nobody")
    result = run_fleet("-e", "plan=roll", "-e", "plan_resume=true", "-e", "plan_rollout_stop_after=1")
    assert result.rc == 0, result
    assert "[cni] batch 1/3 on roll00: nothing to do (resumed)" in result.output
    assert "[cni/after] apply on 6 cluster(s) (batch 2/3 of cni): 6 changed" in result.output
    assert "rollout of phase cni paused after batch 2 of 3 (plan_rollout_stop_after: 1 batch(es) ran" \
        in result.output
    assert "(batch 3/3 of cni)" not in result.output and "[apps]" not in result.output
    assert all(objects(clusters, host) == {} for host in THIRD[:-1])
    paused_run = record_of(clusters, SECOND[0])["cni.after"][0]["run"]

    # approved: the next resumed run finishes exactly the rest (late left out: nobody here can decrypt it)
    result = run_fleet("-e", "plan=roll", "-e", "plan_resume=true", "--limit", f"fleet:!{LATE}")
    assert result.rc == 0, result
    assert "[cni/apply] apply on 17 cluster(s) (batch 3/3 of cni): 17 changed" in result.output
    assert "[apps] apply on 24 cluster(s): 24 changed" in result.output
    for host in HOSTS:
        assert set(objects(clusters, host)) == {"cni-a", "cni-b", "apps"}, host
    third = record_of(clusters, THIRD[0])["cni.apply"]
    assert len(third) == 1 and third[0]["rollout"]["batch"] == 3 and third[0]["run"] != paused_run
    assert record_of(clusters, SECOND[0])["cni.after"][0]["run"] == paused_run   # not run again


def test_soak_watch_fails_a_cluster_whose_objects_stop_being_current(fleet, clusters, collections_path, tmp_path):
    """Batch 1 soaks 25 s; a change to its Deployment in the meantime makes it InProgress: the cluster fails,
    the rollout stops before batch 2."""
    canary, next_one = HOSTS[0], HOSTS[1]
    log = tmp_path / "soak.log"
    playbook = tmp_path / "playbook.yml"
    playbook.write_text("- ansible.builtin.import_playbook: phasekit.kube.run\n")
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(collections_path), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_PYTHON_INTERPRETER": sys.executable, "ANSIBLE_LOCALHOST_WARNING": "0"}
    env.pop("KUBECONFIG", None)
    with open(log, "w", encoding="utf-8") as out:
        proc = subprocess.Popen([str(Path(sys.executable).parent / "ansible-playbook"), str(playbook),
                                 "-i", str(fleet / "inventory.yml"),
                                 "-e", "plan=soak", "--limit", f"{canary},{next_one}"],
                                stdout=out, stderr=subprocess.STDOUT, env=env, cwd=tmp_path, text=True)
        deadline = time.monotonic() + 240
        while "[soaked] batch 1/2 done; soak: 25s" not in log.read_text() and proc.poll() is None:
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.5)
        clusters[cluster_of(canary, clusters)].kubectl(
            "patch", "deployment", "soak", "-n", namespace_of(canary), "--type", "merge",
            "-p", '{"spec": {"template": {"spec": {"nodeSelector": {"phasekit-test": "nowhere"}}}}}')
        rc = proc.wait(timeout=240)
    output = log.read_text()
    assert rc == 2, output
    assert f"phase soaked/ready failed on cluster {canary} in batch 1 of 2 of the rollout of soaked: during the " \
           "25s soak after batch 1 of 2: phase soaked/deploy:" in output
    assert "Deployment" in output and "InProgress" in output
    assert "(batch 2/2 of soaked)" not in output
    untouched = clusters[cluster_of(next_one, clusters)]
    assert untouched.kubectl("get", "deployment", "soak", "-n", namespace_of(next_one), check=False).returncode != 0


def test_list_and_check_mode_follow_the_limit(run_fleet, clusters):
    chosen = HOSTS[10:18]
    result = run_fleet("-e", "plan=roll", "-e", "plan_action=list", "--limit", ",".join(chosen))
    assert result.rc == 0, result
    assert "rollout of phase cni: 8 cluster(s) in play in 3 batch(es) [1, '25%', '100%']" in result.output
    assert "batch 1: roll10" in result.output and "batch 2: roll11, roll12" in result.output
    assert "batch 3: roll13, roll14, roll15, roll16, roll17" in result.output
    before = {host: objects(clusters, host) for host in chosen}
    result = run_fleet("-e", "plan=roll", "-e", "plan_action=run", "-e", "plan_rollout_stop_after=2",
                       "--limit", ",".join(chosen), check=True)
    assert result.rc == 0, result
    # check mode: batch by batch, stopped after 2 as asked, nothing changed
    assert "[cni/apply] apply on 1 cluster(s) (batch 1/3 of cni)" in result.output
    assert "[cni/apply] apply on 2 cluster(s) (batch 2/3 of cni)" in result.output
    assert "(batch 3/3 of cni)" not in result.output and "paused after batch 2 of 3" in result.output
    assert {host: objects(clusters, host) for host in chosen} == before
    # the plan's preview at the end lists the batches the rollout would use for the clusters in play
    preview = result.output[result.output.index("Preview of the plan (nothing was changed):"):]
    assert "rollout of phase cni: 8 cluster(s) in play in 3 batch(es) [1, '25%', '100%']" in preview, preview
    assert "batch 3: roll13, roll14, roll15, roll16, roll17" in preview, preview


def test_serial_points_to_rollout_and_bad_values_fail_before_anything_runs(fleet, run_playbook, clusters):
    serial = f"""
- hosts: fleet
  gather_facts: false
  serial: 5
  roles:
    - role: phasekit.kube.plan
      plan_src: ["{fleet / 'phases'}"]
      plan_name: roll
"""
    result = run_playbook(serial, fleet / "inventory.yml")
    assert result.rc != 0
    assert "Remove 'serial' from the play and roll the phases out instead" in " ".join(result.output.split()), result
    assert "spec.rollout" in result.output and "plan_rollout" in result.output
    bad = [phase("broken", cluster="fleet", rollout={"batches": [1, 0], "pause": "soon"},
                 phases=[{"name": "one", "executor": "apply", "source": config_map("never")}])]
    (fleet / "bad").mkdir(exist_ok=True)
    (fleet / "bad" / "bad.yaml").write_text(yaml.safe_dump_all(bad))
    result = run_playbook("- ansible.builtin.import_playbook: phasekit.kube.run\n", fleet / "inventory.yml",
                          "-e", f"phases={fleet / 'bad'}", "-e", '{"plan_rollout": {"batches": ["200%"]}}')
    assert result.rc != 0
    text = " ".join(result.output.split())
    assert "bad.yaml document 1 (Phase broken) field spec.rollout.batches[1]: expected a whole number" in text, result
    assert "bad.yaml document 1 (Phase broken) field spec.rollout.pause: expected a number of seconds" in text
    assert "plan_rollout.batches[0]: expected a whole number" in text
    assert all("never" not in objects(clusters, host) for host in HOSTS[:3])
