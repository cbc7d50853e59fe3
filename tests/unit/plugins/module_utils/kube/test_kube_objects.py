"""Planning: types from discovery or the bundle's CRDs, namespaces, waves; bad bundles fail before writing."""

from __future__ import annotations

import pytest

from ansible_collections.phasekit.kube.plugins.module_utils.bundle import render_bundle
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kube.discovery import ResourceMap, ResourceType
from ansible_collections.phasekit.kube.plugins.module_utils.kube.objects import (
    WAVE_CRDS, WAVE_DEFAULT, WAVE_LAST, WAVE_NAMESPACES, WAVE_PREREQUISITES, plan_objects)

SERVED = [ResourceType("", "v1", "ConfigMap", "configmaps", True),
          ResourceType("", "v1", "Namespace", "namespaces", False),
          ResourceType("", "v1", "ServiceAccount", "serviceaccounts", True),
          ResourceType("apps", "v1", "Deployment", "deployments", True),
          ResourceType("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", False),
          ResourceType("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration",
                       "validatingwebhookconfigurations", False)]


class FakeDiscovery:
    def __init__(self, resources=None):
        self.map = ResourceMap(SERVED if resources is None else resources, {}, 0)
        self.refreshes = 0

    def resources(self):
        return self.map

    def refresh(self):
        self.refreshes += 1
        return self.refreshes == 1


CRD = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
       "metadata": {"name": "widgets.example.com"},
       "spec": {"group": "example.com", "scope": "Namespaced", "names": {"kind": "Widget", "plural": "widgets"},
                "versions": [{"name": "v1", "served": True, "storage": True}, {"name": "v0", "served": False}]}}


def obj(api_version, kind, name, namespace=None):
    metadata = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata}


def test_types_namespaces_and_waves():
    bundle = render_bundle(definition=[
        obj("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", "hook"),
        obj("apps/v1", "Deployment", "web"),
        obj("example.com/v1", "Widget", "w", "other"),
        CRD,
        obj("v1", "ServiceAccount", "sa"),
        obj("v1", "Namespace", "site", "ignored"),
    ])
    planned = plan_objects(bundle, FakeDiscovery(), "site")
    by_name = {p.name: p for p in planned}
    assert [(p.name, p.wave) for p in planned] == [
        ("hook", WAVE_LAST), ("web", WAVE_DEFAULT), ("w", WAVE_DEFAULT), ("widgets.example.com", WAVE_CRDS),
        ("sa", WAVE_PREREQUISITES), ("site", WAVE_NAMESPACES)]
    assert by_name["web"].namespace == "site" and by_name["web"].body["metadata"]["namespace"] == "site"
    assert by_name["w"].namespace == "other" and by_name["w"].defined_in_bundle
    assert by_name["site"].namespace is None and "namespace" not in by_name["site"].body["metadata"]
    assert bundle[5].obj["metadata"]["namespace"] == "ignored"  # the bundle itself is not modified


@pytest.mark.parametrize("definition, message", [
    ([obj("example.com/v1", "Gadget", "g")],
     "definition item 1: kind 'Gadget' of apiVersion 'example.com/v1' is not served by the cluster"),
    ([CRD, obj("example.com/v0", "Widget", "w")], "definition item 2: kind 'Widget' of apiVersion 'example.com/v0'"),
    ([obj("v1", "ConfigMap", "a"), obj("v1", "ConfigMap", "a", "default")],
     "definition item 2: ConfigMap default/a is also defined in definition item 1"),
    ([{**CRD, "spec": {"group": "example.com"}}], "CustomResourceDefinition needs spec.group"),
], ids=["unknown-kind", "unserved-crd-version", "duplicate", "incomplete-crd"])
def test_bad_bundles_fail_before_anything_is_written(definition, message):
    with pytest.raises(PhasekitError) as err:
        plan_objects(render_bundle(definition=definition), FakeDiscovery(), "default")
    assert message in str(err.value)


def test_unknown_kind_refreshes_discovery_once_before_failing():
    found = FakeDiscovery()
    with pytest.raises(PhasekitError):
        plan_objects(render_bundle(definition=[obj("x.io/v1", "A", "a"), obj("x.io/v1", "B", "b")]), found, "ns")
    assert found.refreshes == 1


def test_managed_fields_from_kubectl_get_are_dropped():
    source = obj("v1", "ConfigMap", "a")
    source["metadata"]["managedFields"] = [{"manager": "x"}]
    planned = plan_objects(render_bundle(definition=source), FakeDiscovery(), "ns")
    assert "managedFields" not in planned[0].body["metadata"]
