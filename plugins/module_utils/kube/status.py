# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Readiness of a live object, by the kstatus rules of cli-utils.

``compute_status(obj)`` returns Current, InProgress, Failed or Terminating with
a message for people. Generic rules come first (deletion, observedGeneration,
the standard ``Reconciling``/``Stalled`` conditions), then one rule per kind
from the table ``KIND_RULES``; any other kind is Current unless its ``Ready``
condition says otherwise.

One departure from kstatus: a Job is Current when it has completed (kstatus:
once it has started), so waiting for a Job waits for its work; it is Failed
as soon as its ``Failed`` condition appears.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass

CURRENT = "Current"
IN_PROGRESS = "InProgress"
FAILED = "Failed"
TERMINATING = "Terminating"
NOT_FOUND = "NotFound"
SCHEDULE_WINDOW = 15  # seconds a pod may stay unschedulable before that counts as failure
INT32_MAX = 2 ** 31 - 1


@dataclass(frozen=True)
class Status:
    status: str
    message: str

    @property
    def current(self) -> bool:
        return self.status == CURRENT


def compute_status(obj: dict, now: datetime.datetime | None = None) -> Status:
    """kstatus for one live object (with its status)."""
    generic = _generic(obj)
    if generic is not None:
        return generic
    group = (obj.get("apiVersion") or "").rpartition("/")[0]
    rule = KIND_RULES.get((group, obj.get("kind")))
    if rule is not None:
        return rule(obj, now) if rule is _pod else rule(obj)
    return _ready_condition(obj)


def _get(obj: dict, path: str, default=None):
    value = obj
    for key in path.split("."):
        if not isinstance(value, dict) or key not in value:
            return default
        value = value[key]
    return value


def _int(obj: dict, path: str, default: int) -> int:
    value = _get(obj, path, default)
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _conditions(obj: dict) -> list:
    conditions = _get(obj, "status.conditions", [])
    return [c for c in conditions if isinstance(c, dict)] if isinstance(conditions, list) else []


def _condition(obj: dict, kind: str) -> dict | None:
    return next((c for c in _conditions(obj) if c.get("type") == kind), None)


def _generic(obj: dict) -> Status | None:
    if _get(obj, "metadata.deletionTimestamp"):
        return Status(TERMINATING, "Resource scheduled for deletion")
    generation = _get(obj, "metadata.generation")
    observed = _get(obj, "status.observedGeneration")
    if isinstance(generation, int) and isinstance(observed, int) and observed != generation:
        return Status(IN_PROGRESS, f"{obj.get('kind')} generation is {generation}, "
                                   f"but latest observed generation is {observed}")
    for condition in _conditions(obj):
        if condition.get("type") == "Reconciling" and condition.get("status") == "True":
            return Status(IN_PROGRESS, condition.get("message") or condition.get("reason") or "Reconciling")
        if condition.get("type") == "Stalled" and condition.get("status") == "True":
            return Status(FAILED, condition.get("message") or condition.get("reason") or "Stalled")
    return None


def _always_current(_obj: dict) -> Status:
    return Status(CURRENT, "Resource is always ready")


def _ready_condition(obj: dict) -> Status:
    """Everything else: a Ready condition, when there is one, decides."""
    ready = _condition(obj, "Ready")
    if ready is None or ready.get("status") == "True":
        return Status(CURRENT, "Resource is Ready" if ready else "Resource is current")
    detail = ready.get("message") or ready.get("reason") or f"Ready is {ready.get('status')}"
    return Status(IN_PROGRESS, f"Ready condition is {ready.get('status')}: {detail}")


def _deployment(obj: dict) -> Status:
    progressing = _int(obj, "spec.progressDeadlineSeconds", INT32_MAX) == INT32_MAX
    available = False
    for condition in _conditions(obj):
        if condition.get("type") == "Progressing":
            if condition.get("reason") == "ProgressDeadlineExceeded":
                return Status(FAILED, "Progress deadline exceeded")
            if condition.get("status") == "True" and condition.get("reason") == "NewReplicaSetAvailable":
                progressing = True
        elif condition.get("type") == "Available" and condition.get("status") == "True":
            available = True
    spec = _int(obj, "spec.replicas", 1)
    replicas = _int(obj, "status.replicas", 0)
    updated = _int(obj, "status.updatedReplicas", 0)
    ready = _int(obj, "status.readyReplicas", 0)
    available_replicas = _int(obj, "status.availableReplicas", 0)
    waiting = _first_unmet(((spec > replicas, f"Replicas: {replicas}/{spec}"),
                            (spec > updated, f"Updated: {updated}/{spec}"),
                            (replicas > spec, f"Pending termination: {replicas - spec}"),
                            (updated > available_replicas, f"Available: {available_replicas}/{updated}"),
                            (spec > ready, f"Ready: {ready}/{spec}"),
                            (not progressing, "ReplicaSet not Available"),
                            (not available, "Deployment not Available")))
    return waiting or Status(CURRENT, f"Deployment is available. Replicas: {replicas}")


