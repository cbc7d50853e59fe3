# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Action phasekit.kube.run_phases: run planned phases on all their cluster hosts from one controller task.

Thin: the order, barriers and records are ``module_utils.running.runner``'s, the
executors ``module_utils.running.builtin``'s, cluster access ``plugin_utils.fleet``'s.
Runs once (``run_once: true``) for the whole play; each cluster's outcome is
returned per host, and the plan role turns failed ones into failed hosts.
"""

from __future__ import annotations

import difflib
import getpass
import os
import secrets
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

from ansible import context
from ansible.utils.display import Display

from ansible_collections.phasekit.kube.plugins.module_utils.coordination.run_meeting import (
    COORDINATION_OPTIONS, SlicedRun, SliceMeet, joined_meeting, sliced_run)
from ansible_collections.phasekit.kube.plugins.module_utils.running.builtin import (
    DESTROY, EXTRA_CONNECTIONS, REQUEST_BUDGET, RUN, STATUS, UNREACHABLE, VALIDATE, BuiltinExecutors, SharedRequests)
from ansible_collections.phasekit.kube.plugins.module_utils.running.lock import (
    DEFAULT_DURATION, MIN_DURATION, LockSettings, holder_by, signals_interrupt)
from ansible_collections.phasekit.kube.plugins.module_utils.running.record import (
    DESTROY_ACTION, RUN_ACTION, RunInfo, RunRecords, phase_recorder)
from ansible_collections.phasekit.kube.plugins.module_utils.running.history import plan_history
from ansible_collections.phasekit.kube.plugins.module_utils.running.report import (
    check_report_path, report_entries, role_named, write_reports)
from ansible_collections.phasekit.kube.plugins.module_utils.running.outcome import cluster_outcomes
from ansible_collections.phasekit.kube.plugins.module_utils.planning.outputs import OutputValues, declared_outputs
from ansible_collections.phasekit.kube.plugins.module_utils.kube.preview import PlannedState
from ansible_collections.phasekit.kube.plugins.module_utils.planning.plan_changes import UNKNOWN_KUBECONFIG, previews
from ansible_collections.phasekit.kube.plugins.module_utils.planning.views import (
    rollout_stop_message, summary_lines)
from ansible_collections.phasekit.kube.plugins.module_utils.planning.rollout import hosts_label
from ansible_collections.phasekit.kube.plugins.module_utils.version import COLLECTION_VERSION
from ansible_collections.phasekit.kube.plugins.module_utils.running.runner import (
    CHANGED, DEFAULT_CLUSTER_CONCURRENCY, FAILED, LIVE_AFTER, LIVE_EVERY, OK, SKIPPED, Barrier, GraphRun,
    LiveProgress, RolloutRun, RunReport, run_phases)
from ansible_collections.phasekit.kube.plugins.module_utils.planning.planner import Plan, RunEntry
from ansible_collections.phasekit.kube.plugins.module_utils.planning.inventory import Inventory
from ansible_collections.phasekit.kube.plugins.module_utils.executors.registry import TASKS_EXECUTOR
from ansible_collections.phasekit.kube.plugins.module_utils.environ import overridden_warnings
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.helm.chart import ChartCache
from ansible_collections.phasekit.kube.plugins.module_utils.kube.apply import ABSENT as STATE_ABSENT
from ansible_collections.phasekit.kube.plugins.module_utils.kube.session import ListMemory
from ansible_collections.phasekit.kube.plugins.module_utils.masking import Masks
from ansible_collections.phasekit.kube.plugins.plugin_utils.action import PhasekitAction
from ansible_collections.phasekit.kube.plugins.plugin_utils.fleet import Fleet, remembered_by_host
from ansible_collections.phasekit.kube.plugins.plugin_utils.kubeconfig import REMEMBERED_VAR, RESOLUTIONS_KEY
from ansible_collections.phasekit.kube.plugins.plugin_utils.output import show_lines
from ansible_collections.phasekit.kube.plugins.plugin_utils.plan import (
    PLAN_SOURCE_MUTUALLY_EXCLUSIVE, PLAN_SOURCE_REQUIRED_ONE_OF, PLAN_SOURCE_SPEC, plan_for_task, spread_source,
    with_job_slice)
from ansible_collections.phasekit.kube.plugins.plugin_utils.role_steps import (
    RUN_KEY, continued_args, run_after, run_before)

HISTORY = "history"  # the clusters' run records, read; nothing runs
RESUMED = "skipped: resumed (succeeded before with the same bundle)"
ARGUMENT_SPEC = {
    **PLAN_SOURCE_SPEC,
    "phases": {"type": "list", "elements": "str"},
    "mode": {"type": "str", "choices": [RUN, VALIDATE, STATUS, DESTROY, HISTORY], "default": RUN},
    "unreachable": {"type": "str", "choices": ["fail", "skip"], "default": "fail"},
    "destroy_nonempty_namespaces": {"type": "bool", "default": False},
    "stopped_by": {"type": "str", "default": ""},
    "cluster_concurrency": {"type": "int"},
    "remember": {"type": "bool", "default": True},
    "record": {"type": "bool", "default": True},
    "record_namespace": {"type": "str", "default": ""},
    "run_id": {"type": "str", "default": ""},
    "resume": {"type": "bool", "default": False},
    "resumed_hosts": {"type": "list", "elements": "str", "default": []},
    "carried": {"type": "dict", "default": {}},
    "rollout_stop_after": {"type": "int", "default": 0},
    "rollout_batches_before": {"type": "int", "default": 0},
    "report_json": {"type": "path", "default": ""},
    "report_junit": {"type": "path", "default": ""},
    "report_timeline": {"type": "path", "default": ""},
    "allow_shared_cluster": {"type": "bool", "default": False},
    "lock_timeout": {"type": "float", "default": 0},
    "lock_duration": {"type": "int", "default": DEFAULT_DURATION},
    "release_locks": {"type": "bool", "default": False},
    "outcomes": {"type": "bool", "default": False},
    "keep_going": {"type": "bool", "default": False},
    "phase_concurrency": {"type": "int", "default": 0},
    "coordination": {"type": "dict", "default": {}, "options": COORDINATION_OPTIONS},
}
REPORT_OPTIONS = ("report_json", "report_junit", "report_timeline")  # the summary for CI and people, when asked
MAX_CLUSTER_CONCURRENCY = 256
MAX_NAMED = 20  # objects a destroy names per cluster and phase
MAX_SHOWN_LINES = 40  # lines of a command's stdout (and stderr) shown at -v

display = Display()


class ActionModule(PhasekitAction):
    ARGUMENT_SPEC = ARGUMENT_SPEC
    MUTUALLY_EXCLUSIVE = PLAN_SOURCE_MUTUALLY_EXCLUSIVE
    REQUIRED_ONE_OF = PLAN_SOURCE_REQUIRED_ONE_OF
    PLAIN_ARGS = True

    def execute(self, args, task_vars):
        args, before = step_args(with_job_slice(spread_source(args), task_vars, self.environ), task_vars)
        concurrency = args["cluster_concurrency"] or _forks()
        problem = argument_problem(args, concurrency)
        if problem:
            return {"failed": True, "msg": problem}
        reports = checked_reports(args)
        # history reads records only: a phase that could not run here still has a history to show
        plan = plan_for_task(self, args, task_vars, runnable=args["mode"] != HISTORY, reads_only=args["mode"] == STATUS)
        step = step_plan(plan, args, task_vars, bool(self._task.check_mode))
        sliced = sliced_run(args["slice"], args["coordination"], args["run_id"], task_vars, self.environ)
        names = cluster_names(step, task_vars) if sliced is not None else ([], [])
        problem = slicing_problem(sliced, step)
        if problem:
            return {"failed": True, "msg": problem}
        if sliced is not None:
            args = {**args, "run_id": sliced.run_id}
        if step.writes and not args["record"] and step.first:  # once per run
            display.warning("plan_record is false: this run keeps no run record, so it takes no lock either; another "
                            "run of this plan on the same clusters is not stopped (see \"One run at a time\" in "
                            "docs/phases.md)")
        with signals_interrupt(), ExitStack() as stack:
            fleet = self._fleet(stack, task_vars, step)
            records = self._run_records(args, fleet, step.plan_name, step.mode, step.writes,
                                        released_in_step(step.graph, step.last_phases, step.names))
            if step.mode == HISTORY:
                return self._history(records, step, concurrency, reports.get("report_timeline", ""))
            if args["release_locks"]:
                return self._release_locks(records if step.writes else None, sorted(step.tasks_last))
            executors = self._executors(stack, args, before, fleet, records, step, concurrency)
            meet = stack.enter_context(slice_meeting(sliced, step, *names)) if sliced is not None else None
            report = self._run(args, step, fleet, records, executors, concurrency, meet)
            _show_requests(fleet)
            memory = fleet.memory() if args["remember"] else None
            servers = fleet.servers()  # host:port of each cluster host, so that hosts on one server show it
            ran = [record.to_dict() for record in report.records]
            if reports and step.whole_run:   # one step of a run: only checked (plan_summary writes them)
                _write_step_reports(reports, step, ran, report.stopped_by, fleet, servers)
        _show_warnings_and_diffs(ran, bool(self._task.diff))
        result = run_result(step, report, ran, servers, executors.resumed_hosts(), args["outcomes"])
        stopped_elsewhere = elsewhere_stop(sliced, report, result)
        if stopped_elsewhere:   # another slice failed or is gone: this one stops too, and says where and why
            # the role's summary task does not run after a failed task: this slice's table is shown here
            result.update(failed=True, msg=stopped_elsewhere, **show_lines(result.get("summary") or []))
        return _carried_on(result, step, executors, before if args["run_id"] else None, memory)

    def _fleet(self, stack: ExitStack, task_vars: dict, step: StepPlan) -> Fleet:
        """The step's access to its clusters, closed with ``stack``; a run's first step warns of the environment's
        K8S_AUTH_* variables that hosts' own kube_* variables beat."""
        lists = ListMemory()  # a collection one phase listed answers the next ones (see ListMemory)
        stack.callback(lists.close)  # after the fleet's sessions: the watches guarding its lists end with the step
        fleet = stack.enter_context(Fleet(self._loader, task_vars.get("hostvars"),
                                          remembered=remembered_by_host(task_vars.get(REMEMBERED_VAR)),
                                          templar=self._templar, lists=lists, environ=self.environ,
                                          environment=self.task_environment,
                                          outputs=OutputValues(),  # what phases read after they ran, for later phases
                                          preview=step.preview))
        if step.first:  # once per run: a run's later steps say nothing
            for warning in overridden_warnings(fleet.overridden(plan_hosts(step.plan, step.in_play))):
                display.warning(warning)
        return fleet

    def _executors(self, stack: ExitStack, args: dict, before: dict | None, fleet: Fleet, records: RunRecords | None,
                   step: StepPlan, concurrency: int) -> BuiltinExecutors:
        """The executors the step's phases run with (their chart cache and shared pool of writes closed with
        ``stack``), expecting the outputs the plan's phases declare."""
        charts = stack.enter_context(ChartCache())
        widest = max((len(set(phase.hosts) & set(step.in_play)) for phase in step.phases), default=1)
        # one cluster at a time: its apply keeps its own concurrency; several: one shared pool of writes
        shared = None
        if min(concurrency, widest) > 1:
            pool = stack.enter_context(ThreadPoolExecutor(REQUEST_BUDGET, thread_name_prefix="phasekit-write"))
            shared = SharedRequests(pool, concurrency, frozenset(step.in_play))
        executors = BuiltinExecutors(fleet, mode=step.mode, check_mode=step.check_mode,
                                     diff=bool(self._task.diff), shared=shared, charts=charts,
                                     skip_unreachable=args["unreachable"] == "skip", records=records,
                                     resume=args["resume"], resumed_hosts=args["resumed_hosts"], lists=fleet.lists,
                                     plan=step.plan_name, allow_shared_cluster=args["allow_shared_cluster"],
                                     environ_of=fleet.environ_of,
                                     delete_nonempty_namespaces=args["destroy_nonempty_namespaces"], step=step.phases,
                                     outputs=fleet.outputs,
                                     carried=carried_states(args["carried"] or (before or {}).get("carried") or {},
                                                            step.preview))
        expect_outputs(fleet.outputs, executors, step, resume=args["resume"])
        return executors

    def _run(self, args: dict, step: StepPlan, fleet: Fleet, records: RunRecords | None, executors: BuiltinExecutors,
             concurrency: int, meet: SliceMeet | None = None) -> RunReport:
        """The step's phases run on their clusters. A run that writes renews its locks meanwhile, and writes the
        entries its records held back at the end, in one write per cluster, also when the step is interrupted."""
        writes = records is not None and step.writes
        # check mode, status, validate and destroy run batch by batch without the soak
        rollouts = RolloutRun(pause=step.mode == RUN and not step.check_mode,
                              stop_after=args["rollout_stop_after"],
                              batches_before=args["rollout_batches_before"], watch=executors.soak_problem,
                              batch_done=_show_batch, soaking=_show_soak)
        report = None
        renewal = records.renewing() if writes else None
        try:
            if renewal is not None:
                renewal.start()
            # host variables read in this thread, per barrier: only for the clusters a phase (a batch) reaches
            report = run_phases(step.phases, executors, hosts_in_play=step.in_play,
                                dry_run=step.mode not in (RUN, DESTROY), status_mode=step.mode == STATUS,
                                stopped_by=args["stopped_by"],
                                concurrency=concurrency, progress=self._progress(step.mode),
                                recorded=phase_recorder(records, masks_for=_masks_of(fleet)) if writes else None,
                                prepare=fleet.vars.prefetch, rollouts=rollouts,
                                live=live_progress(waiting=executors.waiting_on),
                                guard=executors.shared_cluster_refusal, graph=step.graph, meet=meet)
        finally:
            if renewal is not None:
                renewal.stop()
            # entries the records held back, in one write per cluster (also when the step was interrupted); each
            # cluster's lock released there when the run ends on it (see _released)
            if writes and report is None:
                records.stop_writes("the step was interrupted")
            for problem in records.flush(release=_released(report, step.last_phases, step.names, step.tasks_last)) if writes else ():
                display.warning(problem)
        return report

    def _run_records(self, args: dict, fleet: Fleet, plan_name: str, mode: str, writes: bool,
                     release_after: dict | None) -> RunRecords | None:
        """The clusters' run records of this plan (None with ``record: false``, or in validate mode); a run that
        writes takes each cluster's lock in them (``release_after``: the host's last phase of the plan, when it
        is in this step; None: a graph run, whose locks the step's end releases)."""
        if not args["record"] or mode == VALIDATE:
            return None
        run = RunInfo(run=args["run_id"] or new_run_id(), plan=plan_name, version=COLLECTION_VERSION, by=who_runs(),
                      action=DESTROY_ACTION if mode == DESTROY else RUN_ACTION)
        namespace = args["record_namespace"]
        lock = LockSettings(timeout=args["lock_timeout"], duration=args["lock_duration"],
                            by=holder_by(run.run)) if writes else None
        return RunRecords(run, session_for=lambda host: fleet.session(host, REQUEST_BUDGET + EXTRA_CONNECTIONS),
                          namespace_for=lambda host: namespace or fleet.resolution(host).namespace or "default",
                          create_key=mode == RUN and not self._task.check_mode, lock=lock,
                          release_after=release_after, release_on_failure=release_after is not None)

    @staticmethod
    def _release_locks(records: RunRecords | None, hosts: list[str]) -> dict:
        """The run's end, after task files: the locks this run still holds on ``hosts`` (their last phase was a
        tasks phase) are released; a problem is a warning (the lease runs out anyway)."""
        if records is not None and records.lock is not None:
            for host in hosts:
                problem = records.release(host)
                if problem:
                    display.warning(problem)
        return {"changed": False, "records": [], "released": hosts if records is not None else []}

    @staticmethod
    def _history(records: RunRecords | None, step: StepPlan, concurrency: int, timeline: str) -> dict:
        """``history``: each cluster's recent runs of the plan, from its run record (the unreadable ones warned of);
        ``timeline``: also the newest run's timeline, written there."""
        result = plan_history(records, step.planned, step.in_play, concurrency, timeline=timeline, plan=step.plan_name)
        for problem in (result.get("unreadable") or {}).values():
            display.warning(problem)
        return result

    def _progress(self, mode: str):
        """The progress callback: one line per phase; a destroy, and a run's state: absent phases, also name what
        they deleted (would delete)."""
        verb = "would delete" if self._task.check_mode else "deleted"

        def show(phase: RunEntry, barrier: Barrier, records: list, seconds: float) -> None:
            _show_progress(phase, barrier, records, seconds)
            for record in records:  # a preview: objects the server could not dry-run, and why
                for line in record.details.get("not_checked") or ():
                    display.display(f"  {record.host}: {line}")
                for line in record.details.get("known_after_run") or ():  # fields holding outputs not read yet
                    display.display(f"  {record.host}: known after the run: {line}")
            if mode not in (DESTROY, RUN):
                return
            for record in records:
                if mode == RUN and record.details.get("state") != STATE_ABSENT:
                    continue  # a run names what its state: absent phases deleted
                objects = record.details.get("objects") or []
                if objects:
                    display.display(f"  {record.host}: {verb} " + ", ".join(_named(one) for one in objects[:MAX_NAMED])
                                    + (f" and {len(objects) - MAX_NAMED} more" if len(objects) > MAX_NAMED else ""))
                if record.details.get("kept_namespaces") and record.result != FAILED:
                    display.display(f"  {record.host}: {record.msg}", color="yellow")

        return show


