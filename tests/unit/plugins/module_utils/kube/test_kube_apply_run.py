"""The apply engine's requests, against an in-memory API server: what a first run, a re-run and a prune send.

The engine is also tested end to end on real clusters (tests/integration/test_apply.py); here the point is
the request pattern, which the fleet figures depend on and which a real cluster does not report.
"""

from __future__ import annotations

import copy
import dataclasses
import email.utils
import time

import pytest

from ansible_collections.phasekit.kube.plugins.module_utils.bundle import render_bundle
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kube.applyset import PART_OF_LABEL
from ansible_collections.phasekit.kube.plugins.module_utils.kube.apply import (
    APPLY_OPTIONS_SPEC, apply_bundle, apply_options)
from ansible_collections.phasekit.kube.plugins.module_utils.kube.discovery import Discovery, ResourceMap, ResourceType
from ansible_collections.phasekit.kube.plugins.module_utils.kube.ownership import (
    HOST_ANNOTATION, PLAN_ANNOTATION, SINCE_ANNOTATION, PlanOwner)
from ansible_collections.phasekit.kube.plugins.module_utils.kube.session import ApiError, Response

CONFIGMAPS = ResourceType("", "v1", "ConfigMap", "configmaps", True)
SECRETS = ResourceType("", "v1", "Secret", "secrets", True)
NAMESPACES = ResourceType("", "v1", "Namespace", "namespaces", False)


def fields_v1(value) -> dict:
    """The managedFields set of an applied object (maps only: enough for ConfigMaps and Secrets)."""
    if not isinstance(value, dict):
        return {}
    return {".": {}, **{f"f:{key}": fields_v1(item) for key, item in value.items()}}


class FakeApi:
    """An API server in memory: server-side apply as create-or-replace of the applied fields, LIST with an
    equality label selector, DELETE; it keeps the log of requests the engine sent."""

    server = "https://fake.invalid"

    def __init__(self):
        self.objects: dict[str, dict] = {}
        self.log: list[tuple] = []
        self.warnings: list[str] = []
        self.requests = 0
        self.now = 1_700_000_000.0
        self.refuse: dict[str, ApiError] = {}  # path -> the answer to an apply there
        self.reused: list[bool] = []  # each LIST's ``reuse``: whether a fleet step's memory could have answered
        self.unserved: set[str] = set()  # collection paths the server does not serve (a LIST there is a 404)

    def _record(self, *request):
        self.log.append(request)
        self.requests += 1

    def tick(self, seconds: float = 60):
        self.now += seconds

    def _stamp(self) -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.now))

    def get(self, path, query=None, accept=None):
        self._record("GET", path)
        if path not in self.objects:
            raise ApiError(404, "NotFound", f"{path} not found", method="GET", path=path)
        return copy.deepcopy(self.objects[path])

    def list(self, path, *, label_selector=None, page_size=500, reuse=False, accept=None):
        self._record("LIST", path, label_selector)
        self.reused.append(reuse)
        if path in self.unserved:
            raise ApiError(404, "NotFound", "the server could not find the requested resource", method="GET",
                           path=path)
        key, _sep, value = (label_selector or "").partition("=")
        items = []
        for object_path, obj in sorted(self.objects.items()):
            if object_path.rsplit("/", 1)[0] != path:
                continue
            if label_selector and (obj["metadata"].get("labels") or {}).get(key) != value:
                continue
            item = copy.deepcopy(obj)
            del item["apiVersion"], item["kind"]  # as a list returns its items
            items.append(item)
        return items

    def apply(self, path, obj, *, field_manager, force=False, dry_run=False, validation="Strict"):
        self._record("APPLY", path)
        if path in self.refuse:
            raise self.refuse[path]
        live = self.objects.get(path)
        applied = copy.deepcopy(obj)
        metadata = applied["metadata"]
        content = {k: v for k, v in applied.items() if k not in ("apiVersion", "kind", "metadata")}
        owned = fields_v1({**content, "metadata": {k: v for k, v in metadata.items()
                                                   if k in ("labels", "annotations")}})
        owned.pop(".")
        if live is None:
            result = applied
            result["metadata"].update(uid=f"uid-{len(self.objects)}", creationTimestamp=self._stamp())
            status = 201
        else:
            result = copy.deepcopy(live)
            result.update(content)
            for part in ("labels", "annotations"):
                if part in metadata:
                    result["metadata"][part] = metadata[part]
            status = 200
        entry = {"manager": field_manager, "operation": "Apply", "apiVersion": obj["apiVersion"],
                 "fieldsType": "FieldsV1", "fieldsV1": owned, "time": self._stamp()}
        previous = [e for e in (live or {}).get("metadata", {}).get("managedFields", [])
                    if e["manager"] == field_manager]
        unchanged = live is not None and {k: v for k, v in result.items() if k != "metadata"} == \
            {k: v for k, v in live.items() if k != "metadata"} and \
            result["metadata"].get("labels") == live["metadata"].get("labels") and \
            result["metadata"].get("annotations") == live["metadata"].get("annotations")
        if unchanged and previous:
            entry["time"] = previous[0]["time"]
        result["metadata"]["managedFields"] = [e for e in (live or {}).get("metadata", {}).get("managedFields", [])
                                               if e["manager"] != field_manager] + [entry]
        if not dry_run:
            self.objects[path] = result
        return Response(status, copy.deepcopy(result), {"Date": email.utils.formatdate(self.now, usegmt=True)})

    def delete(self, path, *, dry_run=False, propagation="Background"):
        self._record("DELETE", path)
        if path not in self.objects:
            raise ApiError(404, "NotFound", f"{path} not found", method="DELETE", path=path)
        if not dry_run:
            del self.objects[path]
        return Response(200, {})


