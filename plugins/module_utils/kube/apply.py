# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The apply engine: server-side apply of a bundle, ApplySet prune, readiness wait.

One run, in order:

1. plan: every object's resource type (discovery, or a CRD of the same
   bundle), namespace and wave; unknown kinds and duplicates fail here,
   before anything is written;
2. ApplySet (``parent``): check the parent belongs to this set and tool,
   and that the set may take over the objects that already exist
   (``applyset_adopt``, see ``ownership``), and in a plan that the set is
   this plan's (``ownership.set_claim``); record the union of old and new
   kinds and namespaces on it;
3. waves: Namespaces, CRDs (waited until Established), admission
   prerequisites, everything else, then webhooks and API services; each wave
   reads live state in bulk, marks each object with the plan that first applied
   it (``ownership.object_claim``: another plan's object is reported as shared,
   its marker kept), skips objects already applied (see ``fields``), and
   server-side applies the rest concurrently over one connection pool;
4. prune (``prune``): delete the set's members this run did not apply,
   dependants first (never one another plan applied first), then record exactly
   the new kinds and namespaces on the parent;
5. wait: kstatus for every applied object, all together.

Check mode is a server-side dry run (``dryRun=All``) of the same requests.
"""

from __future__ import annotations

import calendar
import copy
import email.utils
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kube.diff import (
    changed_fields, clean, object_diff, scrub_secret_values)
from ansible_collections.phasekit.kube.plugins.module_utils.kube.discovery import Discovery
from ansible_collections.phasekit.kube.plugins.module_utils.kube.fields import already_applied, manager_entry
from ansible_collections.phasekit.kube.plugins.module_utils.kube.live import fetch_live
from ansible_collections.phasekit.kube.plugins.module_utils.kube.objects import (
    CONFIGURED, CRD_GROUP_KIND, CREATED, FAILED, NAMESPACE_GROUP_KIND, PENDING, PRUNED, SKIPPED, UNCHANGED, UNKNOWN,
    WAVE_CRDS, WAVE_NAMESPACES, PlannedObject, plan_objects)
from ansible_collections.phasekit.kube.plugins.module_utils.kube.ownership import (
    ADOPT_ALL, ADOPT_NONE, ADOPT_POLICIES, ADOPT_UNOWNED, PlanOwner, live_owner, may_adopt, object_claim)
from ansible_collections.phasekit.kube.plugins.module_utils.kube.applyset import PART_OF_LABEL
from ansible_collections.phasekit.kube.plugins.module_utils.kube.crd_schema import (
    NO_VALIDATOR, schema_problems, validator_available)
from ansible_collections.phasekit.kube.plugins.module_utils.kube.parent import ApplySetParent
from ansible_collections.phasekit.kube.plugins.module_utils.kube.preview import ADD, CHANGE, DESTROY, ObjectChange, PlannedState
from ansible_collections.phasekit.kube.plugins.module_utils.kube.prune import Prune
from ansible_collections.phasekit.kube.plugins.module_utils.kube.selectors import LabelSelector, parse_label_selector
from ansible_collections.phasekit.kube.plugins.module_utils.kube.session import (
    ApiError, TransportError, conflicting_fields, describe_api_error, request_body)
from ansible_collections.phasekit.kube.plugins.module_utils.kube.status import Status, compute_status
from ansible_collections.phasekit.kube.plugins.module_utils.kube.wait import (
    WAIT_OPTIONS_SPEC, WaitRules, explained_not_ready, wait_for, wait_rules)

DEFAULT_FIELD_MANAGER = "phasekit"
DEFAULT_TOOLING = "phasekit.kube/0.1.0"
DEFAULT_CONCURRENCY = 16
MAX_CONCURRENCY = 64
CRD_ESTABLISH_TIMEOUT = 60
NEW_KIND_RETRY_SECONDS = 10  # a CRD just Established may take a moment to be served
# The largest write request body kube-apiserver reads (k8s.io/apiserver's MaxRequestBodyBytes, 3 MiB; no flag sets
# it): past it the server closes the connection and the client sees only a TLS or connection error. etcd's own
# limit (1.5 MiB by default, its --max-request-bytes) is per cluster and the server names it when it is hit.
MAX_REQUEST_BYTES = 3 * 1024 * 1024

PRESENT, ABSENT = "present", "absent"   # kubernetes.core's ``state``: apply the bundle, or delete what it names
STATES = (PRESENT, ABSENT)
# kubectl delete --cascade: the API's propagationPolicy for each (kubectl's default: background)
CASCADES = {"background": "Background", "foreground": "Foreground", "orphan": "Orphan"}
DEFAULT_CASCADE = "background"

SERVER_BOOKKEEPING = ("managedFields", "resourceVersion", "generation")
NOT_CHECKED = "not checked by the server"  # a preview's object whose CRD or namespace an earlier phase creates
PREVIEW_VERBS = {CREATED: "would create", CONFIGURED: "would change", UNCHANGED: "would leave unchanged"}


@dataclass
class ApplyOptions:
    """Everything that shapes one apply run (the action's options, validated)."""

    namespace: str = "default"           # for namespaced objects that name none; also the ApplySet parent's
    field_manager: str = DEFAULT_FIELD_MANAGER
    force_conflicts: bool = False
    dry_run: bool = False                # check mode: server-side dry run
    diff: bool = False
    prune: bool = False
    applyset: str | None = None
    applyset_tooling: str = DEFAULT_TOOLING
    applyset_adopt: str = ADOPT_UNOWNED  # which existing objects the set may take over (see ``ownership``)
    selector: LabelSelector | None = None  # only the bundle's objects it matches (kubectl apply --selector)
    concurrency: int = DEFAULT_CONCURRENCY
    wait: WaitRules | None = None
    conflicts_are_drift: bool = False    # status: a field another manager changed is drift, not a failure
    owner: PlanOwner | None = None       # the plan applying (the phase engine); None: a task outside a plan
    state: str = PRESENT                 # absent: delete the objects the bundle names instead (``kube.absent``)
    cascade: str = DEFAULT_CASCADE       # absent: how dependants go (kubectl delete --cascade)
    carried: PlannedState | None = None  # dry run in a plan: what its earlier phases would create (``kube.preview``)


# The apply action's own options (the kubeconfig options are added by the action).
APPLY_OPTIONS_SPEC = dict(
    src=dict(type="str"),
    definition=dict(type="raw"),
    namespace=dict(type="str"),
    field_manager=dict(type="str", default=DEFAULT_FIELD_MANAGER),
    force_conflicts=dict(type="bool", default=False),
    prune=dict(type="bool", default=False),
    applyset=dict(type="str"),
    applyset_tooling=dict(type="str", default=DEFAULT_TOOLING),
    applyset_adopt=dict(type="str", default=ADOPT_UNOWNED, choices=list(ADOPT_POLICIES)),
    selector=dict(type="str"),
    wait=dict(type="raw"),   # unset: false for present, true for absent (kubectl delete waits by default)
    concurrency=dict(type="int", default=DEFAULT_CONCURRENCY),
    state=dict(type="str", default=PRESENT, choices=list(STATES)),
    cascade=dict(type="str", choices=list(CASCADES)),
)


def apply_options(args: dict, *, namespace: str, check_mode: bool = False, diff: bool = False) -> ApplyOptions:
    """ApplyOptions from validated action arguments; ``namespace`` is the default namespace already chosen."""
    if not 1 <= args["concurrency"] <= MAX_CONCURRENCY:
        raise PhasekitError(f"concurrency must be between 1 and {MAX_CONCURRENCY}, got {args['concurrency']}")
    if not args["field_manager"]:
        raise PhasekitError("field_manager must not be empty")
    adopt = args.get("applyset_adopt") or ADOPT_UNOWNED
    if adopt not in ADOPT_POLICIES:
        raise PhasekitError(f"applyset_adopt must be one of {', '.join(ADOPT_POLICIES)}, got {adopt!r}")
    state = args.get("state") or PRESENT
    if state not in STATES:
        raise PhasekitError(f"state must be one of {', '.join(STATES)}, got {state!r}")
    check_state_options(args, state)
    # deleting: all also deletes what another plan or set applied (no set needed to say so)
    if adopt != ADOPT_UNOWNED and not args["applyset"] and not (state == ABSENT and adopt == ADOPT_ALL):
        raise PhasekitError(f"applyset_adopt: {adopt} needs an applyset (it says which objects the set may take over)")
    selector = parse_label_selector(args["selector"]) if args.get("selector") else None
    wait = args.get("wait")
    return ApplyOptions(
        namespace=namespace, field_manager=args["field_manager"], force_conflicts=args["force_conflicts"],
        dry_run=check_mode, diff=diff, prune=args["prune"], applyset=args["applyset"] or None,
        applyset_tooling=args["applyset_tooling"], applyset_adopt=adopt, selector=selector,
        concurrency=args["concurrency"], wait=parse_wait_option(state == ABSENT if wait is None else wait),
        state=state, cascade=args.get("cascade") or DEFAULT_CASCADE)


def check_state_options(args: dict, state: str) -> None:
    """The options that make sense with ``state`` only, refused with the other (nothing is sent either way)."""
    if state == PRESENT:
        if args.get("cascade"):
            raise PhasekitError("cascade applies to state: absent only (how the deleted objects' dependants go)")
        return
    if args.get("prune"):
        raise PhasekitError("prune deletes an ApplySet's members that left the bundle; with state: absent, the "
                            "bundle names the objects to delete: remove prune")
    if args.get("force_conflicts"):
        raise PhasekitError("force_conflicts applies to state: present only (nothing is applied with state: absent)")
    wait = args.get("wait")
    extra = sorted(set(wait) - {"timeout"}) if isinstance(wait, dict) else []
    if extra:
        raise PhasekitError(f"wait: {', '.join(extra)} do not apply to state: absent (it waits until each object is "
                            f"gone); expected only timeout")


def parse_wait_option(value) -> WaitRules | None:
    """``wait``: false/none (do not wait), true (defaults) or a dict of timeout, kinds, conditions."""
    if value is None or value is False:
        return None
    if value is True:
        return WaitRules()
    if isinstance(value, str) and value.lower() in ("yes", "true", "no", "false"):
        return WaitRules() if value.lower() in ("yes", "true") else None
    if not isinstance(value, dict):
        raise PhasekitError(f"wait must be true, false or a dictionary (timeout, kinds, conditions), "
                            f"got {type(value).__name__}")
    unknown = sorted(set(value) - set(WAIT_OPTIONS_SPEC))
    if unknown:
        raise PhasekitError(f"wait: unknown option(s) {', '.join(unknown)}; expected "
                            f"{', '.join(sorted(WAIT_OPTIONS_SPEC))}")
    return wait_rules({**{k: spec.get("default") for k, spec in WAIT_OPTIONS_SPEC.items()}, **value})


@dataclass
class ApplyReport:
    objects: list
    pruned: list = field(default_factory=list)
    applyset: dict | None = None
    warnings: list = field(default_factory=list)
    failure: str | None = None
    diffs: list = field(default_factory=list)
    requests: int = 0
    ownership: list = field(default_factory=list)  # said once: a set taken over, objects shared or not pruned

    def counts(self) -> dict:
        counts = {CREATED: 0, CONFIGURED: 0, UNCHANGED: 0, PRUNED: 0, FAILED: 0}
        for planned in self.objects:
            if planned.action in counts:
                counts[planned.action] += 1
        for pruned in self.pruned:
            counts[FAILED if pruned.error else PRUNED] += 1
        return counts

    @property
    def changed(self) -> bool:
        counts = self.counts()
        return bool(counts[CREATED] or counts[CONFIGURED] or counts[PRUNED])

    def drift(self) -> list[str]:
        """A dry run's differences, one line per object: ``Kind ns/name: field, field`` (no values)."""
        lines = [f"{planned.describe()}: {', '.join(planned.drift)}" for planned in self.objects if planned.drift]
        return lines + [f"{pruned.describe()}: would be pruned" for pruned in self.pruned if not pruned.error]

    def changes(self) -> list[ObjectChange]:
        """What the apply did (a dry run: would do) to each object it adds, changes or prunes, in apply order."""
        found = [ObjectChange(ADD, planned.describe()) for planned in self.objects if planned.action == CREATED]
        found += [ObjectChange(CHANGE, planned.describe(), tuple(planned.drift or ()))
                  for planned in self.objects if planned.action == CONFIGURED]
        return found + [ObjectChange(DESTROY, pruned.describe()) for pruned in self.pruned if not pruned.error]

    def not_checked(self) -> list[str]:
        """A preview's objects the server could not dry-run (an earlier phase brings their CRD or namespace), one
        line each: ``would create Kind ns/name: not checked by the server: its CRD is created by phase crds``."""
        return [f"{PREVIEW_VERBS[planned.action]} {planned.describe()}: {planned.status.message}"
                for planned in self.objects if planned.action in PREVIEW_VERBS and planned.status is not None
                and planned.status.message.startswith(NOT_CHECKED)]

    def result(self) -> dict:
        """The Ansible result (without 'failed'/'msg', which the action adds)."""
        out = {"changed": self.changed, "counts": self.counts(),
               "objects": [p.entry() for p in self.objects] + [p.entry() for p in self.pruned],
               "api_requests": self.requests}
        return with_given(out, applyset=self.applyset, diff=self.diffs, ownership=self.ownership)


def with_given(result: dict, **optional) -> dict:
    """``result`` with each of ``optional`` that has a value (a result leaves out what the run did not have)."""
    result.update({key: value for key, value in optional.items() if value})
    return result


# ---------------------------------------------------------------- the run

class CreatedSoFar:
    """What is known not to exist yet: the namespaces and kinds (CRDs) this run created, empty (nothing to read in
    them, and a dry run cannot apply into them), and in a dry run what earlier phases of it would create."""

    def __init__(self, carried: PlannedState | None):
        self.carried = carried  # None in a real run: it never plans from pretence
        self.namespaces: set = set()
        self.kinds: set = set()  # (group, kind)

    def namespace_phase(self, namespace: str | None) -> str | None:
        """The earlier phase of this dry run that would create ``namespace`` (None: none, or not a dry run)."""
        return self.carried.namespace_phase(namespace) if self.carried is not None else None

    def namespace_pretended(self, namespace: str | None) -> bool:
        return namespace in self.namespaces or self.namespace_phase(namespace) is not None

    def note_created(self, one: PlannedObject):
        if (one.resource.group, one.resource.kind) == NAMESPACE_GROUP_KIND:
            self.namespaces.add(one.name)
        elif (one.resource.group, one.resource.kind) == CRD_GROUP_KIND:
            spec = one.body.get("spec") or {}
            self.kinds.add((spec.get("group"), (spec.get("names") or {}).get("kind")))

    def known_absent(self, one: PlannedObject) -> bool:
        """In a namespace, or of a kind, that this run (or an earlier phase of this dry run) created: nothing to
        read."""
        return self.namespace_pretended(one.namespace) or (one.resource.group, one.resource.kind) in self.kinds

    def unverifiable_in_dry_run(self, one: PlannedObject) -> bool:
        return one.defined_in_bundle or (one.namespace is not None and self.namespace_pretended(one.namespace))

    def unchecked_reason(self, one: PlannedObject) -> str:
        """Why the server cannot dry-run ``one``; an earlier phase's CRD or namespace is named with its phase."""
        from_phase = self.namespace_phase(one.namespace)
        if one.kind_from_phase or (from_phase and not one.defined_in_bundle):
            what = f"CRD is created by phase {one.kind_from_phase}" if one.kind_from_phase else \
                f"namespace {one.namespace} is created by phase {from_phase}"
            return f"{NOT_CHECKED}: its {what}"
        return "not verified: its namespace or CRD is created by this bundle (a dry run cannot apply into it)"


class ApplyRun:
    """One apply of a planned bundle against one cluster."""

    def __init__(self, session, discovery: Discovery, options: ApplyOptions, pool=None):
        self.session = session
        self.discovery = discovery
        self.options = options
        self.pool = pool  # a long-lived executor shared by many clusters' runs (fleet); None: a pool per wave
        self.unreachable = threading.Event()
        self.parent: ApplySetParent | None = None
        self.created = CreatedSoFar(options.carried if options.dry_run else None)
        self.listed: dict = {}  # collections read whole before applying, by (group, kind, namespace)
        self.prefetched: dict = {}  # live objects read to check the set may take them over, by Target.key
        self.ownership: list = []   # what the run says about owners (see ApplyReport.ownership)

    def run(self, bundle: list) -> ApplyReport:
        if self.options.prune and not self.options.applyset:
            raise PhasekitError("prune needs an applyset: name the set whose members may be deleted")
        if self.options.selector is not None:
            bundle = [one for one in bundle if self.options.selector.matches(one.obj)]
        if self.options.prune and not bundle:
            raise PhasekitError("the bundle has no objects: refusing to prune the whole ApplySet (as kubectl does)")
        planned = plan_objects(bundle, self.discovery, self.options.namespace, carried=self.created.carried)
        check_request_sizes(planned)
        if self.options.applyset:
            self.parent = ApplySetParent(self.session, self.discovery, reference=self.options.applyset,
                                         tooling=self.options.applyset_tooling, namespace=self.options.namespace,
                                         dry_run=self.options.dry_run, owner=self.options.owner,
                                         adopt=self.options.applyset_adopt)
            self.parent.prepare(planned)
            if self.parent.note:
                self.ownership.append(self.parent.note)
            if self.options.applyset_adopt != ADOPT_ALL:
                self._check_ownership(planned)
        report = ApplyReport(objects=planned)
        try:
            self._apply_waves(planned, report)
            if report.failure is None and self.options.prune:
                self._prune(planned, report)
            if report.failure is None and self.options.wait is not None and not self.options.dry_run:
                wait_until_ready(self.session, planned, self.options.wait, report)
        except PhasekitError as err:  # e.g. the API server went away, the ApplySet parent cannot be written
            report.failure = str(err)
        except ApiError as err:
            report.failure = f"{err.method} {err.path}: {describe_api_error(err)}"
        finally:
            crds_changed = any((p.resource.group, p.resource.kind) == CRD_GROUP_KIND
                               and p.action in (CREATED, CONFIGURED) for p in planned)
            crds_pruned = any((p.resource.group, p.resource.kind) == CRD_GROUP_KIND for p in report.pruned)
            if (crds_changed or crds_pruned) and not self.options.dry_run:
                self.discovery.invalidate()  # served kinds changed: the next run asks the server
        if self.parent is not None:
            report.applyset = self.parent.summary()
        report.diffs = [p.diff for p in planned if p.diff]
        if self.options.diff:
            report.diffs += [object_diff(p.live, None, p.describe()) for p in report.pruned if not p.error]
        report.warnings = list(self.session.warnings)
        report.requests = self.session.requests
        report.ownership = self.ownership
        return report

    # ------------------------------------------------------------ applying

    def _write_parent(self, superset: bool):
        namespace = self.parent.state.parent.namespace
        self.parent.write(superset=superset, namespace_pretended=self.created.namespace_pretended(namespace))

    def _apply_waves(self, planned: list, report: ApplyReport):
        parent_namespace_in_bundle = self.parent is not None and any(
            (p.resource.group, p.resource.kind) == NAMESPACE_GROUP_KIND and p.name == self.parent.state.parent.namespace
            for p in planned)
        if self.parent is not None and not parent_namespace_in_bundle:
            self._write_parent(superset=True)
        for wave in sorted({p.wave for p in planned}):
            members = [p for p in planned if p.wave == wave]
            self._apply_wave(members)
            if wave == WAVE_NAMESPACES and parent_namespace_in_bundle:
                self._write_parent(superset=True)
            failures = [p for p in members if p.action == FAILED]
            if failures:
                skip_pending(planned)
                report.failure = _failure_message("apply", failures, len(planned))
                return
            if wave == WAVE_CRDS and not self.options.dry_run:
                establish_crds(self.session, members, report)
                if report.failure:
                    return

    def _check_ownership(self, planned: list):
        """``applyset_adopt``: refuse, before anything is written, the existing objects the set may not take over."""
        targets = [p.target for p in planned if not p.defined_in_bundle]
        self.prefetched = fetch_live(self.session, targets, workers=self.options.concurrency, listed=self.listed)
        refuse_unadoptable(planned, self.prefetched, self.parent.state, self.options.applyset_adopt)

    def _apply_wave(self, members: list):
        fresh = {id(p) for p in members if self.created.known_absent(p)}
        known = {p.target.key: self.prefetched[p.target.key] for p in members
                 if id(p) not in fresh and p.target.key in self.prefetched}
        readable = [] if self._new_set_applied_blind() else [
            p for p in members if id(p) not in fresh and not (p.defined_in_bundle and self.options.dry_run)
            and p.target.key not in known]
        live = fetch_live(self.session, [p.target for p in readable], workers=self.options.concurrency,
                          listed=self.listed, reuse=self._reuses_lists())
        live.update(known)
        for one in members:
            one.live = None if id(one) in fresh else live.get(one.target.key, UNKNOWN)
            carry_earlier(one, self.created.carried)
            self._claim(one)
        # Objects already applied need no request; only the rest go to the pool (a re-run starts no thread).
        to_send = [one for one in members if not self._settle_unchanged(one)]
        if len(to_send) <= 1 or self.options.concurrency == 1:
            for one in interleave_kinds(to_send):
                self._apply_one(one)
            return
        if self.pool is not None:
            in_lanes(self.pool, self._apply_one, interleave_kinds(to_send), self.options.concurrency)
            return
        lanes = min(self.options.concurrency, len(to_send))
        with ThreadPoolExecutor(max_workers=lanes) as pool:
            in_lanes(pool, self._apply_one, interleave_kinds(to_send), lanes)

    def _claim(self, one: PlannedObject):
        """Mark ``one`` with the plan that owns it: the first plan that applied it keeps it (``object_claim``).

        In a plan, a phase without an ApplySet also keeps the set label the object carries: the same field
        manager dropping it would take the object out of another phase's set, which puts it back on its next run.
        """
        live = one.live if isinstance(one.live, dict) else None
        force_adopt = self.parent is not None and self.options.applyset_adopt == ADOPT_ALL
        claim = object_claim(live, self.options.owner, force_adopt=force_adopt, what=one.describe())
        metadata = one.body["metadata"]
        if claim.owner is not None:
            metadata["annotations"] = {**(metadata.get("annotations") or {}),
                                       **claim.owner.annotations(with_since=False)}
        part_of = (((live or {}).get("metadata") or {}).get("labels") or {}).get(PART_OF_LABEL)
        if part_of and self.parent is None and self.options.owner is not None:
            metadata["labels"] = {PART_OF_LABEL: part_of, **(metadata.get("labels") or {})}
        if claim.note:
            self.ownership.append(claim.note)

    def _reuses_lists(self) -> bool:
        """Whether a collection an earlier phase listed may tell which objects need no request (the session's
        ``ListMemory``, in a fleet step). Not when the run waits for its objects or prunes: their current state is
        what those decide from."""
        return self.options.wait is None and not self.options.prune and not self.options.applyset

    def _new_set_applied_blind(self) -> bool:
        """A set applied for the first time, without diffs: every object is sent anyway (as kubectl does),
        and the answer says created or configured, so reading them first would only cost requests."""
        return (self.parent is not None and not self.parent.state.exists
                and not self.options.dry_run and not self.options.diff)

    def _settle_unchanged(self, one: PlannedObject) -> bool:
        """Mark ``one`` unchanged when this field manager already applied exactly it."""
        if isinstance(one.live, dict) and already_applied(one.body, one.live, self.options.field_manager):
            one.action, one.result = UNCHANGED, one.live
            one.status = compute_status(one.live)
            return True
        return False

    def _apply_one(self, one: PlannedObject):
        if self.unreachable.is_set():
            one.action, one.error = SKIPPED, "not sent: the API server stopped answering during this run"
            return
        if self.options.dry_run and self.created.unverifiable_in_dry_run(one):
            preview_unverifiable(one, self.created, self.options)
            return
        try:
            response = apply_with_new_kind_retry(self.session, one, self.options)
        except ApiError as err:
            self._refused(one, err)
            return
        except TransportError as err:
            one.action, one.error = FAILED, str(err)
            self.unreachable.set()  # the rest of the wave is not sent: each would retry into the same wall
            return
        one.result = response.body or {}
        one.action = self._action_of(one, response)
        one.status = compute_status(one.result)
        if one.action != UNCHANGED:
            record_diff(one, one.result, self.options)

    def _refused(self, one: PlannedObject, err: ApiError):
        """The API server refused to apply ``one``: drift, a preview of an object whose namespace is missing, or
        a failure."""
        changed_by_others = conflicting_fields(err) if self.options.conflicts_are_drift else []
        if changed_by_others:
            one.action, one.drift = CONFIGURED, changed_by_others
            return
        if self.options.dry_run and _namespace_missing(err, one):
            # status and check mode: the object is absent (an earlier phase makes its namespace in a run)
            one.action = CREATED
            one.status = Status("InProgress", f"not verified: its namespace {one.namespace} does not exist "
                                              "(a dry run cannot apply into it)")
            record_diff(one, copy.deepcopy(one.body), self.options)
            return
        one.action = FAILED
        one.error = scrub_secret_values(describe_api_error(err, force_hint=not self.options.force_conflicts),
                                        one.body)
        if err.status == 404 and not err.details.get("kind") and not one.defined_in_bundle:
            self.discovery.invalidate()  # cached discovery named a resource the server no longer serves

    def _action_of(self, one: PlannedObject, response) -> str:
        if one.live_from_phase is not None:  # a preview: compared with what the earlier phase would make of it
            return UNCHANGED if _same_preview(one.live, one.result) else CONFIGURED
        if response.status == 201:
            self.created.note_created(one)
            return CREATED
        live = one.live
        if isinstance(live, dict):
            # compared as content: a first apply after create may only rewrite managedFields bookkeeping
            return UNCHANGED if _same_content(live, one.result) else CONFIGURED
        if live is None and self.options.dry_run:
            return CREATED
        return _action_from_timestamps(one.result, self.options.field_manager, response.headers)

    # ------------------------------------------------------------ pruning

    def _prune(self, planned: list, report: ApplyReport):
        prune = Prune(self.session, self.discovery, self.parent.state, concurrency=self.options.concurrency,
                      dry_run=self.options.dry_run, listed=self.listed,
                      # force-adopt prunes whoever applied a member (cli-utils' AdoptAll may prune any object)
                      owner=None if self.options.applyset_adopt == ADOPT_ALL else self.options.owner)
        report.pruned, report.failure = prune.run(planned)
        self.ownership.extend(prune.kept)
        if report.failure is None:
            self._write_parent(superset=False)


# ---------------------------------------------------------------- one object

def refuse_unadoptable(planned: list, live_by_key: dict, state, adopt: str) -> None:
    """Raise, naming them, for the existing objects (``live_by_key``) the set may not take over under ``adopt``."""
    refused = []
    for one in planned:
        live = live_by_key.get(one.target.key)
        if isinstance(live, dict):
            owner = live_owner(live, state.id, state.parent.name)
            if not may_adopt(adopt, owner):
                refused.append(f"{one.describe()} {owner.describe()}")
    if refused:
        shown = "; ".join(refused[:20]) + (f"; and {len(refused) - 20} more" if len(refused) > 20 else "")
        wider = "unowned or all" if adopt == ADOPT_NONE else "all"
        raise PhasekitError(f"ApplySet {state.parent} may not take over {len(refused)} existing object(s) "
                            f"(applyset_adopt: {adopt}); nothing was applied: {shown}. "
                            f"Set applyset_adopt to {wider} to take them over")


def carry_earlier(one: PlannedObject, carried: PlannedState | None):
    """A preview: an object an earlier phase would create or change is previewed against what that phase would
    make of it (configured or unchanged, not created twice)."""
    earlier = carried.changed_earlier(one.target.key) if carried is not None and one.live is not UNKNOWN else None
    if earlier is not None:
        one.live_from_phase, one.live = earlier[0], copy.deepcopy(earlier[1])


def apply_with_new_kind_retry(session, one: PlannedObject, options: ApplyOptions):
    """Server-side apply ``one``; one of a kind this bundle defines is retried on 404 for a while (a CRD just
    Established may take a moment to be served)."""
    deadline = time.monotonic() + (NEW_KIND_RETRY_SECONDS if one.defined_in_bundle else 0)
    delay = 0.2
    while True:
        try:
            return session.apply(one.target.path(), one.body, field_manager=options.field_manager,
                                 force=options.force_conflicts, dry_run=options.dry_run)
        except ApiError as err:
            if err.status != 404 or time.monotonic() >= deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 2.0)