@dataclass(frozen=True)
class StepPlan:
    """What one run_phases task runs (the whole run list, or one step of a run in steps), worked out from the plan
    and the play before any cluster is touched."""

    plan: Plan
    mode: str
    check_mode: bool
    planned: list[RunEntry]  # the step's phases, in the order the output shows them
    phases: list[RunEntry]  # the step's phases, in the order they run
    graph: GraphRun | None  # what a plan with needs runs by (None: the list in order)
    in_play: list[str]
    play_hosts: list[str]  # every host of the play, as the summary, the reports and the outcomes list them
    last_phases: dict[str, str]  # host -> its last phase of the whole plan (after it, its lock is released)
    tasks_last: frozenset[str]  # hosts whose last phase is a tasks phase
    whole_run: bool  # the whole run list in this task, not one step of a run in steps (``phases``)
    first: bool  # this step runs the phase the run starts with: what is said once per run is said now

    @property
    def names(self) -> set[str]:
        return {phase.name for phase in self.planned}

    @property
    def plan_name(self) -> str:
        return self.plan.name or ""

    @property
    def writes(self) -> bool:
        return self.mode in (RUN, DESTROY) and not self.check_mode

    @property
    def preview(self) -> bool:
        return previews(self.mode, self.check_mode)


def step_args(args: dict, task_vars: dict) -> tuple[dict, dict | None]:
    """The task's arguments, and the run so far (None: not a step of a run in steps): a step of a run in steps
    (run_id, phases) goes on from the run so far, the previous step's result."""
    before = run_before(task_vars.get(REMEMBERED_VAR), args["run_id"]) if args["phases"] is not None else None
    if before is not None:
        args = {**args, **continued_args(args, before)}
    return args, before


