# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Values remembered for the whole process, one per key, shared by its threads (an action's cluster workers)."""

from __future__ import annotations

import threading
from typing import Callable

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError


class Memo:
    """A value per key for the process: what is asked once per run (helm's version per binary, discovery per
    server), read and written under one lock."""

    def __init__(self):
        self._values: dict = {}
        self._lock = threading.Lock()

    def get(self, key, default=None):
        with self._lock:
            return self._values.get(key, default)

    def put(self, key, value) -> None:
        with self._lock:
            self._values[key] = value

    def __len__(self) -> int:
        with self._lock:
            return len(self._values)

    def clear(self) -> None:
        with self._lock:
            self._values.clear()

    def forget(self, key) -> None:
        with self._lock:
            self._values.pop(key, None)

    def get_or_make(self, key, make: Callable[[], object]):
        """The value of ``key``, made once by ``make()`` (under the lock: two threads asking at once make it once)."""
        with self._lock:
            if key not in self._values:
                self._values[key] = make()
            return self._values[key]


def made_once(values: dict, key, make: Callable[[], object]):
    """``values[key]``, made by ``make()`` the first time. A PhasekitError it raises is kept in its place and raised
    again to every later asker: a broken source is read once, and every cluster that needs it says why. Call it
    holding the lock that guards ``values``."""
    if key not in values:
        try:
            values[key] = make()
        except PhasekitError as err:
            values[key] = err
    found = values[key]
    if isinstance(found, PhasekitError):
        raise PhasekitError(str(found)) from None
    return found
