# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""From sources to one context: merged with kubectl's rules, checked, minified, flattened.

Two entry points:

- ``resolve_kubeconfig``: what a task connects with. Context-first and lazy:
  sources are read in order only until the selected context, its cluster and
  its user are all defined (first-wins merging means no later source can
  change them). The result is a ``Resolution`` with provenance.
- ``view_kubeconfig``: exactly what ``kubectl config view --raw [--minify]
  [--flatten]`` prints for the same files; it reads every source.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.connection import CONNECTION_NAME
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.connection import ConnectionOptions
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.connection import apply_connection_options
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.connection import connection_kubeconfig
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.merge import FirstWins
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.model import Kubeconfig
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.model import kubeconfig_to_v1
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.readers import SourceHooks
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.readers import read_unit
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.sources import SourceSpec
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.sources import expand_source
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.transform import defined_by
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.transform import flatten_kubeconfig
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.transform import known
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.transform import minify_kubeconfig
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.transform import resolve_local_paths
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.transform import undefined_context

MEMORY_FORMAT = 1
READ, MISSING, SKIPPED, UNREAD = "read", "missing", "skipped", "unread"


@dataclass(frozen=True)
class Resolution:
    """A resolved kubeconfig for one context.

    ``config`` is a kubectl-shaped (apiVersion v1) dict holding only the context,
    its cluster and its user, with file references embedded (flattened) or made
    absolute; ``current-context`` is the context. ``provenance`` says which source
    defined the context, the cluster and the user, and what happened to every
    source. ``merged`` is the whole merged kubeconfig, only when it was asked for.
    ``fingerprint`` identifies the request it answers; ``reused`` says it came from memory.
    """

    config: dict
    context: str
    provenance: dict
    merged: dict | None = None
    fingerprint: str = ""
    reused: bool = False

    @property
    def context_entry(self) -> dict:
        return self.config["contexts"][0]["context"]

    @property
    def cluster(self) -> str:
        return self.context_entry["cluster"]

    @property
    def user(self) -> str | None:
        return self.context_entry["user"] or None

    @property
    def server(self) -> str:
        return self.config["clusters"][0]["cluster"]["server"]

    @property
    def namespace(self) -> str | None:
        return self.context_entry.get("namespace") or None

    def summary(self) -> dict:
        """Everything about the resolution that is safe to show: no tokens, keys or certificates."""
        return {
            "context": self.context,
            "cluster": self.cluster,
            "server": self.server,
            "user": self.user,
            "namespace": self.namespace,
            "provenance": self.provenance,
        }

    def to_memory(self) -> dict:
        """The resolution as data a later task can take back (it holds credentials: never display it)."""
        return {"format": MEMORY_FORMAT, "fingerprint": self.fingerprint, "context": self.context,
                "config": self.config, "provenance": self.provenance}

    @classmethod
    def from_memory(cls, remembered, fingerprint: str) -> Resolution | None:
        """The remembered resolution if it was made from the same request, else None."""
        if not isinstance(remembered, dict) or remembered.get("format") != MEMORY_FORMAT:
            return None
        if remembered.get("fingerprint") != fingerprint:
            return None
        config, context, provenance = (remembered.get(key) for key in ("config", "context", "provenance"))
        if not (isinstance(config, dict) and isinstance(context, str) and isinstance(provenance, dict)):
            return None
        return cls(config=config, context=context, provenance=provenance, fingerprint=fingerprint, reused=True)


