# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""``state: absent`` on the real local cluster, run as a user runs a plan (``ansible-playbook phasekit.kube.run``).

A phase ``config`` applies ConfigMaps and a Secret into the ApplySet ``cms``; a later phase ``cleanup`` of the same
plan deletes one ConfigMap and the Secret. Check mode says ``would delete`` and deletes nothing; a run deletes them
and keeps the rest; a re-run is ok; status says differs (naming what exists) before and in sync after; the set's
parent then records no Secret; destroy leaves the cleanup phase alone. An object another plan applied is refused,
naming that plan, until ``applyset_adopt: all``. The standalone ``phasekit.kube.apply`` action does the same, and
waits until each object is gone (a finalizer nobody removes: the timeout names it).
"""

from __future__ import annotations

import json
import re
import uuid

import pytest

from test_apply import run_tasks, task

from conftest import one_cluster_site

API = "phasekit.dev/v1alpha1"
CLUSTER = "target"
SECRET_VALUE = "absent-s3cr3t-value"
GROUP_KINDS = "applyset.kubernetes.io/contains-group-kinds"


def configmap(name: str, namespace: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace},
            "data": {"v": "1"}}


def secret(name: str, namespace: str) -> dict:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": namespace},
            "stringData": {"token": SECRET_VALUE}}


def phase(name: str, source, **options) -> dict:
    return {"apiVersion": API, "kind": "Phase", "metadata": {"name": name},
            "spec": {"cluster": CLUSTER, "executor": "apply", "source": source, "options": options}}


def plan(name: str, *phases) -> dict:
    return {"apiVersion": API, "kind": "PhasePlan", "metadata": {"name": name}, "spec": {"phases": list(phases)}}


@pytest.fixture()
def site(clusters, tmp_path, collections_path):
    """The site's root, the namespace, and run(*args): ansible-playbook phasekit.kube.run there (output unwrapped)."""
    target = clusters[CLUSTER]
    namespace = f"pk-absent-{uuid.uuid4().hex[:6]}"
    target.kubectl("create", "namespace", namespace)
    root = tmp_path / "site"
    run, write = one_cluster_site(target, root, namespace, collections_path)

    def documents(*docs) -> None:
        write(docs)

    run.root, run.namespace, run.documents = root, namespace, documents
    yield run
    target.kubectl("delete", "namespace", namespace, "--wait=false", check=False)


def exists(cluster, kind: str, name: str, namespace: str) -> bool:
    return cluster.kubectl("get", kind, name, "-n", namespace, check=False).returncode == 0


def summary_row(output: str, plan_name: str, phase_name: str) -> str:
    summary = output[output.index(f"Summary of plan {plan_name}"):]
    return next(line for line in summary.splitlines() if line.strip().strip('",').startswith(f"{phase_name} "))


def test_a_later_phase_deletes_what_an_earlier_one_applied(clusters, site):
    target, namespace = clusters[CLUSTER], site.namespace
    cleanup = phase("cleanup", [configmap("gone", namespace), secret("token", namespace),
                                configmap("never-made", namespace)],
                    state="absent", applyset="cms", namespace=namespace)
    # first the site as it was: config applies all three
    site.documents(phase("config", [configmap("keep", namespace), configmap("gone", namespace),
                                    secret("token", namespace)], applyset="cms", namespace=namespace),
                   cleanup, plan("site", "config", "cleanup"))
    rc, output = site("-e", "plan_name=site", "-e", '{"plan_only": ["config"]}')
    assert rc == 0, output
    parent = target.get_json("secret", "cms", "-n", namespace)
    assert parent["metadata"]["annotations"][GROUP_KINDS] == "ConfigMap,Secret"

    # then config no longer holds them, and cleanup deletes them
    site.documents(phase("config", [configmap("keep", namespace)], applyset="cms", namespace=namespace),
                   cleanup, plan("site", "config", "cleanup"))
    rc, output = site("-e", "plan_name=site", "-e", "plan_action=status", "-e", "plan_fail_on_drift=true")
    assert rc != 0, output
    assert "differs" in summary_row(output, "site", "cleanup"), output
    assert (f"cleanup on {CLUSTER}: differs: ConfigMap {namespace}/gone: exists, would be deleted (state: absent); "
            f"Secret {namespace}/token: exists, would be deleted (state: absent)") in " ".join(output.split()), output

    rc, output = site("-e", "plan_name=site", "--check", "--diff")
    assert rc == 0, output
    assert f"{CLUSTER}: would delete ConfigMap {namespace}/gone, Secret {namespace}/token" in output, output
    assert f"{CLUSTER}: ConfigMap {namespace}/gone (live)" in output, output      # the diff: the state before
    assert SECRET_VALUE not in output, output
    assert exists(target, "configmap", "gone", namespace) and exists(target, "secret", "token", namespace)

    rc, output = site("-e", "plan_name=site")
    assert rc == 0, output
    assert f"{CLUSTER}: deleted ConfigMap {namespace}/gone, Secret {namespace}/token" in output, output
    assert "changed" in summary_row(output, "site", "cleanup"), output
    assert not exists(target, "configmap", "gone", namespace) and not exists(target, "secret", "token", namespace)
    assert exists(target, "configmap", "keep", namespace)
    parent = target.get_json("secret", "cms", "-n", namespace)
    assert parent["metadata"]["annotations"][GROUP_KINDS] == "ConfigMap"   # the set no longer records Secrets

    rc, output = site("-e", "plan_name=site")
    assert rc == 0, output
    assert " ok " in summary_row(output, "site", "cleanup") and "deleted" not in output, output

    rc, output = site("-e", "plan_name=site", "-e", "plan_action=status", "-e", "plan_fail_on_drift=true")
    assert rc == 0, output
    assert "in sync" in summary_row(output, "site", "cleanup"), output

    for action in ("validate", "render"):
        rc, output = site("-e", "plan_name=site", "-e", f"plan_action={action}")
        assert rc == 0, output
    # render shows the bundle as YAML, masked
    assert re.search(r"^\s*name: never-made$", output, re.MULTILINE) and SECRET_VALUE not in output, output

    rc, output = site("-e", "plan_name=site", "-e", "plan_action=destroy")
    assert rc == 0, output
    assert "skipped" in summary_row(output, "site", "cleanup"), output
    assert "destroyed" in summary_row(output, "site", "config"), output
    assert not exists(target, "configmap", "keep", namespace)