def config_maps(*names, value="v"):
    return [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"key": value}}
            for name in names]


def apply(api, objects, **overrides):
    values = {name: spec.get("default") for name, spec in APPLY_OPTIONS_SPEC.items()}
    values.update({"applyset": "site", "prune": True, "concurrency": 1}, **overrides)
    options = apply_options(values, namespace="apps", check_mode=overrides.get("check_mode", False),
                            diff=overrides.get("diff", False))
    options = dataclasses.replace(options, owner=overrides.get("owner"))  # a plan's apply (None: a task's)
    discovery = Discovery(api, use_disk=False)
    discovery._map = ResourceMap([CONFIGMAPS, SECRETS, NAMESPACES], {}, api.now)  # pylint: disable=protected-access
    api.log.clear()
    report = apply_bundle(api, render_bundle(definition=copy.deepcopy(objects)), options, discovery=discovery)
    api.tick()
    return report


def verbs(api) -> list[str]:
    return [request[0] for request in api.log]


PARENT = "/api/v1/namespaces/apps/secrets/site"
COLLECTION = "/api/v1/namespaces/apps/configmaps"


def test_first_run_of_a_new_set_reads_each_collection_once_to_check_what_it_may_take_over():
    api = FakeApi()
    report = apply(api, config_maps("a", "b", "c", "d"))
    assert report.failure is None and report.counts()["created"] == 4
    assert api.log == [("GET", PARENT), ("LIST", COLLECTION, None), ("APPLY", PARENT)] + [
        ("APPLY", f"{COLLECTION}/{n}") for n in "abcd"]


def test_first_run_of_a_new_set_that_may_take_over_anything_sends_the_objects_without_reading_them():
    api = FakeApi()
    report = apply(api, config_maps("a", "b", "c", "d"), applyset_adopt="all")
    assert report.failure is None and report.counts()["created"] == 4
    assert api.log == [("GET", PARENT), ("APPLY", PARENT)] + [("APPLY", f"{COLLECTION}/{n}") for n in "abcd"]


def owned_by(api, name, *, labels=None, annotations=None):
    api.objects[f"{COLLECTION}/{name}"] = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"key": "v"},
                                           "metadata": {"name": name, "namespace": "apps", "labels": labels or {},
                                                        "annotations": annotations or {}}}


OTHER_SET = {PART_OF_LABEL: "applyset-other-v1"}
AIRSHIP_SITE = {"config.k8s.io/owning-inventory": "site"}       # cli-utils' inventory named like this set
AIRSHIP_OTHER = {"config.k8s.io/owning-inventory": "elsewhere"}