def slicing_problem(sliced: SlicedRun | None, step: StepPlan) -> str:
    """Why this plan cannot run as slices yet ("": it can, or the run is not sliced)."""
    if sliced is None:
        return ""
    if not step.whole_run:
        return (f"plan_slice {sliced}: a plan with tasks phases runs in steps, and steps do not meet across "
                f"slices yet: run it unsliced")
    if step.graph is not None and any(node.rollout for node in step.graph.graph.nodes.values()):
        return (f"plan_slice {sliced}: a plan with needs and a rollout runs the rollout as a node of its "
                f"graph, and such a rollout's batches do not meet across slices yet: run it unsliced, or without "
                f"needs")
    return ""


def elsewhere_stop(sliced: SlicedRun | None, report: RunReport, result: dict) -> str:
    """Why a slice none of whose clusters failed stopped ("": it did not): the meeting's word, or a rollout stopped
    by the failures of other slices (its hosts fail no task, so the slice's task does)."""
    if sliced is None:
        return ""
    if report.slices_stop:
        return report.slices_stop
    stopped_here = report.stop and not report.stop.get("paused")
    return result["rollout"]["message"] if stopped_here and not report.failed_hosts() else ""


def cluster_names(step: StepPlan, task_vars: dict) -> tuple[list[str], list[str]]:
    """The cluster names (``spec.cluster``) of the step's phases this slice has as a host or group with hosts, and
    those it lacks (another slice's)."""
    inventory = Inventory.from_task_vars(task_vars)
    names = sorted({phase.cluster for phase in step.phases if phase.cluster})
    have = [name for name in names if inventory.hosts_for(name)]
    return have, [name for name in names if name not in have]


