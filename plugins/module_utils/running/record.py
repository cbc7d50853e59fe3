# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The run record each cluster keeps of a plan: what ran there, when, by whom, with which bundle.

One ConfigMap per plan and cluster host (``phasekit-run-<plan>.<host>`` in the
host's namespace, or ``plan_record_namespace``: two inventory hosts on one
cluster keep records of their own), one data key per phase, holding that
phase's last runs as a JSON list, newest first::

    kubectl get configmap phasekit-run-site.prod-eu1 -o jsonpath='{.data.apps\\.hello}'

A phase's entry is written when the phase ends on that cluster (a JSON merge
patch of its key), so a run that stops half way (a cluster gone, a failed
phase) leaves every phase that did its work recorded, and ``plan_resume`` can
continue from there. The entry of a phase that changed nothing waits for the
cluster's next write instead: a later phase's, the one when the step ends
(``flush``), or the first phase end after it waited ``FLUSH_AFTER`` seconds.
One merge patch carries every waiting key, so a re-run of unchanged phases
costs one write per cluster, not one per phase. Lost to a controller killed outright, such an
entry costs nothing on resume: the phase runs again and changes nothing.
The ConfigMap is read once per cluster and run, before the first write (to
keep the last ``keep`` entries), or before the first phase when resuming or
showing status.

Entries hold nothing a reader of the ConfigMap could test a guess of a secret
against: the digest is an HMAC-SHA256, keyed with a random key the cluster
keeps in a Secret of the record's namespace (``phasekit-run-key``, made on
first need, read once per cluster and run), of everything the phase's outcome
depends on; a ``view`` user reads ConfigMaps, not Secrets. Messages are scrubbed
and masked again (``recorded_message``) as they get here. A run whose user
cannot read (or make) that Secret records its phases without a digest, and
says so once per cluster: they are not resumable there. Digests of records
written before (plain ``sha256:``) are dropped when the record is next
written, and never resume anything.

Records are named so that two plans (two hosts) never share one: a name that
is already a DNS label keeps its record's name as it always was; any other is
slugged and followed by ``--`` and a hash of the exact name (a slug has no
``--``). A record a former version named after the slug alone is taken over
when its annotations name exactly this plan and host.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kube.ownership import HOST_ANNOTATION, PLAN_ANNOTATION
from ansible_collections.phasekit.kube.plugins.module_utils.kube.session import ApiError, ApiSession
from ansible_collections.phasekit.kube.plugins.module_utils.masking import Masks
from ansible_collections.phasekit.kube.plugins.module_utils.running.cluster_record import ClusterRecord
from ansible_collections.phasekit.kube.plugins.module_utils.running.lock import (
    LIVE, OURS, LockSettings, changed_meanwhile_message, held_message, holder_of, lost_message)
from ansible_collections.phasekit.kube.plugins.module_utils.running.record_lock import (
    LockRefused, RecordLock, api_reason)
from ansible_collections.phasekit.kube.plugins.module_utils.planning.entry_names import OCCURRENCE
from ansible_collections.phasekit.kube.plugins.module_utils.records.vocabulary import KEY_SECRET, LABELS, recorded_message

RECORD_PREFIX = "phasekit-run-"
KEEP = 10                       # entries kept per phase and cluster
MERGE_PATCH = "application/merge-patch+json"
SUCCEEDED = ("ok", "changed")
RUN_ACTION, DESTROY_ACTION = "run", "destroy"
FLUSH_AFTER = 10.0              # seconds an unchanged phase's entry may wait for its cluster's next write
FLUSH_CONCURRENCY = 32          # clusters written at once when a step ends
KEY_FIELD = "hmac-sha256"
KEY_BYTES = 32
KEYED = "hmac-sha256:"          # what a digest made with the cluster's key starts with
SLUG_HASH = 10                  # hex digits of the hash that follows a name that is not a DNS label itself


@dataclass(frozen=True)
class RunInfo:
    """This run, as every entry it writes names it."""

    run: str          # 20261124T144501Z-3fa2: when it started (UTC) and a random tail
    plan: str         # the plan's name ("" without a PhasePlan)
    version: str      # the collection's
    by: str           # user@controller
    action: str = RUN_ACTION


def record_name(plan: str, host: str) -> str:
    """The ConfigMap's name, a DNS subdomain: ``phasekit-run-<plan>.<host>`` (plan ``all`` without a PhasePlan),
    each part as it is when it is a DNS label, else its slug, ``--`` and a hash of it (``col.a`` and ``Col_A``
    get records of their own)."""
    return _bounded(f"{RECORD_PREFIX}{_name_part(plan or 'all')}.{_name_part(host)}", plan, host)