@pytest.mark.parametrize("policy, labels, annotations, refused", [
    ("none", {}, {}, "exists and is in no ApplySet"),
    ("none", OTHER_SET, {}, "belongs to ApplySet applyset-other-v1"),
    ("none", {}, AIRSHIP_SITE, None),
    ("none", {}, AIRSHIP_OTHER, "belongs to cli-utils inventory 'elsewhere'"),
    ("unowned", {}, {}, None),
    ("unowned", OTHER_SET, {}, "belongs to ApplySet applyset-other-v1"),
    ("unowned", {}, AIRSHIP_OTHER, "belongs to cli-utils inventory 'elsewhere'"),
    ("unowned", {}, AIRSHIP_SITE, None),
    ("all", OTHER_SET, {}, None),
    ("all", {}, AIRSHIP_OTHER, None),
    ("all", {}, {}, None),
], ids=["strict-refuses-unowned", "strict-refuses-another-set", "strict-takes-its-own-cli-utils-inventory",
        "strict-refuses-another-cli-utils-inventory", "adopt-takes-unowned", "adopt-refuses-another-set",
        "adopt-refuses-another-cli-utils-inventory", "adopt-takes-its-own-cli-utils-inventory",
        "force-adopt-takes-another-set", "force-adopt-takes-another-cli-utils-inventory", "force-adopt-takes-unowned"])
def test_applyset_adopt_is_cli_utils_inventory_policy(policy, labels, annotations, refused):
    api = FakeApi()
    owned_by(api, "b", labels=labels, annotations=annotations)
    if refused is None:
        report = apply(api, config_maps("a", "b"), applyset_adopt=policy)
        assert report.failure is None
        assert api.objects[f"{COLLECTION}/b"]["metadata"]["labels"][PART_OF_LABEL] == _set_id(api)
        return
    with pytest.raises(PhasekitError) as error:
        apply(api, config_maps("a", "b"), applyset_adopt=policy)
    assert (f"ApplySet secrets/site may not take over 1 existing object(s) (applyset_adopt: {policy}); nothing was "
            f"applied: ConfigMap apps/b {refused}") in str(error.value)
    assert [request[0] for request in api.log] == ["GET", "GET", "GET"] and f"{COLLECTION}/a" not in api.objects


def test_objects_already_in_the_set_are_applied_under_every_policy():
    api = FakeApi()
    apply(api, config_maps("a", "b"))
    for policy in ("none", "unowned", "all"):
        assert apply(api, config_maps("a", "b", value=policy), applyset_adopt=policy).counts()["configured"] == 2


def test_selector_applies_only_the_objects_it_matches_and_prunes_the_rest_of_the_set():
    api = FakeApi()
    apply(api, config_maps("a", "b"))
    objects = config_maps("a", "b")
    objects[1]["metadata"]["labels"] = {"airshipit.org/deploy-k8s": "false"}
    report = apply(api, objects, selector="airshipit.org/deploy-k8s notin (False, false)")
    assert [p.name for p in report.objects] == ["a"] and [p.name for p in report.pruned] == ["b"]


def test_rerun_reads_each_collection_once_and_sends_nothing():
    api = FakeApi()
    apply(api, config_maps("a", "b", "c", "d"))
    report = apply(api, config_maps("a", "b", "c", "d"))
    assert report.counts()["unchanged"] == 4 and not report.changed
    assert api.log == [("GET", PARENT), ("LIST", COLLECTION, None)]


@pytest.mark.parametrize("overrides, may_reuse", [
    ({"applyset": None, "prune": False}, True),
    ({"applyset": None, "prune": False, "wait": True}, False),
    ({"applyset": "site", "prune": False}, False),
    ({"applyset": "site", "prune": True}, False),
], ids=["plain", "wait", "applyset", "prune"])
def test_only_an_apply_that_neither_waits_nor_prunes_may_take_an_earlier_phases_list(overrides, may_reuse):
    api = FakeApi()
    apply(api, config_maps("a", "b", "c"), **overrides)
    api.reused.clear()
    apply(api, config_maps("a", "b", "c"), **overrides)
    assert api.reused and set(api.reused) == {may_reuse}


def test_prune_finds_the_sets_members_in_the_collection_read_before_applying():
    api = FakeApi()
    apply(api, config_maps("a", "b", "c", "d"))
    api.objects[f"{COLLECTION}/other"] = {"apiVersion": "v1", "kind": "ConfigMap",
                                          "metadata": {"name": "other", "namespace": "apps"}}
    report = apply(api, config_maps("a", "b", "c"))
    assert [p.name for p in report.pruned] == ["d"]
    assert verbs(api) == ["GET", "LIST", "DELETE"]
    assert f"{COLLECTION}/d" not in api.objects and f"{COLLECTION}/other" in api.objects


