# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""A sliced run's side of the meeting, as the runner uses it: where the slices meet (``CoordinationSettings``, from
the role's ``plan_coordination``), and ``SliceMeet``: after each phase of the run list ends on this slice's clusters,
this slice waits at that phase's barrier until every slice ended it there, or tells them all to stop there when the
phase failed here.

Barriers are named ``<mode> <phase>`` (``run apps``): a destroy of the same run ID never meets a run's barriers.
"""

from __future__ import annotations

import hashlib
import queue
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable

from ansible_collections.phasekit.kube.plugins.module_utils.awx.jobs import awx_slice
from ansible_collections.phasekit.kube.plugins.module_utils.coordination.meeting import (
    DEFAULT_ARRIVAL_TIMEOUT, DEFAULT_LEASE_SECONDS, DEFAULT_POLL, Meeting, MeetingError, MeetingSettings, Stopped,
    claim_number)
from ansible_collections.phasekit.kube.plugins.module_utils.coordination.slices import (
    SliceError, SliceId, asked_slice, check_run_id)
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kube.client import api_client
from ansible_collections.phasekit.kube.plugins.module_utils.kube.session import ApiSession
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.resolve import resolve_kubeconfig
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.sources import SourceSpec

WHERE = "plan_coordination"
# run_phases' option coordination (the role's plan_coordination): Ansible's argument-spec validator checks its keys
# and types, and fills in the defaults
COORDINATION_OPTIONS = {
    "kubeconfig": {"type": "path"},
    "context": {"type": "str", "default": ""},
    "namespace": {"type": "str"},
    "lease_seconds": {"type": "int", "default": DEFAULT_LEASE_SECONDS},
    "arrival_timeout": {"type": "float", "default": DEFAULT_ARRIVAL_TIMEOUT},
    "poll": {"type": "float", "default": DEFAULT_POLL},
}


@dataclass(frozen=True)
class CoordinationSettings:
    """Where the slices of a run meet: the coordination cluster's ``kubeconfig`` file and ``context`` (empty: its
    current context), the ``namespace`` their objects go in, each slice's presence lease (seconds), how long a slice
    waits at a barrier for a slice never seen (``arrival_timeout``, seconds) and how often it looks (``poll``)."""

    kubeconfig: str
    namespace: str
    context: str = ""
    lease_seconds: int = DEFAULT_LEASE_SECONDS
    arrival_timeout: float = DEFAULT_ARRIVAL_TIMEOUT
    poll: float = DEFAULT_POLL

    @classmethod
    def parse(cls, value: dict) -> CoordinationSettings:
        """``plan_coordination`` as Ansible's validator left it (``COORDINATION_OPTIONS``): a sliced run needs the
        coordination cluster's kubeconfig and the namespace, a clear error without them."""
        for key in ("kubeconfig", "namespace"):
            if not value.get(key):
                raise SliceError(f"{WHERE}.{key} is required for a sliced run (plan_slice): the coordination "
                                 f"cluster's kubeconfig file and the namespace where the slices meet")
        return cls(**{key: value[key] for key in COORDINATION_OPTIONS if value.get(key) is not None})

    def meeting_settings(self, run_id: str, plan: str) -> MeetingSettings:
        try:
            return MeetingSettings(namespace=self.namespace, run_id=run_id, plan=plan,
                                   lease_duration=self.lease_seconds, arrival_timeout=float(self.arrival_timeout),
                                   poll=float(self.poll))
        except MeetingError as err:
            raise SliceError(f"{WHERE}: {err}") from None


@contextmanager
def joined_meeting(sliced: SlicedRun, plan: str):
    """This slice's ``Meeting``, joined (its presence Lease renewed; its number claimed first for ``*/N``) for the
    block and finished after it."""
    settings = sliced.coordination
    try:
        resolution = resolve_kubeconfig([SourceSpec(1, "path", settings.kubeconfig)], settings.context or None)
    except PhasekitError as err:
        raise SliceError(f"{WHERE}: the coordination cluster's kubeconfig {settings.kubeconfig}: {err}") from None
    with api_client(resolution.config) as api:
        chosen = settings.meeting_settings(sliced.run_id, plan)
        if sliced.claim:
            meeting = claim_number(ApiSession(api), sliced.slice.count, chosen)
        else:
            meeting = Meeting(ApiSession(api), sliced.slice, chosen)
            meeting.join()
        try:
            yield meeting
        finally:
            meeting.finish()