def request_fingerprint(sources: list[SourceSpec], context: str | None,
                        connection: ConnectionOptions | None = None) -> str:
    """Identifies a resolution request (sources as written + context + connection options) without holding its
    content."""
    request = {"sources": [spec.to_dict() for spec in sources], "context": context or ""}
    if connection:
        request["connection"] = connection.fingerprint_data()
    canonical = json.dumps(request, sort_keys=True, default=str, ensure_ascii=True)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class SourceReader:
    """Reads sources in order into one merged kubeconfig, remembering what happened to each.

    The documents are merged on demand (``documents``): resolving one context looks up its entries, and only
    ``merged`` (every entry) merges them all.
    """

    def __init__(self, sources: list[SourceSpec], hooks: SourceHooks | None = None):
        self.sources = sources
        self.hooks = hooks or SourceHooks()
        self.documents = FirstWins()
        self.trail: list[dict] = []

    @property
    def merged(self) -> Kubeconfig:
        return self.documents.merged()

    def read(self, context: str | None = None, lazy: bool = False) -> Kubeconfig:
        """Read every source, or with ``lazy`` only until the context in use is complete; returns the merge
        (made only when it is used: see ``documents`` for the entries of one context).

        The context in use is ``context`` or, once a source sets it, the merged
        current-context (first non-empty wins, so it cannot change afterwards).
        """
        self.read_documents(context, lazy)
        return self.merged

    def read_documents(self, context: str | None = None, lazy: bool = False) -> FirstWins:
        """``read`` without the merge."""
        for spec in self.sources:
            if lazy and self._complete(context):
                self._note(spec.index, spec.kind, spec.location(), UNREAD)
                continue
            try:
                units = expand_source(spec, self.hooks.environ)
            except PhasekitError as err:
                self._fail_or_skip(spec.index, spec.kind, spec.location(), spec.optional, err, spec.label())
                continue
            for unit in units:
                origin = unit.origin
                if lazy and self._complete(context):
                    self._note(origin.index, origin.kind, origin.location, UNREAD, origin.variable)
                    continue
                try:
                    document = read_unit(unit, self.hooks)
                except PhasekitError as err:
                    self._fail_or_skip(origin.index, origin.kind, origin.location, spec.optional, err,
                                       origin.label(), origin.variable)
                    continue
                if document is None:
                    self._note(origin.index, origin.kind, origin.location, MISSING, origin.variable)
                    continue
                self.documents.add(document)
                self._note(origin.index, origin.kind, origin.location, READ, origin.variable)
        return self.documents

    def _complete(self, context: str | None) -> bool:
        target = context or self.documents.current_context
        return bool(target) and self.documents.context_is_complete(target)

    def _fail_or_skip(self, index, kind, location, optional, err, label, variable=None):
        if not optional:
            if err.where == label:
                raise err
            raise PhasekitError(str(err), where=label) from None
        reason = str(err).removeprefix(f"{err.where}: ") if err.where == label else str(err)
        self._note(index, kind, location, SKIPPED, variable, reason=reason)

    def _note(self, index, kind, location, status, variable=None, reason=None):
        entry = {"index": index, "kind": kind, "location": location, "status": status}
        if variable:
            entry["variable"] = variable
        if reason:
            entry["reason"] = reason
        self.trail.append(entry)

    def describe(self) -> str:
        """What was read, for messages about things that were not found."""
        if not self.trail:
            return "no kubeconfig sources"
        return "sources: " + "; ".join(
            f"{entry['index']} {entry['kind']} {entry['location']} ({entry['status']})" for entry in self.trail)


def resolve_kubeconfig(sources: list[SourceSpec], context: str | None = None, *, hooks: SourceHooks | None = None,
                       expected_cluster: str | None = None, keep_merged: bool = False,
                       chosen_by: dict | None = None, fingerprint: str = "") -> Resolution:
    """Resolve ``context`` (default: the merged current-context) from ``sources``.

    Reads sources lazily unless ``keep_merged`` asks for the whole merged
    kubeconfig too. Fails, naming what exists, on an unknown context, a context
    whose cluster or user is not defined, a cluster without a server, or a
    cluster other than ``expected_cluster``. ``chosen_by`` (which setting chose
    the sources and the context) joins the provenance; ``fingerprint`` names
    the request answered.
    """
    reader = SourceReader(sources, hooks)
    documents = reader.read_documents(context, lazy=not keep_merged)
    chosen = context or documents.current_context
    _check_context(reader, chosen, expected_cluster, from_current_context=not context)
    merged = documents.picked(chosen)
    minified = minify_kubeconfig(merged, chosen)
    minified.extensions, minified.colors, minified.preference_extensions = {}, False, {}
    cluster_name = minified.contexts[chosen]["cluster"]
    if not minified.clusters[cluster_name].get("server"):
        raise PhasekitError(f"cluster {cluster_name!r} ({defined_by(minified, 'clusters', cluster_name)}) "
                            "has no server")
    config = _connectable(minified)
    provenance = {
        "context": _origin_dict(merged, "contexts", chosen),
        "cluster": _origin_dict(merged, "clusters", cluster_name),
        "user": _origin_dict(merged, "users", minified.contexts[chosen]["user"]),
        "sources": reader.trail,
        **(chosen_by or {}),
    }
    whole = None
    if keep_merged:
        full = reader.merged.copy()
        full.current_context = chosen
        whole = _connectable(full)
    return Resolution(config=config, context=chosen, provenance=provenance, merged=whole, fingerprint=fingerprint)


def resolve_with_connection(sources: list[SourceSpec], context: str | None, connection: ConnectionOptions, *,
                            hooks: SourceHooks | None = None, expected_cluster: str | None = None,
                            keep_merged: bool = False, chosen_by: dict | None = None,
                            fingerprint: str = "") -> Resolution:
    """``resolve_kubeconfig`` with kubernetes.core's connection options on top, by kubernetes.core's rule: a
    complete connection (a host and a credential) reads no kubeconfig; otherwise the options that are set override
    the resolved context's cluster and user. The provenance names where each option came from."""
    if connection.complete:
        return _connection_resolution(connection, chosen_by or {}, keep_merged, fingerprint)
    resolution = resolve_kubeconfig(sources, context, hooks=hooks, expected_cluster=expected_cluster,
                                    keep_merged=keep_merged, chosen_by=chosen_by, fingerprint=fingerprint)
    if not connection:
        return resolution
    merged = resolution.merged
    if merged is not None:
        merged = apply_connection_options(merged, connection, resolution.context)
    return dataclasses.replace(
        resolution, config=apply_connection_options(resolution.config, connection, resolution.context),
        merged=merged, provenance={**resolution.provenance, "connection": connection.provenance()})