def test_prune_lists_by_label_a_collection_it_did_not_read():
    api = FakeApi()
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "token"}, "stringData": {"t": "x"}}
    apply(api, config_maps("a", "b", "c") + [secret])
    report = apply(api, config_maps("a", "b", "c"))
    assert [p.name for p in report.pruned] == ["token"]
    lists = [request for request in api.log if request[0] == "LIST"]
    assert lists == [("LIST", COLLECTION, None),
                     ("LIST", "/api/v1/namespaces/apps/secrets", f"{PART_OF_LABEL}={_set_id(api)}")]


def test_a_kind_the_server_no_longer_serves_has_no_members_to_prune():
    """The parent still records a kind whose CRD was deleted (or that only a preview's earlier phase makes): its
    collection is a 404, and no object of it can exist: nothing to prune there, not a failure."""
    api = FakeApi()
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "token"}, "stringData": {"t": "x"}}
    apply(api, config_maps("a", "b") + [secret])
    api.unserved.add("/api/v1/namespaces/apps/secrets")
    report = apply(api, config_maps("a", "b"))
    assert report.failure is None and report.pruned == []


def test_new_set_over_existing_objects_says_configured_or_unchanged():
    api = FakeApi()
    apply(api, config_maps("a", "b", "c"), applyset=None, prune=False)  # applied before, outside any set
    api.objects.pop(PARENT, None)
    report = apply(api, config_maps("a", "b", "c"), applyset_adopt="all")
    assert report.counts()["configured"] == 3  # each gains the set's label
    assert "LIST" not in verbs(api)
    api.objects.pop(PARENT)  # the parent deleted by hand: its members are as this run leaves them
    report = apply(api, config_maps("a", "b", "c"), applyset_adopt="all")
    assert report.counts()["unchanged"] == 3 and report.counts()["configured"] == 0


@pytest.mark.parametrize("mode", [{"diff": True}, {"check_mode": True}], ids=["diff", "check"])
def test_new_set_is_read_first_when_the_run_must_show_or_predict_changes(mode):
    api = FakeApi()
    report = apply(api, config_maps("a", "b", "c"), **mode)
    assert report.counts()["created"] == 3
    assert ("LIST", COLLECTION, None) in api.log


def _set_id(api) -> str:
    return api.objects[PARENT]["metadata"]["labels"]["applyset.kubernetes.io/id"]


def test_waves_apply_namespaces_first_and_stop_at_a_failed_wave():
    api = FakeApi()
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}}
    api.refuse["/api/v1/namespaces/apps"] = ApiError(
        403, "Forbidden", 'namespaces "apps" is forbidden: User "ci" cannot patch', method="PATCH")
    report = apply(api, config_maps("a", "b", "c") + [namespace], applyset=None, prune=False)
    assert [request[1] for request in api.log if request[0] == "APPLY"] == ["/api/v1/namespaces/apps"]
    assert [(p.name, p.action) for p in report.objects] == [("a", "skipped"), ("b", "skipped"), ("c", "skipped"),
                                                            ("apps", "failed")]
    assert report.failure == ('apply failed for 1 of 4 objects: Namespace apps (definition item 4): forbidden: '
                              'namespaces "apps" is forbidden: User "ci" cannot patch')
    assert not any(path.startswith(COLLECTION) for path in api.objects)


def test_dry_run_sends_every_write_as_a_dry_run_and_keeps_nothing():
    api = FakeApi()
    apply(api, config_maps("a", "b", "c", "d"))
    before = copy.deepcopy(api.objects)
    report = apply(api, config_maps("a", "b", "c", "e", value="new"), check_mode=True)
    assert report.counts() == {"created": 1, "configured": 3, "unchanged": 0, "pruned": 1, "failed": 0}
    assert api.objects == before