def preview_unverifiable(one: PlannedObject, created: CreatedSoFar, options: ApplyOptions):
    """A dry run of an object the server cannot check (its CRD or namespace does not exist yet): would be
    created, its body checked against its CRD's schema here, failed as the server would fail it."""
    problems = schema_problems(one.body, one.custom_kind) if one.custom_kind is not None else []
    if problems:
        kind_origin = f"phase {one.kind_from_phase}" if one.kind_from_phase else "this bundle"
        one.action = FAILED
        one.error = scrub_secret_values(f"{'; '.join(problems)} (checked on the controller against the schema of "
                                        f"the CustomResourceDefinition that {kind_origin} creates: the "
                                        "server cannot dry-run it before that CRD exists)", one.body)
        return
    if one.live_from_phase is not None:
        one.action = UNCHANGED if _same_preview(one.live, one.body) else CONFIGURED
        one.status = Status("InProgress", created.unchecked_reason(one))
        if one.action == CONFIGURED:
            record_diff(one, copy.deepcopy(one.body), options)
        return
    one.action = CREATED
    unchecked = created.unchecked_reason(one)
    if one.custom_kind is not None and one.custom_kind.schema is not None and not validator_available():
        unchecked += f"; {NO_VALIDATOR}"
    one.status = Status("InProgress", unchecked)
    record_diff(one, copy.deepcopy(one.body), options)


