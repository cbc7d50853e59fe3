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

A Namespace goes only when it holds nothing but what the plan applied: just
before the namespaces' wave, each namespace about to be deleted is listed (one
LIST of metadata per namespaced kind that can be listed, Events and Leases
aside) and any object found there that is not the plan's (``PlanObjects``) and
not what Kubernetes puts in every namespace (``why_not_foreign``) keeps the
namespace, which the report names with those objects, unless
``delete_nonempty_namespaces``.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kube.discovery import ResourceType
from ansible_collections.phasekit.kube.plugins.module_utils.kube.live import Target
from ansible_collections.phasekit.kube.plugins.module_utils.kube.objects import (
    DELETED, FAILED, NAMESPACE_GROUP_KIND, plan_objects, wave_of)
from ansible_collections.phasekit.kube.plugins.module_utils.kube.ownership import ADOPT_NONE, PlanOwner, kept_by_another_plan
from ansible_collections.phasekit.kube.plugins.module_utils.kube.parent import ApplySetParent
from ansible_collections.phasekit.kube.plugins.module_utils.kube.prune import Prune
from ansible_collections.phasekit.kube.plugins.module_utils.kube.session import (
    METADATA_LIST, ApiError, describe_api_error, object_path)

DEFAULT_TIMEOUT = 300        # seconds a phase's objects may take to be gone
POLL_SECONDS = 0.5
FOREGROUND = "Foreground"    # owned objects (a Deployment's ReplicaSets and Pods) are deleted first
MAX_FOREIGN_NAMED = 10       # foreign objects a kept namespace names (all are counted)

# Kinds never listed in a namespace about to be deleted: records and runtime state, not what anyone applied.
NOT_LISTED = frozenset({
    ("", "Event"), ("events.k8s.io", "Event"),                          # what happened, not state
    ("coordination.k8s.io", "Lease"), ("coordination.k8s.io", "LeaseCandidate"),  # controllers' leader election
    ("", "Endpoints"),               # the endpoints controller's mirror of a Service (listed itself), no owner
})
NOT_LISTED_GROUPS = frozenset({"metrics.k8s.io"})    # usage computed from running pods, not stored objects
# What Kubernetes' controllers put in every namespace: (group, kind, name)
IN_EVERY_NAMESPACE = frozenset({("", "ConfigMap", "kube-root-ca.crt"), ("", "ServiceAccount", "default")})
LEGACY_TOKEN_PREFIX = "default-token-"      # before 1.24: the default ServiceAccount's token Secret
SERVICE_ACCOUNT_ANNOTATION = "kubernetes.io/service-account.name"
HELM_RELEASE_ANNOTATIONS = ("meta.helm.sh/release-namespace", "meta.helm.sh/release-name")


def object_key(resource: ResourceType, namespace: str | None, name: str) -> tuple:
    """How ``PlanObjects`` knows an object, whatever version it was read at."""
    return resource.group, resource.kind, namespace or "", name


@dataclass
class PlanObjects:
    """What a destroy deleted (would delete, in check mode) on one cluster so far, and its own bookkeeping: a
    namespace holding only these and what Kubernetes puts in every namespace is the plan's to delete."""

    objects: set = field(default_factory=set)        # object_key(...) of each object
    releases: set = field(default_factory=set)       # (namespace, name) of each Helm release uninstalled
    bookkeeping: Callable[[ResourceType, dict], bool] = lambda _resource, _metadata: False  # the run's own records

    def holds(self, resource: ResourceType, metadata: dict) -> bool:
        return object_key(resource, metadata.get("namespace"), metadata.get("name", "")) in self.objects

    def released(self, resource: ResourceType, metadata: dict) -> bool:
        """An object of a Helm release this destroy uninstalled: the release's objects and its storage Secrets."""
        annotations, labels = metadata.get("annotations") or {}, metadata.get("labels") or {}
        release = tuple(annotations.get(key) for key in HELM_RELEASE_ANNOTATIONS)
        if release in self.releases:
            return True
        return (resource.group, resource.kind) == ("", "Secret") and labels.get("owner") == "helm" and \
            (metadata.get("namespace"), labels.get("name")) in self.releases


