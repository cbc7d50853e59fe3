# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""From documents to the ordered run list: parse, validate, choose the plan, place, select.

This is the one path every plan takes; it reads no kubeconfig and contacts no
cluster, so ``list``, ``tree``, ``render`` and offline ``validate`` stop here.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kube.diff import redact
from ansible_collections.phasekit.kube.plugins.module_utils.planning.documents import RawDocument
from ansible_collections.phasekit.kube.plugins.module_utils.planning.executors import Executor
from ansible_collections.phasekit.kube.plugins.module_utils.planning.formats import document_readers
from ansible_collections.phasekit.kube.plugins.module_utils.planning.graph import PlanGraph, plan_graph
from ansible_collections.phasekit.kube.plugins.module_utils.planning.inventory import Inventory
from ansible_collections.phasekit.kube.plugins.module_utils.planning.model import Catalog, Phase, PhasePlan, parse_documents
from ansible_collections.phasekit.kube.plugins.module_utils.planning.outputs import check_output_uses
from ansible_collections.phasekit.kube.plugins.module_utils.planning.problems import Problems, did_you_mean
from ansible_collections.phasekit.kube.plugins.module_utils.planning.rollout import RolloutOf, parse_rollout
from ansible_collections.phasekit.kube.plugins.module_utils.planning.entry_names import entry_name
from ansible_collections.phasekit.kube.plugins.module_utils.planning.selection import (
    Step,
    cut_rollouts,
    rollout_cut_message,
    select_phases,
)
from ansible_collections.phasekit.kube.plugins.module_utils.planning.validation import (
    Placement,
    check_other_kubeconfigs,
    check_phases,
    place_phases,
    place_rollouts,
    plan_phases,
    refuse_not_runnable,
)


@dataclass
class PlannedPhase:
    """An entry of the chosen plan's run list: the phase, where it runs, and why it does not run (``None``: it
    runs). A phase the plan runs several times is several entries, named ``<full name>#<k>``."""

    phase: Phase
    placement: Placement
    reason: str | None = None
    name: str = ""                 # unique in the run list (see ``selection.entry_name``)
    entry: int | None = None       # 1-based position of the plan entry that brought it in (None without a plan)
    occurrence: int | None = None  # which run of a repeated phase (None: the plan runs it once)
    parent_name: str | None = None  # the entry name of its parent in the same plan entry
    children_names: list = field(default_factory=list)
    rollout: RolloutOf | None = None    # the rollout it runs under (its own, an ancestor's, or plan_rollout)
    in_plans: list = field(default_factory=list)  # the documents' plans that run this phase (see ``plans_running``)

    def __post_init__(self):
        self.name = self.name or self.phase.full_name

    @property
    def selected(self) -> bool:
        return self.reason is None

    def run_entry(self, shown: dict[str, Executor] | None = None) -> RunEntry:
        """The entry as the runner and the actions use it; with ``shown`` (the executors) as a result may show it:
        inline Secret objects and secret options (see ``Executor.shown_options``) hidden."""
        phase = self.phase
        source = phase.source_path if phase.source_path is not None else phase.source
        options = phase.options
        if shown is not None:
            source = shown_source(source)
            executor = shown.get(phase.executor)
            options = executor.shown_options(options) if executor is not None else options
        return RunEntry(
            name=self.name, full_name=phase.full_name, short_name=phase.name, entry=self.entry,
            occurrence=self.occurrence, parent=self.parent_name, level=phase.level,
            children=tuple(self.children_names), description=phase.description, cluster=phase.cluster,
            hosts=tuple(self.placement.hosts), cluster_hosts=tuple(self.placement.cluster_hosts),
            parents=dict(self.placement.parents), executor=phase.executor, source=source, options=options,
            retries=phase.retries, delay=phase.delay, timeout=phase.timeout, origin=phase.origin.label(),
            selected=self.selected, reason=self.reason, rollout=self.rollout,
            outputs={output.name: output.to_dict() for output in phase.outputs}, in_plans=tuple(self.in_plans))

    def to_dict(self, shown: dict[str, Executor] | None = None) -> dict:
        """The entry as JSON for Ansible (an action's result): see ``run_entry``."""
        return self.run_entry(shown).to_dict()


_LISTS = ("children", "hosts", "cluster_hosts", "in_plans")   # tuples here, lists in JSON


