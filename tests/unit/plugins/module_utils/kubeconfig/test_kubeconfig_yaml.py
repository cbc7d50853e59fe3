# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""YAML read as kubectl reads it (go-yaml v2 scalar rules, first document, string keys)."""

from __future__ import annotations

import math

import pytest

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.kubectl_yaml import load_kubectl_yaml
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.kubectl_yaml import resolve_plain_scalar


@pytest.mark.parametrize("text, expected", [
    ("y", True), ("Y", True), ("n", False), ("yes", True), ("Off", False), ("TRUE", True),
    ("~", None), ("null", None), ("", None),
    ("12", 12), ("+1", 1), ("-7", -7), ("0x1F", 31), ("0o17", 15), ("017", 15), ("0b101", 5), ("1_000", 1000),
    ("12345678901234567890", 12345678901234567890),
    ("1e3", 1000.0), ("08", 8.0), (".5", 0.5), ("+.5e3", 500.0), ("0.", 0.0),
    ("1e400", "1e400"), ("2001-12-14", "2001-12-14"), ("2001-12-14 21:59:43.10", "2001-12-14 21:59:43.10"),
    ("1:20", "1:20"), ("-", "-"), ("v1.0", "v1.0"), ("true1", "true1"), ("Yes!", "Yes!"),
], ids=repr)
def test_plain_scalars_resolve_as_in_go_yaml(text, expected):
    value = resolve_plain_scalar(text)[1] if text else None
    assert value == expected and type(value) is type(expected)


def test_special_floats():
    assert math.isnan(resolve_plain_scalar(".nan")[1])
    assert resolve_plain_scalar("-.INF")[1] == -math.inf


@pytest.mark.parametrize("text, expected", [
    ("a: 'y'\nb: \"1e3\"\n", {"a": "y", "b": "1e3"}),
    ("a: !!str 12\n", {"a": "12"}),
    ("1: one\ny: yes\n1.5: f\n", {"1": "one", "true": True, "1.5": "f"}),
    ("first: 1\n---\nsecond: [\n", {"first": 1}),
    ("", None),
    ("# only a comment\n", None),
    ("base: &b {server: s}\nuse: *b\nmerged: {<<: *b, extra: 1}\n",
     {"base": {"server": "s"}, "use": {"server": "s"}, "merged": {"server": "s", "extra": 1}}),
    ('{"json": [1, "two", true]}', {"json": [1, "two", True]}),
], ids=["quoted-strings-stay-strings", "explicit-tag", "keys-become-strings", "only-first-document", "empty",
        "comment-only", "anchors-and-merge-keys", "json"])
def test_documents(text, expected):
    assert load_kubectl_yaml(text) == expected


@pytest.mark.parametrize("text, message", [
    ("token: [s3cr3t-value\n", "invalid YAML at line 2"),
    ("\ttoken: s3cr3t-value\n", "invalid YAML at line 1, column 1"),
    ("a: .nan\n", "NaN and infinity cannot be represented"),
    ("? [a, b]\n: s3cr3t-value\n", "unsupported map key of type list"),
    ("~: s3cr3t-value\n", "unsupported map key"),
], ids=["unclosed-flow", "tab", "nan", "complex-key", "null-key"])
def test_errors_name_the_position_not_the_content(text, message):
    with pytest.raises(PhasekitError) as caught:
        load_kubectl_yaml(text)
    assert message in str(caught.value)
    assert "s3cr3t" not in str(caught.value)