def test_prune_deletes_dependants_before_what_they_live_in():
    api = FakeApi()
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}
    in_team = [dict(one, metadata={"name": one["metadata"]["name"], "namespace": "team"})
               for one in config_maps("t1", "t2", "t3")]
    apply(api, [namespace] + in_team + config_maps("a"))
    report = apply(api, config_maps("a"))
    assert [(p.resource.kind, p.name) for p in report.pruned] == [
        ("ConfigMap", "t1"), ("ConfigMap", "t2"), ("ConfigMap", "t3"), ("Namespace", "team")]
    deleted = [request[1] for request in api.log if request[0] == "DELETE"]
    assert deleted[-1] == "/api/v1/namespaces/team" and len(deleted) == 4
    assert api.objects[PARENT]["metadata"]["annotations"]["applyset.kubernetes.io/contains-group-kinds"] == "ConfigMap"


def test_a_member_that_cannot_be_deleted_fails_the_prune_and_keeps_the_parent_listing_it():
    api = FakeApi()
    apply(api, config_maps("a", "b", "c", "d"))
    recorded = copy.deepcopy(api.objects[PARENT]["metadata"])
    original_delete = api.delete

    def refuse_delete(path, **kwargs):
        if path.endswith("/d"):
            api._record("DELETE", path)  # pylint: disable=protected-access
            raise ApiError(403, "Forbidden", 'configmaps "d" is forbidden', method="DELETE", path=path)
        return original_delete(path, **kwargs)

    api.delete = refuse_delete
    report = apply(api, config_maps("a", "b", "c"))
    assert report.failure == 'prune: ConfigMap apps/d: forbidden: configmaps "d" is forbidden'
    assert report.counts()["failed"] == 1
    assert api.objects[PARENT]["metadata"] == recorded


@pytest.mark.parametrize("size, refused", [
    (3 * 1024 * 1024 - 200, False), (3 * 1024 * 1024 + 1, True), (100 * 1024 * 1024, True),
], ids=["just-under-the-request-limit", "just-over-the-request-limit", "a-100-mib-object"])
def test_an_object_larger_than_one_api_request_is_refused_before_anything_is_sent(size, refused):
    """kube-apiserver reads at most 3 MiB in a write and drops the connection past it (a TLS EOF for the client)."""
    api = FakeApi()
    big = config_maps("big", value="x" * size)
    if not refused:
        assert apply(api, config_maps("small") + big, applyset=None, prune=False).failure is None
        return
    with pytest.raises(PhasekitError) as error:
        apply(api, config_maps("small") + big)
    assert str(error.value).startswith("ConfigMap apps/big (definition item 2): ")
    assert "bytes as JSON, more than the 3145728 bytes (3 MiB) kube-apiserver reads in one request; nothing was " \
           "sent" in str(error.value)
    assert [request for request in api.log if request[0] not in ("GET", "LIST")] == []  # nothing written


# ---------------------------------------------------------------- plans: who owns a set, who applied an object

PLAN_A = PlanOwner("a", "h1", "2026-11-27T20:00:00Z")
PLAN_B = PlanOwner("b", "h2", "2026-11-27T21:00:00Z")


def plan_marker(api, name: str) -> tuple:
    annotations = api.objects[f"{COLLECTION}/{name}"]["metadata"].get("annotations") or {}
    return annotations.get(PLAN_ANNOTATION), annotations.get(HOST_ANNOTATION)


def parent_owner(api) -> tuple:
    annotations = api.objects[PARENT]["metadata"]["annotations"]
    return annotations.get(PLAN_ANNOTATION), annotations.get(HOST_ANNOTATION), annotations.get(SINCE_ANNOTATION)


def test_a_plans_rerun_costs_the_requests_it_cost_before_marking_owners():
    api = FakeApi()
    apply(api, config_maps("a", "b", "c", "d"), owner=PLAN_A)
    assert parent_owner(api) == ("a", "h1", "2026-11-27T20:00:00Z") and plan_marker(api, "a") == ("a", "h1")
    report = apply(api, config_maps("a", "b", "c", "d"), owner=dataclasses.replace(PLAN_A, since="later"))
    assert report.counts()["unchanged"] == 4 and not report.changed and not report.ownership
    assert api.log == [("GET", PARENT), ("LIST", COLLECTION, None)]
    assert parent_owner(api)[2] == "2026-11-27T20:00:00Z"   # since when the set is the plan's: the first run's


