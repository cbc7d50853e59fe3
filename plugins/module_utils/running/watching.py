# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""What a run watches on its hosts' clusters: what each phase's wait waits for now (progress lines), and the
readiness of what a rollout's batch applied (its soak)."""

from __future__ import annotations

import threading
from typing import Callable

from ansible_collections.phasekit.kube.plugins.module_utils.executors.context import EXTRA_CONNECTIONS
from ansible_collections.phasekit.kube.plugins.module_utils.executors.registry import kind_of
from ansible_collections.phasekit.kube.plugins.module_utils.kube.wait import not_current_now, wait_rules, waiting_summary
from ansible_collections.phasekit.kube.plugins.module_utils.masking import Masks
from ansible_collections.phasekit.kube.plugins.module_utils.running.runner import HostContext


class Waits:
    """(phase, host) -> what its wait waits for now: a wait's last poll, or a look (helm's ``--wait``)."""

    def __init__(self, access):
        self._access = access  # a ``ClusterAccess``: its hosts' secrets are masked in progress lines
        self._lock = threading.Lock()
        self._waiting: dict[tuple, Callable[[], str]] = {}

    def waiting_on(self, phase_name: str, host: str) -> str:
        """What the phase's wait on ``host`` waits for now ("" when it is not waiting): the objects not Current
        with their kstatus messages, masked (``LiveProgress.waiting``). A wait's come from its last poll; helm's
        ``--wait`` gives none, so those of its release are looked at now (once per progress line)."""
        with self._lock:
            waiting = self._waiting.get((phase_name, host))
        if waiting is None:
            return ""
        try:
            said = waiting()
        except Exception:  # pylint: disable=broad-exception-caught
            return ""  # a progress line never fails a phase; the phase's own outcome says what went wrong
        return Masks(self._access.secrets(host)).scrub(said) if said else ""

    def set(self, phase_name: str, host: str, said: Callable[[], str]) -> None:
        with self._lock:
            self._waiting[(phase_name, host)] = said

    def done(self, phase_name: str, host: str) -> None:
        with self._lock:
            self._waiting.pop((phase_name, host), None)

    def on_poll(self, phase_name: str, host: str):
        """A wait's ``on_poll``: notes what the wait on ``host`` still waits for (see ``waiting_on``)."""
        def note(outcomes: list) -> None:
            said = waiting_summary(outcomes)
            self.set(phase_name, host, lambda: said)
        return note


def soak_problem(work, entries: list, host: str) -> str | None:
    """One look at the objects a rollout's ``apply`` and ``wait`` phases applied or waited for on this host, with
    the phases' own readiness rules: None while every one is Current (kstatus), else which are not. ``work``: the
    ``BuiltinExecutors`` that ran them."""
    problems = []
    context = HostContext(host)  # a look between the batch's phases: no barrier, no deadline
    for entry in entries:
        kind = kind_of(entry.executor)
        if not kind.watches_objects:
            continue
        entry = work.for_host(entry, host)
        if kind.deletes(entry.options or {}):
            continue  # its objects are gone: nothing to be ready
        values, namespace = kind.readiness(work, entry, context)
        namespace = namespace or work.access.resolution(host).namespace or "default"
        rules = wait_rules(values, where=f"phase {entry.name} options")
        problem = not_current_now(work.access.session(host, EXTRA_CONNECTIONS), work.bundle(entry, context),
                                  rules, namespace)
        if problem:
            problems.append(f"phase {entry.name}: {problem}")
    message = "; ".join(problems) or None
    return Masks(work.access.secrets(host)).scrub(message) if message else message
