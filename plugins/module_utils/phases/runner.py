# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Run planned phases across their cluster hosts from the controller: plan order, a barrier per phase.

This is the fleet engine behind the ``phasekit.kube.plan`` role. Ansible pays
about 15 ms per task per host (a worker process each), so a plan driven by
per-host tasks costs hosts x tasks before any API server is busy. Here one
controller task runs a whole step of built-in phases:

- phases run in plan order; a phase runs on all its hosts concurrently (a
  bounded pool) and finishes on all of them before the next one starts;
- a failed phase stops the plan after its barrier (the phase's other hosts
  complete); a dry run (validate, status) goes on to report on every phase;
- every (phase, host) leaves one ``PhaseRecord`` for the summary and for the
  per-host result in PLAY RECAP;
- a ``tasks`` phase is only prepared here (its clusters' kubeconfigs resolved,
  so the user's task files reuse them): the role then includes its task file
  on each host, which records the outcome; only a failed preparation, or a
  dry run's ``skipped``, is recorded here.

The work on one host is a plain callable (``HostWork``), so the rules here are
tested without a cluster.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError

OK, CHANGED, FAILED, SKIPPED, NOT_READY = "ok", "changed", "failed", "skipped", "not ready"
TASKS_EXECUTOR = "tasks"  # runs the user's task file per host: never on the controller
DEFAULT_CLUSTER_CONCURRENCY = 16
MAX_MESSAGE = 2000  # one record's message is kept readable (a huge object name must not flood the output)


@dataclass
class Outcome:
    """What an executor did on one host."""

    changed: bool = False
    skipped: bool = False
    failed: bool = False
    not_ready: bool = False          # a readiness check that found objects not ready (status mode)
    msg: str = ""
    objects_changed: int | None = None
    details: dict = field(default_factory=dict)   # executor output kept in the task result (no secrets)


@dataclass
class PhaseRecord:
    """One phase on one host, as the summary shows it."""

    phase: str
    host: str
    executor: str
    result: str
    duration: float
    objects_changed: int | None = None
    msg: str = ""
    details: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        out = {"phase": self.phase, "host": self.host, "executor": self.executor, "result": self.result,
               "duration": round(self.duration, 3), "objects_changed": self.objects_changed}
        if self.msg:
            out["msg"] = self.msg
        if self.details:
            out.update(self.details)
        return out


@dataclass
class RunReport:
    """Every record of the run, in plan order, and the phase that stopped it."""

    records: list[PhaseRecord] = field(default_factory=list)
    stopped_by: str = ""

    @property
    def changed(self) -> bool:
        return any(record.result == CHANGED for record in self.records)

    def failed_hosts(self) -> dict[str, str]:
        """Host -> the message of its first failed phase."""
        failed: dict[str, str] = {}
        for record in self.records:
            if record.result == FAILED and record.host not in failed:
                failed[record.host] = f"phase {record.phase} failed on cluster {record.host}: {record.msg}"
        return failed


HostWork = Callable[[dict, str], Outcome]          # (planned phase, host) -> outcome; may raise PhasekitError
Progress = Callable[[dict, list, float], None]      # (planned phase, its records, seconds) after its barrier


def run_phases(phases: list[dict], work: HostWork, *, hosts_in_play: list[str], dry_run: bool = False,
               status_mode: bool = False, stopped_by: str = "", concurrency: int = DEFAULT_CLUSTER_CONCURRENCY,
               progress: Progress | None = None) -> RunReport:
    """Run ``phases`` (as ``phase_plan`` returns them) in order on their hosts that are in the play.

    ``dry_run`` (validate, status): a failure does not stop the plan. ``stopped_by``: a phase that already
    stopped the plan (nothing runs).
    """
    report = RunReport(stopped_by=stopped_by)
    in_play = set(hosts_in_play)
    with ThreadPoolExecutor(max_workers=max(1, concurrency), thread_name_prefix="phasekit-cluster") as pool:
        for phase in phases:
            if not phase.get("executor"):
                continue
            if report.stopped_by:
                break
            hosts = [host for host in phase.get("hosts") or [] if host in in_play]
            started = time.monotonic()
            records = list(pool.map(lambda host, planned=phase: run_on_host(planned, host, work, status_mode),
                                    hosts))
            if progress is not None:
                progress(phase, records, time.monotonic() - started)
            if phase["executor"] == TASKS_EXECUTOR and not dry_run:
                records = [record for record in records if record.result == FAILED]
            report.records.extend(records)
            if not dry_run and any(record.result == FAILED for record in records):
                report.stopped_by = phase["name"]
    return report


def run_on_host(phase: dict, host: str, work: HostWork, status_mode: bool = False) -> PhaseRecord:
    """Run one phase on one host; any error becomes a failed record naming it (never a traceback)."""
    started = time.monotonic()
    try:
        outcome = work(phase, host)
    except PhasekitError as err:
        outcome = Outcome(failed=True, msg=str(err))
    # one host's bug must not hide the other hosts' outcomes
    except Exception as err:  # pylint: disable=broad-exception-caught
        outcome = Outcome(failed=True, msg=f"unexpected error ({type(err).__name__}): {err}")
    return PhaseRecord(phase=phase["name"], host=host, executor=phase["executor"],
                       result=result_of(outcome, status_mode), duration=time.monotonic() - started,
                       objects_changed=outcome.objects_changed, msg=_short(outcome.msg), details=outcome.details)


def result_of(outcome: Outcome, status_mode: bool = False) -> str:
    """The summary's word for an outcome; in status mode an unready object is a state, not an error."""
    if outcome.not_ready and status_mode:
        return NOT_READY
    if outcome.failed or outcome.not_ready:
        return FAILED
    if outcome.skipped:
        return SKIPPED
    return CHANGED if outcome.changed else OK


def plan_steps(phases: list[dict]) -> list[dict]:
    """Consecutive controller phases as one step; each ``tasks`` phase a step of its own (it runs per host)."""
    steps: list[dict] = []
    for phase in phases:
        if not phase.get("executor"):
            continue
        on_controller = phase["executor"] != TASKS_EXECUTOR
        if on_controller and steps and steps[-1]["controller"]:
            steps[-1]["phases"].append(phase)
        else:
            steps.append({"controller": on_controller, "phases": [phase]})
    return steps


def _short(message: str) -> str:
    message = str(message or "")
    return message if len(message) <= MAX_MESSAGE else message[:MAX_MESSAGE] + f"... ({len(message)} characters)"
