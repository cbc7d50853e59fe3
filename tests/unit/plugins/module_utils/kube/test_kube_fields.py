"""already_applied: a re-apply is skipped only when it would change nothing; in doubt, apply."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.phasekit.kube.plugins.module_utils.kube.fields import already_applied

DESIRED = {
    "apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "ns", "labels": {"app": "web"}},
    "spec": {
        "replicas": 1,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {
            "containers": [{"name": "web", "image": "nginx:1.25", "args": ["a", "b"],
                            "ports": [{"containerPort": 80}]}],
            "tolerations": [{"key": "x", "operator": "Exists"}],
            "finalizers-like": ["one", "two"]}},
    },
}
# what the API server records for DESIRED applied by manager "phasekit" (shape taken from kube-apiserver v1.34)
FIELDS = {
    "f:metadata": {"f:labels": {"f:app": {}}},
    "f:spec": {
        "f:replicas": {}, "f:selector": {},
        "f:template": {"f:metadata": {"f:labels": {"f:app": {}}}, "f:spec": {
            "f:containers": {'k:{"name":"web"}': {
                ".": {}, "f:args": {}, "f:image": {}, "f:name": {},
                "f:ports": {'k:{"containerPort":80,"protocol":"TCP"}': {".": {}, "f:containerPort": {}}}}},
            "f:tolerations": {},
            "f:finalizers-like": {'v:"one"': {}, 'v:"two"': {}}}},
    },
}


def live_from(desired, fields=None, manager="phasekit", api_version="apps/v1"):
    live = copy.deepcopy(desired)
    live["metadata"].update(uid="u", resourceVersion="7", managedFields=[
        {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "apps/v1", "fieldsV1": {}},
        {"manager": manager, "operation": "Apply", "apiVersion": api_version, "fieldsType": "FieldsV1",
         "fieldsV1": copy.deepcopy(FIELDS if fields is None else fields)}])
    container = live["spec"]["template"]["spec"]["containers"][0]
    container["imagePullPolicy"] = "IfNotPresent"            # server defaults inside owned items are fine
    container["ports"][0]["protocol"] = "TCP"
    live["spec"]["template"]["spec"]["containers"].append({"name": "sidecar", "image": "envoy"})  # another owner's
    live["status"] = {"replicas": 1}
    return live


def changed(path_value):
    desired = copy.deepcopy(DESIRED)
    path, value = path_value
    target = desired
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return desired


SPEC = ("spec", "template", "spec")


@pytest.mark.parametrize("desired, live, expected", [
    (DESIRED, live_from(DESIRED), True),
    (changed((("spec", "replicas"), 2)), live_from(DESIRED), False),
    (changed((("metadata", "labels"), {"app": "web", "tier": "x"})), live_from(DESIRED), False),
    (changed((SPEC + ("tolerations",), [])), live_from(DESIRED), False),
    (changed((SPEC + ("finalizers-like",), ["one"])), live_from(DESIRED), False),
    (changed((SPEC + ("containers",), [{"name": "web", "image": "nginx:1.25", "ports": [{"containerPort": 80}],
                                        "args": ["a", "b"]}, {"name": "new", "image": "x"}])), live_from(DESIRED),
     False),
    (changed((("spec", "replicas"), KeyError)), live_from(DESIRED), False),
    (changed((("metadata", "creationTimestamp"), None)), live_from(DESIRED), True),
    (DESIRED, live_from(DESIRED, manager="kubectl"), False),
    (DESIRED, live_from(DESIRED, api_version="apps/v1beta1"), False),
    (DESIRED, live_from(DESIRED, fields={**FIELDS, "f:spec": {**FIELDS["f:spec"], "f:paused": {}}}), False),
    (DESIRED, live_from(changed((("spec", "replicas"), 3))), False),
    (changed((("spec", "replicas"), "1")), live_from(DESIRED), False),
    (DESIRED, live_from(DESIRED, fields={**FIELDS, "f:spec": {**FIELDS["f:spec"], "f:template": {"i:0": {}}}}),
     False),
], ids=["same", "value-changed", "label-added", "atomic-list-emptied", "set-item-removed",
        "keyed-item-added", "field-removed", "null-is-unset", "other-manager", "other-api-version",
        "we-own-more", "live-drifted", "string-vs-number", "unknown-field-form"])
def test_already_applied(desired, live, expected):
    assert already_applied(desired, live, "phasekit") is expected


def test_atomic_list_is_compared_whole():
    live = live_from(DESIRED)
    live["spec"]["template"]["spec"]["tolerations"][0]["effect"] = "NoSchedule"
    assert already_applied(DESIRED, live, "phasekit") is False


@pytest.mark.parametrize("managed, expected", [
    ([{"manager": "before-first-apply", "operation": "Update", "apiVersion": "v1", "fieldsV1": {}}], True),
    ([{"manager": "phasekit", "operation": "Apply", "apiVersion": "v1", "fieldsV1": {"f:metadata": {
        "f:labels": {"f:a": {}}}}}], False),
], ids=["nothing-owned-nothing-desired", "owned-fields-to-release"])
def test_object_with_only_a_name(managed, expected):
    desired = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n"}}
    live = {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "n", "labels": {"a": "1"}, "managedFields": managed}}
    assert already_applied(desired, live, "phasekit") is expected
