# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""ApplySet (KEP-3659) as ``kubectl apply --prune --applyset`` implements it.

The set is tracked by a parent object (a Secret by default, or a ConfigMap, or
a custom resource whose CRD carries the ``applyset.kubernetes.io/is-parent-type``
label) with:

- label ``applyset.kubernetes.io/id``: ``applyset-<base64url(sha256(name.namespace.Kind.group))>-v1``
- annotation ``applyset.kubernetes.io/tooling``: ``<tool>/<version>``; a set
  managed by another tool is never touched
- annotation ``applyset.kubernetes.io/contains-group-kinds``: sorted ``Kind.group`` list
- annotation ``applyset.kubernetes.io/additional-namespaces``: sorted namespaces
  of members other than the parent's own

and each member carries the label ``applyset.kubernetes.io/part-of: <id>``.
Before applying, the parent is updated to the union of the old and new kinds
and namespaces (an interrupted run leaks nothing); after pruning, to exactly
the new ones. Prune lists each recorded kind in each recorded namespace by the
member label and deletes what this run did not apply.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass, field

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError

ID_LABEL = "applyset.kubernetes.io/id"
PART_OF_LABEL = "applyset.kubernetes.io/part-of"
TOOLING_ANNOTATION = "applyset.kubernetes.io/tooling"
GROUP_KINDS_ANNOTATION = "applyset.kubernetes.io/contains-group-kinds"
NAMESPACES_ANNOTATION = "applyset.kubernetes.io/additional-namespaces"
PARENT_CRD_LABEL = "applyset.kubernetes.io/is-parent-type"
ID_FORMAT = "applyset-{}-v1"

# kubectl accepts these parent types without the CRD label
BUILTIN_PARENTS = {"secrets": ("", "Secret"), "configmaps": ("", "ConfigMap")}


@dataclass(frozen=True)
class ParentRef:
    """The parent object: resource (plural), group, kind, name and namespace."""

    name: str
    namespace: str
    plural: str = "secrets"
    group: str = ""
    kind: str = "Secret"
    version: str = "v1"
    namespaced: bool = True

    def __str__(self) -> str:
        # the same form as kubectl's --applyset flag
        return f"{self.plural}.{self.group}/{self.name}" if self.group else f"{self.plural}/{self.name}"


@dataclass(frozen=True)
class Tooling:
    name: str
    version: str

    def __str__(self) -> str:
        return f"{self.name}/{self.version}"

    @classmethod
    def parse(cls, value: str) -> "Tooling":
        """'name/version'; the name may itself contain '/', as kubectl allows."""
        name, _sep, version = value.rpartition("/")
        if not name or not version:
            raise PhasekitError(f"applyset tooling {value!r} must look like NAME/VERSION (for example kubectl/v1.34)")
        return cls(name, version)


def applyset_id(parent: ParentRef) -> str:
    """The label value identifying the set: kubectl's V1 id of the parent's name.namespace.Kind.group."""
    unencoded = ".".join([parent.name, parent.namespace if parent.namespaced else "", parent.kind, parent.group])
    digest = hashlib.sha256(unencoded.encode()).digest()
    return ID_FORMAT.format(base64.urlsafe_b64encode(digest).decode().rstrip("="))


def parse_parent_ref(value: str) -> tuple[str, str, str]:
    """``NAME``, ``RESOURCE/NAME`` or ``RESOURCE.GROUP/NAME`` -> (plural, group, name), as kubectl parses it."""
    if not isinstance(value, str) or not value.strip():
        raise PhasekitError("applyset must be a non-empty string such as 'my-set' or 'configmaps/my-set'")
    resource, slash, name = value.partition("/")
    if not slash:
        return "secrets", "", value
    if not name or "/" in name:
        raise PhasekitError(f"applyset {value!r}: expected NAME, RESOURCE/NAME or RESOURCE.GROUP/NAME")
    plural, _sep, group = resource.partition(".")
    return plural, group, name


def format_group_kinds(group_kinds) -> str:
    return ",".join(sorted(set(group_kinds)))


def parse_group_kinds(value: str) -> list[tuple[str, str]]:
    """'Deployment.apps,ConfigMap' -> [('apps', 'Deployment'), ('', 'ConfigMap')] (kind before the first dot)."""
    pairs = []
    for item in (value or "").split(","):
        item = item.strip()
        if item:
            kind, _sep, group = item.partition(".")
            pairs.append((group, kind))
    return pairs


def format_namespaces(namespaces, parent_namespace: str) -> str:
    return ",".join(sorted(set(namespaces) - {parent_namespace, ""}))


