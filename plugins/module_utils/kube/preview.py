# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""What the earlier phases of a dry run would create on one cluster, carried to the later ones (a plan's preview).

A server-side dry run creates nothing: on a cluster without a plan's CRD or namespace, a later phase's custom
resources and namespaced objects cannot be dry-run. ``PlannedState`` remembers, per cluster and run, the CRDs (their
served kinds and schemas), the Namespaces each earlier phase of a check-mode run (or status) would create, and the
objects it would create or change, so that a later phase plans against them: such an object is previewed against what
that phase would make of it: its objects of those kinds or in those namespaces are shown as would be created,
checked against the CRD's schema on the controller, and marked not checked by the server. A real run never uses it.

``ObjectChange`` is one object of a preview as the plan's summary lists it: added, changed (with the fields that
change, never their values) or destroyed (pruned, deleted).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kube.crd_schema import CustomKind, crd_kinds
from ansible_collections.phasekit.kube.plugins.module_utils.kube.objects import (
    CONFIGURED, CREATED, CRD_GROUP_KIND, NAMESPACE_GROUP_KIND, UNCHANGED)


ADD, CHANGE, DESTROY = "add", "change", "destroy"
CHANGE_SIGNS = {ADD: "+", CHANGE: "~", DESTROY: "-"}   # as ``terraform plan`` marks them


@dataclass(frozen=True)
class ObjectChange:
    """One object a dry run would add, change or destroy: ``Kind ns/name`` and the fields that change (keys only)."""

    action: str
    object: str
    fields: tuple = ()

    def to_dict(self) -> dict:
        return {"action": self.action, "object": self.object, "fields": list(self.fields)}

    @classmethod
    def from_dict(cls, data: dict) -> "ObjectChange":
        return cls(str(data.get("action")), str(data.get("object")), tuple(data.get("fields") or ()))

    def line(self) -> str:
        """``+ ConfigMap ns/name``, ``~ Deployment ns/web: spec.replicas``, ``- ConfigMap ns/old``."""
        fields = [name for name in self.fields if name != "absent"]
        return f"{CHANGE_SIGNS.get(self.action, '?')} {self.object}" + (f": {', '.join(fields)}" if fields else "")


@dataclass(frozen=True)
class PlannedKind:
    """A kind an earlier phase's CRD would bring, and that phase."""

    kind: CustomKind
    phase: str


@dataclass
class PlannedState:
    """One cluster's carried-forward state in one dry run of a plan (see the module docstring)."""

    kinds: dict = field(default_factory=dict)        # (group, version, kind) -> PlannedKind
    namespaces: dict = field(default_factory=dict)   # name -> the phase that would create it
    objects: dict = field(default_factory=dict)      # Target.key -> (the last phase that would change it, the result)
    crds: dict = field(default_factory=dict)         # CRD name -> (the phase that would create it, the CRD): ``kinds``
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def kind(self, group: str, version: str, kind: str) -> PlannedKind | None:
        with self.lock:
            return self.kinds.get((group, version, kind))

    def namespace_phase(self, name: str | None) -> str | None:
        """The earlier phase that would create namespace ``name`` (None: the cluster has it, or nothing makes it)."""
        with self.lock:
            return self.namespaces.get(name) if name else None

    def changed_earlier(self, key: tuple) -> tuple | None:
        """(the last phase, what it would make of it) of an object an earlier phase would create or change."""
        with self.lock:
            return self.objects.get(key)

    def record(self, phase: str, planned: list) -> None:
        """Remember what ``phase`` (its ``PlannedObject`` list, after its dry run) would create."""
        with self.lock:
            for one in planned:
                if one.action == CONFIGURED or (one.action == UNCHANGED and one.target.key in self.objects):
                    self.objects[one.target.key] = (phase, one.result or one.body)  # the next phase previews on it
                if one.action != CREATED:
                    continue
                self.objects[one.target.key] = (phase, one.result or one.body)
                group_kind = (one.resource.group, one.resource.kind)
                if group_kind == NAMESPACE_GROUP_KIND:
                    self.namespaces.setdefault(one.name, phase)
                elif group_kind == CRD_GROUP_KIND:
                    self.crds.setdefault(one.name, (phase, one.body))
                    for key, kind in crd_kinds(one.body).items():
                        self.kinds.setdefault(key, PlannedKind(kind, phase))

    def to_dict(self) -> dict:
        """As JSON, for the next step of a preview (a plan with ``tasks`` phases runs in steps, each its own task)."""
        with self.lock:
            return {"namespaces": dict(self.namespaces),
                    "objects": [[*key, phase, body] for key, (phase, body) in self.objects.items()],
                    "crds": [[phase, body] for phase, body in self.crds.values()]}

    @classmethod
    def from_dict(cls, data: dict) -> "PlannedState":
        """What ``to_dict`` gave an earlier step; a value it did not give is refused."""
        try:
            state = cls(namespaces={str(name): str(phase) for name, phase in (data.get("namespaces") or {}).items()})
            for *key, phase, body in data.get("objects") or []:
                state.objects[tuple(str(part) for part in key)] = (str(phase), body)
            for phase, body in data.get("crds") or []:
                state.crds[body["metadata"]["name"]] = (str(phase), body)
                for key, kind in crd_kinds(body).items():
                    state.kinds.setdefault(key, PlannedKind(kind, str(phase)))
        except (AttributeError, KeyError, TypeError, ValueError) as err:
            raise PhasekitError(f"carried: not a preview's state from an earlier step ({type(err).__name__})") from None
        return state


def deleted_changes(deleted: list) -> list[ObjectChange]:
    """The objects a deletion (``state: absent``, destroy) removed, or would, as changes (``DeletedObject`` list)."""
    return [ObjectChange(DESTROY, one.describe()) for one in deleted if not one.error]
