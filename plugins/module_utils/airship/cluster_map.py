# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""airshipctl's ``ClusterMap`` document (``airshipit.org/v1alpha1``) read as cluster hosts.

    map:
      target-cluster:
        parent: ephemeral-cluster
        kubeconfigSources:
          - {type: filesystem, filesystem: {path: kubeconfig, contextName: target-cluster}}
          - {type: clusterAPI, clusterAPI: {clusterNamespacedName: {name: target-cluster, namespace: default}}}
          - {type: bundle, bundle: {contextName: target-cluster}}

Each key of ``map`` is a host; ``parent`` is ``kube_parent``; the sources become ``kube_kubeconfig`` with the
collection's own source kinds: ``filesystem`` a path (relative to the ClusterMap's file), ``clusterAPI`` the
``<name>-kubeconfig`` Secret on the parent, ``bundle`` a ``bundle`` source reading the ``KubeConfig`` document of
the ClusterMap's own bundle (the file or directory the entry's ``path`` names) when a play needs the cluster, or
the source(s) the entry's ``bundle`` option gives instead. The inventory holds references, never kubeconfig
content, and reads or decrypts nothing but the ClusterMap. airshipctl tries the sources in order until one works:
every source but the last is optional.
"""

from __future__ import annotations

import os

from ansible_collections.phasekit.kube.plugins.module_utils import yaml_io
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.inventory.checks import (
    check_fields,
    check_host_name,
    checked_mapping,
)
from ansible_collections.phasekit.kube.plugins.module_utils.inventory.cluster_map import ClusterHost
from ansible_collections.phasekit.kube.plugins.module_utils.inventory.source_refs import anchor_path, check_source_refs
from ansible_collections.phasekit.kube.plugins.module_utils.inventory.sources import InventorySource

API_VERSION = "airshipit.org/v1alpha1"
KIND = "ClusterMap"
ENTRY_FIELDS = ("path", "bundle")
CLUSTER_FIELDS = ("parent", "kubeconfigSources", "dynamicKubeConf", "kubeconfigContext")
SOURCE_TYPES = ("filesystem", "bundle", "clusterAPI")
SOURCE_FIELDS = ("type",) + SOURCE_TYPES
# Where a bundle source's file is named, in the inventory plugin's configuration.


def is_cluster_map(content) -> bool:
    """Whether a parsed document is an airshipctl ClusterMap."""
    return isinstance(content, dict) and content.get("kind") == KIND and content.get("apiVersion") == API_VERSION


def parse_cluster_map_entry(raw, *, base_dir: str, where: str) -> dict:
    """One ``airship_cluster_map`` entry: ``path`` made absolute, ``bundle`` checked and anchored (by default a
    ``bundle`` source reading the KubeConfig document among the documents ``path`` names)."""
    if isinstance(raw, str):
        raw = {"path": raw}
    if not isinstance(raw, dict):
        raise PhasekitError(f"expected a path or a mapping with {', '.join(ENTRY_FIELDS)}, got "
                            f"{yaml_io.kind_of(raw)}", where=where)
    check_fields(raw, ENTRY_FIELDS, where)
    path = raw.get("path")
    if not isinstance(path, str) or not path:
        raise PhasekitError("'path' must be a file or directory of airshipctl documents (a non-empty string)",
                            where=where)
    path = os.path.join(base_dir, os.path.expanduser(path))
    bundle = raw.get("bundle")
    if bundle is None:
        bundle = {"bundle": path}
    else:
        bundle = check_source_refs(bundle, base_dir=base_dir, where=f"{where}, field bundle")
    return {"path": path, "bundle": bundle}


def read_cluster_maps(path: str) -> list[tuple[dict, str, str]]:
    """Every ClusterMap document of a file or a directory's ``*.yaml``/``*.yml`` files (not recursive).

    Returns ``(document, label, file)`` triples; other documents (``KubeConfig``, phases, SOPS-encrypted
    files) are parsed as YAML and otherwise left alone.
    """
    try:
        files = yaml_io.document_files_of(path)
    except PhasekitError as err:
        raise PhasekitError(f"{err} of airshipctl documents", where=path) from None
    found = []
    for file_path in files:
        text = yaml_io.read_document_file(file_path)
        for number, document in enumerate(yaml_io.load_all(text, file_path), start=1):
            if is_cluster_map(document):
                metadata = document.get("metadata")
                name = metadata.get("name") if isinstance(metadata, dict) else None
                label = f"{file_path} document {number} ({KIND}{' ' + str(name) if name else ''})"
                found.append((document, label, file_path))
    if not found:
        raise PhasekitError(f"no {KIND} document ({API_VERSION}) in {len(files)} file(s)", where=path)
    return found


def hosts_from_cluster_map(document: dict, *, label: str, base_dir: str, bundle=None) -> list[ClusterHost]:
    """The hosts of one ClusterMap document, in map order.

    ``base_dir``: the directory of the ClusterMap's file (filesystem paths start there). ``bundle`` is the
    source(s) of airshipctl's ``bundle`` kubeconfig sources; by default the KubeConfig document among the
    documents of that directory.
    """
    if bundle is None:
        bundle = {"bundle": base_dir}
    clusters = document.get("map")
    if clusters is None:
        clusters = {}
    if not isinstance(clusters, dict):
        raise PhasekitError(f"expected a mapping of cluster names to clusters, got {yaml_io.kind_of(clusters)}",
                            where=f"{label} field map")
    hosts = []
    for name, spec in clusters.items():
        check_host_name(name, where=f"{label} field map")
        where = f"{label} field map.{name}"
        hosts.append(_host(name, spec, where=where, base_dir=base_dir, bundle=bundle))
    return hosts


def _host(name: str, spec, *, where: str, base_dir: str, bundle) -> ClusterHost:
    spec = checked_mapping(spec, CLUSTER_FIELDS, where)
    parent = spec.get("parent") or None
    if parent is not None and not isinstance(parent, str):
        raise PhasekitError(f"expected the name of another cluster of the map, got {yaml_io.kind_of(parent)}",
                            where=f"{where}.parent")
    raw_sources = spec.get("kubeconfigSources") or []
    if not isinstance(raw_sources, list):
        raise PhasekitError(f"expected a list of kubeconfig sources, got {yaml_io.kind_of(raw_sources)}",
                            where=f"{where}.kubeconfigSources")
    sources, contexts = [], []
    for index, raw in enumerate(raw_sources):
        here = f"{where}.kubeconfigSources[{index}]"
        made, context = _source(raw, where=here, base_dir=base_dir, parent=parent, bundle=bundle)
        sources.extend(made)
        if context is not None:
            contexts.append((context, here))
    if spec.get("dynamicKubeConf") is True and not raw_sources:
        # older ClusterMaps: the kubeconfig is the parent's <name>-kubeconfig Secret
        sources.extend(_source({"type": "clusterAPI", "clusterAPI": {"clusterNamespacedName": {"name": name}}},
                               where=f"{where}.dynamicKubeConf", base_dir=base_dir, parent=parent,
                               bundle=bundle)[0])
    # older ClusterMaps: the context in the bundle's kubeconfig
    older = _text(spec.get("kubeconfigContext"), f"{where}.kubeconfigContext", "a context name", required=False)
    if older is not None:
        contexts.append((older, f"{where}.kubeconfigContext"))
    names = sorted({context for context, _where in contexts})
    if len(names) > 1:
        raise PhasekitError(f"the sources name different contexts ({', '.join(names)}); an inventory host uses "
                            f"one context (kube_context): give every source the same contextName, or write the "
                            f"host in a site file", where=f"{where}.kubeconfigSources")
    # Try each in order until one works (airshipctl): all but the last source may fail.
    kubeconfig = [dict(source, optional=True) for source in sources[:-1]] + sources[-1:]
    if len(kubeconfig) < 2:
        kubeconfig = kubeconfig[0] if kubeconfig else None  # no sources: kubectl's default, as for any host
    return ClusterHost(name=name, kubeconfig=kubeconfig, context=names[0] if names else None, parent=parent,
                       origin=where)


def _text(value, where: str, what: str, required: bool = True) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value:
        raise PhasekitError(f"expected {what} (a non-empty string), got {yaml_io.kind_of(value)}", where=where)
    return value


def _source(raw, *, where: str, base_dir: str, parent: str | None, bundle) -> tuple[list[dict], str | None]:
    """The collection's sources for one airshipctl kubeconfig source, and the context it names."""
    if not isinstance(raw, dict):
        raise PhasekitError(f"expected a mapping with type and one of {', '.join(SOURCE_TYPES)}, got "
                            f"{yaml_io.kind_of(raw)}", where=where)
    check_fields(raw, SOURCE_FIELDS, where)
    kind = raw.get("type")
    if kind not in SOURCE_TYPES:
        raise PhasekitError(f"unknown source type {kind!r}; expected one of {', '.join(SOURCE_TYPES)}",
                            where=f"{where}.type")
    settings = raw.get(kind) or {}
    if not isinstance(settings, dict):
        raise PhasekitError(f"expected a mapping, got {yaml_io.kind_of(settings)}", where=f"{where}.{kind}")
    here = f"{where}.{kind}"
    if kind == "filesystem":
        check_fields(settings, ("path", "contextName"), here)
        path = _text(settings.get("path"), f"{here}.path", "a kubeconfig file path")
        context = _text(settings.get("contextName"), f"{here}.contextName", "a context name", required=False)
        return [{"path": anchor_path(path, base_dir)}], context
    if kind == "clusterAPI":
        check_fields(settings, ("clusterNamespacedName",), here)
        ref = settings.get("clusterNamespacedName") or {}
        if not isinstance(ref, dict):
            raise PhasekitError(f"expected a mapping with name, namespace, got {yaml_io.kind_of(ref)}",
                                where=f"{here}.clusterNamespacedName")
        check_fields(ref, ("name", "namespace"), f"{here}.clusterNamespacedName")
        cluster = _text(ref.get("name"), f"{here}.clusterNamespacedName.name", "the Cluster API Cluster's name")
        namespace = _text(ref.get("namespace"), f"{here}.clusterNamespacedName.namespace", "a namespace",
                          required=False) or "default"
        if parent is None:
            raise PhasekitError("a clusterAPI source reads the cluster's kubeconfig Secret on its parent: "
                                "set the cluster's parent", where=here)
        # Cluster API's Secret, read from kube_parent when a play needs the cluster; never here.
        return [{"secret": {"name": f"{cluster}-kubeconfig", "namespace": namespace}}], None
    check_fields(settings, ("contextName",), here)
    context = _text(settings.get("contextName"), f"{here}.contextName", "a context name", required=False)
    items = bundle if isinstance(bundle, list) else [bundle]
    return [{"path": item} if isinstance(item, str) else dict(item) for item in items], context


def add_entry_hosts(raw, *, base_dir: str, where: str, add) -> None:
    """The hosts of one ``airship_cluster_map`` entry, each given to ``add``; every error names the entry."""
    entry = parse_cluster_map_entry(raw, base_dir=base_dir, where=where)
    try:
        for document, label, file_path in read_cluster_maps(entry["path"]):
            for host in hosts_from_cluster_map(document, label=label, bundle=entry["bundle"],
                                               base_dir=os.path.dirname(os.path.abspath(file_path))):
                add(host)
    except PhasekitError as err:  # name this entry too: its 'bundle' option may be the fix
        raise PhasekitError(str(err), where=where) from None


INVENTORY_SOURCE = InventorySource("airship_cluster_map", add_entry_hosts)