def record_diff(one: PlannedObject, after: dict, options: ApplyOptions):
    """What applying ``one`` changes: its drift in a dry run, its diff when asked for."""
    before = one.live if isinstance(one.live, dict) else None
    if options.dry_run:
        one.drift = changed_fields(before, after)  # what status and check mode report as drift
    if options.diff:
        one.diff = object_diff(before, after, one.describe(), "dry run" if options.dry_run else "applied")
        if one.live_from_phase is not None:
            one.diff["before_header"] = f"{one.describe()} (after phase {one.live_from_phase})"


# ---------------------------------------------------------------- waiting

def skip_pending(planned: list):
    """Objects not yet sent are skipped once a wave failed."""
    for later in planned:
        if later.action == PENDING:
            later.action = SKIPPED


def establish_crds(session, crds: list, report: ApplyReport):
    """CRDs must be Established before their custom resources can be applied."""
    rules = WaitRules(timeout=CRD_ESTABLISH_TIMEOUT)
    known = {p.target.key: p.result for p in crds if p.result}
    outcomes = wait_for(session, [p.target for p in crds], rules, known=known, first_delay=0.05)
    by_key = {o.target.key: o for o in outcomes}
    for one in crds:
        one.status = by_key[one.target.key].status
    problem = explained_not_ready(session, outcomes, CRD_ESTABLISH_TIMEOUT)
    if problem:
        report.failure = "CustomResourceDefinitions not established, custom resources not applied: " + problem
        skip_pending(report.objects)


