# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Teardown: delete what one apply phase applied, dependants first, and wait until it is gone.

A phase with an ApplySet loses exactly the set's members (found as prune finds
them, by the set's label in the kinds and namespaces its parent records), then
the parent. A phase without a set loses the objects its bundle names, as
``kubectl delete -f`` would. Deletion goes in the reverse of apply's waves:
workloads and the rest first, then prerequisites, CRDs and namespaces last;
each wave is deleted with foreground propagation (owned objects go first) and
waited for until it is gone before the next starts. Check mode deletes with a
server-side dry run and waits for nothing.

In a plan, a set another plan owns is refused, and an object another plan
applied first is left to it, and named (see ``ownership``).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kube.discovery import ResourceType
from ansible_collections.phasekit.kube.plugins.module_utils.kube.live import Target
from ansible_collections.phasekit.kube.plugins.module_utils.kube.objects import DELETED, FAILED, plan_objects, wave_of
from ansible_collections.phasekit.kube.plugins.module_utils.kube.ownership import ADOPT_NONE, PlanOwner, kept_by_another_plan
from ansible_collections.phasekit.kube.plugins.module_utils.kube.parent import ApplySetParent
from ansible_collections.phasekit.kube.plugins.module_utils.kube.prune import Prune
from ansible_collections.phasekit.kube.plugins.module_utils.kube.session import (
    ApiError, describe_api_error, object_path)

DEFAULT_TIMEOUT = 300        # seconds a phase's objects may take to be gone
POLL_SECONDS = 0.5
FOREGROUND = "Foreground"    # owned objects (a Deployment's ReplicaSets and Pods) are deleted first


@dataclass
class DeletedObject:
    """One object of the phase and what its deletion did."""

    resource: ResourceType
    namespace: str | None
    name: str
    uid: str | None = None
    error: str | None = None

    def describe(self) -> str:
        return Target(self.resource, self.namespace, self.name).describe()

    def entry(self) -> dict:
        return {"apiVersion": self.resource.api_version, "kind": self.resource.kind, "namespace": self.namespace,
                "name": self.name, "action": FAILED if self.error else DELETED, "message": self.error}


@dataclass
class TeardownReport:
    objects: list = field(default_factory=list)
    parent: str | None = None            # the ApplySet parent deleted, as people read it
    failure: str | None = None
    note: str = ""                       # why nothing was deleted
    kept: list = field(default_factory=list)  # objects left to the plan that applied them first, and why

    @property
    def deleted(self) -> int:
        return sum(1 for one in self.objects if not one.error)

    @property
    def changed(self) -> bool:
        return bool(self.deleted or self.parent)

    def result(self) -> dict:
        out = {"changed": self.changed, "counts": {DELETED: self.deleted, FAILED: len(self.objects) - self.deleted},
               "objects": [one.entry() for one in self.objects]}
        if self.parent:
            out["applyset_parent"] = self.parent
        if self.note:
            out["note"] = self.note
        if self.kept:
            out["ownership"] = self.kept
        return out


