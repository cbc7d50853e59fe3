"""``state: absent`` against the in-memory API server, and its option rules: what exists goes (missing is ok),
a dry run deletes nothing, kubectl's propagation and wait, another plan's or set's object refused before anything
is deleted, the run's own ApplySet parent shrunk to what still has members."""

from __future__ import annotations

import copy
import dataclasses

import pytest
from test_kube_apply_run import (  # pylint: disable=import-error
    COLLECTION, CONFIGMAPS, NAMESPACES, PARENT, PLAN_A, PLAN_B, SECRETS, FakeApi, apply, config_maps)

from ansible_collections.phasekit.kube.plugins.module_utils.bundle import render_bundle
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kube.absent import delete_bundle, refusal
from ansible_collections.phasekit.kube.plugins.module_utils.kube.applyset import GROUP_KINDS_ANNOTATION, PART_OF_LABEL
from ansible_collections.phasekit.kube.plugins.module_utils.kube.apply import APPLY_OPTIONS_SPEC, apply_options
from ansible_collections.phasekit.kube.plugins.module_utils.kube.discovery import Discovery, ResourceMap
from ansible_collections.phasekit.kube.plugins.module_utils.kube.ownership import PlanOwner

SECRET_PATH = "/api/v1/namespaces/apps/secrets/token"


def args(**overrides) -> dict:
    values = {name: spec.get("default") for name, spec in APPLY_OPTIONS_SPEC.items()}
    return {**values, "concurrency": 1, **overrides}


def delete(api, objects, *, owner=None, check_mode=False, diff=False, **overrides):
    """One state: absent run of ``objects`` in namespace apps (no clock: waits see objects gone at once)."""
    options = apply_options(args(state="absent", **overrides), namespace="apps", check_mode=check_mode, diff=diff)
    options = dataclasses.replace(options, owner=owner)
    discovery = Discovery(api, use_disk=False)
    discovery._map = ResourceMap([CONFIGMAPS, SECRETS, NAMESPACES], {}, api.now)  # pylint: disable=protected-access
    api.log.clear()
    return delete_bundle(api, render_bundle(definition=copy.deepcopy(objects)), options, discovery=discovery)


def token() -> dict:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "token"}, "stringData": {"t": "s3cr3t-tok"}}


def deletes(api) -> list:
    return [request[1] for request in api.log if request[0] == "DELETE"]


# ---------------------------------------------------------------- options

@pytest.mark.parametrize("overrides, message", [
    ({"state": "gone"}, "state must be one of present, absent, got 'gone'"),
    ({"state": "absent", "prune": True, "applyset": "site"}, "prune deletes an ApplySet's members that left the bundle"),
    ({"state": "absent", "force_conflicts": True}, "force_conflicts applies to state: present only"),
    ({"state": "absent", "wait": {"timeout": 5, "kinds": {"Job": "none"}}},
     "wait: kinds do not apply to state: absent (it waits until each object is gone); expected only timeout"),
    ({"cascade": "foreground"}, "cascade applies to state: absent only"),
    ({"state": "absent", "applyset_adopt": "none"}, "applyset_adopt: none needs an applyset"),
], ids=["state-is-present-or-absent", "prune-is-for-present", "force-conflicts-is-for-present",
        "absent-waits-only-with-a-timeout", "cascade-is-for-absent", "adopt-none-needs-a-set-when-deleting-too"])
def test_state_option_errors(overrides, message):
    with pytest.raises(PhasekitError) as err:
        apply_options(args(**overrides), namespace="default")
    assert message in str(err.value)


@pytest.mark.parametrize("overrides, timeout, cascade", [
    ({}, None, "background"),
    ({"state": "absent"}, 300, "background"),
    ({"state": "absent", "wait": False}, None, "background"),
    ({"state": "absent", "wait": {"timeout": 9}}, 9, "background"),
    ({"state": "absent", "cascade": "foreground"}, 300, "foreground"),
    ({"state": "absent", "applyset_adopt": "all"}, 300, "background"),
], ids=["present-waits-only-when-told", "absent-waits-as-kubectl-delete", "absent-told-not-to-wait",
        "absent-wait-timeout", "absent-cascade-foreground", "absent-adopt-all-needs-no-set"])
def test_state_option_defaults(overrides, timeout, cascade):
    options = apply_options(args(**overrides), namespace="default")
    assert (options.wait.timeout if options.wait else None, options.cascade) == (timeout, cascade)


# ---------------------------------------------------------------- who may delete what

def live(labels=None, owner: PlanOwner | None = None) -> dict:
    return {"metadata": {"labels": labels or {}, "annotations": owner.annotations(with_since=False) if owner else {}}}


@pytest.mark.parametrize("obj, us, set_id, refused", [
    (live(), PLAN_A, None, ""),
    (live(owner=PLAN_A), dataclasses.replace(PLAN_A, host="h9"), None, ""),
    (live(owner=PLAN_B), PLAN_A, None, "belongs to plan b (host h2), which applied it first"),
    (live(owner=PLAN_A), None, None, "belongs to plan a (host h1), which applied it first"),
    (live(owner=PLAN_B), dataclasses.replace(PLAN_A, fellows=frozenset({"b"})), None, ""),
    (live({PART_OF_LABEL: "applyset-other-v1"}, owner=PLAN_A), PLAN_A, "applyset-mine-v1", ""),
    (live({PART_OF_LABEL: "applyset-other-v1"}), PLAN_A, None, "belongs to ApplySet applyset-other-v1"),
    (live({PART_OF_LABEL: "applyset-other-v1"}), None, "applyset-mine-v1", "belongs to ApplySet applyset-other-v1"),
    (live({PART_OF_LABEL: "applyset-mine-v1"}), None, "applyset-mine-v1", ""),
], ids=["unmarked-object-in-no-set", "the-plans-own-from-another-host", "another-plans-object",
        "a-plans-object-outside-a-plan", "a-fellow-plans-object", "the-plans-own-in-another-of-its-sets",
        "another-set-unmarked", "another-set-outside-a-plan", "the-runs-own-set"])
