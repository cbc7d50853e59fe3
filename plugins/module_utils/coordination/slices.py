# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""A slice of a run: which one (``k/N``), which hosts it gets, and what AWX tells a sliced job's jobs.

What AWX does (read in ansible/awx at e21dd0a, 2024-10-23):

- A job template with ``job_slice_count`` N > 1 becomes a *workflow job* (``is_sliced_job``) with N root nodes, node
  ``idx`` carrying ``ancestor_artifacts={"job_slice": idx + 1}`` (``awx/main/models/jobs.py:378-402``). N is
  ``min(job_slice_count, hosts in the inventory)`` (``get_effective_slice_ct``, ``jobs.py:336-346``); with one host
  or fewer the job is not sliced (``job_slice_count`` forced to 1, ``jobs.py:390-393``).
- Each node's job gets ``job_slice_number`` = its ``job_slice`` and ``job_slice_count`` = the number of nodes
  (``awx/main/models/workflow.py:383-388``), and ``allow_simultaneous``.
- The slice's inventory: the inventory's *enabled* hosts ordered by name (``order_by('name')``: the database's
  collation), then ``hosts[k-1::N]``, i.e. dealt round-robin (``awx/main/models/inventory.py:282-299`` and
  ``:301-309``; ``awx/main/tasks/jobs.py:326-333`` passes the job's slice number and count). AWX's own example
  (``awx/main/tests/functional/models/test_inventory.py:65-69``): host0..host2 in 3 slices, one each;
  ``awx/main/tests/functional/models/test_unified_job.py:272-274``: a 4th host goes to slice 1 (2, 1, 1).
- What the slice's playbook sees: **not** its slice number nor the count. The extra vars are ``awx_meta_vars``
  (``awx/main/models/unified_jobs.py:1554-1598``, under both prefixes ``awx_`` and ``tower_``,
  ``awx/main/constants.py:100-103``): ``awx_job_id`` (the slice's own job, different in every slice),
  ``awx_workflow_job_id`` / ``_name`` / ``_launch_type`` (the sliced workflow job: **the same in every slice of one
  launch, new on every launch**), inventory, user, schedule, and for jobs template, project revision and
  ``awx_execution_node`` (``jobs.py:813-829``). The node's ``ancestor_artifacts`` reach a job's extra vars only for
  non-root nodes (``workflow.py:346-372``: ``aa_dict`` is built from parents), so ``job_slice`` does not. The
  environment adds ``JOB_ID``, ``INVENTORY_ID``, ``PROJECT_REVISION``, ``AWX_HOST`` (``awx/main/tasks/jobs.py:893-901``).
- So a slice knows its run (the workflow job id) from its variables, but its ``k/N`` only from AWX's API
  (``GET $AWX_HOST/api/v2/jobs/$JOB_ID/`` has ``job_slice_number`` and ``job_slice_count``, with a credential that
  may read the job) or from an explicit ``plan_slice``: ``awx_slice`` takes that job record when the caller has it.
- Capacity: a slice's impact is ``min(hosts in its slice, forks) + 1`` (``jobs.py:690-702``); AWX does not promise the
  slices run at the same time.

Host order: AWX sorts in PostgreSQL with the database's collation. ``slice_hosts`` sorts by code point (the ``C``
collation); both agree on names of lowercase letters and digits of one shape, and may differ where names mix case
or punctuation (``en_US``: ``ab`` < ``a-c``; ``C``: ``a-c`` < ``ab``). The meeting does not depend on it: every
slice publishes the hosts it was given (``meeting.Meeting.publish``), so the fleet is the union of what AWX dealt.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError

# extra vars AWX gives every job of a workflow, under its two prefixes (awx/main/constants.py:100-103)
WORKFLOW_JOB_VARIABLES = ("awx_workflow_job_id", "tower_workflow_job_id")
JOB_VARIABLES = ("awx_job_id", "tower_job_id")
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


@dataclass(frozen=True)
class AwxSlice:
    """What a job of a sliced AWX job knows of itself: the run every slice shares (``run_id``, from the workflow job),
    its own job, and its ``k/N`` when the caller read it from AWX's API (else None: ``plan_slice`` must say it)."""

    run_id: str
    job_id: str
    slice: SliceId | None


def slice_hosts(hosts, number: int, count: int) -> list:
    """The hosts slice ``number`` of ``count`` gets, as AWX deals them (``Inventory.get_sliced_hosts``,
    awx/main/models/inventory.py:282-299): sorted by name, then every ``count``-th from the ``number``-th on. A count
    of 1 (or a number 0: not sliced) gets every host, sorted."""
    ordered = sorted(hosts)
    if count > 1 and number > 0:
        return ordered[number - 1::count]
    return ordered


def awx_slice(extra_vars, environ, job=None) -> AwxSlice | None:
    """The slice a job of a sliced AWX job is, from its extra vars and environment (see the module's notes), or None
    when it runs in no workflow (not sliced), or ``job`` (its record from AWX's API) says it is not sliced.

    ``job``: the job's record (``job_slice_number``, ``job_slice_count``) when the caller read it; without it the slice
    is None (AWX does not put it in a job's variables)."""
    extra_vars = extra_vars if isinstance(extra_vars, dict) else {}
    environ = environ if environ is not None else {}
    workflow = _first(extra_vars, WORKFLOW_JOB_VARIABLES)
    if workflow is None:
        return None
    job_id = _first(extra_vars, JOB_VARIABLES) or str(environ.get("JOB_ID") or "")
    found = None
    if isinstance(job, dict):
        count, number = job.get("job_slice_count"), job.get("job_slice_number")
        if count in (None, 0, 1):
            return None
        found = SliceId(number, count) if isinstance(number, int) else None
        if found is None:
            raise SliceError(f"AWX job {job_id}: job_slice_number {number!r} is not a whole number")
    return AwxSlice(run_id=awx_run_id(workflow, environ.get("AWX_HOST")), job_id=job_id, slice=found)


def awx_run_id(workflow_job_id: str, awx_host=None) -> str:
    """The run ID of a sliced job: ``awx-<workflow job id>``, with a short digest of ``AWX_HOST`` when known, so two
    AWX installations sharing a coordination namespace never meet in one run."""
    if awx_host:
        return f"awx-{hashlib.sha256(str(awx_host).encode()).hexdigest()[:6]}-{workflow_job_id}"
    return f"awx-{workflow_job_id}"


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


def _first(values: dict, names) -> str | None:
    for name in names:
        value = values.get(name)
        if isinstance(value, bool):
            continue
        if isinstance(value, int) or (isinstance(value, str) and value.strip().isdigit()):
            return str(value).strip()
    return None
