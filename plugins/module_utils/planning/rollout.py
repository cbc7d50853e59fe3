# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""A phase's progressive rollout across its clusters: batches, a failure budget, a soak, an order.

A phase (usually a group phase) with ``spec.rollout`` runs its whole subtree
on one batch of its clusters before the next batch starts, so its children
are the health gate. The batch sizes follow Ansible's ``serial``: whole
numbers or percentages of the phase's clusters in play (rounded down, at
least 1), the last size repeating until every cluster has had its batch.
``max_fail_percentage`` follows Ansible's too: the rollout stops when a
batch's failed share *exceeds* it. This module holds the rules as plain data
and functions (parsed once, batches computed the same way by ``list`` and by
the runner); the runner (``runner.py``) runs the batches.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from ansible_collections.phasekit.kube.plugins.module_utils.planning.problems import (
    Problems, did_you_mean, shown_value, type_name)

ROLLOUT_FIELDS = ("batches", "max_fail_percentage", "pause", "order")
ORDERS = ("inventory", "reverse_inventory", "sorted", "reverse_sorted", "shuffle")
DEFAULT_ORDER = "inventory"
DEFAULT_MAX_FAIL_PERCENTAGE = 0.0   # any failed cluster stops the rollout (a plan without rollout stops the same way)
MAX_PAUSE = 86400.0                 # a day: a longer soak is an approval, not a pause (plan_rollout_stop_after)
EXAMPLE = '[1, "10%", "100%"]'


@dataclass(frozen=True)
class Rollout:
    """How a phase rolls out: batch sizes as written (whole numbers or "N%"), budget, soak seconds, order."""

    batches: tuple
    max_fail_percentage: float = DEFAULT_MAX_FAIL_PERCENTAGE
    pause: float = 0.0
    order: str = DEFAULT_ORDER

    def to_dict(self) -> dict:
        return {"batches": list(self.batches), "max_fail_percentage": self.max_fail_percentage, "pause": self.pause,
                "order": self.order}

    @classmethod
    def from_dict(cls, value: dict) -> Rollout:
        return cls(batches=tuple(value["batches"]), max_fail_percentage=float(value["max_fail_percentage"]),
                   pause=float(value["pause"]), order=value["order"])


def parse_rollout(value, where, problems: Problems) -> Rollout | None:
    """A rollout from its document form; every problem is added naming its field (``where(field)``: the place)."""
    if value is None:
        return None
    if not isinstance(value, dict):
        problems.add(where(None), f"expected a mapping with batches (for example {{batches: {EXAMPLE}}}), "
                                  f"got {type_name(value)}")
        return None
    found = len(problems.messages)
    for key in value:
        if key not in ROLLOUT_FIELDS:
            problems.add(where(key), f"unknown field{did_you_mean(key, ROLLOUT_FIELDS)}; expected one of "
                                     f"{', '.join(ROLLOUT_FIELDS)}")
    batches = _batches(value.get("batches"), where, problems)
    budget = _number(value.get("max_fail_percentage"), DEFAULT_MAX_FAIL_PERCENTAGE, 0, 100,
                     where("max_fail_percentage"), "a percentage from 0 to 100", problems)
    pause = _number(value.get("pause"), 0.0, 0, MAX_PAUSE, where("pause"),
                    f"a number of seconds from 0 to {MAX_PAUSE:g}", problems)
    order = value.get("order", DEFAULT_ORDER)
    if order not in ORDERS:
        problems.add(where("order"), f"unknown order {order!r}{did_you_mean(str(order), ORDERS)}; "
                                     f"expected one of {', '.join(ORDERS)}")
    if len(problems.messages) > found:
        return None
    return Rollout(batches=tuple(batches), max_fail_percentage=budget, pause=pause, order=order)


def _batches(value, where, problems: Problems) -> list:
    if value is None:
        problems.add(where("batches"), f"missing: the batch sizes, as Ansible's serial takes them ({EXAMPLE})")
        return []
    sizes = value if isinstance(value, list) else [value]
    if not sizes:
        problems.add(where("batches"), f"expected at least one batch size ({EXAMPLE})")
    kept = []
    for position, size in enumerate(sizes):
        here = where(f"batches[{position}]" if isinstance(value, list) else "batches")
        parsed = batch_size(size)
        if parsed is None:
            problems.add(here, f"expected a whole number of clusters (1 or more) or a percentage of them "
                               f"('1%' to '100%'), got {shown_value(size)}")
            continue
        kept.append(parsed)
    return kept


