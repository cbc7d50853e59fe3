# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Jinja template files rendered with a cluster host's variables, as ``ansible.builtin.template`` renders them.

Works with ansible-core 2.16 to the newest: from 2.19 a file's text must be
marked trusted before Ansible templates it (the template action does the same).
Errors name the file; a variable's value is never part of them.
"""

from __future__ import annotations

import threading

from ansible.errors import AnsibleError

from ansible_collections.phasekit.kube.plugins.module_utils import yaml_io
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError

try:
    from ansible.template import trust_as_template
except ImportError:  # ansible-core < 2.19: every string is a template
    def trust_as_template(value):
        return value

# Ansible's templating is not meant for threads (the fleet's clusters run in a pool): one render at a time.
_LOCK = threading.Lock()


def render_template_file(templar, path: str, variables, what: str = "template") -> str:
    """The file at ``path`` rendered with ``variables`` (a host's variables, as a task on that host sees them)."""
    text = yaml_io.read_text_file(path, what)
    with _LOCK:
        try:
            rendering = templar.copy_with_new_env(available_variables=variables)
        except TypeError:  # ansible-core < 2.19 takes no variables here
            rendering = templar.copy_with_new_env()
            rendering.available_variables = variables
        try:
            rendered = rendering.template(trust_as_template(text), escape_backslashes=False)
        except AnsibleError as exc:
            raise PhasekitError(f"{what} {path}: {_first_line(exc)}") from None
    return rendered if isinstance(rendered, str) else str(rendered)


def _first_line(exc: Exception) -> str:
    message = getattr(exc, "message", None) or str(exc)
    return str(message).strip().splitlines()[0] if str(message).strip() else type(exc).__name__
