# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Decoding one kubeconfig document with kubectl's rules (each row checked against kubectl v1.34)."""

from __future__ import annotations

import pytest

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.decode import decode_kubeconfig_bytes
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.decode import decode_kubeconfig_data
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.model import Origin
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.model import kubeconfig_to_v1

ORIGIN = Origin(1, "path", "a.yaml", path="a.yaml")


def view(text: str) -> dict:
    return kubeconfig_to_v1(decode_kubeconfig_bytes(text, ORIGIN))


EMPTY = {"kind": "Config", "apiVersion": "v1", "clusters": None, "users": None, "contexts": None,
         "current-context": ""}


@pytest.mark.parametrize("text, section, expected", [
    ("clusters:\n- name: c\n  cluster: {server: https://x, Server: ignored, unknown: 1}\n",
     "clusters", [{"name": "c", "cluster": {"server": "https://x"}}]),
    ("clusters:\n- name: c\n", "clusters", [{"name": "c", "cluster": {"server": ""}}]),
    ("clusters:\n- null\n", "clusters", [{"name": "", "cluster": {"server": ""}}]),
    ("clusters:\n- name: c\n  cluster: {certificate-authority-data: \"YWJj\\nZGVm\"}\n",
     "clusters", [{"name": "c", "cluster": {"server": "", "certificate-authority-data": "YWJjZGVm"}}]),
    ("clusters:\n- name: c\n  cluster: {insecure-skip-tls-verify: false, tls-server-name: '', proxy-url: null}\n",
     "clusters", [{"name": "c", "cluster": {"server": ""}}]),
    ("users:\n- name: u\n  user:\n    exec: {command: x, apiVersion: client.authentication.k8s.io/v1beta1}\n",
     "users", [{"name": "u", "user": {"exec": {
         "command": "x", "args": None, "env": None, "apiVersion": "client.authentication.k8s.io/v1beta1",
         "provideClusterInfo": False, "interactiveMode": "IfAvailable"}}}]),
    ("users:\n- name: u\n  user:\n    exec: {command: x, apiVersion: client.authentication.k8s.io/v1, args: [],"
     " env: [{name: A}, null]}\n",
     "users", [{"name": "u", "user": {"exec": {
         "command": "x", "args": [], "env": [{"name": "A", "value": ""}, {"name": "", "value": ""}],
         "apiVersion": "client.authentication.k8s.io/v1", "provideClusterInfo": False}}}]),
    ("users:\n- name: u\n  user: {auth-provider: {name: oidc}}\n",
     "users", [{"name": "u", "user": {"auth-provider": {"name": "oidc", "config": None}}}]),
    ("users:\n- name: u\n  user: {as-groups: [], as-user-extra: {a: [], b: null}, username: ''}\n",
     "users", [{"name": "u", "user": {"as-user-extra": {"a": [], "b": None}}}]),
    ("contexts:\n- name: x\n  context: {namespace: ns}\n",
     "contexts", [{"name": "x", "context": {"cluster": "", "user": "", "namespace": "ns"}}]),
    ("contexts:\n- name: x\n  context:\n    cluster: c\n    user: u\n    extensions: [{name: b, extension: 1},"
     " {name: a}]\n",
     "contexts", [{"name": "x", "context": {"cluster": "c", "user": "u", "extensions": [
         {"name": "a", "extension": None}, {"name": "b", "extension": 1}]}}]),
    ("users:\n- name: b\n- name: a\n", "users", [{"name": "a", "user": {}}, {"name": "b", "user": {}}]),
], ids=["unknown-and-miscased-fields-ignored", "missing-body-is-zero", "null-item-is-unnamed-entry",
        "base64-line-breaks-dropped", "empty-optional-fields-omitted", "exec-beta-interactive-mode-defaulted",
        "exec-v1-lists-kept", "auth-provider-config-always-printed", "impersonation-empties",
        "context-cluster-user-always-printed", "extensions-sorted-by-name", "entries-sorted-by-name"])
def test_entries_are_printed_as_kubectl_prints_them(text, section, expected):
    assert view(text)[section] == expected


@pytest.mark.parametrize("text, expected", [
    ("", EMPTY),
    ("null\n", EMPTY),
    ("kind: Config\ncurrent-context: x\n", {**EMPTY, "current-context": "x"}),
    ("apiVersion: ''\nkind: ''\n", EMPTY),
    ("preferences: {colors: true}\n", {**EMPTY, "preferences": {"colors": True}}),
    ("preferences: {colors: false}\n", EMPTY),
    ("extensions:\n- name: e\n- name: e\n  extension: 2\n", {**EMPTY, "extensions": [{"name": "e", "extension": 2}]}),
], ids=["empty-file", "null-document", "kind-without-apiversion", "empty-kind-and-version", "colors",
        "zero-preferences-omitted", "repeated-extension-after-null-replaces"])
def test_documents(text, expected):
    assert view(text) == expected


@pytest.mark.parametrize("text, message", [
    ("- a\n", "a kubeconfig must be a mapping, got a list"),
    ("kind: Pod\n", "kind: 'Pod' is not a kubeconfig"),
    ("apiVersion: v2\n", "apiVersion: 'v2' is not a kubeconfig version"),
    ("apiVersion: 1\n", "apiVersion: expected a string, got a number"),
    ("clusters: {}\n", "clusters: expected a list, got a mapping"),
    ("users:\n- name: a\n- name: a\n", "users[1]: duplicate user name 'a' in one file"),
    ("users:\n- name: 12\n", "users[0].name: expected a string, got a number"),
    ("current-context: y\n", "current-context: expected a string, got a boolean"),
    ("clusters:\n- name: c\n  cluster: {insecure-skip-tls-verify: 'true'}\n",
     "clusters[0].cluster.insecure-skip-tls-verify: expected a boolean, got a string"),
    ("clusters:\n- name: c\n  cluster: {certificate-authority-data: abc}\n",
     "clusters[0].cluster.certificate-authority-data: not valid base64 data"),
    ("users:\n- name: u\n  user: {token: 12345}\n", "users[0].user.token: expected a string, got a number"),
    ("users:\n- name: u\n  user: text\n", "users[0].user: expected a mapping, got a string"),
    ("users:\n- name: u\n  user: {auth-provider: {config: {a: 1}}}\n",
     "users[0].user.auth-provider.config.a: expected a string, got a number"),
    ("extensions:\n- name: e\n  extension: 1\n- name: e\n", "extensions[1]: duplicate extension name 'e'"),
    ("preferences: []\n", "preferences: expected a mapping, got a list"),
], ids=["not-a-mapping", "wrong-kind", "wrong-version", "version-not-string", "list-given-mapping",
        "duplicate-name-in-one-file", "name-not-string", "yaml11-boolean-is-not-a-string", "boolean-given-string",
        "bad-base64", "token-not-string", "struct-given-string", "map-value-type", "duplicate-extension",
        "preferences-type"])
def test_bad_documents_fail_naming_the_field(text, message):
    with pytest.raises(PhasekitError) as caught:
        decode_kubeconfig_bytes(text, ORIGIN)
    assert message in str(caught.value)
    assert "12345" not in str(caught.value)


def test_inline_mapping_goes_through_the_same_rules():
    config = decode_kubeconfig_data({"contexts": [{"name": "x", "context": {"cluster": "c", 1: "int key"}}]}, ORIGIN)
    assert config.contexts == {"x": {"cluster": "c", "user": ""}}
    assert config.origin_of("contexts", "x") == ORIGIN