@dataclass(frozen=True)
class RunEntry:  # pylint: disable=too-many-instance-attributes
    """One entry of the run list as the runner hands it to the executors (``PlannedPhase.run_entry``); frozen: what
    differs per host (its deadline, its batch, its peers) is the runner's ``HostContext``, not added keys.

    JSON only where Ansible or a record needs it (``to_dict``/``from_dict``: the keys are the field names). Options
    rendered for one host are a copy (``dataclasses.replace(entry, options=...)``).
    """

    name: str
    executor: str | None = None
    full_name: str = ""
    short_name: str = ""
    entry: int | None = None
    occurrence: int | None = None
    parent: str | None = None
    level: int = 0
    children: tuple = ()
    description: str = ""
    cluster: str | None = None
    hosts: tuple = ()
    cluster_hosts: tuple = ()
    parents: dict = field(default_factory=dict)
    source: object = None
    options: dict = field(default_factory=dict)
    retries: int | None = None
    delay: float | None = None
    timeout: float | None = None
    origin: str = ""
    selected: bool = True
    reason: str | None = None
    rollout: RolloutOf | None = None
    outputs: dict = field(default_factory=dict)
    in_plans: tuple = ()

    __hash__ = None   # its options and outputs are dicts

    def __post_init__(self):
        if not self.full_name:
            object.__setattr__(self, "full_name", self.name)
        for name in _LISTS:
            object.__setattr__(self, name, tuple(getattr(self, name) or ()))

    def to_dict(self) -> dict:
        out = {item.name: getattr(self, item.name) for item in fields(self)}
        out.update({name: list(out[name]) for name in _LISTS})
        out["parents"] = dict(self.parents)
        out["rollout"] = self.rollout.to_dict() if self.rollout is not None else None
        return out

    @classmethod
    def from_dict(cls, value, where: str = "phase") -> RunEntry:
        """An entry from JSON (``to_dict``); a malformed one is refused naming the field and what was expected."""
        if not isinstance(value, dict):
            raise PhasekitError(f"{where}: expected a mapping (a run entry), got {type(value).__name__}")
        known = {item.name for item in fields(cls)}
        unknown = sorted(set(value) - known)
        if unknown:
            raise PhasekitError(f"{where}: unknown field(s) {', '.join(map(str, unknown))}; expected some of "
                                f"{', '.join(sorted(known))}")
        label = f"{where} {value.get('name')}" if isinstance(value.get("name"), str) else where
        for name, (types, wanted) in _ENTRY_FIELD_TYPES.items():
            if name == "name" and name not in value:
                raise PhasekitError(f"{label}: field name is missing (expected {wanted})")
            if name in value and not isinstance(value[name], types):
                raise PhasekitError(f"{label}: field {name} must be {wanted}, got {type(value[name]).__name__}")
        kept = dict(value)
        if kept.get("rollout") is not None:
            kept["rollout"] = _rollout_from(kept["rollout"], label)
        return cls(**kept)


_NONE = type(None)
_SEQUENCE = (list, tuple)
_ENTRY_FIELD_TYPES = {   # field -> (accepted JSON types, what the message says was expected)
    "name": (str, "a string"),
    "executor": ((str, _NONE), "a string or null"),
    "full_name": (str, "a string"),
    "short_name": (str, "a string"),
    "entry": ((int, _NONE), "a whole number or null"),
    "occurrence": ((int, _NONE), "a whole number or null"),
    "parent": ((str, _NONE), "a string or null"),
    "level": (int, "a whole number"),
    "children": (_SEQUENCE, "a list of names"),
    "description": ((str, _NONE), "a string"),
    "cluster": ((str, _NONE), "a string or null"),
    "hosts": (_SEQUENCE, "a list of hosts"),
    "cluster_hosts": (_SEQUENCE, "a list of hosts"),
    "parents": (dict, "a mapping of host to parent host"),
    "options": ((dict, _NONE), "a mapping"),
    "retries": ((int, _NONE), "a whole number or null"),
    "delay": ((int, float, _NONE), "a number or null"),
    "timeout": ((int, float, _NONE), "a number or null"),
    "origin": (str, "a string"),
    "selected": (bool, "true or false"),
    "reason": ((str, _NONE), "a string or null"),
    "rollout": ((dict, _NONE), "a mapping (the rollout) or null"),
    "outputs": ((dict, _NONE), "a mapping"),
    "in_plans": (_SEQUENCE, "a list of plan names"),
}


def _rollout_from(value: dict, label: str) -> RolloutOf:
    try:
        return RolloutOf.from_dict(value)
    except (KeyError, TypeError, ValueError) as err:
        raise PhasekitError(f"{label}: field rollout must be a rollout (phase, batches, max_fail_percentage, pause, "
                            f"order, clusters), got {value!r} ({type(err).__name__}: {err})") from None


