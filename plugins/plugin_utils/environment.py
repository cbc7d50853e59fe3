# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""A task's ``environment:`` keyword (play, block, role and task merged by Ansible) as the action's environ.

Modules receive it as their process environment; an action runs in the controller's process, so every action
builds its ``Environ`` here (``PhasekitAction.environ``) and reads ``K8S_AUTH_*``, ``KUBECONFIG``, ``SOPS_*``
and the proxy variables from it. Lookups get no task from Ansible: they see the controller's environment only
(as ``lookup('env')`` does).

A plan run (``run_phases``) is one task for every cluster host, templated by Ansible with the first host's
variables: what the task inherits (the play's ``environment:``, as written) is templated again for each host when
it holds templates (``TaskEnvironment.for_host``), as a task on that host would see it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ansible_collections.phasekit.kube.plugins.module_utils import compat
from ansible_collections.phasekit.kube.plugins.module_utils.environ import Environ
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.templating import has_template_strings
from ansible_collections.phasekit.kube.plugins.plugin_utils.templates import render_strings


@dataclass(frozen=True)
class TaskEnvironment:
    """A task's ``environment:``: what it inherits (play, blocks, role), as written and as templated for the host
    the task runs on, and what it sets itself (templated)."""

    inherited: tuple = ()  # the inherited environment: values, unmerged and untemplated
    play: dict = field(default_factory=dict)  # the inherited values in force, templated for the running host
    own: dict = field(default_factory=dict)  # the task's own values (or all, when inheritance is unknown)

    @property
    def environ(self) -> Environ:
        """The running host's environ: the task's values over the inherited ones over the controller's."""
        return Environ(task=self.own, play=self.play)

    @property
    def per_host(self) -> bool:
        """Whether the inherited values hold templates (then each host may see other values)."""
        return has_template_strings(list(self.inherited))

    def for_host(self, templar, variables, host: str) -> Environ:
        """The environ a task on ``host`` (with its ``variables``) would have."""
        if not self.per_host:
            return self.environ
        rendered = render_strings(templar, list(self.inherited), variables, f"environment of host {host}")
        play = merged_environment(rendered, None, f"environment of host {host}")
        return Environ(task=self.own, play={name: value for name, value in play.items() if name not in self.own})


def task_environment(task, templar) -> TaskEnvironment:
    """``task``'s merged ``environment:`` (templated with the host's variables, as Ansible templates it for a
    module); what the task inherits (play, block, role) is told apart from what it sets itself for provenance."""
    merged = merged_environment(getattr(task, "environment", None), templar, "environment")
    inherited = _inherited_environment(task) if merged else None
    if inherited is None:
        return TaskEnvironment(own=merged)
    templated = merged_environment(inherited, templar, "environment")
    play = {name: value for name, value in merged.items() if name in templated and templated[name] == value}
    own = {name: value for name, value in merged.items() if name not in play}
    return TaskEnvironment(inherited=tuple(inherited), play=play, own=own)


def task_environ(task, templar) -> Environ:
    """``task``'s ``environment:`` over the controller's environment (see ``task_environment``)."""
    return task_environment(task, templar).environ


def merged_environment(environments, templar, where: str) -> dict:
    """Ansible's merge of ``environment:`` values (``ActionBase._compute_environment_string``): a list, parents
    first, each templated (``templar`` None: already templated); later values win. Values are strings, as a
    process environment holds them."""
    if not environments:
        return {}
    final: dict = {}
    for environment in environments if isinstance(environments, list) else [environments]:
        if not environment:
            continue
        templated = templar.template(environment) if templar is not None else environment
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
    if isinstance(inherited, dict):
        return [inherited]
    return list(inherited) if isinstance(inherited, list) else None
