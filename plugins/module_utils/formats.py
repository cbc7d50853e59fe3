# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The translators of other tools' formats that ship with the collection, registered once, on first use.

Each is a package of ``module_utils`` whose ``register()`` adds its readers to the core's registries: document
readers (``phases/formats.py``), kubeconfig source kinds (``kubeconfig/sources.py``) and inventory sources
(``inventory/sources.py``). The core names none of them elsewhere: removing one is removing its package and its
line here.
"""

from __future__ import annotations

import threading

_LOCK = threading.RLock()
_LOADED = []


def load_bundled_formats() -> None:
    """Register every bundled format (the first call; later calls return at once)."""
    if _LOADED:
        return
    with _LOCK:
        if _LOADED:
            return
        _LOADED.append(True)  # first: a registry asked while registering does not register again
        from ansible_collections.phasekit.kube.plugins.module_utils.airship import register as register_airship
        register_airship()
