# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""phasekit.kube.wait against the real local clusters: kstatus plus JMESPath conditions, all objects together."""

from __future__ import annotations

import time

import pytest

import yaml

from test_apply import CLUSTER, config_map, deployment, namespace, ns_object, run_tasks, task  # noqa: F401  pylint: disable=unused-import

pytestmark = [pytest.mark.k8s_matrix]


def test_wait_for_objects_applied_elsewhere(clusters, run_playbook, tmp_path, namespace):  # noqa: F811
    """Objects created by kubectl become ready on KWOK nodes; the wait names them by a bundle."""
    target = clusters[CLUSTER]
    objects = [ns_object(namespace), deployment("api", replicas=2), config_map("settings", k="v")]
    target.kubectl("apply", "-n", namespace, "-f", "-", stdin=yaml.safe_dump_all(objects))
    result, _rest = run_tasks(run_playbook, tmp_path, [task(
        "wait", target, namespace=namespace, src="wanted.yaml", timeout=120,
        conditions=[{"kind": "Deployment", "path": "status.readyReplicas", "value": 2},
                    {"kind": "ConfigMap", "path": "data.k", "value": "v"}])],
        files={"wanted.yaml": objects[1:]})
    assert not result.get("failed"), result
    assert result["ready"] is True and result["changed"] is False
    assert {o["kind"]: o["status"] for o in result["objects"]} == {"Deployment": "Current", "ConfigMap": "Current"}


def test_wait_timeout_reports_each_object(clusters, run_playbook, tmp_path, namespace):  # noqa: F811
    target = clusters[CLUSTER]
    target.kubectl("create", "namespace", namespace)
    target.kubectl("create", "configmap", "present", "-n", namespace, "--from-literal=phase=Pending")
    result, _rest = run_tasks(run_playbook, tmp_path, [task(
        "wait", target, namespace=namespace, timeout=3,
        definition=[config_map("present"), config_map("absent")],
        conditions=[{"name": "present", "path": "data.phase", "value": "Ready"}])])
    assert result["failed"] and result["ready"] is False
    assert result["msg"].startswith("timed out after 3s: 2 of 2 objects not ready: ")
    assert f"ConfigMap {namespace}/present: InProgress: condition not met: data.phase is 'Pending', " \
           "expected 'Ready'" in result["msg"]
    assert f"ConfigMap {namespace}/absent: NotFound: object not found" in result["msg"]


def job(name: str) -> dict:
    """A Job whose pod KWOK leaves alone (its status is the test's to set): it runs until the test says."""
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"backoffLimit": 0, "template": {
                "metadata": {"annotations": {"kwok.x-k8s.io/status": "custom"}},
                "spec": {"restartPolicy": "Never",
                         "containers": [{"name": "work", "image": "registry.example/work:1"}]}}}}


def finish_job_pod(cluster, namespace: str, name: str, succeeded: bool) -> None:
    """Set the Job's pod to Succeeded or Failed, as a kubelet would when its container exits."""
    deadline = time.monotonic() + 60
    pods = []
    while not pods and time.monotonic() < deadline:
        pods = cluster.get_json("pods", "-n", namespace, "-l", f"job-name={name}")["items"]
        time.sleep(0.2)
    assert pods, f"the Job {name} made no pod"
    exit_code, reason = (0, "Completed") if succeeded else (1, "Error")
    status = {"status": {"phase": "Succeeded" if succeeded else "Failed", "containerStatuses": [
        {"name": "work", "image": "registry.example/work:1", "imageID": "", "ready": False, "restartCount": 0,
         "state": {"terminated": {"exitCode": exit_code, "reason": reason}}}]}}
    cluster.kubectl("patch", "-n", namespace, f"pod/{pods[0]['metadata']['name']}", "--subresource=status",
                    "--type=merge", "-p", yaml.safe_dump(status))


def test_a_job_is_ready_when_it_has_completed(clusters, run_playbook, tmp_path, namespace):  # noqa: F811
    target = clusters[CLUSTER]
    objects = [ns_object(namespace), job("migrate")]
    target.kubectl("apply", "-n", namespace, "-f", "-", stdin=yaml.safe_dump_all(objects))
    running, _rest = run_tasks(run_playbook, tmp_path, [task(
        "wait", target, namespace=namespace, definition=objects[1:], timeout=3)])
    assert running["failed"] and running["msg"].startswith("timed out after 3s: 1 of 1 objects not ready: ")
    assert f"Job {namespace}/migrate: InProgress: Job in progress. success: 0/1" in running["msg"]
    finish_job_pod(target, namespace, "migrate", succeeded=True)
    done, _rest = run_tasks(run_playbook, tmp_path, [task(
        "wait", target, namespace=namespace, definition=objects[1:], timeout=120)])
    assert not done.get("failed"), done
    assert done["objects"][0]["status"] == "Current"
    assert done["objects"][0]["message"].startswith("Job Completed. succeeded: 1/1")


def test_a_failed_job_ends_the_wait_at_once_and_says_why(clusters, run_playbook, tmp_path, namespace):  # noqa: F811
    """The wait stops when the Job fails, though a Deployment is still not ready and 300 s remain."""
    target = clusters[CLUSTER]
    stuck = deployment("stuck", nodeSelector={"no-such-label": "anywhere"})
    objects = [ns_object(namespace), job("migrate"), stuck]
    target.kubectl("apply", "-n", namespace, "-f", "-", stdin=yaml.safe_dump_all(objects))
    finish_job_pod(target, namespace, "migrate", succeeded=False)
    result, _rest = run_tasks(run_playbook, tmp_path, [task(
        "wait", target, namespace=namespace, definition=objects[1:], timeout=300)])
    assert result["failed"]
    assert result["msg"].startswith("1 of 2 objects failed (1 more not ready yet): "
                                    f"Job {namespace}/migrate: Failed: Job Failed. failed: 1/1 "
                                    "(BackoffLimitExceeded: Job has reached the specified backoff limit) "
                                    "[events: BackoffLimitExceeded (Job migrate): Job has reached the specified "
                                    "backoff limit]"), result["msg"]
    assert f"Deployment {namespace}/stuck: InProgress: " in result["msg"]
    assert "FailedScheduling (Pod stuck-" in result["msg"]  # the Deployment's pods' events, too
