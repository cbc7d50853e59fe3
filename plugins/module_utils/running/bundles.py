# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""A run's phase bundles: each rendered once for all its hosts (once per host when it has ``.j2`` manifests), and
its digest made once per rendering; and what else a run builds once (``built``)."""

from __future__ import annotations

import threading
from typing import Callable

from ansible_collections.phasekit.kube.plugins.module_utils.bundle import has_templates, render_bundle
from ansible_collections.phasekit.kube.plugins.module_utils.executors.context import OncePerKey
from ansible_collections.phasekit.kube.plugins.module_utils.running.record import bundle_digest


def render_phase_bundle(phase: dict) -> list:
    """A phase's source as bundle objects: a path (already made absolute by phase_plan) or inline objects."""
    source = phase.get("source")
    if isinstance(source, str):
        return render_bundle(src=source)
    return render_bundle(definition=source)


class PhaseBundles:
    """The rendered bundles of a run's phases (``render``: how a phase without templates renders)."""

    def __init__(self, render: Callable[[dict], list] | None, access):
        self._render = render or render_phase_bundle
        self._access = access  # a ``ClusterAccess``: renders a host's templates with its variables
        self._bundles = OncePerKey()
        self._built = OncePerKey()
        self._lock = threading.Lock()
        self._has_templates: dict[str, bool] = {}
        self._digests: dict[tuple, str] = {}

    def bundle(self, phase: dict, host: str) -> list:
        """The phase's rendered bundle: rendered once for all its hosts, or once per host when it has ``.j2``
        manifests (rendered with that host's variables); each host gets its own copies."""
        key = self._key(phase, host)
        if key[1] is None:
            return self._bundles.get(key, lambda: self._render(phase))
        return self._bundles.get(key, lambda: render_bundle(
            src=phase["source"], render_template=lambda path: self._access.render_template(host, path)))

    def digest(self, phase: dict, host: str) -> str:
        """The rendered bundle's digest, made once per rendering (a 1000-object bundle costs milliseconds)."""
        key = self._key(phase, host)
        with self._lock:
            known = self._digests.get(key)
        if known is None:
            known = bundle_digest([one.obj for one in self.bundle(phase, host)])
            with self._lock:
                self._digests[key] = known
        return known

    def built(self, key: tuple, make: Callable[[], object]):
        """``make()``'s value for ``key``, made once per run (an error too, raised again to every asker)."""
        return self._built.get(key, make)

    def templated(self, phase: dict) -> bool:
        """Whether the phase's bundle has templates, looked at once per phase (a kustomization's whole tree)."""
        with self._lock:
            if phase["name"] not in self._has_templates:
                source = phase.get("source")
                self._has_templates[phase["name"]] = isinstance(source, str) and has_templates(source)
            return self._has_templates[phase["name"]]

    def _key(self, phase: dict, host: str) -> tuple:
        return (phase["name"], host if self.templated(phase) else None)
