# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""A bundle resolved against a cluster: each object's resource type, namespace and apply wave.

Planning reads discovery only; it fails on unknown kinds (unless a CRD of the
same bundle defines them) and on duplicate objects, naming the documents,
before anything is written.
"""

from __future__ import annotations

from dataclasses import dataclass

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kube.crd_schema import CustomKind, crd_kinds
from ansible_collections.phasekit.kube.plugins.module_utils.kube.discovery import (
    Discovery, ResourceType, split_api_version)
from ansible_collections.phasekit.kube.plugins.module_utils.kube.live import Target
from ansible_collections.phasekit.kube.plugins.module_utils.kube.status import Status
from ansible_collections.phasekit.kube.plugins.module_utils.yaml_io import copy_data

CRD_GROUP_KIND = ("apiextensions.k8s.io", "CustomResourceDefinition")
NAMESPACE_GROUP_KIND = ("", "Namespace")

# Apply order: what others depend on first; what intercepts requests (webhooks) last.
WAVE_NAMESPACES, WAVE_CRDS, WAVE_PREREQUISITES, WAVE_DEFAULT, WAVE_LAST = range(5)
KIND_WAVES = {
    NAMESPACE_GROUP_KIND: WAVE_NAMESPACES,
    CRD_GROUP_KIND: WAVE_CRDS,
    ("", "ResourceQuota"): WAVE_PREREQUISITES,
    ("", "LimitRange"): WAVE_PREREQUISITES,
    ("", "ServiceAccount"): WAVE_PREREQUISITES,
    ("scheduling.k8s.io", "PriorityClass"): WAVE_PREREQUISITES,
    ("node.k8s.io", "RuntimeClass"): WAVE_PREREQUISITES,
    ("storage.k8s.io", "StorageClass"): WAVE_PREREQUISITES,
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"): WAVE_LAST,
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"): WAVE_LAST,
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"): WAVE_LAST,
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"): WAVE_LAST,
    ("apiregistration.k8s.io", "APIService"): WAVE_LAST,
}


def wave_of(resource: ResourceType) -> int:
    """When a kind is applied (and, in reverse, pruned)."""
    return KIND_WAVES.get((resource.group, resource.kind), WAVE_DEFAULT)


UNKNOWN = object()  # live state that could not be read

# What happened to an object in a run (``PlannedObject.action``, ``PrunedObject.entry``).
PENDING, CREATED, CONFIGURED, UNCHANGED, PRUNED, FAILED, SKIPPED, DELETED = (
    "pending", "created", "configured", "unchanged", "pruned", "failed", "skipped", "deleted")


@dataclass(eq=False)  # compared by identity: bodies are large
class PlannedObject:
    """One bundle object on its way to the cluster, and what happened to it."""

    source: object                       # BundleObject
    resource: ResourceType
    body: dict                           # exactly what is applied
    wave: int
    defined_in_bundle: bool = False      # served only once a CRD of this bundle is Established
    action: str = PENDING
    live: object = UNKNOWN
    result: dict | None = None
    status: Status | None = None
    error: str | None = None
    diff: dict | None = None
    drift: list | None = None        # dry run: the fields applying would change (see diff.changed_fields)
    custom_kind: CustomKind | None = None  # its kind's CRD (with its schema) when a bundle or earlier phase brings it
    kind_from_phase: str | None = None     # a preview: the earlier phase whose CRD brings its kind
    live_from_phase: str | None = None     # a preview: ``live`` is what this earlier phase would make of it

    @property
    def namespace(self) -> str | None:
        return self.body["metadata"].get("namespace") if self.resource.namespaced else None

    @property
    def name(self) -> str:
        return self.body["metadata"]["name"]

    @property
    def target(self) -> Target:
        return Target(self.resource, self.namespace, self.name)

    def describe(self) -> str:
        return self.target.describe()

    def entry(self) -> dict:
        out = {"apiVersion": self.body["apiVersion"], "kind": self.resource.kind, "namespace": self.namespace,
               "name": self.name, "action": self.action,
               "status": self.status.status if self.status else None,
               "message": self.status.message if self.status else None}
        if self.error:
            out["error"] = self.error
            out["origin"] = self.source.origin
        return out


def plan_objects(bundle: list, discovery: Discovery, default_namespace: str, carried=None) -> list[PlannedObject]:
    """Resolve every object's type, namespace and wave; fail before any write on unknown kinds or duplicates.

    ``carried``: a preview's ``PlannedState``: kinds the cluster does not serve yet that an earlier phase's CRD
    brings resolve too."""
    bundle_types = _types_defined_by_crds(bundle)
    if carried is not None:
        bundle_types = _with_carried_kinds(bundle, bundle_types, discovery, carried)
    resolved = [_lookup(discovery.resources(), item) for item in bundle]
    if any(found is None and _bundle_type(bundle_types, item) is None for found, item in zip(resolved, bundle)):
        if discovery.refresh():
            resolved = [_lookup(discovery.resources(), item) for item in bundle]
    planned, problems, seen = [], [], {}
    for found, item in zip(resolved, bundle):
        custom, from_phase = (None, None) if found is not None else _bundle_type(bundle_types, item) or (None, None)
        resource = found or (custom.resource if custom else None)
        if resource is None:
            problems.append(f"{item.origin}: kind {item.kind!r} of apiVersion {item.obj['apiVersion']!r} is not "
                            "served by the cluster and no CustomResourceDefinition in this bundle "
                            f"{'or an earlier phase ' if carried is not None else ''}defines it")
            continue
        body = _prepared_body(item.obj, resource, default_namespace)
        one = PlannedObject(source=item, resource=resource, body=body, defined_in_bundle=custom is not None,
                            wave=wave_of(resource), custom_kind=custom, kind_from_phase=from_phase)
        key = one.target.key
        if key in seen:
            problems.append(f"{item.origin}: {one.describe()} is also defined in {seen[key]}")
            continue
        seen[key] = item.origin
        planned.append(one)
    if problems:
        raise PhasekitError("; ".join(problems) + " (nothing was sent to the cluster)")
    return planned


def _lookup(resources, item) -> ResourceType | None:
    group, version = split_api_version(item.obj["apiVersion"])
    return resources.find(group, version, item.kind)


def _bundle_type(bundle_types: dict, item) -> tuple | None:
    """(``CustomKind``, the earlier phase that brings it or None: this bundle) of ``item``'s kind, if known."""
    group, version = split_api_version(item.obj["apiVersion"])
    return bundle_types.get((group, version, item.kind))