def shown_source(source):
    """An inline source as results show it: Secret values hidden (a path is shown as it is)."""
    if isinstance(source, dict):
        return redact(source)
    if isinstance(source, list):
        return [redact(item) if isinstance(item, dict) else item for item in source]
    if isinstance(source, str) and "\n" in source:
        return f"(inline YAML, {len(source)} characters)"  # documents as text: may hold a Secret
    return source


@dataclass
class Plan:
    """The chosen plan: every entry in run order, each marked as selected or not."""

    name: str | None
    description: str = ""
    phases: list[PlannedPhase] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)   # validate: problems of the documents outside the plan
    graph: PlanGraph | None = None      # a plan with needs: the graph it runs by (None: a line, run as one)

    @property
    def selected(self) -> list[PlannedPhase]:
        return [planned for planned in self.phases if planned.selected]


def build_plan(documents: list[RawDocument], *, executors: dict[str, Executor], inventory: Inventory,
               name: str | None = None, only=(), skip=(), start_at: str | None = None,
               target_path: str | None = None, runnable: bool = False, check_all: bool = False,
               rollout=None, whole_rollouts: bool = False) -> Plan:
    """Validate the plan's documents and compute the run list; raises PhasekitError listing every problem.

    Only the chosen plan and the phases it runs need to be valid: a problem of another phase or plan fails it
    only with ``check_all`` (validate), where it is a warning (``Plan.warnings``).
    ``target_path``: where the entry points of another format's documents start (see ``planning/formats.py``).
    ``runnable``: the plan is to be validated or run, so a selected phase that cannot run here is a problem.
    ``rollout``: the default rollout (``plan_rollout``) of phases without one of their own.
    ``whole_rollouts``: a selection that runs only part of a rollout is refused (a run that writes; see
    ``selection.cut_rollouts``).
    """
    if not documents:
        raise PhasekitError("no phase documents: give 'src' (a file or directory) or inline documents")
    problems = Problems()
    default = parse_rollout(rollout or None, lambda name: f"plan_rollout{'.' + name if name else ''}", problems)
    catalog = read_catalog(documents, problems, target_path)
    plan = choose_plan(catalog, name, problems)
    if plan is None and (name or catalog.plans):
        problems.raise_if_any()     # no plan to place: stop before reporting on phases it would not run
    if plan is not None:
        problems.extend(plan.problems.messages)
    ordered = plan_phases(catalog, plan, problems)
    phases = [phase for phase, _entry in ordered]
    check_phases(phases, executors)
    for phase in phases:
        problems.extend(phase.problems.messages)
    warnings = other_problems(catalog, plan, phases, executors) if check_all else []
    placements = place_phases(phases, inventory, problems)
    rollouts = place_rollouts(phases, placements, default, problems)
    check_output_uses(phases, lambda name: placements[name].hosts, problems)
    problems.raise_if_any()
    entries = run_list(ordered, numbered=plan is not None)
    reasons = select_phases([Step(planned.name, planned.phase.full_name, planned.entry or 0) for planned in entries],
                            only, skip, start_at)
    if runnable:
        selected = [planned.phase for planned in entries if reasons[planned.name] is None]
        refuse_not_runnable(selected, problems)
        check_other_kubeconfigs(selected, placements, inventory, problems)
        problems.raise_if_any()
    place_entries(entries, placements, reasons, plans_running(catalog))
    place_entry_rollouts(entries, rollouts)
    graph = plan_graph(entries, lambda executor: executors[executor].runs_on_controller or not runnable,
                       inventory.sliced)    # with needs; a tasks phase runs in a step of its own: only where it may
    if whole_rollouts:
        refuse_cut_rollouts(entries, reasons, only, skip, start_at)
    return Plan(name=plan.name if plan else None, description=plan.description if plan else "", phases=entries,
                warnings=warnings, graph=graph)


def place_entries(entries: list, placements: dict, reasons: dict, running: dict[str, list[str]]) -> None:
    """Each run entry's hosts, why it does not run (None: it runs), and the plans that run its phase."""
    for planned in entries:
        planned.placement = placements[planned.phase.full_name]
        planned.reason = reasons[planned.name]
        planned.in_plans = running.get(planned.phase.full_name, [])


def plans_running(catalog: Catalog) -> dict[str, list[str]]:
    """Full name -> the names of the documents' plans that run that phase. Plans that share a phase share what
    it applies: one is not refused the ApplySet another took through it (``kube.ownership``)."""
    found: dict[str, set] = {}
    for plan in catalog.plans:
        for phase, _entry in plan_phases(catalog, plan, Problems()):   # another plan's problems are not ours
            found.setdefault(phase.full_name, set()).add(plan.name)
    return {name: sorted(plans) for name, plans in found.items()}


