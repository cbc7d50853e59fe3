# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Slices of one run meet through the Kubernetes API of a coordination cluster: presence, barriers, a shared verdict
and small shared facts, in objects any Kubernetes user can inspect.

Objects (namespace: the user's ``plan_coordination.namespace``; ``<run>``: the run ID every slice shares, see
``slices.py``), all labelled ``phasekit.kube/run=<run>``, ``phasekit.kube/plan=<plan>``,
``phasekit.kube/meeting=presence|barrier|facts`` and ``app.kubernetes.io/managed-by=phasekit.kube``, so that
``kubectl get leases,configmaps -n <ns> -l phasekit.kube/run=<run>`` shows a run's meeting:

- presence: a ``coordination.k8s.io/v1`` Lease per slice, ``phasekit-slices-<run>-slice-<k>``, ``holderIdentity``
  ``slice k/N on <controller> pid <pid>``, ``leaseDurationSeconds``, ``renewTime`` renewed by a thread every third
  of the duration (as the run lock is, ``running/lock.py`` ``due_for_renewal``).
- barriers: a ConfigMap per barrier, ``phasekit-slices-<run>-barrier-<sha256 of its name, 12 hex>``, its name in
  the annotation ``phasekit.kube/barrier``, a key ``slice-<k>`` per slice that arrived (``{"at": <its time>}``), and
  ``verdict`` (``{"reason", "by"}``) once a slice stopped the run there.
- facts: one ConfigMap ``phasekit-slices-<run>-facts``, a key ``<fact>.<k>`` per fact and slice, JSON.

Writes: server-side apply, one field manager per slice (``phasekit-slice-<k>``), so a slice owns its own keys and
two slices never overwrite each other (the API server merges under its own optimistic concurrency, so no
read-modify-write round trip and no lost update); an apply creates the object when it is missing, so an arrival is
one request. The verdict is the one field two slices may both want: the second apply is refused with 409 (a field
another manager owns), so the first verdict wins and every slice reads that one. A manager's apply is its whole
intent for the object (a field it leaves out is removed), so a slice applies all its facts each time.

Timing: a slice is judged gone as client-go's leader election judges a lease (kubernetes/client-go at 32ce75a7d,
``tools/leaderelection/leaderelection.go``: the package note at 22-28 "only uses their change to indicate that
another client has renewed"; ``tryAcquireOrRenew`` at 444 re-dates the record when its raw bytes changed (487);
``isLeaseValid`` at 548: observedTime + LeaseDurationSeconds after now; ``setObservedRecord`` at 558-563 takes the
observer's ``clock.Now()``; ``resourcelock/leaselock.go`` 122-160: the Lease's spec holderIdentity,
leaseDurationSeconds, acquireTime, renewTime): by the observer's own monotonic clock since it last saw the Lease's
record (holder, renewTime) change, never by comparing its clock with the times written there. So a
slice that stops renewing is named between one and about one and a third lease durations after its last renewal
(plus one presence look, every quarter duration). A slice removed its Lease (``finish``, or a cancelled job's
clean-up) is named at the next look. A slice never seen (no Lease) fails the waiters only after ``arrival_timeout``
from the start of their wait: AWX does not promise that slices run at once. A slice present but not arrived is
working on its phase and is waited for as long as it renews. A waiter reads its barrier every ``poll`` seconds
(the cost of a barrier is about ``poll / 2`` after the last arrival, ``bench/slices.py``).

Clean-up: ``finish`` stops the renewal and removes this slice's Lease; the slice that finds no Lease of the run left
removes the run's ConfigMaps (barriers, facts). A run whose slices died leaves its objects, which show where it
stopped; they are never reused (the run ID is new on every launch) and ``kubectl delete leases,configmaps -n <ns>
-l phasekit.kube/run=<run>`` removes them. Two last slices finishing at the same instant may both see the other and
leave them too (harmless, labelled).

The runner's side (``run_meeting.SliceMeet``): a barrier after each phase of the line, a rollout's batches and its
failure budget over every slice's clusters (facts), and the start check of the plan's cluster names.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable
from urllib.parse import quote, unquote

from ansible_collections.phasekit.kube.plugins.module_utils.coordination.slices import SliceId, check_run_id
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kube.session import (
    APPLY_PATCH, ApiError, ApiSession, TransportError, describe_api_error)

