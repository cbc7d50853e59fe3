# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""A CustomResourceDefinition's kinds and their schemas, checked on the controller (a preview of a plan).

When a CRD is not on the cluster yet (a bundle or an earlier phase creates it), the server cannot dry-run its custom
resources. The CRD's ``openAPIV3Schema`` is then turned into a JSON schema (draft 4, the dialect OpenAPI v3.0
extends) and checked with ``jsonschema``; problems are worded as kube-apiserver words them
(``spec.size: Invalid value: "string": spec.size in body must be of type integer: "string"``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kube.discovery import ResourceType

try:
    import jsonschema
except ImportError:  # the preview then says the schema was not checked
    jsonschema = None

INT_OR_STRING = "x-kubernetes-int-or-string"
PRESERVE_UNKNOWN = "x-kubernetes-preserve-unknown-fields"
EMBEDDED_RESOURCE = "x-kubernetes-embedded-resource"
# every object carries these; a CRD's schema need not declare them (the server checks metadata itself)
OBJECT_FIELDS = {"apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"}}
SUBSCHEMA_LISTS = ("allOf", "anyOf", "oneOf")
JSON_TYPE_NAMES = {str: "string", bool: "boolean", int: "integer", float: "number", list: "array", dict: "object",
                   type(None): "null"}
MAX_PROBLEMS = 10
NO_VALIDATOR = "its schema was not checked either: the Python package jsonschema is not installed"


@dataclass(frozen=True)
class CustomKind:
    """One served version of a CRD's kind: its resource type and its schema as a JSON schema (None: none given)."""

    resource: ResourceType
    schema: dict | None


def crd_kinds(crd: dict) -> dict:
    """(group, version, kind) -> ``CustomKind`` for each served version of ``crd`` (a CRD object)."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    if not (spec.get("group") and names.get("kind") and names.get("plural")):
        raise PhasekitError("CustomResourceDefinition needs spec.group, spec.names.kind and spec.names.plural")
    shared = ((spec.get("validation") or {}).get("openAPIV3Schema"))  # apiextensions v1beta1: one for all versions
    kinds = {}
    for version in spec.get("versions") or []:
        if not (isinstance(version, dict) and version.get("name") and version.get("served", True)):
            continue
        openapi = (version.get("schema") or {}).get("openAPIV3Schema") or shared
        resource = ResourceType(spec["group"], version["name"], names["kind"], names["plural"],
                                spec.get("scope") == "Namespaced")
        kinds[(spec["group"], version["name"], names["kind"])] = CustomKind(
            resource, json_schema(openapi, root=True) if isinstance(openapi, dict) else None)
    return kinds


def json_schema(node: dict, root: bool = False) -> dict:
    """An OpenAPI v3 structural schema as a JSON schema (draft 4): ``nullable`` and ``x-kubernetes-int-or-string``
    become types; an object without ``x-kubernetes-preserve-unknown-fields`` refuses fields it does not declare
    (the server's strict field validation); the ``x-kubernetes-*`` keys themselves are dropped."""
    out = {key: value for key, value in node.items()
           if not key.startswith("x-kubernetes-") and key not in ("nullable", "properties", "items", "not",
                                                                  "additionalProperties", *SUBSCHEMA_LISTS)}
    properties = {name: json_schema(value) for name, value in (node.get("properties") or {}).items()
                  if isinstance(value, dict)}
    if root or node.get(EMBEDDED_RESOURCE):
        properties = {**OBJECT_FIELDS, **properties}
    if root:
        properties["metadata"] = OBJECT_FIELDS["metadata"]
    if properties:
        out["properties"] = properties
    items = node.get("items")
    if isinstance(items, dict):
        out["items"] = json_schema(items)
    additional = node.get("additionalProperties")
    if isinstance(additional, dict):
        out["additionalProperties"] = json_schema(additional)
    elif isinstance(additional, bool):
        out["additionalProperties"] = additional
    elif (properties or node.get("type") == "object") and not node.get(PRESERVE_UNKNOWN):
        out["additionalProperties"] = False
    for key in SUBSCHEMA_LISTS:
        if isinstance(node.get(key), list):
            out[key] = [json_schema(one) for one in node[key] if isinstance(one, dict)]
    if isinstance(node.get("not"), dict):
        out["not"] = json_schema(node["not"])
    if node.get(INT_OR_STRING):
        out["type"] = ["integer", "string"]
    if node.get("nullable") and "type" in out:
        out["type"] = [*([out["type"]] if isinstance(out["type"], str) else out["type"]), "null"]
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
    return out


def validator_available() -> bool:
    """Whether custom resources can be checked here (the ``jsonschema`` package is installed)."""
    return jsonschema is not None


def schema_problems(obj: dict, kind: CustomKind) -> list[str]:
    """What the server would refuse in ``obj`` by its kind's schema, one line per field, as the server words it;
    empty when it conforms or the kind has no schema."""
    if kind.schema is None or jsonschema is None:
        return []
    validator = jsonschema.Draft4Validator(kind.schema)
    errors = sorted(validator.iter_errors(obj), key=lambda error: [str(part) for part in error.absolute_path])
    problems = []
    for error in errors:
        problems.extend(_server_words(error))
    return problems[:MAX_PROBLEMS] + ([f"and {len(problems) - MAX_PROBLEMS} more"]
                                      if len(problems) > MAX_PROBLEMS else [])


def _server_words(error) -> list[str]:
    path = _dotted(error.absolute_path)
    value = error.instance
    if error.validator == "additionalProperties" and isinstance(value, dict):
        declared = set((error.schema.get("properties") or {}))
        return [f".{_dotted([*error.absolute_path, name])}: field not declared in schema"
                for name in sorted(set(value) - declared)]
    if error.validator == "required":
        missing = [name for name in error.validator_value if name not in (value or {})]
        return [f"{_dotted([*error.absolute_path, name])}: Required value" for name in missing]
    if error.validator == "enum":
        supported = ", ".join(json.dumps(one) for one in error.validator_value)
        return [f"{path}: Unsupported value: {json.dumps(value)}: supported values: {supported}"]
    if error.validator == "type":
        wanted = error.validator_value
        wanted = ",".join(wanted) if isinstance(wanted, list) else wanted
        got = json.dumps(JSON_TYPE_NAMES.get(type(value), type(value).__name__))
        return [f"{path}: Invalid value: {got}: {path} in body must be of type {wanted}: {got}"]
    return [f"{path}: Invalid value: {_shown(value)}: {path} in body {_should(error)}"]


def _should(error) -> str:
    """kube-openapi's wording of the common value rules; jsonschema's own message for the rest."""
    rule, limit = error.validator, error.validator_value
    words = {"maximum": f"should be less than or equal to {limit}", "minimum": f"should be greater than or equal to {limit}",
             "maxLength": f"should be at most {limit} chars long", "minLength": f"should be at least {limit} chars long",
             "pattern": f"should match '{limit}'", "maxItems": f"should have at most {limit} items",
             "minItems": f"should have at least {limit} items"}
    return words.get(rule, error.message)


def _shown(value) -> str:
    if isinstance(value, (dict, list)):
        return json.dumps(JSON_TYPE_NAMES[type(value)])
    return json.dumps(value)


def _dotted(parts) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "<root>"
