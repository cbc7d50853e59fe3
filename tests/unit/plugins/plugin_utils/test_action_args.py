"""Options typed ``str`` refuse lists and dictionaries (Ansible would turn them into strings)."""

from __future__ import annotations

import pytest

from ansible_collections.phasekit.kube.plugins.plugin_utils.action import strings_given_as_collections

SPEC = {"context": {"type": "str"}, "namespace": {}, "definition": {"type": "raw"}, "prune": {"type": "bool"}}


@pytest.mark.parametrize("args, expected", [
    ({"context": ["ctx1"]}, "option context: expected a string, got a list"),
    ({"namespace": {"name": "n"}}, "option namespace: expected a string, got a dictionary"),
    ({"context": "ctx1", "namespace": "n", "definition": [{"a": 1}], "prune": True}, None),
    ({}, None),
])
def test_string_options_refuse_collections(args, expected):
    assert strings_given_as_collections(SPEC, args) == expected