PREFIX = "phasekit-slices-"
RUN_LABEL = "phasekit.kube/run"
PLAN_LABEL = "phasekit.kube/plan"
SLICE_LABEL = "phasekit.kube/slice"
MEETING_LABEL = "phasekit.kube/meeting"   # presence, barrier or facts
MANAGED_BY = {"app.kubernetes.io/managed-by": "phasekit.kube"}
BARRIER_ANNOTATION = "phasekit.kube/barrier"
VERDICT_KEY = "verdict"
PRESENCE, BARRIER, FACTS = "presence", "barrier", "facts"
DEFAULT_LEASE_SECONDS = 30
MIN_LEASE_SECONDS = 2
DEFAULT_ARRIVAL_TIMEOUT = 600.0
DEFAULT_POLL = 0.2
MAX_FACT_BYTES = 256 * 1024               # a ConfigMap holds 1 MiB in all
FACT_KEY = re.compile(r"^[A-Za-z0-9][-_A-Za-z0-9]{0,99}$")   # no '.': it ends a key with the slice
NAMESPACE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
LABEL_VALUE = re.compile(r"^[A-Za-z0-9]([-_.A-Za-z0-9]{0,61}[A-Za-z0-9])?$")
MICRO = "%Y-%m-%dT%H:%M:%S.%fZ"


class MeetingError(PhasekitError):
    """The meeting cannot go on: bad settings, a refusal of the coordination cluster (``status``: its HTTP status),
    or a fact refused."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


class MeetingFailed(MeetingError):
    """Slices the run waits for are gone or never started: ``slices`` names them (``k/N``)."""

    def __init__(self, message: str, slices: tuple = ()):
        super().__init__(message)
        self.slices = tuple(slices)


class Stopped(MeetingError):
    """A slice stopped the run at a barrier (``verdict``): every slice at that barrier stops there."""

    def __init__(self, verdict: Verdict, run_id: str):
        super().__init__(f"run {run_id}: stopped at barrier {verdict.barrier!r} by slice {verdict.by}: {verdict.reason}")
        self.verdict = verdict


@dataclass(frozen=True)
class MeetingSettings:
    """Where slices meet and how patiently: ``namespace`` of the coordination cluster, the shared ``run_id``, the
    plan's name (a label), each Lease's duration (seconds), how long a waiter waits for a slice never seen
    (``arrival_timeout``, seconds) and how often it reads its barrier (``poll``, seconds)."""

    namespace: str
    run_id: str
    plan: str = ""
    lease_duration: int = DEFAULT_LEASE_SECONDS
    arrival_timeout: float = DEFAULT_ARRIVAL_TIMEOUT
    poll: float = DEFAULT_POLL

    def __post_init__(self):
        if not isinstance(self.namespace, str) or not NAMESPACE.match(self.namespace):
            raise MeetingError(f"plan_coordination.namespace: {self.namespace!r} is not a namespace name (a DNS label: "
                               f"lowercase letters, digits and '-', at most 63)")
        check_run_id(self.run_id)
        if not isinstance(self.lease_duration, int) or isinstance(self.lease_duration, bool) \
                or self.lease_duration < MIN_LEASE_SECONDS:
            raise MeetingError(f"lease duration {self.lease_duration!r}: expected whole seconds, at least "
                               f"{MIN_LEASE_SECONDS}")
        for name in ("arrival_timeout", "poll"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0 or \
                    (name == "poll" and value == 0):
                raise MeetingError(f"{name} {value!r}: expected seconds, a positive number")


@dataclass(frozen=True)
class Verdict:
    """A slice's word to stop the run at ``barrier``, and why."""

    barrier: str
    reason: str
    by: str


@dataclass(frozen=True)
class Seen:
    """A slice's Lease as this slice last saw it: its record (``marker``: holder and renewTime), when that record last
    changed by this slice's clock (``since``), its duration, and whether the Lease is gone (after being seen)."""

    marker: str
    since: float
    duration: float
    holder: str
    gone: bool = False


@dataclass(frozen=True)
class Judgement:
    """The slices a waiter gives up on: ``dead`` (stopped renewing), ``left`` (removed their Lease), ``never`` (never
    seen within the arrival timeout)."""

    dead: tuple = ()
    left: tuple = ()
    never: tuple = ()

    def __bool__(self) -> bool:
        return bool(self.dead or self.left or self.never)