def test_another_plans_set_is_refused_before_anything_is_written_or_pruned():
    api = FakeApi()
    apply(api, config_maps("a", "b"), owner=PLAN_A)
    before = copy.deepcopy(api.objects)
    with pytest.raises(PhasekitError) as error:
        apply(api, config_maps("c"), owner=PLAN_B)
    assert str(error.value).startswith("ApplySet secrets/site in namespace apps belongs to plan a (host h1, since "
                                       "2026-11-27T20:00:00Z), not to plan b (host h2); nothing was applied or pruned")
    assert verbs(api) == ["GET"] and api.objects == before


def test_force_adopt_takes_another_plans_set_and_its_objects_over():
    api = FakeApi()
    apply(api, config_maps("a", "b"), owner=PLAN_A)
    report = apply(api, config_maps("a"), owner=PLAN_B, applyset_adopt="all")
    assert parent_owner(api) == ("b", "h2", "2026-11-27T21:00:00Z") and plan_marker(api, "a") == ("b", "h2")
    assert [p.name for p in report.pruned] == ["b"]
    assert report.ownership[0].startswith("ApplySet secrets/site in namespace apps taken over from plan a (host h1")
    assert "ConfigMap apps/a taken over from plan a (host h1) (applyset_adopt: all)" in report.ownership
    with pytest.raises(PhasekitError, match="belongs to plan b"):
        apply(api, config_maps("a", "b"), owner=PLAN_A)


def test_a_set_without_an_owner_is_taken_by_the_first_plan_and_said_once():
    api = FakeApi()
    apply(api, config_maps("a"))                         # a task outside a plan (or an earlier version)
    assert PLAN_ANNOTATION not in api.objects[PARENT]["metadata"]["annotations"]
    report = apply(api, config_maps("a"), owner=PLAN_A)
    assert parent_owner(api)[:2] == ("a", "h1") and report.ownership == [
        "ApplySet secrets/site in namespace apps had no owning plan (made by an earlier version, by kubectl or by a "
        "task outside a plan): it belongs to plan a (host h1) from now on"]
    assert not apply(api, config_maps("a"), owner=PLAN_A).ownership


def test_a_task_outside_a_plan_keeps_the_owners_it_finds():
    api = FakeApi()
    apply(api, config_maps("a"), owner=PLAN_A)
    apply(api, config_maps("a", value="new"))            # standalone phasekit.kube.apply: no check, no marker of its own
    assert parent_owner(api)[:2] == ("a", "h1") and plan_marker(api, "a") == ("a", "h1")


def test_an_object_another_plan_applied_is_reported_as_shared_and_keeps_its_owner():
    api = FakeApi()
    apply(api, config_maps("shared"), owner=PLAN_A, applyset=None, prune=False)
    for _round in range(3):
        report = apply(api, config_maps("shared"), owner=PLAN_B, applyset=None, prune=False)
        assert report.ownership == ["ConfigMap apps/shared is also applied by plan a (host h1); it stays that plan's"]
        assert plan_marker(api, "shared") == ("a", "h1")
        assert report.counts()["unchanged"] == 1 and verbs(api) == ["GET"]   # nothing sent, nothing read twice
        assert not apply(api, config_maps("shared"), owner=PLAN_A, applyset=None, prune=False).ownership


def test_prune_never_deletes_an_object_another_plan_applied_first():
    api = FakeApi()
    apply(api, config_maps("loose"), owner=PLAN_A, applyset=None, prune=False)
    apply(api, config_maps("mine", "loose"), owner=PLAN_B)                 # adopted into b's set (in no set before)
    assert plan_marker(api, "loose") == ("a", "h1")
    report = apply(api, config_maps("mine"), owner=PLAN_B)
    assert report.pruned == [] and f"{COLLECTION}/loose" in api.objects
    assert report.ownership == ["ConfigMap apps/loose not pruned: plan a (host h1) applied it first and keeps it"]


def test_a_plan_phase_without_a_set_leaves_an_object_in_the_set_it_is_in():
    api = FakeApi()
    apply(api, config_maps("x"), owner=PLAN_A)
    set_id = _set_id(api)
    report = apply(api, config_maps("x"), owner=PLAN_A, applyset=None, prune=False)
    assert report.counts()["unchanged"] == 1
    # what it would send carries the label: server-side apply drops a field its manager no longer sends
    assert report.objects[0].body["metadata"]["labels"][PART_OF_LABEL] == set_id