def run_list(ordered: list[tuple[Phase, int]], numbered: bool = True) -> list[PlannedPhase]:
    """The run list's entries: a phase that runs several times gets ``#<k>`` on each of its entries (and its
    entries' parents and children are those of the same plan entry)."""
    runs: dict[str, int] = {}
    for phase, _entry in ordered:
        runs[phase.full_name] = runs.get(phase.full_name, 0) + 1
    seen: dict[str, int] = {}
    entries, by_entry = [], {}
    for phase, entry in ordered:
        seen[phase.full_name] = seen.get(phase.full_name, 0) + 1
        occurrence = seen[phase.full_name] if runs[phase.full_name] > 1 else None
        planned = PlannedPhase(phase, Placement(), name=entry_name(phase.full_name, occurrence),
                               entry=entry + 1 if numbered else None, occurrence=occurrence)
        parent = by_entry.get((entry, phase.parent))
        if parent is not None:
            planned.parent_name = parent.name
            parent.children_names.append(planned.name)
        by_entry[(entry, phase.full_name)] = planned
        entries.append(planned)
    return entries


def place_entry_rollouts(entries: list[PlannedPhase], rollouts: dict[str, RolloutOf]) -> None:
    """Each entry's rollout, named after the entry of the rollout's own phase in the same plan entry: a rollout
    phase that the plan runs twice is two rollouts, each run at its position (``place_rollouts`` works on
    phases, by full name)."""
    by_name = {planned.name: planned for planned in entries}
    for planned in entries:
        rollout = rollouts.get(planned.phase.full_name)
        if rollout is None:
            continue
        root = planned
        while root.phase.full_name != rollout.phase and root.parent_name in by_name:
            root = by_name[root.parent_name]
        planned.rollout = replace(rollout, phase=root.name) if root.name != rollout.phase else rollout


def refuse_cut_rollouts(entries: list[PlannedPhase], reasons: dict, only, skip, start_at: str | None) -> None:
    """Raise naming every rollout the selection runs only part of (group phases, which do nothing, aside)."""
    members: dict[str, list[str]] = {}
    for planned in entries:
        if planned.rollout is not None and planned.phase.executor is not None:
            members.setdefault(planned.rollout.phase, []).append(planned.name)
    problems = Problems()
    problems.extend(rollout_cut_message(cut, only, skip, start_at) for cut in cut_rollouts(members, reasons))
    problems.raise_if_any("the selection")


def other_problems(catalog: Catalog, plan: PhasePlan | None, planned: list[Phase],
                   executors: dict[str, Executor]) -> list[str]:
    """validate: the problems of every phase and plan the chosen plan does not run, each naming where it is."""
    in_plan = {id(phase) for phase in planned}
    others = [phase for phase in catalog.walk() if id(phase) not in in_plan]
    check_phases(others, executors)
    found = Problems()
    for phase in others:
        found.extend(phase.problems.messages)
    for other in catalog.plans:
        if other is not plan:
            found.extend(other.problems.messages)
    planned_messages = {message for phase in planned for message in phase.problems.messages}
    outside = f" (not in plan {plan.name})" if plan is not None else ""
    return [f"{message}{outside}" for message in found.messages if message not in planned_messages]


def read_catalog(documents: list[RawDocument], problems: Problems, target_path: str | None = None) -> Catalog:
    """Every phase and plan of the documents: the collection's own, then those of the documents the registered
    readers of other formats claim (``planning/formats.py``)."""
    claimed = []
    for reader in document_readers():
        taken = reader.claim(documents, problems, target_path)
        documents = taken.rest
        claimed.append(taken)
    catalog = parse_documents(documents, problems)
    for taken in claimed:
        for item in taken.read():
            catalog.add(item, problems)
    return catalog


def choose_plan(catalog: Catalog, name: str | None, problems: Problems) -> PhasePlan | None:
    """The named plan; without a name the only plan, or every phase in document order when there is none."""
    names = [plan.name for plan in catalog.plans]
    if name:
        plan = catalog.plan(name)
        if plan is None:
            defined = f"plans defined: {', '.join(names)}" if names else "the documents define no PhasePlan"
            problems.add(f"plan {name}", f"not found{did_you_mean(name, names)}; {defined}")
        return plan
    if len(catalog.plans) > 1:
        problems.add("plan", f"several plans are defined ({', '.join(names)}): choose one by name")
        return None
    return catalog.plans[0] if catalog.plans else None