@contextmanager
def slice_meeting(sliced: SlicedRun, step: StepPlan, have: list[str], lack: list[str]):
    """The barriers of a sliced run that writes (a dry run needs none: each slice reads its own clusters), met for
    the step, after every slice arrived at its start; None for a dry run."""
    if not step.writes:
        yield None
        return
    with joined_meeting(sliced, step.plan_name) as meeting:
        meet = SliceMeet(meeting, step.mode)
        meet.start(have, lack)
        yield meet
        display.display(f"slice {meeting.slice} of run {sliced.run_id}: {meet.barriers} barrier(s), "
                        f"{meet.waited:.1f}s waited for other slices, {meeting.requests} request(s) to the "
                        f"coordination cluster")


def argument_problem(args: dict, concurrency: int) -> str:
    """What is wrong with the task's numbers, for people ("": nothing)."""
    if not 1 <= concurrency <= MAX_CLUSTER_CONCURRENCY:
        return f"cluster_concurrency must be between 1 and {MAX_CLUSTER_CONCURRENCY}, got {concurrency}"
    if args["rollout_stop_after"] < 0:
        return (f"rollout_stop_after (plan_rollout_stop_after) must be 0 (no stop) or a "
                f"number of batches, got {args['rollout_stop_after']}")
    if args["lock_timeout"] < 0 or args["lock_duration"] < MIN_DURATION:
        return (f"lock_timeout (plan_lock_timeout) must be 0 (fail at once) or more seconds, "
                f"and lock_duration (plan_lock_duration) at least {MIN_DURATION} seconds; "
                f"got {args['lock_timeout']:g} and {args['lock_duration']}")
    return ""


