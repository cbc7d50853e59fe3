# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The cluster map behind the ``phasekit.kube.clusters`` inventory plugin: plain data in, plain data out."""

from __future__ import annotations
