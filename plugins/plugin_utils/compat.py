# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""What differs between the ansible-core lines phasekit.kube supports (2.16 to the newest) on the controller.

ansible-core 2.19 replaced the "unsafe" string types with data tags. Since then a file's text must be marked
trusted before it is templated, vault-encrypted values are tagged strings, a templar takes its variables when
copied, DataLoader caches by a mode name and loads inventory files as trusted templates, and template errors are
worded afresh. Each function says what it does on each side of 2.19. What differs in ``ansible.module_utils``
(the line itself, argument errors, plain strings) is in ``plugins/module_utils/compat.py``.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from ansible_collections.phasekit.kube.plugins.module_utils.compat import DATA_TAGGING

# ansible-core < 2.19 wraps Jinja's errors: "template error while templating string: ERROR. String: TEMPLATE".
_UNLOADABLE_PLUGIN = re.compile(r"""Could not load "([A-Za-z_][\w.]*)\"""")
_UNKNOWN_FILTER_OR_TEST = re.compile(r"No (?:filter|test) named '([A-Za-z_][\w.]*)'")


def load_trusted_file(loader, path: str):
    """A YAML/JSON file read by Ansible's DataLoader as an inventory file is: templates in it trusted, vault-encrypted
    values allowed, not cached (the file may change between two inventory parses)."""
    if DATA_TAGGING:
        return loader.load_from_file(path, cache="none", trusted_as_template=True)
    return loader.load_from_file(path, cache=False)  # before 2.19 every string is a template


def trust_as_template(text: str):
    """``text`` (read from a template file) as a string Ansible will template; before 2.19 every string is one."""
    if DATA_TAGGING:
        from ansible.template import trust_as_template as trust  # pylint: disable=import-outside-toplevel  # 2.19+ only
        return trust(text)
    return text


def templar_with_variables(templar, variables):
    """A copy of ``templar`` that renders with ``variables`` (2.19 takes them when copying; earlier lines have
    them set on the copy)."""
    if DATA_TAGGING:
        return templar.copy_with_new_env(available_variables=variables)
    rendering = templar.copy_with_new_env()
    rendering.available_variables = variables
    return rendering


def is_vaulted(value) -> bool:
    """Whether ``value`` is a vault-encrypted variable's value (2.19: a string tagged with its ciphertext; earlier:
    an ``AnsibleVaultEncryptedUnicode``)."""
    if DATA_TAGGING:
        from ansible.parsing.vault import VaultHelper  # pylint: disable=import-outside-toplevel  # 2.19+ only
        return VaultHelper.get_ciphertext(value, with_tags=False) is not None
    return type(value).__name__ == "AnsibleVaultEncryptedUnicode"


class TemplateFailure(NamedTuple):
    """What a template error says, the same way on every line: ``message`` without Ansible's wrapping (and so
    without the template's text), and the filter or test ``name`` it is about if the message names one (to find
    its line when Jinja gave none)."""

    message: str
    name: str | None


def template_failure(exc: BaseException) -> TemplateFailure:
    """The Jinja error under Ansible's ``AnsibleError`` (before 2.19 the wrapper repeats it and appends the whole
    template; 2.19 words it itself)."""
    inner = exc
    if not DATA_TAGGING:
        inner = getattr(exc, "orig_exc", None) or exc.__cause__ or exc.__context__ or exc
    message = _first_line(inner)
    if not DATA_TAGGING and type(inner).__name__ in ("TemplateSyntaxError", "TemplateAssertionError"):
        message = f"Syntax error in template: {message}"
    match = _UNLOADABLE_PLUGIN.search(message) or _UNKNOWN_FILTER_OR_TEST.search(message)
    return TemplateFailure(message, match.group(1) if match else None)


def _first_line(exc: BaseException) -> str:
    message = str(getattr(exc, "message", None) or exc).strip()
    return message.splitlines()[0] if message else type(exc).__name__


def fail_without_task_origin(result: dict) -> dict:
    """A failed ``result`` as the task's outcome, without ansible-core quoting the task's own file.

    2.19 and later print every failed task's ``Origin: <task file>:line:column`` and an excerpt of that file; for a
    task of the plan role that points into the role, not at the user's document its message names. There, the
    failure is raised as an action failure that contributes the result and no ``exception`` (what the default
    callback prints the excerpt from); the task still fails, with this ``msg``. Earlier lines quote nothing: the
    result is returned as it is."""
    if not DATA_TAGGING or not result.get("failed"):
        return result
    from ansible.errors import AnsibleAction  # pylint: disable=import-outside-toplevel

    class TaskFailure(AnsibleAction):
        """The result as it is, failed, without an exception to show."""

        @property
        def result_contribution(self):
            return self._result

        @property
        def omit_exception_key(self) -> bool:
            return True

    raise TaskFailure(str(result.get("msg") or ""), result=dict(result))
