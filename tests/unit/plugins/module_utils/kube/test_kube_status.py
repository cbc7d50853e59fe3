"""kstatus rules, one row per rule (cli-utils pkg/kstatus/status)."""

from __future__ import annotations

import datetime

import pytest

from ansible_collections.phasekit.kube.plugins.module_utils.kube.status import compute_status

NOW = datetime.datetime(2024, 1, 1, 12, 0, 0, tzinfo=datetime.timezone.utc)


def obj(api_version, kind, spec=None, status=None, generation=None, **metadata):
    meta = dict(name="x", **metadata)
    if generation is not None:
        meta["generation"] = generation
    out = {"apiVersion": api_version, "kind": kind, "metadata": meta}
    if spec is not None:
        out["spec"] = spec
    if status is not None:
        out["status"] = status
    return out


def cond(kind, status, reason="", message=""):
    return {"type": kind, "status": status, "reason": reason, "message": message}


DEPLOY_OK = {"replicas": 2, "updatedReplicas": 2, "readyReplicas": 2, "availableReplicas": 2,
             "observedGeneration": 1, "conditions": [cond("Available", "True"),
                                                     cond("Progressing", "True", "NewReplicaSetAvailable")]}

CASES = [
    (obj("v1", "ConfigMap"), "Current", "always ready"),
    (obj("v1", "Secret"), "Current", "always ready"),
    (obj("v1", "ConfigMap", deletionTimestamp="2024-01-01T00:00:00Z"), "Terminating", "scheduled for deletion"),
    (obj("apps/v1", "Deployment", {"replicas": 2}, dict(DEPLOY_OK, observedGeneration=1), generation=2),
     "InProgress", "generation is 2, but latest observed generation is 1"),
    (obj("apps/v1", "Deployment", {"replicas": 2}, DEPLOY_OK, generation=1), "Current", "Deployment is available"),
    (obj("apps/v1", "Deployment", {"replicas": 2}, dict(DEPLOY_OK, replicas=1), generation=1), "InProgress",
     "Replicas: 1/2"),
    (obj("apps/v1", "Deployment", {"replicas": 2}, dict(DEPLOY_OK, availableReplicas=1), generation=1),
     "InProgress", "Available: 1/2"),
    (obj("apps/v1", "Deployment", {"replicas": 2}, dict(DEPLOY_OK, readyReplicas=1), generation=1),
     "InProgress", "Ready: 1/2"),
    (obj("apps/v1", "Deployment", {"replicas": 2}, dict(DEPLOY_OK, conditions=[
        cond("Progressing", "False", "ProgressDeadlineExceeded")]), generation=1), "Failed", "deadline exceeded"),
    (obj("apps/v1", "Deployment", {"replicas": 2}, dict(DEPLOY_OK, conditions=[
        cond("Progressing", "True", "NewReplicaSetAvailable")]), generation=1), "InProgress",
     "Deployment not Available"),
    (obj("apps/v1", "StatefulSet", {"replicas": 1}, {"replicas": 1, "readyReplicas": 1, "currentReplicas": 1,
                                                     "currentRevision": "a", "updateRevision": "a"}),
     "Current", "All replicas scheduled"),
    (obj("apps/v1", "StatefulSet", {"replicas": 1}, {"replicas": 1, "readyReplicas": 1, "currentReplicas": 1,
                                                     "currentRevision": "a", "updateRevision": "b"}),
     "InProgress", "updated revision"),
    (obj("apps/v1", "StatefulSet", {"updateStrategy": {"type": "OnDelete"}}, {}), "Current", "ondelete"),
    (obj("apps/v1", "DaemonSet", {}, {"desiredNumberScheduled": 2, "currentNumberScheduled": 2,
                                      "updatedNumberScheduled": 2, "numberAvailable": 1, "numberReady": 2,
                                      "observedGeneration": 1}, generation=1), "InProgress", "Available: 1/2"),
    (obj("apps/v1", "DaemonSet", {}, {}, generation=1), "InProgress", "not observed"),
    (obj("apps/v1", "ReplicaSet", {"replicas": 1}, {"replicas": 1, "fullyLabeledReplicas": 1, "readyReplicas": 1,
                                                    "availableReplicas": 1}), "Current", "ReplicaSet is available"),
    (obj("batch/v1", "Job", {}, {"startTime": "t", "conditions": [cond("Complete", "True")]}), "Current",
     "Job Completed"),
    (obj("batch/v1", "Job", {}, {"startTime": "t", "conditions": [cond("Failed", "True")]}), "Failed", "Job Failed"),
    (obj("batch/v1", "Job", {}, {}), "InProgress", "Job not started"),
    (obj("batch/v1", "Job", {"completions": 2}, {"startTime": "t", "active": 1, "succeeded": 1}), "InProgress",
     "Job in progress. success: 1/2, active: 1, failed: 0"),
    (obj("batch/v1", "Job", {}, {"startTime": "t", "failed": 1, "conditions": [
        cond("Failed", "True", "BackoffLimitExceeded", "Job has reached the specified backoff limit")]}), "Failed",
     "Job Failed. failed: 1/1 (BackoffLimitExceeded: Job has reached the specified backoff limit)"),
    (obj("v1", "Pod", {}, {"phase": "Running", "conditions": [cond("Ready", "True")]}), "Current", "Pod is Ready"),
    (obj("v1", "Pod", {}, {"phase": "Running", "containerStatuses": [
        {"name": "app", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}), "Failed", "CrashLoop state: app"),
    (obj("v1", "Pod", {}, {"phase": "Pending", "conditions": [cond("PodScheduled", "False", "Unschedulable")]},
         creationTimestamp="2024-01-01T11:00:00Z"), "Failed", "could not be scheduled"),
    (obj("v1", "Pod", {}, {"phase": "Pending", "conditions": [cond("PodScheduled", "False", "Unschedulable")]},
         creationTimestamp="2024-01-01T11:59:55Z"), "InProgress", "not been scheduled"),
    (obj("v1", "Pod", {}, {"phase": "Succeeded"}), "Current", "completed successfully"),
    (obj("v1", "PersistentVolumeClaim", {}, {"phase": "Pending"}), "InProgress", "not Bound"),
    (obj("v1", "PersistentVolumeClaim", {}, {"phase": "Bound"}), "Current", "PVC is Bound"),
    (obj("v1", "Service", {"type": "LoadBalancer"}, {}), "InProgress", "ClusterIP not set"),
    (obj("v1", "Service", {"type": "ClusterIP", "clusterIP": "10.0.0.1"}, {}), "Current", "Service is ready"),
    (obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", {}, {"conditions": [
        cond("NamesAccepted", "True"), cond("Established", "True")]}), "Current", "CRD is established"),
    (obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", {}, {"conditions": [
        cond("Established", "False", "Installing")]}), "InProgress", "Install in progress"),
    (obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", {}, {"conditions": [
        cond("NamesAccepted", "False", "NameConflict", "plural taken")]}), "Failed", "plural taken"),
    (obj("example.com/v1", "Widget", {}, {"conditions": [cond("Ready", "False", "Waiting", "db down")]}),
     "InProgress", "Ready condition is False: db down"),
    (obj("example.com/v1", "Widget", {}, {"conditions": [cond("Ready", "True")]}), "Current", "Ready"),
    (obj("example.com/v1", "Widget", {}, {}), "Current", "Resource is current"),
    (obj("example.com/v1", "Widget", {}, {"conditions": [cond("Reconciling", "True", message="working")]}),
     "InProgress", "working"),
    (obj("example.com/v1", "Widget", {}, {"conditions": [cond("Stalled", "True", message="bad spec")]}),
     "Failed", "bad spec"),
]
IDS = ["configmap", "secret", "terminating", "generation-not-observed", "deployment-available",
       "deployment-too-few-replicas", "deployment-too-few-available", "deployment-too-few-ready",
       "deployment-deadline-exceeded", "deployment-not-available", "statefulset-current",
       "statefulset-revision-mismatch", "statefulset-ondelete", "daemonset-too-few-available",
       "daemonset-not-observed", "replicaset-available", "job-complete", "job-failed", "job-not-started",
       "job-running", "job-failed-why",
       "pod-ready", "pod-crashloop", "pod-unschedulable-after-window", "pod-unschedulable-in-window",
       "pod-succeeded", "pvc-pending", "pvc-bound", "service-lb-without-ip", "service-clusterip",
       "crd-established", "crd-installing", "crd-names-not-accepted", "generic-ready-false",
       "generic-ready-true", "generic-no-conditions", "generic-reconciling", "generic-stalled"]


@pytest.mark.parametrize("live, status, message", CASES, ids=IDS)
def test_kstatus_rule(live, status, message):
    result = compute_status(live, now=NOW)
    assert result.status == status
    assert message in result.message
