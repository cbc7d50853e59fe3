# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""A run's phase bundles: each rendered once for all its hosts (once per host when it has ``.j2`` manifests), and
its digest made once per rendering; and what else a run builds once (``built``)."""

from __future__ import annotations

import threading
from typing import Callable

from ansible_collections.phasekit.kube.plugins.module_utils.bundle import has_templates, render_bundle
from ansible_collections.phasekit.kube.plugins.module_utils.executors.context import OncePerKey
from ansible_collections.phasekit.kube.plugins.module_utils.records.vocabulary import bundle_digest


def render_phase_bundle(entry) -> list:
    """A run entry's source as bundle objects: a path (already made absolute by phase_plan) or inline objects."""
    source = entry.source
    if isinstance(source, str):
        return render_bundle(src=source)
    return render_bundle(definition=source)


class PhaseBundles:
    """The rendered bundles of a run's phases (``render``: how a phase without templates renders)."""

    def __init__(self, render: Callable[[object], list] | None, access):
        self._render = render or render_phase_bundle
        self._access = access  # a ``ClusterAccess``: renders a host's templates with its variables
        self._bundles = OncePerKey()
        self._built = OncePerKey()
        self._lock = threading.Lock()
        self._has_templates: dict[str, bool] = {}
        self._digests: dict[tuple, str] = {}

    def bundle(self, entry, host: str) -> list:
        """The entry's rendered bundle: rendered once for all its hosts, or once per host when it has ``.j2``
        manifests (rendered with that host's variables); each host gets its own copies."""
        key = self._key(entry, host)
        if key[1] is None:
            return self._bundles.get(key, lambda: self._render(entry))
        return self._bundles.get(key, lambda: render_bundle(
            src=entry.source, render_template=lambda path: self._access.render_template(host, path)))

    def digest(self, entry, host: str) -> str:
        """The rendered bundle's digest, made once per rendering (a 1000-object bundle costs milliseconds)."""
        key = self._key(entry, host)
        with self._lock:
            known = self._digests.get(key)
        if known is None:
            known = bundle_digest([one.obj for one in self.bundle(entry, host)])
            with self._lock:
                self._digests[key] = known
        return known

    def built(self, key: tuple, make: Callable[[], object]):
        """``make()``'s value for ``key``, made once per run (an error too, raised again to every asker)."""
        return self._built.get(key, make)

    def templated(self, entry) -> bool:
        """Whether the entry's bundle has templates, looked at once per entry (a kustomization's whole tree)."""
        with self._lock:
            if entry.name not in self._has_templates:
                source = entry.source
                self._has_templates[entry.name] = isinstance(source, str) and has_templates(source)
            return self._has_templates[entry.name]

    def _key(self, entry, host: str) -> tuple:
        return (entry.name, host if self.templated(entry) else None)
