# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The run's lock on each cluster, carried by its run record: taken before the run's first write there (waiting
for a holder up to ``plan_lock_timeout``), renewed while the run holds it, released by its last write.

The rules, the holder as data and the messages are ``lock.py``'s; the record's reads and writes are
``RecordConfigMap``'s (``record.py``), which asks this lock what each write carries. What the run knows of a
cluster, its lock included, is that cluster's ``ClusterRecord``, passed in by the caller.
"""

from __future__ import annotations

import time
from typing import Callable, Protocol

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kube.session import ApiError, ApiSession
from ansible_collections.phasekit.kube.plugins.module_utils.running.cluster_record import ClusterRecord
from ansible_collections.phasekit.kube.plugins.module_utils.running.lock import (
    EXPIRED, LIVE, OURS, POLL_SECONDS, LockHolder, LockSettings, by_text, due_for_renewal, held_message, holder_gone,
    lock_state, lost_message, released, took_over_message)


class LockRefused(PhasekitError):
    """This run may not write to a cluster: another run holds its lock, or changed it since this run read it."""


def api_reason(err: Exception) -> str:
    """An error as a record's or its lock's message names it: an API answer's status, reason and message."""
    if isinstance(err, ApiError):
        return f"{err.status} {err.reason}: {err.message}".rstrip(": ")
    return str(err)


class RecordStore(Protocol):
    """What the lock asks of the record it lives in (``record.RecordConfigMap``)."""

    def read(self, host: str, cluster: ClusterRecord, attempts: int | None = None, fresh: bool = False) -> None:
        """The record as found, read once per run."""

    def store_pending(self, host: str, cluster: ClusterRecord, attempts: int | None, release: bool = False) -> None:
        """The cluster's unwritten keys stored, with the lock's annotations; raises."""

    def write_pending(self, host: str, cluster: ClusterRecord, attempts: int | None,
                      release: bool = False) -> str | None:
        """As ``store_pending``; a problem returned as a warning."""

    def name_of(self, host: str, cluster: ClusterRecord) -> str:
        """The record's name."""

    def where(self, host: str, cluster: ClusterRecord) -> str:
        """'ConfigMap ns/name' of the record."""

    def sending(self) -> bool:
        """Whether this thread sends one of the record's own requests."""


