# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Decode one kubeconfig document with the rules kubectl applies.

kubectl decodes JSON into Go structs: unknown fields are ignored, field names
are case-sensitive, a value of the wrong type fails the file, ``null`` means
"unset", byte fields are base64, and the named lists (clusters, users,
contexts, extensions) must not repeat a name. The schema below is the v1
``Config`` type; decoding produces entries already in the shape kubectl prints
(empty optional fields dropped, exec ``interactiveMode`` defaulted).
"""

from __future__ import annotations

import base64
import binascii

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.yaml_io import kind_of
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.kubectl_yaml import load_kubectl_yaml
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.kubectl_yaml import to_json_compatible
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.model import ENTRY_BODY
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.model import SECTIONS
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.model import Kubeconfig
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.model import Origin
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.model import named_extensions_to_v1

STRING = "string"
BOOLEAN = "boolean"
BASE64 = "base64"
EXTENSIONS = "extensions"


class ListOf:
    def __init__(self, item):
        self.item = item


class MapOf:
    def __init__(self, item):
        self.item = item


class Optional:
    """A pointer to a struct: absent or null stays absent."""

    def __init__(self, struct):
        self.struct = struct


class Struct:
    """Fields as (JSON key, kind, always printed); ``defaults`` runs after decoding, like Go's defaulters."""

    def __init__(self, *fields, defaults=None):
        self.fields = fields
        self.defaults = defaults


def _default_exec(decoded: dict) -> None:
    # client-go defaults interactiveMode for the beta/alpha exec API only
    if not decoded.get("interactiveMode") and decoded.get("apiVersion") in (
            "client.authentication.k8s.io/v1beta1", "client.authentication.k8s.io/v1alpha1"):
        decoded["interactiveMode"] = "IfAvailable"


EXEC_ENV_VAR = Struct(("name", STRING, True), ("value", STRING, True))
EXEC = Struct(
    ("command", STRING, True),
    ("args", ListOf(STRING), True),
    ("env", ListOf(EXEC_ENV_VAR), True),
    ("apiVersion", STRING, False),
    ("installHint", STRING, False),
    ("provideClusterInfo", BOOLEAN, True),
    ("interactiveMode", STRING, False),
    defaults=_default_exec,
)
AUTH_PROVIDER = Struct(("name", STRING, True), ("config", MapOf(STRING), True))
CLUSTER = Struct(
    ("server", STRING, True),
    ("tls-server-name", STRING, False),
    ("insecure-skip-tls-verify", BOOLEAN, False),
    ("certificate-authority", STRING, False),
    ("certificate-authority-data", BASE64, False),
    ("proxy-url", STRING, False),
    ("disable-compression", BOOLEAN, False),
    ("extensions", EXTENSIONS, False),
)
USER = Struct(
    ("client-certificate", STRING, False),
    ("client-certificate-data", BASE64, False),
    ("client-key", STRING, False),
    ("client-key-data", BASE64, False),
    ("token", STRING, False),
    ("tokenFile", STRING, False),
    ("as", STRING, False),
    ("as-uid", STRING, False),
    ("as-groups", ListOf(STRING), False),
    ("as-user-extra", MapOf(ListOf(STRING)), False),
    ("username", STRING, False),
    ("password", STRING, False),
    ("auth-provider", Optional(AUTH_PROVIDER), False),
    ("exec", Optional(EXEC), False),
    ("extensions", EXTENSIONS, False),
)
CONTEXT = Struct(
    ("cluster", STRING, True),
    ("user", STRING, True),
    ("namespace", STRING, False),
    ("extensions", EXTENSIONS, False),
)
ENTRY_SCHEMA = {"clusters": CLUSTER, "users": USER, "contexts": CONTEXT}


def decode_kubeconfig_bytes(data: bytes | str, origin: Origin) -> Kubeconfig:
    """Parse and decode one kubeconfig file's content (empty content is an empty kubeconfig)."""
    if not data:
        return Kubeconfig()
    return decode_kubeconfig(load_kubectl_yaml(data), origin)


def decode_kubeconfig_data(document, origin: Origin) -> Kubeconfig:
    """Decode already-parsed data (an inline dict), after the same YAML-to-JSON step."""
    return decode_kubeconfig(to_json_compatible(document, ""), origin)


