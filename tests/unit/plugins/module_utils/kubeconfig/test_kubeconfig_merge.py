# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""client-go's merge rules, one row per rule."""

from __future__ import annotations

import pytest

from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.decode import decode_kubeconfig_bytes
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.merge import merge_kubeconfig
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.model import Kubeconfig, Origin
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.model import kubeconfig_to_v1


def merged(*texts: str):
    documents = [decode_kubeconfig_bytes(text, Origin(index, "path", f"f{index}.yaml", path=f"f{index}.yaml"))
                 for index, text in enumerate(texts, start=1)]
    result = Kubeconfig()
    for document in documents:  # in precedence order: the first wins
        merge_kubeconfig(result, document)
    return result


@pytest.mark.parametrize("texts, check", [
    (["clusters: [{name: c, cluster: {server: https://first}}]",
      "clusters: [{name: c, cluster: {server: https://second, proxy-url: http://p}}]"],
     lambda config: config.clusters["c"] == {"server": "https://first"}),
    (["users: [{name: u, user: {token: one}}]", "users: [{name: u, user: {username: a, password: b}}]"],
     lambda config: config.users["u"] == {"token": "one"}),
    (["contexts: [{name: x1, context: {cluster: a}}]", "contexts: [{name: x2, context: {cluster: b}}]"],
     lambda config: sorted(config.contexts) == ["x1", "x2"]),
    (["current-context: ''", "current-context: second", "current-context: third"],
     lambda config: config.current_context == "second"),
    (["preferences: {colors: false}", "preferences: {colors: true}"], lambda config: config.colors is True),
    (["extensions: [{name: e, extension: first}]", "extensions: [{name: e, extension: second}, {name: f}]"],
     lambda config: config.extensions == {"e": "first", "f": None}),
    (["extensions: [{name: e}]", "extensions: [{name: e, extension: second}]"],
     lambda config: config.extensions == {"e": None}),
    (["preferences: {extensions: [{name: p, extension: 1}]}", "preferences: {extensions: [{name: p, extension: 2}]}"],
     lambda config: config.preference_extensions == {"p": 1}),
    (["clusters: [{name: c}]", "clusters: [{name: c, cluster: {server: https://second}}]"],
     lambda config: config.origin_of("clusters", "c").location == "f1.yaml"),
], ids=["first-file-wins-the-whole-cluster", "first-file-wins-the-whole-user", "distinct-names-all-kept",
        "first-non-empty-current-context", "colors-on-if-any-file-turns-it-on", "extensions-first-wins-per-name",
        "extension-null-still-wins", "preference-extensions-first-wins", "entry-remembers-its-defining-file"])
def test_merge_rules(texts, check):
    assert check(merged(*texts))


def test_empty_merge_is_an_empty_kubeconfig():
    assert kubeconfig_to_v1(merged()) == {"kind": "Config", "apiVersion": "v1", "clusters": None, "users": None,
                                          "contexts": None, "current-context": ""}
