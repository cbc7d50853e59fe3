# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The generic host work of the built-in executors: records, resume, locks, outputs, dispatch through the registry.

``BuiltinExecutors`` is the ``HostWork`` the runner calls per (phase, host); what each executor does is
asked of its kind (``executors.registry.kind_of``). The apply, helm and command runs still live here
(``run_apply``, ``run_helm``, ``run_command_phase``), called by their executor modules.
It reaches clusters only through a ``ClusterAccess`` (resolved kubeconfig and
a pooled API session per host, kept for the whole run), and renders each
phase's bundle once for all its hosts. The phase options are the ones
``phase_plan`` validated against each executor's spec; defaults and the rules
that used to sit in the role's Jinja (default ApplySet name, status timeouts,
what counts as changed) live here, where they are tested.
"""

from __future__ import annotations

import dataclasses
import math
import os
import shlex
import threading
import time
from collections.abc import Mapping
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Protocol

from ansible_collections.phasekit.kube.plugins.module_utils.bundle import has_templates, render_bundle
from ansible_collections.phasekit.kube.plugins.module_utils.executors.apply import apply_arguments
from ansible_collections.phasekit.kube.plugins.module_utils.executors.registry import kind_of, option_values
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.helm.chart import ChartCache
from ansible_collections.phasekit.kube.plugins.module_utils.helm.options import (
    ABSENT, HELM_OPTIONS_SPEC, MODE_APPLY, duration_seconds, helm_request, is_template, plain_values_file)
from ansible_collections.phasekit.kube.plugins.module_utils.helm.release import values_masks
from ansible_collections.phasekit.kube.plugins.module_utils.helm.stored import stored_manifest_objects
from ansible_collections.phasekit.kube.plugins.module_utils.helm.run import (
    release_apply_arguments, release_values, remove_rendered_release, render_release, request_chart, run_release)
from ansible_collections.phasekit.kube.plugins.module_utils.kube.absent import delete_bundle
from ansible_collections.phasekit.kube.plugins.module_utils.kube.apply import apply_bundle, apply_options
from ansible_collections.phasekit.kube.plugins.module_utils.kube.apply import ABSENT as STATE_ABSENT
from ansible_collections.phasekit.kube.plugins.module_utils.kube.discovery import Discovery
from ansible_collections.phasekit.kube.plugins.module_utils.kube.ownership import PlanOwner
from ansible_collections.phasekit.kube.plugins.module_utils.kube.preview import PlannedState, deleted_changes
from ansible_collections.phasekit.kube.plugins.module_utils.kube.session import ApiError, ListMemory
from ansible_collections.phasekit.kube.plugins.module_utils.kube.teardown import DEFAULT_TIMEOUT as TEARDOWN_TIMEOUT
from ansible_collections.phasekit.kube.plugins.module_utils.kube.teardown import PlanObjects, Teardown
from ansible_collections.phasekit.kube.plugins.module_utils.kube.wait import (
    WaitRules, look_now, not_current_now, not_ready_message, wait_rules,
    waiting_summary)
from ansible_collections.phasekit.kube.plugins.module_utils.phases.built_dirs import build_env_dirs
from ansible_collections.phasekit.kube.plugins.module_utils.phases.command import COMMAND_PHASE_SPEC, command_argv
from ansible_collections.phasekit.kube.plugins.module_utils.phases.command import (
    changed_when_rule, command_failure_message, command_success_message, kept_output, run_command)
from ansible_collections.phasekit.kube.plugins.module_utils.phases.fingerprint import (
    FileDigests, command_words, uncomparable)
from ansible_collections.phasekit.kube.plugins.module_utils.phases.outputs import (
    FROM_STDOUT, FROM_VALUES, SECRET_NAMES, OutputValues, PhaseOutput, known_after_run, read_output,
    read_stdout_output, read_values_output)
from ansible_collections.phasekit.kube.plugins.module_utils.phases.plan_changes import UNKNOWN_KUBECONFIG
from ansible_collections.phasekit.kube.plugins.module_utils.phases.record import (
    KEY_SECRET, LABELS, PLAN_ANNOTATION, LockRefused, RunRecords, bundle_digest, recorded_message, recorded_outputs,
    resumable)
from ansible_collections.phasekit.kube.plugins.module_utils.phases.runner import HostContext, Outcome, time_left
from ansible_collections.phasekit.kube.plugins.module_utils.phases.shared_cluster import (
    HostTarget, shared_cluster_refusal)
from ansible_collections.phasekit.kube.plugins.module_utils.masking import Masks
from ansible_collections.phasekit.kube.plugins.module_utils.templating import has_template_strings

RUN, VALIDATE, STATUS, DESTROY = "run", "validate", "status", "destroy"
UNREACHABLE = "cluster unreachable, skipped"
EXTRA_CONNECTIONS = 4  # live-state reads run beside the apply workers
REQUEST_BUDGET = 32
HELM_TIMEOUT = 300  # helm's own default --timeout (5m)
IDENTITY_THREADS = 16  # hosts whose kubeconfig and cluster identity are looked up at once before a phase
HELM_PREVIEW = {"installed": "would be installed", "upgraded": "would be upgraded", "uninstalled": "would be uninstalled",
                "unchanged": "as asked, nothing to do", "absent": "absent, nothing to do"}


@dataclass(frozen=True)
class SharedRequests:
    """One pool of request threads for all the clusters a step works on, and each cluster's share of it.

    Python threads share one interpreter lock and the controller a few cores: 10 clusters x 16 requests
    each, in pools made per wave, would spend their time starting threads and handing the lock around.
    A cluster of a phase gets ``budget`` / (its clusters at once) requests in flight, and so opens that
    many connections: each new TLS connection costs both ends a handshake, and 60 clusters opening 10
    each made the first phase of a fleet run twice as slow as the next ones.
    """

    pool: Executor
    clusters_at_once: int
    hosts_in_play: frozenset = frozenset()
    budget: int = REQUEST_BUDGET

    def per_cluster(self, phase: dict, running: int | None = None) -> int:
        """Requests in flight to one cluster of ``phase`` (the apply option ``concurrency`` caps it); ``running``:
        the clusters the runner's barrier works on (a batch of a rollout, say; ``HostContext.running``)."""
        if running is not None:
            clusters = running or 1
        else:  # counted once per barrier by the runner: per host, this was quadratic in a fleet's size
            clusters = len(set(phase.get("hosts") or []) & self.hosts_in_play) or 1
        return max(1, self.budget // min(self.clusters_at_once, clusters))


class ClusterAccess(Protocol):
    """How executors reach a host's cluster (implemented in plugin_utils.fleet)."""

    def resolution(self, host: str):
        """The host's resolved kubeconfig (``Resolution``), once per run; raises PhasekitError."""

    def session(self, host: str, connections: int):
        """A pooled ``ApiSession`` for the host's cluster, kept for the run; raises PhasekitError."""

    def render_template(self, host: str, path: str) -> str:
        """The Jinja template file at ``path`` rendered with the host's variables; raises PhasekitError."""

    def render_options(self, host: str, options: dict, where: str) -> dict:
        """``options`` with their template strings rendered with the host's variables; raises PhasekitError."""

    def secrets(self, host: str) -> frozenset:
        """What must not be shown of this host: the values its templates may have carried into output
        (vault-encrypted variables) and the credentials of its kubeconfig once resolved (``masking.Masks``)."""

    def known_after_run(self, host: str) -> str | None:
        """In a preview: where the host's kubeconfig will be (a Secret not there yet) when that is why it did not
        resolve; else None."""

    def identity(self, host: str, connections: int):
        """The ``kube.identity.ClusterIdentity`` of the host's cluster, asked once per endpoint and run; raises
        PhasekitError only when the host's kubeconfig cannot be resolved."""


def phase_environment(phase: dict, host: str) -> dict:
    """What a command phase sees besides its own ``env`` (KUBECONFIG is set by run_command)."""
    source = phase.get("source")
    return {"PHASEKIT_PHASE": phase["name"], "PHASEKIT_HOST": host,
            "PHASEKIT_SOURCE": source if isinstance(source, str) else ""}


def other_host(phase: dict, host: str, variable: str, name) -> str:
    """The host a command phase's ``kubeconfigs`` entry names (rendered for ``host``: ``{{ kube_parent }}``)."""
    name = str(name or "").strip()
    if not name:
        raise PhasekitError(f"phase {phase['name']} on cluster {host}: option kubeconfigs.{variable} names no host "
                            f"(a template that rendered empty, such as kube_parent unset on {host})")
    return name


class BuiltinExecutors:
    """Runs one built-in phase on one host; ``mode`` is run, validate, status or destroy.

    ``destroy`` undoes the phase instead (see ``_destroy``); ``skip_unreachable``: a cluster that cannot be
    reached (or whose kubeconfig cannot be resolved any more) is skipped by destroy instead of failing it;
    ``delete_nonempty_namespaces``: destroy deletes the plan's namespaces even when they hold objects the plan
    did not apply (by default it keeps them and names those objects).
    ``records``: the clusters' run records; with them each outcome carries its phase's ``digest``, status shows
    the ``last_run``, and ``resume`` skips a cluster's phases up to its first one that did not succeed with the
    same digest in its last run.
    ``plan``: the plan's name ("" without a PhasePlan): what its applies mark their ApplySets and objects with
    (``kube.ownership``); None marks nothing, as a task outside a plan.
    ``step``: the step's phases in the order they run: an apply keeps what it listed for later phases (a watch per
    collection, see ``ListMemory``) only on a host that a later apply of the step runs on (None: always).
    """

    def __init__(self, access: ClusterAccess, *, mode: str = RUN, check_mode: bool = False, diff: bool = False,
                 render: Callable[[dict], list] | None = None, shared: SharedRequests | None = None,
                 charts: ChartCache | None = None, skip_unreachable: bool = False,
                 records: RunRecords | None = None, resume: bool = False, resumed_hosts=(),
                 lists: ListMemory | None = None, plan: str | None = None, allow_shared_cluster: bool = False,
                 environ_of: Callable[[str], Mapping | None] | None = None, delete_nonempty_namespaces: bool = False,
                 step: list[dict] | None = None, outputs: OutputValues | None = None,
                 carried: dict[str, PlannedState] | None = None):
        self.access = access
        self.outputs = outputs  # the outputs phases read on their hosts, for later phases (``phases.outputs``)
        # (phase, host) -> its apply's answers; (phase, host, "stdout") -> its command's output: its outputs are read there
        self._applied: dict[tuple, object] = {}
        self.plan = plan
        self.started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())  # when the run started: a set it takes is its since then
        self.allow_shared_cluster = allow_shared_cluster  # hosts of a phase may share a cluster and namespace
        # a host's environment (the task's environment: over the controller's), for commands, helm and containers
        self.environ_of = environ_of or (lambda _host: None)
        self.delete_nonempty_namespaces = delete_nonempty_namespaces
        self._plan_objects: dict[str, PlanObjects] = {}   # per host: what this destroy deleted there so far
        # per host, dry runs: what earlier phases (of this step, and ``carried`` from the earlier ones) would create
        self._carried: dict[str, PlannedState] = dict(carried or {})
        self.lists = lists  # the sessions' ListMemory: forgotten around every phase that is not an apply
        # per phase name, the hosts an apply of the step runs on after it (None: unknown, every apply keeps its lists)
        self._applies_after = applies_after(step) if step is not None else None
        self.charts = charts or ChartCache()  # the caller closes the one it gives; one made here lives with us
        self.shared = shared  # None: one cluster at a time, each apply with its own threads
        self.mode = mode
        self.dry_run = check_mode or mode in (VALIDATE, STATUS)
        self.check_mode = check_mode
        self.diff = diff
        self.skip_unreachable = skip_unreachable
        self._render = render or render_phase_bundle
        self._bundles: dict[tuple, object] = {}
        self._bundle_locks: dict[tuple, threading.Lock] = {}
        self._has_templates: dict[str, bool] = {}
        self._digests: dict[tuple, str] = {}
        self._built_dirs: dict[str, object] = {}
        # (phase, host) -> what its wait waits for now, for progress lines: a wait's last poll, or a look (helm)
        self._waiting: dict[tuple, Callable[[], str]] = {}
        # (phase, host) -> the runner's HostContext while the phase runs there: its deadline and barrier, for the
        # executors' code that is handed (phase, host) (until each executor module takes the context itself)
        self._contexts: dict[tuple, HostContext] = {}
        self.files = FileDigests()
        self._lock = threading.Lock()
        self.records = records
        self.resume = resume and mode == RUN and not check_mode
        # hosts that ran a phase (in this step, or an earlier one of the run): from there on, every phase runs
        self._resumed: set[str] = set(resumed_hosts)

    def resumed_hosts(self) -> list[str]:
        """The hosts a resume no longer skips phases of (for the next step of the run)."""
        with self._lock:
            return sorted(self._resumed)

    def __call__(self, phase, context: HostContext) -> Outcome:
        """The runner's ``HostWork``: ``phase`` (a ``RunEntry``) on ``context.host``."""
        key = (phase["name"], context.host)
        with self._lock:
            self._contexts[key] = context
        try:
            return self._work(phase, context.host)
        finally:
            with self._lock:
                self._contexts.pop(key, None)

    def context_of(self, phase: dict, host: str) -> HostContext:
        """The runner's context of ``phase`` on ``host`` while it runs there (outside a run: no deadline)."""
        with self._lock:
            return self._contexts.get((phase["name"], host)) or HostContext(host)

    def deadline_of(self, phase: dict, host: str) -> float | None:
        return self.context_of(phase, host).deadline

    def _work(self, phase: dict, host: str) -> Outcome:
        try:
            phase = self._for_host(phase, host)
            self._cluster_lock(phase, host)
            content = self.content_digest(phase, host) if self.records is not None and self.mode != DESTROY else None
            # keyed before the phase only when it is compared now; else after it, so that a cluster not up yet
            # (a phase brings it up) is not asked for its key first, and a failed phase's gets one try
            compared = self.resume or self.mode == STATUS
            digest = self.records.digest(host, content) if compared and content else None
            outcome = self._resumed_outcome(phase, host, digest) if self.resume else None
            if outcome is None:
                outcome = self._run_executor(phase, host)
                self._read_outputs(phase, host, outcome)
                self._say_known_after_run(phase, host, outcome)
            if content and not compared:
                digest = self.records.digest(host, content, attempts=1 if outcome.failed else None)
            key_problem = self.records.key_problem(host) if self.records is not None else None
            took_over = self.records.notice(host) if self.records is not None else None
            if digest is not None:
                outcome.details = {**outcome.details, "digest": digest}
            for warning in (key_problem, took_over):
                if warning:
                    outcome.details = {**outcome.details, "warnings": [*outcome.details.get("warnings", []), warning]}
            if self.mode == STATUS and self.records is not None:
                outcome.details = {**outcome.details, "last_run": self._last_run(phase, host, digest)}
        except PhasekitError as err:
            outcome = self._known_after_run(phase, host)
            if outcome is None:
                raise PhasekitError(self.masks(phase, host).scrub(str(err))) from None
        except Exception as err:  # pylint: disable=broad-exception-caught
            # the runner would show any other error as it is: masked as the runner would word it
            raise PhasekitError(self.masks(phase, host).scrub(f"unexpected error ({type(err).__name__}): {err}")) \
                from None
        finally:
            with self._lock:
                self._waiting.pop((phase["name"], host), None)
        masks = self.masks(phase, host)
        if masks:  # what templates rendered, and what was handed a kubeconfig, may print them
            outcome.msg = masks.scrub(outcome.msg)
            outcome.details = masks.scrub(outcome.details)
        return outcome

    def _read_outputs(self, phase: dict, host: str, outcome: Outcome) -> None:
        """After the phase ran on ``host``: its outputs read there and kept for later phases (a run only; a preview
        leaves them known after the run). A value that cannot be read fails the phase on this host."""
        with self._lock:
            applied = self._applied.pop((phase["name"], host), ())
            stdout = self._applied.pop((phase["name"], host, FROM_STDOUT), None)
        if not phase.get("outputs") or self.outputs is None or self.mode != RUN or self.dry_run or outcome.failed \
                or outcome.skipped:
            return
        try:
            values, secret = self._output_values(phase, host, phase["outputs"], applied, stdout)
        except PhasekitError as err:
            outcome.failed, outcome.msg = True, f"{outcome.msg}; {err}" if outcome.msg else str(err)
            return
        self.outputs.keep(phase.get("full_name", phase["name"]), host, values, secret)
        outcome.details = {**outcome.details, "outputs": {name: ("***" if name in secret else value)
                                                          for name, value in values.items()},
                           "secret_outputs": secret}

    def _say_known_after_run(self, phase: dict, host: str, outcome: Outcome) -> None:
        """A preview whose objects hold outputs no run has read yet says which fields (Terraform's "known after
        apply") instead of showing the placeholder as a value."""
        if not self.dry_run or self.outputs is None or not kind_of(phase["executor"]).watches_objects \
                or not self._templated(phase):
            return
        try:
            fields = known_after_run(one.obj for one in self.bundle(phase, host))
        except Exception:  # pylint: disable=broad-exception-caught
            return  # the phase's own outcome reports a bundle that does not render
        if fields:
            said = f"known after the run: {', '.join(fields)}"
            outcome.msg = f"{outcome.msg}; {said}" if outcome.msg else said
            outcome.details = {**outcome.details, "known_after_run": fields}

    def _output_values(self, phase: dict, host: str, declared: dict, applied=(), stdout=None) -> tuple[dict, list]:
        """The ``declared`` outputs of ``phase`` read on ``host`` (from ``applied``, the apply's answers, where they
        are; from ``stdout``, a command's output: without it those are left out), and the names of the secret
        ones."""
        values, secret = {}, []
        session = discovery = namespace = release = None
        for name, spec in declared.items():
            output = PhaseOutput.from_dict(name, spec)
            if output.source == FROM_STDOUT:
                if stdout is None:
                    continue  # a command's output is not on the cluster: known after its next run
                values[name] = read_stdout_output(output, stdout)
            elif output.source == FROM_VALUES:
                if release is None:
                    release = self._release_values(phase, host)
                values[name] = read_values_output(output, release)
            else:
                if session is None:
                    session = self.access.session(host, EXTRA_CONNECTIONS)
                    namespace = kind_of(phase["executor"]).output_namespace(phase)
                    namespace = namespace or self.access.resolution(host).namespace or "default"
                    discovery = Discovery(session)
                values[name] = read_output(output, session, discovery, namespace, applied)
            if output.secret:
                secret.append(name)
        return values, secret

    def _release_values(self, phase: dict, host: str) -> dict:
        """A helm phase's release values on ``host`` (computed: the chart's defaults under the given ones)."""
        options = option_values(HELM_OPTIONS_SPEC, phase.get("options"))
        options["name"] = options["name"] or phase["name"].rsplit("/", 1)[-1]
        resolution = self.access.resolution(host)
        request = helm_request(options, namespace=resolution.namespace or "default", where=f"phase {phase['name']}",
                               read_values_file=lambda path: self._values_file(host, path))
        try:
            return release_values(request, kubeconfig=resolution.config, charts=self.charts,
                                  environ=self.environ_of(host))
        except PhasekitError as err:  # helm's message may quote values
            raise PhasekitError(values_masks(request).scrub(str(err))) from None

    def recorded_outputs(self, phase: dict, host: str) -> dict | None:
        """The outputs of ``phase``'s last run on ``host``, for a step that does not run it (status, destroy, a
        resume, a preview, a selection without it): the non-secret ones from the run record, the secret ones (and
        all of them without records) read again from the cluster. None when they are not known there."""
        recorded = None
        if self.records is not None:
            try:
                recorded = recorded_outputs(self.records.entries(host, phase["name"]))
            except PhasekitError:
                return None
            if recorded is None:
                return None  # the phase never succeeded here: nothing to read either
        declared = phase["outputs"]
        missing = {name: spec for name, spec in declared.items() if recorded is None or name not in recorded}
        try:
            values, secret = self._output_values(phase, host, missing) if missing else ({}, [])
        except PhasekitError:
            return None
        return {**(recorded or {}), **values, SECRET_NAMES: secret}

    def waiting_on(self, phase_name: str, host: str) -> str:
        """What the phase's wait on ``host`` waits for now ("" when it is not waiting): the objects not Current
        with their kstatus messages, masked (``LiveProgress.waiting``). A wait's come from its last poll; helm's
        ``--wait`` gives none, so those of its release are looked at now (once per progress line)."""
        with self._lock:
            waiting = self._waiting.get((phase_name, host))
        if waiting is None:
            return ""
        try:
            said = waiting()
        except Exception:  # pylint: disable=broad-exception-caught
            return ""  # a progress line never fails a phase; the phase's own outcome says what went wrong
        return Masks(self.access.secrets(host)).scrub(said) if said else ""

    def watching(self, phase: dict, host: str):
        """A wait's ``on_poll``: notes what the wait on ``host`` still waits for (see ``waiting_on``)."""
        def note(outcomes: list) -> None:
            said = waiting_summary(outcomes)
            with self._lock:
                self._waiting[(phase["name"], host)] = lambda: said
        return note

    def _watching_release(self, phase: dict, host: str, request) -> None:
        """While helm waits (``--wait``): a look at the objects of the release's newest stored revision, with
        the readiness rules of a wait (see ``waiting_on``)."""
        with self._lock:
            self._waiting[(phase["name"], host)] = lambda: waiting_summary(self._release_now(host, request))

    def _release_now(self, host: str, request) -> list:
        """The state now of each object of the release's newest stored revision (``WaitOutcome``)."""
        session = self.access.session(host, EXTRA_CONNECTIONS)
        objects = stored_manifest_objects(session, request.name, request.namespace)
        if not objects:
            return []
        return look_now(session, render_bundle(definition=objects), WaitRules(0), request.namespace)

    def _release_not_ready(self, host: str, request) -> str:
        """After helm's ``--wait`` failed: which objects of the release are not Current, and why ("" if none or
        they cannot be read: helm's own message stands)."""
        try:
            found = not_ready_message(self._release_now(host, request), 0, now=True)
        except Exception:  # pylint: disable=broad-exception-caught
            return ""
        return f"; now {found}" if found else ""

    def _cluster_lock(self, phase: dict, host: str) -> None:
        """The run's lock on the host's cluster (``RunRecords.begin``), before anything the phase reads there: a
        phase that may write checks it (and its record's version is kept), one that writes outside the API session
        takes it now; every write through the session takes it anyway (``RunRecords.guard``)."""
        kind = kind_of(phase["executor"])
        if self.records is None or self.records.lock is None or not kind.reaches_cluster:
            return
        self.records.guard(host)
        if kind.reads_only or self.mode == DESTROY:
            return  # destroy takes it when it undoes a phase (``_destroy``: a cluster gone may be skipped)
        self.records.begin(host, acquire=writes_outside_session(phase))

    def _known_after_run(self, phase: dict, host: str) -> Outcome | None:
        """In a preview, a host whose kubeconfig is a Secret not there yet (the run's earlier phases or a controller
        make it; a preview makes nothing and waits for nothing): its phase is not previewed, as terraform's "known
        after apply". None when that is not why it failed."""
        known = getattr(self.access, "known_after_run", None)  # an access without Secret sources has none
        where = known(host) if known is not None and self.dry_run and self.mode != DESTROY else None
        if where is None:
            return None
        note = kind_of(phase["executor"]).known_after_run_note(host, where)
        return Outcome(skipped=True, msg=note, details={"preview": note, UNKNOWN_KUBECONFIG: True})

    def _run_executor(self, phase: dict, host: str) -> Outcome:
        if self.mode == DESTROY:
            return self._destroy(phase, host)
        kind = kind_of(phase["executor"])
        if kind.only_through_session or self.lists is None:
            return kind.run(self, phase, host)
        # a command, a chart, a container may change the cluster behind the sessions' backs, and waiting is for
        # the state now: no list read before or during it answers a later phase
        self.lists.clear()
        try:
            return kind.run(self, phase, host)
        finally:
            self.lists.clear()

    # ------------------------------------------------------------ each host its own cluster

    def shared_cluster_refusal(self, phase: dict, hosts: list[str]) -> str | None:
        """The runner's guard: why ``phase`` must not start on ``hosts`` because two or more of them reach one
        cluster and namespace (see ``shared_cluster.py``); None when it may. Asked in the modes that write (run,
        destroy, and their check mode, which previews them), not for ``kubeconfig`` phases (they resolve their
        host's kubeconfig, waiting for it: it cannot be looked at before), nor, in destroy, for phases it leaves."""
        if self.allow_shared_cluster or self.mode not in (RUN, DESTROY) or len(hosts) < 2:
            return None
        kind = kind_of(phase["executor"])
        if not kind.reaches_cluster or (self.mode == DESTROY and not kind.undone_by_destroy):
            return None
        with ThreadPoolExecutor(min(IDENTITY_THREADS, len(hosts)), thread_name_prefix="phasekit-identity") as pool:
            found = list(pool.map(self._target, hosts))
        return shared_cluster_refusal(phase["name"], [target for target in found if target is not None])

    def _target(self, host: str) -> HostTarget | None:
        """Where ``host`` writes by default; None when its kubeconfig does not resolve (its phase fails on that)."""
        try:
            resolution = self.access.resolution(host)
            identity = self.access.identity(host, REQUEST_BUDGET + EXTRA_CONNECTIONS)
        except PhasekitError:
            return None
        return HostTarget(host=host, identity=identity, namespace=resolution.namespace or "default",
                          context=resolution.context,
                          context_from=str(resolution.provenance.get("context_from") or "current-context"))

    def masks(self, phase: dict, host: str) -> Masks:
        """What a phase on ``host`` must not show: the host's secrets, and those of every host whose kubeconfig
        the phase handed to its command (``kubeconfigs``), or that a file it wrote for it holds (``env_files``)."""
        masks = Masks(self.access.secrets(host))
        kind_of(phase.get("executor")).add_masks(self, phase, masks)
        return masks

    # ------------------------------------------------------------ run records

    def digest(self, phase: dict, host: str) -> str | None:
        """What the phase does on this host, as the digest its run record keeps (keyed with the cluster's record
        key, see ``RunRecords.digest``). None for tasks phases (not recorded), or without the cluster's key."""
        if self.records is None:
            return None
        return self.records.digest(host, self.content_digest(phase, host))

    def content_digest(self, phase: dict, host: str) -> str | None:
        """Everything the phase's outcome depends on, as a plain digest (kept in memory): its executor and
        (host-rendered) options, and its rendered bundle (apply, wait, container), the files its command names
        and the builds of its ``env_dirs`` (command), its merged values and its chart's every file (helm), the
        directories a container mounts read-only, a command or kubeconfig phase's source."""
        kind = kind_of(phase["executor"])
        if not kind.recorded:
            return None
        parts = {"executor": phase["executor"], "options": phase.get("options") or {}}
        parts.update(kind.content(self, phase, host))
        return bundle_digest(parts)

    def command_content(self, phase: dict) -> dict:
        """A command's files (the script, files named as arguments or in ``env``, relative to ``chdir``) and the
        builds of its ``env_dirs``; an unbuildable ``env_dirs`` is left to the run to report."""
        values = option_values(COMMAND_PHASE_SPEC["argument_spec"], phase.get("options"))
        try:
            argv = command_argv(values["argv"], values["cmd"], values["shell"])
        except PhasekitError:
            argv = []
        words = command_words(argv, values["env"])
        content = {"files": self.files.named(words, values["chdir"] or os.getcwd())}
        if values["env_dirs"]:
            try:
                content["env_dirs"] = self._env_dirs(values["env_dirs"])
            except PhasekitError:
                content["env_dirs"] = uncomparable()
        return content

    def _env_dirs(self, env_dirs: dict) -> dict:
        """``env_dirs`` built, once per run for each distinct option value (the digest and the run share it)."""
        key = bundle_digest(env_dirs)
        with self._lock:
            lock = self._bundle_locks.setdefault(("env_dirs", key), threading.Lock())
        with lock:
            if key not in self._built_dirs:
                try:
                    self._built_dirs[key] = build_env_dirs(env_dirs)
                except PhasekitError as err:
                    self._built_dirs[key] = err
            built = self._built_dirs[key]
        if isinstance(built, PhasekitError):
            raise PhasekitError(str(built))
        return built

    def helm_content(self, phase: dict, host: str) -> dict:
        """A release's merged values (values files rendered for the host) and its chart's digest (every file of
        it: templates, dependencies, default values), the chart made local once per run."""
        values = option_values(HELM_OPTIONS_SPEC, phase.get("options"))
        values["name"] = values["name"] or phase["name"].rsplit("/", 1)[-1]
        request = helm_request(values, namespace="", where=f"phase {phase['name']}",
                               read_values_file=lambda path: self._values_file(host, path))
        content = {"values": request.values}
        if request.chart is not None and request.state != ABSENT:
            content["chart"] = request_chart(request, self.charts, self.environ_of(host)).digest
        return content

    def bundle_digest(self, phase: dict, host: str) -> str:
        """The rendered bundle's digest, made once per rendering (a 1000-object bundle costs milliseconds)."""
        key = self._bundle_key(phase, host)
        with self._lock:
            known = self._digests.get(key)
        if known is None:
            known = bundle_digest([one.obj for one in self.bundle(phase, host)])
            with self._lock:
                self._digests[key] = known
        return known

    def _resumed_outcome(self, phase: dict, host: str, digest: str | None) -> Outcome | None:
        """``plan_resume``: a skip when this host has not run a phase yet this run and the phase's last run here
        succeeded with the same digest; None (run it) otherwise, and every later phase of the host runs too."""
        with self._lock:
            if host in self._resumed:
                return None
        last = self.records.last(host, phase["name"]) if digest is not None else None
        if resumable(last, digest):
            return Outcome(skipped=True, msg=f"resumed: {last['result']} in run {last['run']} "
                                             f"({last['started']}) with the same bundle, not run again",
                           details={"resumed": True})
        with self._lock:
            self._resumed.add(host)
        return None

    def _last_run(self, phase: dict, host: str, digest: str | None) -> dict | None:
        """Status: the phase's last recorded run on this host, and whether its bundle was the same."""
        last = self.records.last(host, phase["name"])
        if last is None:
            return None
        shown = {key: last.get(key) for key in ("run", "action", "result", "started", "duration", "by", "version")}
        # None: not compared (no digest key now, or none then), which says nothing about the bundle
        shown["same_bundle"] = None if digest is None or not last.get("digest") else last.get("digest") == digest
        return shown

    def _for_host(self, phase: dict, host: str) -> dict:
        """The phase as this host runs it: option strings that hold templates rendered with its variables."""
        if not kind_of(phase["executor"]).runs_on_controller or not has_template_strings(phase.get("options")):
            return phase
        where = f"phase {phase['name']} options"
        return {**phase, "options": self.access.render_options(host, phase["options"], where)}

    def bundle(self, phase: dict, host: str) -> list:
        """The phase's rendered bundle: rendered once for all its hosts, or once per host when it has ``.j2``
        manifests (rendered with that host's variables); each host gets its own copies."""
        key = self._bundle_key(phase, host)
        templated = key[1] is not None
        with self._lock:  # one render per key; different hosts' renders (kustomize runs) go on side by side
            lock = self._bundle_locks.setdefault(key, threading.Lock())
        with lock:
            if key not in self._bundles:
                try:
                    self._bundles[key] = self._render(phase) if not templated else render_bundle(
                        src=phase["source"], render_template=lambda path: self.access.render_template(host, path))
                # every host of the phase reports the error
                except Exception as err:  # pylint: disable=broad-exception-caught
                    self._bundles[key] = err
            bundle = self._bundles[key]
        if isinstance(bundle, Exception):
            raise bundle
        return bundle

    def _bundle_key(self, phase: dict, host: str) -> tuple:
        return (phase["name"], host if self._templated(phase) else None)

    def _templated(self, phase: dict) -> bool:
        """Whether the phase's bundle has templates, looked at once per phase (a kustomization's whole tree)."""
        with self._lock:
            if phase["name"] not in self._has_templates:
                source = phase.get("source")
                self._has_templates[phase["name"]] = isinstance(source, str) and has_templates(source)
            return self._has_templates[phase["name"]]

    # ------------------------------------------------------------ the soak of a rollout's batch

    def soak_problem(self, phases: list[dict], host: str) -> str | None:
        """One look at the objects a rollout's ``apply`` and ``wait`` phases applied or waited for on this host,
        with the phases' own readiness rules: None while every one is Current (kstatus), else which are not."""
        problems = []
        for phase in phases:
            kind = kind_of(phase.get("executor"))
            if not kind.watches_objects:
                continue
            phase = self._for_host(phase, host)
            if deletes(phase):
                continue  # its objects are gone: nothing to be ready
            values, namespace = kind.readiness(self, phase, host)
            namespace = namespace or self.access.resolution(host).namespace or "default"
            rules = wait_rules(values, where=f"phase {phase['name']} options")
            problem = not_current_now(self.access.session(host, EXTRA_CONNECTIONS), self.bundle(phase, host),
                                      rules, namespace)
            if problem:
                problems.append(f"phase {phase['name']}: {problem}")
        message = "; ".join(problems) or None
        return Masks(self.access.secrets(host)).scrub(message) if message else message

    # ------------------------------------------------------------ executors

    def run_apply(self, phase: dict, host: str) -> Outcome:
        args = apply_arguments(phase)
        bundle = self.bundle(phase, host)
        resolution = self.access.resolution(host)
        namespace = args["namespace"] or resolution.namespace or "default"
        if args["state"] == STATE_ABSENT:
            return self._delete_named(phase, host, bundle, args, namespace)
        return self._apply_objects(phase, host, bundle, args, namespace)

    def _delete_named(self, phase: dict, host: str, bundle: list, args: dict, namespace: str) -> Outcome:
        """``state: absent``: the objects the bundle names deleted (``kube.absent``); a dry run (check mode, status,
        validate) says what would be, which status reports as drift."""
        options = apply_options(args, namespace=namespace, check_mode=self.dry_run, diff=self.diff)
        if self.shared is not None:
            options = dataclasses.replace(options, concurrency=min(options.concurrency, self.shared.per_cluster(phase, self.context_of(phase, host).running)))
        options = dataclasses.replace(options, owner=self._owner(phase, host))
        session = self.access.session(host, options.concurrency + EXTRA_CONNECTIONS)
        before = len(session.warnings)
        plan = self.records.run.plan if self.records is not None else None
        report = delete_bundle(session, bundle, options, ours=PlanObjects(bookkeeping=run_bookkeeping(plan)),
                               timeout=capped(options.wait.timeout if options.wait else None,
                                              self.deadline_of(phase, host),
                                              default=TEARDOWN_TIMEOUT))
        result = report.result()
        details = {"state": STATE_ABSENT, "counts": result["counts"], "objects": result["objects"]}
        if self.dry_run and report.changed:
            details["drift"] = report.drift()
        if self.dry_run:
            details["changes"] = [change.to_dict() for change in deleted_changes(report.deleted)]  # the plan summary
        if report.diffs:
            details["diff"] = host_diffs(host, report.diffs)
        warnings = [f"{host}: API server: {text}" for text in session.warnings[before:]]
        if warnings:
            details["warnings"] = warnings
        return Outcome(changed=report.changed, failed=report.failure is not None, msg=report.message,
                       objects_changed=result["counts"]["deleted"], details=details)

    def _apply_objects(self, phase: dict, host: str, bundle: list, args: dict, namespace: str) -> Outcome:
        options = apply_options(args, namespace=namespace, check_mode=self.dry_run, diff=self.diff)
        if self.mode == STATUS:
            options = dataclasses.replace(options, conflicts_are_drift=True)
        if options.wait is not None:
            options = dataclasses.replace(options, wait=dataclasses.replace(
                options.wait, timeout=capped(options.wait.timeout, self.deadline_of(phase, host)), on_poll=self.watching(phase, host)))
        if self.shared is not None:
            options = dataclasses.replace(options, concurrency=min(options.concurrency, self.shared.per_cluster(phase, self.context_of(phase, host).running)))
        options = dataclasses.replace(options, owner=self._owner(phase, host), carried=self.carried(host))
        session = self.access.session(host, options.concurrency + EXTRA_CONNECTIONS)
        before = len(session.warnings)
        report = apply_bundle(session, bundle, options, pool=self.shared.pool if self.shared else None)
        # the lists its writes did not forget get their watch (ListMemory), when a later apply here may ask for them
        session.guard_kept(watch=self._applies_after is None or host in self._applies_after.get(phase["name"], ()))
        if options.carried is not None:
            options.carried.record(phase["name"], report.objects)
        if phase.get("outputs"):
            with self._lock:
                self._applied[(phase["name"], host)] = report.objects
        counts = report.counts()
        details = {"counts": counts}
        if self.dry_run and report.changed:
            details["drift"] = report.drift()  # status and check mode: what differs, for the drift gate
        if self.dry_run:
            details["changes"] = [change.to_dict() for change in report.changes()]  # the plan summary's objects
        if report.not_checked():
            details["not_checked"] = report.not_checked()  # a preview: what only the plan's earlier phases make valid
        if report.diffs:
            details["diff"] = host_diffs(host, report.diffs)
        warnings = [f"{host}: API server: {text}" for text in session.warnings[before:]]
        warnings += [f"{host}: {text}" for text in report.ownership]
        if report.ownership:
            details["ownership"] = report.ownership
        if warnings:
            details["warnings"] = warnings
        return Outcome(changed=report.changed, failed=report.failure is not None, msg=report.failure or "",
                       objects_changed=counts["created"] + counts["configured"] + counts["pruned"], details=details)

    def carried(self, host: str) -> PlannedState | None:
        """A dry run's carried-forward state of ``host`` (``kube.preview``); None in a real run."""
        if not self.dry_run:
            return None
        with self._lock:
            return self._carried.setdefault(host, PlannedState())

    def carried_states(self) -> dict[str, dict]:
        """Every host's carried-forward state of this dry run, as JSON for the next step (``PlannedState.to_dict``)."""
        with self._lock:
            states = dict(self._carried)
        return {host: state.to_dict() for host, state in states.items()}

    def _owner(self, phase: dict, host: str) -> PlanOwner | None:
        """Who applies: this plan on this host, and the other plans of the documents that run the same phase."""
        if self.plan is None:
            return None
        return PlanOwner(self.plan, host, self.started, fellows=frozenset(phase.get("in_plans") or ()) - {self.plan})

    def run_command_phase(self, phase: dict, host: str) -> Outcome:
        values = option_values(COMMAND_PHASE_SPEC["argument_spec"], phase.get("options"))
        argv = command_argv(values["argv"], values["cmd"], values["shell"])
        preview = {"preview": f"would run: {shlex.join(argv)}"}  # what the plan summary says (masked with the rest)
        runs = not self.dry_run or (values["run_in_check_mode"] and self.mode != VALIDATE)  # declared read-only
        if not runs and self.mode == STATUS:
            return Outcome(skipped=True, msg="commands do not run in a dry run", details=preview)
        built = self._env_dirs(values["env_dirs"] or {})  # validate and check mode too: a broken build fails
        if not runs:
            # a command's effect cannot be predicted: not run by validate, status or check mode
            return Outcome(skipped=True, msg="commands do not run in a dry run", details=preview)
        resolution = self.access.resolution(host)
        kubeconfigs = {variable: self.access.resolution(other_host(phase, host, variable, name)).config
                       for variable, name in (values["kubeconfigs"] or {}).items()}
        done = run_command(argv, kubeconfig=resolution.config,
                           env={**(values["env"] or {}), **phase_environment(phase, host)},
                           chdir=values["chdir"], stdin=values["stdin"],
                           timeout=command_timeout(values["timeout"], self.deadline_of(phase, host)),
                           kubeconfigs=kubeconfigs, env_files=values["env_files"], env_dirs=built,
                           environ=self.environ_of(host))
        rule = changed_when_rule(values["changed_when"])
        succeeded = rule.succeeded(done)
        # the output, masked with the rest of the outcome (see __call__), as Ansible's command task returns it
        details = {"rc": done.rc, "stdout": kept_output(done.stdout), "stderr": kept_output(done.stderr)}
        if phase.get("outputs"):  # read whole, not cut as the result keeps it (see _read_outputs)
            with self._lock:
                self._applied[(phase["name"], host, FROM_STDOUT)] = done.stdout
        if self.dry_run:
            details["preview"] = f"ran (run_in_check_mode): {shlex.join(argv)}"
        if not succeeded:
            return Outcome(changed=True, failed=True, msg=command_failure_message(done), details=details)
        return Outcome(changed=rule.changed(done), details=details,
                       msg=recorded_message(command_success_message(done), self.masks(phase, host)))

    def run_helm(self, phase: dict, host: str) -> Outcome:
        values = option_values(HELM_OPTIONS_SPEC, phase.get("options"))
        values["name"] = values["name"] or phase["name"].rsplit("/", 1)[-1]
        deadline = self.deadline_of(phase, host)
        if time_left(deadline) is not None:
            given = duration_seconds(str(values["wait_timeout"])) if values["wait_timeout"] else None
            values["wait_timeout"] = f"{max(1, int(capped(given, deadline, default=HELM_TIMEOUT)))}s"
        resolution = self.access.resolution(host)
        request = dataclasses.replace(
            helm_request(values, namespace=resolution.namespace or "default", where=f"phase {phase['name']}",
                         read_values_file=lambda path: self._values_file(host, path)),
            hide_every_value=True)  # run records others read: no value of the release in diffs or messages
        if self.mode == DESTROY:
            self.plan_objects(host).releases.add((request.namespace, request.name))
        if request.mode == MODE_APPLY and request.state == ABSENT:
            return teardown_outcome(remove_rendered_release(self.access.session(host, EXTRA_CONNECTIONS), request,
                                                            dry_run=self.dry_run, ours=self.plan_objects(host)))
        if request.mode == MODE_APPLY:
            bundle = render_release(request, kubeconfig=resolution.config, charts=self.charts,
                                    environ=self.environ_of(host))
            outcome = self._apply_objects(phase, host, bundle, release_apply_arguments(request), request.namespace)
            hidden = values_masks(request)  # the rendered objects hold them: never in diffs or messages
            outcome.msg, outcome.details = hidden.scrub(outcome.msg), hidden.scrub(outcome.details)
            return outcome
        if request.wait and not self.dry_run:
            self._watching_release(phase, host, request)
        report = run_release(request, kubeconfig=resolution.config, charts=self.charts, check_mode=self.dry_run,
                             diff=self.diff, environ=self.environ_of(host))
        # kubernetes.core's keys (helm's output, the values) stay out of run records and summaries
        details = {key: value for key, value in report.result().items()
                   if key not in ("changed", "diff", "status", "stdout", "stderr", "command")}
        if report.diffs:
            details["diff"] = host_diffs(host, report.diffs)
        if self.dry_run:  # the plan summary's word for a release helm decides on (its objects are helm's)
            details["preview"] = f"release {request.namespace}/{request.name}: {HELM_PREVIEW.get(report.action, report.action)}"
        hidden = values_masks(request)  # a plan's output goes to run records others read: no value of the release
        failure = report.failure
        if failure is not None and request.wait and not self.dry_run:
            failure += self._release_not_ready(host, request)  # helm names no object it waited for in vain
        return Outcome(changed=report.changed, failed=failure is not None,
                       msg=hidden.scrub(failure or ""), details=hidden.scrub(details))

    def _values_file(self, host: str, path: str) -> str:
        return self.access.render_template(host, path) if is_template(path) else plain_values_file(path)

    # ------------------------------------------------------------ destroy

    def _destroy(self, phase: dict, host: str) -> Outcome:
        """Undo one phase on one host: apply phases lose their objects, helm phases their release; the others
        have nothing the collection could undo."""
        kind = kind_of(phase["executor"])
        if not kind.undone_by_destroy:
            return Outcome(skipped=True, msg=f"{phase['executor']} phases have nothing to destroy")
        if deletes(phase):
            return Outcome(skipped=True, msg="state: absent phases have nothing to destroy: they delete objects, "
                                             "and destroy does not make them again")
        try:
            self.access.resolution(host)
            if self.records is not None:
                self.records.begin(host, acquire=writes_outside_session(phase))
            return kind.destroy(self, phase, host)
        except PhasekitError as err:
            unreachable = self._unreachable(host) if self.skip_unreachable else None
            if unreachable is not None:
                # the lock's record could not be read: the server's own answer says why
                return Outcome(skipped=True, msg=f"{UNREACHABLE}: {unreachable if isinstance(err, LockRefused) else err}")
            raise

    def _unreachable(self, host: str) -> str | None:
        """Why the host's kubeconfig does not resolve or its API server does not answer (asked after a failure
        only); None when it answers."""
        try:
            self.access.session(host, EXTRA_CONNECTIONS).get("/version")
        except PhasekitError as err:  # no answer, or no kubeconfig any more (its Secret went with its parent)
            return str(err)
        except ApiError:  # an answer, even a refusal
            return None
        return None

    def destroy_apply(self, phase: dict, host: str) -> Outcome:
        args = apply_arguments(phase)
        namespace = args["namespace"] or self.access.resolution(host).namespace or "default"
        teardown = self._teardown(host, capped(timeout_of(args["wait"]), self.deadline_of(phase, host), default=TEARDOWN_TIMEOUT))
        if args["applyset"]:
            report = teardown.applyset(args["applyset"], tooling=args["applyset_tooling"], namespace=namespace,
                                       owner=self._owner(phase, host))
        else:
            report = teardown.bundle(self.bundle(phase, host), namespace=namespace, owner=self._owner(phase, host))
        outcome = teardown_outcome(report)
        if report.left_to_others:
            outcome.details["warnings"] = [f"{host}: {text}" for text in report.left_to_others]
        return outcome

    def _teardown(self, host: str, timeout: float | None) -> Teardown:
        session = self.access.session(host, EXTRA_CONNECTIONS)
        return Teardown(session, Discovery(session), dry_run=self.dry_run,
                        timeout=TEARDOWN_TIMEOUT if timeout is None else timeout, ours=self.plan_objects(host),
                        delete_nonempty_namespaces=self.delete_nonempty_namespaces)

    def plan_objects(self, host: str) -> PlanObjects:
        """What this destroy deleted on ``host`` so far (its phases run one after the other there), and the run's
        own records: a namespace of the plan holding nothing else goes."""
        with self._lock:
            if host not in self._plan_objects:
                plan = self.records.run.plan if self.records is not None else None
                self._plan_objects[host] = PlanObjects(bookkeeping=run_bookkeeping(plan))
            return self._plan_objects[host]


