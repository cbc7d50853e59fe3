# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The ApplySet parent as one apply run reads and writes it (``applyset`` holds the rules, this the requests).

Before applying: read the parent, check it belongs to this set and tool (and,
in a plan, to this plan: ``ownership.set_claim``), label every planned object
as a member. Then the parent is written twice at most:
the superset of old and new kinds and namespaces before any member is applied,
exactly the new ones after pruning (each write skipped when the parent already
says it), so an interrupted run never leaves members the parent does not list.
"""

from __future__ import annotations

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kube import applyset as applysets
from ansible_collections.phasekit.kube.plugins.module_utils.kube.discovery import ResourceType
from ansible_collections.phasekit.kube.plugins.module_utils.kube.ownership import ADOPT_UNOWNED, PlanOwner, set_claim
from ansible_collections.phasekit.kube.plugins.module_utils.kube.session import ApiError, describe_api_error, object_path


class ApplySetParent:
    """One run's view of its ApplySet parent: the live object and the state recorded on it."""

    def __init__(self, session, discovery, *, reference: str, tooling: str, namespace: str, dry_run: bool,
                 owner: PlanOwner | None = None, adopt: str = ADOPT_UNOWNED):
        self.session = session
        self.discovery = discovery
        self.reference = reference  # NAME, RESOURCE/NAME or RESOURCE.GROUP/NAME, as kubectl's --applyset
        self.tooling = tooling
        self.namespace = namespace
        self.dry_run = dry_run
        self.owner = owner  # the plan using the set (None: a task outside a plan)
        self.adopt = adopt
        self.note = ""      # what this run did about the set's owner, said once (a set taken over)
        self.live: dict | None = None
        self.state: applysets.ApplySetState | None = None

    def prepare(self, planned: list) -> applysets.ApplySetState:
        """Read the parent and make every planned object a member; nothing is written yet."""
        plural, group, name = applysets.parse_parent_ref(self.reference)
        resource = self.discovery.resolve_resource(group, plural)
        if resource is None:
            raise PhasekitError(f"applyset {self.reference!r}: resource {plural}.{group} is not served")
        if group or plural not in applysets.BUILTIN_PARENTS:
            self._require_parent_crd(plural, group)
        parent = applysets.ParentRef(name=name, namespace=self.namespace if resource.namespaced else "",
                                     plural=resource.plural, group=resource.group, kind=resource.kind,
                                     version=resource.version, namespaced=resource.namespaced)
        state = applysets.ApplySetState(parent=parent, tooling=applysets.Tooling.parse(self.tooling))
        try:
            self.live = self.session.get(object_path(resource, parent.namespace or None, name))
        except ApiError as err:
            if err.status != 404:
                raise PhasekitError(f"cannot read the ApplySet parent {parent}: {describe_api_error(err)}") from None
        state.read_parent(self.live)
        where = f"{parent} in namespace {parent.namespace}" if parent.namespaced else str(parent)
        claim = set_claim(self.live, self.owner, self.adopt, where)
        if claim.refused:
            raise PhasekitError(claim.note)
        self.note = claim.note
        state.owner_annotations = claim.owner.annotations(with_since=True) if claim.owner else {}
        for one in planned:
            labels = one.body["metadata"].get("labels") or {}
            one.body["metadata"]["labels"] = labels
            if labels.get(applysets.PART_OF_LABEL, state.id) != state.id:
                raise PhasekitError(f"{one.describe()} already has label {applysets.PART_OF_LABEL}="
                                    f"{labels[applysets.PART_OF_LABEL]!r} of another ApplySet; nothing was applied",
                                    where=one.source.origin)
            labels[applysets.PART_OF_LABEL] = state.id
            state.add_member(one.resource.group, one.resource.kind, one.namespace)
        self.state = state
        return state

    def write(self, *, superset: bool, namespace_pretended: bool = False) -> None:
        """Server-side apply the parent; skipped when it already says exactly this.

        ``superset`` before applying (old and new kinds and namespaces), exact after pruning.
        ``namespace_pretended``: a dry run created the parent's namespace only in pretence, so it cannot write.
        """
        state = self.state
        body = state.parent_patch(superset=superset)
        if self.live is not None and _parent_says(self.live, body):
            return
        if self.dry_run and namespace_pretended:
            return
        resource = ResourceType(state.parent.group, state.parent.version, state.parent.kind, state.parent.plural,
                                state.parent.namespaced)
        path = object_path(resource, state.parent.namespace or None, state.parent.name)
        try:
            response = self._apply(path, body, force=False)
        except ApiError as err:
            if err.status != 409:
                raise PhasekitError(f"cannot update the ApplySet parent {state.parent}: "
                                    f"{describe_api_error(err)}") from None
            response = self._apply(path, body, force=True)  # as kubectl does
        if not self.dry_run:
            self.live = response.body

    def summary(self) -> dict:
        """What the task result says about the set."""
        state = self.state
        summary = {"name": state.parent.name, "namespace": state.parent.namespace, "kind": state.parent.kind,
                   "id": state.id, "tooling": str(state.tooling)}
        owner = PlanOwner.of({"metadata": {"annotations": state.owner_annotations}})
        if owner is not None:
            summary["owner"] = {"plan": owner.plan, "host": owner.host, "since": owner.since}
        return summary

    def _apply(self, path: str, body: dict, *, force: bool):
        return self.session.apply(path, body, field_manager=self.state.field_manager, force=force,
                                  dry_run=self.dry_run)

    def _require_parent_crd(self, plural: str, group: str):
        crds = self.discovery.resolve_resource("apiextensions.k8s.io", "customresourcedefinitions")
        try:
            crd = self.session.get(object_path(crds, None, f"{plural}.{group}"))
        except ApiError as err:
            raise PhasekitError(f"applyset parent type {plural}.{group}: {describe_api_error(err)}") from None
        if applysets.PARENT_CRD_LABEL not in ((crd.get("metadata") or {}).get("labels") or {}):
            raise PhasekitError(f"applyset parent type {plural}.{group} is not allowed: its CRD needs the label "
                                f"{applysets.PARENT_CRD_LABEL} (kubectl requires it too)")


def _parent_says(live: dict, body: dict) -> bool:
    metadata, wanted = live.get("metadata") or {}, body["metadata"]
    labels, annotations = metadata.get("labels") or {}, metadata.get("annotations") or {}
    return (all(labels.get(k) == v for k, v in wanted["labels"].items())
            and all(annotations.get(k) == v for k, v in wanted["annotations"].items()))
