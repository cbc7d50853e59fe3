# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""What a run knows of one cluster's run record and its lock (``record.py``, ``record_lock.py``): one object per
cluster and run, shared by the parts that read and write the record, never copied."""

from __future__ import annotations

import threading

from ansible_collections.phasekit.kube.plugins.module_utils.running.lock import LockHolder


class ClusterRecord:
    """What one cluster's ConfigMap holds, as read once this run."""

    def __init__(self, namespace: str, problem: str = ""):
        self.namespace = namespace
        self.lock = threading.RLock()   # re-entered: a write's lock hook runs while a record call holds it
        self.read = bool(problem)
        self.exists = False
        self.problem = problem     # why it could not be read (then nothing is written either)
        self.unreachable = ""       # the cluster could not be reached to read it (the message says why)
        self.entries: dict[str, list] = {}
        self.pending: dict[str, str] = {}   # data keys not written yet, as they will be written
        self.pending_since: float | None = None
        self.warned = False
        self.name = ""              # the ConfigMap's name
        self.legacy_name = ""       # a former version's record of this plan and host, moved by the next write
        self.problems: list[str] = []   # entries left out as read: edited by hand (history shows them)
        self.key: bytes | None = None   # the digests' key, once read
        self.key_read = False
        self.key_problem = ""       # why there is no key (then entries have no digest)
        self.key_warned = False
        # the run's lock (see lock.py): what this run last saw of the record, and whether it holds the lock
        self.version: str | None = None     # the record's resourceVersion as this run last saw it
        self.holder: LockHolder | None = None
        self.held = False
        self.begun = False          # a writing phase of this step started here (the lock was checked)
        self.lost = ""              # why this run may not write to this cluster (another run holds it, ...)
        self.ran_here = False       # the record holds entries of this run (an earlier step of it wrote here)
        self.notice = ""            # a takeover of an expired lock, said once
        self.deferred = False       # the record's namespace did not exist at the first write: no lock until it does

    def said_once(self, problem: str) -> str | None:
        """A cluster's record problem is a warning once per run, not once per phase."""
        if self.warned:
            return None
        self.warned = True
        return problem
