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

Entries hold no secret: the digest is a SHA-256 of what the phase applies to
that cluster (the cluster holds those objects anyway), messages are scrubbed
and masked again (``recorded_message``) as they get here.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kube.session import ApiError, ApiSession
from ansible_collections.phasekit.kube.plugins.module_utils.masking import Masks
from ansible_collections.phasekit.kube.plugins.module_utils.phases.selection import OCCURRENCE

RECORD_PREFIX = "phasekit-run-"
KEEP = 10                       # entries kept per phase and cluster
MAX_RECORD_MESSAGE = 300        # a failed entry's message, shortened (the ConfigMap stays small)
MERGE_PATCH = "application/merge-patch+json"
LABELS = {"app.kubernetes.io/managed-by": "phasekit.kube", "phasekit.kube/record": "run"}
PLAN_ANNOTATION = "phasekit.kube/plan"
HOST_ANNOTATION = "phasekit.kube/host"
SUCCEEDED = ("ok", "changed")
RUN_ACTION, DESTROY_ACTION = "run", "destroy"
FLUSH_AFTER = 10.0              # seconds an unchanged phase's entry may wait for its cluster's next write
FLUSH_CONCURRENCY = 32          # clusters written at once when a step ends


@dataclass(frozen=True)
class RunInfo:
    """This run, as every entry it writes names it."""

    run: str          # 20261124T144501Z-3fa2: when it started (UTC) and a random tail
    plan: str         # the plan's name ("" without a PhasePlan)
    version: str      # the collection's
    by: str           # user@controller
    action: str = RUN_ACTION


def record_name(plan: str, host: str) -> str:
    """The ConfigMap's name, a DNS subdomain: ``phasekit-run-<plan>.<host>`` (plan ``all`` without a PhasePlan)."""
    name = f"{RECORD_PREFIX}{_slug(plan or 'all')}.{_slug(host)}"
    if len(name) > 253:
        name = name[:240].rstrip("-.") + "-" + hashlib.sha256(f"{plan}/{host}".encode()).hexdigest()[:12]
    return name


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