def legacy_record_name(plan: str, host: str) -> str:
    """The name a record had before names were kept apart (slugs only: ``col.a`` and ``Col_A`` shared one)."""
    return _bounded(f"{RECORD_PREFIX}{_slug(plan or 'all')}.{_slug(host)}", plan, host)


def _bounded(name: str, plan: str, host: str) -> str:
    if len(name) > 253:
        name = name[:240].rstrip("-.") + "-" + hashlib.sha256(f"{plan}/{host}".encode()).hexdigest()[:12]
    return name


def _name_part(text: str) -> str:
    """``text`` when it is its own slug; else the slug, ``--`` (no slug has it) and a hash of ``text``."""
    slug = _slug(text)
    if slug == text:
        return slug
    return f"{slug}--{hashlib.sha256(text.encode()).hexdigest()[:SLUG_HASH]}"


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


def phase_key(phase: str) -> str:
    """A run list entry's data key: its full name with ``/`` as ``.`` (ConfigMap keys allow ``-._a-zA-Z0-9``);
    the k-th run of a phase the plan repeats (``name#k``) ends in ``_k_``, which no phase name can end in."""
    full_name, repeated, occurrence = phase.rpartition(OCCURRENCE)
    if not repeated:
        full_name = phase
    key = re.sub(r"[^-._a-zA-Z0-9]", "_", full_name.replace("/", "."))
    return f"{key}_{occurrence}_" if repeated else key


def keyed_digest(key: bytes, digest: str) -> str:
    """``hmac-sha256:<hex>``: ``digest`` keyed with a cluster's record key; without the key, a reader of the
    record cannot test a guess of what went into it."""
    return KEYED + hmac.new(key, digest.encode(), hashlib.sha256).hexdigest()


