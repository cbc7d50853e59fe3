# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""A phase's run on one host as its run record sees it: the digest of what it does, ``plan_resume``'s skip of a
phase whose last run succeeded with the same digest, and status's last recorded run."""

from __future__ import annotations

import threading
from typing import Callable

from ansible_collections.phasekit.kube.plugins.module_utils.executors.context import DESTROY, STATUS, Outcome
from ansible_collections.phasekit.kube.plugins.module_utils.executors.registry import kind_of
from ansible_collections.phasekit.kube.plugins.module_utils.records.vocabulary import bundle_digest
from ansible_collections.phasekit.kube.plugins.module_utils.running.record import resumable


class HostRecords:
    """The records side of the phases a ``BuiltinExecutors`` (``work``) runs; ``resume``: skip what the last run
    did (``resumed_hosts``: hosts that already ran a phase in an earlier step of the run)."""

    def __init__(self, work, resume: bool, resumed_hosts=()):
        self.work = work
        self.resume = resume
        self._lock = threading.Lock()
        # hosts that ran a phase (in this step, or an earlier one of the run): from there on, every phase runs
        self._resumed: set[str] = set(resumed_hosts)

    def resumed_hosts(self) -> list[str]:
        """The hosts a resume no longer skips phases of (for the next step of the run)."""
        with self._lock:
            return sorted(self._resumed)

    def run(self, entry, context, run: Callable[[], Outcome]) -> Outcome:
        """The entry ``run`` (or resumed past) on the context's host, with its digest, the records' warnings and, in
        status, its last recorded run."""
        records, mode = self.work.records, self.work.mode
        host = context.host
        content = self.content_digest(entry, context) if records is not None and mode != DESTROY else None
        # keyed before the phase only when it is compared now; else after it, so that a cluster not up yet
        # (a phase brings it up) is not asked for its key first, and a failed phase's gets one try
        compared = self.resume or mode == STATUS
        digest = records.digest(host, content) if compared and content else None
        outcome = self.resumed_outcome(entry, host, digest) if self.resume else None
        if outcome is None:
            outcome = run()
        if content and not compared:
            digest = records.digest(host, content, attempts=1 if outcome.failed else None)
        key_problem = records.key_problem(host) if records is not None else None
        took_over = records.notice(host) if records is not None else None
        if digest is not None:
            outcome.details = {**outcome.details, "digest": digest}
        for warning in (key_problem, took_over):
            if warning:
                outcome.details = {**outcome.details, "warnings": [*outcome.details.get("warnings", []), warning]}
        if mode == STATUS and records is not None:
            outcome.details = {**outcome.details, "last_run": self.last_run(entry, host, digest)}
        return outcome

    def content_digest(self, entry, context) -> str | None:
        """Everything the phase's outcome depends on, as a plain digest (kept in memory): its executor and
        (host-rendered) options, and what its executor's ``content`` covers: its rendered bundle (apply, wait,
        container), the files its command names and the builds of its ``env_dirs`` (command), its merged values
        and its chart's every file (helm), the directories a container mounts read-only, a command or kubeconfig
        phase's source."""
        kind = kind_of(entry.executor)
        if not kind.recorded:
            return None
        parts = {"executor": entry.executor, "options": entry.options or {}}
        parts.update(kind.content(self.work, entry, context))
        return bundle_digest(parts)

    def resumed_outcome(self, entry, host: str, digest: str | None) -> Outcome | None:
        """``plan_resume``: a skip when this host has not run a phase yet this run and the phase's last run here
        succeeded with the same digest; None (run it) otherwise, and every later phase of the host runs too."""
        with self._lock:
            if host in self._resumed:
                return None
        last = self.work.records.last(host, entry.name) if digest is not None else None
        if resumable(last, digest):
            return Outcome(skipped=True, msg=f"resumed: {last['result']} in run {last['run']} "
                                             f"({last['started']}) with the same bundle, not run again",
                           details={"resumed": True})
        with self._lock:
            self._resumed.add(host)
        return None

    def last_run(self, entry, host: str, digest: str | None) -> dict | None:
        """Status: the entry's last recorded run on this host, and whether its bundle was the same."""
        last = self.work.records.last(host, entry.name)
        if last is None:
            return None
        shown = {key: last.get(key) for key in ("run", "action", "result", "started", "duration", "by", "version")}
        # None: not compared (no digest key now, or none then), which says nothing about the bundle
        shown["same_bundle"] = None if digest is None or not last.get("digest") else last.get("digest") == digest
        return shown
