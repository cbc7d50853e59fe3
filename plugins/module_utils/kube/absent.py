# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""``state: absent``: delete the objects a bundle names, as ``kubectl delete -f --ignore-not-found`` does.

Only each object's apiVersion, kind, namespace and name count. One run, in order:

1. every object is read; one that does not exist (or whose kind is not served)
   is already absent, which is ``ok``;
2. ownership is checked before anything is deleted: an object another plan
   applied first (its ``ownership`` marker names that plan; outside a plan,
   any plan), or a member of another ApplySet than the run's own, is refused,
   naming that plan or set, and nothing is deleted, unless ``applyset_adopt:
   all``; with a named ApplySet whose parent belongs to another plan, the
   parent's claim refuses the run as apply does (``ownership.set_claim``);
3. the objects are deleted in the reverse of apply's waves (``Teardown``) with
   kubectl's default propagation (background; ``cascade`` says otherwise), and
   each wave is waited for until it is gone unless ``wait: false``. A Namespace
   named goes only when it holds nothing but what this run deletes (destroy's
   rule), unless ``applyset_adopt: all``;
4. the run's own ApplySet parent, if it names one and it exists, then records
   only the kinds and namespaces that still hold members.

Check mode deletes with a server-side dry run (``would delete``); diffs show
each object's live state before (Secret values hidden).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kube.apply import CASCADES, with_given
from ansible_collections.phasekit.kube.plugins.module_utils.kube.diff import object_diff
from ansible_collections.phasekit.kube.plugins.module_utils.kube.discovery import Discovery
from ansible_collections.phasekit.kube.plugins.module_utils.kube.objects import DELETED, FAILED
from ansible_collections.phasekit.kube.plugins.module_utils.kube.ownership import (
    ADOPT_ALL, OTHER_SET, PlanOwner, live_owner)
from ansible_collections.phasekit.kube.plugins.module_utils.kube.parent import ApplySetParent
from ansible_collections.phasekit.kube.plugins.module_utils.kube.session import ApiError, describe_api_error, object_path
from ansible_collections.phasekit.kube.plugins.module_utils.kube.teardown import (
    DEFAULT_TIMEOUT, DeletedObject, PlanObjects, Teardown, servable_objects)

ABSENT_ACTION = "absent"   # an object the bundle names that does not exist: nothing to do
ADOPT_REMEDY = "set applyset_adopt: all"


@dataclass
class DeletionReport:
    """What one ``state: absent`` run deleted (would delete, in a dry run), found absent, or refused."""

    deleted: list = field(default_factory=list)      # DeletedObject, deleted or failed
    absent: list = field(default_factory=list)       # described: the objects that were not there
    not_served: list = field(default_factory=list)   # kinds the server does not serve: nothing of them exists
    failure: str | None = None
    diffs: list = field(default_factory=list)
    applyset: dict | None = None
    dry_run: bool = False
    warnings: list = field(default_factory=list)
    requests: int = 0

    @property
    def changed(self) -> bool:
        return any(not one.error for one in self.deleted)

    def counts(self) -> dict:
        failed = sum(1 for one in self.deleted if one.error)
        return {DELETED: len(self.deleted) - failed, ABSENT_ACTION: len(self.absent), FAILED: failed}

    def lines(self) -> list[str]:
        """One line per object deleted (or that would be), for people: ``ConfigMap ns/name``."""
        return [one.describe() for one in self.deleted if not one.error]

    def drift(self) -> list[str]:
        """A dry run's differences for status and the drift gate: each object that exists and should not."""
        return [f"{one.describe()}: exists, would be deleted (state: absent)" for one in self.deleted if not one.error]

    @property
    def message(self) -> str:
        verb = "would delete" if self.dry_run else "deleted"
        done = self.lines()
        said = [f"{verb} {', '.join(done)}" if done else "nothing to delete: every object is absent"]
        if self.not_served:
            said.append(f"not served by the API server, so none exists: {', '.join(self.not_served)}")
        return self.failure or "; ".join(said)

    def result(self) -> dict:
        """The Ansible result (without 'failed'/'msg', which the caller adds)."""
        out = {"changed": self.changed, "counts": self.counts(), "objects": [one.entry() for one in self.deleted],
               "absent": list(self.absent), "api_requests": self.requests}
        return with_given(out, applyset=self.applyset, diff=self.diffs)