def utc_stamp(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def entry_for(run: RunInfo, *, result: str, started: float, duration: float, digest: str | None,
              msg: str = "", rollout: dict | None = None, masks: Masks | None = None,
              outputs: dict | None = None) -> dict:
    """One phase's entry of this run; under a rollout, which batch of it touched the cluster
    (``{"phase": "cni", "batch": 2, "of": 5}``); ``outputs``: the values of its outputs that are not secret (a
    secret one is read again from the cluster when it is needed: a ConfigMap is for ``view`` users)."""
    entry = {"run": run.run, "action": run.action, "result": result, "started": utc_stamp(started),
             "duration": round(duration, 3), "digest": digest, "plan": run.plan, "version": run.version,
             "by": run.by}
    if rollout:
        entry["rollout"] = {key: rollout.get(key) for key in ("phase", "batch", "of")}
    if result == "failed" and msg:
        entry["msg"] = recorded_message(msg, masks)
    if outputs:
        entry["outputs"] = {name: masks.scrub(value) if masks else value for name, value in outputs.items()}
    return entry


def recorded_outputs(entries: list[dict]) -> dict | None:
    """The outputs of a phase's newest run that succeeded, from its entries (newest first); None: no such run."""
    for entry in entries:
        if entry.get("action", RUN_ACTION) == RUN_ACTION and entry.get("result") in SUCCEEDED:
            outputs = entry.get("outputs")
            return dict(outputs) if isinstance(outputs, dict) else {}
    return None


def resumable(entry: dict | None, digest: str | None) -> bool:
    """Whether ``plan_resume`` may skip a phase: its last entry is a run that succeeded with this digest."""
    return bool(entry and digest and digest.startswith(KEYED) and entry.get("action", RUN_ACTION) == RUN_ACTION
                and entry.get("result") in SUCCEEDED and entry.get("digest") == digest)


class RunRecords:
    """Reads and writes the run record of ``plan`` in each cluster, through ``session_for(host)``.

    ``namespace_for(host)``: where the host's ConfigMap lives. Every call is safe from the phase pool's threads;
    one cluster's calls are serialised (its phases run one after the other anyway). ``create_key``: the digests'
    key Secret is made when missing (a run that writes records), else only read.

    ``lock``: this run takes each cluster's lock (see ``lock.py``) before its first write there, and every write
    of a record carries the resourceVersion this run last saw of it (None: no lock, a run that writes nothing).
    ``release_after``: host -> the phase whose entry releases the host's lock (its last phase of the plan).

    The per-host facade of three parts, each given the cluster's ``ClusterRecord``: the record ConfigMap
    (``RecordConfigMap``), the lock it carries (``RecordLock``) and the digests' key (``DigestKeys``).
    """

    def __init__(self, run: RunInfo, session_for: Callable[[str], ApiSession], namespace_for: Callable[[str], str],
                 *, keep: int = KEEP, flush_after: float = FLUSH_AFTER, clock: Callable[[], float] = time.monotonic,
                 create_key: bool = True, lock: LockSettings | None = None,
                 release_after: dict | None = None, sleep: Callable[[float], None] = time.sleep, release_on_failure: bool = True):
        self.run = run
        self.lock = lock
        self.release_after = dict(release_after or {})
        self.release_on_failure = release_on_failure   # a line's failed cluster takes no later phase; a graph's may
        self._configmap = RecordConfigMap(run, session_for, lock, clock=clock, sleep=sleep)
        self._keys = DigestKeys(create_key)
        self.keep = keep
        self.flush_after = flush_after
        self._clock = clock
        self._namespace_for = namespace_for
        self._clusters: dict[str, ClusterRecord] = {}
        self._lock = threading.Lock()

    def where(self, host: str) -> str:
        """'ConfigMap ns/name' of the host's record (for messages and docs)."""
        return self._configmap.where(host, self._cluster(host))

    def problems(self, host: str) -> list[str]:
        """What the host's record holds that is not an entry as this version writes them (edited by hand), each
        naming the cluster, the ConfigMap, the phase's key and entry, and what was expected; read once."""
        cluster = self._cluster(host)
        with cluster.lock:
            self._configmap.read(host, cluster)
            return list(cluster.problems)

    def digest(self, host: str, digest: str | None, attempts: int | None = None) -> str | None:
        """``digest`` (``bundle_digest``) keyed with the host's cluster key, or None when there is no key (its
        Secret cannot be read or made: ``key_problem`` says why, once). ``attempts``: as for ``write``."""
        if digest is None:
            return None
        cluster = self._cluster(host)
        with cluster.lock:
            self._keys.read(host, cluster, _OwnRequests(self._configmap, host), attempts)
            return keyed_digest(cluster.key, digest) if cluster.key else None

    def key_problem(self, host: str) -> str | None:
        """Why the host's digests are not recorded, as a warning once per cluster and run (None otherwise)."""
        cluster = self._cluster(host)
        with cluster.lock:
            if not cluster.key_problem or cluster.key_warned:
                return None
            cluster.key_warned = True
            return cluster.key_problem

    def entries(self, host: str, phase: str) -> list[dict]:
        """The phase's recorded entries on the host's cluster, newest first; raises PhasekitError if unreadable."""
        cluster = self._cluster(host)
        with cluster.lock:
            self._configmap.read(host, cluster)
            if cluster.problem:
                raise PhasekitError(cluster.problem)
            return list(cluster.entries.get(phase_key(phase), []))

    def last(self, host: str, phase: str) -> dict | None:
        """The phase's newest entry on the host's cluster, or None (none yet, or the record is unreadable)."""
        try:
            found = self.entries(host, phase)
        except PhasekitError:
            return None
        return found[0] if found else None

    def write(self, host: str, phase: str, entry: dict, *, patient: bool = True, wait: bool = False) -> str | None:
        """Add ``entry`` as the phase's newest on the host's cluster; a problem is returned (a warning), not
        raised: the record must not fail a phase that did its work.

        ``wait``: the entry may wait for the cluster's next write (the phase changed nothing), unless the
        oldest waiting entry is ``flush_after`` seconds old; ``flush`` writes what still waits when the step
        ends. ``patient=False``: one try per request (the phase failed, maybe because the server is gone: its
        record must not wait out the retries again). The entry of the host's last phase of the plan (``release_after``),
        or of a failed phase (in a line, ``release_on_failure``), releases the host's lock in the same write."""
        cluster = self._cluster(host)
        key = phase_key(phase)
        attempts = None if patient else 1
        releases = self.lock is not None and (self.release_after.get(host) == phase or (self.release_on_failure and entry.get("result") == "failed"))
        with cluster.lock:
            self._configmap.read(host, cluster, attempts)
            if cluster.problem:
                return cluster.said_once(cluster.problem)
            kept = [entry] + cluster.entries.get(key, [])[:self.keep - 1]
            cluster.entries[key] = kept
            cluster.pending[key] = json.dumps(kept, separators=(",", ":"))
            if cluster.pending_since is None:
                cluster.pending_since = self._clock()
            if wait and not releases and self._clock() - cluster.pending_since < self.flush_after:
                return None
            return self._configmap.write_pending(host, cluster, attempts, release=releases)

    def flush(self, release: Callable[[str], bool] | None = None) -> list[str]:
        """Write every cluster's unwritten entries (when a step ends), clusters in parallel; the problems, one
        per cluster, as warnings. With the lock, each cluster this run holds is released when ``release(host)``
        (its last phase of the plan ran, or the run stops: a failure, an interruption), else renewed for the
        next step."""
        with self._lock:
            waiting = [(host, cluster) for host, cluster in self._clusters.items()
                       if cluster.pending or (cluster.held and not cluster.lost)]
        if not waiting:
            return []

        def write(item):
            host, cluster = item
            with cluster.lock:
                if not cluster.pending and not (cluster.held and not cluster.lost):
                    return None
                problem = self._configmap.write_pending(host, cluster, None, release=bool(release and release(host)))
                said, cluster.notice = cluster.notice, ""
                return "; ".join(text for text in (said, problem) if text) or None

        with ThreadPoolExecutor(max_workers=min(FLUSH_CONCURRENCY, len(waiting)),
                                thread_name_prefix="phasekit-record") as pool:
            return [problem for problem in pool.map(write, waiting) if problem]

    # ------------------------------------------------------------------ the lock (``RecordLock``)

    def begin(self, host: str, acquire: bool = False) -> None:
        """A phase that may write starts on the host: the record is read now (its resourceVersion kept: a later
        write that finds it changed fails instead of overwriting another run's work), a foreign live holder fails
        the phase at once, and a lock this run held in an earlier step is renewed. ``acquire``: take the lock now
        (the executor writes outside the host's API session: a command, a chart, a task file); with a
        ``timeout`` the lock is always taken here, waiting for a holder up to it. Raises PhasekitError."""
        if self.lock is not None:
            self._configmap.locking.begin(host, self._cluster(host), acquire)

    def guard(self, host: str) -> None:
        """Every write through the host's API session takes the lock first (a phase that was not expected to
        write, too); nothing is read or written now."""
        if self.lock is not None:
            self._configmap.locking.guard(host, self._cluster(host))

    def notice(self, host: str) -> str | None:
        """The takeover of an expired lock on the host's cluster, once (a warning of the phase that took it)."""
        cluster = self._cluster(host)
        with cluster.lock:
            said, cluster.notice = cluster.notice, ""
            return said or None

    def release(self, host: str) -> str | None:
        """Release the host's lock if this run holds it (read first: an earlier step of the run took it); a problem
        is returned as a warning."""
        return self._configmap.locking.release(host, self._cluster(host))

    def held_hosts(self) -> list[str]:
        with self._lock:
            return sorted(host for host, cluster in self._clusters.items() if cluster.held and not cluster.lost)

    def renew(self) -> None:
        """Renew every lock this run holds that is due (``lock.due_for_renewal``): the renewal thread's work, one
        small write per held cluster; a cluster that cannot be reached now is tried again next time, and one
        whose lock another run took is lost (its next write fails, naming the new holder)."""
        for host in self.held_hosts():
            self._configmap.locking.renew(host, self._cluster(host))

    def stop_writes(self, why: str) -> None:
        """No write through a guarded session is sent any more (the step was interrupted: its locks are released
        next, and the phases still running must not write after that)."""
        self._configmap.locking.stop_writes(why)

    def renewing(self) -> Renewal:
        """A thread that renews the locks this run holds while the step runs (``start``, then ``stop``)."""
        return Renewal(self, (self.lock.duration if self.lock else 0) / 3)

    def _cluster(self, host: str) -> ClusterRecord:
        with self._lock:
            if host in self._clusters:
                return self._clusters[host]
        try:
            cluster = ClusterRecord(self._namespace_for(host))
        except PhasekitError as err:  # no kubeconfig: no record either
            cluster = ClusterRecord("", problem=f"run record of cluster {host} not reachable: {err}")
        with self._lock:
            return self._clusters.setdefault(host, cluster)


class RecordConfigMap:
    """Each cluster's record ConfigMap, for ``RunRecords``: read once per run (taking over a record a former
    version named), got, and stored: with the lock (``locking``, made here: the lock lives in the record), every
    write carries the holder and the resourceVersion this run last saw, and a conflict decides whether to write
    again."""

    def __init__(self, run: RunInfo, session_for: Callable[[str], ApiSession], settings: LockSettings | None, *,
                 clock: Callable[[], float], sleep: Callable[[float], None]):
        self.run = run
        self.settings = settings   # None: no lock
        self._session_for = session_for
        self._own = threading.local()   # set while a record request is sent: it takes no lock
        self.locking = RecordLock(run.run, settings, session_for, self, clock=clock, sleep=sleep)

    def name_of(self, host: str, cluster: ClusterRecord) -> str:
        """The record's name on the host's cluster (as read, else as this version names it)."""
        return cluster.name or record_name(self.run.plan, host)

    def where(self, host: str, cluster: ClusterRecord) -> str:
        """'ConfigMap ns/name' of the host's record (for messages and docs)."""
        return f"ConfigMap {cluster.namespace}/{self.name_of(host, cluster)}"

    def sending(self) -> bool:
        """Whether this thread is sending one of the record's own requests (they take no lock)."""
        return getattr(self._own, "active", False)

    def request(self, host: str, method: str, path: str, **kwargs):
        """A request of the record (or its key) through the host's session, which takes no lock for it."""
        self._own.active = True
        try:
            return self._session_for(host).request(method, path, **kwargs)
        finally:
            self._own.active = False

    def write_pending(self, host: str, cluster: ClusterRecord, attempts: int | None,
                      release: bool = False) -> str | None:
        """One write of the cluster's unwritten keys (kept for the next try when it fails), holding or releasing
        the lock; a problem is returned (a warning, said once per cluster)."""
        try:
            self.store_pending(host, cluster, attempts, release=release)
        except (ApiError, PhasekitError) as err:
            phases = ", ".join(sorted(cluster.pending)) or "none (the lock only)"
            return cluster.said_once(f"run record of phase(s) {phases} not written to {self.where(host, cluster)}: "
                                     f"{api_reason(err)}")
        return None

    def store_pending(self, host: str, cluster: ClusterRecord, attempts: int | None, release: bool = False) -> None:
        """Store the cluster's unwritten keys (with the lock's annotations), then forget them; raises as ``store``."""
        self.store(host, cluster, dict(cluster.pending), attempts, release=release)
        cluster.pending.clear()
        cluster.pending_since = None

    def read(self, host: str, cluster: ClusterRecord, attempts: int | None = None, fresh: bool = False) -> None:
        """The record as found, read once per run (``fresh``: what an earlier read kept is forgotten); a problem
        reading it is kept in ``cluster.problem``."""
        if cluster.read:
            return
        cluster.read = True
        cluster.name = record_name(self.run.plan, host)
        if fresh:
            cluster.problem, cluster.entries, cluster.problems, cluster.pending = "", {}, [], {}
            cluster.exists, cluster.legacy_name, cluster.version, cluster.holder = False, "", None, None
        try:
            found = self._found(host, cluster, attempts)
        except (ApiError, PhasekitError) as err:
            cluster.problem = f"run record {self.where(host, cluster)} cannot be read: {api_reason(err)}"
            cluster.unreachable = "" if isinstance(err, ApiError) else str(err)
            if isinstance(err, ApiError) and err.status in (401, 403):
                cluster.problem += (f" (the run's user needs get, create and patch on ConfigMaps in namespace "
                                    f"{cluster.namespace})")
            return
        if found is not None:
            self._keep_entries(host, cluster, found)

    def _found(self, host: str, cluster: ClusterRecord, attempts: int | None) -> dict | None:
        """The record under its name, else a former version's record of this plan and host (then taken over: the
        next write moves every entry to the new name), else None."""
        found = self.get(host, cluster, cluster.name, attempts)
        legacy = legacy_record_name(self.run.plan, host)
        if found is None and legacy != cluster.name:
            found = self.get(host, cluster, legacy, attempts)
            if found is not None and not self._ours(found, host):
                found = None  # another plan's (or host's) record under a name they shared: not ours
            if found is not None:  # taken over: the next write moves every entry to the new name
                cluster.legacy_name = legacy
        return found

    def _keep_entries(self, host: str, cluster: ClusterRecord, found: dict) -> None:
        """What a record read holds, kept for this run: its entries (and what was left out of them), its lock."""
        cluster.exists = not cluster.legacy_name
        if cluster.exists:
            self.answered(cluster, found)
        data = found.get("data")
        if not isinstance(data, dict):
            data = {}
        read_from = f"cluster {host}: run record ConfigMap {cluster.namespace}/{cluster.legacy_name or cluster.name}"
        for key, text in data.items():
            entries, problems, unkeyed = _entries(text)
            cluster.entries[key] = entries
            cluster.ran_here = cluster.ran_here or any(entry.get("run") == self.run.run for entry in entries)
            where = f"{read_from}, key {key}"
            cluster.problems.extend(f"{where}: {problem}" for problem in problems)
            if unkeyed or cluster.legacy_name:  # plain digests are testable offline: gone with the next write
                cluster.pending[key] = json.dumps(entries, separators=(",", ":"))

    def get(self, host: str, cluster: ClusterRecord, name: str, attempts: int | None) -> dict | None:
        """The ConfigMap ``name`` of the cluster's record namespace, or None when there is none."""
        try:
            found = self.request(host, "GET", self._path(cluster, name), attempts=attempts).body
        except ApiError as err:
            if err.status == 404:
                return None
            raise
        return found if isinstance(found, dict) else {}

    def _ours(self, found: dict, host: str) -> bool:
        annotations = (found.get("metadata") or {}).get("annotations") or {}
        return annotations.get(PLAN_ANNOTATION) == self.run.plan and annotations.get(HOST_ANNOTATION) == host

    def answered(self, cluster: ClusterRecord, found: dict | None) -> None:
        """What an answer says of the record: its resourceVersion, its holder, and whether this run holds it."""
        if found is None:
            cluster.version, cluster.holder, cluster.held, cluster.exists = None, None, False, False
            return
        metadata = found.get("metadata") or {}
        cluster.version = metadata.get("resourceVersion")
        cluster.holder = holder_of(metadata.get("annotations"))
        cluster.held = cluster.holder is not None and cluster.holder.run == self.run.run

    def store(self, host: str, cluster: ClusterRecord, data: dict, attempts: int | None,
              release: bool = False) -> None:
        """Write ``data`` keys to the record; with the lock, also the holder (or its release), and only if the
        record is still as this run last saw it (its resourceVersion): else ``_conflict`` decides."""
        for _attempt in range(3):  # a conflict that leaves this run the holder (a label edited) is written again
            try:
                self._store_once(host, cluster, data, attempts, release)
                return
            except ApiError as err:
                if err.status != 409 or self.settings is None or not self._conflict(host, cluster):
                    raise
        raise LockRefused(f"run record {self.where(host, cluster)} keeps changing under this run: run again")

    def _store_once(self, host: str, cluster: ClusterRecord, data: dict, attempts: int | None,
                    release: bool) -> None:
        if self.settings is not None and cluster.lost:
            raise LockRefused(cluster.lost)
        name = self.name_of(host, cluster)
        annotations = self.locking.annotations(host, cluster, release) if self.settings is not None else {}
        if cluster.exists:
            body: dict = {"data": data}
            if self.settings is not None:
                body["metadata"] = {"resourceVersion": cluster.version, "annotations": annotations}
            try:
                answer = self.request(host, "PATCH", self._path(cluster, name), body=body,
                                      content_type=MERGE_PATCH, attempts=attempts)
                self._written(cluster, answer.body)
                return
            except ApiError as err:
                if err.status != 404:
                    raise
            cluster.exists = False  # deleted during the run: made again with every entry this run knows
        self._create(host, cluster, name, data, annotations, attempts)

    def _create(self, host: str, cluster: ClusterRecord, name: str, data: dict, annotations: dict,
                attempts: int | None) -> None:
        """The record made, with every entry this run knows and ``data``; made meanwhile by another run: added
        to (without the lock; with it, ``_conflict`` decides)."""
        kept = {key: value for key, value in annotations.items() if value is not None}
        body = {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": cluster.namespace, "labels": dict(LABELS),
                             "annotations": {PLAN_ANNOTATION: self.run.plan, HOST_ANNOTATION: host, **kept}},
                "data": {**{key: json.dumps(entries, separators=(",", ":"))
                            for key, entries in cluster.entries.items()}, **data}}
        try:
            answer = self.request(host, "POST", self._path(cluster), body=body, attempts=attempts)
            cluster.exists = True
            self._written(cluster, answer.body)
            self._drop_legacy(host, cluster)
            return
        except ApiError as err:
            if err.status != 409 or self.settings is not None:  # with the lock: another run made it (``_conflict``)
                raise
        cluster.exists = True  # another run created it meanwhile: add to it
        self.request(host, "PATCH", self._path(cluster, name), body={"data": data}, content_type=MERGE_PATCH,
                     attempts=attempts)

    def _written(self, cluster: ClusterRecord, answer) -> None:
        if self.settings is not None and isinstance(answer, dict):
            self.answered(cluster, answer)
            cluster.exists = True
            cluster.deferred = False

    def _drop_legacy(self, host: str, cluster: ClusterRecord) -> None:
        """The former version's record, now copied: deleted, best effort (left, it only costs its space)."""
        if not cluster.legacy_name:
            return
        try:
            self.request(host, "DELETE", self._path(cluster, cluster.legacy_name), attempts=1)
        except (ApiError, PhasekitError):
            pass
        cluster.legacy_name = ""

    def _conflict(self, host: str, cluster: ClusterRecord) -> bool:
        """A write's precondition failed (409): the record is read again; True when this run still holds it (the
        write is tried again), else the cluster is lost to this run and LockRefused raised naming why."""
        was_held = cluster.held
        found = self.get(host, cluster, cluster.name, None)
        self.answered(cluster, found)
        now = self.locking.server_time(host)
        name = self.name_of(host, cluster)
        state = self.locking.state(cluster, now)
        if state == OURS:
            return True
        if was_held:
            cluster.lost = lost_message(host, cluster.namespace, name, cluster.holder, now)
        elif state == LIVE:
            cluster.lost = held_message(host, cluster.namespace, name, cluster.holder, now)
        else:
            cluster.lost = changed_meanwhile_message(host, cluster.namespace, name, self._other_run(found, cluster))
        cluster.held = False
        raise LockRefused(cluster.lost)

    def _other_run(self, found: dict | None, cluster: ClusterRecord) -> str:
        """The newest run other than this one that the record names (the one that acted meanwhile)."""
        if found is None:
            return "the record was deleted"
        if cluster.holder is not None and cluster.holder.run != self.run.run:
            return f"run {cluster.holder.run}, whose lock has expired"
        newest = None
        for text in (found.get("data") or {}).values():
            for entry in _entries(text)[0]:
                if entry.get("run") != self.run.run and (newest is None or entry["started"] > newest["started"]):
                    newest = entry
        if newest is None:
            return "a change by hand or by another tool"
        return f"run {newest['run']} by {newest.get('by', '?')}, started {newest['started']}"

    @staticmethod
    def _path(cluster: ClusterRecord, name: str | None = None) -> str:
        base = f"/api/v1/namespaces/{cluster.namespace}/configmaps"
        return base if name is None else f"{base}/{name}"


