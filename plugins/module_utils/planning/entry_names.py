# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The run list's names: an entry's name (a phase's full name, and which of its runs it is) and the reasons a
selection gives for an entry that does not run. Below both the selection and the graph, which read them."""

from __future__ import annotations

NOT_IN_ONLY = "not in only"
IN_SKIP = "skip"
BEFORE_START_AT = "before start_at"
OCCURRENCE = "#"  # joins a phase's full name and which of its runs an entry is: name#2


def entry_name(full_name: str, occurrence: int | None) -> str:
    """A run list entry's name: ``full_name``, or ``full_name#k`` for the k-th run of a repeated phase."""
    return full_name if occurrence is None else f"{full_name}{OCCURRENCE}{occurrence}"