def observe(seen: dict, leases: dict, now: float) -> dict:
    """What this slice knows of the others after a look at their Leases (``leases``: slice number -> (marker,
    duration, holder)): a record that changed (or appeared) is dated ``now``; an unchanged one keeps its date (so it
    ages, as client-go's ``observedTime`` does); one seen before and missing now is gone."""
    known = {}
    for number, (marker, duration, holder) in leases.items():
        before = seen.get(number)
        if before is None or before.gone or before.marker != marker:
            known[number] = Seen(marker, now, duration, holder)
        else:
            known[number] = Seen(marker, before.since, duration, holder)
    for number, before in seen.items():
        if number not in leases:
            known[number] = Seen(before.marker, before.since, before.duration, before.holder, gone=True)
    return known


def judge(missing, seen: dict, now: float, waited: float, arrival_timeout: float) -> Judgement:
    """Which of the ``missing`` slices (not arrived at the barrier) a waiter gives up on, by its own clock ``now``:
    one whose Lease did not change for longer than its duration is dead; one whose Lease went away left; one never
    seen after ``arrival_timeout`` of waiting never started. Any other is working and is waited for."""
    dead, left, never = [], [], []
    for number in sorted(missing):
        record = seen.get(number)
        if record is None:
            if waited >= arrival_timeout:
                never.append(number)
        elif record.gone:
            left.append(number)
        elif now - record.since > record.duration:
            dead.append(number)
    return Judgement(tuple(dead), tuple(left), tuple(never))


def missing_slices(data: dict, count: int) -> list[int]:
    """The slices with no arrival key in a barrier's data."""
    return [number for number in range(1, count + 1) if f"slice-{number}" not in data]


def verdict_of(data: dict, barrier: str) -> Verdict | None:
    """The verdict in a barrier's data, or None; one a person wrote badly still stops the run (its text as reason)."""
    text = data.get(VERDICT_KEY)
    if text is None:
        return None
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        return Verdict(barrier=barrier, reason=str(text)[:500], by="?")
    return Verdict(barrier=barrier, reason=str(parsed.get("reason") or "no reason given"), by=str(parsed.get("by") or "?"))


def label_value(text: str) -> str:
    """``text`` as a label value: itself when it is one, else its slug and a digest (so two plans keep apart)."""
    if LABEL_VALUE.match(text or ""):
        return text
    slug = re.sub(r"[^-_.A-Za-z0-9]+", "-", text or "").strip("-_.")[:50]
    digest = hashlib.sha256((text or "").encode()).hexdigest()[:8]
    return f"{slug}-{digest}" if slug else digest


def micro_time(epoch: float) -> str:
    """A Lease's MicroTime."""
    return datetime.fromtimestamp(epoch, timezone.utc).strftime(MICRO)


class MeetingNames:
    """The names of a run's meeting objects and their label selector (``Meeting`` is one)."""

    def __init__(self, settings: MeetingSettings):
        self.settings = settings

    def lease_name(self, number: int) -> str:
        return f"{self._lease_prefix()}{number}"

    def _lease_prefix(self) -> str:
        return f"{PREFIX}{self.settings.run_id}-slice-"

    def barrier_name(self, barrier: str) -> str:
        return f"{PREFIX}{self.settings.run_id}-barrier-{hashlib.sha256(barrier.encode()).hexdigest()[:12]}"

    def facts_name(self) -> str:
        return f"{PREFIX}{self.settings.run_id}-facts"

    def selector(self, meeting: str | None = None) -> str:
        """The label selector of the run's objects (of one kind)."""
        return f"{RUN_LABEL}={self.settings.run_id}" + (f",{MEETING_LABEL}={meeting}" if meeting else "")


