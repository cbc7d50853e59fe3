# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""client-go's merge rules, one row per rule."""

from __future__ import annotations

import pytest

from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.decode import decode_kubeconfig_bytes
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.merge import FirstWins, merge_kubeconfig
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.model import Kubeconfig, Origin
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.model import kubeconfig_to_v1


def documents_of(*texts: str) -> list:
    return [decode_kubeconfig_bytes(text, Origin(index, "path", f"f{index}.yaml", path=f"f{index}.yaml"))
            for index, text in enumerate(texts, start=1)]


def merged(*texts: str):
    documents = documents_of(*texts)
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


@pytest.mark.parametrize("texts, context", [
    (["contexts: [{name: x, context: {cluster: c, user: u}}]\nclusters: [{name: c, cluster: {server: https://a}}]",
      "clusters: [{name: c, cluster: {server: https://b}}]\nusers: [{name: u, user: {token: t}}]"], "x"),
    (["contexts: [{name: x, context: {cluster: c}}]", "current-context: x\ncontexts: [{name: x, context: {cluster: d}}]"
      "\nclusters: [{name: c, cluster: {server: https://c}}]"], "x"),
    (["preferences: {colors: true, extensions: [{name: p, extension: 1}]}\nextensions: [{name: e, extension: 1}]",
      "extensions: [{name: e, extension: 2}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]"], "x"),
    (["contexts: [{name: other, context: {cluster: c}}]"], "x"),
], ids=["entries-of-one-context-first-wins", "context-from-an-earlier-file-than-the-current-context",
        "preferences-and-extensions-merged", "unknown-context-picks-nothing"])
def test_first_wins_picks_what_the_whole_merge_holds_for_one_context(texts, context):
    """Resolving one context looks its entries up instead of merging every entry: the same entries, origins and
    preferences as the whole merge (merging all of a 5000-context kubeconfig per host was quadratic)."""
    documents = FirstWins()
    for document in documents_of(*texts):
        documents.add(document)
    whole, picked = merged(*texts), documents.picked(context)
    assert picked.current_context == whole.current_context
    assert (picked.colors, picked.extensions, picked.preference_extensions) == \
        (whole.colors, whole.extensions, whole.preference_extensions)
    for section in ("contexts", "clusters", "users"):
        for name, entry in picked.section(section).items():
            assert entry == whole.section(section)[name]
            assert picked.origin_of(section, name) == whole.origin_of(section, name)
    assert (context in picked.contexts) == (context in whole.contexts)
    assert documents.context_is_complete(context) == whole.context_is_complete(context)
    assert documents.merged().contexts == whole.contexts