class DigestKeys:
    """The digests' key of each cluster, from the Secret of its record's namespace (``KEY_SECRET``): read once per
    cluster and run, made when missing if ``create`` (dry runs read the key and make none)."""

    def __init__(self, create: bool):
        self.create = create

    def read(self, host: str, cluster: ClusterRecord, session, attempts: int | None = None) -> None:
        """The cluster's digest key from its Secret, read once; made when missing (``create``). Made without
        the lock: an immutable Secret, made once, and another run's key is the one used. ``session``: the record's
        own requests (they take no lock)."""
        if cluster.key_read:
            return
        cluster.key_read = True
        if not cluster.namespace:
            return  # no kubeconfig: nothing is recorded there
        path = f"/api/v1/namespaces/{cluster.namespace}/secrets"
        where = f"Secret {cluster.namespace}/{KEY_SECRET}"
        try:
            try:
                found = session.request("GET", f"{path}/{KEY_SECRET}", attempts=attempts).body
            except ApiError as err:
                if err.status != 404 or not self.create:
                    raise
                found = self._make(session, path, cluster.namespace, attempts)
            cluster.key = _key_of(found)
            if cluster.key is None:
                cluster.key_problem = f"{where} holds no {KEY_FIELD} key of {KEY_BYTES} bytes (base64)"
        except ApiError as err:
            if err.status == 404:
                # a dry run, and no run wrote a keyed digest here yet: nothing to compare with; or the namespace
                # does not exist yet (a phase of this run makes it): asked again at the next digest, so the
                # phases after it are recorded with theirs
                cluster.key_read = not self.create
                return
            cluster.key_problem = f"{where} cannot be read{' or made' if self.create else ''}: {api_reason(err)}"
            if err.status in (401, 403):
                cluster.key_problem += f" (the run's user needs get and create on Secrets in namespace " \
                                       f"{cluster.namespace})"
        except PhasekitError as err:  # the cluster cannot be reached: its record cannot be written either
            cluster.key_problem = f"{where} cannot be read: {err}"
        if cluster.key_problem:
            cluster.key_problem = (f"run record of cluster {host}: no digest key, so its phases are recorded and "
                                   f"compared without a digest (plan_resume runs them again there): "
                                   f"{cluster.key_problem}")

    @staticmethod
    def _make(session, path: str, namespace: str, attempts: int | None) -> dict:
        """A new random key, in an immutable Secret; a key another run made meanwhile is the one used."""
        body = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "immutable": True,
                "metadata": {"name": KEY_SECRET, "namespace": namespace, "labels": dict(LABELS)},
                "data": {KEY_FIELD: base64.b64encode(os.urandom(KEY_BYTES)).decode()}}
        try:
            return session.request("POST", path, body=body, attempts=attempts).body
        except ApiError as err:
            if err.status != 409:
                raise
        return session.request("GET", f"{path}/{KEY_SECRET}", attempts=attempts).body