class Teardown:
    """Deletes a phase's objects on one cluster."""

    def __init__(self, session, discovery, *, dry_run: bool, timeout: float = DEFAULT_TIMEOUT, concurrency: int = 8,
                 clock=time.monotonic, sleep=time.sleep):
        self.session = session
        self.discovery = discovery
        self.dry_run = dry_run
        self.timeout = timeout
        self.concurrency = concurrency
        self._clock = clock
        self._sleep = sleep

    def applyset(self, reference: str, *, tooling: str, namespace: str,
                 owner: PlanOwner | None = None) -> TeardownReport:
        """Every member of the ApplySet, then its parent. No parent: nothing of the set exists.

        ``owner``: the plan destroying; another plan's set is refused, another plan's object kept."""
        parent = ApplySetParent(self.session, self.discovery, reference=reference, tooling=tooling,
                                namespace=namespace, dry_run=self.dry_run, owner=owner, adopt=ADOPT_NONE)
        state = parent.prepare([])
        if parent.live is None:
            return TeardownReport(note=f"ApplySet {reference}: no parent in namespace {namespace}, nothing to delete")
        prune = Prune(self.session, self.discovery, state, concurrency=self.concurrency, dry_run=self.dry_run,
                      owner=owner)
        try:
            members = prune.candidates([])
        except ApiError as err:
            return TeardownReport(failure=f"cannot list the members of ApplySet {reference}: {describe_api_error(err)}")
        doomed = [DeletedObject(one.resource, one.namespace, one.name, (one.live.get("metadata") or {}).get("uid"))
                  for one in members]
        report = self._delete(doomed)
        report.kept = prune.kept
        if report.failure is None:
            self._delete_parent(state.parent, report)
        return report

    def bundle(self, bundle: list, *, namespace: str, owner: PlanOwner | None = None) -> TeardownReport:
        """The objects the bundle names that exist (a kind no longer served has nothing left), but those another
        plan than ``owner`` applied first."""
        try:
            planned = plan_objects(bundle, self.discovery, namespace)
        except PhasekitError:  # a kind no longer served: the objects of the other kinds
            planned = _servable(bundle, self.discovery, namespace)
        doomed, kept = [], []
        for one in planned:
            if one.defined_in_bundle:
                continue  # its CRD is not served: no object of that kind exists
            try:
                live = self.session.get(object_path(one.resource, one.namespace, one.name))
            except ApiError as err:
                if err.status == 404:
                    continue
                return TeardownReport(failure=f"{one.describe()}: {describe_api_error(err)}")
            why = kept_by_another_plan(live, owner)
            if why:
                kept.append(f"{one.describe()} not deleted: {why}")
                continue
            doomed.append(DeletedObject(one.resource, one.namespace, one.name, (live.get("metadata") or {}).get("uid")))
        report = self._delete(doomed)
        report.kept = kept
        return report

    # ------------------------------------------------------------ deleting

    def _delete(self, doomed: list) -> TeardownReport:
        report = TeardownReport(objects=sorted(doomed, key=_deletion_order))
        deadline = self._clock() + self.timeout
        for wave in sorted({wave_of(one.resource) for one in doomed}, reverse=True):
            members = [one for one in report.objects if wave_of(one.resource) == wave]
            with ThreadPoolExecutor(max_workers=max(1, min(self.concurrency, len(members)))) as pool:
                list(pool.map(self._delete_one, members))
            failed = [one for one in members if one.error]
            if failed:
                report.failure = "; ".join(f"{one.describe()}: {one.error}" for one in failed)
                return report
            if not self.dry_run:
                still = self._wait_gone(members, deadline)
                if still:
                    report.failure = (f"not gone after {self.timeout:g}s: "
                                      + ", ".join(one.describe() for one in still))
                    return report
        return report

    def _delete_one(self, one: DeletedObject) -> None:
        try:
            self.session.delete(object_path(one.resource, one.namespace, one.name), dry_run=self.dry_run,
                                propagation=FOREGROUND)
        except ApiError as err:
            if err.status != 404:
                one.error = describe_api_error(err)

    def _wait_gone(self, members: list, deadline: float) -> list:
        waiting = list(members)
        while waiting:
            waiting = [one for one in waiting if self._exists(one)]
            if not waiting or self._clock() >= deadline:
                return waiting
            self._sleep(POLL_SECONDS)
        return []

    def _exists(self, one: DeletedObject) -> bool:
        try:
            live = self.session.get(object_path(one.resource, one.namespace, one.name))
        except ApiError as err:
            if err.status == 404:
                return False
            raise PhasekitError(f"{one.describe()}: {describe_api_error(err)}") from None
        # another object of the same name made meanwhile is not the one deleted
        return one.uid is None or (live.get("metadata") or {}).get("uid") == one.uid

    def _delete_parent(self, parent, report: TeardownReport) -> None:
        resource = ResourceType(parent.group, parent.version, parent.kind, parent.plural, parent.namespaced)
        path = object_path(resource, parent.namespace or None, parent.name)
        try:
            self.session.delete(path, dry_run=self.dry_run)
        except ApiError as err:
            if err.status != 404:  # its namespace, a member, may have taken it
                report.failure = f"ApplySet parent {parent}: {describe_api_error(err)}"
                return
        report.parent = str(parent)


def _deletion_order(one: DeletedObject):
    return (-wave_of(one.resource), one.resource.kind, one.namespace or "", one.name)


def _servable(bundle: list, discovery, namespace: str) -> list:
    """The bundle's objects whose kinds are served, one by one (plan_objects refuses a bundle with any other)."""
    planned = []
    for item in bundle:
        try:
            planned.extend(plan_objects([item], discovery, namespace))
        except PhasekitError:
            continue
    return planned
