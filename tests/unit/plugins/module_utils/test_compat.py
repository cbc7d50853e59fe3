# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The compatibility modules (module_utils/compat.py and plugin_utils/compat.py): the same results on every ansible-core line (2.16 to the newest) it runs on.

CI runs this file on each line of the matrix; every row states what the collection relies on, whichever
side of 2.19 (data tagging) the line is.
"""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleError
from ansible.module_utils.ansible_release import __version__
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar
from ansible.utils.unsafe_proxy import wrap_var

from ansible_collections.phasekit.kube.plugins.module_utils import compat
from ansible_collections.phasekit.kube.plugins.plugin_utils import compat as controller_compat


def test_the_line_is_read_from_ansible_core():
    assert compat.ANSIBLE_CORE == tuple(int(part) for part in __version__.split(".")[:2])
    assert compat.DATA_TAGGING is (compat.ANSIBLE_CORE >= (2, 19))


def test_a_trusted_file_renders_its_templates_and_is_read_again_when_it_changes(tmp_path):
    path = tmp_path / "site.yml"
    path.write_text("clusters:\n  a:\n    kube_context: '{{ prefix }}-a'\n")
    loader = DataLoader()
    data = controller_compat.load_trusted_file(loader, str(path))
    rendered = Templar(loader=loader, variables={"prefix": "eu"}).template(data)
    assert rendered == {"clusters": {"a": {"kube_context": "eu-a"}}}
    path.write_text("clusters: {}\n")
    assert controller_compat.load_trusted_file(loader, str(path)) == {"clusters": {}}


def test_templar_with_variables_and_trusted_text_render():
    templar = controller_compat.templar_with_variables(Templar(loader=DataLoader()), {"tenant": "acme"})
    assert templar.template(controller_compat.trust_as_template("x: {{ tenant }}"), escape_backslashes=False) == "x: acme"


@pytest.mark.parametrize("value", [wrap_var("a"), wrap_var("ü"), "plain"], ids=["unsafe", "unsafe-unicode", "str"])
def test_plain_str_is_a_builtin_str(value):
    plain = compat.plain_str(value)
    assert plain.__class__ is str and plain == str.__str__(value)


@pytest.mark.parametrize("message, expected", [
    ("argument 'timeout' is of type <class 'str'> and we were unable to convert to int: <class 'str'> cannot be "
     "converted to an int", "argument 'timeout' is of type str and we were unable to convert to int: str cannot be "
     "converted to an int"),
    ("argument 'timeout' is of type str and we were unable to convert to int", "argument 'timeout' is of type str "
     "and we were unable to convert to int"),
    ("missing required arguments: src", "missing required arguments: src"),
], ids=["class-repr-before-2.19", "already-2.19-wording", "other-message"])
def test_argument_errors_are_worded_as_2_19_words_them(message, expected):
    assert compat.argument_error(message) == (message if compat.DATA_TAGGING else expected)


def _failure(text: str) -> controller_compat.TemplateFailure:
    templar = controller_compat.templar_with_variables(Templar(loader=DataLoader()), {"tenant": "acme"})
    with pytest.raises(AnsibleError) as error:
        templar.template(controller_compat.trust_as_template(text), escape_backslashes=False)
    return controller_compat.template_failure(error.value)


@pytest.mark.parametrize("text, message, name", [
    ("a: {{ region }}\n", "'region' is undefined", None),
    ("a: 1\n{% if %}\n", "Syntax error in template: Expected an expression", None),
    ("b: {{ tenant | nofilter }}\n", "Syntax error in template: ", "nofilter"),
], ids=["undefined", "syntax", "unknown-filter"])
def test_template_failures_say_what_failed_once_and_never_the_template(text, message, name):
    failure = _failure(text)
    assert failure.message.startswith(message) and failure.name == name
    assert "String:" not in failure.message and "acme" not in failure.message
    assert failure.message.count("is undefined") <= 1


def test_a_vault_value_as_the_loader_returns_it_is_a_vault_object(tmp_path):
    from ansible.parsing.vault import VaultLib, VaultSecret  # pylint: disable=import-outside-toplevel
    secret = VaultSecret(b"pw")
    ciphertext = VaultLib([("default", secret)]).encrypt("s3cr3t").decode()
    path = tmp_path / "vars.yml"
    path.write_text("header: !vault |\n" + "".join(f"  {line}\n" for line in ciphertext.splitlines()))
    loader = DataLoader()
    loader.set_vault_secrets([("default", secret)])
    value = loader.load_from_file(str(path))["header"]
    assert compat.is_vault_object(value)
    assert not compat.is_vault_object("s3cr3t") and not compat.is_vault_object({"a": 1})


@pytest.mark.parametrize("result", [
    {"failed": True, "changed": False, "msg": "phase b failed on cluster c: boom; phase b is defined in phases/site.yaml document 2"},
    {"changed": False, "msg": "no phase failed"},
], ids=["a-failure-fails-the-task-without-an-exception-to-quote", "a-success-is-returned-as-it-is"])
def test_a_failure_without_the_tasks_origin(result):
    if not result.get("failed") or not compat.DATA_TAGGING:
        assert controller_compat.fail_without_task_origin(dict(result)) == result
        return
    with pytest.raises(AnsibleError) as raised:
        controller_compat.fail_without_task_origin(dict(result))
    assert raised.value.omit_exception_key and raised.value.result == result  # nothing whose Origin would be printed
    # what ansible-core's task executor makes of an exception raised by an action: 2.19 and 2.20 have this function;
    # 2.21 builds the result from the exception's as_task_result (its own result) and omit_exception_key, checked above
    try:
        from ansible._internal._errors._error_utils import result_dict_from_exception  # pylint: disable=import-outside-toplevel
    except ImportError:
        return
    from ansible.errors import AnsibleTaskError  # pylint: disable=import-outside-toplevel
    task_error = AnsibleTaskError(obj={"name": "a task of the role"})
    task_error.__cause__ = raised.value  # as the executor raises it: ``raise AnsibleTaskError(...) from error``
    shown = result_dict_from_exception(task_error, accept_result_contribution=True)
    assert shown == result  # failed, the message as it is, no exception (whose Origin the callback would print)
