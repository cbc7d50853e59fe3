# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The one exception type users see: a message for people, never a traceback."""

from __future__ import annotations


class PhasekitError(Exception):
    """A failure caused by input or environment, with a message that says what and where.

    Action plugins turn it into ``failed: true`` with ``msg``; nothing else of it is shown.
    The message must never contain secret material (tokens, keys, passwords, cert data).
    """

    def __init__(self, message: str, *, where: str | None = None):
        self.where = where
        super().__init__(f"{where}: {message}" if where else message)
