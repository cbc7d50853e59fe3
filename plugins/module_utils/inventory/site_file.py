# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The site file: the cluster map written by hand.

    clusters:
      ephemeral:
        kubeconfig: ../kubeconfigs/ephemeral.yaml     # sources reference, never kubeconfig data
        context: ephemeral
        labels: {env: dev}
      target:
        parent: ephemeral
        kubeconfig: {secret: {name: target-kubeconfig, namespace: default}}
        labels: {env: dev, role: workload}
        vars: {region: eu-west}
"""

from __future__ import annotations

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.yaml_io import kind_of
from ansible_collections.phasekit.kube.plugins.module_utils.inventory.checks import (
    check_host_name,
    check_labels,
    checked_mapping,
)
from ansible_collections.phasekit.kube.plugins.module_utils.inventory.cluster_map import ClusterHost
from ansible_collections.phasekit.kube.plugins.module_utils.inventory.source_refs import (
    check_source_refs,
    relative_source_refs,
)

CLUSTER_FIELDS = ("kubeconfig", "context", "parent", "cluster", "labels", "vars")
# Host variables the fields above produce; setting them through 'vars' would bypass the checks.
CONTRACT_VARS = {"kube_kubeconfig": "kubeconfig", "kube_context": "context", "kube_parent": "parent",
                 "kube_cluster": "cluster", "kube_labels": "labels", "ansible_connection": None}


def _optional_text(spec: dict, key: str, where: str) -> str | None:
    value = spec.get(key)
    if value is not None and (not isinstance(value, str) or not value):
        raise PhasekitError(f"'{key}' must be a non-empty string, got {kind_of(value)}", where=where)
    return value


def _extra_vars(spec: dict, where: str) -> dict:
    extra = spec.get("vars") or {}
    if not isinstance(extra, dict):
        raise PhasekitError(f"'vars' must be a mapping, got {kind_of(extra)}", where=where)
    for name in extra:
        if name in CONTRACT_VARS:
            hint = f"use the field '{CONTRACT_VARS[name]}'" if CONTRACT_VARS[name] else "it is always 'local'"
            raise PhasekitError(f"'vars' must not set {name}: {hint}", where=where)
    return dict(extra)


def cluster_from_spec(name: str, spec, *, base_dir: str, where: str) -> ClusterHost:
    """One site file entry as a cluster host; relative paths anchored to ``base_dir``."""
    spec = checked_mapping(spec, CLUSTER_FIELDS, where)
    kubeconfig = spec.get("kubeconfig")
    if kubeconfig is not None:
        kubeconfig = check_source_refs(kubeconfig, base_dir=base_dir, where=f"{where}, field kubeconfig")
    return ClusterHost(
        name=name,
        kubeconfig=kubeconfig,
        context=_optional_text(spec, "context", where),
        parent=_optional_text(spec, "parent", where),
        cluster=_optional_text(spec, "cluster", where),
        labels=check_labels(spec.get("labels"), f"{where}, field labels"),
        extra_vars=_extra_vars(spec, where),
        origin=where,
    )


def clusters_from_site(data, *, path: str, base_dir: str) -> list[ClusterHost]:
    """Every cluster of a parsed site file, in file order."""
    if not isinstance(data, dict) or set(data) != {"clusters"}:
        found = ", ".join(map(str, data)) if isinstance(data, dict) else kind_of(data)
        raise PhasekitError(f"a site file is a mapping with the single key 'clusters'; found {found or 'nothing'}",
                            where=path)
    clusters = data["clusters"]
    if not isinstance(clusters, dict):
        raise PhasekitError(f"'clusters' must map cluster names to their settings, got {kind_of(clusters)}",
                            where=path)
    hosts = []
    for name, spec in clusters.items():
        check_host_name(name, where=f"{path}: clusters")
        hosts.append(cluster_from_spec(name, spec, base_dir=base_dir, where=f"{path}: clusters.{name}"))
    return hosts


def site_file_data(hosts: list[ClusterHost], *, base_dir: str) -> dict:
    """Cluster hosts as the data of a site file written in ``base_dir``: ``clusters_from_site`` reads it back
    to the same hosts (relative paths in kubeconfig sources are relative to that directory)."""
    clusters = {}
    for host in hosts:
        spec: dict = {}
        if host.kubeconfig is not None:
            spec["kubeconfig"] = relative_source_refs(host.kubeconfig, base_dir)
        for key in ("context", "parent", "cluster"):
            if getattr(host, key) is not None:
                spec[key] = getattr(host, key)
        if host.labels:
            spec["labels"] = dict(host.labels)
        if host.extra_vars:
            spec["vars"] = dict(host.extra_vars)
        clusters[host.name] = spec
    return {"clusters": clusters}