def deletes(phase: dict) -> bool:
    """Whether ``phase`` (options rendered for its host) deletes what it names (an apply's ``state: absent``)."""
    return kind_of(phase.get("executor")).deletes(phase.get("options") or {})


def applies_after(step: list[dict]) -> dict[str, frozenset]:
    """Per phase name of ``step`` (phases in the order they run), the hosts that an apply phase (or a helm phase
    applied as objects) after its first occurrence runs on: where what it listed may answer a later LIST."""
    found: dict[str, frozenset] = {}
    later: set[str] = set()
    for phase in reversed(step):
        found[phase["name"]] = frozenset(later)
        if kind_of(phase.get("executor")).keeps_lists(phase.get("options") or {}):
            later.update(phase.get("hosts") or ())
    return found


def writes_outside_session(phase: dict) -> bool:
    """Whether the phase's program writes to the cluster on its own (a command, a container, a task file, a chart
    through the helm CLI), so that the run's lock is taken when the phase starts."""
    return kind_of(phase["executor"]).writes_outside_session(phase.get("options") or {})


def capped(seconds, deadline: float | None, default: float | None = None) -> float | None:
    """A wait's ``seconds`` (``default`` when unset), no longer than what is left of the phase's timeout (its
    ``deadline`` on the host: ``BuiltinExecutors.deadline_of``)."""
    seconds = default if seconds is None else seconds
    left = time_left(deadline)
    if left is None:
        return seconds
    return left if seconds is None else min(float(seconds), left)


