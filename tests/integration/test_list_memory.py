"""A fleet step lists a collection once for its phases (``ListMemory``), on the real API server: a later apply phase
takes the list an earlier one made and sends nothing for objects already applied; a write through the step lists the
collection again; a phase that is not an apply (a command that deletes an object) makes the next apply read the cluster
again, so the object is made again in the same run; an object two phases apply with different values ends as the
later phase says on every run."""

from __future__ import annotations

import os
import subprocess
import sys
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
        assert session.requests == sent + 2, "not one LIST and one apply"

        # something else deletes an object: within the memory's time the step does not see it (the documented
        # window); once the memory is cleared (the fleet does around every phase that is not an apply), it does
        assert apply(session, discovery, namespace, first)[UNCHANGED] == 3        # listed after that write
        cluster.kubectl("delete", "configmap", "a1", "-n", namespace)
        assert apply(session, discovery, namespace, first)[UNCHANGED] == 3
        memory.clear()
        assert apply(session, discovery, namespace, first)[CREATED] == 1
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
    ]
    (root / "phases" / "site.yaml").write_text(yaml.safe_dump_all(documents))
    (root / "inventory.yml").write_text(yaml.safe_dump({"all": {
        # no run records: their writes (in the namespace) would make the next phase list it again anyway
        "vars": {"ansible_connection": "local", "plan_record": False},
        "hosts": {CLUSTER: {"kube_kubeconfig": str(target.admin_kubeconfig), "kube_context": target.context}}}}))
    return root


def run(root: Path, collections_path: Path, plan: str) -> str:
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(collections_path), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_PYTHON_INTERPRETER": sys.executable}
    env.pop("KUBECONFIG", None)
    done = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "phasekit.kube.run", "-i",
                           "inventory.yml", "-e", f"plan_name={plan}", "-e", "plan_show_plan=false"], cwd=root,
                          env=env, capture_output=True, text=True, timeout=300, check=False)
    output = done.stdout + done.stderr
    assert done.returncode == 0 and "Traceback" not in output, output
    return output


def phase_lines(output: str) -> list[str]:
    return [line.split(" on ")[0] + ":" + line.rsplit(":", 1)[1].split("(")[0].strip()
            for line in output.splitlines() if line.startswith("[") and " on 1 cluster(s): " in line]


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