def checked_reports(args: dict) -> dict[str, str]:
    """The reports asked for (option -> path; history writes only the timeline, of the newest run), their paths
    checked."""
    reports = {option: args[option] for option in REPORT_OPTIONS
               if args[option] and (args["mode"] != HISTORY or option == "report_timeline")}
    for option, path in reports.items():
        check_report_path(path, role_named(option))   # before any cluster is touched: a typo costs no run
    return reports


def step_plan(plan: Plan, args: dict, task_vars: dict, check_mode: bool) -> StepPlan:
    """The step ``args`` ask of ``plan``, on the hosts in play."""
    mode = args["mode"]
    planned = shown_order(plan, selected_phases(plan, args["phases"]), mode)
    phases, graph = run_order(plan, planned, args, check_mode)
    in_play = list(task_vars.get("ansible_play_hosts") or [])
    whole = selected_phases(plan, None)
    last_phases = last_phase_of_hosts(in_graph_order(plan, whole), in_play, reverse=mode == DESTROY)
    # a tasks phase that is a host's last: its task file runs after its step, so the lock stays held for it
    # and the role's last task releases it (release_locks)
    tasks_last = frozenset(host for host, name in last_phases.items()
                           if any(phase.name == name and phase.executor == TASKS_EXECUTOR for phase in whole))
    return StepPlan(plan=plan, mode=mode, check_mode=check_mode, planned=planned, phases=phases, graph=graph,
                    in_play=in_play, play_hosts=list(task_vars.get("ansible_play_hosts_all") or in_play),
                    last_phases=last_phases, tasks_last=tasks_last, whole_run=args["phases"] is None,
                    first=runs_first_phase(plan, args["phases"], mode))


def expect_outputs(outputs: OutputValues, executors: BuiltinExecutors, step: StepPlan, resume: bool) -> None:
    """The outputs the plan's phases declare, for later phases' templates: those of a phase that ran before come
    from its records; a preview's are placeholders."""
    every = [planned.run_entry() for planned in step.plan.phases]  # a producer left out of the selection too
    by_full_name = {phase.full_name: phase for phase in every}
    outputs.expect(declared_outputs(every),
                   fill=lambda full_name, host: executors.recorded_outputs(by_full_name[full_name], host),
                   placeholder=step.mode != RUN or step.check_mode,
                   now=[phase.full_name for phase in step.phases]
                   if step.mode == RUN and not step.check_mode and not resume else ())


def _masks_of(fleet: Fleet):
    """Host -> the ``Masks`` of the secrets its templates read, to scrub what is written about it."""
    return lambda host: Masks(fleet.secrets(host))


def _show_requests(fleet: Fleet) -> None:
    """-vvv: what the step asked of the API servers."""
    if fleet.identities_asked:
        display.vvv(f"phasekit.kube.run_phases: cluster identity (kube-system uid) asked of "
                    f"{fleet.identities_asked} API endpoint(s)")
    sent, watches = fleet.requests_sent()
    display.vvv(f"phasekit.kube.run_phases: {sent} API request(s), {watches} of them watches guarding kept "
                f"lists")


