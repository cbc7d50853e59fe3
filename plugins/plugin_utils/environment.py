# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""A task's ``environment:`` keyword (play, block, role and task merged by Ansible) as the action's environ.

Modules receive it as their process environment; an action runs in the controller's process, so every action
builds its ``Environ`` here (``PhasekitAction.environ``) and reads ``K8S_AUTH_*``, ``KUBECONFIG``, ``SOPS_*``
and the proxy variables from it. Lookups get no task from Ansible: they see the controller's environment only
(as ``lookup('env')`` does).
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible_collections.phasekit.kube.plugins.module_utils import compat
from ansible_collections.phasekit.kube.plugins.module_utils.environ import Environ
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError


def task_environ(task, templar) -> Environ:
    """``task``'s merged ``environment:`` (templated with the host's variables, as Ansible templates it for a
    module) over the controller's environment; what the task inherits (play, block, role) is told apart from
    what it sets itself for provenance."""
    merged = merged_environment(getattr(task, "environment", None), templar, "environment")
    inherited = merged_environment(_inherited_environment(task), templar, "environment") if merged else {}
    play = {name: value for name, value in merged.items() if name in inherited and inherited[name] == value}
    own = {name: value for name, value in merged.items() if name not in play}
    return Environ(task=own, play=play)


def merged_environment(environments, templar, where: str) -> dict:
    """Ansible's merge of ``environment:`` values (``ActionBase._compute_environment_string``): a list, parents
    first, each templated; later values win. Values are strings, as a process environment holds them."""
    if not environments:
        return {}
    final: dict = {}
    for environment in environments if isinstance(environments, list) else [environments]:
        if not environment:
            continue
        templated = templar.template(environment)
        if not isinstance(templated, Mapping):
            raise PhasekitError(f"{where}: expected a mapping of variable names to values, got "
                                f"{type(templated).__name__}")
        final.update(templated)
    return {compat.plain_str(str(name)): compat.plain_str(str(value)) for name, value in final.items()
            if value is not None}


def _inherited_environment(task):
    """The ``environment:`` values the task inherits (play, blocks, role, includes), unmerged; None when this
    ansible-core keeps them elsewhere (then everything counts as the task's own)."""
    try:
        inherited = task._get_parent_attribute("environment", omit=True)  # pylint: disable=protected-access
    except (AttributeError, KeyError, TypeError):
        return None
    return inherited if isinstance(inherited, (list, dict)) else None
