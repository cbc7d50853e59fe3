"""Discovery: aggregated or legacy, cached in memory and on disk per server, refreshed once on a miss."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.phasekit.kube.plugins.module_utils.kube import discovery as disco
from ansible_collections.phasekit.kube.plugins.module_utils.kube.discovery import (
    Discovery, ResourceType, cache_dir_for)


def aggregated(groups):
    return {"kind": "APIGroupDiscoveryList", "items": [
        {"metadata": {"name": group}, "versions": [
            {"version": version, "resources": [
                {"resource": plural, "scope": "Namespaced" if namespaced else "Cluster",
                 "responseKind": {"group": group, "version": version, "kind": kind}}
                for kind, plural, namespaced in resources]}
            for version, resources in versions]}
        for group, versions in groups]}


CORE = aggregated([("", [("v1", [("ConfigMap", "configmaps", True), ("Namespace", "namespaces", False)])])])
APIS = aggregated([("apps", [("v1", [("Deployment", "deployments", True)])]),
                   ("example.com", [("v2", [("Widget", "widgets", True)]), ("v1", [("Widget", "widgets", True)])])])


class FakeSession:
    server = "https://127.0.0.1:6443"

    def __init__(self, answers):
        self.answers = answers
        self.calls = []

    def get(self, path, accept=None, query=None):
        self.calls.append(path)
        answer = self.answers[path]
        return answer() if callable(answer) else answer


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PHASEKIT_CACHE", str(tmp_path))
    disco._MEMORY.clear()  # pylint: disable=protected-access
    yield tmp_path
    disco._MEMORY.clear()  # pylint: disable=protected-access


def test_aggregated_discovery_resolves_kinds_and_preferred_versions():
    session = FakeSession({"/api": CORE, "/apis": APIS})
    found = Discovery(session)
    assert found.resolve("v1", "Namespace") == ResourceType("", "v1", "Namespace", "namespaces", False)
    assert found.resolve("apps/v1", "Deployment").plural == "deployments"
    assert found.resolve_group_kind("example.com", "Widget").version == "v2"
    assert found.resolve_resource("", "configmaps").kind == "ConfigMap"
    assert session.calls == ["/api", "/apis"]


def test_disk_cache_serves_the_next_run_without_requests(cache):
    Discovery(FakeSession({"/api": CORE, "/apis": APIS})).resources()
    assert os.path.isfile(os.path.join(cache_dir_for("https://127.0.0.1:6443"), "resources.json"))
    assert cache_dir_for("https://127.0.0.1:6443").endswith("discovery/127.0.0.1_6443")
    disco._MEMORY.clear()  # pylint: disable=protected-access
    later = FakeSession({})
    assert Discovery(later).resolve("apps/v1", "Deployment") is not None
    assert later.calls == []


def test_unknown_kind_refreshes_once_per_run():
    answers = {"/api": CORE, "/apis": APIS}
    session = FakeSession(answers)
    found = Discovery(session)
    assert found.resolve("example.com/v1", "Gadget") is None
    assert found.resolve("example.com/v1", "Other") is None
    assert session.calls == ["/api", "/apis"]  # first fetch counts as this run's refresh


def test_stale_cache_is_refreshed_when_a_kind_is_missing():
    Discovery(FakeSession({"/api": CORE, "/apis": APIS})).resources()
    disco._MEMORY.clear()  # pylint: disable=protected-access
    newer = aggregated([("example.com", [("v1", [("Gadget", "gadgets", False)])])])
    session = FakeSession({"/api": CORE, "/apis": newer})
    assert Discovery(session).resolve("example.com/v1", "Gadget").plural == "gadgets"
    assert session.calls == ["/api", "/apis"]


def test_expired_or_damaged_cache_is_a_miss(cache):
    Discovery(FakeSession({"/api": CORE, "/apis": APIS})).resources()
    disco._MEMORY.clear()  # pylint: disable=protected-access
    path = os.path.join(cache_dir_for("https://127.0.0.1:6443"), "resources.json")
    data = json.load(open(path, encoding="utf-8"))
    data["fetched"] -= disco.CACHE_TTL + 1
    json.dump(data, open(path, "w", encoding="utf-8"))
    session = FakeSession({"/api": CORE, "/apis": APIS})
    Discovery(session).resources()
    assert session.calls == ["/api", "/apis"]
    open(path, "w", encoding="utf-8").write("{not json")
    disco._MEMORY.clear()  # pylint: disable=protected-access
    assert Discovery(FakeSession({"/api": CORE, "/apis": APIS})).resources() is not None


def test_invalidate_forgets_memory_and_disk(cache):
    found = Discovery(FakeSession({"/api": CORE, "/apis": APIS}))
    found.resources()
    found.invalidate()
    assert not os.path.exists(os.path.join(cache_dir_for("https://127.0.0.1:6443"), "resources.json"))
    assert len(disco._MEMORY) == 0  # pylint: disable=protected-access


def test_legacy_discovery_walks_group_versions():
    session = FakeSession({
        "/api": {"kind": "APIVersions", "versions": ["v1"]},
        "/apis": {"kind": "APIGroupList", "groups": [
            {"name": "apps", "preferredVersion": {"version": "v1"},
             "versions": [{"groupVersion": "apps/v1", "version": "v1"}]}]},
        "/api/v1": {"resources": [{"name": "configmaps", "kind": "ConfigMap", "namespaced": True},
                                  {"name": "pods/log", "kind": "Pod", "namespaced": True}]},
        "/apis/apps/v1": {"resources": [{"name": "deployments", "kind": "Deployment", "namespaced": True}]},
    })
    found = Discovery(session, use_disk=False)
    assert found.resolve("v1", "ConfigMap").plural == "configmaps"
    assert found.resolve("v1", "Pod") is None  # subresources are not kinds to apply
    assert found.resolve("apps/v1", "Deployment").namespaced
