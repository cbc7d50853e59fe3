# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The environment an action sees: its task's ``environment:`` keyword over the controller's own.

kubernetes.core's modules receive a play's, block's, role's or task's ``environment:`` (Ansible merges them into
the task); phasekit's actions run in the controller's process, so they read the merged keyword here, exactly where
they read the controller's environment (``K8S_AUTH_*``, ``KUBECONFIG``, ``SOPS_*``, proxies) and hand it on to the
programs they run (sops, helm, commands). ``Environ`` also says where each variable came from, for provenance.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

CONTROLLER = "controller environment"
PLAY = "play environment"  # a play's, block's or role's environment: keyword (what the task inherits)
TASK = "task environment"  # the task's own environment: keyword


class Environ(Mapping):
    """``task`` and ``play`` variables (strings) over ``base`` (default: this process's environment), read-only."""

    def __init__(self, task: Mapping | None = None, play: Mapping | None = None, base: Mapping | None = None):
        self._base = os.environ if base is None else base
        self._play = dict(play or {})
        self._task = dict(task or {})

    def __getitem__(self, name: str) -> str:
        if name in self._task:
            return self._task[name]
        if name in self._play:
            return self._play[name]
        return self._base[name]

    def __iter__(self) -> Iterator[str]:
        yield from self._task
        yield from (name for name in self._play if name not in self._task)
        yield from (name for name in self._base if name not in self._task and name not in self._play)

    def __len__(self) -> int:
        return sum(1 for _name in self)

    @property
    def keyword(self) -> dict:
        """What ``environment:`` set (play and task), without the controller's variables."""
        return {**self._play, **self._task}

    def origin(self, name: str) -> str:
        """Where ``name``'s value comes from: the task's, the play's (block's, role's) or the controller's
        environment."""
        if name in self._task:
            return TASK
        return PLAY if name in self._play else CONTROLLER


def origin_of(environ: Mapping, name: str) -> str:
    """Where ``environ``'s ``name`` comes from (a plain mapping: the controller's environment)."""
    return environ.origin(name) if isinstance(environ, Environ) else CONTROLLER


def process_environment(environ: Mapping | None) -> dict:
    """The environment to give a program: ``environ`` (an action's), else the controller's, as plain strings."""
    return {str(name): str(value) for name, value in (os.environ if environ is None else environ).items()}


def environment_label(environ: Mapping, name: str) -> str:
    """Provenance of a value read from ``environ``: "controller environment K8S_AUTH_CONTEXT", "play environment
    K8S_AUTH_CONTEXT", "task environment K8S_AUTH_CONTEXT"."""
    return f"{origin_of(environ, name)} {name}"


@dataclass(frozen=True)
class Overridden:
    """An environment variable set for the whole controller or play that a host's own variable beat."""

    variable: str  # K8S_AUTH_CONTEXT
    origin: str  # CONTROLLER, PLAY or TASK
    host_var: str  # kube_context


PRECEDENCE_DOC = "docs/kubeconfig.md#precedence"


def overridden_warnings(hosts_by_override: Mapping) -> list[str]:
    """One warning per overridden variable (``Overridden`` -> the hosts whose own variable beat it), naming how
    many hosts overrode it and where the precedence is documented."""
    warnings = []
    for overridden in sorted(hosts_by_override, key=lambda item: (item.variable, item.origin, item.host_var)):
        count = len(set(hosts_by_override[overridden]))
        warnings.append(overridden_warning(overridden, f"{count} host's" if count == 1 else f"{count} hosts'"))
    return warnings


def overridden_warning(overridden: Overridden, whose: str = "the hosts'") -> str:
    """The warning for one overridden variable; ``whose`` says which hosts ("3 hosts'"; "the hosts'" when a
    single-host action cannot count them: Ansible then shows the same text once per run)."""
    return (f"{overridden.variable} from the {overridden.origin} is overridden by {whose} own "
            f"{overridden.host_var}: a host's own kube_* variables win, {overridden.variable} only fills what a "
            f"host leaves unset (see {PRECEDENCE_DOC})")


def environment_proxies(environ: Mapping) -> dict:
    """``urllib.request.getproxies_environment`` over ``environ``: scheme (``https``, ``http``, ``all``, ``no``) ->
    value of ``<scheme>_proxy``, any case, the lowercase name winning (an empty lowercase one unsets it)."""
    proxies = {}
    for name, value in environ.items():
        if value and name.lower().endswith("_proxy"):
            proxies[name.lower()[:-len("_proxy")]] = value
    for name, value in environ.items():
        if name.endswith("_proxy") and name == name.lower():
            if value:
                proxies[name[:-len("_proxy")]] = value
            else:
                proxies.pop(name[:-len("_proxy")], None)
    return proxies


def sets_proxies(environ: Mapping | None) -> bool:
    """Whether an action's ``environment:`` keyword sets a proxy variable (the controller's own are the client's)."""
    return isinstance(environ, Environ) and any(name.lower().endswith("_proxy") for name in environ.keyword)