def wait_until_ready(session, planned: list, rules: WaitRules, report: ApplyReport):
    """``wait``: the applied objects are ready (their status) within the rules' timeout, or the report fails."""
    known = {p.target.key: p.result for p in planned if p.result}
    outcomes = wait_for(session, [p.target for p in planned], rules, known=known)
    for one, outcome in zip(planned, outcomes):
        one.status = outcome.status
    problem = explained_not_ready(session, outcomes, rules.timeout)
    if problem:
        report.failure = problem


# ---------------------------------------------------------------- helpers

def check_request_sizes(planned: list) -> None:
    """Refuse, before anything is sent, an object larger than one request to the API server may be."""
    for one in planned:
        size = len(request_body(one.body))
        if size > MAX_REQUEST_BYTES:
            raise PhasekitError(
                f"{one.describe()} ({one.source.origin}): {size} bytes as JSON, more than the {MAX_REQUEST_BYTES} "
                f"bytes (3 MiB) kube-apiserver reads in one request; nothing was sent. etcd keeps at most 1.5 MiB per "
                f"object by default: split the data over several objects, or keep it out of the cluster")


def apply_bundle(session, bundle: list, options: ApplyOptions, discovery: Discovery | None = None,
                 pool=None) -> ApplyReport:
    """Apply ``bundle`` (a list of ``BundleObject``) as one run; see the module docstring.

    ``pool``: an executor for the writes, shared with other clusters' runs (it then bounds the requests
    in flight over all of them instead of ``options.concurrency`` per run).
    """
    return ApplyRun(session, discovery or Discovery(session), options, pool).run(bundle)


