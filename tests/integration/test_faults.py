# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Faults on a real cluster: the API server, or its etcd, killed during an apply of 1000 objects, then restarted;
two plans applying one bundle at once with different field managers.

The cluster is one of its own (``faults``), started for this module and removed afterwards: a restarted
control plane leaves controllers catching up for a while, which later tests must not see.

After the fault the run fails with a message naming the cluster and its server; after the restart a re-run
completes with every object applied once, in the ApplySet, and the set's parent intact.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
import yaml
from conftest import summary_text

pytestmark = [pytest.mark.first_full_line]  # CI's time: control-plane faults, the same on every ansible-core line

REPO = Path(__file__).resolve().parents[2]
API = "phasekit.dev/v1alpha1"
COUNT = 1000


@pytest.fixture(scope="module")
def fault_cluster(clusters):
    shared = sorted(clusters)
    restart(["faults"])
    cluster = type(clusters[shared[0]])("faults", clusters[shared[0]].dir.parent)
    yield cluster
    subprocess.run([sys.executable, str(REPO / "hack/clusters.py"), "down", "faults"], check=True,
                   capture_output=True, text=True, timeout=300)
    restart(shared)  # the merged kubeconfig names the shared clusters again


def site(tmp_path: Path, cluster, namespace: str, field_manager: str = "phasekit", with_namespace=True) -> Path:
    objects = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}] if with_namespace else []
    objects += [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{i:04d}", "namespace": namespace},
                 "data": {"i": str(i)}} for i in range(COUNT)]
    root = tmp_path / field_manager
    (root / "manifests").mkdir(parents=True)
    (root / "manifests" / "many.yaml").write_text(yaml.safe_dump_all(objects))
    (root / "phases").mkdir()
    (root / "phases" / "site.yaml").write_text(yaml.safe_dump({
        "apiVersion": API, "kind": "Phase", "metadata": {"name": "many"},
        "spec": {"cluster": cluster.name, "executor": "apply", "source": "../manifests/many.yaml",
                 "options": {"prune": True, "applyset": "many", "namespace": namespace,
                             "field_manager": field_manager}}}))
    (root / "inventory.yml").write_text(yaml.safe_dump({"all": {"vars": {"ansible_connection": "local"}, "hosts": {
        cluster.name: {"kube_kubeconfig": str(cluster.admin_kubeconfig), "kube_context": cluster.context}}}}))
    return root


def run_plan(root: Path, collections_path: Path, **popen) -> subprocess.Popen:
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(collections_path), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_PYTHON_INTERPRETER": sys.executable}
    env.pop("KUBECONFIG", None)
    return subprocess.Popen([str(Path(sys.executable).parent / "ansible-playbook"), "phasekit.kube.run", "-i",
                             "inventory.yml"], cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, **popen)


def count_configmaps(cluster, namespace: str) -> int:
    done = cluster.kubectl("get", "configmaps", "-n", namespace, "-o", "name", check=False)
    return sum(1 for line in done.stdout.splitlines() if line.startswith("configmap/cm-"))


def kill_component(cluster, component: str) -> None:
    pid = int((cluster.dir / f"{component}.pid").read_text())
    os.killpg(pid, signal.SIGKILL)


def restart(names) -> None:
    done = subprocess.run([sys.executable, str(REPO / "hack/clusters.py"), "up", *names], capture_output=True,
                          text=True, timeout=600, check=False)
    assert done.returncode == 0, f"clusters.py up {' '.join(names)}:\n{done.stdout}\n{done.stderr}"


