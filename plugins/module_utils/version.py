# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The collection's version, as run records name it (a unit test keeps it equal to galaxy.yml's)."""

from __future__ import annotations

COLLECTION_VERSION = "0.1.0"
