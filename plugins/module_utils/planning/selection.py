# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Which phases of a plan run: kubeadm's workflow runner rules, computed once.

Phases are full names (``certs/ca``) in run order: depth-first, parent before
children, in document order. ``only`` keeps the named phases and all their
descendants (naming a child does not bring its parent); ``skip`` then removes
the named phases and all their descendants, winning over ``only``; an unknown
name in either is an error, ``invalid phase name: X``. ``start_at`` resumes a
plan: every phase before the named one in run order is left out.

A plan may run a phase more than once (airshipctl's plans repeat their checks).
Each run of it is an entry of the run list named ``<full name>#<k>``, the k-th
time the plan runs it (``kubectl-get-pods#2``); a phase that runs once keeps its
full name. In ``only`` and ``skip`` the full name selects every entry of the
phase (and the descendants each brings), ``<name>#<k>`` that one entry and the
descendants of that same plan entry. ``start_at`` must name one entry: the full
name of a phase that runs more than once is refused, with its entries listed.

A rollout runs its whole subtree on one batch of clusters before the next. A
selection that keeps some of a rollout's phases and leaves others out (a
``start_at`` or ``only`` inside it, a ``skip`` of one of its phases) would run the
kept ones on batches that never had the others, after a rollout that stopped,
and report success: ``cut_rollouts`` finds those rollouts, and a run that
writes refuses them (see ``rollout_cut_message``) unless told that a partial
rollout is meant.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.planning.entry_names import BEFORE_START_AT, IN_SKIP, NOT_IN_ONLY
from ansible_collections.phasekit.kube.plugins.module_utils.planning.model import SEPARATOR
from ansible_collections.phasekit.kube.plugins.module_utils.planning.problems import did_you_mean


@dataclass(frozen=True)
class Step:
    """One entry of the run list: its name there, the phase's full name, and the plan entry that brought it."""

    name: str              # unique in the run list: the full name, or <full name>#<k> when the phase runs k times
    full_name: str
    entry: int = 0         # position of the plan entry that brought it in (its descendants share it)


def select_phases(steps, only=(), skip=(), start_at: str | None = None) -> dict[str, str | None]:
    """Map every entry name (in run order) to ``None`` if it runs, else the reason it does not.

    ``steps``: ``Step`` entries, or plain full names (a run list without repeats).
    """
    steps = [step if isinstance(step, Step) else Step(step, step, position) for position, step in enumerate(steps)]
    only, skip = list(only or ()), list(skip or ())
    names = [step.name for step in steps]
    by_name = {step.name: step for step in steps}
    full_names = {step.full_name for step in steps}
    for name in [*only, *skip, *([start_at] if start_at else [])]:
        if name not in by_name and name not in full_names:
            raise PhasekitError(f"invalid phase name: {name}{did_you_mean(name, [*names, *sorted(full_names)])}")
    reasons: dict[str, str | None] = dict.fromkeys(names)
    if only:
        for step in steps:
            if not any(_selects(selector, step, by_name) for selector in only):
                reasons[step.name] = NOT_IN_ONLY
    for step in steps:
        if reasons[step.name] is None and any(_selects(selector, step, by_name) for selector in skip):
            reasons[step.name] = IN_SKIP
    if start_at:
        first = names.index(_one_entry(start_at, steps, by_name))
        for name in names[:first]:
            reasons[name] = reasons[name] or BEFORE_START_AT
    return reasons


def _selects(selector: str, step: Step, by_name: dict[str, Step]) -> bool:
    """A full name selects every entry of that phase and of its descendants; an entry name, that entry and the
    descendants of the same plan entry."""
    named = by_name.get(selector)
    if named is not None and named.name != named.full_name:
        return step.entry == named.entry and _within(step.full_name, named.full_name)
    return _within(step.full_name, selector)


def _one_entry(start_at: str, steps: list[Step], by_name: dict[str, Step]) -> str:
    """The entry ``start_at`` names; the full name of a phase the plan runs several times is ambiguous."""
    if start_at in by_name:
        return start_at
    entries = [step.name for step in steps if step.full_name == start_at]
    raise PhasekitError(f"start_at: phase {start_at} runs {len(entries)} times in this plan; name the entry to "
                        f"start at: {', '.join(entries)}")


def _within(name: str, ancestor: str) -> bool:
    """The phase itself or one of its descendants."""
    return name == ancestor or name.startswith(ancestor + SEPARATOR)


MAX_NAMED_PHASES = 5  # phases a rollout cut names before "and N more"


@dataclass(frozen=True)
class RolloutCut:
    """A rollout the selection runs only part of: the phases that run, and those left out with their reason."""

    rollout: str                                # the rollout's phase (its entry name)
    running: tuple[str, ...]
    left_out: tuple[tuple[str, str], ...]       # (entry name, why it does not run)


def cut_rollouts(members: Mapping[str, Sequence[str]], reasons: Mapping[str, str | None]) -> list[RolloutCut]:
    """The rollouts of which some phases run and some do not, in run order.

    ``members``: each rollout's phase (entry name) -> the entries under it that do something (group phases, which
    only hold children, do not count), in run order; ``reasons``: what ``select_phases`` returned.
    """
    cuts = []
    for rollout, names in members.items():
        running = tuple(name for name in names if reasons.get(name) is None)
        left_out = tuple((name, reasons[name]) for name in names if reasons.get(name) is not None)
        if running and left_out:
            cuts.append(RolloutCut(rollout, running, left_out))
    return cuts


def rollout_cut_message(cut: RolloutCut, only=(), skip=(), start_at: str | None = None) -> str:
    """Why a run refuses a selection that cuts a rollout, naming the options that cut it and what to do instead."""
    why = {reason for _name, reason in cut.left_out}
    options = [f"plan_start_at={start_at}" if BEFORE_START_AT in why else "",
               f"plan_only={','.join(only)}" if NOT_IN_ONLY in why else "",
               f"plan_skip={','.join(skip)}" if IN_SKIP in why else ""]
    left_out = _named([f"{name} ({reason})" for name, reason in cut.left_out])
    return (f"{' and '.join(option for option in options if option)} runs only part of the rollout of phase "
            f"{cut.rollout}: {_named(list(cut.running))} would run batch by batch without {left_out}. After a "
            f"rollout that stopped, the clusters of the batches it did not reach have never had those phases: they "
            f"would keep their old state while the run reports success. To recover, run with plan_resume=true "
            f"instead (each cluster goes on from its first phase that did not succeed there); to run part of the "
            f"rollout anyway, set plan_partial_rollout=true")


def _named(names: list[str]) -> str:
    shown = ", ".join(names[:MAX_NAMED_PHASES])
    return shown + (f" and {len(names) - MAX_NAMED_PHASES} more" if len(names) > MAX_NAMED_PHASES else "")
