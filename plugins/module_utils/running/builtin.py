# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The generic host work of the built-in executors: records, resume, locks, outputs, dispatch through the registry.

``BuiltinExecutors`` is the ``HostWork`` (``executors.context``) the runner calls per (entry, host context); what each
executor does (its run, digest, destroy, soak readiness, masks) lives in its own module of ``executors/``, asked
through its kind (``executors.registry.kind_of``). It reaches clusters only through a ``ClusterAccess`` (resolved
kubeconfig and a pooled API session per host, kept for the whole run), and renders each phase's bundle once for
all its hosts (``running.bundles``). The phase options are the ones ``phase_plan`` validated against each
executor's spec; defaults and the rules that used to sit in the role's Jinja (default ApplySet name, status
timeouts, what counts as changed) live in the executor modules, where they are tested.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Callable, Protocol

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.executors.apply import apply_arguments
from ansible_collections.phasekit.kube.plugins.module_utils.executors.command import phase_environment
from ansible_collections.phasekit.kube.plugins.module_utils.executors.context import (
    DESTROY, EXTRA_CONNECTIONS, REQUEST_BUDGET, RUN, STATUS, VALIDATE, Outcome, run_bookkeeping, whole_seconds)
from ansible_collections.phasekit.kube.plugins.module_utils.executors.registry import kind_of, option_values
from ansible_collections.phasekit.kube.plugins.module_utils.helm.chart import ChartCache
from ansible_collections.phasekit.kube.plugins.module_utils.kube.ownership import PlanOwner
from ansible_collections.phasekit.kube.plugins.module_utils.kube.preview import PlannedState
from ansible_collections.phasekit.kube.plugins.module_utils.kube.session import ApiError, ListMemory
from ansible_collections.phasekit.kube.plugins.module_utils.kube.teardown import PlanObjects
from ansible_collections.phasekit.kube.plugins.module_utils.running.bundles import PhaseBundles, render_phase_bundle
from ansible_collections.phasekit.kube.plugins.module_utils.records.fingerprint import FileDigests
from ansible_collections.phasekit.kube.plugins.module_utils.running.host_outputs import HostOutputs
from ansible_collections.phasekit.kube.plugins.module_utils.running.host_records import HostRecords
from ansible_collections.phasekit.kube.plugins.module_utils.planning.outputs import OutputValues
from ansible_collections.phasekit.kube.plugins.module_utils.planning.plan_changes import UNKNOWN_KUBECONFIG
from ansible_collections.phasekit.kube.plugins.module_utils.running.record import LockRefused, RunRecords
from ansible_collections.phasekit.kube.plugins.module_utils.running.runner import HostContext, time_left
from ansible_collections.phasekit.kube.plugins.module_utils.running.watching import Waits, soak_problem
from ansible_collections.phasekit.kube.plugins.module_utils.running.shared_cluster import (
    HostTarget, shared_cluster_refusal)
from ansible_collections.phasekit.kube.plugins.module_utils.masking import Masks
from ansible_collections.phasekit.kube.plugins.module_utils.templating import has_template_strings

if TYPE_CHECKING:  # annotations only: the planner makes entries
    from ansible_collections.phasekit.kube.plugins.module_utils.planning.planner import RunEntry

# the run's modes and request budgets live with the executors (executors.context); named here for run_phases
__all__ = ["DESTROY", "EXTRA_CONNECTIONS", "REQUEST_BUDGET", "RUN", "STATUS", "VALIDATE", "UNREACHABLE",
           "BuiltinExecutors", "SharedRequests", "ClusterAccess", "apply_arguments", "option_values",
           "phase_environment", "render_phase_bundle", "capped", "command_timeout", "applies_after", "deletes",
           "writes_outside_session"]