def in_lanes(pool, work: Callable, items: list, lanes: int) -> None:
    """Run ``work`` on each of ``items`` in order, in a shared ``pool``, at most ``lanes`` at a time.

    Each lane takes the next item when its last one is done. A cluster's connection pool then opens no more
    connections than lanes, however many threads the shared pool has (each new TLS connection costs both
    ends a handshake). ``work`` must not raise: the first error would stop its lane.
    """
    pending = iter(items)
    lock = threading.Lock()
    done = object()

    def lane(_number):
        while True:
            with lock:
                item = next(pending, done)
            if item is done:
                return
            work(item)

    list(pool.map(lane, range(max(1, min(lanes, len(items))))))


def interleave_kinds(members: list) -> list:
    """Round-robin over kinds: a kind the server admits one at a time (Services allocate IPs under a lock)
    then overlaps with the others instead of trailing behind them."""
    by_kind = {}
    for one in members:
        by_kind.setdefault((one.resource.group, one.resource.kind), []).append(one)
    queues = list(by_kind.values())
    return [queue[i] for i in range(max((len(q) for q in queues), default=0)) for queue in queues if i < len(queue)]


def _same_content(before: dict, after: dict) -> bool:
    """The object after apply (or its dry run) equals the live one, bookkeeping aside."""
    def strip(obj):
        metadata = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in SERVER_BOOKKEEPING}
        return {**obj, "metadata": metadata}
    return strip(before) == strip(after)