class Renewal:
    """Renews a run's held locks every ``every`` seconds while the block runs, in a thread of its own."""

    def __init__(self, records: RunRecords, every: float):
        self._records, self._every = records, every
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._records.lock is not None and self._every > 0:
            self._thread = threading.Thread(target=self._run, name="phasekit-lock-renewal", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=15)  # a request in flight ends by then (attempts=1, its connect timeout)

    def _run(self) -> None:
        while not self._stop.wait(self._every):
            self._records.renew()


class _OwnRequests:
    """The host's session for the record's own requests (they take no lock)."""

    def __init__(self, configmap: RecordConfigMap, host: str):
        self._configmap, self._host = configmap, host

    def request(self, method: str, path: str, **kwargs):
        return self._configmap.request(self._host, method, path, **kwargs)


def _key_of(secret) -> bytes | None:
    try:
        key = base64.b64decode(((secret or {}).get("data") or {}).get(KEY_FIELD) or "", validate=True)
    except (ValueError, TypeError, AttributeError):
        return None
    return key if len(key) >= KEY_BYTES else None


# An entry's fields as this version writes them: (the types it may have, what a person should read as expected).
ENTRY_FIELDS = {
    "run": ((str,), "a run id such as 20261124T144501Z-3fa2"),
    "result": ((str,), "ok, changed or failed"),
    "started": ((str,), "a UTC time such as 2026-11-24T14:45:01Z"),
    "action": ((str,), "run or destroy"),
    "duration": ((int, float), "seconds, a number"),
    "digest": ((str, type(None)), "a digest string or null"),
    "plan": ((str,), "the plan's name"),
    "version": ((str,), "the collection's version"),
    "by": ((str,), "user@controller"),
    "rollout": ((dict,), "an object {phase, batch, of}"),
    "outputs": ((dict,), "an object of output names and values"),
}  # msg is not checked: how it is stored is the masking's
REQUIRED_FIELDS = ("run", "result", "started")