UNREACHABLE = "cluster unreachable, skipped"
IDENTITY_THREADS = 16  # hosts whose kubeconfig and cluster identity are looked up at once before a phase


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

    def per_cluster(self, entry, running: int | None = None) -> int:
        """Requests in flight to one cluster of ``entry`` (the apply option ``concurrency`` caps it); ``running``:
        the clusters the runner's barrier works on (a batch of a rollout, say; ``HostContext.running``)."""
        if running is not None:
            clusters = running or 1
        else:  # counted once per barrier by the runner: per host, this was quadratic in a fleet's size
            clusters = len(set(entry.hosts) & self.hosts_in_play) or 1
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


def capped(seconds, deadline: float | None, default: float | None = None) -> float | None:
    """A wait's ``seconds`` (``default`` when unset), no longer than what is left of the phase's timeout (its
    ``deadline`` on the host: ``HostContext.deadline``)."""
    seconds = default if seconds is None else seconds
    left = time_left(deadline)
    if left is None:
        return seconds
    return left if seconds is None else min(float(seconds), left)


def command_timeout(seconds, deadline: float | None) -> int | None:
    """A command's time limit in whole seconds (at least 1), within the phase's timeout (its ``deadline``)."""
    return whole_seconds(capped(seconds, deadline))


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
                 render: Callable[[RunEntry], list] | None = None, shared: SharedRequests | None = None,
                 charts: ChartCache | None = None, skip_unreachable: bool = False,
                 records: RunRecords | None = None, resume: bool = False, resumed_hosts=(),
                 lists: ListMemory | None = None, plan: str | None = None, allow_shared_cluster: bool = False,
                 environ_of: Callable[[str], Mapping | None] | None = None, delete_nonempty_namespaces: bool = False,
                 step: list[RunEntry] | None = None, outputs: OutputValues | None = None,
                 carried: dict[str, PlannedState] | None = None):
        self.access = access
        self.plan = plan
        self.skip_unreachable = skip_unreachable
        self.allow_shared_cluster = allow_shared_cluster  # hosts of a phase may share a cluster and namespace
        self.delete_nonempty_namespaces = delete_nonempty_namespaces
        self.outputs = outputs  # the outputs phases read on their hosts, for later phases (``planning.outputs``)
        self.host_outputs = HostOutputs(self)
        self.started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())  # when the run started: a set it takes is its since then
        # a host's environment (the task's environment: over the controller's), for commands, helm and containers
        self.environ_of = environ_of or (lambda _host: None)
        self._plan_objects: dict[str, PlanObjects] = {}   # per host: what this destroy deleted there so far
        # per host, where it writes by default (None: its kubeconfig does not resolve), once per run: the shared-cluster
        # guard of a graph run asks again for every host so far each time a pair starts
        self._targets: dict[str, HostTarget | None] = {}
        # per host, dry runs: what earlier phases (of this step, and ``carried`` from the earlier ones) would create
        self._carried: dict[str, PlannedState] = dict(carried or {})
        self.lists = lists  # the sessions' ListMemory: forgotten around every phase that is not an apply
        # per phase name, the hosts an apply of the step runs on after it (None: unknown, every apply keeps its lists)
        self._applies_after = applies_after(step) if step is not None else None
        self.charts = charts or ChartCache()  # the caller closes the one it gives; one made here lives with us
        self.shared = shared  # None: one cluster at a time, each apply with its own threads
        self.mode, self.check_mode, self.diff = mode, check_mode, diff
        self.dry_run = check_mode or mode in (VALIDATE, STATUS)
        self.bundles = PhaseBundles(render, access)
        self.waits = Waits(access)  # what each phase's wait waits for now, for progress lines
        self.files = FileDigests()
        self._lock = threading.Lock()
        self.records = records
        self.host_records = HostRecords(self, resume and mode == RUN and not check_mode, resumed_hosts)

    def resumed_hosts(self) -> list[str]:
        """The hosts a resume no longer skips phases of (for the next step of the run)."""
        return self.host_records.resumed_hosts()

    def __call__(self, entry: RunEntry, context: HostContext) -> Outcome:
        """The runner's ``HostWork``: ``entry`` on ``context.host``."""
        return self._work(entry, context)

    def _work(self, entry: RunEntry, context: HostContext) -> Outcome:
        try:
            entry = self.for_host(entry, context.host)
            self._cluster_lock(entry, context.host)
            outcome = self.host_records.run(entry, context, lambda: self._run_with_outputs(entry, context))
        except PhasekitError as err:
            outcome = known_after_run_outcome(self, entry, context.host)
            if outcome is None:
                raise PhasekitError(self.masks(entry, context).scrub(str(err))) from None
        except Exception as err:  # pylint: disable=broad-exception-caught
            # the runner would show any other error as it is: masked as the runner would word it
            raise PhasekitError(self.masks(entry, context).scrub(f"unexpected error ({type(err).__name__}): {err}")) \
                from None
        finally:
            self.waits.done(entry.name, context.host)
        masks = self.masks(entry, context)
        if masks:  # what templates rendered, and what was handed a kubeconfig, may print them
            outcome.msg = masks.scrub(outcome.msg)
            outcome.details = masks.scrub(outcome.details)
        return outcome

    def _run_with_outputs(self, entry: RunEntry, context: HostContext) -> Outcome:
        outcome = self._run_executor(entry, context)
        self.host_outputs.read(entry, context, outcome)
        self.host_outputs.say_known_after_run(entry, context, outcome)
        return outcome

    def recorded_outputs(self, entry: RunEntry, host: str) -> dict | None:
        """The outputs of ``entry``'s last run on ``host`` (``HostOutputs.recorded``)."""
        return self.host_outputs.recorded(entry, host)

    def keep_for_outputs(self, entry: RunEntry, context: HostContext, source: str, found) -> None:
        self.host_outputs.keep(entry, context.host, source, found)

    def waiting_on(self, phase_name: str, host: str) -> str:
        """What the phase's wait on ``host`` waits for now (``Waits.waiting_on``)."""
        return self.waits.waiting_on(phase_name, host)

    def set_waiting(self, entry: RunEntry, context: HostContext, said: Callable[[], str]) -> None:
        self.waits.set(entry.name, context.host, said)

    def watching(self, entry: RunEntry, context: HostContext):
        return self.waits.on_poll(entry.name, context.host)

    def _cluster_lock(self, entry: RunEntry, host: str) -> None:
        """The run's lock on the host's cluster (``RunRecords.begin``), before anything the phase reads there: a
        phase that may write checks it (and its record's version is kept), one that writes outside the API session
        takes it now; every write through the session takes it anyway (``RunRecords.guard``)."""
        kind = kind_of(entry.executor)
        if self.records is None or self.records.lock is None or not kind.reaches_cluster:
            return
        self.records.guard(host)
        if kind.reads_only or self.mode == DESTROY:
            return  # destroy takes it when it undoes a phase (``_destroy``: a cluster gone may be skipped)
        self.records.begin(host, acquire=writes_outside_session(entry))

    def _run_executor(self, entry: RunEntry, context: HostContext) -> Outcome:
        if self.mode == DESTROY:
            return self._destroy(entry, context)
        if kind_of(entry.executor).only_through_session or self.lists is None:
            return self.run_phase(entry, context)
        # a command, a chart, a container may change the cluster behind the sessions' backs, and waiting is for
        # the state now: no list read before or during it answers a later phase
        self.lists.clear()
        try:
            return self.run_phase(entry, context)
        finally:
            self.lists.clear()

    def run_phase(self, entry: RunEntry, context: HostContext) -> Outcome:
        """The entry's executor run on the context's host (or previewed: ``dry_run``)."""
        return kind_of(entry.executor).run(self, entry, context)

    def shared_cluster_refusal(self, entry: RunEntry, hosts: list[str]) -> str | None:
        """The runner's guard: why ``phase`` must not start on ``hosts`` because two or more of them reach one
        cluster and namespace (see ``shared_cluster.py``); None when it may. Asked in the modes that write (run,
        destroy, and their check mode, which previews them), not for ``kubeconfig`` phases (they resolve their
        host's kubeconfig, waiting for it: it cannot be looked at before), nor, in destroy, for phases it leaves."""
        if self.allow_shared_cluster or self.mode not in (RUN, DESTROY) or len(hosts) < 2:
            return None
        kind = kind_of(entry.executor)
        if not kind.reaches_cluster or (self.mode == DESTROY and not kind.undone_by_destroy):
            return None
        return shared_cluster_refusal(entry.name, host_targets(self.access, hosts, self._targets))

    def masks(self, entry: RunEntry, context: HostContext) -> Masks:
        """What an entry on the context's host must not show: the host's secrets, and those its executor handed its
        program (a command's ``kubeconfigs`` and ``env_files``)."""
        masks = Masks(self.access.secrets(context.host))
        kind_of(entry.executor).add_masks(self, entry, masks)
        return masks

    # ------------------------------------------------------------ what the executors are given (HostWork)

    def bundle(self, entry: RunEntry, context: HostContext) -> list:
        return self.bundles.bundle(entry, context.host)

    def bundle_digest(self, entry: RunEntry, context: HostContext) -> str:
        return self.bundles.digest(entry, context.host)

    def built(self, key: tuple, make: Callable[[], object]):
        return self.bundles.built(key, make)

    def time_left(self, context: HostContext) -> float | None:
        return time_left(context.deadline)

    def capped(self, seconds, context: HostContext, default: float | None = None) -> float | None:
        return capped(seconds, context.deadline, default=default)

    def keeps_lists_watched(self, entry: RunEntry, context: HostContext) -> bool:
        return self._applies_after is None or context.host in self._applies_after.get(entry.name, ())

    def owner(self, entry: RunEntry, context: HostContext) -> PlanOwner | None:
        """Who applies: this plan on this host, and the other plans of the documents that run the same phase."""
        if self.plan is None:
            return None
        return PlanOwner(self.plan, context.host, self.started, fellows=frozenset(entry.in_plans) - {self.plan})

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

    def plan_objects(self, host: str) -> PlanObjects:
        """What this destroy deleted on ``host`` so far (its phases run one after the other there), and the run's
        own records: a namespace of the plan holding nothing else goes."""
        with self._lock:
            if host not in self._plan_objects:
                plan = self.records.run.plan if self.records is not None else None
                self._plan_objects[host] = PlanObjects(bookkeeping=run_bookkeeping(plan))
            return self._plan_objects[host]

    # ------------------------------------------------------------ destroy

    def _destroy(self, entry: RunEntry, context: HostContext) -> Outcome:
        """Undo one phase on one host: apply phases lose their objects, helm phases their release; the others
        have nothing the collection could undo."""
        host = context.host
        kind = kind_of(entry.executor)
        if not kind.undone_by_destroy:
            return Outcome(skipped=True, msg=f"{entry.executor} phases have nothing to destroy")
        if deletes(entry):
            return Outcome(skipped=True, msg="state: absent phases have nothing to destroy: they delete objects, "
                                             "and destroy does not make them again")
        try:
            self.access.resolution(host)
            if self.records is not None:
                self.records.begin(host, acquire=writes_outside_session(entry))
            return kind.destroy(self, entry, context)
        except PhasekitError as err:
            unreachable = unreachable_because(self.access, host) if self.skip_unreachable else None
            if unreachable is not None:
                # the lock's record could not be read: the server's own answer says why
                return Outcome(skipped=True, msg=f"{UNREACHABLE}: {unreachable if isinstance(err, LockRefused) else err}")
            raise

    # ------------------------------------------------------------ run records

    def digest(self, entry: RunEntry, host: str) -> str | None:
        """What the phase does on this host, as the digest its run record keeps (keyed with the cluster's record
        key, see ``RunRecords.digest``). None for tasks phases (not recorded), or without the cluster's key."""
        if self.records is None:
            return None
        return self.records.digest(host, self.content_digest(entry, host))

    def content_digest(self, entry: RunEntry, host: str) -> str | None:
        """Everything the entry's outcome depends on on ``host``, as a plain digest (``HostRecords.content_digest``),
        asked outside a run there (no barrier, no deadline)."""
        return self.host_records.content_digest(entry, HostContext(host))

    def for_host(self, entry: RunEntry, host: str) -> RunEntry:
        """The entry as this host runs it: option strings that hold templates rendered with its variables."""
        if not kind_of(entry.executor).runs_on_controller or not has_template_strings(entry.options):
            return entry
        where = f"phase {entry.name} options"
        return replace(entry, options=self.access.render_options(host, entry.options, where))

    def soak_problem(self, entries: list[RunEntry], host: str) -> str | None:
        """One look at what a rollout's batch applied on host (``watching.soak_problem``)."""
        return soak_problem(self, entries, host)