def bundle_digest(parts) -> str:
    """``sha256:<hex>`` of plain data (objects, options, texts), independent of key order."""
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def utc_stamp(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def entry_for(run: RunInfo, *, result: str, started: float, duration: float, digest: str | None,
              msg: str = "", rollout: dict | None = None, masks: Masks | None = None) -> dict:
    """One phase's entry of this run; under a rollout, which batch of it touched the cluster
    (``{"phase": "cni", "batch": 2, "of": 5}``)."""
    entry = {"run": run.run, "action": run.action, "result": result, "started": utc_stamp(started),
             "duration": round(duration, 3), "digest": digest, "plan": run.plan, "version": run.version,
             "by": run.by}
    if rollout:
        entry["rollout"] = {key: rollout.get(key) for key in ("phase", "batch", "of")}
    if result == "failed" and msg:
        entry["msg"] = recorded_message(msg, masks)
    return entry


def recorded_message(msg: str, masks: Masks | None = None) -> str:
    """A failed phase's message as a record keeps it (people with ``view`` read it): every mask hidden, then cut
    to ``MAX_RECORD_MESSAGE`` characters (masked first: a cut secret would not be found any more)."""
    msg = masks.scrub(msg) if masks else msg
    return msg if len(msg) <= MAX_RECORD_MESSAGE else msg[:MAX_RECORD_MESSAGE] + "..."


def resumable(entry: dict | None, digest: str | None) -> bool:
    """Whether ``plan_resume`` may skip a phase: its last entry is a run that succeeded with this digest."""
    return bool(entry and digest and entry.get("action", RUN_ACTION) == RUN_ACTION
                and entry.get("result") in SUCCEEDED and entry.get("digest") == digest)


class _ClusterRecord:
    """What one cluster's ConfigMap holds, as read once this run."""

    def __init__(self, namespace: str, problem: str = ""):
        self.namespace = namespace
        self.lock = threading.Lock()
        self.read = bool(problem)
        self.exists = False
        self.problem = problem     # why it could not be read (then nothing is written either)
        self.entries: dict[str, list] = {}
        self.pending: dict[str, str] = {}   # data keys not written yet, as they will be written
        self.pending_since: float | None = None
        self.warned = False

    def said_once(self, problem: str) -> str | None:
        """A cluster's record problem is a warning once per run, not once per phase."""
        if self.warned:
            return None
        self.warned = True
        return problem


class RunRecords:
    """Reads and writes the run record of ``plan`` in each cluster, through ``session_for(host)``.

    ``namespace_for(host)``: where the host's ConfigMap lives. Every call is safe from the phase pool's threads;
    one cluster's calls are serialised (its phases run one after the other anyway).
    """

    def __init__(self, run: RunInfo, session_for: Callable[[str], ApiSession], namespace_for: Callable[[str], str],
                 *, keep: int = KEEP, flush_after: float = FLUSH_AFTER, clock: Callable[[], float] = time.monotonic):
        self.run = run
        self.keep = keep
        self.flush_after = flush_after
        self._clock = clock
        self._session_for = session_for
        self._namespace_for = namespace_for
        self._clusters: dict[str, _ClusterRecord] = {}
        self._lock = threading.Lock()

    def where(self, host: str) -> str:
        """'ConfigMap ns/name' of the host's record (for messages and docs)."""
        return f"ConfigMap {self._cluster(host).namespace}/{record_name(self.run.plan, host)}"

    def entries(self, host: str, phase: str) -> list[dict]:
        """The phase's recorded entries on the host's cluster, newest first; raises PhasekitError if unreadable."""
        cluster = self._cluster(host)
        with cluster.lock:
            self._read(host, cluster)
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
        record must not wait out the retries again)."""
        cluster = self._cluster(host)
        key = phase_key(phase)
        attempts = None if patient else 1
        with cluster.lock:
            self._read(host, cluster, attempts)
            if cluster.problem:
                return cluster.said_once(cluster.problem)
            kept = [entry] + cluster.entries.get(key, [])[:self.keep - 1]
            cluster.entries[key] = kept
            cluster.pending[key] = json.dumps(kept, separators=(",", ":"))
            if cluster.pending_since is None:
                cluster.pending_since = self._clock()
            if wait and self._clock() - cluster.pending_since < self.flush_after:
                return None
            return self._write_pending(host, cluster, attempts)

    def flush(self) -> list[str]:
        """Write every cluster's unwritten entries (when a step ends), clusters in parallel; the problems, one
        per cluster, as warnings."""
        with self._lock:
            waiting = [(host, cluster) for host, cluster in self._clusters.items() if cluster.pending]
        if not waiting:
            return []

        def write(item):
            host, cluster = item
            with cluster.lock:
                return self._write_pending(host, cluster, None) if cluster.pending else None

        with ThreadPoolExecutor(max_workers=min(FLUSH_CONCURRENCY, len(waiting)),
                                thread_name_prefix="phasekit-record") as pool:
            return [problem for problem in pool.map(write, waiting) if problem]

    def _write_pending(self, host: str, cluster: _ClusterRecord, attempts: int | None) -> str | None:
        """One write of the cluster's unwritten keys (kept for the next try when it fails)."""
        try:
            self._store(host, cluster, dict(cluster.pending), attempts)
        except (ApiError, PhasekitError) as err:
            phases = ", ".join(sorted(cluster.pending))
            return cluster.said_once(f"run record of phase(s) {phases} not written to {self.where(host)}: "
                                     f"{_reason(err)}")
        cluster.pending.clear()
        cluster.pending_since = None
        return None

    # ------------------------------------------------------------------ cluster side

    def _cluster(self, host: str) -> _ClusterRecord:
        with self._lock:
            if host in self._clusters:
                return self._clusters[host]
        try:
            cluster = _ClusterRecord(self._namespace_for(host))
        except PhasekitError as err:  # no kubeconfig: no record either
            cluster = _ClusterRecord("", problem=f"run record of cluster {host} not reachable: {err}")
        with self._lock:
            return self._clusters.setdefault(host, cluster)

    def _path(self, cluster: _ClusterRecord, name: str | None = None) -> str:
        base = f"/api/v1/namespaces/{cluster.namespace}/configmaps"
        return base if name is None else f"{base}/{name}"

    def _read(self, host: str, cluster: _ClusterRecord, attempts: int | None = None) -> None:
        if cluster.read:
            return
        cluster.read = True
        try:
            found = self._session_for(host).request("GET", self._path(cluster, record_name(self.run.plan, host)),
                                                    attempts=attempts).body
        except ApiError as err:
            if err.status != 404:
                cluster.problem = f"run record {self.where(host)} cannot be read: {_reason(err)}"
            return
        except PhasekitError as err:
            cluster.problem = f"run record {self.where(host)} cannot be read: {err}"
            return
        cluster.exists = True
        for key, text in ((found or {}).get("data") or {}).items():
            cluster.entries[key] = _entries(text)

    def _store(self, host: str, cluster: _ClusterRecord, data: dict, attempts: int | None) -> None:
        session = self._session_for(host)
        name = record_name(self.run.plan, host)
        if not cluster.exists:
            body = {"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": name, "namespace": cluster.namespace, "labels": dict(LABELS),
                                 "annotations": {PLAN_ANNOTATION: self.run.plan, HOST_ANNOTATION: host}},
                    "data": data}
            try:
                session.request("POST", self._path(cluster), body=body, attempts=attempts)
                cluster.exists = True
                return
            except ApiError as err:
                if err.status != 409:  # another run created it meanwhile: add to it
                    raise
            cluster.exists = True
        session.request("PATCH", self._path(cluster, name), body={"data": data}, content_type=MERGE_PATCH,
                        attempts=attempts)


def _entries(text) -> list[dict]:
    """A key's entries; anything unreadable (edited by hand) counts as no record."""
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        return []
    return [one for one in value if isinstance(one, dict)] if isinstance(value, list) else []


def _reason(err: Exception) -> str:
    if isinstance(err, ApiError):
        return f"{err.status} {err.reason}: {err.message}".rstrip(": ")
    return str(err)


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

    def write(phase: dict, record) -> None:
        if record.executor == tasks_executor or record.result not in (*SUCCEEDED, "failed"):
            return
        entry = entry_for(records.run, result=record.result, started=record.started, duration=record.duration,
                          digest=record.details.get("digest"), msg=record.msg, rollout=record.details.get("rollout"),
                          masks=masks_for(record.host) if masks_for and record.msg else None)
        problem = records.write(record.host, phase["name"], entry, patient=record.result != "failed",
                                wait=record.result == "ok")
        if problem and record.result != "failed":
            record.details = {**record.details, "warnings": [*record.details.get("warnings", []), problem]}

    return write
