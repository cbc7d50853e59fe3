# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Which phases of a plan run: kubeadm's workflow runner rules, computed once.

Phases are full names (``certs/ca``) in run order: depth-first, parent before
children, in document order. ``only`` keeps the named phases and all their
descendants (naming a child does not bring its parent); ``skip`` then removes
the named phases and all their descendants, winning over ``only``; an unknown
name in either is an error, ``invalid phase name: X``. ``start_at`` resumes a
plan: every phase before the named one in run order is left out.
"""

from __future__ import annotations

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.phases.model import SEPARATOR
from ansible_collections.phasekit.kube.plugins.module_utils.phases.problems import did_you_mean

NOT_IN_ONLY = "not in only"
IN_SKIP = "skip"
BEFORE_START_AT = "before start_at"


def select_phases(names: list[str], only=(), skip=(), start_at: str | None = None) -> dict[str, str | None]:
    """Map every full name (in run order) to ``None`` if it runs, else the reason it does not."""
    only, skip = list(only or ()), list(skip or ())
    known = set(names)
    for name in [*only, *skip, *([start_at] if start_at else [])]:
        if name not in known:
            raise PhasekitError(f"invalid phase name: {name}{did_you_mean(name, names)}")
    reasons: dict[str, str | None] = dict.fromkeys(names)
    if only:
        for name in names:
            if not any(_within(name, selected) for selected in only):
                reasons[name] = NOT_IN_ONLY
    for name in names:
        if reasons[name] is None and any(_within(name, skipped) for skipped in skip):
            reasons[name] = IN_SKIP
    if start_at:
        for name in names[:names.index(start_at)]:
            reasons[name] = reasons[name] or BEFORE_START_AT
    return reasons


def _within(name: str, ancestor: str) -> bool:
    """The phase itself or one of its descendants."""
    return name == ancestor or name.startswith(ancestor + SEPARATOR)
