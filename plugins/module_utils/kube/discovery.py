# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Which REST resource serves a kind: discovery, cached on disk per API server and in memory per run.

One aggregated discovery request per root (``/api``, ``/apis``) answers for
every group (Kubernetes 1.26+); older servers get the classic per-group walk.
The answer is kept in memory for the run and on disk under
``$PHASEKIT_CACHE/discovery/<server>/`` (default ``~/.cache/phasekit``) for
later runs, like kubectl's ``~/.kube/cache/discovery``. A kind missing from the
cache triggers one fresh discovery before it is reported as unknown.
"""

from __future__ import annotations

import json
import os
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field

from ansible_collections.phasekit.kube.plugins.module_utils.memo import Memo
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kube.session import ApiError, describe_api_error
from ansible_collections.phasekit.kube.plugins.module_utils.private_files import write_atomically

CACHE_TTL = 6 * 3600  # as kubectl: discovery changes rarely, unknown kinds force a refresh anyway
CACHE_FORMAT = 2  # 2: with each resource's verbs
AGGREGATED_ACCEPT = ("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
                     "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
                     "application/json")

_MEMORY = Memo()  # server -> its ResourceMap, for the process


@dataclass(frozen=True)
class ResourceType:
    """A REST resource: enough to build URLs and to name the kind."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    verbs: tuple = field(default=(), compare=False)   # what the server lets clients do with it (list, delete, ...)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_kind(self) -> str:
        """Kind.group as kubectl prints a GroupKind (just Kind for the core group)."""
        return f"{self.kind}.{self.group}" if self.group else self.kind


def split_api_version(api_version: str) -> tuple[str, str]:
    group, _sep, version = api_version.rpartition("/")
    return group, version


def cache_root() -> str:
    return os.path.join(os.environ.get("PHASEKIT_CACHE") or os.path.expanduser("~/.cache/phasekit"), "discovery")


def cache_dir_for(server: str) -> str:
    """One directory per API server, named like kubectl's (host_port)."""
    name = re.sub(r"^https?://", "", server.rstrip("/"))
    return os.path.join(cache_root(), re.sub(r"[^A-Za-z0-9.\-]", "_", name))


class ResourceMap:
    """Resource types by (group, version, kind), plus the preferred version of each group."""

    def __init__(self, resources: list[ResourceType], preferred: dict[str, str], fetched: float):
        self.fetched = fetched
        self.preferred = dict(preferred)
        self.by_gvk = {(r.group, r.version, r.kind): r for r in resources}

    def find(self, group: str, version: str, kind: str) -> ResourceType | None:
        return self.by_gvk.get((group, version, kind))

    def find_group_kind(self, group: str, kind: str) -> ResourceType | None:
        """The preferred version's resource for a group and kind (any served version otherwise)."""
        preferred = self.preferred.get(group)
        if preferred and (group, preferred, kind) in self.by_gvk:
            return self.by_gvk[(group, preferred, kind)]
        candidates = sorted((r for (g, _version, k), r in self.by_gvk.items() if g == group and k == kind),
                            key=lambda r: r.version)
        return candidates[0] if candidates else None

    def find_resource(self, group: str, plural: str) -> ResourceType | None:
        """The preferred version's resource type for a group and resource name (plural)."""
        matches = [r for r in self.by_gvk.values() if r.group == group and r.plural == plural]
        preferred = [r for r in matches if r.version == self.preferred.get(group)]
        return (preferred or sorted(matches, key=lambda r: r.version) or [None])[0]

    def namespaced_listable(self) -> list[ResourceType]:
        """One resource per namespaced kind that can be listed (its group's preferred version, else the first
        served), sorted by group and kind: what a namespace can hold, read with one LIST each."""
        kinds = sorted({(r.group, r.kind) for r in self.by_gvk.values() if r.namespaced and "list" in r.verbs})
        found = (self.find_group_kind(group, kind) for group, kind in kinds)
        return [r for r in found if r is not None and "list" in r.verbs]

    def to_json(self) -> dict:
        return {"format": CACHE_FORMAT, "fetched": self.fetched, "preferred": self.preferred,
                "resources": [asdict(r) for r in self.by_gvk.values()]}

    @classmethod
    def from_json(cls, data: dict) -> "ResourceMap":
        return cls([ResourceType(**{**r, "verbs": tuple(r.get("verbs") or ())}) for r in data["resources"]],
                   data.get("preferred") or {}, data["fetched"])