class Meeting(MeetingNames):
    """This slice's side of a run's meeting. ``join`` (or ``with``) before the first barrier, ``finish`` after the last.

    ``session``: an ``ApiSession`` to the coordination cluster (its own: the renewal thread shares it). ``clock`` and
    ``sleep``: the observer's clock (monotonic) and how it waits, settable for tests."""

    def __init__(self, session: ApiSession, slice_id: SliceId, settings: MeetingSettings, *, clock=time.monotonic,
                 sleep=time.sleep, wall=time.time, identity: str | None = None):
        super().__init__(settings)
        self.session = session
        self.slice = slice_id
        self.identity = identity or f"slice {slice_id} on {socket.gethostname()} pid {os.getpid()}"
        self.requests = 0                  # requests of arrive/stop/wait (the renewals not counted)
        self.problems: list[str] = []      # what clean-up could not do
        self._clock, self._sleep, self._wall = clock, sleep, wall
        self._manager = f"phasekit-slice-{slice_id.number}"
        self._seen: dict[int, Seen] = {}
        self._arrived: set[str] = set()
        self._passed: str | None = None   # the last barrier this slice passed
        self._checking: dict[str, float] = {}   # barrier -> when ``check`` first looked at it
        self._next_look = 0.0                   # when ``check`` next looks at the slices' Leases
        self._facts: dict[str, str] = {}
        self._renewed: float | None = None
        self._renewal_stop = threading.Event()
        self._renewal: threading.Thread | None = None

    # ------------------------------------------------------------- presence

    def __enter__(self) -> Meeting:
        self.join()
        return self

    def __exit__(self, *_exc) -> None:
        self.finish()

    def join(self) -> None:
        """Show this slice's presence (its Lease) and renew it every third of its duration until ``finish``."""
        self._renew(attempts=None)
        if self._renewal is None:
            self._renewal_stop.clear()   # joined again after a finish
            self._renewal = threading.Thread(target=self._renewing, name=f"phasekit-slice-{self.slice.number}-presence",
                                             daemon=True)
            self._renewal.start()

    def finish(self) -> bool:
        """Stop renewing and remove this slice's Lease; the last slice out removes the run's ConfigMaps. True when
        this slice removed them. Best effort: what fails is in ``problems``, never raised."""
        self._stop_renewal()
        namespace = self.settings.namespace
        try:
            self._request("DELETE", self.lease_path(self.lease_name(self.slice.number)), missing_ok=True)
            left = self._request("GET", self.lease_path(), query={"labelSelector": self.selector(PRESENCE)})
            if (left or {}).get("items"):
                return False
            self._request("DELETE", f"/api/v1/namespaces/{quote(namespace)}/configmaps",
                          query={"labelSelector": self.selector()}, missing_ok=True)
            return True
        except PhasekitError as err:
            self.problems.append(str(err))
            return False

    def _renewing(self) -> None:
        while not self._renewal_stop.wait(self.settings.lease_duration / 3):
            try:
                self._renew(attempts=1)
            except PhasekitError:
                pass  # the next renewal tries again; a slice that cannot renew for a whole lease stops (``wait``)

    def _stop_renewal(self) -> None:
        self._renewal_stop.set()
        if self._renewal is not None:
            self._renewal.join(timeout=15)   # a request in flight ends by then (one attempt)
            self._renewal = None

    def _renew(self, attempts: int | None) -> None:
        lease = self.presence_lease(self._wall())
        self._apply(self.lease_path(lease["metadata"]["name"]), lease, force=True, attempts=attempts, counted=False)
        self._renewed = self._clock()

    def presence_lease(self, now: float) -> dict:
        return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": self._metadata(self.lease_name(self.slice.number), PRESENCE,
                                           {SLICE_LABEL: f"{self.slice.number}-of-{self.slice.count}"}),
                "spec": {"holderIdentity": self.identity, "leaseDurationSeconds": self.settings.lease_duration,
                         "renewTime": micro_time(now)}}

    def _look(self, now: float) -> None:
        """Look at every slice's Lease (one LIST) and date what changed (``observe``)."""
        body = self._request("GET", self.lease_path(), query={"labelSelector": self.selector(PRESENCE)}) or {}
        leases = presence_leases(body.get("items") or [], self._lease_prefix(), self.settings.lease_duration)
        self._seen = observe(self._seen, leases, now)

    # ------------------------------------------------------------- barriers

    def arrive(self, barrier: str) -> None:
        """Record this slice's arrival at ``barrier`` (once: a second arrival at one barrier writes nothing)."""
        if barrier in self._arrived:
            return
        self._apply_barrier(barrier, {})
        self._arrived.add(barrier)

    def stop(self, reason: str, barrier: str) -> None:
        """Tell every slice to stop at ``barrier`` (this slice arrives there too). The first verdict at a barrier wins:
        another slice's, when it came first, is the one ``wait`` raises. ``reason`` is read by every slice and kept in
        the cluster: never a secret."""
        if barrier == self._passed:
            raise MeetingError(f"run {self.settings.run_id}: slice {self.slice}: cannot stop the run at barrier "
                               f"{barrier!r}: every slice passed it already; stop at the next one")
        verdict = json.dumps({"reason": str(reason), "by": str(self.slice)}, sort_keys=True)
        try:
            self._apply_barrier(barrier, {VERDICT_KEY: verdict})
        except MeetingError as err:
            if err.status != 409:
                raise
            self.arrive(barrier)   # another slice's verdict came first
        self._arrived.add(barrier)

    def wait(self, barrier: str) -> float:
        """Arrive at ``barrier`` (if not yet) and return once every slice arrived there (the seconds waited). Raise
        ``Stopped`` when a slice stopped the run there, ``MeetingFailed`` naming the slices given up on (``judge``)."""
        self.arrive(barrier)
        began = next_look = self._clock()
        while True:
            state, next_look = self._state(barrier, began, next_look)
            if state is False:
                self._sleep(self.settings.poll)
                continue
            self._passed = barrier
            if state is True:
                return self._clock() - began
            raise Stopped(state, self.settings.run_id)

    def check(self, barrier: str) -> Verdict | bool:
        """One look at ``barrier``, where this slice arrived, for a waiter over several barriers at once (a graph
        run's): its verdict, True once every slice arrived, False while some slice works on; ``MeetingFailed`` as
        ``wait`` raises it, timed from the first check of the barrier."""
        began = self._checking.setdefault(barrier, self._clock())
        state, self._next_look = self._state(barrier, began, self._next_look)
        return state

    def _state(self, barrier: str, began: float, next_look: float) -> tuple:
        """The barrier's verdict, True (every slice arrived) or False, and when to look at the Leases next (a
        slice given up on raises ``MeetingFailed``)."""
        data = self._barrier_data(barrier)
        verdict = verdict_of(data, barrier)
        if verdict is not None:
            return verdict, next_look
        missing = missing_slices(data, self.slice.count)
        if not missing:
            return True, next_look
        now = self._clock()
        self._check_own_presence(now, barrier)
        if now >= next_look:
            next_look = now + max(self.settings.poll, self.settings.lease_duration / 4)
            self._look(now)
            judgement = judge(missing, self._seen, now, now - began, self.settings.arrival_timeout)
            if judgement and missing_slices(self._barrier_data(barrier), self.slice.count) != missing:
                return False, next_look     # a slice arrived, then finished, between the two reads: not gone early
            if judgement:
                raise MeetingFailed(self._failure_message(barrier, judgement, now),
                                    tuple(f"{n}/{self.slice.count}" for n in
                                          judgement.dead + judgement.left + judgement.never))
        return False, next_look

    def _apply_barrier(self, barrier: str, extra: dict) -> None:
        name = self.barrier_name(barrier)
        arrival = json.dumps({"at": micro_time(self._wall()), "by": self.identity}, sort_keys=True)
        configmap = {"apiVersion": "v1", "kind": "ConfigMap",
                     "metadata": {**self._metadata(name, BARRIER), "annotations": {BARRIER_ANNOTATION: barrier}},
                     "data": {f"slice-{self.slice.number}": arrival, **extra}}
        self._apply(self._configmap_path(name), configmap)

    def _barrier_data(self, barrier: str) -> dict:
        found = self._request("GET", self._configmap_path(self.barrier_name(barrier)), missing_ok=True)
        return (found or {}).get("data") or {}

    def _check_own_presence(self, now: float, barrier: str) -> None:
        """A slice that could not renew its own Lease for a whole duration is judged gone by the others: it stops."""
        if self._renewed is not None and now - self._renewed > self.settings.lease_duration:
            raise MeetingFailed(
                f"run {self.settings.run_id}: slice {self.slice} at barrier {barrier!r}: could not renew its presence "
                f"Lease {self.settings.namespace}/{self.lease_name(self.slice.number)} for "
                f"{now - self._renewed:.0f}s (lease {self.settings.lease_duration}s): the other slices judge it "
                f"gone, so it stops here too", (str(self.slice),))

    def _failure_message(self, barrier: str, judgement: Judgement, now: float) -> str:
        where = (f"after barrier {self._passed!r}, before arriving at {barrier!r}" if self._passed is not None
                 else f"before arriving at its first barrier {barrier!r}")
        parts = given_up_reasons(judgement, self._seen, self.settings, self.slice.count, self.lease_name, barrier,
                                 where, now)
        return f"run {self.settings.run_id}: slice {self.slice} at barrier {barrier!r}: " + "; ".join(parts) + \
            ". This slice stops here."

    # ------------------------------------------------------------- facts

    def publish(self, key: str, value, *, secret: bool = False) -> None:
        """Share a small JSON fact with every slice (``read``). Never a secret: a value marked ``secret`` is refused
        (the facts are a ConfigMap any reader of the namespace reads)."""
        self._facts[key] = fact_text(key, value, secret=secret, namespace=self.settings.namespace)
        name = self.facts_name()
        configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": self._metadata(name, FACTS),
                     # this slice's whole intent: every fact it published (a key left out would be removed)
                     "data": {f"{fact}.{self.slice.number}": kept for fact, kept in self._facts.items()}}
        self._apply(self._configmap_path(name), configmap)

    def read(self, key: str) -> dict:
        """Every slice's value of fact ``key``: slice number -> value (slices that did not publish it are left out)."""
        found = self._request("GET", self._configmap_path(self.facts_name()), missing_ok=True) or {}
        return fact_values(found.get("data") or {}, key, f"{self.settings.namespace}/{self.facts_name()}")

    # ------------------------------------------------------------- requests

    def _metadata(self, name: str, meeting: str, labels: dict | None = None) -> dict:
        return {"name": name, "namespace": self.settings.namespace,
                "labels": {RUN_LABEL: self.settings.run_id, PLAN_LABEL: label_value(self.settings.plan or "all"),
                           MEETING_LABEL: meeting, **MANAGED_BY, **(labels or {})}}

    def lease_path(self, name: str | None = None) -> str:
        path = f"/apis/coordination.k8s.io/v1/namespaces/{quote(self.settings.namespace)}/leases"
        return path if name is None else f"{path}/{quote(name)}"

    def _configmap_path(self, name: str) -> str:
        return f"/api/v1/namespaces/{quote(self.settings.namespace)}/configmaps/{quote(name)}"

    def _apply(self, path: str, obj: dict, *, force: bool = False, attempts: int | None = None,
               counted: bool = True) -> None:
        query = {"fieldManager": self._manager, "fieldValidation": "Strict"}
        if force:
            query["force"] = "true"
        self._request("PATCH", path, query=query, body=obj, content_type=APPLY_PATCH, attempts=attempts,
                      counted=counted)

    def _request(self, method: str, path: str, *, missing_ok: bool = False, counted: bool = True, **kwargs):
        if counted:
            self.requests += 1
        try:
            return self.session.request(method, path, **kwargs).body
        except ApiError as err:
            if missing_ok and err.status == 404:
                return None
            if err.status == 409 and PLAN_LABEL in err.message:
                raise MeetingError(f"run {self.settings.run_id}: slice {self.slice}: another slice of this run ID runs "
                                   f"another plan than {self.settings.plan or 'all'!r} (label {PLAN_LABEL} of "
                                   f"{unquote(path.rsplit('/', 1)[-1])} in namespace {self.settings.namespace}): "
                                   f"every slice of a run runs the same plan; give each run its own plan_run_id",
                                   409) from None
            raise MeetingError(f"run {self.settings.run_id}: slice {self.slice}: coordination cluster "
                               f"{self.session.server}: {method} {path}: {describe_api_error(err)}", err.status) from None
        except TransportError as err:
            raise MeetingError(f"run {self.settings.run_id}: slice {self.slice}: coordination cluster: {err}") from None