def _sources_not_read(connection: ConnectionOptions) -> str:
    """Why no kubeconfig source was read: the options that make a complete connection, and where each came from."""
    used = ("host",) + connection.credential
    return ("not read: " + " and ".join(f"{name} (from {connection.origin(name)})" for name in used)
            + " make a complete connection (kubernetes.core's rule)")


def _connection_resolution(connection: ConnectionOptions, chosen_by: dict, keep_merged: bool,
                           fingerprint: str) -> Resolution:
    config = connection_kubeconfig(connection)
    because = _sources_not_read(connection)
    provenance = {
        "context": {"from": "connection options"},
        "cluster": {"from": connection.origin("host")},
        "user": {"from": ", ".join(dict.fromkeys(connection.origin(name) for name in connection.credential))},
        "sources": [],
        "connection": connection.provenance(),
        "kubeconfig_from": f"{chosen_by.get('kubeconfig_from', 'kubectl default')}: {because}",
        "context_from": (f"{chosen_by['context_from']}: {because}"
                         if chosen_by.get("context_from", "current-context") != "current-context"
                         else "connection options"),
    }
    return Resolution(config=config, context=CONNECTION_NAME, provenance=provenance,
                      merged=config if keep_merged else None, fingerprint=fingerprint)


def view_kubeconfig(sources: list[SourceSpec], context: str | None = None, *, minify: bool = False,
                    flatten: bool = False, hooks: SourceHooks | None = None) -> dict:
    """What ``kubectl config view --raw`` prints for these sources (``--minify --context``, ``--flatten``)."""
    config = SourceReader(sources, hooks).read()
    if minify:
        config = minify_kubeconfig(config, context)
    if flatten:
        config = config.copy()
        flatten_kubeconfig(config)
    return kubeconfig_to_v1(config)


def view_with_connection(sources: list[SourceSpec], context: str | None, connection: ConnectionOptions, *,
                         minify: bool = False, flatten: bool = False, hooks: SourceHooks | None = None) -> tuple:
    """``view_kubeconfig`` with kubernetes.core's connection options on top, by the actions' rule (the lookup's
    answer): a complete connection reads no source; otherwise the options that are set override ``context``'s (else
    the current-context's) cluster and user. Returns the kubeconfig and its provenance (where each option came
    from, never a value)."""
    if connection.complete:
        provenance = {"connection": connection.provenance(), "sources": _sources_not_read(connection)}
        return connection_kubeconfig(connection), provenance
    config = view_kubeconfig(sources, context, minify=minify, flatten=flatten, hooks=hooks)
    if not connection:
        return config, {}
    chosen = context or config.get("current-context")
    if not chosen or not any(entry.get("name") == chosen for entry in config.get("contexts") or []):
        first = next(iter(connection.settings))
        wanted = f"context {chosen!r}, which no source defines" if chosen else "no context (no current-context)"
        raise PhasekitError(f"{first} (from {connection.origin(first)}) has no context to apply to: {wanted}; "
                            f"known contexts: {known(entry.get('name') for entry in config.get('contexts') or [])}")
    return apply_connection_options(config, connection, chosen), {"connection": connection.provenance()}


def _connectable(config: Kubeconfig) -> dict:
    config = config.copy()
    resolve_local_paths(config)
    flatten_kubeconfig(config)
    return kubeconfig_to_v1(config)


def _check_context(reader: SourceReader, chosen: str, expected_cluster: str | None, *,
                   from_current_context: bool = False) -> None:
    """The chosen context, its cluster and user exist; only a message that lists what exists merges it all."""
    documents = reader.documents
    if not chosen:
        raise PhasekitError(
            "no context selected: set kube_context (or the task's context parameter), or a current-context "
            f"in a kubeconfig source; known contexts: {known(reader.merged.contexts)}; {reader.describe()}")
    entry, origin = documents.entry("contexts", chosen)
    if entry is None:
        raise PhasekitError(f"{undefined_context(chosen, from_current_context)} is not defined by any kubeconfig "
                            f"source; known contexts: "
                            f"{known(reader.merged.contexts)}; {reader.describe()}")
    source = f"from {origin.label()}" if origin else "inline"
    if not entry["cluster"]:
        raise PhasekitError(f"context {chosen!r} ({source}) names no cluster")
    for section, key in (("clusters", "cluster"), ("users", "user")):
        name = entry[key]
        if name and not documents.has(section, name):
            raise PhasekitError(
                f"context {chosen!r} ({source}) names {key} {name!r}, which no kubeconfig source defines; "
                f"known {section}: {known(reader.merged.section(section))}; {reader.describe()}")
    if expected_cluster and entry["cluster"] != expected_cluster:
        raise PhasekitError(f"context {chosen!r} ({source}) uses cluster {entry['cluster']!r}, "
                            f"but kube_cluster expects {expected_cluster!r}")


def _origin_dict(config: Kubeconfig, section: str, name: str) -> dict | None:
    origin = config.origin_of(section, name) if name else None
    return origin.to_dict() if origin else None