def _same_preview(before: dict, after: dict) -> bool:
    """Two dry-run results (or bodies) of one object say the same, what the server sets on each aside."""
    return clean(before) == clean(after)


def _namespace_missing(err: ApiError, one: PlannedObject) -> bool:
    """Whether the API server refused ``one`` because its namespace does not exist (404 naming the namespace)."""
    return (err.status == 404 and one.namespace is not None and err.details.get("kind") == "namespaces"
            and err.details.get("name") == one.namespace)


def _action_from_timestamps(result: dict, manager: str, headers: dict) -> str:
    """Without a readable prior state: the server stamps our managedFields entry only when it changed the object."""
    entry = manager_entry(result, manager, result.get("apiVersion")) or {}
    stamp, now = entry.get("time"), headers.get("Date") or headers.get("date")
    try:
        age = email.utils.parsedate_to_datetime(now).timestamp() - \
            calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ"))
    except (TypeError, ValueError, OverflowError):
        return CONFIGURED
    return UNCHANGED if age > 2 else CONFIGURED  # both clocks are the server's


def _failure_message(stage: str, failures: list, total: int) -> str:
    shown = "; ".join(f"{p.describe()} ({p.source.origin}): {p.error}" for p in failures[:20])
    more = f"; and {len(failures) - 20} more" if len(failures) > 20 else ""
    return f"{stage} failed for {len(failures)} of {total} objects: {shown}{more}"