def _digest(name: str) -> str:
    """A phase's name in a fact's key (which takes letters, digits, '-' and '_' only)."""
    return hashlib.sha256(name.encode()).hexdigest()[:12]


class SliceMeet:
    """The runner's barrier after each unit of a line (``run_phases``' ``meet``): ``(unit, why this slice stops
    there)`` -> why the run stops there ("": every slice ended the unit; go on)."""

    def __init__(self, meeting: Meeting, mode: str):
        self.meeting = meeting
        self.mode = mode
        self.waited = 0.0          # seconds spent at barriers, in all
        self.barriers = 0

    def start(self, have: list[str], lack: list[str]) -> None:
        """Before the first phase: every slice present (a slice never started fails the run here, before any
        cluster is touched), and each cluster name of the plan this slice lacks (``lack``) is a host or group of some
        slice (each slice publishes the names it ``have``s): a name no slice has is a typo, refused by every slice."""
        self.meeting.publish("names", sorted(have))
        self._wait(f"{self.mode} start")
        everywhere = {name for names in self.meeting.read("names").values() for name in names}
        unknown = sorted(set(lack) - everywhere)
        if unknown:
            raise SliceError(f"run {self.meeting.settings.run_id}: no slice has a host or group named "
                             f"{', '.join(map(repr, unknown))}, which the plan's phases name as their cluster "
                             f"(spec.cluster): a typo, or a host missing from the inventory")

    def fleet(self, rollout: str, clusters: list[str]) -> list[str]:
        """A rollout's clusters on every slice, sorted by name: each slice publishes its own, and reads them all
        once every slice did (``<mode> <rollout> clusters``)."""
        every = self._gathered(f"clusters-{_digest(rollout)}", sorted(clusters), f"{self.mode} {rollout} clusters")
        return sorted({host for hosts in every for host in hosts})

    def batch(self, rollout: str, number: int, failed: list[str], ran: bool) -> tuple[list[str], bool]:
        """A batch's failed clusters on every slice, and whether it ran on any (a batch every slice resumed ran
        nowhere), once every slice ended it (``<mode> <rollout> batch <k>``): the same on every slice, so every
        slice stops at the same batch, for the budget and for ``plan_rollout_stop_after``."""
        every = self._gathered(f"batch-{_digest(rollout)}-{number}", {"failed": sorted(failed), "ran": bool(ran)},
                               f"{self.mode} {rollout} batch {number}")
        return sorted({host for each in every for host in each["failed"]}), any(each["ran"] for each in every)

    def _gathered(self, key: str, value, barrier: str) -> list:
        """Every slice's ``value`` of fact ``key``, read once every slice published its own and reached ``barrier``."""
        self.meeting.publish(key, value)
        self._wait(barrier)
        return list(self.meeting.read(key).values())

    def watch(self, told: Callable) -> BarrierWatch:
        """A graph run's barriers, one per node (``BarrierWatch``)."""
        return BarrierWatch(self, told)

    def _wait(self, barrier: str) -> None:
        self.barriers += 1
        self.waited += self.meeting.wait(barrier)

    def __call__(self, unit: str, stopping: str) -> str:
        barrier = f"{self.mode} {unit}"
        try:
            if stopping:
                self.meeting.stop(stopping, barrier)
                return ""          # this slice stops by its own failure, which says why
            self._wait(barrier)
            return ""
        except Stopped as err:
            return f"{err}: this slice ({self.meeting.slice}) stops there too; no later phase starts"
        except MeetingError as err:
            return str(err)


@dataclass(frozen=True)
class BarrierWord:
    """What the slices said at a node's barrier: ``ok`` (every slice arrived, none stopped there), else the
    verdict's ``reason`` and whether another slice gave it (``elsewhere``)."""

    ok: bool
    reason: str = ""
    elsewhere: bool = False


