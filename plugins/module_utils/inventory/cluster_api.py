# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Cluster API discovery: the ``Cluster`` objects of a management cluster as child cluster hosts.

Each discovered cluster's kubeconfig source is the ``<name>-kubeconfig`` Secret
(key ``value``) that Cluster API keeps next to the ``Cluster`` object; the
inventory records only that reference, it never reads the Secret.
"""

from __future__ import annotations

from urllib.parse import quote

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.inventory.checks import check_fields, check_labels
from ansible_collections.phasekit.kube.plugins.module_utils.inventory.cluster_map import ClusterHost

GROUP = "cluster.x-k8s.io"
PLURAL = "clusters"
DEFAULT_VERSION = "v1beta1"
ENTRY_FIELDS = ("host", "namespaces", "label_selector", "version", "host_name", "labels", "cluster_labels",
                "timeout")
HOST_NAME_KEYS = ("name", "namespace", "management")


def parse_cluster_api_entry(entry, *, where: str) -> dict:
    """A ``cluster_api`` option entry with defaults filled in."""
    if not isinstance(entry, dict):
        raise PhasekitError(f"expected a mapping with at least 'host', got {type(entry).__name__}", where=where)
    check_fields(entry, ENTRY_FIELDS, where)
    if not isinstance(entry.get("host"), str) or not entry["host"]:
        raise PhasekitError("'host' must name the management cluster's inventory host", where=where)
    namespaces = entry.get("namespaces") or []
    if isinstance(namespaces, str):
        namespaces = [namespaces]
    if not isinstance(namespaces, list) or not all(isinstance(n, str) and n for n in namespaces):
        raise PhasekitError("'namespaces' must be a list of namespace names", where=where)
    host_name = entry.get("host_name", "{name}")
    try:
        host_name.format(**{key: "x" for key in HOST_NAME_KEYS})
    except (AttributeError, KeyError, IndexError, ValueError) as exc:
        raise PhasekitError(f"'host_name' must be a format string using only {{{'}, {'.join(HOST_NAME_KEYS)}}} "
                            f"({exc.__class__.__name__}: {exc})", where=where) from None
    timeout = entry.get("timeout", 30)
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0:
        raise PhasekitError("'timeout' must be a positive number of seconds", where=where)
    return {
        "host": entry["host"],
        "namespaces": namespaces,
        "label_selector": entry.get("label_selector") or "",
        "version": entry.get("version") or DEFAULT_VERSION,
        "host_name": host_name,
        "labels": check_labels(entry.get("labels"), f"{where}, field labels"),
        "cluster_labels": bool(entry.get("cluster_labels", True)),
        "timeout": timeout,
    }


def _ready_flags(status: dict) -> dict:
    """Provisioning state under both the v1beta1 and v1beta2 status shapes."""
    initialization = status.get("initialization") or {}
    return {
        "infrastructure_ready": bool(status.get("infrastructureReady")
                                     or initialization.get("infrastructureProvisioned")),
        "control_plane_ready": bool(status.get("controlPlaneReady")
                                    or initialization.get("controlPlaneInitialized")),
    }


def cluster_summary(obj: dict) -> dict:
    """Non-secret facts about a Cluster object, kept as the host variable ``kube_cluster_api``."""
    metadata = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    return {
        "name": metadata.get("name"),
        "namespace": metadata.get("namespace") or "default",
        "phase": status.get("phase"),
        **_ready_flags(status),
        "version": (spec.get("topology") or {}).get("version"),
        "deleting": bool(metadata.get("deletionTimestamp")),
    }


def hosts_from_cluster_objects(objects: list[dict], entry: dict, *, origin: str) -> list[ClusterHost]:
    """One child host per Cluster object, its kubeconfig the ``<name>-kubeconfig`` Secret on the parent."""
    hosts = []
    seen: dict[str, str] = {}
    for obj in objects:
        summary = cluster_summary(obj)
        name, namespace = summary["name"], summary["namespace"]
        host = entry["host_name"].format(name=name, namespace=namespace, management=entry["host"])
        if host in seen:
            raise PhasekitError(f"Clusters {seen[host]} and {namespace}/{name} both become host {host!r}; set "
                                "'host_name' to tell them apart, for example '{namespace}-{name}'", where=origin)
        seen[host] = f"{namespace}/{name}"
        labels = dict(check_labels((obj.get("metadata") or {}).get("labels"), origin)) if entry["cluster_labels"] else {}
        labels.update(entry["labels"])
        hosts.append(ClusterHost(
            name=host,
            kubeconfig={"secret": {"host": entry["host"], "name": f"{name}-kubeconfig", "namespace": namespace}},
            parent=entry["host"],
            labels=labels,
            extra_vars={"kube_cluster_api": summary},
            origin=f"{origin}, Cluster {namespace}/{name}",
        ))
    return hosts


def list_cluster_objects(session, entry: dict, *, where: str) -> list[dict]:
    """The Cluster objects the entry selects, read through an ``ApiSession`` (the collection's one transport)."""
    from ansible_collections.phasekit.kube.plugins.module_utils.kube.session import ApiError, TransportError

    base = f"/apis/{GROUP}/{entry['version']}"
    paths = [f"{base}/namespaces/{quote(namespace, safe='')}/{PLURAL}" for namespace in entry["namespaces"]] \
        or [f"{base}/{PLURAL}"]
    try:
        items = [item for path in paths for item in session.list(path, label_selector=entry["label_selector"] or None)]
    except ApiError as exc:
        raise PhasekitError(_api_failure(exc, entry), where=where) from None
    except TransportError as exc:  # connection refused, TLS, timeouts: the server and why, not a stack
        raise PhasekitError(f"cannot list Cluster API clusters: {exc}", where=where) from None
    return sorted(items, key=lambda obj: ((obj.get("metadata") or {}).get("namespace", ""),
                                          (obj.get("metadata") or {}).get("name", "")))


def _api_failure(exc, entry: dict) -> str:
    resource = f"{PLURAL}.{GROUP}/{entry['version']}"
    if exc.status == 404:
        return (f"{resource} is not served by this cluster: is Cluster API installed, and does it serve "
                f"version {entry['version']}? (set 'version' to change it)")
    if exc.status in (401, 403):
        return f"not allowed to list {resource} (HTTP {exc.status} {exc.reason}: {exc.message}); the credentials " \
               "need list on it"
    return f"listing {resource} failed: HTTP {exc.status} {exc.reason}"
