# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""From documents to the ordered run list: parse, validate, choose the plan, place, select.

This is the one path every plan takes; it reads no kubeconfig and contacts no
cluster, so ``list``, ``tree``, ``render`` and offline ``validate`` stop here.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kube.diff import redact
from ansible_collections.phasekit.kube.plugins.module_utils.phases.documents import RawDocument
from ansible_collections.phasekit.kube.plugins.module_utils.phases.executors import Executor
from ansible_collections.phasekit.kube.plugins.module_utils.phases.formats import document_readers
from ansible_collections.phasekit.kube.plugins.module_utils.phases.graph import refuse_graph_plans
from ansible_collections.phasekit.kube.plugins.module_utils.phases.inventory import Inventory
from ansible_collections.phasekit.kube.plugins.module_utils.phases.model import Catalog, Phase, PhasePlan, parse_documents
from ansible_collections.phasekit.kube.plugins.module_utils.phases.outputs import check_output_uses
from ansible_collections.phasekit.kube.plugins.module_utils.phases.problems import Problems, did_you_mean
from ansible_collections.phasekit.kube.plugins.module_utils.phases.rollout import RolloutOf, parse_rollout
from ansible_collections.phasekit.kube.plugins.module_utils.phases.selection import (
    Step,
    cut_rollouts,
    entry_name,
    rollout_cut_message,
    select_phases,
)
from ansible_collections.phasekit.kube.plugins.module_utils.phases.validation import (
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

    def to_dict(self, shown: dict[str, Executor] | None = None) -> dict:
        """The phase as the actions use it; with ``shown`` (the executors) as a result may show it: inline
        Secret objects and secret options (see ``Executor.shown_options``) hidden."""
        phase = self.phase
        source = phase.source_path if phase.source_path is not None else phase.source
        options = phase.options
        if shown is not None:
            source = shown_source(source)
            executor = shown.get(phase.executor)
            options = executor.shown_options(options) if executor is not None else options
        return {
            "name": self.name,
            "full_name": phase.full_name,
            "short_name": phase.name,
            "entry": self.entry,
            "occurrence": self.occurrence,
            "parent": self.parent_name,
            "level": phase.level,
            "children": list(self.children_names),
            "description": phase.description,
            "cluster": phase.cluster,
            "hosts": list(self.placement.hosts),
            "cluster_hosts": list(self.placement.cluster_hosts),
            "parents": dict(self.placement.parents),
            "executor": phase.executor,
            "source": source,
            "options": options,
            "retries": phase.retries,
            "delay": phase.delay,
            "timeout": phase.timeout,
            "origin": phase.origin.label(),
            "selected": self.selected,
            "reason": self.reason,
            "rollout": self.rollout.to_dict() if self.rollout is not None else None,
            "outputs": {output.name: output.to_dict() for output in phase.outputs},
            "in_plans": list(self.in_plans),
        }


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
    ``target_path``: where the entry points of another format's documents start (see ``phases/formats.py``).
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
    running = plans_running(catalog)
    for planned in entries:
        planned.placement = placements[planned.phase.full_name]
        planned.reason = reasons[planned.name]
        planned.in_plans = running.get(planned.phase.full_name, [])
    place_entry_rollouts(entries, rollouts)
    refuse_graph_plans(entries)     # checked, not run yet: the runner runs plans as lines (issue #41)
    if whole_rollouts:
        refuse_cut_rollouts(entries, reasons, only, skip, start_at)
    return Plan(name=plan.name if plan else None, description=plan.description if plan else "", phases=entries,
                warnings=warnings)


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
    readers of other formats claim (``phases/formats.py``)."""
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
