"""Teardown against the in-memory API server: only the set's members, dependants first, waited for, then the
parent; a dry run deletes nothing; an object re-created meanwhile (another uid) counts as gone; a plan leaves
another plan's set and objects alone."""

from __future__ import annotations

import pytest
from test_kube_apply_run import (  # pylint: disable=import-error
    CONFIGMAPS, COLLECTION, NAMESPACES, PARENT, PLAN_A, PLAN_B, SECRETS, FakeApi, apply, config_maps)

from ansible_collections.phasekit.kube.plugins.module_utils.bundle import render_bundle
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kube.apply import DEFAULT_TOOLING
from ansible_collections.phasekit.kube.plugins.module_utils.kube.discovery import Discovery, ResourceMap
from ansible_collections.phasekit.kube.plugins.module_utils.kube.teardown import Teardown

NAMESPACE_PATH = "/api/v1/namespaces/apps"


def teardown(api, *, dry_run=False, timeout=30, clock=None):
    discovery = Discovery(api, use_disk=False)
    discovery._map = ResourceMap([CONFIGMAPS, SECRETS, NAMESPACES], {}, api.now)  # pylint: disable=protected-access
    api.log.clear()
    ticks = iter(range(10_000))
    return Teardown(api, discovery, dry_run=dry_run, timeout=timeout, concurrency=1,
                    clock=clock or (lambda: next(ticks)), sleep=lambda _s: None)


def with_namespace():
    return [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}}] + config_maps("a", "b")


def test_the_sets_members_go_dependants_first_then_the_parent():
    api = FakeApi()
    apply(api, with_namespace())
    api.objects[f"{COLLECTION}/foreign"] = {"apiVersion": "v1", "kind": "ConfigMap",
                                            "metadata": {"name": "foreign", "namespace": "apps"}}
    report = teardown(api).applyset("site", tooling=DEFAULT_TOOLING, namespace="apps")
    assert report.failure is None and report.deleted == 3 and report.parent
    deletes = [request[1] for request in api.log if request[0] == "DELETE"]
    assert deletes == [f"{COLLECTION}/a", f"{COLLECTION}/b", NAMESPACE_PATH, PARENT]
    assert f"{COLLECTION}/foreign" in api.objects      # not a member: the fake keeps it (a real namespace would not)


def test_a_dry_run_deletes_nothing_and_waits_for_nothing():
    api = FakeApi()
    apply(api, config_maps("a", "b"))
    report = teardown(api, dry_run=True).applyset("site", tooling=DEFAULT_TOOLING, namespace="apps")
    assert report.changed and [one.name for one in report.objects] == ["a", "b"]
    assert f"{COLLECTION}/a" in api.objects and PARENT in api.objects
    assert [request[0] for request in api.log].count("GET") == 1   # the parent only: no wait for gone


def test_no_parent_means_nothing_to_delete():
    report = teardown(FakeApi()).applyset("site", tooling=DEFAULT_TOOLING, namespace="apps")
    assert not report.changed and "no parent in namespace apps" in report.note


def test_an_object_that_does_not_go_fails_the_teardown_naming_it():
    api = FakeApi()
    apply(api, config_maps("a"))
    real_delete = api.delete

    def stuck(path, *, dry_run=False, propagation="Background"):  # a finalizer that never finishes
        api._record("DELETE", path)  # pylint: disable=protected-access
        return real_delete(path, dry_run=True, propagation=propagation)

    api.delete = stuck
    report = teardown(api, timeout=5).applyset("site", tooling=DEFAULT_TOOLING, namespace="apps")
    assert report.failure == "not gone after 5s: ConfigMap apps/a"
    assert PARENT in api.objects                               # the parent stays while members remain


def test_a_bundle_without_a_set_loses_the_objects_it_names_that_exist():
    api = FakeApi()
    apply(api, config_maps("a"), applyset=None, prune=False)
    report = teardown(api).bundle(render_bundle(definition=config_maps("a", "never-made")), namespace="apps")
    assert [one.name for one in report.objects] == ["a"] and f"{COLLECTION}/a" not in api.objects


def test_an_object_made_again_meanwhile_is_not_waited_for():
    api = FakeApi()
    apply(api, config_maps("a"), applyset=None, prune=False)
    real_delete = api.delete

    def recreate(path, *, dry_run=False, propagation="Background"):
        response = real_delete(path, dry_run=dry_run, propagation=propagation)
        api.objects[path] = {"apiVersion": "v1", "kind": "ConfigMap",
                             "metadata": {"name": "a", "namespace": "apps", "uid": "someone-elses"}}
        return response

    api.delete = recreate
    report = teardown(api).bundle(render_bundle(definition=config_maps("a")), namespace="apps")
    assert report.failure is None and report.deleted == 1


def test_a_plan_may_not_destroy_another_plans_set_nor_another_plans_objects():
    api = FakeApi()
    apply(api, config_maps("a"), owner=PLAN_A)
    apply(api, config_maps("loose"), owner=PLAN_A, applyset=None, prune=False)
    apply(api, config_maps("loose", "b"), owner=PLAN_B, applyset=None, prune=False)
    with pytest.raises(PhasekitError, match="belongs to plan a .host h1, since 2026-11-27T20:00:00Z., not to plan b"):
        teardown(api).applyset("site", tooling=DEFAULT_TOOLING, namespace="apps", owner=PLAN_B)
    assert [request[0] for request in api.log] == ["GET"] and f"{COLLECTION}/a" in api.objects
    report = teardown(api).bundle(render_bundle(definition=config_maps("loose", "b")), namespace="apps", owner=PLAN_B)
    assert [one.name for one in report.objects] == ["b"] and f"{COLLECTION}/loose" in api.objects
    assert report.result()["ownership"] == [
        "ConfigMap apps/loose not deleted: plan a (host h1) applied it first and keeps it"]
