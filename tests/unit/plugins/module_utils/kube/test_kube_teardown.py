"""Teardown against the in-memory API server: only the set's members, dependants first, waited for, then the
parent; a dry run deletes nothing; an object re-created meanwhile (another uid) counts as gone; a plan leaves
another plan's set and objects alone."""

from __future__ import annotations

import dataclasses

import pytest
from test_kube_apply_run import (  # pylint: disable=import-error
    CONFIGMAPS, COLLECTION, NAMESPACES, PARENT, PLAN_A, PLAN_B, SECRETS, FakeApi, apply, config_maps)

from ansible_collections.phasekit.kube.plugins.module_utils.bundle import render_bundle
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kube.apply import DEFAULT_TOOLING
from ansible_collections.phasekit.kube.plugins.module_utils.kube.discovery import Discovery, ResourceMap, ResourceType
from ansible_collections.phasekit.kube.plugins.module_utils.kube.session import ApiError
from ansible_collections.phasekit.kube.plugins.module_utils.kube.teardown import (
    PlanObjects, Teardown, object_key, why_not_foreign)

NAMESPACE_PATH = "/api/v1/namespaces/apps"


def listable(resource):
    return dataclasses.replace(resource, verbs=("get", "list", "delete"))


def teardown(api, *, dry_run=False, timeout=30, clock=None, resources=(CONFIGMAPS, SECRETS, NAMESPACES), **options):
    discovery = Discovery(api, use_disk=False)
    discovery._map = ResourceMap(list(resources), {}, api.now)  # pylint: disable=protected-access
    api.log.clear()
    ticks = iter(range(10_000))
    return Teardown(api, discovery, dry_run=dry_run, timeout=timeout, concurrency=1,
                    clock=clock or (lambda: next(ticks)), sleep=lambda _s: None, **options)


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


CORE = ResourceType("", "v1", "ConfigMap", "configmaps", True)
SECRET = ResourceType("", "v1", "Secret", "secrets", True)
ACCOUNT = ResourceType("", "v1", "ServiceAccount", "serviceaccounts", True)
POD = ResourceType("", "v1", "Pod", "pods", True)
OURS = PlanObjects(objects={object_key(CORE, "apps", "settings")}, releases={("apps", "web")},
                   bookkeeping=lambda resource, metadata: metadata.get("name") == "phasekit-run-site.h")


@pytest.mark.parametrize("resource, metadata, rule", [
    (CORE, {"name": "kube-root-ca.crt"}, "in every namespace"),
    (ACCOUNT, {"name": "default"}, "in every namespace"),
    (SECRET, {"name": "default-token-x7k2p", "annotations": {"kubernetes.io/service-account.name": "default"}},
     "in every namespace"),
    (POD, {"name": "web-5d9c-x", "ownerReferences": [{"kind": "ReplicaSet", "name": "web-5d9c"}]}, "owned"),
    (CORE, {"name": "going", "deletionTimestamp": "2026-11-27T00:00:00Z"}, "being deleted"),
    (CORE, {"name": "settings", "namespace": "apps"}, "the plan's"),
    (CORE, {"name": "web-config", "namespace": "apps",
            "annotations": {"meta.helm.sh/release-name": "web", "meta.helm.sh/release-namespace": "apps"}},
     "the plan's Helm release"),
    (SECRET, {"name": "sh.helm.release.v1.web.v1", "namespace": "apps", "labels": {"owner": "helm", "name": "web"}},
     "the plan's Helm release"),
    (CORE, {"name": "phasekit-run-site.h", "namespace": "apps"}, "the run's record"),
    (CORE, {"name": "kube-root-ca.crt-copy"}, None),
    (ACCOUNT, {"name": "builder"}, None),
    (SECRET, {"name": "default-token-x7k2p"}, None),
    (SECRET, {"name": "other-team", "namespace": "apps"}, None),
    (CORE, {"name": "settings", "namespace": "elsewhere"}, None),
    (CORE, {"name": "db-config", "namespace": "apps",
            "annotations": {"meta.helm.sh/release-name": "db", "meta.helm.sh/release-namespace": "apps"}}, None),
], ids=[
    "root-ca-configmap-is-in-every-namespace",
    "default-serviceaccount-is-in-every-namespace",
    "default-serviceaccount-legacy-token-is-in-every-namespace",
    "an-owned-object-goes-with-its-owner",
    "an-object-being-deleted-is-going-anyway",
    "an-object-the-plan-deleted-is-the-plans",
    "an-object-of-a-helm-release-the-plan-uninstalled-is-the-plans",
    "a-storage-secret-of-a-helm-release-the-plan-uninstalled-is-the-plans",
    "the-runs-own-record-is-bookkeeping",
    "a-configmap-with-a-similar-name-is-foreign",
    "another-serviceaccount-is-foreign",
    "a-token-secret-of-no-serviceaccount-is-foreign",
    "a-secret-another-team-put-there-is-foreign",
    "the-plans-object-name-in-another-namespace-is-foreign",
    "an-object-of-another-helm-release-is-foreign",
])
def test_which_objects_keep_a_namespace(resource, metadata, rule):
    assert why_not_foreign(resource, metadata, OURS) == rule