def known_after_run_outcome(work, entry: RunEntry, host: str) -> Outcome | None:
    """In a preview, a host whose kubeconfig is a Secret not there yet (the run's earlier phases or a controller
    make it; a preview makes nothing and waits for nothing): its phase is not previewed, as terraform's "known
    after apply". None when that is not why it failed."""
    known = getattr(work.access, "known_after_run", None)  # an access without Secret sources has none
    where = known(host) if known is not None and work.dry_run and work.mode != DESTROY else None
    if where is None:
        return None
    note = kind_of(entry.executor).known_after_run_note(host, where)
    return Outcome(skipped=True, msg=note, details={"preview": note, UNKNOWN_KUBECONFIG: True})


def host_targets(access: ClusterAccess, hosts: list[str], known: dict | None = None) -> list[HostTarget]:
    """Where each of ``hosts`` writes by default, those not in ``known`` (host -> target, kept up to date) looked
    up side by side; those whose kubeconfig resolves."""
    known = {} if known is None else known
    missing = [host for host in hosts if host not in known]
    if len(missing) == 1:
        known[missing[0]] = host_target(access, missing[0])
    elif missing:
        with ThreadPoolExecutor(min(IDENTITY_THREADS, len(missing)), thread_name_prefix="phasekit-identity") as pool:
            known.update(zip(missing, pool.map(lambda host: host_target(access, host), missing)))
    return [known[host] for host in hosts if known[host] is not None]


