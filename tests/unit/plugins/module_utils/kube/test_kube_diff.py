"""Diffs per object: bookkeeping left out, Secret values never shown (only whether they changed)."""

from __future__ import annotations

import copy
import difflib

import pytest
import yaml

from ansible_collections.phasekit.kube.plugins.module_utils.kube.diff import changed_fields, object_diff, redact

SECRET_VALUE = "c3VwZXJzZWNyZXQ="  # base64 of "supersecret"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def secret(data=None, string_data=None, last_applied=None):
    out = {"apiVersion": "v1", "kind": "Secret",
           "metadata": {"name": "s", "namespace": "ns", "resourceVersion": "5", "uid": "u",
                        "managedFields": [{"manager": "phasekit"}]}}
    if last_applied:
        out["metadata"]["annotations"] = {"kubectl.kubernetes.io/last-applied-configuration": last_applied}
    if data is not None:
        out["data"] = data
    if string_data is not None:
        out["stringData"] = string_data
    return out


@pytest.mark.parametrize("before, after, before_data, after_data", [
    (secret({"a": SECRET_VALUE, "b": "eA=="}), secret({"a": SECRET_VALUE, "b": "eQ=="}),
     {"a": "***", "b": "*** (before)"}, {"a": "***", "b": "*** (after)"}),
    (None, secret({"a": SECRET_VALUE}), None, {"a": "*** (after)"}),
    (secret({"a": SECRET_VALUE}), None, {"a": "*** (before)"}, None),
], ids=["changed-key-marked", "created", "deleted"])
def test_secret_values_are_redacted(before, after, before_data, after_data):
    diff = object_diff(before, after, "Secret ns/s")
    text = diff["before"] + diff["after"]
    assert SECRET_VALUE not in text and "eA==" not in text and "eQ==" not in text
    assert (yaml.safe_load(diff["before"]) or {}).get("data") == before_data
    assert (yaml.safe_load(diff["after"]) or {}).get("data") == after_data


def test_string_data_and_last_applied_are_redacted():
    shown = redact(secret(string_data={"password": "hunter2"}, last_applied='{"stringData":{"password":"hunter2"}}'))
    assert "hunter2" not in yaml.safe_dump(shown)
    assert shown["stringData"] == {"password": "***"}


def test_bookkeeping_is_left_out_and_headers_name_the_object():
    before = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "resourceVersion": "1",
                                                                    "managedFields": []}, "data": {"k": "1"}}
    after = {**before, "data": {"k": "2"}}
    diff = object_diff(before, after, "ConfigMap ns/c", "dry run")
    assert "managedFields" not in diff["before"] and "resourceVersion" not in diff["after"]
    assert diff["before_header"] == "ConfigMap ns/c (live)"
    assert diff["after_header"] == "ConfigMap ns/c (dry run)"
    assert "k: '2'" in diff["after"]


def test_other_kinds_are_not_redacted():
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v"}}
    assert redact(config_map)["data"] == {"k": "v"}


CM = {"apiVersion": "v1", "kind": "ConfigMap",
      "metadata": {"name": "x", "namespace": "n", "resourceVersion": "1", "labels": {"app": "x"}},
      "data": {"a": "1", "b": "2"}}


def edited(**changes):
    obj = copy.deepcopy(CM)
    for path, value in changes.items():
        *parents, last = path.split("__")
        target = obj
        for key in parents:
            target = target.setdefault(key, {})
        if value is None:
            target.pop(last, None)
        else:
            target[last] = value
    return obj


@pytest.mark.parametrize("before, after, fields", [
    (None, CM, ["absent"]),
    (CM, edited(data__a="9"), ["data.a"]),
    (CM, edited(data__c="3", metadata__labels__tier="x"), ["metadata.labels.tier", "data.c"]),
    (CM, edited(metadata__resourceVersion="2", status={"x": 1}), []),
    (CM, edited(data__b=None), ["data.b"]),
    (CM, edited(data={f"k{i}": str(i) for i in range(12)}),
     ["data.a", "data.b"] + [f"data.k{i}" for i in range(6)] + ["and 6 more"]),
], ids=["absent", "a-value", "added-keys", "bookkeeping-and-status-ignored", "removed-key", "capped"])
def test_changed_fields_name_paths_not_values(before, after, fields):
    assert changed_fields(before, after) == fields


def unified(diff: dict) -> list[str]:
    """The changed lines of an object diff, as Ansible and the plan's step show it (+/- lines, no headers)."""
    lines = difflib.unified_diff(diff["before"].splitlines(), diff["after"].splitlines(), lineterm="")
    return [line for line in lines if line[:1] in "+-" and not line.startswith(("+++", "---"))]


LIVE_CM = {"metadata": {"name": "c", "namespace": "n", "uid": "u1", "resourceVersion": "7", "generation": 1,
                        "creationTimestamp": "2026-11-27T00:00:00Z", "managedFields": [{"manager": "phasekit"}],
                        "annotations": {LAST_APPLIED: '{"data":{"k":"1"}}'}},
           "data": {"k": "1", "other": "x"}, "kind": "ConfigMap", "apiVersion": "v1"}
DRY_RUN_CM = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"other": "x", "k": "2"},
              "metadata": {"resourceVersion": "8", "name": "c", "namespace": "n", "uid": "u1", "generation": 2,
                           "annotations": {LAST_APPLIED: '{"data":{"k":"2"}}'}}}
LIVE_DEPLOY = {"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": "d", "namespace": "n", "generation": 3,
                            "annotations": {"deployment.kubernetes.io/revision": "1"}},
               "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "d"}}},
               "status": {"replicas": 1, "observedGeneration": 3}}
DRY_RUN_DEPLOY = {"kind": "Deployment", "apiVersion": "apps/v1",
                  "spec": {"selector": {"matchLabels": {"app": "d"}}, "replicas": 2},
                  "metadata": {"namespace": "n", "name": "d", "generation": 4,
                               "annotations": {"deployment.kubernetes.io/revision": "1"}},
                  "status": {"replicas": 1, "observedGeneration": 3, "updatedReplicas": 1}}


@pytest.mark.parametrize("before, after, lines", [
    (LIVE_CM, DRY_RUN_CM, ["-  k: '1'", "+  k: '2'"]),
    (LIVE_DEPLOY, DRY_RUN_DEPLOY, ["-  replicas: 1", "+  replicas: 2"]),
    (LIVE_CM, copy.deepcopy(LIVE_CM), []),
], ids=["key-order-and-server-fields-ignored", "status-and-generation-ignored", "unchanged-no-lines"])
def test_diff_shows_only_the_changed_lines(before, after, lines):
    assert unified(object_diff(before, after, "X n/x", "dry run")) == lines
