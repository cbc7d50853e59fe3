# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""A CRD's openAPIV3Schema as a JSON schema, and custom resources checked against it as the server words it."""

from __future__ import annotations

import json

import pytest

from ansible_collections.phasekit.kube.plugins.module_utils.bundle import render_bundle
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kube.crd_schema import (
    crd_kinds, json_schema, schema_problems)
from ansible_collections.phasekit.kube.plugins.module_utils.kube.discovery import ResourceMap, ResourceType
from ansible_collections.phasekit.kube.plugins.module_utils.kube.objects import CREATED, plan_objects
from ansible_collections.phasekit.kube.plugins.module_utils.kube.preview import PlannedState

CRD_TYPE = ResourceType("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", False)
OBJECT_FIELDS = {"apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"}}


@pytest.mark.parametrize("openapi, expected", [
    ({"type": "integer", "nullable": True}, {"type": ["integer", "null"]}),
    ({"type": "string", "enum": ["a"], "nullable": True}, {"type": ["string", "null"], "enum": ["a", None]}),
    ({"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]},
     {"type": ["integer", "string"], "anyOf": [{"type": "integer"}, {"type": "string"}]}),
    ({"type": "object", "properties": {"a": {"type": "string"}}},
     {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": False}),
    ({"type": "object", "x-kubernetes-preserve-unknown-fields": True, "properties": {"a": {"type": "string"}}},
     {"type": "object", "properties": {"a": {"type": "string"}}}),
    ({"type": "object", "additionalProperties": {"type": "integer"}},
     {"type": "object", "additionalProperties": {"type": "integer"}}),
    ({"type": "array", "items": {"type": "object", "properties": {"n": {"type": "integer"}}},
      "x-kubernetes-list-type": "atomic"},
     {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "integer"}},
                                 "additionalProperties": False}}),
    ({"type": "object", "x-kubernetes-embedded-resource": True, "x-kubernetes-preserve-unknown-fields": True},
     {"type": "object", "properties": OBJECT_FIELDS}),
    ({"type": "string", "description": "kept: jsonschema ignores it", "x-kubernetes-validations": [{"rule": "x"}]},
     {"type": "string", "description": "kept: jsonschema ignores it"}),
], ids=["nullable-adds-null", "nullable-enum-adds-null", "int-or-string-is-both-types",
        "undeclared-fields-refused", "preserve-unknown-fields-keeps-them", "additional-properties-kept",
        "items-converted", "embedded-resource-has-object-fields", "x-kubernetes-keys-dropped"])
def test_openapi_to_json_schema(openapi, expected):
    assert json_schema(openapi) == expected


def test_the_root_accepts_every_object_field_and_leaves_metadata_to_the_server():
    schema = json_schema({"type": "object", "properties": {"metadata": {"type": "object", "properties": {
        "name": {"type": "string", "maxLength": 3}}}}}, root=True)
    assert schema["properties"] == OBJECT_FIELDS and schema["additionalProperties"] is False


def crd(openapi=None, versions=None) -> dict:
    version = {"name": "v1", "served": True, "storage": True}
    if openapi is not None:
        version["schema"] = {"openAPIV3Schema": openapi}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "gadgets.p4.example.com"},
            "spec": {"group": "p4.example.com", "scope": "Namespaced",
                     "names": {"kind": "Gadget", "plural": "gadgets"}, "versions": versions or [version]}}