class RecordLock:
    """The run's lock in each cluster's record (see ``lock.py``), for ``RunRecords`` (which says whether the run
    locks at all: ``settings``): the holder checked or waited for, the lock taken, renewed and released, and
    every write through a guarded API session made to take it first."""

    def __init__(self, run_id: str, settings: LockSettings | None, session_for: Callable[[str], ApiSession],
                 configmap: RecordStore, *, clock: Callable[[], float], sleep: Callable[[float], None]):
        self.run_id = run_id
        self.settings = settings
        self._session_for = session_for
        self._configmap = configmap
        self._clock = clock
        self._sleep = sleep
        self._stopped = ""

    def begin(self, host: str, cluster: ClusterRecord, acquire: bool) -> None:
        """``RunRecords.begin`` with the lock: the holder checked at the host's first writing phase of the step
        (waited for with a ``timeout``), the lock taken now when ``acquire``. Raises PhasekitError."""
        self.guard(host, cluster)
        if self.settings.timeout > 0 and not cluster.begun:
            self._wait_for(host, cluster)
        with cluster.lock:
            self._configmap.read(host, cluster)
            self._usable(host, cluster)
            if not cluster.begun:
                cluster.begun = True
                self._check_holder(host, cluster)
            if acquire:
                self._acquire(host, cluster)

    def guard(self, host: str, cluster: ClusterRecord) -> None:
        """Every write through the host's API session takes the lock first; nothing is read or written now."""
        session = self._session_for(host)
        if getattr(session, "before_write", None) is None:
            session.before_write = lambda _method, _path: self._before_write(host, cluster)

    def release(self, host: str, cluster: ClusterRecord) -> str | None:
        """Release the host's lock if this run holds it (read first: an earlier step of the run took it); a problem
        is returned as a warning."""
        with cluster.lock:
            self._configmap.read(host, cluster)
            if cluster.problem or cluster.holder is None or cluster.holder.run != self.run_id:
                return None
            cluster.held = True
            return self._configmap.write_pending(host, cluster, None, release=True)

    def renew(self, host: str, cluster: ClusterRecord) -> None:
        """Renew the host's lock if this run holds it and it is due; a cluster that cannot be reached now is tried
        again next time, and one whose lock another run took is lost (its next write fails, naming the holder)."""
        with cluster.lock:
            if not cluster.held or cluster.lost:
                return
            if not due_for_renewal(cluster.holder, self.server_time(host)):
                return
            try:
                self._configmap.store_pending(host, cluster, 1)
            except (ApiError, PhasekitError):
                return

    def stop_writes(self, why: str) -> None:
        """No write through a guarded session is sent any more (``why`` says so to the phase that tries)."""
        self._stopped = why

    def annotations(self, host: str, cluster: ClusterRecord, release: bool) -> dict:
        """The annotations a write sets: the holder (taken or renewed now, by the server's clock), or none
        (released). A write that does not hold the lock yet takes it: never over a live foreign holder."""
        now = self.server_time(host)
        name = self._configmap.name_of(host, cluster)
        state = self.state(cluster, now)
        if not cluster.held:
            if state == LIVE:
                cluster.lost = held_message(host, cluster.namespace, name, cluster.holder, now)
                raise LockRefused(cluster.lost)
            if state == EXPIRED:
                gone = lock_state(cluster.holder, self.run_id, now) == LIVE
                cluster.notice = took_over_message(host, cluster.namespace, name, cluster.holder, now, gone=gone)
        if release:
            return released() if cluster.holder is not None else {}
        acquired = cluster.holder.acquired if state == OURS and cluster.holder.acquired is not None else now
        return LockHolder(run=self.run_id, by=self.settings.by, acquired=acquired, renewed=now,
                          duration=self.settings.duration).annotations()

    def state(self, cluster: ClusterRecord, now: float) -> str:
        """The lock's state (``lock.lock_state``); a live foreign holder whose process is gone from this controller
        counts as expired (``lock.holder_gone``)."""
        state = lock_state(cluster.holder, self.run_id, now)
        return EXPIRED if state == LIVE and holder_gone(cluster.holder) else state

    def server_time(self, host: str) -> float:
        """The API server's time (the Date of its last answer); the controller's when it sent none (a stand-in)."""
        now = getattr(self._session_for(host), "server_time", None)
        found = now() if callable(now) else None
        return time.time() if found is None else found

    def _before_write(self, host: str, cluster: ClusterRecord) -> None:
        """The host's API session is about to write: the lock is taken first (raises when it cannot be)."""
        if self._configmap.sending():
            return  # the record's own requests carry their precondition
        if self._stopped:
            raise LockRefused(f"cluster {host}: not written: {self._stopped}")
        if cluster.held and not cluster.lost:
            return
        with cluster.lock:
            self._configmap.read(host, cluster)
            self._usable(host, cluster)
            self._acquire(host, cluster)

    def _usable(self, host: str, cluster: ClusterRecord) -> None:
        if cluster.lost:
            raise LockRefused(cluster.lost)
        if cluster.unreachable:
            raise PhasekitError(cluster.unreachable)  # the cluster's own failure, as the phase would have met it
        if cluster.problem:
            raise LockRefused(f"{cluster.problem}; this run takes its lock there before it writes to cluster {host}, "
                              f"so nothing was written (plan_record: false runs without records and without a lock)")

    def _check_holder(self, host: str, cluster: ClusterRecord) -> None:
        """The holder as read at the host's first writing phase of this step: a live foreign one fails it; the
        lock this run held in an earlier step is renewed when due; another run that took it over is named."""
        now = self.server_time(host)
        state = self.state(cluster, now)
        name = self._configmap.name_of(host, cluster)
        if state == LIVE or (state != OURS and cluster.ran_here and cluster.holder is not None):
            cluster.lost = (lost_message(host, cluster.namespace, name, cluster.holder, now) if cluster.ran_here
                            else held_message(host, cluster.namespace, name, cluster.holder, now))
            raise LockRefused(cluster.lost)
        if state == OURS:
            cluster.held = True
            if due_for_renewal(cluster.holder, now):
                self._configmap.store_pending(host, cluster, None)

    def _acquire(self, host: str, cluster: ClusterRecord) -> None:
        """Take the lock: a write of the record with the holder's annotations and the resourceVersion read."""
        if cluster.lost:
            raise LockRefused(cluster.lost)
        if cluster.held or cluster.deferred:
            return
        try:
            self._configmap.store_pending(host, cluster, None)
        except ApiError as err:
            if err.status == 404 and not cluster.exists:
                # the record's namespace does not exist (yet: the plan may be making it): the lock is taken with
                # the record, by its next write (this phase's entry), and said so
                cluster.deferred = True
                cluster.notice = (f"cluster {host}: no lock yet: the run record's namespace {cluster.namespace} does "
                                  f"not exist ({api_reason(err)}); this run takes its lock when it can write the "
                                  f"record there (at the end of this phase)")
                return
            cluster.lost = self._not_taken(host, cluster, err)
            raise LockRefused(cluster.lost) from None

    def _not_taken(self, host: str, cluster: ClusterRecord, err: ApiError) -> str:
        """Why the lock could not be taken (the record could not be written), for people."""
        message = (f"cluster {host}: this run cannot take its lock in run record "
                   f"{self._configmap.where(host, cluster)}: {api_reason(err)}")
        if err.status in (401, 403):
            message += (f" (the run's user needs get, create and patch on ConfigMaps in namespace "
                        f"{cluster.namespace}, or set plan_record_namespace to a namespace where it has them)")
        return message + "; nothing was written to this cluster"

    def _wait_for(self, host: str, cluster: ClusterRecord) -> None:
        """``timeout``: poll the record until its holder is gone or expired (then take it), or fail naming the
        holder and how long this run waited; nothing is read for the host before it holds the lock."""
        started = self._clock()
        seen = None     # the holder this run waited for
        while True:
            with cluster.lock:
                if cluster.lost:
                    raise LockRefused(cluster.lost)
                if cluster.held:
                    return
                cluster.read = False
                self._configmap.read(host, cluster, fresh=True)
                self._usable(host, cluster)
                now = self.server_time(host)
                state = self.state(cluster, now)
                waited = self._clock() - started
                if state != LIVE:
                    try:
                        self._acquire(host, cluster)
                        if seen is not None and not cluster.notice:
                            cluster.notice = (f"cluster {host}: waited {waited:.0f}s for run {seen.run} by "
                                              f"{by_text(seen.by)} (plan_lock_timeout), then took the lock")
                        return
                    except LockRefused:
                        cluster.lost = ""  # another run took it between the read and the write: wait on
                seen = cluster.holder if state == LIVE else seen
                if state == LIVE and waited >= self.settings.timeout:
                    name = self._configmap.name_of(host, cluster)
                    cluster.lost = held_message(host, cluster.namespace, name, cluster.holder, now, waited=waited)
                    raise LockRefused(cluster.lost)
            self._sleep(min(POLL_SECONDS, max(0.1, self.settings.timeout - waited)))