def batch_size(value) -> int | str | None:
    """A batch size as kept: a whole number >= 1, or 'N%' with N from 1 to 100; None if it is neither."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 1 else None
    if isinstance(value, str):
        text = value.strip()
        if text.endswith("%"):
            number = text[:-1].strip()
            return f"{int(number)}%" if number.isdigit() and 1 <= int(number) <= 100 else None
        return int(text) if text.isdigit() and int(text) >= 1 else None
    return None


def _number(value, default: float, lowest: float, highest: float, where: str, wanted: str, problems: Problems):
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not lowest <= value <= highest:
        problems.add(where, f"expected {wanted}, got {shown_value(value)}")
        return default
    return float(value)


def batch_sizes(count: int, batches) -> list[int]:
    """How many clusters each batch gets, as Ansible's ``serial`` splits a play's hosts: a percentage is of all
    ``count`` clusters, rounded down but at least 1; the last size repeats; the last batch takes what is left."""
    sizes: list[int] = []
    left, position = count, 0
    while left > 0:
        size = batches[min(position, len(batches) - 1)]
        if isinstance(size, str) and size.endswith("%"):
            size = int(int(size[:-1]) / 100.0 * count) or 1
        size = min(int(size), left)
        sizes.append(size)
        left -= size
        position += 1
    return sizes


def ordered(hosts: list[str], order: str, seed: str) -> list[str]:
    """The clusters in rollout order. ``shuffle`` is a random order that is the same on every run of the same
    clusters (seeded by the rollout's phase), so that a resumed rollout goes on with the batches it left."""
    if order == "reverse_inventory":
        return list(reversed(hosts))
    if order == "sorted":
        return sorted(hosts)
    if order == "reverse_sorted":
        return sorted(hosts, reverse=True)
    if order == "shuffle":
        shuffled = sorted(hosts)
        random.Random(f"phasekit.kube rollout {seed}").shuffle(shuffled)
        return shuffled
    return list(hosts)


def plan_batches(hosts: list[str], rollout: Rollout, seed: str) -> list[list[str]]:
    """``hosts`` (the rollout phase's clusters in play, in inventory order) split into batches, in order."""
    hosts = ordered(hosts, rollout.order, seed)
    batches, start = [], 0
    for size in batch_sizes(len(hosts), rollout.batches):
        batches.append(hosts[start:start + size])
        start += size
    return batches


def over_budget(failed: int, size: int, max_fail_percentage: float) -> bool:
    """Ansible's rule: stop when the failed share of the batch *exceeds* the percentage (0: any failure)."""
    return size > 0 and failed * 100.0 / size > max_fail_percentage


@dataclass
class RolloutOf:
    """What the runner needs of a rollout: its phase, its rules and its clusters (the phase's cluster hosts)."""

    phase: str
    rollout: Rollout
    clusters: list[str] = field(default_factory=list)
    default: bool = False     # from plan_rollout, not the phase's own

    def to_dict(self) -> dict:
        return {"phase": self.phase, **self.rollout.to_dict(), "clusters": list(self.clusters),
                "default": self.default}

    @classmethod
    def from_dict(cls, value: dict) -> RolloutOf:
        return cls(phase=value["phase"], rollout=Rollout.from_dict(value), clusters=list(value["clusters"]),
                   default=bool(value.get("default")))

    def batches(self, in_play) -> list[list[str]]:
        play = set(in_play)
        return plan_batches([host for host in self.clusters if host in play], self.rollout, self.phase)


def rollout_of(phase: dict) -> RolloutOf | None:
    """The rollout a planned phase (its JSON from Ansible: ``RunEntry.to_dict``) belongs to, if any."""
    value = phase.get("rollout")
    if not value:
        return None
    # JSON from Ansible; a caller may have read it typed already
    return value if isinstance(value, RolloutOf) else RolloutOf.from_dict(value)


def hosts_label(hosts: list[str], shown: int = 3) -> str:
    """A batch's clusters in a line: all of a few, else the first and last and how many."""
    if len(hosts) <= shown:
        return ", ".join(hosts) or "-"
    return f"{hosts[0]} .. {hosts[-1]} ({len(hosts)})"