def foreign_secret(api, name="other-team"):
    api.objects[f"/api/v1/namespaces/apps/secrets/{name}"] = {"apiVersion": "v1", "kind": "Secret",
                                                              "metadata": {"name": name, "namespace": "apps"}}


LISTABLE = (listable(CONFIGMAPS), listable(SECRETS), NAMESPACES)


def test_a_namespace_holding_a_foreign_object_is_kept_and_named():
    api = FakeApi()
    apply(api, with_namespace())
    foreign_secret(api)
    report = teardown(api, resources=LISTABLE).applyset("site", tooling=DEFAULT_TOOLING, namespace="apps")
    assert report.failure is None and report.deleted == 2
    assert [one.name for one in report.objects] == ["a", "b"]               # the namespace is not among them
    assert report.parent is None and PARENT in api.objects                  # the set still holds the namespace
    assert NAMESPACE_PATH in api.objects and "/api/v1/namespaces/apps/secrets/other-team" in api.objects
    assert report.message == ("Namespace apps kept: it holds 1 object(s) the plan did not apply (1 Secret): Secret "
                              "other-team; to delete it with them, set plan_destroy_nonempty_namespaces=true")
    assert report.result()["kept_namespaces"] == [{"name": "apps", "counts": {"Secret": 1},
                                                   "named": ["Secret other-team"], "problem": ""}]
    # after the other objects went: one LIST per listable namespaced kind, in that namespace only
    last_delete = max(position for position, request in enumerate(api.log) if request[0] == "DELETE"
                      and request[1] != PARENT)
    lists = [request[1] for request in api.log[last_delete:] if request[0] == "LIST"]
    assert lists == ["/api/v1/namespaces/apps/configmaps", "/api/v1/namespaces/apps/secrets"]


def test_a_namespace_holding_only_the_plans_objects_goes():
    api = FakeApi()
    apply(api, with_namespace())   # the ApplySet parent is a Secret in the namespace: the plan's own
    report = teardown(api, resources=LISTABLE).applyset("site", tooling=DEFAULT_TOOLING, namespace="apps")
    assert report.failure is None and not report.kept and report.deleted == 3
    assert NAMESPACE_PATH not in api.objects


def test_a_dry_run_counts_the_plans_objects_still_there_as_the_plans():
    api = FakeApi()
    apply(api, with_namespace())
    report = teardown(api, dry_run=True, resources=LISTABLE).applyset("site", tooling=DEFAULT_TOOLING,
                                                                      namespace="apps")
    assert not report.kept and [one.name for one in report.objects] == ["a", "b", "apps"]
    foreign_secret(api)
    report = teardown(api, dry_run=True, resources=LISTABLE).applyset("site", tooling=DEFAULT_TOOLING,
                                                                      namespace="apps")
    assert report.message.startswith("Namespace apps would be kept: it holds 1 object(s)")


def test_delete_nonempty_namespaces_deletes_it_anyway_without_listing():
    api = FakeApi()
    apply(api, with_namespace())
    foreign_secret(api)
    report = teardown(api, resources=LISTABLE, delete_nonempty_namespaces=True).applyset(
        "site", tooling=DEFAULT_TOOLING, namespace="apps")
    assert not report.kept and NAMESPACE_PATH not in api.objects
    assert not [request for request in api.log if request[0] == "LIST" and "secrets" in request[1]]


def test_discovery_lists_each_namespaced_listable_kind_once_in_its_preferred_version():
    old = ResourceType("apps", "v1beta1", "Deployment", "deployments", True, ("list",))
    new = ResourceType("apps", "v1", "Deployment", "deployments", True, ("list", "get"))
    binding = ResourceType("", "v1", "Binding", "bindings", True, ("create",))
    cluster_wide = ResourceType("", "v1", "Namespace", "namespaces", False, ("list",))
    found = ResourceMap([old, new, binding, cluster_wide, listable(CONFIGMAPS)], {"apps": "v1"}, 0).namespaced_listable()
    assert [(one.group, one.version, one.kind) for one in found] == [("", "v1", "ConfigMap"), ("apps", "v1", "Deployment")]


def test_a_kind_that_cannot_be_listed_keeps_the_namespace_and_is_named():
    api = FakeApi()
    apply(api, with_namespace())
    real_list = api.list

    def forbidden(path, **options):
        if path.endswith("/secrets"):
            raise ApiError(403, "Forbidden", 'secrets is forbidden: User "dev" cannot list resource "secrets"')
        return real_list(path, **options)

    api.list = forbidden
    report = teardown(api, resources=LISTABLE).applyset("site", tooling=DEFAULT_TOOLING, namespace="apps")
    assert NAMESPACE_PATH in api.objects and report.kept[0].problem.startswith("Secret: ")
    assert report.message.startswith("Namespace apps kept: what it holds could not all be listed (Secret: ")
