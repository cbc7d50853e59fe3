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
- before a phase starts on its hosts (a rollout's: on a batch), a ``guard`` may refuse it (hosts that are one
  cluster, see ``shared_cluster.py``): it then fails on all of them, nothing run and nothing recorded there;
- a ``tasks`` phase is only prepared here (its clusters' kubeconfigs resolved,
  so the user's task files reuse them): the role then includes its task file
  on each host, which records the outcome; only a failed preparation, or a
  dry run's ``skipped``, is recorded here.

The work on one host is a plain callable (``HostWork``), so the rules here are
tested without a cluster.
"""

from __future__ import annotations

import queue
import threading
import time
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, NamedTuple, Protocol

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.executors.context import Outcome
from ansible_collections.phasekit.kube.plugins.module_utils.executors.registry import kind_of
from ansible_collections.phasekit.kube.plugins.module_utils.planning.model import DEFAULT_RETRY_DELAY, MAX_RETRY_DELAY
from ansible_collections.phasekit.kube.plugins.module_utils.planning.rollout import RolloutOf, over_budget
from ansible_collections.phasekit.kube.plugins.module_utils.running import schedule

if TYPE_CHECKING:  # the runner only reads entries and graphs; the planner makes them
    from ansible_collections.phasekit.kube.plugins.module_utils.planning.graph import PlanGraph
    from ansible_collections.phasekit.kube.plugins.module_utils.planning.planner import RunEntry

OK, CHANGED, FAILED, SKIPPED, NOT_READY = "ok", "changed", "failed", "skipped", "not ready"
DEFAULT_CLUSTER_CONCURRENCY = 16
MAX_MESSAGE = 2000  # one record's message is kept readable (a huge object name must not flood the output)
SOAK_POLL = 5.0     # seconds between two looks at a batch's objects during its soak
LIVE_AFTER = 5.0    # a phase still running after this many seconds says how far it got...
LIVE_EVERY = 10.0   # ...and again at most this often, until its barrier


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
        if self.started:
            out["started"] = round(self.started, 3)
        if self.msg:
            out["msg"] = self.msg
        if self.details:
            out.update(self.details)
        return out


@dataclass
class BatchReport:
    """One batch of a rollout: its clusters, what happened to them, and why the rollout stopped there."""

    rollout: str                    # the rollout's phase
    number: int                     # 1-based
    of: int
    hosts: list[str]
    ran: bool = False               # something ran (not only phases a resume skipped)
    failed: dict = field(default_factory=dict)     # host -> "phase X: why"
    seconds: float = 0.0
    soak: str = ""                  # what the soak found ("" when there was none)
    stopped: str = ""               # why the rollout stopped after this batch ("" when it did not)

    def to_dict(self) -> dict:
        return {"rollout": self.rollout, "batch": self.number, "of": self.of, "hosts": list(self.hosts),
                "ran": self.ran, "failed": dict(self.failed), "seconds": round(self.seconds, 3),
                "soak": self.soak, "stopped": self.stopped}


@dataclass
class RunReport:
    """Every record of the run, in plan order, and the phase that stopped it."""

    records: list[PhaseRecord] = field(default_factory=list)
    stopped_by: str = ""
    batches: list[BatchReport] = field(default_factory=list)
    batches_run: int = 0            # batches that ran something, this run (for plan_rollout_stop_after)
    stop: dict = field(default_factory=dict)   # a rollout that stopped the run: phase, batch, why, untouched clusters
    never_started: dict = field(default_factory=dict)   # a graph run: (phase, host) -> why it never started there
    slices_stop: str = ""           # a sliced run: why the slices' meeting stopped this slice (another slice failed)

    @property
    def changed(self) -> bool:
        return any(record.result == CHANGED for record in self.records)

    def never_started_list(self) -> list[dict]:
        """``never_started`` as JSON: ``{phase, host, why}`` each."""
        return [{"phase": phase, "host": host, "why": why} for (phase, host), why in self.never_started.items()]

    def failed_hosts(self) -> dict[str, str]:
        """Host -> the message of its first failed phase."""
        failed: dict[str, str] = {}
        for record in self.records:
            if record.result == FAILED and record.host not in failed:
                failed[record.host] = f"phase {record.phase} failed on cluster {record.host}: {record.msg}"
        return failed

    def hosts_with_detail(self, key: str) -> list[str]:
        """Hosts an outcome of the step marked with ``key`` in its details (``plan_changes.UNKNOWN_KUBECONFIG``: in
        a preview, a cluster whose kubeconfig the run makes, where a tasks phase's task file does not run)."""
        return sorted({record.host for record in self.records if record.details.get(key)})


@dataclass(frozen=True)
class Batch:
    """The rollout batch a barrier runs on: the rollout's phase, its 1-based number, of how many."""

    phase: str
    number: int
    of: int

    def to_dict(self) -> dict:
        """As records and results show it (a stored contract: ``record.py``)."""
        return {"phase": self.phase, "batch": self.number, "of": self.of}


@dataclass(frozen=True)
class Barrier:
    """What one barrier of a phase shares with its hosts: how many run it at once, and its batch (None: the phase
    is not under a rollout)."""

    running: int
    batch: Batch | None = None


class HostContext(NamedTuple):
    """What the runner tells an executor about one host's run of an entry, beside the entry: the host, its barrier
    and the monotonic-clock deadline of the phase's ``timeout`` there (None: no timeout). A named tuple, not a frozen
    dataclass: one is made per (phase, host), and a tuple costs a third of a frozen dataclass's ``__init__``."""

    host: str
    barrier: Barrier | None = None    # None: called outside a barrier (a test, a lone call)
    deadline: float | None = None

    @property
    def batch(self) -> Batch | None:
        return self.barrier.batch if self.barrier is not None else None

    @property
    def running(self) -> int | None:
        """The clusters the barrier works on at once (None: not known, outside a barrier)."""
        return self.barrier.running if self.barrier is not None else None


HostWork = Callable[["RunEntry", HostContext], Outcome]    # (entry, host context) -> outcome; may raise PhasekitError
Progress = Callable[["RunEntry", Barrier, list, float], None]   # (entry, barrier, its records, seconds) after it
Recorded = Callable[["RunEntry", PhaseRecord], None]   # (entry, a host's record) as soon as it is made
Watch = Callable[[list, str], "str | None"]        # (a rollout's entries, host) -> why its objects are not Current
BatchDone = Callable[[BatchReport], None]           # after a batch (and its soak)
Guard = Callable[["RunEntry", list], "str | None"]  # (entry, its hosts) -> why it must not start there


class Meet(Protocol):
    """A sliced run's barriers (``coordination.run_meeting.SliceMeet``); each may raise PhasekitError (a slice gone)."""

    def __call__(self, unit: str, stopping: str) -> str:
        """After ``unit`` ended here (``stopping``: why this slice stops there): why the run stops there ("": go on)."""

    def fleet(self, rollout: str, clusters: list[str]) -> list[str]:
        """A rollout's clusters on every slice (this slice's: ``clusters``), sorted by name."""

    def batch(self, rollout: str, number: int, failed: list[str], ran: bool) -> tuple[list[str], bool]:
        """A batch's failed clusters on every slice (this slice's: ``failed``), and whether it ran on any slice
        (here: ``ran``), once every slice ended the batch."""

    def watch(self, told: Callable) -> NodeBarriers:
        """A graph run's barrier per node; the slices' word on each comes as ``told(node, word)`` (``word.ok``,
        ``word.reason``, ``word.elsewhere``), or ``told("", error)`` once the meeting failed."""


class NodeBarriers(Protocol):
    """A sliced graph run's barriers (``coordination.run_meeting.BarrierWatch``)."""

    def settled(self, node: str, why: str) -> None:
        """``node`` ended on this slice's clusters, or never starts there (``why``: it did not end well here)."""

    def close(self) -> None:
        """Every barrier told is arrived at; no more word comes."""


@dataclass
class LiveCount:
    """How far a phase still running got: its clusters done (of which changed, failed), still running (queued
    ones included), and the slowest so far (a running one counts its time until now)."""

    clusters: int
    done: int
    changed: int
    failed: int
    running: int
    slowest: str
    slowest_seconds: float
    slowest_running: bool
    seconds: float                                  # since the phase started
    waiting: str = ""                               # what the slowest cluster, still running, waits for


@dataclass
class LiveProgress:
    """Lines while a long phase runs: ``show`` is called after ``after`` seconds, then every ``every`` seconds,
    until the phase's barrier (a phase done sooner shows nothing)."""

    show: Callable[["RunEntry", Barrier, LiveCount], None]
    after: float = LIVE_AFTER
    every: float = LIVE_EVERY
    waiting: Callable[[str, str], str] | None = None   # (phase, host) -> what its work waits for now ("": nothing)


@dataclass
class RolloutRun:
    """How this run treats rollouts: whether batches pause (a run, not a dry run), when to end the run
    (``stop_after`` batches, counting the ``batches_before`` earlier steps of the run ran), and the soak watch."""

    pause: bool = True
    stop_after: int = 0
    batches_before: int = 0
    watch: Watch | None = None
    batch_done: BatchDone | None = None
    soaking: Callable[[BatchReport, float], None] | None = None   # a soak starts (batch, seconds)
    poll: float = SOAK_POLL
    clock: Callable[[], float] = time.monotonic


@dataclass(frozen=True)
class GraphRun:
    """How a plan with ``needs`` runs (issue #41): by its graph, each (phase, cluster) started as soon as what it
    needs ended, at most ``phase_concurrency`` phases at once (0: no bound but the clusters'); after a failure,
    ``keep_going`` starts what does not depend on it (make's ``-k``)."""

    graph: PlanGraph
    keep_going: bool = False
    phase_concurrency: int = 0


def run_phases(phases: list[RunEntry], work: HostWork, *, hosts_in_play: list[str], dry_run: bool = False,
               status_mode: bool = False, stopped_by: str = "", concurrency: int = DEFAULT_CLUSTER_CONCURRENCY,
               progress: Progress | None = None, sleep: Callable[[float], None] = time.sleep,
               recorded: Recorded | None = None, prepare: Callable[[list], None] | None = None,
               rollouts: RolloutRun | None = None, live: LiveProgress | None = None,
               guard: Guard | None = None, graph: GraphRun | None = None, meet: Meet | None = None) -> RunReport:
    """Run ``phases`` (the plan's ``RunEntry``s) in order on their hosts that are in the play; ``work`` gets each
    (entry, ``HostContext``).

    ``dry_run`` (validate, status): a failure does not stop the plan, and nothing is retried. ``stopped_by``: a
    phase that already stopped the plan (nothing runs). ``sleep``: the pause between attempts (tests pass their own).
    ``recorded``: called with each host's record on that host's thread, before the phase's barrier (the clusters'
    run records get their entries there, so a plan that stops leaves every finished phase recorded).
    ``prepare``: called with the hosts a barrier is about to run on, in this thread, before it (hosts no phase
    reaches are never prepared). Phases under a rollout (``entry.rollout``) run batch by batch: see
    ``rollout.py`` and ``RolloutRun``. ``live``: progress lines while a long phase runs (``LiveProgress``).
    ``guard``: asked with a phase's hosts before it starts on them (in a rollout: a batch's, with those of the
    phase's earlier batches); a reason fails the phase on every one of them, without running or recording it there.
    ``graph``: run by the plan's graph instead of in order (a run that writes; see ``GraphRun`` and ``_GraphWalk``);
    None: the plan is a line.
    ``meet``: a sliced run's barrier after each unit (a phase, a whole rollout) ended on this slice's clusters (see
    ``Meet`` and ``coordination.run_meeting.SliceMeet``).
    """
    report = RunReport(stopped_by=stopped_by)
    pool = ThreadPoolExecutor(max_workers=max(1, concurrency), thread_name_prefix="phasekit-cluster")
    try:
        runner = _Runner(pool, work, report, set(hosts_in_play), dry_run, status_mode, progress, sleep, recorded,
                         prepare, rollouts or RolloutRun(pause=not dry_run), live, guard)
        runner.meet = meet
        if graph is not None and not dry_run and not stopped_by:
            _GraphWalk(runner, graph, phases, concurrency).run()
            pool.shutdown(wait=True)
            return report
        _run_line(runner, phases)
    except BaseException as err:
        # interrupted (a signal, Ctrl-C): the caller releases what the run holds now, not once a command that is
        # still running ends
        pool.shutdown(wait=isinstance(err, Exception), cancel_futures=not isinstance(err, Exception))
        raise
    pool.shutdown(wait=True)
    return report


def _run_line(runner: _Runner, phases: list[RunEntry]) -> None:
    """The plan as a line: each unit (a phase, or a rollout) on its clusters, then the next; a sliced run meets
    the other slices after each."""
    units = list(_units(phases))
    for position, unit in enumerate(units):
        if runner.report.stopped_by:
            break
        if isinstance(unit, RolloutOf):
            runner.rollout(unit, [phase for phase in phases if _rollout_name(phase) == unit.phase],
                           last=position == len(units) - 1)
        else:
            runner.phase(unit, runner.hosts_of(unit))
        if runner.meet is not None:
            _meet(runner.meet, runner.report, unit.phase if isinstance(unit, RolloutOf) else unit.name)


def _meet(meet: Meet, report: RunReport, unit: str) -> None:
    """The barrier of the slices after ``unit``: this slice's own stop is told to every slice; another's stops it."""
    if report.slices_stop:
        return     # the meeting failed inside the unit (a rollout's batch): it said why
    stopping = ""
    if report.stopped_by == unit:   # only host names travel: the meeting's objects are readable by others
        failed = sorted(report.failed_hosts())
        stopping = report.stop.get("reason") or (f"phase {unit} failed on {len(failed)} cluster(s): "
                                                 f"{', '.join(failed[:5])}{' and more' if len(failed) > 5 else ''}")
    why = meet(unit, stopping)
    if why and not report.stopped_by:
        report.stopped_by, report.slices_stop = unit, why


def _rollout_name(phase: RunEntry) -> str | None:
    return phase.rollout.phase if phase.rollout is not None else None


def _units(phases: list[RunEntry]):
    """The phases to run one after the other: a phase, or a rollout (all the phases under it, batch by batch)."""
    seen = set()
    for phase in phases:
        name = _rollout_name(phase)
        if name is None:
            if phase.executor:
                yield phase
        elif name not in seen:
            seen.add(name)
            yield phase.rollout


class _Runner:  # pylint: disable=too-many-instance-attributes
    """One run's state: the pool, the report, the clusters failed so far (they take no later phase)."""

    def __init__(self, pool, work, report, in_play, dry_run, status_mode, progress, sleep, recorded, prepare,
                 rollouts: RolloutRun, live: LiveProgress | None = None, guard: Guard | None = None):
        self.pool, self.work, self.report, self.in_play = pool, work, report, in_play
        self.guard = guard
        self.dry_run, self.status_mode, self.progress, self.sleep = dry_run, status_mode, progress, sleep
        self.recorded, self.prepare, self.rollouts, self.live = recorded, prepare, rollouts, live
        self.failed: set[str] = set()
        self._guarded: dict[str, list[str]] = {}   # a rollout's phase -> hosts its earlier batches were let run on
        # (phase, host) -> when its work began (live lines; a graph runs a rollout's batch and other phases at once)
        self._started: dict[tuple[str, str], float] = {}
        self._lock = threading.Lock()
        self.meet: Meet | None = None      # a sliced run: a rollout's batches are the fleet's (``_fleet_batches``)
        report.batches_run = rollouts.batches_before

    def hosts_of(self, phase: RunEntry) -> list[str]:
        # a failed cluster takes no later phase (a tolerated failure in a rollout lets the others go on)
        return [host for host in phase.hosts if host in self.in_play and host not in self.failed]

    def phase(self, phase: RunEntry, hosts: list[str], batch: BatchReport | None = None) -> list[PhaseRecord]:
        """One barrier: the phase on ``hosts``, all at once (up to the pool's size)."""
        if self.prepare is not None and hosts:
            self.prepare(hosts)
        barrier = Barrier(running=len(hosts), batch=Batch(batch.rollout, batch.number, batch.of) if batch else None)
        refused = self.refused(phase, hosts, barrier)
        if refused is not None:
            return refused
        started = time.monotonic()
        futures = {host: self.pool.submit(self._run_on, phase, HostContext(host, barrier)) for host in hosts}
        if self.live is not None:
            self._watch_live(phase, barrier, futures, started)
        records = [futures[host].result() for host in hosts]
        if self.progress is not None:
            self.progress(phase, barrier, records, time.monotonic() - started)
        if not kind_of(phase.executor).runs_on_controller and not self.dry_run:
            # the task file's own record follows on the hosts it runs on; not on those failed or skipped here (in a
            # preview: a cluster whose kubeconfig the run makes)
            records = [record for record in records if record.result in (FAILED, SKIPPED)]
        self.report.records.extend(records)
        if not self.dry_run:
            self.failed.update(record.host for record in records if record.result == FAILED)
            if batch is None and any(record.result == FAILED for record in records):
                self.report.stopped_by = phase.name
        return records

    def refused(self, phase: RunEntry, hosts: list[str], barrier: Barrier) -> list[PhaseRecord] | None:
        """The phase failed on all ``hosts`` when the guard refuses it there (None: it may start). Nothing ran, so
        nothing is recorded in the clusters (``recorded`` is not called). In a rollout the guard sees the hosts of
        the phase's earlier batches too (a later batch's cluster is not looked at before its batch: a rollout
        touches no cluster ahead of its turn), and a refusal fails this batch's hosts, which the budget counts."""
        if self.guard is None or not hosts:
            return None
        started, started_at = time.monotonic(), time.time()
        earlier = self._guarded.setdefault(phase.name, []) if barrier.batch is not None else []
        known = set(earlier)
        reason = self.guard_reason(phase, earlier + [host for host in hosts if host not in known])
        if not reason:
            earlier.extend(hosts)
            return None
        return self.refuse(phase, hosts, barrier, reason, started, started_at)

    def guard_reason(self, phase: RunEntry, hosts: list[str]) -> str | None:
        """Why the guard refuses ``phase`` on ``hosts`` together (None: it may start there)."""
        try:
            return self.guard(phase, hosts)
        except PhasekitError as err:
            return str(err)
        except Exception as err:  # pylint: disable=broad-exception-caught
            return f"unexpected error before phase {phase.name} started ({type(err).__name__}): {err}"

    def refuse(self, phase: RunEntry, hosts: list[str], barrier: Barrier, reason: str, started: float,
               started_at: float, details: dict | None = None, show: bool = True) -> list[PhaseRecord]:
        """``phase`` failed on ``hosts`` for ``reason`` before it started there (``details``: default, refused by the
        guard; ``show``: its progress line now): their records, counted."""
        details = {"refused": True} if details is None else dict(details)
        if barrier.batch is not None:
            details["rollout"] = barrier.batch.to_dict()
        records = [PhaseRecord(phase=phase.name, host=host, executor=phase.executor, result=FAILED,
                               duration=0.0, msg=_short(reason), details=dict(details), started=started_at)
                   for host in hosts]
        if self.progress is not None and show:
            self.progress(phase, barrier, records, time.monotonic() - started)
        self.report.records.extend(records)
        if not self.dry_run:
            self.failed.update(hosts)
            if barrier.batch is None:   # a rollout's budget decides whether a batch's failures stop it
                self.report.stopped_by = self.report.stopped_by or phase.name
        return records

    def _watch_live(self, planned: RunEntry, barrier: Barrier, futures: dict, started: float) -> None:
        """Wait for the phase's clusters, saying how far they got once the phase is long (see ``LiveProgress``)."""
        pending = set(futures.values())
        next_line = started + self.live.after
        while pending:
            # one wake-up per line (not per cluster done): a phase over hundreds of clusters costs nothing more
            _done, pending = wait(pending, timeout=max(0.0, next_line - time.monotonic()))
            if pending:
                self.live.show(planned, barrier, self._live_count(planned, futures, started))
                next_line = time.monotonic() + self.live.every

    def _live_count(self, planned: RunEntry, futures: dict, started: float) -> LiveCount:
        now = time.monotonic()
        finished = [future.result() for future in futures.values() if future.done()]
        with self._lock:
            running = {host: now - self._started[(planned.name, host)] for host, future in futures.items()
                       if (planned.name, host) in self._started and not future.done()}
        times = {record.host: (record.duration, False) for record in finished}
        times.update({host: (seconds, True) for host, seconds in running.items()})
        slowest = max(times, key=lambda host: times[host][0], default="")
        seconds, still = times.get(slowest, (0.0, False))
        waiting = self.live.waiting(planned.name, slowest) if still and self.live.waiting is not None else ""
        return LiveCount(clusters=len(futures), done=len(finished),
                         changed=sum(1 for record in finished if record.result == CHANGED),
                         failed=sum(1 for record in finished if record.result == FAILED),
                         running=len(futures) - len(finished), slowest=slowest, slowest_seconds=seconds,
                         slowest_running=still, seconds=now - started, waiting=waiting)

    def _run_on(self, planned: RunEntry, context: HostContext) -> PhaseRecord:
        if self.live is not None:
            with self._lock:
                self._started[(planned.name, context.host)] = time.monotonic()
        record = run_on_host(planned, context, self.work, self.status_mode, retry=not self.dry_run, sleep=self.sleep)
        if context.batch is not None:
            record.details = {**record.details, "rollout": context.batch.to_dict()}
        return _recorded(record, planned, self.recorded)

    # ------------------------------------------------------------------ rollouts

    def rollout(self, rollout: RolloutOf, phases: list[RunEntry], last: bool = True, hosts: set | None = None,
                batch_ended: BatchDone | None = None, go_on: Callable[[], bool] | None = None) -> None:
        """The rollout's phases, batch by batch: every phase on a batch (a barrier each), then the soak, then
        the failure budget; the run ends at a batch over budget, or after ``stop_after`` batches. ``hosts``: the
        clusters it may run on (a graph run: those whose needs ended well; None: every cluster in play).
        ``batch_ended``: told of each batch that ran and did not stop the rollout, once its soak and budget
        passed (a graph run releases its clusters to the phases that need the rollout there). ``go_on``: asked
        before each batch after the first; False (a graph run stopped by a failure elsewhere) starts no more."""
        runnable = [phase for phase in phases if phase.executor]
        batches = _fleet_batches(self, rollout) if self.meet else \
            rollout.batches(self.in_play if hosts is None else hosts)
        hosts_of = {phase.name: set(phase.hosts) for phase in runnable}
        stopped = False     # this rollout stopped (a line stops before a rollout once anything stopped it)
        for number, hosts in enumerate(batches, start=1):
            batch = BatchReport(rollout.phase, number, len(batches), hosts)
            self.report.batches.append(batch)
            if not stopped and number > 1 and go_on is not None and not go_on():
                stopped = True                # what started finishes; a batch is new clusters: it does not start
            if stopped:
                continue                      # listed as never started
            started = time.monotonic()
            last = self._run_batch(rollout, runnable, hosts_of, batch)
            more = number < len(batches)
            if batch.ran and not batch.stopped and more and self._pauses(rollout):
                self._soak(rollout, runnable, batch, last)
                self.over_budget(rollout, batch)
            _fleet_budget(self, rollout, batch)
            batch.seconds = time.monotonic() - started
            self.report.batches_run += 1 if batch.ran else 0
            if batch.stopped:
                stopped = True
                self.report.stopped_by = rollout.phase
            elif batch.ran and self.rollouts.stop_after and self.report.batches_run >= self.rollouts.stop_after \
                    and not self.dry_run and (more or not last):
                batch.stopped = (f"plan_rollout_stop_after: {self.rollouts.stop_after} batch(es) ran; resume with "
                                 f"plan_resume=true")
                stopped = True
                self.report.stopped_by = rollout.phase
            if self.rollouts.batch_done is not None:
                self.rollouts.batch_done(batch)
            if batch_ended is not None and not batch.stopped:
                batch_ended(batch)
            if batch.stopped:
                self.report.stop = _stop(rollout, batch, batches[number:])

    def _run_batch(self, rollout: RolloutOf, runnable: list[RunEntry], hosts_of: dict,
                   batch: BatchReport) -> dict[str, PhaseRecord]:
        """Every phase of the rollout on the batch's clusters (those not failed), until it is over budget; each
        cluster's last record."""
        last: dict[str, PhaseRecord] = {}
        for phase in runnable:
            on = [host for host in batch.hosts if host in hosts_of[phase.name] and host not in self.failed]
            for record in self.phase(phase, on, batch):
                last[record.host] = record
                batch.ran = batch.ran or not record.details.get("resumed")
                if record.result == FAILED:
                    batch.failed.setdefault(record.host, f"phase {record.phase}: {record.msg}")
            if self.over_budget(rollout, batch):
                break
        return last

    def over_budget(self, rollout: RolloutOf, batch: BatchReport) -> bool:
        if self.dry_run or not over_budget(len(batch.failed), len(batch.hosts), rollout.rollout.max_fail_percentage):
            return False
        share = len(batch.failed) * 100.0 / len(batch.hosts)
        batch.stopped = (f"{len(batch.failed)} of {len(batch.hosts)} cluster(s) failed ({share:.0f}% > "
                         f"max_fail_percentage {rollout.rollout.max_fail_percentage:g}%)")
        return True

    def _pauses(self, rollout: RolloutOf) -> bool:
        return self.rollouts.pause and rollout.rollout.pause > 0 and not (
            self.rollouts.stop_after and self.report.batches_run + 1 >= self.rollouts.stop_after)

    def _soak(self, rollout: RolloutOf, phases: list[RunEntry], batch: BatchReport, last: dict) -> None:
        """``pause`` seconds before the next batch, the batch's clusters watched: a cluster whose objects stop
        being Current fails its last phase of the batch (the gate), and counts against the budget."""
        seconds = rollout.rollout.pause
        watched = [host for host in batch.hosts if host in last and host not in batch.failed]
        if self.rollouts.soaking is not None:
            self.rollouts.soaking(batch, seconds)
        clock = self.rollouts.clock
        deadline = clock() + seconds
        polls = 0
        while watched:
            polls += 1
            for host, problem in zip(watched, self.pool.map(lambda host: self._watch(phases, host), watched)):
                if problem:
                    self._soak_failed(phases, batch, last[host], f"during the {seconds:g}s soak after batch "
                                                                 f"{batch.number} of {batch.of}: {problem}")
            watched = [host for host in watched if host not in batch.failed]
            left = deadline - clock()
            if left <= 0 or over_budget(len(batch.failed), len(batch.hosts), rollout.rollout.max_fail_percentage):
                break   # the soak is over, or the rollout stops here anyway
            self.sleep(min(self.rollouts.poll, left))
        bad = [host for host in batch.hosts if host in batch.failed and host in last]
        batch.soak = (f"{seconds:g}s, {polls} check(s): "
                      + (f"{len(bad)} cluster(s) failed" if bad else "every object stayed Current"))

    def _watch(self, phases: list[RunEntry], host: str) -> str | None:
        if self.rollouts.watch is None:
            return None
        try:
            return self.rollouts.watch(phases, host)
        except PhasekitError as err:
            return str(err)
        except Exception as err:  # pylint: disable=broad-exception-caught
            return f"unexpected error ({type(err).__name__}): {err}"

    def _soak_failed(self, phases: list[RunEntry], batch: BatchReport, record: PhaseRecord, message: str) -> None:
        failed = PhaseRecord(phase=record.phase, host=record.host, executor=record.executor, result=FAILED,
                             duration=record.duration, objects_changed=record.objects_changed, msg=_short(message),
                             details={**record.details, "soak": True}, started=record.started)
        self.report.records[self.report.records.index(record)] = failed
        batch.failed[record.host] = f"phase {record.phase}: {failed.msg}"
        self.failed.add(record.host)
        if self.recorded is not None:
            self.recorded(next(phase for phase in phases if phase.name == record.phase), failed)


def _stop(rollout: RolloutOf, batch: BatchReport, rest: list[list[str]]) -> dict:
    untouched = [host for hosts in rest for host in hosts]
    return {"phase": rollout.phase, "batch": batch.number, "of": batch.of, "reason": batch.stopped,
            "failed": dict(batch.failed), "untouched": untouched,
            "paused": batch.stopped.startswith("plan_rollout_stop_after")}


def _fleet_batches(runner: _Runner, rollout: RolloutOf) -> list[list[str]]:
    """A sliced run: the batches one controller would make of the rollout's clusters on every slice (the slices'
    inventories are sorted by name, as AWX deals them, so the fleet's inventory order is by name too)."""
    try:
        fleet = runner.meet.fleet(rollout.phase, [host for host in rollout.clusters if host in runner.in_play])
    except PhasekitError as err:
        runner.report.slices_stop = str(err)
        runner.report.stopped_by = runner.report.stopped_by or rollout.phase
        return []
    return RolloutOf(rollout.phase, rollout.rollout, list(fleet), rollout.default).batches(fleet)


def _fleet_budget(runner: _Runner, rollout: RolloutOf, batch: BatchReport) -> None:
    """A sliced run, once every slice ended ``batch`` (its soak too): the failures of all slices count against the
    budget, and a batch that ran on any slice counts as run, so every slice stops at the same batch (a slice gone
    stops this one). Not sliced: nothing to do."""
    if runner.meet is None:
        return
    try:
        failed, ran = runner.meet.batch(rollout.phase, batch.number, sorted(batch.failed), batch.ran)
    except PhasekitError as err:
        runner.report.slices_stop = batch.stopped = batch.stopped or str(err)
        return
    batch.ran = batch.ran or ran    # ran on some slice: it counts for plan_rollout_stop_after on every slice
    for host in failed:
        batch.failed.setdefault(host, "failed on another slice of this run")
    if not batch.stopped:
        runner.over_budget(rollout, batch)


BATCH_ENDED = object()     # on a graph walk's queue: a rollout's batch ended, its rollout goes on
EVERYWHERE = object()      # on a sliced graph walk's queue: the slices' word on a node (or the meeting failed)


class _GraphWalk:
    """A plan with ``needs``, run by its graph: ``schedule.Scheduler`` says which (phase, cluster) pairs may start,
    each is submitted to the clusters' pool as soon as it may (no barrier per phase), and each pair's end is told to
    the scheduler on this thread. A rollout is one node, run batch by batch on a thread of its own; the clusters it
    ran on are released to its dependents when it ends. Records, progress lines and the report keep their shape: a
    phase's progress line comes once it ended on all its clusters (or at the end of the run), and
    ``RunReport.never_started`` says which pairs never started and why."""

    def __init__(self, runner: _Runner, run: GraphRun, phases: list[RunEntry], concurrency: int):
        self.runner, self.graph = runner, run.graph
        self.entries = {phase.name: phase for phase in phases}
        # a sliced run: all-clusters needs wait for every slice, told through the node's barrier
        kind = schedule.Scheduler if runner.meet is None else schedule.SlicedScheduler
        self.scheduler = kind(run.graph, phase_concurrency=run.phase_concurrency or None,
                              cluster_concurrency=max(1, concurrency), keep_going=run.keep_going)
        self.ends: queue.Queue = queue.Queue()     # (node, host, record) or (rollout node, hosts, None)
        self.in_flight = 0
        self.records: dict = {name: [] for name in self.graph.nodes}    # node -> its records so far
        self.began: dict = {}                                           # node -> monotonic time it first started
        self.shown: set = set()
        self.position = {name: index for index, name in enumerate(self.entries)}
        self.first_failed = ""
        self.released: dict = {}     # rollout node -> the clusters its batches released so far
        # node -> (its barrier, the guard's verdict on all its clusters in play, asked before its first pair starts:
        # two hosts of one cluster are refused before either writes, however the scheduler hands them out)
        self.gates: dict = {}
        self.crashed: dict = {}      # rollout node -> the error its thread ended with
        self.barriers = None if runner.meet is None else \
            runner.meet.watch(lambda name, word: self.ends.put((name, word, EVERYWHERE)))

    def run(self) -> None:
        try:
            while True:
                handed = self.scheduler.ready()
                if handed:
                    self._start(handed)
                    continue
                if self.barriers is not None:
                    for name, why in self.scheduler.settled():
                        self.barriers.settled(name, why)
                if not self.in_flight and (self.barriers is None or not self.scheduler.waiting()):
                    break
                self._end(*self.ends.get())
        finally:
            if self.barriers is not None:
                self.barriers.close()
        for name in self.graph.order:
            self._show(name)     # phases that never ended on all their clusters, once the run is over
        self._never_started()
        report = self.runner.report
        report.records.sort(key=self._record_order)
        report.stopped_by = report.stopped_by or self.first_failed

    # -- starting

    def _start(self, handed: list) -> None:
        by_node: dict = {}
        for name, hosts in handed:      # a rollout is handed whole: (node, hosts)
            if self.graph.nodes[name].rollout:
                self._start_rollout(name, hosts)
            else:
                by_node.setdefault(name, []).append(hosts)
        for name, hosts in by_node.items():
            self._start_pairs(name, hosts)

    def _start_pairs(self, name: str, hosts: list) -> None:
        runner, entry = self.runner, self.entries[self.graph.nodes[name].members[0]]
        playing = [host for host in hosts if host in runner.in_play]
        for host in hosts:
            if host not in runner.in_play:
                self.scheduler.ended(name, host, schedule.SKIPPED)   # as in a line: no record, "not in play"
        if not playing:
            return
        self.began.setdefault(name, time.monotonic())
        if runner.prepare is not None:
            runner.prepare(playing)
        barrier, reason = self._gate(name, entry)
        if reason:
            # its line once, when it ended on all its clusters (they may be handed out one at a time)
            for record in runner.refuse(entry, playing, barrier, reason, time.monotonic(), time.time(), show=False):
                self.records[name].append(record)
                self.scheduler.ended(name, record.host, schedule.FAILED)
            if self.scheduler.left[name] == 0:
                self._show(name)
            return
        for host in playing:
            self.in_flight += 1
            future = runner.pool.submit(runner._run_on, entry, HostContext(host, barrier))  # pylint: disable=protected-access
            future.add_done_callback(lambda done, host=host: self.ends.put((name, host, done)))

    def _gate(self, name: str, entry: RunEntry) -> tuple:
        """The node's barrier and the guard's verdict on all its clusters in play (None: it may start), once."""
        if name not in self.gates:
            runner = self.runner
            in_play = [host for host in self.graph.nodes[name].hosts if host in runner.in_play]
            reason = runner.guard_reason(entry, in_play) if runner.guard is not None and len(in_play) > 1 else None
            self.gates[name] = (Barrier(running=len(in_play)), reason)
        return self.gates[name]

    def _start_rollout(self, name: str, hosts: tuple) -> None:
        runner = self.runner
        members = [self.entries[member] for member in self.graph.nodes[name].members]
        self.began.setdefault(name, time.monotonic())
        self.in_flight += 1

        def roll() -> None:
            try:
                runner.rollout(members[0].rollout, members, hosts=set(hosts) & runner.in_play,
                               batch_ended=lambda batch: self.ends.put((name, batch, BATCH_ENDED)),
                               go_on=self.scheduler.going_on)
            except Exception as err:  # pylint: disable=broad-exception-caught
                # told on the run's thread: the clusters it did not reach fail, never a thread's traceback
                self.crashed[name] = f"unexpected error in rollout {name} ({type(err).__name__}): {err}"
            finally:
                self.ends.put((name, tuple(hosts), None))

        threading.Thread(target=roll, name=f"phasekit-rollout-{name}", daemon=True).start()

    # -- ending

    def _end(self, name: str, host, done) -> None:
        if done is EVERYWHERE:
            self._everywhere(name, host)
            return
        if done is BATCH_ENDED:     # a batch of a rollout that goes on: its clusters, to what needs it there
            self._rollout_hosts_ended(name, host.hosts, tolerated=True)
            return
        self.in_flight -= 1
        if done is None:
            self._rollout_ended(name, host)
            return
        record = done.result()      # _run_on never raises: an error is a failed record
        self.runner.report.records.append(record)
        self.records[name].append(record)
        result = _scheduled(record.result)
        if result == schedule.FAILED:
            self.first_failed = self.first_failed or name
        self.scheduler.ended(name, host, result)
        if self.scheduler.left[name] == 0:
            self._show(name)

    def _everywhere(self, name: str, word) -> None:
        """The slices' word on ``name``: another slice's verdict stops this one as its own failure would (only
        what does not need it goes on with ``keep_going``); a failed meeting (a slice gone) stops the run."""
        report = self.runner.report
        if isinstance(word, PhasekitError):
            report.slices_stop = report.slices_stop or str(word)
            self.scheduler.halt(f"the slices' meeting failed: {word}")
            return
        self.scheduler.everywhere(name, word.ok, word.reason)
        if not word.ok and word.elsewhere and not self.first_failed and not report.slices_stop:
            goes_on = "what does not need it goes on" if self.scheduler.keep_going else "no later phase starts"
            report.slices_stop = f"{word.reason}: this slice stops there too; {goes_on}"
            self.first_failed = name

    def _rollout_ended(self, name: str, hosts: tuple) -> None:
        """The rollout's clusters no batch released (a batch that stopped it, those after it, those not in play)."""
        if name in self.crashed:
            self._rollout_crashed(name, hosts)
        self._rollout_hosts_ended(name, hosts, tolerated=False)
        self.shown.add(name)     # its batches said how they went

    def _rollout_crashed(self, name: str, hosts: tuple) -> None:
        """A rollout whose thread raised: its phases fail on each cluster in play it left without a record."""
        runner, members = self.runner, self.graph.nodes[name].members
        reached = {(record.phase, record.host) for record in runner.report.records}
        for member in members:
            entry = self.entries[member]
            left = [host for host in hosts if host in runner.in_play and host in entry.hosts
                    and (member, host) not in reached]
            if entry.executor and left:
                runner.refuse(entry, left, Barrier(running=len(left)), self.crashed[name], time.monotonic(),
                              time.time(), details={})
        self.first_failed = self.first_failed or name

    def _rollout_hosts_ended(self, name: str, hosts, tolerated: bool) -> None:
        """Each cluster of a rollout not told yet: failed when a phase of it failed there or its batch never ran
        (the rollout stopped before it), skipped when every phase skipped there, ok otherwise. ``tolerated``: the
        batch stayed within the failure budget, so a failure there blocks only that cluster's dependents."""
        members = set(self.graph.nodes[name].members)
        told = self.released.setdefault(name, set())
        results: dict = {}
        for record in list(self.runner.report.records):     # the rollout's thread may still append
            if record.phase in members:
                results.setdefault(record.host, []).append(_scheduled(record.result))
        for host in hosts:
            if host in told:
                continue
            told.add(host)
            ended = results.get(host) or [schedule.FAILED if host in self.runner.in_play else schedule.SKIPPED]
            result = (schedule.FAILED if schedule.FAILED in ended else
                      schedule.SKIPPED if all(each == schedule.SKIPPED for each in ended) else schedule.OK)
            self.scheduler.ended(name, host, result, tolerated=tolerated)

    def _show(self, name: str) -> None:
        records = self.records.get(name)
        if name in self.shown or not records or self.runner.progress is None:
            return
        self.shown.add(name)
        entry = self.entries[self.graph.nodes[name].members[0]]
        self.runner.progress(entry, Barrier(running=len(records)), sorted(records, key=self._record_order),
                             time.monotonic() - self.began.get(name, time.monotonic()))

    # -- the report

    def _never_started(self) -> None:
        never = self.runner.report.never_started
        for name in self.graph.order:
            for host in self.graph.nodes[name].hosts:
                if host not in self.runner.in_play:
                    continue
                why = self.scheduler.never_started(name, host)
                if why:
                    for member in self.graph.nodes[name].members:
                        if self.entries.get(member) is not None and self.entries[member].executor:
                            never[(member, host)] = why

    def _record_order(self, record: PhaseRecord) -> tuple:
        """Records in plan order, then host order, as a line leaves them."""
        entry = self.entries.get(record.phase)
        hosts = entry.hosts if entry is not None else ()
        return (self.position.get(record.phase, len(self.position)),
                hosts.index(record.host) if record.host in hosts else len(hosts))


def _scheduled(result: str) -> str:
    """A record's result as the scheduler reads it: changed is ok, not ready is failed."""
    if result == FAILED or result == NOT_READY:
        return schedule.FAILED
    return schedule.SKIPPED if result == SKIPPED else schedule.OK


def _recorded(record: PhaseRecord, phase: RunEntry, recorded: Recorded | None) -> PhaseRecord:
    if recorded is not None:
        recorded(phase, record)
    return record


def run_on_host(phase: RunEntry, context: HostContext, work: HostWork, status_mode: bool = False, *,
                retry: bool = True, sleep: Callable[[float], None] = time.sleep,
                clock: Callable[[], float] = time.monotonic) -> PhaseRecord:
    """Run one phase on one host, again after a failed attempt while the phase's ``retries`` and ``timeout``
    allow; any error becomes a failed record naming it (never a traceback).

    With a ``timeout`` the executor's ``HostContext`` has a ``deadline`` (``time_left`` reads it): its waits and
    commands end by then, and no attempt starts after it.
    """
    started, started_at = clock(), time.time()
    host, limit = context.host, phase.timeout
    deadline = started + limit if limit else None
    attempts = 1 + (int(phase.retries or 0) if retry else 0)
    timed = HostContext(host, context.barrier, deadline) if deadline is not None else context
    attempt = 0
    while True:
        attempt += 1
        outcome = _attempt(phase, timed, work)
        failed = outcome.failed or (outcome.not_ready and not status_mode)
        if not failed or attempt >= attempts:
            break
        pause = retry_pause(phase.delay, attempt)
        if deadline is not None and clock() + pause >= deadline:
            outcome.msg = f"{outcome.msg} (no time left for attempt {attempt + 1}: the phase's timeout is {limit:g}s)"
            break
        sleep(pause)
    if attempts > 1:
        _say_attempts(outcome, attempt, attempts)
    return PhaseRecord(phase=phase.name, host=host, executor=phase.executor,
                       result=result_of(outcome, status_mode), duration=clock() - started,
                       objects_changed=outcome.objects_changed, msg=_short(outcome.msg), details=outcome.details,
                       started=started_at)


def _attempt(phase: RunEntry, context: HostContext, work: HostWork) -> Outcome:
    try:
        return work(phase, context)
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


def time_left(deadline: float | None, clock: Callable[[], float] = time.monotonic) -> float | None:
    """Seconds left until a host's ``HostContext.deadline`` (None: the phase has no timeout); 0 once it has passed."""
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
        on_controller = kind_of(phase["executor"]).runs_on_controller
        if on_controller and steps and steps[-1]["controller"]:
            steps[-1]["phases"].append(phase)
        else:
            steps.append({"controller": on_controller, "phases": [phase]})
    return steps


def _short(message: str) -> str:
    message = str(message or "")
    return message if len(message) <= MAX_MESSAGE else message[:MAX_MESSAGE] + f"... ({len(message)} characters)"
