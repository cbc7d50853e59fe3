"""ApplySet (KEP-3659) as kubectl writes it: id, parent reference, parent metadata, prune scopes."""

from __future__ import annotations

import pytest

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kube.applyset import (
    ApplySetState, ParentRef, Tooling, applyset_id, parse_group_kinds, parse_parent_ref)

TOOLING = Tooling("phasekit.kube", "0.1.0")


def test_applyset_id_is_kubectls():
    # the value kubectl v1.34 wrote for `kubectl apply --server-side --applyset=kset -n exp4 --prune`
    assert applyset_id(ParentRef(name="kset", namespace="exp4")) == \
        "applyset-DEKTKezsFiEk0N1aOvxCHoAjX2eriwafirkx7Y4Cq7k-v1"


def test_id_depends_on_every_part():
    base = ParentRef(name="a", namespace="b")
    variants = [ParentRef(name="x", namespace="b"), ParentRef(name="a", namespace="x"),
                ParentRef(name="a", namespace="b", plural="configmaps", kind="ConfigMap")]
    assert len({applyset_id(base), *map(applyset_id, variants)}) == 4


@pytest.mark.parametrize("value, expected", [
    ("web", ("secrets", "", "web")),
    ("configmaps/web", ("configmaps", "", "web")),
    ("sets.example.com/web", ("sets", "example.com", "web")),
], ids=["name-is-a-secret", "resource-slash-name", "resource-dot-group"])
def test_parse_parent_ref(value, expected):
    assert parse_parent_ref(value) == expected


@pytest.mark.parametrize("value", ["", "secrets/", "a/b/c"], ids=["empty", "no-name", "two-slashes"])
def test_parse_parent_ref_rejects(value):
    with pytest.raises(PhasekitError):
        parse_parent_ref(value)


def state(**kwargs):
    return ApplySetState(parent=ParentRef(name="web", namespace="site"), tooling=TOOLING, **kwargs)


def live_parent(s: ApplySetState, tooling="phasekit.kube/0.0.9", kinds="ConfigMap,Deployment.apps", namespaces="ns2",
                id_label=None):
    annotations = {"applyset.kubernetes.io/tooling": tooling, "applyset.kubernetes.io/contains-group-kinds": kinds,
                   "applyset.kubernetes.io/additional-namespaces": namespaces}
    return {"metadata": {"labels": {"applyset.kubernetes.io/id": id_label or s.id},
                         "annotations": {k: v for k, v in annotations.items() if v is not None}}}


def test_read_parent_records_kinds_and_namespaces():
    s = state()
    s.read_parent(live_parent(s))
    assert s.exists
    assert s.current_group_kinds == {("", "ConfigMap"), ("apps", "Deployment")}
    assert s.current_namespaces == {"ns2", "site"}  # the parent's own namespace always counts


@pytest.mark.parametrize("change, message", [
    ({"tooling": "kubectl/v1.34"}, "is managed by tooling 'kubectl'"),
    ({"tooling": None}, "has no applyset.kubernetes.io/tooling annotation"),
    ({"id_label": "applyset-other-v1"}, "expected 'applyset-"),
    ({"kinds": None}, "has no applyset.kubernetes.io/contains-group-kinds annotation"),
], ids=["other-tool", "not-a-parent", "other-id", "no-kinds"])
def test_read_parent_refuses(change, message):
    s = state()
    with pytest.raises(PhasekitError, match=message):
        s.read_parent(live_parent(s, **change))


def test_parent_patch_superset_then_exact():
    s = state()
    s.read_parent(live_parent(s, kinds="ConfigMap,Deployment.apps", namespaces="old"))
    s.add_member("", "ConfigMap", "site")
    s.add_member("example.com", "Widget", "other")
    s.add_member("", "Namespace", None)
    superset = s.parent_patch(superset=True)
    assert superset["apiVersion"] == "v1" and superset["kind"] == "Secret"
    assert superset["metadata"]["namespace"] == "site"
    assert superset["metadata"]["labels"] == {"applyset.kubernetes.io/id": s.id}
    assert superset["metadata"]["annotations"] == {
        "applyset.kubernetes.io/tooling": "phasekit.kube/0.1.0",
        "applyset.kubernetes.io/contains-group-kinds": "ConfigMap,Deployment.apps,Namespace,Widget.example.com",
        "applyset.kubernetes.io/additional-namespaces": "old,other",
    }
    exact = s.parent_patch(superset=False)["metadata"]["annotations"]
    assert exact["applyset.kubernetes.io/contains-group-kinds"] == "ConfigMap,Namespace,Widget.example.com"
    assert exact["applyset.kubernetes.io/additional-namespaces"] == "other"


def test_prune_scopes_cover_recorded_kinds_in_recorded_namespaces():
    s = state()
    s.read_parent(live_parent(s, kinds="ConfigMap,Gone.example.com,Namespace", namespaces="ns2"))
    served = {("", "ConfigMap"): True, ("", "Namespace"): False}
    assert s.prune_scopes(lambda g, k: served.get((g, k))) == [
        ("", "ConfigMap", "ns2"), ("", "ConfigMap", "site"), ("", "Namespace", None)]


def test_member_selector_and_field_manager():
    s = state()
    assert s.member_selector() == f"applyset.kubernetes.io/part-of={s.id}"
    assert s.field_manager == "phasekit.kube-applyset"


@pytest.mark.parametrize("value, expected", [
    ("", []), ("ConfigMap", [("", "ConfigMap")]),
    ("Deployment.apps,Widget.x.example.com", [("apps", "Deployment"), ("x.example.com", "Widget")]),
], ids=["empty-set", "core", "dotted-groups"])
def test_parse_group_kinds(value, expected):
    assert parse_group_kinds(value) == expected


@pytest.mark.parametrize("value", ["kubectl", "kubectl/"], ids=["no-version", "empty-version"])
def test_tooling_needs_name_and_version(value):
    with pytest.raises(PhasekitError, match="NAME/VERSION"):
        Tooling.parse(value)