def test_which_objects_a_deletion_refuses(obj, us, set_id, refused):
    said = refusal(obj, us, set_id, "site")
    assert said.startswith(refused) if refused else said == ""


# ---------------------------------------------------------------- runs

def test_what_exists_goes_what_is_missing_is_absent_and_a_rerun_changes_nothing():
    api = FakeApi()
    apply(api, config_maps("a", "b"), applyset=None, prune=False)
    report = delete(api, config_maps("a", "never-made"))
    assert report.changed and report.counts() == {"deleted": 1, "absent": 1, "failed": 0}
    assert report.message == "deleted ConfigMap apps/a" and report.absent == ["ConfigMap apps/never-made"]
    assert f"{COLLECTION}/a" not in api.objects and f"{COLLECTION}/b" in api.objects
    again = delete(api, config_maps("a", "never-made"))
    assert not again.changed and again.message == "nothing to delete: every object is absent"
    assert deletes(api) == []


def test_a_dry_run_deletes_nothing_and_says_what_it_would_with_the_state_before():
    api = FakeApi()
    apply(api, config_maps("a") + [token()], applyset=None, prune=False)
    report = delete(api, config_maps("a") + [token()], check_mode=True, diff=True)
    assert report.changed and report.message == "would delete ConfigMap apps/a, Secret apps/token"
    assert report.drift() == ["ConfigMap apps/a: exists, would be deleted (state: absent)",
                              "Secret apps/token: exists, would be deleted (state: absent)"]
    assert f"{COLLECTION}/a" in api.objects and SECRET_PATH in api.objects
    assert [one["after"] for one in report.diffs] == ["", ""] and "s3cr3t-tok" not in str(report.diffs)
    assert "ConfigMap apps/a (live)" in report.diffs[0]["before_header"]


@pytest.mark.parametrize("overrides, propagation, waited", [
    ({}, "Background", True),
    ({"cascade": "foreground"}, "Foreground", True),
    ({"cascade": "orphan", "wait": False}, "Orphan", False),
], ids=["kubectls-default-background-and-wait", "foreground", "orphan-without-waiting"])
def test_propagation_and_waiting_follow_kubectl_delete(overrides, propagation, waited):
    api = FakeApi()
    apply(api, config_maps("a"), applyset=None, prune=False)
    sent = []
    real_delete = api.delete

    def recording(path, *, dry_run=False, propagation="Background"):
        sent.append(propagation)
        return real_delete(path, dry_run=dry_run, propagation=propagation)

    api.delete = recording
    report = delete(api, config_maps("a"), **overrides)
    assert report.failure is None and sent == [propagation]
    after = api.log[[request[0] for request in api.log].index("DELETE") + 1:]
    assert (("GET", f"{COLLECTION}/a") in after) == waited   # waiting reads the object until it is gone


def test_another_plans_object_is_refused_and_nothing_is_deleted_unless_adopt_all():
    api = FakeApi()
    apply(api, config_maps("theirs"), applyset=None, prune=False, owner=PLAN_B)
    apply(api, config_maps("mine"), applyset=None, prune=False, owner=PLAN_A)
    report = delete(api, config_maps("mine", "theirs"), owner=PLAN_A)
    assert report.failure == ("not deleted, nothing was: ConfigMap apps/theirs belongs to plan b (host h2), which "
                              "applied it first; to delete them anyway, set applyset_adopt: all")
    assert deletes(api) == [] and not report.changed
    forced = delete(api, config_maps("mine", "theirs"), owner=PLAN_A, applyset_adopt="all")
    assert forced.failure is None and sorted(deletes(api)) == [f"{COLLECTION}/mine", f"{COLLECTION}/theirs"]


def test_another_plans_set_is_refused_before_anything_is_read_or_deleted():
    api = FakeApi()
    apply(api, config_maps("a"), owner=PLAN_B)
    with pytest.raises(PhasekitError, match="ApplySet .* belongs to plan b"):
        delete(api, config_maps("a"), owner=PLAN_A, applyset="site")
    assert deletes(api) == []


def test_the_runs_own_set_then_records_only_the_kinds_that_still_have_members():
    api = FakeApi()
    apply(api, config_maps("a", "b") + [token()], owner=PLAN_A, prune=False)
    assert api.objects[PARENT]["metadata"]["annotations"][GROUP_KINDS_ANNOTATION] == "ConfigMap,Secret"
    report = delete(api, config_maps("b") + [token()], owner=PLAN_A, applyset="site")
    assert report.failure is None and report.counts()["deleted"] == 2
    assert api.objects[PARENT]["metadata"]["annotations"][GROUP_KINDS_ANNOTATION] == "ConfigMap"
    assert report.applyset["name"] == "site"


def test_a_dry_run_leaves_the_sets_parent_as_it_is():
    api = FakeApi()
    apply(api, config_maps("a") + [token()], owner=PLAN_A, prune=False)
    delete(api, [token()], owner=PLAN_A, applyset="site", check_mode=True)
    assert api.objects[PARENT]["metadata"]["annotations"][GROUP_KINDS_ANNOTATION] == "ConfigMap,Secret"
    assert SECRET_PATH in api.objects


def test_a_kind_the_server_does_not_serve_has_nothing_left():
    api = FakeApi()
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    report = delete(api, [widget] + config_maps("never-made"))
    assert report.failure is None and not report.changed
    assert report.message == ("nothing to delete: every object is absent; not served by the API server, so none "
                              "exists: Widget (example.com/v1)")