def _namespace_gone(path):
    return ApiError(404, "NotFound", 'namespaces "apps" not found', {"name": "apps", "kind": "namespaces"},
                    "PATCH", path)


@pytest.mark.parametrize("check_mode, refusal, expected", [
    (True, _namespace_gone, ("created", ["absent"], None)),
    (False, _namespace_gone, ("failed", None, 'not found: namespaces "apps" not found')),
    (True, lambda path: ApiError(404, "NotFound", "the server could not find the requested resource", {},
                                 "PATCH", path), ("failed", None, "not found: the server could not find")),
], ids=["a-dry-run-into-a-missing-namespace-says-absent", "a-run-into-a-missing-namespace-fails",
        "a-dry-run-refused-otherwise-fails"])
def test_an_object_whose_namespace_is_gone(check_mode, refusal, expected):
    api = FakeApi()
    api.refuse[f"{COLLECTION}/a"] = refusal(f"{COLLECTION}/a")
    report = apply(api, config_maps("a"), applyset=None, prune=False, check_mode=check_mode)
    (one,) = report.objects
    action, drift, error = expected
    assert one.action == action and one.drift == drift
    assert (error is None and one.error is None) or (error in (one.error or "")), one.error
    assert (report.failure is None) == (action != "failed")


def carried_namespace(name: str, phase: str):
    """A preview's carried state in which ``phase`` would create namespace ``name``."""
    from ansible_collections.phasekit.kube.plugins.module_utils.kube.preview import PlannedState
    carried = PlannedState()
    carried.namespaces[name] = phase
    return carried


@pytest.mark.parametrize("check_mode, sent, action, message", [
    (True, [], "created", "not checked by the server: its namespace apps is created by phase namespaces"),
    (False, ["GET", "APPLY"], "created", None),
], ids=["a-preview-does-not-send-into-a-namespace-an-earlier-phase-creates", "a-real-run-never-uses-the-preview"])
def test_a_namespace_an_earlier_phase_of_the_preview_creates(check_mode, sent, action, message):
    api = FakeApi()
    values = {name: spec.get("default") for name, spec in APPLY_OPTIONS_SPEC.items()}
    options = dataclasses.replace(apply_options({**values, "concurrency": 1}, namespace="apps", check_mode=check_mode),
                                  carried=carried_namespace("apps", "namespaces"))
    discovery = Discovery(api, use_disk=False)
    discovery._map = ResourceMap([CONFIGMAPS, NAMESPACES], {}, api.now)  # pylint: disable=protected-access
    report = apply_bundle(api, render_bundle(definition=config_maps("a")), options, discovery=discovery)
    (one,) = report.objects
    assert verbs(api) == sent and one.action == action and report.failure is None
    assert (one.status.message if check_mode else None) == message
    assert report.not_checked() == ([f"would create ConfigMap apps/a: {message}"] if message else [])


@pytest.mark.parametrize("later_value, action, drift", [
    ("v", "unchanged", None),
    ("changed", "configured", ["data.key"]),
], ids=["the-same-object-again-is-unchanged", "a-later-change-is-configured-not-created-twice"])
def test_an_object_an_earlier_phase_of_the_preview_creates(later_value, action, drift):
    from ansible_collections.phasekit.kube.plugins.module_utils.kube.preview import PlannedState
    api = FakeApi()
    carried = PlannedState()
    values = {name: spec.get("default") for name, spec in APPLY_OPTIONS_SPEC.items()}
    options = dataclasses.replace(apply_options({**values, "concurrency": 1}, namespace="apps", check_mode=True,
                                                diff=True), carried=carried)
    discovery = Discovery(api, use_disk=False)
    discovery._map = ResourceMap([CONFIGMAPS], {}, api.now)  # pylint: disable=protected-access
    first = apply_bundle(api, render_bundle(definition=config_maps("a")), options, discovery=discovery)
    carried.record("first", first.objects)
    later = apply_bundle(api, render_bundle(definition=config_maps("a", value=later_value)), options,
                         discovery=discovery)
    (one,) = later.objects
    assert (first.objects[0].action, one.action, one.drift) == ("created", action, drift)
    assert [d["before_header"] for d in later.diffs] == (["ConfigMap apps/a (after phase first)"] if drift else [])
    assert api.objects == {}