def _types_defined_by_crds(bundle: list) -> dict:
    """(group, version, kind) -> (``CustomKind``, None) for each served version of each CRD in the bundle."""
    types = {}
    for item in bundle:
        group, _version = split_api_version(item.obj["apiVersion"])
        if (group, item.kind) != CRD_GROUP_KIND:
            continue
        try:
            types.update({key: (kind, None) for key, kind in crd_kinds(item.obj).items()})
        except PhasekitError as err:
            raise PhasekitError(str(err), where=item.origin) from None
    return types


def _with_carried_kinds(bundle: list, bundle_types: dict, discovery: Discovery, carried) -> dict:
    """The bundle's own CRD kinds, and the kinds an earlier phase's CRD would bring that the cluster does not serve
    (with that phase)."""
    types = dict(bundle_types)
    for item in bundle:
        group, version = split_api_version(item.obj["apiVersion"])
        key = (group, version, item.kind)
        if key in types:
            continue
        planned = carried.kind(*key)
        if planned is not None and _lookup(discovery.resources(), item) is None:
            types[key] = (planned.kind, planned.phase)
    return types


def _prepared_body(obj: dict, resource: ResourceType, default_namespace: str) -> dict:
    body = copy_data(obj)
    metadata = body["metadata"]
    metadata.pop("managedFields", None)  # output of 'kubectl get -o yaml' is accepted; the server refuses these
    if resource.namespaced:
        metadata.setdefault("namespace", default_namespace)
    else:
        metadata.pop("namespace", None)  # as kubectl: a cluster-scoped object has no namespace
    return body