def why_not_foreign(resource: ResourceType, metadata: dict, ours: PlanObjects) -> str | None:
    """Why an object found in a namespace about to be deleted does not keep it (the rule), or None: it is
    foreign, something the plan did not apply."""
    name = metadata.get("name", "")
    if (resource.group, resource.kind, name) in IN_EVERY_NAMESPACE:
        return "in every namespace"
    annotations = metadata.get("annotations") or {}
    if (resource.group, resource.kind) == ("", "Secret") and name.startswith(LEGACY_TOKEN_PREFIX) \
            and annotations.get(SERVICE_ACCOUNT_ANNOTATION) == "default":
        return "in every namespace"
    if metadata.get("ownerReferences"):
        return "owned"               # it goes with its owner; a foreign owner is found itself
    if metadata.get("deletionTimestamp"):
        return "being deleted"
    if ours.holds(resource, metadata):
        return "the plan's"
    if ours.released(resource, metadata):
        return "the plan's Helm release"
    if ours.bookkeeping(resource, metadata):
        return "the run's record"
    return None


@dataclass
class KeptNamespace:
    """A Namespace of the plan left in place: the objects in it that the plan did not apply."""

    name: str
    counts: dict = field(default_factory=dict)       # Kind (Kind.group outside the core group) -> how many
    named: list = field(default_factory=list)        # the first MAX_FOREIGN_NAMED, "Kind name"
    problem: str = ""                                # a kind that could not be listed: the namespace is kept

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def describe(self, verb: str = "kept", remedy: str = "set plan_destroy_nonempty_namespaces=true") -> str:
        held = []
        if self.counts:
            counts = ", ".join(f"{count} {kind}" for kind, count in sorted(self.counts.items()))
            more = f" and {self.total - len(self.named)} more" if self.total > len(self.named) else ""
            held.append(f"it holds {self.total} object(s) the plan did not apply ({counts}): "
                        f"{', '.join(self.named)}{more}")
        if self.problem:
            held.append(f"what it holds could not all be listed ({self.problem})")
        return f"Namespace {self.name} {verb}: {'; '.join(held)}; to delete it with them, {remedy}"

    def entry(self) -> dict:
        return {"name": self.name, "counts": dict(self.counts), "named": list(self.named), "problem": self.problem}


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
    left_to_others: list = field(default_factory=list)  # objects left to the plan that applied them first, and why
    kept: list = field(default_factory=list)    # KeptNamespace: namespaces of the plan holding foreign objects
    dry_run: bool = False

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
            out["kept_namespaces"] = [one.entry() for one in self.kept]
        if self.left_to_others:
            out["ownership"] = self.left_to_others
        return out

    @property
    def message(self) -> str:
        """What the phase says: its failure, else the namespaces it kept and why, else its note."""
        verb = "would be kept" if self.dry_run else "kept"
        return self.failure or "; ".join([*(one.describe(verb) for one in self.kept), *([self.note] if self.note else [])])


