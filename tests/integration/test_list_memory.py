"""A fleet step lists a collection once for its phases (``ListMemory``), on the real API server: a later apply phase
takes the list an earlier one made and sends nothing for objects already applied; a write through the step, or by
another client between two phases (heard on the watch that guards the kept list), lists the collection again; a
phase that is not an apply (a command that deletes an object) makes the next apply read the cluster
again, so the object is made again in the same run; an object two phases apply with different values ends as the
later phase says on every run."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
import yaml

from ansible_collections.phasekit.kube.plugins.module_utils.bundle import render_bundle
from ansible_collections.phasekit.kube.plugins.module_utils.kube.apply import (
    APPLY_OPTIONS_SPEC, CONFIGURED, CREATED, UNCHANGED, apply_bundle, apply_options)
from ansible_collections.phasekit.kube.plugins.module_utils.kube.client import api_client
from ansible_collections.phasekit.kube.plugins.module_utils.kube.discovery import Discovery
from ansible_collections.phasekit.kube.plugins.module_utils.kube.session import ApiSession, ListMemory

pytestmark = [pytest.mark.first_full_line]  # CI's time: the list memory, below Ansible

API = "phasekit.dev/v1alpha1"
CLUSTER = "target"


def configmap(name: str, namespace: str, value: str = "1") -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace},
            "data": {"v": value}}


@pytest.fixture()
def namespace(clusters):
    name = f"phasekit-lists-{uuid.uuid4().hex[:6]}"
    clusters[CLUSTER].kubectl("create", "namespace", name)
    yield name
    clusters[CLUSTER].kubectl("delete", "namespace", name, "--wait=false")


def apply(session, discovery, namespace: str, names, value: str = "1") -> dict:
    values = {name: spec.get("default") for name, spec in APPLY_OPTIONS_SPEC.items()}
    options = apply_options({**values, "concurrency": 4}, namespace=namespace)
    bundle = render_bundle(definition=[configmap(name, namespace, value) for name in names])
    report = apply_bundle(session, bundle, options, discovery=discovery)
    session.guard_kept()   # as a fleet step's apply does once it is done (BuiltinExecutors)
    assert report.failure is None, report.failure
    return report.counts()


def test_a_later_phase_takes_the_list_of_an_earlier_one_until_the_step_writes(clusters, namespace):
    cluster = clusters[CLUSTER]
    config = yaml.safe_load(cluster.admin_kubeconfig.read_text())
    first, second = ("a1", "a2", "a3"), ("b1", "b2", "b3")
    with api_client(config) as api:        # a first run: every object made
        session = ApiSession(api)
        discovery = Discovery(session)
        assert apply(session, discovery, namespace, first)[CREATED] == 3
        assert apply(session, discovery, namespace, second)[CREATED] == 3

    memory = ListMemory()
    with api_client(config) as api:        # a re-run, as a fleet step makes it: its sessions share a memory
        session = ApiSession(api, memory=memory)
        discovery = Discovery(session)
        assert apply(session, discovery, namespace, first)[UNCHANGED] == 3        # one LIST
        sent = session.requests
        assert apply(session, discovery, namespace, second)[UNCHANGED] == 3       # its objects are in that LIST
        assert session.requests == sent, "the second phase asked the API server again"

        # a write through the step: the collection is listed again, and what the write did is seen
        assert apply(session, discovery, namespace, ("b2",), value="2")[CONFIGURED] == 1
        sent = session.requests
        assert apply(session, discovery, namespace, second)[CONFIGURED] == 1      # b2 back to 1
        # one LIST and one apply; the list its own write forgot gets no watch
        assert session.requests == sent + 2, "not one LIST and one apply"

        # something else deletes an object: the watch from the kept list's resourceVersion hears it, and the
        # next phase lists again (it no longer decides from a list made before that write)
        assert apply(session, discovery, namespace, first)[UNCHANGED] == 3        # listed after that write
        cluster.kubectl("delete", "configmap", "a1", "-n", namespace)
        assert apply(session, discovery, namespace, first)[CREATED] == 1
        memory.close()
    assert cluster.get_json("configmap", "a1", "-n", namespace)["data"] == {"v": "1"}


@pytest.fixture()
def site(clusters, namespace, tmp_path):
    """Plan ``deleting``: an apply, a command that deletes an object of the next phase, that phase.
    Plan ``flipping``: two apply phases that give one ConfigMap different values."""
    target = clusters[CLUSTER]
    root = tmp_path / "site"
    (root / "phases").mkdir(parents=True)

    def phase(name, executor, **spec):
        return {"apiVersion": API, "kind": "Phase", "metadata": {"name": name},
                "spec": {"cluster": CLUSTER, "executor": executor, **spec}}

    def applying(name, *configmaps):
        return phase(name, "apply", options={"namespace": namespace}, source=list(configmaps))

    def plan(name, *phases):
        return {"apiVersion": API, "kind": "PhasePlan", "metadata": {"name": name}, "spec": {"phases": list(phases)}}

    documents = [
        applying("first", *(configmap(name, namespace) for name in ("a1", "a2", "a3"))),
        phase("delete-b1", "command", options={"argv": ["kubectl", "delete", "configmap", "b1", "-n", namespace]}),
        applying("second", *(configmap(name, namespace) for name in ("b1", "b2", "b3"))),
        applying("one", *(configmap(name, namespace) for name in ("c1", "c2")), configmap("shared", namespace, "1")),
        applying("two", *(configmap(name, namespace) for name in ("c3", "c4")), configmap("shared", namespace, "2")),
        plan("deleting", "first", "second", "delete-b1", "second"),
        plan("flipping", "one", "two"),
        applying("secrets", *({"apiVersion": "v1", "kind": "Secret", "data": {"v": "MQ=="},
                               "metadata": {"name": f"s{index}", "namespace": namespace}} for index in range(3))),
        plan("two-kinds", "one", "secrets"),
    ]
    (root / "phases" / "site.yaml").write_text(yaml.safe_dump_all(documents))
    (root / "inventory.yml").write_text(yaml.safe_dump({"all": {
        # no run records: their writes (in the namespace) would make the next phase list it again anyway
        "vars": {"ansible_connection": "local", "plan_record": False},
        "hosts": {CLUSTER: {"kube_kubeconfig": str(target.admin_kubeconfig), "kube_context": target.context}}}}))
    return root


def run(root: Path, collections_path: Path, plan: str, *args) -> str:
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(collections_path), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_PYTHON_INTERPRETER": sys.executable}
    env.pop("KUBECONFIG", None)
    done = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "phasekit.kube.run", "-i",
                           "inventory.yml", "-e", f"plan_name={plan}", "-e", "plan_show_plan=false", *args], cwd=root,
                          env=env, capture_output=True, text=True, timeout=300, check=False)
    output = done.stdout + done.stderr
    assert done.returncode == 0 and "Traceback" not in output, output
    return output


def phase_lines(output: str) -> list[str]:
    return [line.split(" on ")[0] + ":" + line.rsplit(":", 1)[1].split("(")[0].strip()
            for line in output.splitlines() if line.startswith("[") and " on 1 cluster(s): " in line]


def test_the_last_apply_of_a_run_opens_no_watch_for_what_it_listed(clusters, namespace, site, collections_path):
    """``one`` lists the namespace's ConfigMaps and ``secrets`` its Secrets; no later phase asks for the Secrets, so
    their list gets no watch (before: one watch per kept list, two here); the ConfigMaps', which ``secrets`` could
    have asked for, keeps its own."""
    run(site, collections_path, "two-kinds")
    output = run(site, collections_path, "two-kinds", "-vvv")
    assert phase_lines(output) == ["[one] apply:1 ok", "[secrets] apply:1 ok"], output
    assert re.search(r"phasekit\.kube\.run_phases: \d+ API request\(s\), 1 of them watches guarding kept lists",
                     output), output


def test_a_command_between_two_applies_makes_the_next_one_read_the_cluster_again(
        clusters, namespace, site, collections_path):
    target = clusters[CLUSTER]
    run(site, collections_path, "deleting")
    # the re-run: "first" lists the namespace's ConfigMaps (b1 among them), the command deletes b1, and the
    # second "second" must not decide from that list
    output = run(site, collections_path, "deleting")
    assert phase_lines(output) == ["[first] apply:1 ok", "[second#1] apply:1 ok", "[delete-b1] command:1 changed",
                                   "[second#2] apply:1 changed"], output
    assert target.get_json("configmap", "b1", "-n", namespace)["data"] == {"v": "1"}


def test_an_object_two_phases_give_different_values_ends_as_the_later_one_says(
        clusters, namespace, site, collections_path):
    target = clusters[CLUSTER]
    for _run in range(2):
        output = run(site, collections_path, "flipping")
        assert target.get_json("configmap", "shared", "-n", namespace)["data"] == {"v": "2"}, output
    # on the re-run "one" writes the object back to its value, so "two" lists again and writes it once more
    assert phase_lines(output) == ["[one] apply:1 changed", "[two] apply:1 changed"], output


class DelayingProxy:
    """A TCP relay to an API server on loopback. Armed, it holds the first connection it accepts for ``delay``
    seconds, calls ``before`` (an outside write, made while the run waits at the phase's barrier for this
    cluster), then relays it; every other connection is relayed at once."""

    def __init__(self, upstream: str):
        host, port = upstream.split("://", 1)[1].rsplit(":", 1)
        self.upstream = (host, int(port))
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"https://127.0.0.1:{self.listener.getsockname()[1]}"
        self.armed = None
        self.fired = threading.Event()
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def arm(self, before, delay: float = 1.5):
        self.fired.clear()
        with self._lock:
            self.armed = (before, delay)

    def _accept(self):
        while True:
            try:
                client, _address = self.listener.accept()
            except OSError:
                return
            with self._lock:
                armed, self.armed = self.armed, None
            threading.Thread(target=self._relay, args=(client, armed), daemon=True).start()

    def _relay(self, client, armed):
        if armed is not None:
            before, delay = armed
            time.sleep(delay)
            before()
            self.fired.set()
        upstream = socket.create_connection(self.upstream)

        def pump(source, sink):
            try:
                while data := source.recv(65536):
                    sink.sendall(data)
            except OSError:
                pass
            finally:
                for end in (source, sink):
                    try:
                        end.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass

        threading.Thread(target=pump, args=(upstream, client), daemon=True).start()
        pump(client, upstream)

    def close(self):
        self.listener.close()


@pytest.fixture()
def outside_write_site(clusters, namespace, tmp_path):
    """Phase ``first`` on the group ``both``: ``near`` (the target cluster) and ``late`` (the ephemeral cluster
    reached through a ``DelayingProxy``); phase ``second`` on ``near``, whose ConfigMaps are in the collection
    ``first`` listed there. Records are off: their writes would make ``second`` list again anyway."""
    target, ephemeral = clusters[CLUSTER], clusters["ephemeral"]
    late_namespace = f"{namespace}-late"
    ephemeral.kubectl("create", "namespace", late_namespace)
    proxy = DelayingProxy(ephemeral.server)
    kubeconfig = {"apiVersion": "v1", "kind": "Config", "clusters": [], "users": [], "contexts": []}
    for host, cluster, server, where in (("near", target, target.server, namespace),
                                         ("late", ephemeral, proxy.url, late_namespace)):
        admin = yaml.safe_load(cluster.admin_kubeconfig.read_text())
        kubeconfig["clusters"].append({"name": host, "cluster": {**admin["clusters"][0]["cluster"], "server": server}})
        kubeconfig["users"].append({"name": host, "user": admin["users"][0]["user"]})
        kubeconfig["contexts"].append({"name": host, "context": {"cluster": host, "user": host, "namespace": where}})
    root = tmp_path / "outside"
    (root / "phases").mkdir(parents=True)
    (root / "kubeconfig").write_text(yaml.safe_dump(kubeconfig))

    def applying(name, cluster, names):
        return {"apiVersion": API, "kind": "Phase", "metadata": {"name": name},
                "spec": {"cluster": cluster, "executor": "apply",
                         "source": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": one},
                                     "data": {"v": "1"}} for one in names]}}

    (root / "phases" / "site.yaml").write_text(yaml.safe_dump_all([
        applying("first", "both", ("f1", "f2", "f3")),
        applying("second", "near", ("s1", "s2", "s3")),
        {"apiVersion": API, "kind": "PhasePlan", "metadata": {"name": "outside"},
         "spec": {"phases": ["first", "second"]}}]))
    (root / "inventory.yml").write_text(yaml.safe_dump({"all": {
        "vars": {"ansible_connection": "local", "plan_record": False,
                 "kube_kubeconfig": str(root / "kubeconfig")},
        "children": {"both": {"hosts": {"near": {"kube_context": "near"}, "late": {"kube_context": "late"}}}}}}))
    yield root, proxy
    proxy.close()
    ephemeral.kubectl("delete", "namespace", late_namespace, "--wait=false")


def run_outside(root: Path, collections_path: Path, *args) -> subprocess.CompletedProcess:
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(collections_path), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_PYTHON_INTERPRETER": sys.executable}
    env.pop("KUBECONFIG", None)
    return subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "phasekit.kube.run", "-i",
                           "inventory.yml", "-e", "plan_name=outside", "-e", "plan_show_plan=false", *args],
                          cwd=root, env=env, capture_output=True, text=True, timeout=300, check=False)


def test_a_phase_does_not_decide_from_a_list_made_before_an_outside_write(
        clusters, namespace, outside_write_site, collections_path):
    """``first`` lists the namespace's ConfigMaps on ``near`` (s2 among them) and changes nothing; while the run
    waits for ``late``, another client deletes s2. ``second`` must see that: check mode says it would change,
    status with ``plan_fail_on_drift`` fails naming it, a run makes s2 again (all three said ``ok`` / ``in sync``
    from the kept list before)."""
    target = clusters[CLUSTER]
    root, proxy = outside_write_site
    done = run_outside(root, collections_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert target.get_json("configmap", "s2", "-n", namespace)["data"] == {"v": "1"}

    def delete_s2():
        target.kubectl("delete", "configmap", "s2", "-n", namespace)

    proxy.arm(delete_s2)
    checked = run_outside(root, collections_path, "--check")
    output = checked.stdout + checked.stderr
    assert proxy.fired.is_set() and checked.returncode == 0, output
    assert "[second] apply on 1 cluster(s): 1 changed" in output, output

    run_outside(root, collections_path)  # s2 back, nothing armed
    proxy.arm(delete_s2)
    status = run_outside(root, collections_path, "-e", "plan_action=status", "-e", "plan_fail_on_drift=true")
    output = status.stdout + status.stderr
    assert proxy.fired.is_set() and status.returncode != 0, output
    assert "plan_fail_on_drift is set" in output and "second" in output.split("plan_fail_on_drift")[0], output

    run_outside(root, collections_path)
    proxy.arm(delete_s2)
    fixed = run_outside(root, collections_path)
    output = fixed.stdout + fixed.stderr
    assert proxy.fired.is_set() and fixed.returncode == 0, output
    assert "[second] apply on 1 cluster(s): 1 changed" in output, output
    assert target.get_json("configmap", "s2", "-n", namespace)["data"] == {"v": "1"}