def test_an_object_another_plan_applied_is_refused_naming_that_plan(clusters, site):
    target, namespace = clusters[CLUSTER], site.namespace
    theirs = [configmap("theirs", namespace)]
    site.documents(phase("their-config", theirs, namespace=namespace),
                   phase("sweep", theirs + [configmap("mine", namespace)], state="absent", namespace=namespace),
                   phase("sweep-all", theirs, state="absent", namespace=namespace, applyset_adopt="all"),
                   plan("theirs", "their-config"), plan("sweeper", "sweep"), plan("forceful", "sweep-all"))
    target.kubectl("create", "configmap", "mine", "-n", namespace)
    rc, output = site("-e", "plan_name=theirs")
    assert rc == 0, output

    rc, output = site("-e", "plan_name=sweeper")
    assert rc != 0, output
    assert (f"ConfigMap {namespace}/theirs belongs to plan theirs (host {CLUSTER}") in " ".join(output.split()), output
    assert "set applyset_adopt: all" in " ".join(output.split()), output
    assert exists(target, "configmap", "theirs", namespace)
    assert exists(target, "configmap", "mine", namespace)     # nothing was deleted

    rc, output = site("-e", "plan_name=forceful")
    assert rc == 0, output
    assert not exists(target, "configmap", "theirs", namespace)


def test_the_apply_action_deletes_with_state_absent(clusters, run_playbook, tmp_path, site):
    target, namespace = clusters[CLUSTER], site.namespace
    target.kubectl("create", "configmap", "old", "-n", namespace)
    named = {"state": "absent", "namespace": namespace,
             "definition": [configmap("old", namespace), configmap("missing", namespace)]}
    checked, deleted, again, bad = run_tasks(run_playbook, tmp_path, [
        {**task("apply", target, **named), "check_mode": True},
        task("apply", target, **named),
        task("apply", target, **named),
        task("apply", target, **{**named, "state": "gone"}),
    ])[:4]
    assert checked["changed"] and checked["msg"] == f"would delete ConfigMap {namespace}/old", checked
    assert checked["absent"] == [f"ConfigMap {namespace}/missing"], checked
    assert deleted["changed"] and deleted["counts"] == {"deleted": 1, "absent": 1, "failed": 0}, deleted
    assert not again["changed"] and again["msg"] == "nothing to delete: every object is absent", again
    assert bad["failed"] and "state" in bad["msg"] and "present, absent" in bad["msg"], json.dumps(bad)
    assert not exists(target, "configmap", "old", namespace)


def test_the_action_waits_until_each_object_is_gone_and_names_what_stays(clusters, run_playbook, tmp_path, site):
    """A finalizer nobody removes keeps the ConfigMap: the wait times out naming it; wait: false does not wait."""
    target, namespace = clusters[CLUSTER], site.namespace
    held = configmap("held", namespace)
    held["metadata"]["finalizers"] = ["example.com/hold"]
    target.kubectl("apply", "-f", "-", stdin=json.dumps(held))
    try:
        named = {"state": "absent", "definition": [configmap("held", namespace)]}
        waited, not_waiting = run_tasks(run_playbook, tmp_path, [
            task("apply", target, **named, wait={"timeout": 2}),
            task("apply", target, **named, wait=False),
        ])[:2]
        assert waited["failed"] and waited["msg"] == f"not gone after 2s: ConfigMap {namespace}/held", waited
        assert not not_waiting.get("failed") and not_waiting["msg"] == f"deleted ConfigMap {namespace}/held", \
            not_waiting
        assert target.get_json("configmap", "held", "-n", namespace)["metadata"]["deletionTimestamp"]
    finally:
        target.kubectl("patch", "configmap", "held", "-n", namespace, "--type=merge", "-p",
                       '{"metadata":{"finalizers":null}}', check=False)
