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
- a failed attempt is tried again on that host while the phase's ``retries``
  and ``timeout`` allow (pausing ``delay`` seconds, doubled each time); the
  other hosts of the phase do not wait for it until the barrier;
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
from ansible_collections.phasekit.kube.plugins.module_utils.phases.model import DEFAULT_RETRY_DELAY, MAX_RETRY_DELAY

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
    started: float = 0.0        # wall clock (epoch seconds), for run records

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
Recorded = Callable[[dict, PhaseRecord], None]      # (planned phase, a host's record) as soon as it is made


def run_phases(phases: list[dict], work: HostWork, *, hosts_in_play: list[str], dry_run: bool = False,
               status_mode: bool = False, stopped_by: str = "", concurrency: int = DEFAULT_CLUSTER_CONCURRENCY,
               progress: Progress | None = None, sleep: Callable[[float], None] = time.sleep,
               recorded: Recorded | None = None) -> RunReport:
    """Run ``phases`` (as ``phase_plan`` returns them) in order on their hosts that are in the play.

    ``dry_run`` (validate, status): a failure does not stop the plan, and nothing is retried. ``stopped_by``: a
    phase that already stopped the plan (nothing runs). ``sleep``: the pause between attempts (tests pass their own).
    ``recorded``: called with each host's record on that host's thread, before the phase's barrier (the clusters'
    run records get their entries there, so a plan that stops leaves every finished phase recorded).
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
            records = list(pool.map(lambda host, planned=phase: _recorded(run_on_host(
                planned, host, work, status_mode, retry=not dry_run, sleep=sleep), planned, recorded), hosts))
            if progress is not None:
                progress(phase, records, time.monotonic() - started)
            if phase["executor"] == TASKS_EXECUTOR and not dry_run:
                records = [record for record in records if record.result == FAILED]
            report.records.extend(records)
            if not dry_run and any(record.result == FAILED for record in records):
                report.stopped_by = phase["name"]
    return report


def _recorded(record: PhaseRecord, phase: dict, recorded: Recorded | None) -> PhaseRecord:
    if recorded is not None:
        recorded(phase, record)
    return record


def run_on_host(phase: dict, host: str, work: HostWork, status_mode: bool = False, *, retry: bool = True,
                sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic) -> PhaseRecord:
    """Run one phase on one host, again after a failed attempt while the phase's ``retries`` and ``timeout``
    allow; any error becomes a failed record naming it (never a traceback).

    With a ``timeout`` the executor gets the phase with a ``deadline`` (``time_left`` reads it): its waits and
    commands end by then, and no attempt starts after it.
    """
    started, started_at = clock(), time.time()
    limit = phase.get("timeout")
    deadline = started + limit if limit else None
    attempts = 1 + (int(phase.get("retries") or 0) if retry else 0)
    timed = dict(phase, deadline=deadline) if deadline is not None else phase
    attempt = 0
    while True:
        attempt += 1
        outcome = _attempt(timed, host, work)
        failed = outcome.failed or (outcome.not_ready and not status_mode)
        if not failed or attempt >= attempts:
            break
        pause = retry_pause(phase.get("delay"), attempt)
        if deadline is not None and clock() + pause >= deadline:
            outcome.msg = f"{outcome.msg} (no time left for attempt {attempt + 1}: the phase's timeout is {limit:g}s)"
            break
        sleep(pause)
    if attempts > 1:
        _say_attempts(outcome, attempt, attempts)
    return PhaseRecord(phase=phase["name"], host=host, executor=phase["executor"],
                       result=result_of(outcome, status_mode), duration=clock() - started,
                       objects_changed=outcome.objects_changed, msg=_short(outcome.msg), details=outcome.details,
                       started=started_at)


def _attempt(phase: dict, host: str, work: HostWork) -> Outcome:
    try:
        return work(phase, host)
    except PhasekitError as err:
        return Outcome(failed=True, msg=str(err))
    # one host's bug must not hide the other hosts' outcomes
    except Exception as err:  # pylint: disable=broad-exception-caught
        return Outcome(failed=True, msg=f"unexpected error ({type(err).__name__}): {err}")


def retry_pause(delay, attempt: int) -> float:
    """Seconds before attempt ``attempt + 1``: the phase's ``delay``, doubled after each further failure."""
    first = DEFAULT_RETRY_DELAY if delay is None else float(delay)
    return min(MAX_RETRY_DELAY, first * 2 ** (attempt - 1))


def _say_attempts(outcome: Outcome, attempt: int, attempts: int) -> None:
    """A phase that may be retried says which attempt decided it."""
    outcome.details = {**outcome.details, "attempts": attempt}
    if outcome.failed or outcome.not_ready:
        outcome.msg = f"attempt {attempt} of {attempts}: {outcome.msg}"
    elif attempt > 1:
        outcome.msg = f"succeeded on attempt {attempt} of {attempts}" + (f"; {outcome.msg}" if outcome.msg else "")


def time_left(phase: dict, clock: Callable[[], float] = time.monotonic) -> float | None:
    """Seconds left of the phase's ``timeout`` on this host (None: no timeout); 0 once it has passed."""
    deadline = phase.get("deadline")
    return None if deadline is None else max(0.0, deadline - clock())


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
