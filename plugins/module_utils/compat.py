# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""What differs between the ansible-core lines phasekit.kube supports (2.16 to the newest): the part that needs
only ``ansible.module_utils``.

ansible-core 2.19 replaced the "unsafe" string types with data tags and worded argument errors afresh. The
controller's differences (trusted templates, templar variables, vault values, template errors) are in
``plugins/plugin_utils/compat.py``: a module_utils file may import nothing of Ansible but ``ansible.module_utils``
(ansible-test's pylint rule, which ansible-lint's production profile does not let a collection ignore). Between
them the two files hold every version-specific line; the rest of the collection calls them and never asks which
line it runs on. ``tests/unit/plugins/module_utils/test_compat.py`` pins both behaviours on the line it runs on.
"""

from __future__ import annotations

import re

from ansible.module_utils.ansible_release import __version__ as ANSIBLE_VERSION

ANSIBLE_CORE = tuple(int(part) for part in re.findall(r"\d+", ANSIBLE_VERSION)[:2])
# ansible-core 2.19 and later: data tagging (trusted templates, tagged vault values, reworded errors).
DATA_TAGGING = ANSIBLE_CORE >= (2, 19)

_PYTHON_TYPE = re.compile(r"<class '([A-Za-z_][\w.]*)'>")


def plain_str(value: str) -> str:
    """``value`` as a builtin ``str``. Before 2.19 Ansible's ``AnsibleUnsafeText.__str__`` returns itself, so
    ``str(value)`` stays unsafe; ``str.__str__`` copies the characters into a plain string on every line."""
    return str.__str__(value)


def argument_error(message: str) -> str:
    """An argument-spec validation message worded as 2.19 words it ("is of type str", not "<class 'str'>")."""
    return message if DATA_TAGGING else _PYTHON_TYPE.sub(r"\1", message)


# An ansible-vault value as the controller's loader returns it, not yet decrypted: named, not imported (a
# module_utils file may not import the controller's vault). A value decrypted by a template is a string.
_VAULT_OBJECT_TYPES = ("AnsibleVaultEncryptedUnicode",  # before 2.19
                       "EncryptedString")               # 2.19 and later


def is_vault_object(value) -> bool:
    """Whether ``value`` is a ``!vault`` value as Ansible loaded it from YAML (still encrypted)."""
    return type(value).__name__ in _VAULT_OBJECT_TYPES


def vault_plaintext(value) -> str:
    """The plaintext of a ``!vault`` value (``is_vault_object``), decrypted with the run's vault secrets: ``str()``
    decrypts on every line. Raises the controller's error (not importable here) when it cannot decrypt."""
    return plain_str(str(value))