def presence_leases(items: list, prefix: str, default_duration: float) -> dict:
    """The slices' presence Leases (``items`` of a LIST) as ``observe`` takes them: slice number -> (what changes at
    each renewal, lease duration, holder)."""
    leases = {}
    for item in items:
        number = _slice_number((item.get("metadata") or {}).get("name", ""), prefix)
        spec = item.get("spec") or {}
        if number is None:
            continue
        marker = f"{spec.get('holderIdentity')}|{spec.get('renewTime')}"
        leases[number] = (marker, float(spec.get("leaseDurationSeconds") or default_duration),
                          str(spec.get("holderIdentity") or "?"))
    return leases


def given_up_reasons(judgement: Judgement, seen: dict, settings: MeetingSettings, count: int,
                     lease_name: Callable[[int], str], barrier: str, where: str, now: float) -> list[str]:
    """Why each slice was given up on (``judge``): dead, left, or never started, each said with its Lease."""
    parts = []
    for number in judgement.dead:
        last = seen[number]
        parts.append(f"slice {number}/{count} stopped renewing its presence (Lease {settings.namespace}/"
                     f"{lease_name(number)}, held by {last.holder!r}, unchanged for {now - last.since:.0f}s "
                     f"by this slice's clock, lease {last.duration:g}s): it died or was cancelled {where}")
    for number in judgement.left:
        parts.append(f"slice {number}/{count} left the run (its presence Lease {settings.namespace}/"
                     f"{lease_name(number)} was removed: it finished or was cancelled) {where}")
    if judgement.never:
        names = ", ".join(f"{number}/{count}" for number in judgement.never)
        parts.append(
            f"slice(s) {names} never started: no presence Lease in namespace {settings.namespace} within "
            f"arrival_timeout ({settings.arrival_timeout:g}s) of waiting at barrier {barrier!r}. AWX did not start "
            f"them, most likely for lack of capacity: all {count} slices of this job must run at the same time, so "
            f"its instance group needs capacity for {count} jobs at once (each takes min(forks, hosts in its "
            f"slice) + 1); add capacity, lower Job Slicing, or raise the arrival timeout")
    return parts