@dataclass
class ApplySetState:
    """What the live parent records, and what this run adds."""

    parent: ParentRef
    tooling: Tooling
    exists: bool = False
    current_group_kinds: set = field(default_factory=set)    # (group, kind) recorded on the live parent
    current_namespaces: set = field(default_factory=set)
    updated_group_kinds: set = field(default_factory=set)    # (group, kind) of this run's objects
    updated_namespaces: set = field(default_factory=set)
    owner_annotations: dict = field(default_factory=dict)  # the plan that owns the set (see ownership.set_claim)

    @property
    def id(self) -> str:
        return applyset_id(self.parent)

    @property
    def field_manager(self) -> str:
        """kubectl writes the parent as '<tool>-applyset'."""
        return f"{self.tooling.name}-applyset"

    def member_selector(self) -> str:
        return f"{PART_OF_LABEL}={self.id}"

    def is_member(self, obj: dict) -> bool:
        """``obj`` carries this set's label (what ``member_selector`` selects)."""
        return ((obj.get("metadata") or {}).get("labels") or {}).get(PART_OF_LABEL) == self.id

    def add_member(self, group: str, kind: str, namespace: str | None):
        self.updated_group_kinds.add((group, kind))
        if namespace:
            self.updated_namespaces.add(namespace)

    def read_parent(self, live: dict | None):
        """Check a live parent belongs to this set and this tool; record its kinds and namespaces."""
        self.exists = live is not None
        if live is None:
            return
        metadata = live.get("metadata") or {}
        labels = metadata.get("labels") or {}
        annotations = metadata.get("annotations") or {}
        tooling = annotations.get(TOOLING_ANNOTATION)
        if tooling is None:
            raise PhasekitError(f"ApplySet parent {self.parent} in namespace {self.parent.namespace} already exists "
                                f"and has no {TOOLING_ANNOTATION} annotation: it is not an ApplySet parent; "
                                "choose another applyset name")
        managed_by = Tooling.parse(tooling).name if "/" in tooling else tooling
        if managed_by != self.tooling.name:
            raise PhasekitError(f"ApplySet parent {self.parent} in namespace {self.parent.namespace} is managed by "
                                f"tooling {managed_by!r}, not {self.tooling.name!r}; refusing to change another "
                                "tool's set (set applyset_tooling to take it over deliberately)")
        if labels.get(ID_LABEL) != self.id:
            raise PhasekitError(f"ApplySet parent {self.parent} in namespace {self.parent.namespace} has label "
                                f"{ID_LABEL}={labels.get(ID_LABEL)!r}, expected {self.id!r}")
        if GROUP_KINDS_ANNOTATION not in annotations:
            # kubectl v1.27 wrote contains-group-resources; any later kubectl apply --applyset rewrites it
            raise PhasekitError(f"ApplySet parent {self.parent} in namespace {self.parent.namespace} has no "
                                f"{GROUP_KINDS_ANNOTATION} annotation (kubectl requires it too)")
        self.current_group_kinds = set(parse_group_kinds(annotations[GROUP_KINDS_ANNOTATION]))
        namespaces = annotations.get(NAMESPACES_ANNOTATION) or ""
        self.current_namespaces = {ns for ns in namespaces.split(",") if ns}
        if self.parent.namespaced:
            self.current_namespaces.add(self.parent.namespace)

    def parent_patch(self, superset: bool) -> dict:
        """The parent's server-side apply body: superset before applying, exact set after pruning."""
        group_kinds = self.updated_group_kinds | (self.current_group_kinds if superset else set())
        namespaces = self.updated_namespaces | (self.current_namespaces if superset else set())
        metadata = {
            "name": self.parent.name,
            "labels": {ID_LABEL: self.id},
            "annotations": {
                TOOLING_ANNOTATION: str(self.tooling),
                GROUP_KINDS_ANNOTATION: format_group_kinds(_group_kind_string(g, k) for g, k in group_kinds),
                NAMESPACES_ANNOTATION: format_namespaces(namespaces, self.parent.namespace
                                                         if self.parent.namespaced else ""),
                **self.owner_annotations,
            },
        }
        if self.parent.namespaced:
            metadata["namespace"] = self.parent.namespace
        api_version = f"{self.parent.group}/{self.parent.version}" if self.parent.group else self.parent.version
        return {"apiVersion": api_version, "kind": self.parent.kind, "metadata": metadata}

    def prune_scopes(self, namespaced_of) -> list[tuple[str, str, str | None]]:
        """(group, kind, namespace) to list for pruning: each recorded kind in each recorded namespace.

        ``namespaced_of(group, kind)`` answers True, False, or None for a kind the
        server no longer serves (its objects are gone with its CRD: nothing to prune).
        """
        scopes = []
        for group, kind in sorted(self.current_group_kinds):
            namespaced = namespaced_of(group, kind)
            if namespaced is None:
                continue
            if namespaced:
                scopes.extend((group, kind, ns) for ns in sorted(self.current_namespaces))
            else:
                scopes.append((group, kind, None))
        return scopes


def _group_kind_string(group: str, kind: str) -> str:
    return f"{kind}.{group}" if group else kind