def _first_unmet(checks) -> Status | None:
    """The first of ``checks`` (unmet, message) that is unmet, in progress: kstatus checks a workload's counts in a
    fixed order and reports the first that falls short."""
    return next((Status(IN_PROGRESS, message) for unmet, message in checks if unmet), None)


def _stateful_set(obj: dict) -> Status:
    if _get(obj, "spec.updateStrategy.type") == "OnDelete":
        return Status(CURRENT, "StatefulSet is using the ondelete update strategy")
    spec = _int(obj, "spec.replicas", 1)
    ready = _int(obj, "status.readyReplicas", 0)
    current = _int(obj, "status.currentReplicas", 0)
    updated = _int(obj, "status.updatedReplicas", 0)
    replicas = _int(obj, "status.replicas", 0)
    partition = _int(obj, "spec.updateStrategy.rollingUpdate.partition", -1)
    waiting = _first_unmet(((spec > replicas, f"Replicas: {replicas}/{spec}"), (spec > ready, f"Ready: {ready}/{spec}"),
                            (replicas > spec, f"Pending termination: {replicas - spec}")))
    if waiting:
        return waiting
    if partition != -1:
        if updated < spec - partition:
            return Status(IN_PROGRESS, f"updated: {updated}/{spec - partition}")
        return Status(CURRENT, f"Partition rollout complete. updated: {updated}")
    if spec > current:
        return Status(IN_PROGRESS, f"current: {current}/{spec}")
    if _get(obj, "status.currentRevision", "") != _get(obj, "status.updateRevision", ""):
        return Status(IN_PROGRESS, "Waiting for updated revision to match current")
    return Status(CURRENT, f"All replicas scheduled as expected. Replicas: {replicas}")


def _daemon_set(obj: dict) -> Status:
    if _get(obj, "metadata.generation") is None or _get(obj, "status.observedGeneration") is None:
        return Status(IN_PROGRESS, "DaemonSet status not observed yet")
    desired = _int(obj, "status.desiredNumberScheduled", -1)
    if desired == -1:
        return Status(IN_PROGRESS, "Missing .status.desiredNumberScheduled")
    for field, label in (("currentNumberScheduled", "Current"), ("updatedNumberScheduled", "Updated"),
                         ("numberAvailable", "Available"), ("numberReady", "Ready")):
        value = _int(obj, f"status.{field}", 0)
        if desired > value:
            return Status(IN_PROGRESS, f"{label}: {value}/{desired}")
    return Status(CURRENT, f"All replicas scheduled as expected. Replicas: {desired}")


def _replica_set(obj: dict) -> Status:
    failure = _condition(obj, "ReplicaFailure")
    if failure and failure.get("status") == "True":
        return Status(IN_PROGRESS, "Replica Failure condition. Check Pods")
    spec = _int(obj, "spec.replicas", 1)
    for field, label in (("fullyLabeledReplicas", "Labelled"), ("availableReplicas", "Available"),
                         ("readyReplicas", "Ready")):
        value = _int(obj, f"status.{field}", 0)
        if spec > value:
            return Status(IN_PROGRESS, f"{label}: {value}/{spec}")
    replicas = _int(obj, "status.replicas", 0)
    if replicas > spec:
        return Status(IN_PROGRESS, f"Pending termination: {replicas - spec}")
    return Status(CURRENT, f"ReplicaSet is available. Replicas: {replicas}")


def _job(obj: dict) -> Status:
    parallelism = _int(obj, "spec.parallelism", 1)
    completions = _int(obj, "spec.completions", parallelism)
    succeeded = _int(obj, "status.succeeded", 0)
    failed = _int(obj, "status.failed", 0)
    for condition in _conditions(obj):
        if condition.get("status") != "True":
            continue
        if condition.get("type") == "Complete":
            return Status(CURRENT, f"Job Completed. succeeded: {succeeded}/{completions}")
        if condition.get("type") == "Failed":
            why = ": ".join(str(part) for part in (condition.get("reason"), condition.get("message")) if part)
            return Status(FAILED, f"Job Failed. failed: {failed}/{completions}" + (f" ({why})" if why else ""))
        if condition.get("type") == "Suspended":
            return Status(CURRENT, "Job is suspended")
    if not _get(obj, "status.startTime"):
        return Status(IN_PROGRESS, "Job not started")
    active = _int(obj, "status.active", 0)
    # kstatus calls a started Job Current; a phase that waits for a Job means "until it has run"
    return Status(IN_PROGRESS, f"Job in progress. success: {succeeded}/{completions}, active: {active}, "
                               f"failed: {failed}")