class Teardown:
    """Deletes a phase's objects on one cluster."""

    def __init__(self, session, discovery, *, dry_run: bool, timeout: float = DEFAULT_TIMEOUT, concurrency: int = 8,
                 clock=time.monotonic, sleep=time.sleep, ours: PlanObjects | None = None,
                 delete_nonempty_namespaces: bool = False, propagation: str = FOREGROUND, wait: bool = True):
        self.session = session
        self.discovery = discovery
        self.dry_run = dry_run
        self.ours = ours if ours is not None else PlanObjects()   # shared by the phases of one destroy, one cluster
        self.delete_nonempty_namespaces = delete_nonempty_namespaces
        self.timeout = timeout
        self.concurrency = concurrency
        self.propagation = propagation   # destroy: foreground; a state: absent apply: as its cascade option says
        self.wait = wait                 # wait until each wave is gone (False: kubectl delete --wait=false)
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
        parent_type = _parent_type(state.parent)
        self.ours.objects.add(object_key(parent_type, state.parent.namespace or None, state.parent.name))
        report = self._delete(doomed)
        report.left_to_others = prune.kept
        if report.failure is None and not report.kept:   # a kept namespace is still a member: a later destroy
            self._delete_parent(state.parent, report)     # (or one told to delete it anyway) finds it by the parent
        return report

    def bundle(self, bundle: list, *, namespace: str, owner: PlanOwner | None = None) -> TeardownReport:
        """The objects the bundle names that exist (a kind no longer served has nothing left), but those another
        plan than ``owner`` applied first."""
        planned, _not_served = servable_objects(bundle, self.discovery, namespace)
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
        report.left_to_others = kept
        return report

    # ------------------------------------------------------------ deleting

    def delete_objects(self, doomed: list) -> TeardownReport:
        """Delete ``doomed`` (``DeletedObject``, found to exist) in waves, namespaces holding anything else kept."""
        return self._delete(doomed)

    def _delete(self, doomed: list) -> TeardownReport:
        report = TeardownReport(objects=sorted(doomed, key=_deletion_order), dry_run=self.dry_run)
        self.ours.objects.update(object_key(one.resource, one.namespace, one.name) for one in doomed)
        deadline = self._clock() + self.timeout
        for wave in sorted({wave_of(one.resource) for one in doomed}, reverse=True):
            members = [one for one in report.objects if wave_of(one.resource) == wave]
            members = self._keep_nonempty_namespaces(members, report)
            if not members:
                continue
            with ThreadPoolExecutor(max_workers=max(1, min(self.concurrency, len(members)))) as pool:
                list(pool.map(self._delete_one, members))
            failed = [one for one in members if one.error]
            if failed:
                report.failure = "; ".join(f"{one.describe()}: {one.error}" for one in failed)
                return report
            if not self.dry_run and self.wait:
                still = self._wait_gone(members, deadline)
                if still:
                    report.failure = (f"not gone after {self.timeout:g}s: "
                                      + ", ".join(one.describe() for one in still))
                    return report
        return report

    def _delete_one(self, one: DeletedObject) -> None:
        try:
            self.session.delete(object_path(one.resource, one.namespace, one.name), dry_run=self.dry_run,
                                propagation=self.propagation)
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

    # ------------------------------------------------------------ namespaces

    def _keep_nonempty_namespaces(self, members: list, report: TeardownReport) -> list:
        """``members`` without the Namespaces that hold objects the plan did not apply (each added to
        ``report.kept``), unless told to delete them anyway. Listed only now: earlier waves have emptied them of
        the plan's objects."""
        namespaces = [one for one in members if (one.resource.group, one.resource.kind) == NAMESPACE_GROUP_KIND]
        if not namespaces or self.delete_nonempty_namespaces:
            return members
        kept = [found for found in map(self._contents, (one.name for one in namespaces)) if found is not None]
        names = {one.name for one in kept}
        report.kept.extend(kept)
        report.objects = [one for one in report.objects
                          if not (one in namespaces and one.name in names)]
        return [one for one in members if not (one in namespaces and one.name in names)]

    def _contents(self, namespace: str) -> KeptNamespace | None:
        """What keeps ``namespace``: the objects in it that are not the plan's (None: nothing does)."""
        kinds = [resource for resource in self.discovery.namespaced_listable()
                 if (resource.group, resource.kind) not in NOT_LISTED and resource.group not in NOT_LISTED_GROUPS]

        def listed(resource: ResourceType):
            try:
                return resource, self.session.list(object_path(resource, namespace), accept=METADATA_LIST), None
            except ApiError as err:
                if err.status == 404:   # no longer served (its CRD went in an earlier wave): nothing of it is left
                    return resource, [], None
                return resource, [], f"{resource.group_kind}: {describe_api_error(err)}"

        with ThreadPoolExecutor(max_workers=max(1, min(self.concurrency, len(kinds)))) as pool:
            answers = list(pool.map(listed, kinds))
        found = KeptNamespace(namespace)
        found.problem = "; ".join(problem for _resource, _items, problem in answers if problem)
        for resource, items, _problem in answers:
            for item in items:
                metadata = {"namespace": namespace, **(item.get("metadata") or {})}
                if why_not_foreign(resource, metadata, self.ours) is not None:
                    continue
                found.counts[resource.group_kind] = found.counts.get(resource.group_kind, 0) + 1
                if len(found.named) < MAX_FOREIGN_NAMED:
                    found.named.append(f"{resource.group_kind} {metadata.get('name')}")
        return found if found.counts or found.problem else None

    def _delete_parent(self, parent, report: TeardownReport) -> None:
        resource = _parent_type(parent)
        path = object_path(resource, parent.namespace or None, parent.name)
        try:
            self.session.delete(path, dry_run=self.dry_run)
        except ApiError as err:
            if err.status != 404:  # its namespace, a member, may have taken it
                report.failure = f"ApplySet parent {parent}: {describe_api_error(err)}"
                return
        report.parent = str(parent)


def _parent_type(parent) -> ResourceType:
    return ResourceType(parent.group, parent.version, parent.kind, parent.plural, parent.namespaced)


def _deletion_order(one: DeletedObject):
    return (-wave_of(one.resource), one.resource.kind, one.namespace or "", one.name)


def servable_objects(bundle: list, discovery, namespace: str) -> tuple[list, list]:
    """The bundle's objects whose kinds are served (a kind no longer served has nothing left), and the kinds that are
    not, as ``Kind (apiVersion)``."""
    try:
        return plan_objects(bundle, discovery, namespace), []
    except PhasekitError:  # plan_objects refuses a bundle with any kind not served: one by one
        pass
    planned, not_served = [], set()
    for item in bundle:
        try:
            planned.extend(plan_objects([item], discovery, namespace))
        except PhasekitError:
            not_served.add(f"{item.obj.get('kind')} ({item.obj.get('apiVersion')})")
    return planned, sorted(not_served)
