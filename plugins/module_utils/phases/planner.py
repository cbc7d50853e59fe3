# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""From documents to the ordered run list: parse, validate, choose the plan, place, select.

This is the one path every plan takes; it reads no kubeconfig and contacts no
cluster, so ``list``, ``tree``, ``render`` and offline ``validate`` stop here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kube.diff import redact
from ansible_collections.phasekit.kube.plugins.module_utils.phases.airship import (
    read_airship_documents,
    split_airship_documents,
)
from ansible_collections.phasekit.kube.plugins.module_utils.phases.documents import RawDocument
from ansible_collections.phasekit.kube.plugins.module_utils.phases.executors import Executor
from ansible_collections.phasekit.kube.plugins.module_utils.phases.inventory import Inventory
from ansible_collections.phasekit.kube.plugins.module_utils.phases.model import Catalog, Phase, PhasePlan, parse_documents
from ansible_collections.phasekit.kube.plugins.module_utils.phases.problems import Problems, did_you_mean
from ansible_collections.phasekit.kube.plugins.module_utils.phases.rollout import RolloutOf, parse_rollout
from ansible_collections.phasekit.kube.plugins.module_utils.phases.selection import select_phases
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
    """A phase of the chosen plan, where it runs, and why it does not run (``None``: it runs)."""

    phase: Phase
    placement: Placement
    reason: str | None = None
    rollout: RolloutOf | None = None    # the rollout it runs under (its own, an ancestor's, or plan_rollout)

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
            "name": phase.full_name,
            "short_name": phase.name,
            "parent": phase.parent,
            "level": phase.level,
            "children": [child.full_name for child in phase.children],
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
    """The chosen plan: every phase in run order, each marked as selected or not."""

    name: str | None
    description: str = ""
    phases: list[PlannedPhase] = field(default_factory=list)

    @property
    def selected(self) -> list[PlannedPhase]:
        return [planned for planned in self.phases if planned.selected]


def build_plan(documents: list[RawDocument], *, executors: dict[str, Executor], inventory: Inventory,
               name: str | None = None, only=(), skip=(), start_at: str | None = None,
               target_path: str | None = None, runnable: bool = False, rollout=None) -> Plan:
    """Validate the documents and compute the run list; raises PhasekitError listing every problem.

    ``target_path``: where airshipctl documents' entry points start (see ``airship.read_airship_documents``).
    ``runnable``: the plan is to be validated or run, so a selected phase that cannot run here is a problem.
    ``rollout``: the default rollout (``plan_rollout``) of phases without one of their own.
    """
    if not documents:
        raise PhasekitError("no phase documents: give 'src' (a file or directory) or inline documents")
    problems = Problems()
    default = parse_rollout(rollout or None, lambda name: f"plan_rollout{'.' + name if name else ''}", problems)
    catalog = read_catalog(documents, problems, target_path)
    check_phases(catalog, executors, problems)
    plan = choose_plan(catalog, name, problems)
    if plan is None and (name or catalog.plans):
        problems.raise_if_any()     # no plan to place: stop before reporting on phases it would not run
    phases = plan_phases(catalog, plan, problems)
    placements = place_phases(phases, inventory, problems)
    rollouts = place_rollouts(phases, placements, default, problems)
    problems.raise_if_any()
    reasons = select_phases([phase.full_name for phase in phases], only, skip, start_at)
    if runnable:
        selected = [phase for phase in phases if reasons[phase.full_name] is None]
        refuse_not_runnable(selected, problems)
        check_other_kubeconfigs(selected, placements, inventory, problems)
        problems.raise_if_any()
    return Plan(
        name=plan.name if plan else None,
        description=plan.description if plan else "",
        phases=[PlannedPhase(phase, placements[phase.full_name], reasons[phase.full_name],
                             rollouts.get(phase.full_name)) for phase in phases],
    )


def read_catalog(documents: list[RawDocument], problems: Problems, target_path: str | None = None) -> Catalog:
    """Every phase and plan of the documents, phasekit's own and airshipctl's (``airshipit.org/v1alpha1``)."""
    airship, native = split_airship_documents(documents)
    catalog = parse_documents(native, problems)
    for item in read_airship_documents(airship, problems, target_path=target_path):
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