def command_timeout(seconds, deadline: float | None) -> int | None:
    """A command's time limit in whole seconds (at least 1), within the phase's timeout (its ``deadline``)."""
    limit = capped(seconds, deadline)
    return None if limit is None else max(1, math.ceil(limit))


def timeout_of(wait) -> float | None:
    """An apply phase's wait timeout, which also bounds its teardown."""
    if isinstance(wait, dict) and wait.get("timeout") is not None:
        return float(wait["timeout"])
    return None


def run_bookkeeping(plan: str | None):
    """Whether an object is this plan's run record, or the records' key (no plan: records are not written)."""
    def is_bookkeeping(resource, metadata: dict) -> bool:
        labels = metadata.get("labels") or {}
        if any(labels.get(key) != value for key, value in LABELS.items()):
            return False
        if (resource.group, resource.kind) == ("", "Secret"):
            return metadata.get("name") == KEY_SECRET
        return (resource.group, resource.kind) == ("", "ConfigMap") and plan is not None and \
            (metadata.get("annotations") or {}).get(PLAN_ANNOTATION) == plan
    return is_bookkeeping


def teardown_outcome(report) -> Outcome:
    details = {key: value for key, value in report.result().items() if key != "changed"}
    if report.dry_run:  # destroy --check: what the plan summary counts as destroyed
        details["changes"] = [change.to_dict() for change in deleted_changes(report.objects)]
    return Outcome(changed=report.changed, failed=report.failure is not None, msg=report.message,
                   objects_changed=report.deleted, details=details)


def host_diffs(host: str, diffs: list) -> list:
    """Diff entries whose headers name the cluster host (a step shows the diffs of many clusters)."""
    return [dict(one, before_header=f"{host}: {one.get('before_header', '')}",
                 after_header=f"{host}: {one.get('after_header', '')}") for one in diffs]


def render_phase_bundle(phase: dict) -> list:
    """A phase's source as bundle objects: a path (already made absolute by phase_plan) or inline objects."""
    source = phase.get("source")
    if isinstance(source, str):
        return render_bundle(src=source)
    return render_bundle(definition=source)
