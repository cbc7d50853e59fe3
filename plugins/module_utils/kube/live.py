# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Read the live state of many objects with few requests.

Objects are grouped by resource and namespace; a group of several objects is
read with one (paged) LIST, a small group with one GET per object. Used before
applying (to skip objects already in the desired state, and for diffs) and
while waiting for readiness.
"""

from __future__ import annotations

from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from ansible_collections.phasekit.kube.plugins.module_utils.kube.discovery import ResourceType
from ansible_collections.phasekit.kube.plugins.module_utils.kube.session import ApiError, object_path

LIST_THRESHOLD = 3  # from this many objects of one resource in one namespace, one LIST beats GETs
NEVER_LIST = frozenset({("apiextensions.k8s.io", "CustomResourceDefinition"),
                        ("apiregistration.k8s.io", "APIService")})  # large objects: read only ours


@dataclass(frozen=True)
class Target:
    """One object to read: its resource type, namespace (None when cluster-scoped) and name."""

    resource: ResourceType
    namespace: str | None
    name: str

    @property
    def key(self) -> tuple:
        return (self.resource.group, self.resource.kind, self.namespace or "", self.name)

    def path(self) -> str:
        return object_path(self.resource, self.namespace, self.name)

    def describe(self) -> str:
        return f"{self.resource.kind} {self.namespace}/{self.name}" if self.namespace \
            else f"{self.resource.kind} {self.name}"


def key_of(obj: dict, group: str) -> tuple:
    metadata = obj.get("metadata") or {}
    return (group, obj.get("kind"), metadata.get("namespace") or "", metadata.get("name"))


def fetch_live(session, targets, *, workers: int = 8, listed: dict | None = None, reuse: bool = False) -> dict:
    """Live objects by ``Target.key``: the object, None when it does not exist.

    Keys of objects that could not be read (permission denied, kind not served
    yet) are left out: their state is unknown, not absent. ``listed``, when
    given, receives every collection read whole, by (group, kind, namespace):
    a later step over the same collection (pruning) needs no request of its own.
    ``reuse``: a collection the session's ``ListMemory`` holds answers without a
    request (see ``ApiSession.list``).
    """
    groups = defaultdict(list)
    for target in targets:
        groups[(target.resource, target.namespace)].append(target)
    jobs = []
    for (resource, namespace), members in groups.items():
        if len(members) >= LIST_THRESHOLD and (resource.group, resource.kind) not in NEVER_LIST:
            jobs.append(("list", resource, namespace, members))
        else:
            jobs.extend(("get", resource, namespace, [member]) for member in members)
    found = {}
    listed = {} if listed is None else listed

    def run(job):
        return _run(session, *job, listed=listed, reuse=reuse)

    if len(jobs) == 1 or workers == 1:  # no thread for one request (the usual re-run of a small bundle)
        for job in jobs:
            found.update(run(job))
        return found
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(jobs)))) as pool:
        for result in pool.map(run, jobs):
            found.update(result)
    return found


def _run(session, how: str, resource: ResourceType, namespace: str | None, members: list, *, listed: dict,
         reuse: bool = False) -> dict:
    try:
        return _read(session, how, resource, namespace, members, listed, reuse)
    except ApiError:
        return {}  # not readable (a kind not served yet, an aggregated API down): state unknown


def _read(session, how: str, resource: ResourceType, namespace: str | None, members: list, listed: dict,
          reuse: bool = False) -> dict:
    if how == "list":
        try:
            items = session.list(object_path(resource, namespace), reuse=reuse)
        except ApiError as err:
            if err.status in (401, 403, 405):  # may get but not list: fall back to one GET each
                result = {}
                for member in members:
                    result.update(_get_one(session, member))
                return result
            raise
        wanted = {member.key for member in members}
        result = {key: None for key in wanted}
        for item in items:
            item.setdefault("apiVersion", resource.api_version)  # lists omit the items' type
            item.setdefault("kind", resource.kind)
            key = key_of(item, resource.group)
            if not resource.namespaced:
                key = (key[0], key[1], "", key[3])
            if key in wanted:
                result[key] = item
        listed[(resource.group, resource.kind, namespace)] = items
        return result
    return _get_one(session, members[0])


def _get_one(session, target: Target) -> dict:
    try:
        return {target.key: session.get(target.path())}
    except ApiError as err:
        if err.status == 404:
            return {target.key: None}
        if err.status in (401, 403):
            return {}
        raise