def decode_kubeconfig(document, origin: Origin) -> Kubeconfig:
    """Decode JSON-compatible data into a Kubeconfig whose entries all come from ``origin``."""
    if document is None:
        return Kubeconfig()
    if not isinstance(document, dict):
        raise PhasekitError(f"a kubeconfig must be a mapping, got {kind_of(document)}")
    _check_version_and_kind(document)
    config = Kubeconfig()
    for section in SECTIONS:
        entries = _decode_named_entries(document.get(section), section)
        config.section(section).update(entries)
        config.origins.update({(section, name): origin for name in entries})
    config.current_context = _decode(document.get("current-context"), STRING, "current-context")
    config.extensions = _decode_extension_map(document.get("extensions"), "extensions")
    preferences = document.get("preferences")
    if preferences is not None:
        if not isinstance(preferences, dict):
            raise PhasekitError(f"preferences: expected a mapping, got {kind_of(preferences)}")
        config.colors = _decode(preferences.get("colors"), BOOLEAN, "preferences.colors")
        config.preference_extensions = _decode_extension_map(preferences.get("extensions"),
                                                             "preferences.extensions")
    return config


def _check_version_and_kind(document: dict) -> None:
    api_version = document.get("apiVersion")
    kind = document.get("kind")
    for key, value in (("apiVersion", api_version), ("kind", kind)):
        if value is not None and not isinstance(value, str):
            raise PhasekitError(f"{key}: expected a string, got {kind_of(value)}")
    if api_version not in (None, "", "v1"):
        raise PhasekitError(f"apiVersion: {api_version!r} is not a kubeconfig version (expected v1)")
    if kind not in (None, "", "Config"):
        raise PhasekitError(f"kind: {kind!r} is not a kubeconfig (expected Config)")


def _decode_named_entries(value, section: str) -> dict:
    body_key = ENTRY_BODY[section]
    schema = ENTRY_SCHEMA[section]
    entries: dict = {}
    for index, item in enumerate(_expect_list(value, section)):
        path = f"{section}[{index}]"
        item = _expect_mapping(item, path)
        name = _decode(item.get("name"), STRING, f"{path}.name")
        if name in entries:
            raise PhasekitError(f"{path}: duplicate {body_key} name {name!r} in one file")
        entries[name] = _decode_struct(item.get(body_key), schema, f"{path}.{body_key}")
    return entries


def _decode_extension_map(value, path: str) -> dict:
    extensions: dict = {}
    for index, item in enumerate(_expect_list(value, path)):
        item_path = f"{path}[{index}]"
        item = _expect_mapping(item, item_path)
        name = _decode(item.get("name"), STRING, f"{item_path}.name")
        # client-go only rejects a repeated name when the earlier one holds a value
        if extensions.get(name) is not None:
            raise PhasekitError(f"{item_path}: duplicate extension name {name!r}")
        extensions[name] = item.get("extension")
    return extensions


def _decode_struct(value, struct: Struct, path: str) -> dict:
    value = _expect_mapping(value, path)
    decoded = {}
    for key, kind, always in struct.fields:
        item = _decode(value.get(key), kind, f"{path}.{key}")
        if always or not _is_empty(item):
            decoded[key] = item
    if struct.defaults:
        struct.defaults(decoded)
    return decoded


def _decode(value, kind, path: str):  # pylint: disable=too-many-return-statements
    """Decode one JSON value as Go's encoding/json would into the field's type; null is the zero value."""
    if kind == STRING:
        if value is None:
            return ""
        if not isinstance(value, str):
            raise _type_error(path, "a string", value)
        return value
    if kind == BOOLEAN:
        if value is None:
            return False
        if not isinstance(value, bool):
            raise _type_error(path, "a boolean", value)
        return value
    if kind == BASE64:
        return _decode_base64(value, path)
    if kind == EXTENSIONS:
        return named_extensions_to_v1(_decode_extension_map(value, path))
    if isinstance(kind, ListOf):
        if value is None:
            return None
        return [_decode(item, kind.item, f"{path}[{index}]")
                for index, item in enumerate(_expect_list(value, path))]
    if isinstance(kind, MapOf):
        if value is None:
            return None
        return {key: _decode(item, kind.item, f"{path}.{key}")
                for key, item in _expect_mapping(value, path).items()}
    if isinstance(kind, Optional):
        return None if value is None else _decode_struct(value, kind.struct, path)
    return _decode_struct(value, kind, path)


def _decode_base64(value, path: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise _type_error(path, "base64 data", value)
    compact = value.replace("\r", "").replace("\n", "")  # Go's decoder skips line breaks
    try:
        raw = base64.b64decode(compact, validate=True)
    except (binascii.Error, ValueError):
        raise PhasekitError(f"{path}: not valid base64 data") from None
    return base64.b64encode(raw).decode("ascii") if raw else None


def _is_empty(value) -> bool:
    return value is None or value is False or value == "" or value == [] or value == {}


def _expect_list(value, path: str) -> list:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _type_error(path, "a list", value)
    return value


def _expect_mapping(value, path: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _type_error(path, "a mapping", value)
    return value


def _type_error(path: str, expected: str, value) -> PhasekitError:
    return PhasekitError(f"{path}: expected {expected}, got {kind_of(value)}")