def _entries(text) -> tuple[list[dict], list[str], bool]:
    """A key's entries as read, what was left out of them and why (edited by hand), and whether one had a digest
    this version does not trust (a former version's plain ``sha256:``, dropped here)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        return [], [f"expected a JSON list of run entries, got text that is not JSON (line {err.lineno} column "
                    f"{err.colno})"], False
    except (TypeError, ValueError):
        return [], [f"expected a JSON list of run entries, got {_json_type(text)}"], False
    if not isinstance(value, list):
        return [], [f"expected a JSON list of run entries, got {_json_type(value)}"], False
    kept, problems, unkeyed = [], [], False
    for number, entry in enumerate(value, start=1):
        problem = _entry_problem(entry)
        if problem:
            problems.append(f"entry {number}: {problem}; left out")
            continue
        digest = entry.get("digest")
        if digest is not None and not digest.startswith(KEYED):
            entry = {**entry, "digest": None}
            unkeyed = True
        kept.append(entry)
    return kept, problems, unkeyed


def _entry_problem(entry) -> str:
    if not isinstance(entry, dict):
        return f"expected an object (a run entry), got {_json_type(entry)}"
    missing = [field for field in REQUIRED_FIELDS if field not in entry]
    if missing:
        return f"missing field(s) {', '.join(missing)}"
    for field, (types, expected) in ENTRY_FIELDS.items():
        if field in entry and (not isinstance(entry[field], types) or isinstance(entry[field], bool)):
            return f"field {field}: expected {expected}, got {_json_type(entry[field])}"
    return ""


def _json_type(value) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number",
             float: "a number", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def run_history(entries_by_phase: dict[str, list], phases: list[str]) -> list[dict]:
    """One cluster's runs, newest first: ``{run, started, by, version, action, phases: {phase: result}}``."""
    runs: dict[str, dict] = {}
    for phase in phases:
        for entry in entries_by_phase.get(phase) or []:
            run = runs.setdefault(entry.get("run", "?"), {
                "run": entry.get("run", "?"), "started": entry.get("started", ""), "by": entry.get("by", ""),
                "version": entry.get("version", ""), "action": entry.get("action", RUN_ACTION), "phases": {}})
            run["started"] = min(run["started"], entry.get("started", "")) or run["started"]
            run["phases"][phase] = entry.get("result", "?")
            if isinstance(entry.get("rollout"), dict):
                batch = entry["rollout"]
                run["batch"] = f"{batch.get('phase')} {batch.get('batch')}/{batch.get('of')}"
    return sorted(runs.values(), key=lambda run: (run["started"], run["run"]), reverse=True)


