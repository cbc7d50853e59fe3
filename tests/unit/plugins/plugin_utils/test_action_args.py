"""Options typed ``str`` refuse lists and dictionaries (Ansible would turn them into strings)."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleError

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.masking import Masks
from ansible_collections.phasekit.kube.plugins.plugin_utils.action import error_result, strings_given_as_collections

SPEC = {"context": {"type": "str"}, "namespace": {}, "definition": {"type": "raw"}, "prune": {"type": "bool"}}


@pytest.mark.parametrize("args, expected", [
    ({"context": ["ctx1"]}, "option context: expected a string, got a list"),
    ({"namespace": {"name": "n"}}, "option namespace: expected a string, got a dictionary"),
    ({"context": "ctx1", "namespace": "n", "definition": [{"a": 1}], "prune": True}, None),
    ({}, None),
])
def test_string_options_refuse_collections(args, expected):
    assert strings_given_as_collections(SPEC, args) == expected


@pytest.mark.parametrize("error, message", [
    (PhasekitError("cannot use kubeconfig: token s3cr3t-t0ken refused"), "cannot use kubeconfig: token *** refused"),
    (AnsibleError("could not dump s3cr3t-t0ken"), "could not dump ***"),
    (TypeError("cannot represent s3cr3t-t0ken"), "unexpected error (TypeError): cannot represent ***"),
], ids=["phasekit-error", "ansible-error", "a-bug"])
def test_an_action_error_is_masked_with_its_traceback(error, message):
    result = failed_with(error, Masks().add("s3cr3t-t0ken"))
    assert result["failed"] is True and result["changed"] is False and result["msg"] == message
    assert "s3cr3t-t0ken" not in repr(result)
    assert ("exception" in result) is not isinstance(error, PhasekitError)


def failed_with(error: Exception, masks: Masks) -> dict:
    """The result of an action whose work raised ``error`` (the traceback is that of the error being handled)."""
    try:
        raise error
    except Exception as err:  # pylint: disable=broad-exception-caught
        return error_result(err, masks.scrub)
