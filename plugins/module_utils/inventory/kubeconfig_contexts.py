# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Cluster hosts from the contexts of kubeconfig files: one host per context.

Only the context name and the reference to the files go into the inventory;
the files are read (by the kubeconfig module, with kubectl's loading and
merging rules) to learn which contexts exist, nothing else is kept.
"""

from __future__ import annotations

import fnmatch

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.inventory.checks import (
    check_fields,
    check_host_name,
    check_labels,
)
from ansible_collections.phasekit.kube.plugins.module_utils.inventory.cluster_map import ClusterHost
from ansible_collections.phasekit.kube.plugins.module_utils.inventory.source_refs import anchor_path_list
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.readers import SourceHooks
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.resolve import SourceReader
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.sources import normalize_sources
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.transform import known

GLOB_CHARACTERS = "*?["

ENTRY_FIELDS = ("path", "env", "contexts", "host_names", "parent", "labels")


def parse_kubeconfigs_entry(entry, *, base_dir: str, where: str) -> dict:
    """A ``kubeconfigs`` option entry as {source, contexts, host_names, parent, labels}.

    ``source`` is what hosts get as ``kube_kubeconfig``: an anchored path list string, or ``{env: VAR}``.
    """
    if isinstance(entry, str):
        entry = {"path": entry}
    if not isinstance(entry, dict):
        raise PhasekitError(f"expected a path or a mapping, got {type(entry).__name__}", where=where)
    check_fields(entry, ENTRY_FIELDS, where)
    if ("path" in entry) == ("env" in entry):
        raise PhasekitError("give exactly one of 'path' (a file or KUBECONFIG-style list) or 'env' "
                            "(a variable holding such a list)", where=where)
    if "path" in entry:
        if not isinstance(entry["path"], str) or not entry["path"]:
            raise PhasekitError("'path' must be a non-empty string", where=where)
        source = anchor_path_list(entry["path"], base_dir)
    else:
        if not isinstance(entry["env"], str) or not entry["env"]:
            raise PhasekitError("'env' must name an environment variable", where=where)
        source = {"env": entry["env"]}
    patterns = entry.get("contexts") or ["*"]
    if isinstance(patterns, str):
        patterns = [patterns]
    if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
        raise PhasekitError("'contexts' must be a list of context name patterns", where=where)
    host_names = entry.get("host_names") or {}
    if not isinstance(host_names, dict) or not all(isinstance(v, str) and v for v in host_names.values()):
        raise PhasekitError("'host_names' must map context names to host names", where=where)
    parent = entry.get("parent")
    if parent is not None and (not isinstance(parent, str) or not parent):
        raise PhasekitError("'parent' must be a host name", where=where)
    return {"source": source, "contexts": patterns, "host_names": host_names, "parent": parent,
            "labels": check_labels(entry.get("labels"), f"{where}, field labels")}


def context_names(sources, *, where: str, environ=None) -> list[str]:
    """Names of the contexts the merged sources define, in merge order (the first definition wins)."""
    specs = normalize_sources(sources, where)
    try:
        merged = SourceReader(specs, SourceHooks(environ)).read()
    except PhasekitError as err:
        raise PhasekitError(str(err), where=where) from None
    return list(merged.contexts)


def unmatched_patterns(contexts: list[str], entry: dict, *, where: str) -> list[str]:
    """Warnings for the entry's shell patterns that match no context; fails on an exact context name that
    matches none (a typo would otherwise silently drop that cluster), naming the contexts that exist."""
    warnings = []
    for pattern in entry["contexts"]:
        if any(fnmatch.fnmatchcase(context, pattern) for context in contexts):
            continue
        if not any(char in pattern for char in GLOB_CHARACTERS):
            raise PhasekitError(f"field contexts: unknown context {pattern!r}; contexts: {known(contexts)}",
                                where=where)
        if contexts:  # no contexts at all is warned about once, by the caller
            warnings.append(f"{where}: field contexts: pattern {pattern!r} matches no context; contexts: "
                            f"{known(contexts)}")
    return warnings


def hosts_from_contexts(contexts: list[str], entry: dict, *, origin: str) -> list[ClusterHost]:
    """One host per context matching the entry's patterns, named by ``host_names`` or the context."""
    hosts = []
    for context in contexts:
        if not any(fnmatch.fnmatchcase(context, pattern) for pattern in entry["contexts"]):
            continue
        hosts.append(ClusterHost(
            name=check_host_name(entry["host_names"].get(context, context), f"{origin}, context {context!r}"),
            kubeconfig=entry["source"],
            context=context,
            parent=entry["parent"],
            labels=dict(entry["labels"]),
            origin=f"{origin}, context {context}",
        ))
    return hosts
