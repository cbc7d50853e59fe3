# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""What the fields of phases and plans mean: executors, sources, options, plans, clusters.

``check_phases`` needs no inventory and checks the phases it is given (a
plan's, or with validate every phase of the documents), each problem kept
with its phase; ``plan_phases`` resolves a plan's entries; ``place_phases``
maps the phases of the chosen plan to inventory hosts. Every problem names the
file, the document and the field, and all are reported together.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field

from ansible_collections.phasekit.kube.plugins.module_utils.executors.registry import kind_of, source_executor
from ansible_collections.phasekit.kube.plugins.module_utils.planning.command import PARENT_HOST
from ansible_collections.phasekit.kube.plugins.module_utils.planning.executors import (
    SOURCE_NONE,
    SOURCE_REQUIRED,
    Executor,
)
from ansible_collections.phasekit.kube.plugins.module_utils.planning.inventory import Inventory
from ansible_collections.phasekit.kube.plugins.module_utils.planning.model import Catalog, Phase, PhasePlan
from ansible_collections.phasekit.kube.plugins.module_utils.planning.outputs import SOURCE_WORDS
from ansible_collections.phasekit.kube.plugins.module_utils.planning.problems import Problems, did_you_mean, type_name
from ansible_collections.phasekit.kube.plugins.module_utils.planning.rollout import Rollout, RolloutOf
from ansible_collections.phasekit.kube.plugins.module_utils.templating import is_template_text


@dataclass
class Placement:
    """Where a phase runs: the hosts of its cluster, and the hosts its executor runs on."""

    cluster_hosts: list[str] = field(default_factory=list)
    hosts: list[str] = field(default_factory=list)
    parents: dict[str, str] = field(default_factory=dict)   # kubeconfig executor: child host -> parent host


def check_phases(phases, executors: dict[str, Executor]):
    """Check executor, source and options of each phase (each once); resolve sources and path options in place.

    Every problem is added to the phase's own (``Phase.problems``): it fails only a plan that runs the phase.
    """
    checked: set[int] = set()
    for phase in phases:
        if id(phase) in checked:
            continue
        checked.add(id(phase))
        _check_phase(phase, executors, phase.problems)


def _check_phase(phase: Phase, executors: dict[str, Executor], problems: Problems):
    if phase.not_runnable is not None:
        return                      # listed as it is; refused when it would run (see ``refuse_not_runnable``)
    if phase.executor is None:
        _check_group(phase, executors, problems)
        return
    executor = executors.get(phase.executor)
    if executor is None:
        problems.add(phase.where("executor"),
                     f"unknown executor {phase.executor!r}{did_you_mean(phase.executor, executors)}; "
                     f"expected one of {', '.join(sorted(executors))}")
        return
    _check_source(phase, executor, problems)
    if phase.outputs and not executor.runs_on_controller:
        problems.add(phase.where("outputs"), f"executor {executor.name} runs a task file on each host: its outputs "
                                             f"cannot be read; declare them on a phase that runs on the controller")
    deleting = [key for key in ("state", "release_state") if (phase.options or {}).get(key) == "absent"]
    if phase.outputs and deleting:
        problems.add(phase.where("outputs"), f"the phase deletes what it names ({deleting[0]}: absent): there is "
                                             "nothing left to read outputs from; declare them on the phase that "
                                             "creates it")
    for output in phase.outputs:
        wanted = source_executor(output.source)
        if wanted is not None and executor.name != wanted:
            problems.add(phase.where(f"outputs.{output.name}.from"),
                         f"executor {executor.name} has no {SOURCE_WORDS[output.source]} to read; from: "
                         f"{output.source} is for {wanted} phases")
    if phase.retry_fields_set and not executor.runs_on_controller:
        problems.add(phase.where(phase.retry_fields_set[0]),
                     f"executor {executor.name} runs a task file on each host: retry its tasks with Ansible's "
                     "retries/until and bound them with the task keyword timeout instead")
    given = phase.options
    if executor.source_option and phase.source_path:
        if executor.source_option in (phase.options or {}):
            problems.add(phase.where("source"), f"give the chart either as source or as options."
                                                f"{executor.source_option}, not both")
        given = {**(phase.options or {}), executor.source_option: phase.source_path}
    options, errors = executor.check_options(given, phase.base_dir)
    for error in errors:
        problems.add(phase.where("options"), f"{error} (executor {executor.name})")
    phase.options = options
    phase.requires = tuple(dict.fromkeys((*phase.requires, *executor.programs)))


def _check_group(phase: Phase, executors: dict[str, Executor], problems: Problems):
    if not phase.children:
        problems.add(phase.where("executor"),
                     f"missing: a phase without child phases needs an executor (one of {', '.join(sorted(executors))})")
    for key, value in (("source", phase.source), ("options", phase.options), ("outputs", phase.outputs),
                       *((name, True) for name in phase.retry_fields_set)):
        if value:
            problems.add(phase.where(key), f"a group phase (no executor) takes no {key}; set an executor or "
                                           f"move the {key} to a child phase")


def _check_source(phase: Phase, executor: Executor, problems: Problems):
    source = phase.source
    if source is None:
        if executor.source == SOURCE_REQUIRED:
            wanted = kind_of(executor.name).source_wanted
            problems.add(phase.where("source"), f"missing: executor {executor.name} needs a source ({wanted})")
        return
    if executor.source == SOURCE_NONE:
        problems.add(phase.where("source"), f"executor {executor.name} takes no source")
        return
    if isinstance(source, (list, dict)):
        if not executor.inline_source:
            problems.add(phase.where("source"), f"executor {executor.name} needs a path, got {type_name(source)}")
        return
    if not isinstance(source, str) or not source:
        problems.add(phase.where("source"), f"expected a path or inline objects, got {type_name(source)}")
        return
    path = source if os.path.isabs(source) else os.path.normpath(os.path.join(phase.base_dir, source))
    if not os.path.exists(path):
        problems.add(phase.where("source"), f"{source} not found (looked for {path})")
    elif kind_of(executor.name).source_is_file and not os.path.isfile(path):
        problems.add(phase.where("source"), f"{source} is not a task file ({path})")
    phase.source_path = path


def plan_phases(catalog: Catalog, plan: PhasePlan | None, problems: Problems) -> list[tuple[Phase, int]]:
    """The phases a plan runs, in order, each with the position of the plan entry that brought it in (an entry
    brings its descendants; a phase named again runs again); all phases, in document order, without a plan."""
    if plan is None:
        return [(phase, position) for position, top in enumerate(catalog.phases) for phase in top.walk()]
    known = catalog.by_full_name()
    ordered: list[tuple[Phase, int]] = []
    for position, entry in enumerate(plan.phases):
        root = known.get(entry)
        if root is None:
            problems.add(plan.entry_where(position),
                         f"plan {plan.name} names phase {entry!r}, which is not defined{did_you_mean(entry, known)}")
            continue
        ordered.extend((phase, position) for phase in root.walk())
    return ordered


def refuse_not_runnable(phases: list[Phase], problems: Problems, which=shutil.which):
    """A problem for each phase that cannot run here: validate and run refuse them, list and tree show them.

    So is a phase whose program (``Phase.requires``; a tuple of programs: any one of them) is not on the
    controller's PATH (``which``: program -> its path or None).
    """
    for phase in _once(phases):
        if phase.not_runnable is not None:
            problems.add(phase.where("executor"), phase.not_runnable)
            continue
        for program in phase.requires:
            choices = program if isinstance(program, tuple) else (program,)   # a tuple: any one of them
            if all(which(choice) is None for choice in choices):
                named = " or ".join(choices)
                missing = f"runs {named}, which is not" if len(choices) == 1 else f"needs {named}, neither of which is"
                problems.add(phase.where("executor"),
                             f"phase {phase.full_name} {missing} on the controller's PATH: install {named} where "
                             f"ansible-playbook runs (or add its directory to PATH), or leave the phase out with "
                             f"plan_skip")


def _once(phases):
    """Each phase once, in order (a plan may run a phase several times)."""
    seen: set[int] = set()
    for phase in phases:
        if id(phase) not in seen:
            seen.add(id(phase))
            yield phase


def place_phases(phases: list[Phase], inventory: Inventory, problems: Problems) -> dict[str, Placement]:
    """Map each phase (by full name) to inventory hosts; a cluster must be a host or a group with hosts."""
    placements = {}
    for phase in _once(phases):
        placement = Placement()
        placements[phase.full_name] = placement
        if phase.cluster is None:
            if phase.executor is not None and phase.not_runnable is None:
                problems.add(phase.where("cluster"), "missing: name the inventory host or group this phase runs "
                                                     "on (here or on a parent phase)")
            continue
        hosts = cluster_hosts_of(phase.cluster, phase.cluster_path, inventory, problems)
        placement.cluster_hosts = placement.hosts = hosts
        if kind_of(phase.executor).placed_by_host_option and hosts and isinstance(phase.options.get("host"), str):
            _place_kubeconfig(phase, placement, inventory, problems)
        elif phase.executor is None:
            placement.hosts = []            # a group phase runs nothing itself
    return placements


def cluster_hosts_of(name: str, where: str, inventory: Inventory, problems: Problems) -> list[str]:
    hosts = inventory.hosts_for(name)
    if inventory.sliced and not hosts:
        return []     # on other slices only: the slices check together that some slice has it (run_meeting)
    if hosts is None:
        problems.add(where, f"{name!r} is neither a host nor a group in the inventory{did_you_mean(name, inventory.names())}")
        return []
    if not hosts:
        problems.add(where, f"inventory group {name!r} has no hosts")
    return hosts


def _place_kubeconfig(phase: Phase, placement: Placement, inventory: Inventory, problems: Problems):
    """The kubeconfig executor runs on the child hosts; each reads its Secret from one parent in the cluster."""
    where = phase.where("options.host")
    children = cluster_hosts_of(phase.options["host"], where, inventory, problems)
    placement.hosts = children
    for child in children:
        if not inventory.has_kubeconfig(child):
            # Without it, a later run that starts after this phase would silently use kubectl's default.
            problems.add(where, f"host {child} has no kube_kubeconfig; set it to the Secret this phase waits for, "
                                f"for example {{secret: {{name: {child}-kubeconfig}}}} with kube_parent")
            continue
        declared = inventory.parent_of(child)
        if declared is not None:
            if declared not in placement.cluster_hosts:
                problems.add(where, f"host {child} has kube_parent {declared}, which is not in this phase's "
                                    f"cluster {phase.cluster} ({', '.join(placement.cluster_hosts)})")
                continue
            placement.parents[child] = declared
        elif len(placement.cluster_hosts) == 1:
            placement.parents[child] = placement.cluster_hosts[0]
        else:
            problems.add(where, f"host {child} has no kube_parent and cluster {phase.cluster} has several hosts; "
                                f"set kube_parent for {child}")


def check_other_kubeconfigs(phases: list[Phase], placements: dict[str, Placement], inventory: Inventory,
                            problems: Problems):
    """The other kubeconfigs of command phases to be validated or run: each entry of ``kubeconfigs`` names one
    inventory host, or (``{{ kube_parent }}``) each host of the phase has a parent in the inventory."""
    for phase in _once(phases):
        kubeconfigs = kind_of(phase.executor).other_kubeconfigs(phase.options)
        if isinstance(kubeconfigs, dict):
            _check_other_kubeconfigs(phase, kubeconfigs, placements[phase.full_name].hosts, inventory, problems)


def _check_other_kubeconfigs(phase: Phase, kubeconfigs: dict, hosts: list[str], inventory: Inventory,
                             problems: Problems):
    where = phase.where("options")
    for variable, name in kubeconfigs.items():
        if name == PARENT_HOST:
            for host in hosts:
                parent = inventory.parent_of(host)
                if parent is None:
                    problems.add(where, f"kubeconfigs.{variable} is the kubeconfig of the host's kube_parent, and "
                                        f"host {host} has none: set kube_parent on {host} (the cluster it was "
                                        f"created from)")
                elif inventory.hosts_for(parent) != [parent]:
                    problems.add(where, f"kubeconfigs.{variable}: host {host} has kube_parent {parent}, which is "
                                        f"not a host of the inventory{did_you_mean(parent, inventory.hosts)}")
        elif isinstance(name, str) and not is_template_text(name) and inventory.hosts_for(name) != [name]:
            problems.add(where, f"kubeconfigs.{variable}: {name!r} is not a host of the inventory (a group "
                                f"has no one kubeconfig){did_you_mean(name, inventory.hosts)}")


def place_rollouts(phases: list[Phase], placements: dict[str, Placement], default: Rollout | None,
                   problems: Problems) -> dict[str, RolloutOf]:
    """The rollout each phase of the plan runs under (full name -> its ``RolloutOf``), if any.

    A phase's own ``rollout`` governs its whole subtree; its clusters are the phase's cluster hosts, and every
    phase under it must run on them (a phase elsewhere would be left out of the batches), run on the controller
    (a ``tasks`` phase's task file runs per host, outside the batches) and have no rollout of its own. The
    default (``plan_rollout``) governs the largest subtrees that have no rollout of their own and could have one.
    """
    in_plan = {phase.full_name: phase for phase in phases}
    governed: dict[str, RolloutOf] = {}
    for phase in phases:
        owner = governed.get(phase.parent) if phase.parent else None
        if phase.rollout is not None:
            if owner is not None:
                problems.add(phase.where("rollout"), f"phase {phase.full_name} is inside the rollout of phase "
                                                     f"{owner.phase}: a rollout cannot hold another; remove one")
                governed[phase.full_name] = owner
                continue
            if not placements[phase.full_name].cluster_hosts:
                problems.add(phase.where("rollout"), "a rollout splits the phase's cluster into batches: set "
                                                     "spec.cluster on this phase")
            owner = RolloutOf(phase.full_name, phase.rollout, list(placements[phase.full_name].cluster_hosts))
        if owner is not None:
            governed[phase.full_name] = owner
            problem = _outside_rollout(phase, placements[phase.full_name], owner)
            if problem:
                problems.add(phase.where("cluster" if kind_of(phase.executor).runs_on_controller else "executor"), problem)
    if default is not None:
        for phase in phases:
            if phase.parent not in in_plan:
                _default_rollout(phase, in_plan, placements, default, governed)
    return governed


def _outside_rollout(phase: Phase, placement: Placement, owner: RolloutOf) -> str | None:
    if not kind_of(phase.executor).runs_on_controller:
        return (f"phase {phase.full_name} is a tasks phase inside the rollout of phase {owner.phase}: its task file "
                f"runs on each host outside the rollout's batches; move it out of the rollout, or make it a "
                f"command phase")
    clusters = set(owner.clusters)
    outside = [host for host in placement.hosts if host not in clusters]
    if outside:
        return (f"phase {phase.full_name} runs on {', '.join(outside[:5])}"
                f"{f' and {len(outside) - 5} more' if len(outside) > 5 else ''}, outside the clusters of the "
                f"rollout of phase {owner.phase}: a phase inside a rollout runs on (some of) the rollout's clusters")
    return None


def _default_rollout(phase: Phase, in_plan: dict, placements: dict, default: Rollout, governed: dict) -> None:
    """``plan_rollout`` for ``phase``'s subtree when nothing in it has a rollout and it can have one; else for
    its children, each in turn."""
    subtree = [one for one in phase.walk() if one.full_name in in_plan]
    clusters = placements[phase.full_name].cluster_hosts
    if all(one.full_name not in governed for one in subtree) and clusters:
        owner = RolloutOf(phase.full_name, default, list(clusters), default=True)
        if not any(_outside_rollout(one, placements[one.full_name], owner) for one in subtree):
            for one in subtree:
                governed[one.full_name] = owner
            return
    for child in phase.children:
        if child.full_name in in_plan and child.full_name not in governed:
            _default_rollout(child, in_plan, placements, default, governed)
