# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The translators of other tools' formats that ship with the collection, registered once, on first use.

Each is a package of ``module_utils`` whose ``registration.register()`` adds its readers to the core's
registries: document readers (``planning/formats.py``), kubeconfig source kinds (``kubeconfig/sources.py``) and
inventory sources (``inventory/sources.py``). The core names none of them elsewhere: removing one is removing its package and its
line here. ``Registry`` is what each of those registries is.
"""

from __future__ import annotations

import threading

_LOCK = threading.RLock()
_STATE = {"loaded": False, "loading": False}


def load_bundled_formats() -> None:
    """Register every bundled format (once; a thread asking meanwhile waits until it is done)."""
    if _STATE["loaded"]:
        return
    with _LOCK:
        if _STATE["loaded"] or _STATE["loading"]:  # loading: this thread, asked again while registering
            return
        _STATE["loading"] = True
        try:
            from ansible_collections.phasekit.kube.plugins.module_utils.airship.registration import register as register_airship
            register_airship()
        finally:
            _STATE["loading"] = False
        _STATE["loaded"] = True


class Registry:
    """What other formats add to one of the core's registries, by name, in the order added; asking for it
    registers the bundled formats first."""

    def __init__(self):
        self._entries: dict = {}

    def add(self, name: str, entry) -> None:
        self._entries[name] = entry

    def get(self, name: str):
        load_bundled_formats()
        return self._entries.get(name)

    def names(self) -> tuple:
        load_bundled_formats()
        return tuple(self._entries)

    def entries(self) -> list:
        load_bundled_formats()
        return list(self._entries.values())
