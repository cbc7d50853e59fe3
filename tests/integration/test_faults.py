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
        phases = (root / "phases" / "site.yaml").read_text().replace("applyset: many", f"applyset: many-{root.name}")
        (root / "phases" / "site.yaml").write_text(phases)
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
