# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Merge kubeconfig documents with client-go's loading rules (tools/clientcmd/loader.go).

- For every named cluster, user, context and extension, the first document that
  defines the name wins the whole entry; later definitions are ignored, even
  their fields the first one lacks.
- The first non-empty current-context wins.
- ``preferences.colors`` is on when any document turns it on (client-go merges
  non-zero scalar fields); preference extensions are first-wins per name.
"""

from __future__ import annotations

from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.model import SECTIONS
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.model import Kubeconfig


def merge_kubeconfig(merged: Kubeconfig, later: Kubeconfig) -> None:
    """Fold ``later`` (a document read after everything in ``merged``) into ``merged``."""
    for section in SECTIONS:
        entries = merged.section(section)
        for name, entry in later.section(section).items():
            if name not in entries:
                entries[name] = entry
                merged.origins[(section, name)] = later.origins.get((section, name))
    if not merged.current_context:
        merged.current_context = later.current_context
    merged.colors = merged.colors or later.colors
    for name, value in later.extensions.items():
        merged.extensions.setdefault(name, value)
    for name, value in later.preference_extensions.items():
        merged.preference_extensions.setdefault(name, value)


class FirstWins:
    """Documents in load order, merged on demand: the entries one context needs are looked up (first document
    that names them wins), so resolving one context of a kubeconfig with thousands of them costs a few lookups,
    not a copy of every entry (one copy per host made a fleet's resolutions grow with the square of its size).

    ``merged()`` is the whole merge, for what needs every entry (``kubectl config view``, messages that list
    what exists).
    """

    def __init__(self):
        self.documents: list[Kubeconfig] = []
        self.current_context = ""
        self._merged: Kubeconfig | None = None

    def add(self, document: Kubeconfig) -> None:
        self.documents.append(document)
        self.current_context = self.current_context or document.current_context
        self._merged = None

    def entry(self, section: str, name: str):
        """``(entry, origin)`` of the first document that defines ``name`` in ``section``, or ``(None, None)``."""
        for document in self.documents:
            found = document.section(section).get(name)
            if found is not None:
                return found, document.origins.get((section, name))
        return None, None

    def has(self, section: str, name: str) -> bool:
        return any(name in document.section(section) for document in self.documents)

    def context_is_complete(self, name: str) -> bool:
        """As ``Kubeconfig.context_is_complete``, without merging."""
        context, _origin = self.entry("contexts", name)
        if context is None:
            return False
        return ((not context["cluster"] or self.has("clusters", context["cluster"]))
                and (not context["user"] or self.has("users", context["user"])))

    def merged(self) -> Kubeconfig:
        if self._merged is None:
            merged = Kubeconfig()
            for document in self.documents:
                merge_kubeconfig(merged, document)
            self._merged = merged
        return self._merged

    def picked(self, context: str) -> Kubeconfig:
        """The merge as far as ``context`` needs it: the context, its cluster and user, and the merged
        current-context, preferences and extensions (what ``minify_kubeconfig`` keeps)."""
        picked = Kubeconfig(current_context=self.current_context)
        for document in self.documents:
            picked.colors = picked.colors or document.colors
            for name, value in document.extensions.items():
                picked.extensions.setdefault(name, value)
            for name, value in document.preference_extensions.items():
                picked.preference_extensions.setdefault(name, value)
        entry, origin = self.entry("contexts", context)
        wanted = [("contexts", context)]
        if entry is not None:
            wanted += [(section, entry[key]) for section, key in (("clusters", "cluster"), ("users", "user"))
                       if entry[key]]
        for section, name in wanted:
            found, origin = self.entry(section, name)
            if found is not None:
                picked.section(section)[name] = found
                picked.origins[(section, name)] = origin
        return picked