@pytest.mark.parametrize("component", ["kube-apiserver", "etcd"])
def test_killed_control_plane_component_then_rerun_completes(fault_cluster, collections_path, tmp_path, component):
    target = fault_cluster
    namespace = f"phasekit-fault-{uuid.uuid4().hex[:6]}"
    root = site(tmp_path, target, namespace)
    proc = run_plan(root, collections_path)
    try:
        deadline = time.monotonic() + 120
        while count_configmaps(target, namespace) < 50:
            assert time.monotonic() < deadline and proc.poll() is None, proc.stdout.read()
            time.sleep(0.1)
        kill_component(target, component)
        began = time.monotonic()
        output = proc.communicate(timeout=300)[0]
        print(f"{component} killed: the run ended {time.monotonic() - began:.1f}s later")  # shown with -s
    finally:
        if proc.poll() is None:
            proc.kill()
        restart(["faults"])
    assert proc.returncode != 0, output
    assert f"phase many failed on cluster {target.name}" in output, output
    assert target.server in output, output                      # the message names the cluster's server
    # etcd down: the API server answers 504 after its own timeout, and the run stops there instead of retrying
    assert ("did not complete the request in time" if component == "etcd" else "cannot reach the API server") \
        in output, output
    assert "Traceback" not in output

    rerun = run_plan(root, collections_path)
    output = rerun.communicate(timeout=300)[0]
    assert rerun.returncode == 0, output
    items = target.get_json("configmaps", "-n", namespace)["items"]
    members = [item for item in items if item["metadata"]["name"].startswith("cm-")]
    assert sorted(item["metadata"]["name"] for item in members) == [f"cm-{i:04d}" for i in range(COUNT)]
    parent = target.get_json("secret", "many", "-n", namespace)
    set_id = parent["metadata"]["labels"]["applyset.kubernetes.io/id"]
    assert all(item["metadata"]["labels"]["applyset.kubernetes.io/part-of"] == set_id for item in members)
    assert parent["metadata"]["annotations"]["applyset.kubernetes.io/contains-group-kinds"] == "ConfigMap,Namespace"
    target.kubectl("delete", "namespace", namespace, "--wait=false")


def test_two_plans_with_different_field_managers_conflict_without_corruption(fault_cluster, collections_path,
                                                                             tmp_path):
    """Both apply the same objects at once: whoever is second for an object is told of the conflict (fields and
    managers named); every object ends up whole, owned by one of them."""
    target = fault_cluster
    namespace = f"phasekit-race-{uuid.uuid4().hex[:6]}"
    target.kubectl("create", "namespace", namespace)  # contested objects are the ConfigMaps, not their namespace
    first = site(tmp_path, target, namespace, "alpha", with_namespace=False)
    second = site(tmp_path, target, namespace, "beta", with_namespace=False)
    for root in (first, second):  # different values, so that the second writer conflicts
        text = (root / "manifests" / "many.yaml").read_text()
        (root / "manifests" / "many.yaml").write_text(text.replace("i: '", f"i: '{root.name}-"))
        # one ApplySet each: the parent would otherwise be the contested object
        # applyset_adopt: all: the second may take the objects into its set (decided before anything is written),
        # so what stops it is the field managers' conflict, whichever plan gets there first
        documents = list(yaml.safe_load_all((root / "phases" / "site.yaml").read_text()))
        for document in documents:
            options = document.get("spec", {}).get("options", {})
            if options.get("applyset") == "many":
                options.update(applyset=f"many-{root.name}", applyset_adopt="all")
        # two plans (each its own run record, so its own lock): one plan's two runs would be one at a time
        documents.append({"apiVersion": API, "kind": "PhasePlan", "metadata": {"name": root.name},
                          "spec": {"phases": ["many"]}})
        (root / "phases" / "site.yaml").write_text(yaml.safe_dump_all(documents))
    outputs = {}

    def run(root):
        proc = run_plan(root, collections_path)
        outputs[root.name] = (proc.communicate(timeout=300)[0], proc.returncode)

    threads = [threading.Thread(target=run, args=(root,)) for root in (first, second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    combined = "".join(text for text, _rc in outputs.values())
    assert any(rc != 0 for _text, rc in outputs.values()), combined
    assert "conflict with another field manager" in combined and ".data.i" in combined, combined
    assert "Traceback" not in combined
    items = [item for item in target.get_json("configmaps", "-n", namespace, "--show-managed-fields")["items"]
             if item["metadata"]["name"].startswith("cm-")]
    assert len(items) == COUNT
    for item in items:
        managers = {entry["manager"] for entry in item["metadata"]["managedFields"] if entry["operation"] == "Apply"}
        value = item["data"]["i"]
        owner = value.split("-")[0]
        assert owner in ("alpha", "beta") and owner in managers, item
    target.kubectl("delete", "namespace", namespace, "--wait=false")


def record_site(tmp_path: Path, hosts: dict, namespace: str, stop_pidfile: Path) -> Path:
    """A 4-phase plan over two cluster hosts; its second phase, on ``target`` only, kills the faults cluster's
    API server: the third phase then fails there and the plan stops before the fourth."""
    root = tmp_path / "records"
    (root / "phases").mkdir(parents=True)

    def apply_phase(name):
        return {"apiVersion": API, "kind": "Phase", "metadata": {"name": name},
                "spec": {"cluster": "both", "executor": "apply", "options": {"namespace": namespace},
                         "source": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
                                     "data": {"phase": name}}]}}

    stop = {"apiVersion": API, "kind": "Phase", "metadata": {"name": "outage"},
            "spec": {"cluster": "target", "executor": "command",
                     # the pid file in the code, not as an argument: a file a command names is part of its digest,
                     # and this one changes with each restart (the resume must not run the outage again)
                     "options": {"argv": [sys.executable, "-c", "import os, signal; "
                                          f"os.killpg(int(open({str(stop_pidfile)!r}).read()), signal.SIGKILL)"]}}}
    plan = {"apiVersion": API, "kind": "PhasePlan", "metadata": {"name": "records"},
            "spec": {"phases": ["first", "outage", "third", "fourth"]}}
    (root / "phases" / "site.yaml").write_text(yaml.safe_dump_all(
        [apply_phase("first"), stop, apply_phase("third"), apply_phase("fourth"), plan]))
    (root / "inventory.yml").write_text(yaml.safe_dump({"all": {
        "vars": {"ansible_connection": "local", "plan_record_namespace": namespace},
        "hosts": {name: {"kube_kubeconfig": str(cluster.admin_kubeconfig), "kube_context": cluster.context}
                  for name, cluster in hosts.items()},
        "children": {"both": {"hosts": {name: {} for name in hosts}}}}}))
    return root