def host_target(access: ClusterAccess, host: str) -> HostTarget | None:
    """Where ``host`` writes by default; None when its kubeconfig does not resolve (its phase fails on that)."""
    try:
        resolution = access.resolution(host)
        identity = access.identity(host, REQUEST_BUDGET + EXTRA_CONNECTIONS)
    except PhasekitError:
        return None
    return HostTarget(host=host, identity=identity, namespace=resolution.namespace or "default",
                      context=resolution.context,
                      context_from=str(resolution.provenance.get("context_from") or "current-context"))


def unreachable_because(access: ClusterAccess, host: str) -> str | None:
    """Why the host's kubeconfig does not resolve or its API server does not answer (asked after a failure
    only); None when it answers."""
    try:
        access.session(host, EXTRA_CONNECTIONS).get("/version")
    except PhasekitError as err:  # no answer, or no kubeconfig any more (its Secret went with its parent)
        return str(err)
    except ApiError:  # an answer, even a refusal
        return None
    return None


def deletes(entry: RunEntry) -> bool:
    """Whether ``entry`` (options rendered for its host) deletes what it names (an apply's ``state: absent``)."""
    return kind_of(entry.executor).deletes(entry.options or {})


def applies_after(step: list[RunEntry]) -> dict[str, frozenset]:
    """Per phase name of ``step`` (phases in the order they run), the hosts that an apply phase (or a helm phase
    applied as objects) after its first occurrence runs on: where what it listed may answer a later LIST."""
    found: dict[str, frozenset] = {}
    later: set[str] = set()
    for entry in reversed(step):
        found[entry.name] = frozenset(later)
        if kind_of(entry.executor).keeps_lists(entry.options or {}):
            later.update(entry.hosts)
    return found


def writes_outside_session(entry: RunEntry) -> bool:
    """Whether the phase's program writes to the cluster on its own (a command, a container, a task file, a chart
    through the helm CLI), so that the run's lock is taken when the phase starts."""
    return kind_of(entry.executor).writes_outside_session(entry.options or {})
