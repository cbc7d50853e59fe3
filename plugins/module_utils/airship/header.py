# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The header every airshipctl executor document shares: its top-level fields and ``metadata``."""

from __future__ import annotations

from ansible_collections.phasekit.kube.plugins.module_utils.planning.model import unknown_fields
from ansible_collections.phasekit.kube.plugins.module_utils.planning.problems import DocumentOrigin, Problems

METADATA_FIELDS = ("name", "namespace", "labels", "annotations")


def check_header(content: dict, fields: tuple, origin: DocumentOrigin, problems: Problems) -> None:
    """Each top-level field not in ``fields``, and each ``metadata`` field an executor does not take, a problem."""
    unknown_fields(content, fields, origin.at, problems, prefix="")
    metadata = content.get("metadata")
    if isinstance(metadata, dict):
        unknown_fields(metadata, METADATA_FIELDS, origin.at, problems, prefix="metadata.")
