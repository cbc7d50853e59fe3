# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""phasekit.kube.wait against the real local clusters: kstatus plus JMESPath conditions, all objects together."""

from __future__ import annotations

import yaml

from test_apply import CLUSTER, config_map, deployment, namespace, ns_object, run_tasks, task  # noqa: F401  pylint: disable=unused-import


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