def _pod(obj: dict, now: datetime.datetime | None = None) -> Status:
    phase = _get(obj, "status.phase", "")
    if phase == "Succeeded":
        return Status(CURRENT, "Pod has completed successfully")
    if phase == "Failed":
        return Status(CURRENT, "Pod has completed, but not successfully")
    if phase == "Running":
        ready = _condition(obj, "Ready")
        if ready and ready.get("status") == "True":
            return Status(CURRENT, "Pod is Ready")
        crashing = [cs.get("name") for cs in _get(obj, "status.containerStatuses", []) or []
                    if isinstance(cs, dict) and _get(cs, "state.waiting.reason") == "CrashLoopBackOff"]
        if crashing:
            return Status(FAILED, f"Containers in CrashLoop state: {','.join(crashing)}")
        return Status(IN_PROGRESS, "Pod is running but is not Ready")
    if phase == "Pending":
        scheduled = _condition(obj, "PodScheduled")
        if scheduled and scheduled.get("status") == "False" and scheduled.get("reason") == "Unschedulable":
            if _age(obj, now) < SCHEDULE_WINDOW:
                return Status(IN_PROGRESS, "Pod has not been scheduled")
            return Status(FAILED, f"Pod could not be scheduled: {scheduled.get('message') or 'Unschedulable'}")
        return Status(IN_PROGRESS, "Pod is in the Pending phase")
    return Status(IN_PROGRESS, "Pod phase not available" if not phase else f"Pod phase is {phase}")


def _age(obj: dict, now: datetime.datetime | None) -> float:
    created = _get(obj, "metadata.creationTimestamp")
    if not created:
        return 0.0
    try:
        stamp = datetime.datetime.strptime(created, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
    except ValueError:
        return 0.0
    now = now or datetime.datetime.now(datetime.timezone.utc)
    return (now - stamp).total_seconds()


def _pvc(obj: dict) -> Status:
    phase = _get(obj, "status.phase", "unknown")
    if phase != "Bound":
        return Status(IN_PROGRESS, f"PVC is not Bound. phase: {phase}")
    return Status(CURRENT, "PVC is Bound")


def _service(obj: dict) -> Status:
    if _get(obj, "spec.type", "ClusterIP") == "LoadBalancer" and not _get(obj, "spec.clusterIP"):
        return Status(IN_PROGRESS, "ClusterIP not set. Service type: LoadBalancer")
    return Status(CURRENT, "Service is ready")


def _crd(obj: dict) -> Status:
    for condition in _conditions(obj):
        if condition.get("type") == "NamesAccepted" and condition.get("status") == "False":
            return Status(FAILED, condition.get("message") or condition.get("reason") or "names not accepted")
        if condition.get("type") == "Established":
            if condition.get("status") == "False" and condition.get("reason") != "Installing":
                return Status(FAILED, condition.get("message") or condition.get("reason") or "not established")
            if condition.get("status") == "True":
                return Status(CURRENT, "CRD is established")
    return Status(IN_PROGRESS, "Install in progress")


def _pdb(_obj: dict) -> Status:
    return Status(CURRENT, "AllowedDisruptions has been computed.")


# (API group, kind) -> rule; the generic checks above run first for every kind
KIND_RULES = {
    ("", "Service"): _service,
    ("", "Pod"): _pod,
    ("", "Secret"): _always_current,
    ("", "ConfigMap"): _always_current,
    ("", "PersistentVolumeClaim"): _pvc,
    ("apps", "StatefulSet"): _stateful_set,
    ("apps", "DaemonSet"): _daemon_set,
    ("extensions", "DaemonSet"): _daemon_set,
    ("apps", "Deployment"): _deployment,
    ("extensions", "Deployment"): _deployment,
    ("apps", "ReplicaSet"): _replica_set,
    ("extensions", "ReplicaSet"): _replica_set,
    ("policy", "PodDisruptionBudget"): _pdb,
    ("batch", "CronJob"): _always_current,
    ("batch", "Job"): _job,
    ("apiextensions.k8s.io", "CustomResourceDefinition"): _crd,
}
