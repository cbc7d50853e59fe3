# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
from __future__ import annotations

import pytest
import yaml

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.inventory.kubeconfig_contexts import (
    context_names,
    hosts_from_contexts,
    parse_kubeconfigs_entry,
    unmatched_patterns,
)


@pytest.mark.parametrize("entry, expected", [
    ("kc.yaml", {"source": "/inv/kc.yaml", "contexts": ["*"], "host_names": {}, "parent": None, "labels": {}}),
    ({"env": "KUBECONFIG", "contexts": "prod-*", "labels": {"env": "prod"}},
     {"source": {"env": "KUBECONFIG"}, "contexts": ["prod-*"], "host_names": {}, "parent": None,
      "labels": {"env": "prod"}}),
], ids=["string-shorthand", "env-with-pattern"])
def test_entries(entry, expected):
    assert parse_kubeconfigs_entry(entry, base_dir="/inv", where="w") == expected


@pytest.mark.parametrize("entry, message", [
    ({"contexts": ["*"]}, "exactly one of 'path'"),
    ({"path": "a", "env": "B"}, "exactly one of 'path'"),
    ({"path": "a", "context": "x"}, "unknown field.s. context"),
    ({"path": "a", "host_names": {"x": 1}}, "'host_names' must map"),
    (3, "expected a path or a mapping"),
], ids=["no-source", "two-sources", "unknown-field", "bad-host-names", "wrong-type"])
def test_bad_entries(entry, message):
    with pytest.raises(PhasekitError, match=f"^w: .*{message}"):
        parse_kubeconfigs_entry(entry, base_dir="/inv", where="w")


def test_one_host_per_matching_context():
    entry = parse_kubeconfigs_entry({"path": "kc.yaml", "contexts": ["prod-*", "mgmt"], "parent": "mgmt",
                                     "host_names": {"prod-eu-admin@prod-eu": "prod-eu"}},
                                    base_dir="/inv", where="w")
    hosts = hosts_from_contexts(["mgmt", "prod-eu-admin@prod-eu", "dev"], entry, origin="w")
    assert [(h.name, h.context, h.kubeconfig, h.parent) for h in hosts] == [
        ("mgmt", "mgmt", "/inv/kc.yaml", "mgmt"),
        ("prod-eu", "prod-eu-admin@prod-eu", "/inv/kc.yaml", "mgmt"),
    ]


@pytest.mark.parametrize("patterns, contexts, warnings", [
    (["prod-*", "mgmt"], ["mgmt", "prod-eu"], []),
    (["stage-*"], ["mgmt", "prod-eu"], ["w: field contexts: pattern 'stage-*' matches no context; contexts: "
                                        "'mgmt', 'prod-eu'"]),
    (["prod-?", "*"], ["mgmt"], ["w: field contexts: pattern 'prod-?' matches no context; contexts: 'mgmt'"]),
    (["*"], [], []),
], ids=["all-match", "glob-matching-nothing-warns", "question-mark-glob-warns", "no-contexts-warned-by-caller"])
def test_patterns_matching_no_context_warn(patterns, contexts, warnings):
    entry = parse_kubeconfigs_entry({"path": "kc.yaml", "contexts": patterns}, base_dir="/inv", where="w")
    assert unmatched_patterns(contexts, entry, where="w") == warnings


@pytest.mark.parametrize("patterns, contexts, message", [
    (["no-such-context"], ["a", "b"], "w: field contexts: unknown context 'no-such-context'; contexts: 'a', 'b'"),
    (["prod-*", "mgmt"], ["prod-eu"], "w: field contexts: unknown context 'mgmt'; contexts: 'prod-eu'"),
    (["mgmt"], [], "w: field contexts: unknown context 'mgmt'; contexts: none"),
], ids=["exact-name-unknown", "exact-name-beside-glob", "no-contexts-at-all"])
def test_exact_context_name_matching_nothing_fails(patterns, contexts, message):
    entry = parse_kubeconfigs_entry({"path": "kc.yaml", "contexts": patterns}, base_dir="/inv", where="w")
    with pytest.raises(PhasekitError) as err:
        unmatched_patterns(contexts, entry, where="w")
    assert str(err.value) == message


def test_context_unusable_as_host_name_refused():
    entry = parse_kubeconfigs_entry({"path": "kc.yaml"}, base_dir="/inv", where="w")
    with pytest.raises(PhasekitError, match=r"^w, context 'a\\x00b': cluster name 'a\\x00b' is not a usable"):
        hosts_from_contexts(["a\0b"], entry, origin="w")


def kubeconfig(*contexts):
    return yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": name, "context": {"cluster": "c", "user": "u"}} for name in contexts]})


def test_context_names_follow_kubectl_merge(tmp_path):
    (tmp_path / "a.yaml").write_text(kubeconfig("b", "a"))
    (tmp_path / "b.yaml").write_text(kubeconfig("a", "c"))
    paths = f"{tmp_path / 'a.yaml'}:{tmp_path / 'missing.yaml'}:{tmp_path / 'b.yaml'}"
    assert context_names(paths, where="w") == ["b", "a", "c"]


def test_context_names_from_env_source(tmp_path):
    (tmp_path / "a.yaml").write_text(kubeconfig("x"))
    assert context_names({"env": "FLEET"}, where="w", environ={"FLEET": str(tmp_path / "a.yaml")}) == ["x"]


@pytest.mark.parametrize("sources, environ, message", [
    ({"env": "FLEET"}, {}, "the environment variable FLEET is not set"),
    ("bad.yaml", {}, "invalid YAML"),
], ids=["unset-variable", "malformed-file"])
def test_context_listing_failures_name_the_entry(tmp_path, monkeypatch, sources, environ, message):
    (tmp_path / "bad.yaml").write_text("contexts: [\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(PhasekitError, match=f"^kubeconfigs\\[1\\]: .*{message}"):
        context_names(sources, where="kubeconfigs[1]", environ=environ)