def _write_step_reports(reports: dict[str, str], step: StepPlan, records: list[dict], stopped_by: str, fleet: Fleet,
                        servers: dict) -> None:
    """The reports asked for (``checked_reports``) of the whole run list."""
    entries = report_entries(plan_json(step.planned), records, step.play_hosts, step.mode,
                             masks_for=_masks_of(fleet), servers=servers, check_mode=step.check_mode)
    write_reports(reports, entries, plan=step.plan_name, mode=step.mode, check_mode=step.check_mode,
                  stopped_by=stopped_by)
    display.vvv(f"phasekit.kube.run_phases: reports written: {', '.join(reports.values())}")


def _show_warnings_and_diffs(records: list[dict], diff: bool) -> None:
    """The records' warnings, taken out of them (said once, not in the result), and in diff mode their diffs."""
    for record in records:
        for warning in record.pop("warnings", []):
            display.warning(warning)
        if record.get("diff") and diff:
            _show_diffs(record["diff"])


def run_result(step: StepPlan, report: RunReport, records: list[dict], servers: dict, resumed_hosts: list[str],
               outcomes: bool) -> dict:
    """The task's result of a step that ran: its records, what stopped it, the failed hosts, the rollout; for the
    whole run list its summary table, and each host's outcome when asked (``outcomes``)."""
    batches = [batch.to_dict() for batch in report.batches]
    # status and validate read the clusters: what they would change is their report, not a change
    result = {"changed": report.changed and step.mode in (RUN, DESTROY), "records": records,
              "stopped_by": report.stopped_by, "failed_hosts": report.failed_hosts(),
              "not_previewed_hosts": report.hosts_with_detail(UNKNOWN_KUBECONFIG),
              "resumed_hosts": resumed_hosts, "servers": servers, "never_started": report.never_started_list(),
              "rollout": {"batches": batches, "batches_run": report.batches_run, "stop": report.stop,
                          "message": rollout_stop_message(report.stop, step.plan.name) if report.stop else ""}}
    if step.whole_run:
        # the whole run list in this task: its summary table, made here (templating hosts x phases records
        # in the role cost more than the table is worth at fleet size)
        result["summary"] = summary_lines(plan_json(step.planned), records, step.play_hosts, step.mode,
                                          batches=batches, servers=servers, never_started=report.never_started,
                                          check_mode=step.check_mode)
    if step.whole_run and outcomes:
        # each host's own outcome, for the role's per-host result task (plan_host_results)
        result["outcomes"] = cluster_outcomes(records, step.play_hosts, step.mode, plan_json(step.planned),
                                              report.stopped_by)
    return result


def _carried_on(result: dict, step: StepPlan, executors: BuiltinExecutors, before: dict | None,
                memory: dict | None) -> dict:
    """``result`` with what later steps of the run go on from: a preview's carried-forward states, the run so far
    (``before``: the run so far of a step with a run_id) and the clusters' resolutions (``memory``)."""
    if step.preview and not step.whole_run:  # a step: what its previews carry into the next one
        result["carried"] = executors.carried_states()
        result["_ansible_no_log"] = True  # dry-run results, Secrets' among them
    if before is not None:
        result[RUN_KEY] = run_after(before, result)
    if memory is not None:
        # credentials: kept in the registered variable for later steps, hidden from every output;
        # so are the tasks phases as their task files get them (options unredacted)
        result.update({RESOLUTIONS_KEY: memory, "_ansible_no_log": True,
                       "tasks_phases": {phase.name: phase.to_dict() for phase in step.phases
                                        if phase.executor == TASKS_EXECUTOR}})
    return result


def _show_progress(phase: RunEntry, barrier: Barrier, records: list, seconds: float) -> None:
    """One line per phase after its barrier; failures always, every cluster at -v."""
    counts = {}
    for record in records:
        said = RESUMED if record.details.get("resumed") else record.result
        counts[said] = counts.get(said, 0) + 1
    tally = ", ".join(f"{count} {result}" for result, count in sorted(counts.items())) or "no cluster in play"
    if phase.executor == TASKS_EXECUTOR and counts.get(OK):
        tally = tally.replace(f"{counts[OK]} {OK}", f"{counts[OK]} prepared (the task file runs on each host)")
    display.display(f"{_phase_head(phase, barrier, len(records))}: {tally} ({seconds:.2f}s)")
    refused = [record for record in records if record.details.get("refused")]
    if refused:  # one reason for all the phase's clusters: said once, not once per cluster
        display.display(f"  {hosts_label([record.host for record in refused])}: failed: {refused[0].msg}",
                        color="red")
    for record in records:
        if record.details.get("refused"):
            continue
        _show_record(record)
        if display.verbosity >= 1:
            _show_output(record)


def _show_record(record) -> None:
    """A cluster's line of a phase: failures, unreachable clusters skipped and retried phases always, every
    cluster at -v."""
    if record.result == FAILED:
        display.display(f"  {record.host}: failed: {record.msg}", color="red")
    elif record.result == SKIPPED and record.msg.startswith(UNREACHABLE):
        display.display(f"  {record.host}: skipped: {record.msg}", color="yellow")
    elif record.details.get("attempts", 1) > 1:
        display.display(f"  {record.host}: {record.result}, {record.msg} ({record.duration:.2f}s)", color="yellow")
    elif display.verbosity >= 1 and record.details.get("resumed"):
        display.display(f"  {record.host}: skipped: {record.msg}")
    elif display.verbosity >= 1:
        changed = "" if record.objects_changed is None else f", {record.objects_changed} objects changed"
        said = f", rc {record.details['rc']}" if "rc" in record.details else ""
        display.display(f"  {record.host}: {record.result}{changed}{said} ({record.duration:.2f}s)",
                        color="yellow" if record.result == CHANGED else None)