def fact_text(key, value, *, secret: bool, namespace: str) -> str:
    """A fact's value as the JSON kept for it; refused (``MeetingError``) when its key, secrecy or size is wrong."""
    if not isinstance(key, str) or not FACT_KEY.match(key):
        raise MeetingError(f"fact {key!r}: a fact's key is 1 to 100 letters, digits, '-' and '_', starting with a "
                           f"letter or digit")
    if secret:
        raise MeetingError(f"fact {key!r}: refused: its value is marked secret, and facts shared between slices are "
                           f"kept in a ConfigMap any reader of namespace {namespace} reads")
    try:
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as err:
        raise MeetingError(f"fact {key!r}: its value is not JSON ({type(err).__name__}: {err})") from None
    if len(text.encode()) > MAX_FACT_BYTES:
        raise MeetingError(f"fact {key!r}: {len(text.encode())} bytes of JSON, more than the {MAX_FACT_BYTES} a "
                           f"fact may have")
    return text


def fact_values(data: dict, key: str, configmap: str) -> dict:
    """Every slice's value of fact ``key`` in the facts ConfigMap's ``data``: slice number -> value, in order."""
    values = {}
    for data_key, text in data.items():
        fact, number = data_key.rpartition(".")[::2]
        if fact != key or not number.isdigit():
            continue
        try:
            values[int(number)] = json.loads(text)
        except ValueError as err:
            raise MeetingError(f"fact {key!r} of slice {number}: ConfigMap {configmap} "
                               f"key {data_key!r} is not JSON (edited by hand?): {err}") from None
    return dict(sorted(values.items()))