class AbsentRun:
    """One ``state: absent`` run of a bundle against one cluster (``options``: ``apply.ApplyOptions``)."""

    def __init__(self, session, discovery: Discovery, options, *, timeout: float | None = None,
                 ours: PlanObjects | None = None):
        self.session = session
        self.discovery = discovery
        self.options = options
        self.take_all = options.applyset_adopt == ADOPT_ALL
        wait = options.wait
        self.teardown = Teardown(
            session, discovery, dry_run=options.dry_run, concurrency=options.concurrency,
            timeout=timeout if timeout is not None else (wait.timeout if wait is not None else DEFAULT_TIMEOUT),
            ours=ours if ours is not None else PlanObjects(), delete_nonempty_namespaces=self.take_all,
            propagation=CASCADES[options.cascade], wait=wait is not None)

    def run(self, bundle: list) -> DeletionReport:
        options = self.options
        if options.selector is not None:
            bundle = [one for one in bundle if options.selector.matches(one.obj)]
        report = DeletionReport(dry_run=options.dry_run)
        planned, report.not_served = servable_objects(bundle, self.discovery, options.namespace)
        parent = self._parent()
        set_id = parent.state.id if parent is not None else None
        set_name = parent.state.parent.name if parent is not None else ""
        found = self._read([one for one in planned if not one.defined_in_bundle])
        report.not_served += sorted({f"{one.resource.kind} ({one.resource.api_version})"
                                     for one in planned if one.defined_in_bundle})
        doomed, refused = [], []
        for one, live in found:
            if live is None:
                report.absent.append(one.describe())
                continue
            why = "" if self.take_all else refusal(live, options.owner, set_id, set_name)
            if why:
                refused.append(f"{one.describe()} {why}")
                continue
            doomed.append((one, live))
        if refused:
            report.failure = (f"not deleted, nothing was: {'; '.join(refused)}; to delete them anyway, "
                              f"{ADOPT_REMEDY}")
            return self._finish(report, parent)
        if options.diff:
            report.diffs = [object_diff(live, None, one.describe(), "deleted") for one, live in doomed]
        deleted = self.teardown.delete_objects([
            DeletedObject(one.resource, one.namespace, one.name, (live.get("metadata") or {}).get("uid"))
            for one, live in doomed])
        report.deleted, report.failure = deleted.objects, deleted.failure
        if report.failure is None and deleted.kept:
            verb = "would be kept" if options.dry_run else "kept"
            report.failure = "; ".join(one.describe(verb, ADOPT_REMEDY) for one in deleted.kept)
        if report.failure is None and parent is not None and parent.live is not None and not options.dry_run \
                and report.deleted:
            self._shrink_parent(parent, report.deleted)
        return self._finish(report, parent)

    def _finish(self, report: DeletionReport, parent) -> DeletionReport:
        if parent is not None and parent.live is not None:
            report.applyset = parent.summary()
        report.warnings = list(self.session.warnings)
        report.requests = self.session.requests
        return report

    def _parent(self) -> ApplySetParent | None:
        """The run's own ApplySet parent, read (not written); another plan's set is refused here."""
        if not self.options.applyset:
            return None
        parent = ApplySetParent(self.session, self.discovery, reference=self.options.applyset,
                                tooling=self.options.applyset_tooling, namespace=self.options.namespace,
                                dry_run=self.options.dry_run, owner=self.options.owner,
                                adopt=self.options.applyset_adopt)
        parent.prepare([])
        return parent

    def _read(self, planned: list) -> list:
        """(object, live or None) for each planned object; a read refused (not a 404) fails the run."""
        def read(one):
            try:
                return one, self.session.get(object_path(one.resource, one.namespace, one.name))
            except ApiError as err:
                if err.status == 404:
                    return one, None
                raise PhasekitError(f"{one.describe()} ({one.source.origin}): {describe_api_error(err)}") from None

        if len(planned) <= 1:
            return [read(one) for one in planned]
        with ThreadPoolExecutor(max_workers=min(self.options.concurrency, len(planned))) as pool:
            return list(pool.map(read, planned))

    def _shrink_parent(self, parent: ApplySetParent, deleted: list) -> None:
        """Record on the parent only the kinds and namespaces that still hold members of the set."""
        state = parent.state
        gone = {(one.resource.group, one.resource.kind, one.namespace or "", one.name) for one in deleted}
        for group, kind, namespace in state.prune_scopes(self._namespaced_of):
            resource = self.discovery.resolve_group_kind(group, kind)
            items = self.session.list(object_path(resource, namespace), label_selector=state.member_selector())
            for item in items:
                metadata = item.get("metadata") or {}
                key = (group, kind, metadata.get("namespace") or "", metadata.get("name"))
                if key not in gone and not metadata.get("deletionTimestamp"):
                    state.add_member(group, kind, metadata.get("namespace"))
        parent.write(superset=False)

    def _namespaced_of(self, group: str, kind: str):
        resource = self.discovery.resolve_group_kind(group, kind)
        return None if resource is None else resource.namespaced


def refusal(live: dict, us: PlanOwner | None, set_id: str | None, set_name: str) -> str:
    """Why a ``state: absent`` run must not delete this live object ("": it may): another plan applied it first
    (outside a plan: any plan), or it is a member of another ApplySet than the run's own."""
    recorded = PlanOwner.of(live)
    if recorded is not None and (us is None or not us.owns_with(recorded)):
        return f"belongs to {recorded.describe()}, which applied it first"
    owner = live_owner(live, set_id or "", set_name)
    if owner.relation == OTHER_SET and (us is None or recorded is None):
        return owner.describe()
    return ""


def delete_bundle(session, bundle: list, options, discovery: Discovery | None = None, *,
                  timeout: float | None = None, ours: PlanObjects | None = None) -> DeletionReport:
    """Delete the objects ``bundle`` names (``state: absent``); see the module docstring. ``timeout``: how long
    their deletion may take (default: the ``wait`` option's); ``ours``: the plan's own bookkeeping, which does not
    keep a namespace."""
    return AbsentRun(session, discovery or Discovery(session), options, timeout=timeout, ours=ours).run(bundle)