def _show_output(record) -> None:
    """-v: what a command printed (masked with the rest of its outcome), its last ``MAX_SHOWN_LINES`` lines of
    each stream, as Ansible's command task shows stdout and stderr; and the outputs the phase read (secret ones
    as ***)."""
    outputs = record.details.get("outputs")
    if outputs:
        display.display("    outputs: " + ", ".join(f"{name}={value}" for name, value in outputs.items()))
    for stream in ("stdout", "stderr"):
        lines = str(record.details.get(stream) or "").splitlines()
        if not lines:
            continue
        left_out = f" (last {MAX_SHOWN_LINES} of {len(lines)} lines; all in the reports)" \
            if len(lines) > MAX_SHOWN_LINES else ""
        display.display(f"    {stream}:{left_out}")
        for line in lines[-MAX_SHOWN_LINES:]:
            display.display(f"      {line}")


def _phase_head(phase: RunEntry, barrier: Barrier, clusters: int) -> str:
    """The start of a phase's lines: ``[name] executor on N cluster(s)``, and its batch in a rollout."""
    batch = barrier.batch
    where = f" (batch {batch.number}/{batch.of} of {batch.phase})" if batch else ""
    return f"[{phase.name}] {phase.executor} on {clusters} cluster(s){where}"


def _show_live(phase: RunEntry, barrier: Barrier, count) -> None:
    """A long phase, while it runs: how many clusters are done, changed, failed and still running, and the
    slowest so far (plain lines: they read the same in a terminal and in an AWX job's output)."""
    state = "running" if count.slowest_running else "done"
    if count.waiting:  # the objects it waits for, with their kstatus messages
        state += f", waiting for {count.waiting}"
    slowest = f"; slowest so far: {count.slowest} ({count.slowest_seconds:.1f}s, {state})" if count.slowest else ""
    display.display(f"{_phase_head(phase, barrier, count.clusters)}: {count.done} done ({count.changed} changed, "
                    f"{count.failed} failed), {count.running} still running{slowest} ({count.seconds:.2f}s)")


def live_progress(waiting=None) -> LiveProgress:
    """Progress lines of long phases (``waiting``: see ``LiveProgress``); PHASEKIT_PROGRESS_AFTER and
    PHASEKIT_PROGRESS_EVERY (seconds) are for tests."""
    return LiveProgress(_show_live, after=_seconds_from_env("PHASEKIT_PROGRESS_AFTER", LIVE_AFTER),
                        every=_seconds_from_env("PHASEKIT_PROGRESS_EVERY", LIVE_EVERY), waiting=waiting)


def _seconds_from_env(name: str, default: float) -> float:
    try:
        value = float(os.environ.get(name, default))
    except ValueError:
        return default
    return value if value > 0 else default


def _show_soak(batch, seconds: float) -> None:
    display.display(f"[{batch.rollout}] batch {batch.number}/{batch.of} done; soak: {seconds:g}s, watching the "
                    f"objects of {len(batch.hosts) - len(batch.failed)} cluster(s)")


def _show_batch(batch) -> None:
    """One line per batch of a rollout, after it (and its soak)."""
    state = "nothing to do (resumed)" if not batch.ran else f"{len(batch.hosts) - len(batch.failed)} ok, " \
        f"{len(batch.failed)} failed"
    line = f"[{batch.rollout}] batch {batch.number}/{batch.of} on {hosts_label(batch.hosts)}: {state} " \
           f"({batch.seconds:.2f}s)"
    if batch.soak:
        line += f"; soak {batch.soak}"
    if batch.stopped:
        line += f"; stopped: {batch.stopped}"
    display.display(line, color="red" if batch.failed and batch.stopped else None)


def selected_phases(plan, names: list | None) -> list[RunEntry]:
    """The plan's selected phases, or those of them named in ``names`` (one step of the role), in plan order."""
    phases = [planned.run_entry() for planned in plan.selected]
    if names is None:
        return phases
    known = {phase.name for phase in phases}
    unknown = [name for name in names if name not in known]
    if unknown:
        raise PhasekitError(f"phases: {', '.join(unknown)} not among the selected phases of the plan "
                            f"({', '.join(sorted(known)) or 'none'})")
    return [phase for phase in phases if phase.name in set(names)]


def plan_json(entries: list[RunEntry]) -> list[dict]:
    """The run list as the views read it from Ansible (``RunEntry.to_dict``): one view for both kinds of caller."""
    return [entry.to_dict() for entry in entries]


def shown_order(plan, planned: list[RunEntry], mode: str) -> list[RunEntry]:
    """The order the output shows the phases in: the plan's; destroy, which shows them as it undoes them (reversed),
    the graph's."""
    return in_graph_order(plan, planned) if mode == DESTROY else planned


