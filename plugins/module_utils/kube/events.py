# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Why an object is not ready, in the cluster's own words: its recent Warning events and its pods'.

Read only when a wait ends with objects not ready: one LIST of the namespace's
Warning events, and for a workload (Deployment, StatefulSet, DaemonSet,
ReplicaSet, Job) one LIST of its pods by its selector. Events name objects and
reasons (``FailedScheduling``, ``BackOff``, ``BackoffLimitExceeded``), never the
data of a Secret. Any error here (no permission to list events) leaves the
message as it was: an explanation is a help, not a requirement.
"""

from __future__ import annotations

from ansible_collections.phasekit.kube.plugins.module_utils.kube.session import ApiError, TransportError

MAX_OBJECTS = 5          # objects explained in one message
MAX_EVENTS = 3           # events quoted per object, newest first
MAX_EVENT_TEXT = 200     # characters of one event's message
WORKLOADS = {("apps", "Deployment"), ("apps", "StatefulSet"), ("apps", "DaemonSet"), ("apps", "ReplicaSet"),
             ("batch", "Job")}


def explain(session, not_ready: list[tuple[object, dict | None]]) -> dict[tuple, str]:
    """For (target, live object) pairs not ready: ``Target.key`` -> a short text of their recent Warning events.

    Objects without events (or whose events cannot be read) are left out.
    """
    explained = {}
    warnings_by_namespace: dict[str, list | None] = {}  # None: that namespace's events cannot be read
    for target, live in not_ready[:MAX_OBJECTS]:
        if not isinstance(live, dict) or not target.namespace:
            continue
        if target.namespace not in warnings_by_namespace:
            warnings_by_namespace[target.namespace] = _warnings_in(session, target.namespace)
        warnings = warnings_by_namespace[target.namespace]
        if warnings is None:
            continue
        try:
            uids = {_uid(live)} | _pod_uids(session, target, live)
        except (ApiError, TransportError):
            continue
        events = [event for event in warnings if (event.get("involvedObject") or {}).get("uid") in uids - {None}]
        text = describe_events(events)
        if text:
            explained[target.key] = text
    return explained


def describe_events(events: list[dict]) -> str:
    """The newest distinct events as 'Reason (Kind name): message', joined with ' | '."""
    lines, seen = [], set()
    for event in sorted(events, key=_when, reverse=True):
        involved = event.get("involvedObject") or {}
        message = " ".join(str(event.get("message") or "").split())
        if len(message) > MAX_EVENT_TEXT:
            message = message[:MAX_EVENT_TEXT - 1] + "…"
        if (event.get("reason"), message) in seen:
            continue
        seen.add((event.get("reason"), message))
        lines.append(f"{event.get('reason') or 'Warning'} ({involved.get('kind')} {involved.get('name')}): {message}")
        if len(lines) == MAX_EVENTS:
            break
    return " | ".join(lines)


def _warnings_in(session, namespace: str) -> list | None:
    try:
        return session.list(f"/api/v1/namespaces/{namespace}/events", field_selector="type=Warning")
    except (ApiError, TransportError):
        return None


def _pod_uids(session, target, live: dict) -> set:
    if (target.resource.group, target.resource.kind) not in WORKLOADS:
        return set()
    labels = ((live.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    if not labels:
        return set()
    selector = ",".join(f"{key}={value}" for key, value in sorted(labels.items()))
    pods = session.list(f"/api/v1/namespaces/{target.namespace}/pods", label_selector=selector)
    return {_uid(pod) for pod in pods}


def _uid(obj: dict):
    return (obj.get("metadata") or {}).get("uid")


def _when(event: dict) -> str:
    # RFC 3339 UTC stamps sort as text; the newest of the fields a v1 Event may carry
    return max(str(event.get(name) or "") for name in ("lastTimestamp", "eventTime", "firstTimestamp")) or \
        str((event.get("metadata") or {}).get("creationTimestamp") or "")
