# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Objects that hold resources until ``close()``, usable in a ``with`` block that closes them."""

from __future__ import annotations


class Closing:
    """A context manager whose exit is its ``close()``: ``with Holder() as holder:`` (``contextlib.closing`` as a base
    class, so every user writes the ``with`` the same way)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        raise NotImplementedError