def run_order(plan, planned: list[RunEntry], args: dict, check_mode: bool) -> tuple[list[RunEntry], GraphRun | None]:
    """The order the phases run in, and the graph a plan with needs runs by (None: run the list in order). A whole
    run that writes goes by the graph; previews, checks, destroy and steps run a line in the graph's order. Destroy undoes in
    reverse (graph) order: children before parents, apps before their platform."""
    if args["phase_concurrency"] < 0:
        raise PhasekitError(f"phase_concurrency (plan_phase_concurrency) must be 0 (no bound) or a number of phases, "
                            f"got {args['phase_concurrency']}")
    ordered = in_graph_order(plan, planned)
    if args["mode"] == DESTROY:
        return list(reversed(ordered)), None
    # a step of a run in steps (phases given) is a part of the list, not a graph
    runs_graph = plan.graph is not None and args["mode"] == RUN and not check_mode and args["phases"] is None
    return ordered, GraphRun(plan.graph, keep_going=args["keep_going"],
                             phase_concurrency=args["phase_concurrency"]) if runs_graph else None


def released_in_step(graph: GraphRun | None, last_phases: dict, step: set) -> dict | None:
    """Host -> the phase whose record releases its lock: its last of the plan, when it is in this step; None: a graph
    run (its branches end in any order, and a failure leaves others writing), whose step's end releases them."""
    return None if graph is not None else {host: name for host, name in last_phases.items() if name in step}


def in_graph_order(plan, phases: list[RunEntry]) -> list[RunEntry]:
    """A plan with needs: its entries in the graph's order (plan order wherever the needs allow), so that a run as a
    line (a preview, a check, a destroy reversed) never runs a phase before what it needs; a line: as they are."""
    if plan.graph is None:
        return phases
    position = {member: index for index, member in
                enumerate(member for name in plan.graph.order for member in plan.graph.nodes[name].members)}
    plan_position = {phase.name: index for index, phase in enumerate(phases)}
    # entries outside the graph (group phases, which run nothing) keep their plan position among equals
    return sorted(phases, key=lambda phase: (position.get(phase.name, -1), plan_position[phase.name]))


def runs_first_phase(plan, names: list | None, mode: str = RUN) -> bool:
    """Whether this step runs the phase a run starts with (destroy: the last one), so that something is said once
    per run, in its first step; a whole run list does."""
    return names is None or bool(set(_first_phase(plan, mode)) & set(names))


def plan_hosts(plan, in_play: list) -> list[str]:
    """The hosts in play that a selected phase of the plan runs on, in play order."""
    named = {host for phase in selected_phases(plan, None) for host in phase.hosts}
    return [host for host in in_play if host in named]


def last_phase_of_hosts(phases: list[RunEntry], hosts: list[str], reverse: bool = False) -> dict[str, str]:
    """Each host's last phase of the whole plan, in the order the phases run (destroy: reversed): after it the run
    is done on that cluster, and its lock is released."""
    ordered = list(reversed(phases)) if reverse else phases
    in_play = set(hosts)
    last = {}
    for phase in ordered:
        if phase.executor:
            for host in phase.hosts:
                if host in in_play:
                    last[host] = phase.name
    return last


def _first_phase(plan, mode: str) -> list[str]:
    """The name of the phase a run starts with (to say something once per run, in its first step)."""
    names = [phase.name for phase in selected_phases(plan, None) if phase.executor]
    names = list(reversed(names)) if mode == DESTROY else names
    return names[:1]


def _released(report, last_phases: dict, step: set, tasks_last: set):
    """Which held clusters a step's end releases: all when the run stops (a failure, a rollout's stop, an
    interruption: ``report`` None), else those whose last phase of the plan was in this step (unless it is a tasks
    phase: its task file runs after the step), or that failed."""
    if report is None or report.stopped_by:
        return lambda host: True
    failed = set(report.failed_hosts())
    return lambda host: host in failed or (last_phases.get(host) in step and host not in tasks_last)


def carried_states(carried: dict, preview: bool) -> dict | None:
    """An earlier step's carried-forward preview state (``carried``: host -> ``PlannedState.to_dict``), in a
    preview; None otherwise (a real run never uses it)."""
    if not preview:
        return None
    return {str(host): PlannedState.from_dict(state) for host, state in carried.items()}


def new_run_id() -> str:
    """When the run started (UTC) and a random tail: 20261124T144501Z-3fa2."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + secrets.token_hex(2)


def who_runs() -> str:
    """user@controller, as run records name who ran a plan (AWX: its job's user is the container's)."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (a container's random uid)
        user = str(os.getuid())
    return f"{user}@{socket.gethostname()}"


def _named(entry: dict) -> str:
    where = f"{entry.get('namespace')}/" if entry.get("namespace") else ""
    return f"{entry.get('kind')} {where}{entry.get('name')}"


def _forks() -> int:
    """Clusters at once: Ansible's --forks, like a per-host task would get."""
    forks = (context.CLIARGS or {}).get("forks")
    return int(forks) if forks else DEFAULT_CLUSTER_CONCURRENCY


def _show_diffs(diffs: list) -> None:
    """Diff mode: the step's result is hidden (it holds credentials), so its object diffs are shown here."""
    for diff in diffs:
        lines = difflib.unified_diff(diff.get("before", "").splitlines(keepends=True),
                                     diff.get("after", "").splitlines(keepends=True),
                                     fromfile=diff.get("before_header", "before"),
                                     tofile=diff.get("after_header", "after"))
        text = "".join(lines)
        if text:
            display.display(text.rstrip("\n"))
