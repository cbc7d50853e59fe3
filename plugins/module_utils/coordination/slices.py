# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""A slice of a run: which one (``k/N``), which hosts it gets, and what AWX tells a sliced job's jobs.

What AWX tells a sliced job's jobs, and how a slice learns its ``k/N`` from AWX's API: ``awx.jobs``.

Host order: AWX sorts in PostgreSQL with the database's collation. ``slice_hosts`` sorts by code point (the ``C``
collation); both agree on names of lowercase letters and digits of one shape, and may differ where names mix case
or punctuation (``en_US``: ``ab`` < ``a-c``; ``C``: ``a-c`` < ``ab``). The meeting does not depend on it: every
slice publishes the hosts it was given (``meeting.Meeting.publish``), so the fleet is the union of what AWX dealt.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError

_SLICE = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")
_ANY_SLICE = re.compile(r"\s*\*\s*/\s*(\d+)\s*")   # "*/N": one of N, its number claimed at the meeting (AWX)
# a run ID names Kubernetes objects and is a label value: lowercase, digits and '-', at most 40 characters
RUN_ID = re.compile(r"^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$")


class SliceError(PhasekitError):
    """A slice, its count or its run ID is not what it must be."""


@dataclass(frozen=True, order=True)
class SliceId:
    """Slice ``number`` of ``count`` (1-based, as AWX counts them): ``"2/3"``."""

    number: int
    count: int

    def __post_init__(self):
        for field_name in ("number", "count"):
            value = getattr(self, field_name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise SliceError(f"slice {field_name} {value!r} is not a whole number")
        if self.count < 1:
            raise SliceError(f"slice {self}: the count of slices must be 1 or more")
        if not 1 <= self.number <= self.count:
            raise SliceError(f"slice {self}: the slice number must be from 1 to the count ({self.count})")

    def __str__(self) -> str:
        return f"{self.number}/{self.count}"

    @classmethod
    def parse(cls, text, where: str = "plan_slice") -> SliceId:
        """``"k/N"`` (spaces allowed around the numbers) as a SliceId; a clear error naming ``where`` and the value."""
        if not isinstance(text, str):
            raise SliceError(f"{where}: expected a string 'k/N' (this slice k of N slices, such as '2/3'), "
                             f"got a {type(text).__name__}")
        match = _SLICE.fullmatch(text)
        if match is None:
            raise SliceError(f"{where}: {text!r} is not 'k/N' (this slice k of N slices, such as '2/3') nor '*/N' "
                             f"(one of N slices, numbered when they meet: AWX's job slicing)")
        number, count = int(match.group(1)), int(match.group(2))
        if count < 1:
            raise SliceError(f"{where}: {text!r}: the count of slices N must be 1 or more")
        if not 1 <= number <= count:
            raise SliceError(f"{where}: {text!r}: the slice k must be from 1 to N ({count})")
        return cls(number, count)


def slice_hosts(hosts, number: int, count: int) -> list:
    """The hosts slice ``number`` of ``count`` gets, as AWX deals them (``Inventory.get_sliced_hosts``,
    awx/main/models/inventory.py:282-299): sorted by name, then every ``count``-th from the ``number``-th on. A count
    of 1 (or a number 0: not sliced) gets every host, sorted."""
    ordered = sorted(hosts)
    if count > 1 and number > 0:
        return ordered[number - 1::count]
    return ordered


def asked_slice(given) -> tuple[SliceId, bool]:
    """``plan_slice`` as (the slice, whether its number is to be claimed): ``"k/N"``, or ``"*/N"`` (one of N slices;
    the meeting numbers it: AWX tells a slice's job neither its number nor the count). A bad value is refused."""
    match = _ANY_SLICE.fullmatch(given) if isinstance(given, str) else None
    if match is not None:
        return SliceId.parse(f"1/{match.group(1)}"), True
    return SliceId.parse(given), False


def is_sliced(given) -> bool:
    """Whether ``plan_slice`` says this run is one slice of several (``k/N`` or ``*/N`` with N > 1)."""
    return bool(given) and asked_slice(given)[0].count > 1


def check_run_id(run_id, where: str = "plan_run_id") -> str:
    """``run_id`` when it can name the run's objects and label them; a clear error otherwise."""
    if not isinstance(run_id, str) or not RUN_ID.match(run_id):
        raise SliceError(f"{where}: {run_id!r} is not a run ID: 1 to 40 lowercase letters, digits and '-', starting "
                         f"and ending with a letter or digit (it names Kubernetes objects and labels them)")
    return run_id