def phase_recorder(records: RunRecords, tasks_executor: str = "tasks",
                   masks_for: Callable[[str], Masks] | None = None):
    """The runner's ``recorded`` callback: each finished phase's entry written to its cluster's record (a phase
    that changed nothing: with the cluster's next write).

    Not written: tasks phases (their task file's outcome is the role's, per host), phases a resume skipped (their
    earlier entry stays the last one), and skipped ones; a write that fails is a warning of that host's record,
    unless the phase itself failed (its message says why the cluster could not be reached). ``masks_for(host)``:
    what the host's messages must not show.
    """

    def write(phase, record) -> None:  # phase: the ``RunEntry`` the record is of
        if record.executor == tasks_executor or record.result not in (*SUCCEEDED, "failed"):
            return
        outputs = record.details.get("outputs") or {}
        secret = set(record.details.get("secret_outputs") or ())
        entry = entry_for(records.run, result=record.result, started=record.started, duration=record.duration,
                          digest=record.details.get("digest"), msg=record.msg, rollout=record.details.get("rollout"),
                          masks=masks_for(record.host) if masks_for and (record.msg or outputs) else None,
                          outputs={name: value for name, value in outputs.items() if name not in secret})
        problem = records.write(record.host, phase.name, entry, patient=record.result != "failed",
                                wait=record.result == "ok")
        said = [problem] if problem and record.result != "failed" else []
        said += [notice for notice in (records.notice(record.host),) if notice]   # a takeover by this write
        if said:
            record.details = {**record.details, "warnings": [*record.details.get("warnings", []), *said]}

    return write
