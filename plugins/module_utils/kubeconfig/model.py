# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The in-memory kubeconfig: named entries with the source that defined each.

Entries are kept in the exact shape ``kubectl config view -o json`` prints
(apiVersion v1 field names, omitted empty fields, base64 data), keyed by name,
so that merging is dictionary work and rendering is sorting by name.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

SECTIONS = ("clusters", "users", "contexts")
# v1 list key -> key of the entry body inside each named item
ENTRY_BODY = {"clusters": "cluster", "users": "user", "contexts": "context"}
SINGULAR = {"clusters": "cluster", "users": "user", "contexts": "context"}


@dataclass(frozen=True)
class Origin:
    """Where one kubeconfig document came from.

    ``index`` is the 1-based position of the source in its list. ``path`` is the
    file whose directory anchors relative paths inside the document (None: the
    current directory, as kubectl does for a kubeconfig that is not a file).
    """

    index: int
    kind: str
    location: str
    path: str | None = None
    variable: str | None = None

    def label(self) -> str:
        """How messages name this source: ``kubeconfig source 2 (sops: site/target.enc.yaml)``."""
        kind = f"env {self.variable}" if self.variable else self.kind
        return f"kubeconfig source {self.index} ({kind}: {self.location})"

    def to_dict(self) -> dict:
        described = {"index": self.index, "kind": self.kind, "location": self.location}
        if self.variable:
            described["variable"] = self.variable
        return described


@dataclass
class Kubeconfig:
    """A decoded or merged kubeconfig; ``origins`` maps (section, name) to the defining source."""

    clusters: dict = field(default_factory=dict)
    users: dict = field(default_factory=dict)
    contexts: dict = field(default_factory=dict)
    current_context: str = ""
    extensions: dict = field(default_factory=dict)
    colors: bool = False
    preference_extensions: dict = field(default_factory=dict)
    origins: dict = field(default_factory=dict)

    def section(self, name: str) -> dict:
        return getattr(self, name)

    def origin_of(self, section: str, name: str) -> Origin | None:
        return self.origins.get((section, name))

    def copy(self) -> Kubeconfig:
        return copy.deepcopy(self)

    def context_is_complete(self, name: str) -> bool:
        """True once the context and the cluster and user it names are all defined.

        Entries are first-wins, so from then on no later source can change them.
        """
        context = self.contexts.get(name)
        if context is None:
            return False
        return ((not context["cluster"] or context["cluster"] in self.clusters)
                and (not context["user"] or context["user"] in self.users))


def kubeconfig_to_v1(config: Kubeconfig) -> dict:
    """The kubeconfig as ``kubectl config view --raw -o json`` prints it."""
    rendered = {"kind": "Config", "apiVersion": "v1"}
    preferences = {}
    if config.colors:
        preferences["colors"] = True
    if config.preference_extensions:
        preferences["extensions"] = named_extensions_to_v1(config.preference_extensions)
    if preferences:
        rendered["preferences"] = preferences
    for section in SECTIONS:
        entries = config.section(section)
        body = ENTRY_BODY[section]
        rendered[section] = [{"name": name, body: copy.deepcopy(entries[name])}
                             for name in sorted(entries)] or None
    rendered["current-context"] = config.current_context
    if config.extensions:
        rendered["extensions"] = named_extensions_to_v1(config.extensions)
    return rendered


def named_extensions_to_v1(extensions: dict) -> list:
    return [{"name": name, "extension": copy.deepcopy(extensions[name])} for name in sorted(extensions)]