def _slice_number(name: str, prefix: str) -> int | None:
    rest = name[len(prefix):] if name.startswith(prefix) else ""
    return int(rest) if rest.isdigit() else None


def claim_number(session: ApiSession, count: int, settings: MeetingSettings) -> Meeting:
    """A meeting whose slice number nobody told (AWX gives a slice's job neither its number nor the count): the first
    of ``1..count`` whose presence Lease no other slice of the run made yet, taken by creating it (the API server lets
    one create win), joined. Refused when every number is taken."""
    for number in range(1, count + 1):
        meeting = Meeting(session, SliceId(number, count), settings)
        try:
            session.request("POST", meeting.lease_path(), body=meeting.presence_lease(time.time()),
                            query={"fieldManager": f"phasekit-slice-{number}"})
        except ApiError as err:
            if err.status == 409:
                continue
            raise MeetingError(f"run {settings.run_id}: coordination cluster {session.server}: POST "
                               f"{meeting.lease_path()}: {describe_api_error(err)}", err.status) from None
        except TransportError as err:
            raise MeetingError(f"run {settings.run_id}: coordination cluster: {err}") from None
        meeting.join()
        return meeting
    raise MeetingError(f"run {settings.run_id}: every one of the {count} slice numbers is taken in namespace "
                       f"{settings.namespace}: more slices of this run started than plan_slice's count ({count}); "
                       f"make it AWX's Job Slicing count")