SCHEMA = {"type": "object", "properties": {"spec": {"type": "object", "required": ["size"], "properties": {
    "size": {"type": "integer", "maximum": 10}, "mode": {"type": "string", "enum": ["a", "b"]},
    "port": {"x-kubernetes-int-or-string": True}, "name": {"type": "string", "pattern": "^g"},
    "hosts": {"type": "array", "items": {"type": "string"}},
    "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}}


def gadget(**spec) -> dict:
    return {"apiVersion": "p4.example.com/v1", "kind": "Gadget", "metadata": {"name": "g", "namespace": "n",
                                                                              "labels": {"any": "label"}},
            "spec": spec}


@pytest.mark.parametrize("spec, problems", [
    ({"size": 3, "mode": "a", "port": "http", "extra": {"free": {"form": 1}}}, []),
    ({"size": "big"}, ['spec.size: Invalid value: "string": spec.size in body must be of type integer: "string"']),
    ({"size": None}, ['spec.size: Invalid value: "null": spec.size in body must be of type integer: "null"']),
    ({"size": 1, "port": 1.5},
     ['spec.port: Invalid value: "number": spec.port in body must be of type integer,string: "number"']),
    ({"size": 1, "colour": "red"}, [".spec.colour: field not declared in schema"]),
    ({}, ["spec.size: Required value"]),
    ({"size": 1, "mode": "c"}, ['spec.mode: Unsupported value: "c": supported values: "a", "b"']),
    ({"size": 30}, ["spec.size: Invalid value: 30: spec.size in body should be less than or equal to 10"]),
    ({"size": 1, "name": "x"}, ["spec.name: Invalid value: \"x\": spec.name in body should match '^g'"]),
    ({"size": 1, "hosts": ["a", 2]},
     ['spec.hosts[1]: Invalid value: "integer": spec.hosts[1] in body must be of type string: "integer"']),
], ids=["conforming", "wrong-type", "null-where-not-nullable", "int-or-string", "unknown-field", "required",
        "enum", "maximum", "pattern", "list-item-path"])
def test_custom_resource_checked_as_the_server_words_it(spec, problems):
    kind = crd_kinds(crd(SCHEMA))[("p4.example.com", "v1", "Gadget")]
    assert schema_problems(gadget(**spec), kind) == problems


def test_a_kind_without_a_schema_is_not_checked():
    kind = crd_kinds(crd())[("p4.example.com", "v1", "Gadget")]
    assert kind.schema is None and schema_problems(gadget(anything="goes"), kind) == []


def test_only_served_versions_are_kinds():
    kinds = crd_kinds(crd(versions=[{"name": "v1", "served": True}, {"name": "v0", "served": False}]))
    assert list(kinds) == [("p4.example.com", "v1", "Gadget")]


def test_a_crd_without_its_names_is_refused():
    with pytest.raises(PhasekitError, match="spec.group, spec.names.kind and spec.names.plural"):
        crd_kinds({"spec": {"group": "p4.example.com"}})


class Discovery:
    def __init__(self, served=()):
        self.map = ResourceMap(list(served), {}, 0)

    def resources(self):
        return self.map

    def refresh(self):
        return False


class Created:
    """A dry run's outcome of one object, as ``PlannedState.record`` reads it."""

    def __init__(self, planned, action=CREATED):
        self.__dict__.update(target=planned.target, resource=planned.resource, name=planned.name,
                             body=planned.body, action=action, result=None)


def test_a_kind_an_earlier_phase_brings_plans_with_its_phase_and_schema():
    carried = PlannedState()
    crds = plan_objects(render_bundle(definition=[crd(SCHEMA)]), Discovery([CRD_TYPE]), "default")
    carried.record("crds", [Created(one) for one in crds])
    [planned] = plan_objects(render_bundle(definition=[gadget(size=1)]), Discovery(), "n", carried=carried)
    assert (planned.kind_from_phase, planned.defined_in_bundle, planned.resource.plural) == ("crds", True, "gadgets")
    assert planned.custom_kind.schema is not None


def test_the_carried_state_crosses_a_step_as_json():
    """A plan with tasks phases previews in steps: the next step gets the state as JSON and plans as the first did."""
    carried = PlannedState()
    crds = plan_objects(render_bundle(definition=[crd(SCHEMA), {"apiVersion": "v1", "kind": "Namespace",
                                                                "metadata": {"name": "n"}}]),
                        Discovery([CRD_TYPE, ResourceType("", "v1", "Namespace", "namespaces", False)]), "default")
    carried.record("crds", [Created(one) for one in crds])
    again = PlannedState.from_dict(json.loads(json.dumps(carried.to_dict())))
    assert again.namespace_phase("n") == "crds" and again.objects.keys() == carried.objects.keys()
    [planned] = plan_objects(render_bundle(definition=[gadget(size=1)]), Discovery(), "n", carried=again)
    assert (planned.kind_from_phase, planned.resource.plural) == ("crds", "gadgets")
    assert planned.custom_kind.schema is not None


@pytest.mark.parametrize("data", [{"objects": [["only-a-key"]]}, {"crds": [["crds", {"spec": {}}]]},
                                  {"namespaces": ["not", "a", "mapping"]}])
def test_a_carried_state_an_earlier_step_did_not_give_is_refused(data):
    with pytest.raises(PhasekitError, match="carried: not a preview's state from an earlier step"):
        PlannedState.from_dict(data)


def test_without_the_carried_state_the_kind_is_still_unknown():
    with pytest.raises(PhasekitError, match="no CustomResourceDefinition in this bundle defines it"):
        plan_objects(render_bundle(definition=[gadget(size=1)]), Discovery(), "n")


def test_without_jsonschema_nothing_is_refused_and_the_preview_says_it_was_not_checked(monkeypatch):
    from ansible_collections.phasekit.kube.plugins.module_utils.kube import crd_schema
    monkeypatch.setattr(crd_schema, "jsonschema", None)
    kind = crd_kinds(crd(SCHEMA))[("p4.example.com", "v1", "Gadget")]
    assert not crd_schema.validator_available() and schema_problems(gadget(size="big"), kind) == []