class Discovery:
    """Resolve kinds for one API server; refresh at most once per run when a kind is unknown."""

    def __init__(self, session, *, use_disk: bool = True, ttl: float = CACHE_TTL):
        self.session = session
        self.server = session.server
        self.use_disk = use_disk
        self.ttl = ttl
        self._refreshed = False
        self._map: ResourceMap | None = None

    # ---------------------------------------------------------------- public

    def resolve(self, api_version: str, kind: str) -> ResourceType | None:
        """The resource for apiVersion/kind, refreshing discovery once if it is not known yet."""
        group, version = split_api_version(api_version)
        found = self.resources().find(group, version, kind)
        if found is None and self.refresh():
            found = self.resources().find(group, version, kind)
        return found

    def resolve_group_kind(self, group: str, kind: str) -> ResourceType | None:
        found = self.resources().find_group_kind(group, kind)
        if found is None and self.refresh():
            found = self.resources().find_group_kind(group, kind)
        return found

    def resolve_resource(self, group: str, plural: str) -> ResourceType | None:
        found = self.resources().find_resource(group, plural)
        if found is None and self.refresh():
            found = self.resources().find_resource(group, plural)
        return found

    def namespaced_listable(self) -> list[ResourceType]:
        """Every namespaced kind that can be listed, once each (see ``ResourceMap.namespaced_listable``)."""
        return self.resources().namespaced_listable()

    def resources(self) -> ResourceMap:
        if self._map is None:
            self._map = self._from_memory() or self._from_disk() or self._fetch()
        return self._map

    def refresh(self) -> bool:
        """Fetch discovery again unless already done in this run; True when it was refreshed."""
        if self._refreshed:
            return False
        self._map = self._fetch()
        return True

    def invalidate(self):
        """Forget cached discovery (after CRDs changed): the next run asks the server again."""
        _MEMORY.forget(self.server)
        if self.use_disk:
            try:
                os.unlink(os.path.join(cache_dir_for(self.server), "resources.json"))
            except OSError:
                pass

    # ---------------------------------------------------------------- sources

    def _from_memory(self) -> ResourceMap | None:
        return _MEMORY.get(self.server)

    def _from_disk(self) -> ResourceMap | None:
        if not self.use_disk:
            return None
        path = os.path.join(cache_dir_for(self.server), "resources.json")
        try:
            with open(path, encoding="utf-8") as handle:
                data = json.load(handle)
            if data.get("format") != CACHE_FORMAT or time.time() - data["fetched"] > self.ttl:
                return None
            found = ResourceMap.from_json(data)
        except (OSError, ValueError, KeyError, TypeError):
            return None  # a missing or damaged cache is just a cache miss
        _MEMORY.put(self.server, found)
        return found

    def _fetch(self) -> ResourceMap:
        self._refreshed = True
        resources, preferred = fetch_resources(self.session)
        found = ResourceMap(resources, preferred, time.time())
        _MEMORY.put(self.server, found)
        if self.use_disk:
            _write_cache(cache_dir_for(self.server), found.to_json())
        return found


def _write_cache(directory: str, data: dict):
    """Atomic write; a cache that cannot be written only costs time."""
    try:
        write_atomically(os.path.join(directory, "resources.json"), json.dumps(data))
    except OSError:
        pass


def fetch_resources(session) -> tuple[list[ResourceType], dict[str, str]]:
    """Every resource type the server serves, and each group's preferred version."""
    resources, preferred = [], {}
    for root in ("/api", "/apis"):
        try:
            body = session.get(root, accept=AGGREGATED_ACCEPT) or {}
        except ApiError as err:
            raise PhasekitError(f"API discovery ({root}) failed on {session.server}: "
                                f"{describe_api_error(err)}") from None
        if body.get("kind") == "APIGroupDiscoveryList":
            _parse_aggregated(body, resources, preferred)
        else:
            _legacy_walk(session, root, body, resources, preferred)
    return resources, preferred


def _parse_aggregated(body: dict, resources: list, preferred: dict):
    for group_entry in body.get("items") or []:
        group = (group_entry.get("metadata") or {}).get("name", "")
        versions = group_entry.get("versions") or []
        if versions:
            preferred.setdefault(group, versions[0].get("version"))  # listed in preference order
        for version_entry in versions:
            version = version_entry.get("version")
            for entry in version_entry.get("resources") or []:
                kind = (entry.get("responseKind") or {}).get("kind")
                if not kind or not entry.get("resource"):
                    continue
                resources.append(ResourceType(group, version, kind, entry["resource"],
                                              entry.get("scope") == "Namespaced", tuple(entry.get("verbs") or ())))


def _legacy_walk(session, root: str, body: dict, resources: list, preferred: dict):
    """Pre-1.26 servers: one request per group version, in parallel."""
    if root == "/api":
        group_versions = [("", version, f"/api/{version}") for version in body.get("versions") or []]
        if group_versions:
            preferred.setdefault("", group_versions[0][1])
    else:
        group_versions = []
        for group in body.get("groups") or []:
            name = group.get("name", "")
            preferred[name] = (group.get("preferredVersion") or {}).get("version", "")
            for entry in group.get("versions") or []:
                group_versions.append((name, entry["version"], f"/apis/{entry['groupVersion']}"))

    def fetch(item):
        group, version, path = item
        try:
            return group, version, session.get(path) or {}
        except ApiError:  # an unavailable aggregated API must not break discovery of the rest
            return group, version, {}

    with ThreadPoolExecutor(max_workers=8) as pool:
        for group, version, listing in pool.map(fetch, group_versions):
            for entry in listing.get("resources") or []:
                if "/" in entry.get("name", ""):  # subresources such as deployments/scale
                    continue
                resources.append(ResourceType(group, version, entry["kind"], entry["name"],
                                              bool(entry.get("namespaced")), tuple(entry.get("verbs") or ())))