def run_records_plan(root: Path, collections_path: Path, *extra: str) -> tuple[int, str]:
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(collections_path), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_PYTHON_INTERPRETER": sys.executable}
    env.pop("KUBECONFIG", None)
    done = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "phasekit.kube.run", "-i",
                           "inventory.yml", *extra], cwd=root, env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    output = done.stdout + done.stderr
    assert "Traceback" not in output, output
    return done.returncode, output


def recorded(cluster, namespace: str) -> dict:
    """Each phase's entries in the cluster host's run record, read with kubectl as a user would."""
    found = cluster.get_json("configmap", f"phasekit-run-records.{cluster.name}", "-n", namespace)
    assert found["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "phasekit.kube"
    return {key: json.loads(text) for key, text in found["data"].items()}


def summary_rows(output: str) -> dict:
    """(phase, cluster) -> the rest of its summary row."""
    rows = {}
    for line in summary_text(output).splitlines():
        parts = line.strip().strip('",').split()
        if len(parts) >= 3 and parts[0] in ("first", "outage", "third", "fourth"):
            rows[(parts[0], parts[1])] = " ".join(parts[2:])
    return rows


def test_run_stopped_by_an_api_server_outage_then_resumed(fault_cluster, clusters, collections_path, tmp_path):
    """Each phase's record is written as it finishes, so the run an outage stopped left the finished phases
    recorded; plan_resume then runs only what did not succeed, per cluster; status and history read the records."""
    hosts = {"faults": fault_cluster, "target": clusters["target"]}
    namespace = f"phasekit-resume-{uuid.uuid4().hex[:6]}"
    for cluster in hosts.values():
        cluster.kubectl("create", "namespace", namespace)
    root = record_site(tmp_path, hosts, namespace, fault_cluster.dir / "kube-apiserver.pid")
    try:
        code, output = run_records_plan(root, collections_path)
        assert code != 0, output
        assert "phase third failed on cluster faults" in output, output
        rows = summary_rows(output)
        server = clusters["target"].server.removeprefix("https://")   # the summary's SERVER column
        assert rows[("third", "target")].startswith("changed") and rows[("fourth", "target")] == f"not run - - {server}", \
            output
    finally:
        restart(["faults"])
    on_target, on_faults = recorded(clusters["target"], namespace), recorded(fault_cluster, namespace)
    assert [entry["result"] for entry in on_target["third"]] == ["changed"] and "fourth" not in on_target
    assert on_target["outage"][0]["result"] == "changed"
    # the faults cluster kept what finished before its API server went: the failure could not be written there
    assert sorted(on_faults) == ["first"] and on_faults["first"][0]["result"] == "changed"
    first = on_faults["first"][0]
    assert first["plan"] == "records" and first["digest"].startswith("hmac-sha256:") and "@" in first["by"]
    assert first["version"] == "0.1.0" and first["action"] == "run" and first["started"].endswith("Z")

    code, output = run_records_plan(root, collections_path, "-e", "plan_resume=true")
    assert code == 0, output
    rows = summary_rows(output)
    # target: everything up to its first phase without a success runs no more (the outage command is not
    # repeated); faults: from its failed phase on
    assert rows[("first", "target")].startswith("skipped") and rows[("outage", "target")].startswith("skipped")
    assert rows[("third", "target")].startswith("skipped") and rows[("fourth", "target")].startswith("changed")
    assert rows[("first", "faults")].startswith("skipped"), output
    assert rows[("third", "faults")].startswith("changed") and rows[("fourth", "faults")].startswith("changed")
    assert rows[("third", "target")].startswith("skipped (resumed)"), output
    assert "[third] apply on 2 cluster(s): 1 changed, 1 skipped: resumed (succeeded before with the same bundle)" \
        in output, output
    assert fault_cluster.get_json("configmap", "fourth", "-n", namespace)["data"] == {"phase": "fourth"}
    on_faults = recorded(fault_cluster, namespace)
    assert [entry["result"] for entry in on_faults["first"]] == ["changed"]   # skipped phases add no entry
    assert [entry["result"] for entry in on_faults["third"]] == ["changed"]

    # a changed bundle is run again even though its last run succeeded
    text = (root / "phases" / "site.yaml").read_text().replace("phase: first", "phase: first-changed")
    (root / "phases" / "site.yaml").write_text(text)
    code, output = run_records_plan(root, collections_path, "-e", "plan_resume=true", "-e", '{"plan_only": ["first"]}')
    assert code == 0, output
    assert summary_rows(output)[("first", "faults")].startswith("changed"), output

    code, output = run_records_plan(root, collections_path, "-e", "plan_action=status")
    assert code == 0, output
    rows = summary_rows(output)
    assert "in sync" in rows[("third", "faults")] and "changed" in rows[("third", "faults")], output
    assert "bundle changed since" not in rows[("third", "faults")], output

    code, output = run_records_plan(root, collections_path, "-e", "plan_action=history")
    assert code == 0, output
    history = [line for line in output.splitlines() if "records" not in line and "faults" in line and " run " in line]
    assert len(history) == 3, output   # three runs touched the faults cluster, newest first
    assert "first changed" in history[0] and "third changed, fourth changed" in history[1], output
    assert "third failed" not in output, output   # the outage kept that failure from being recorded there

    # a re-run that changes nothing: the entries wait for the step's end, then go in one write per cluster
    code, output = run_records_plan(root, collections_path, "-e", '{"plan_skip": ["outage"]}')
    assert code == 0, output
    for cluster in hosts.values():
        newest = {phase: found[0]["result"] for phase, found in recorded(cluster, namespace).items()}
        assert {phase: newest[phase] for phase in ("first", "third", "fourth")} == dict.fromkeys(
            ("first", "third", "fourth"), "ok"), newest
    for cluster in hosts.values():
        cluster.kubectl("delete", "namespace", namespace, "--wait=false")