class BarrierWatch:
    """A sliced graph run's barriers (``<mode> <node>``, as the line names its units'): the runner tells each node
    settled on this slice's clusters (``settled``); one thread arrives there (or stops the run there, with why),
    then looks at every barrier it arrived at until the slices' word on it comes, and tells it:
    ``told(node, BarrierWord)``, or ``told("", error)`` once the meeting failed (a slice gone), after which it
    looks no more. The runner's thread never waits for the meeting: the word comes on its queue of ends.

    Only this thread uses the meeting while the graph runs (and the presence renewal, as ever); a graph with a
    rollout, whose batches meet on their own thread, does not run sliced."""

    def __init__(self, meet: SliceMeet, told: Callable):
        self.meet, self.meeting, self.told = meet, meet.meeting, told
        self._inbox: queue.Queue = queue.Queue()     # (node, why it did not end well here), None: close
        self._pending: set = set()                   # nodes arrived at, whose word has not come
        self._thread = threading.Thread(target=self._watch, name="phasekit-slice-barriers", daemon=True)
        self._thread.start()

    def settled(self, node: str, why: str) -> None:
        self._inbox.put((node, why))

    def close(self) -> None:
        """Arrive at what was told settled (so no slice waits for this one) and stop looking."""
        self._inbox.put(None)
        self._thread.join()

    def _watch(self) -> None:
        try:
            while self._take():
                self._look()
        except PhasekitError as err:
            self.told("", err)

    def _take(self) -> bool:
        """Arrive or stop at each node settled since the last look, waiting up to a poll for the first (for ever
        when no word is awaited); False once closed."""
        try:
            item = self._inbox.get(timeout=self.meeting.settings.poll if self._pending else None)
        except queue.Empty:
            return True
        while item is not None:
            node, why = item
            barrier = f"{self.meet.mode} {node}"
            if why:
                self.meeting.stop(why, barrier)
            else:
                self.meeting.arrive(barrier)
            self.meet.barriers += 1
            self._pending.add(node)
            try:
                item = self._inbox.get_nowait()
            except queue.Empty:
                return True
        return False

    def _look(self) -> None:
        for node in sorted(self._pending):
            state = self.meeting.check(f"{self.meet.mode} {node}")
            if state is False:
                continue
            self._pending.discard(node)
            if state is True:
                self.told(node, BarrierWord(ok=True))
            else:
                self.told(node, BarrierWord(ok=False, reason=str(Stopped(state, self.meeting.settings.run_id)),
                                            elsewhere=state.by != str(self.meeting.slice)))


@dataclass(frozen=True)
class SlicedRun:
    """A run that is one slice of several: which slice, the run ID every slice shares, where they meet."""

    slice: SliceId
    run_id: str
    coordination: CoordinationSettings
    claim: bool = False        # "*/N": the slice's number is the first free one at the meeting

    def __str__(self) -> str:
        """The slice as given: ``k/N``, or ``*/N`` before the meeting numbered it."""
        return f"*/{self.slice.count}" if self.claim else str(self.slice)


def sliced_run(given_slice: str, coordination, run_id: str, extra_vars: dict, environ) -> SlicedRun | None:
    """The slice this run is (``plan_slice``, ``plan_run_id``, ``plan_coordination``), or None when it is not sliced
    (no slice, or ``1/1``): it then runs as it always did. Under AWX the run ID defaults from the sliced job's
    workflow job (``awx.jobs.awx_slice``); elsewhere ``plan_run_id`` must say it. A clear error for what is wrong."""
    if not given_slice:   # plan_coordination alone (kept in group_vars for sliced jobs) changes nothing
        return None
    slice_id, claim = asked_slice(given_slice)
    if slice_id.count == 1:
        return None
    awx = awx_slice(extra_vars, environ)
    chosen = run_id or (awx.run_id if awx is not None else "")
    if not chosen:
        raise SliceError(f"plan_slice {given_slice.strip()}: plan_run_id is required: the one run ID every slice of "
                         f"this run shares (under AWX it defaults from the sliced job's workflow job, "
                         f"awx_workflow_job_id)")
    return SlicedRun(slice=slice_id, run_id=check_run_id(chosen), coordination=CoordinationSettings.parse(coordination),
                     claim=claim)
