# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""ApplySet prune: delete the set's members that this run did not apply, dependants first.

Members are found per (kind, namespace) the parent records: from the collection
the run already read whole before applying (see ``live.fetch_live``), or with
one LIST by the set's label. An object this run applied is never a candidate,
whether it is matched by uid or by name; nor is one another plan applied first
(its marker names that plan: ``ownership.kept_by_another_plan``), which is said instead.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from ansible_collections.phasekit.kube.plugins.module_utils.kube.discovery import ResourceType
from ansible_collections.phasekit.kube.plugins.module_utils.kube.live import Target
from ansible_collections.phasekit.kube.plugins.module_utils.kube.objects import FAILED, PRUNED, wave_of
from ansible_collections.phasekit.kube.plugins.module_utils.kube.ownership import PlanOwner, kept_by_another_plan
from ansible_collections.phasekit.kube.plugins.module_utils.kube.session import (
    ApiError, describe_api_error, object_path)


@dataclass
class PrunedObject:
    resource: ResourceType
    namespace: str | None
    name: str
    live: dict
    error: str | None = None

    def describe(self) -> str:
        return Target(self.resource, self.namespace, self.name).describe()

    def entry(self) -> dict:
        return {"apiVersion": self.resource.api_version, "kind": self.resource.kind, "namespace": self.namespace,
                "name": self.name, "action": FAILED if self.error else PRUNED,
                "status": None if self.error else "Deleted", "message": self.error or "pruned from the ApplySet"}


class Prune:
    """One prune of an ApplySet after its members were applied."""

    def __init__(self, session, discovery, state, *, concurrency: int, dry_run: bool, listed: dict | None = None,
                 owner: PlanOwner | None = None):
        self.session = session
        self.discovery = discovery
        self.state = state
        self.concurrency = concurrency
        self.dry_run = dry_run
        self.listed = listed or {}  # collections read whole before applying, by (group, kind, namespace)
        self.owner = owner          # the plan pruning (None: a task outside a plan)
        self.kept: list[str] = []   # members not pruned because another plan applied them first, and why

    def run(self, planned: list) -> tuple[list[PrunedObject], str | None]:
        """The objects deleted (or not: each says why) and the failure, if any."""
        try:
            doomed = self.candidates(planned)
        except ApiError as err:
            return [], f"prune: cannot list the ApplySet's members: {describe_api_error(err)}"
        for wave in sorted({wave_of(p.resource) for p in doomed}, reverse=True):  # dependants first
            members = [p for p in doomed if wave_of(p.resource) == wave]
            with ThreadPoolExecutor(max_workers=max(1, min(self.concurrency, len(members)))) as pool:
                list(pool.map(self._delete, members))
        failures = [p for p in doomed if p.error]
        if failures:
            return doomed, "prune: " + "; ".join(f"{p.describe()}: {p.error}" for p in failures)
        return doomed, None

    def candidates(self, planned: list) -> list[PrunedObject]:
        """The set's members that ``planned`` does not hold, in deletion order."""
        kept_uids = {((p.result or {}).get("metadata") or {}).get("uid") for p in planned} - {None}
        kept_keys = {p.target.key for p in planned}
        scopes = self.state.prune_scopes(self._namespaced_of)
        found = []
        with ThreadPoolExecutor(max_workers=max(1, min(self.concurrency, len(scopes) or 1))) as pool:
            for members in pool.map(self._members_in, scopes):
                found.extend(members)
        doomed = []
        for resource, item in found:
            metadata = item.get("metadata") or {}
            namespace = metadata.get("namespace") if resource.namespaced else None
            key = (resource.group, resource.kind, namespace or "", metadata.get("name"))
            if metadata.get("uid") in kept_uids or key in kept_keys:
                continue
            why = kept_by_another_plan(item, self.owner)
            if why:
                self.kept.append(f"{Target(resource, namespace, metadata.get('name')).describe()} not pruned: {why}")
                continue
            item.setdefault("apiVersion", resource.api_version)
            item.setdefault("kind", resource.kind)
            doomed.append(PrunedObject(resource, namespace, metadata.get("name"), item))
        doomed.sort(key=lambda p: (-wave_of(p.resource), p.resource.kind, p.namespace or "", p.name))
        return doomed

    def _members_in(self, scope) -> list:
        group, kind, namespace = scope
        resource = self.discovery.resolve_group_kind(group, kind)
        if scope in self.listed:  # read whole before applying: what it held of the set is what to check
            return [(resource, item) for item in self.listed[scope] if self.state.is_member(item)]
        try:
            items = self.session.list(object_path(resource, namespace), label_selector=self.state.member_selector())
        except ApiError as err:
            if err.status == 404:  # the kind is not served (its CRD is gone, or a preview's earlier phase makes it):
                return []          # no object of it can exist
            raise
        return [(resource, item) for item in items]

    def _namespaced_of(self, group: str, kind: str):
        resource = self.discovery.resolve_group_kind(group, kind)
        return None if resource is None else resource.namespaced

    def _delete(self, doomed: PrunedObject):
        path = object_path(doomed.resource, doomed.namespace, doomed.name)
        try:
            self.session.delete(path, dry_run=self.dry_run)
        except ApiError as err:
            if err.status != 404:
                doomed.error = describe_api_error(err)
