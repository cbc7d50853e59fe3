# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Plans as graphs (issue #41): the ``needs`` contract, the plan graph built once, and its checks.

A phase's ``spec.needs`` lists the phases that must have ended before it starts. Each entry is a full
name (shorthand) or a mapping ``{phase: <full name>, wait: same-cluster | all-clusters}``:

- ``all-clusters`` (the shorthand's meaning): the phase starts on any of its clusters once the needed
  phase has ended on all of the needed phase's clusters (today's barrier, on one edge);
- ``same-cluster``: the phase starts on cluster C as soon as the needed phase ended on C (a pipeline per
  cluster); the needed phase must run on every cluster of the phase that needs it.

The graph's nodes are the run list's entries that run something (group phases run nothing; a rollout's
subtree is one node: the runner runs it batch by batch, and each cluster it finished is released to the
phases that need it on that cluster). A plan where no phase has ``needs`` is a line: each node needs the
one before on all clusters, exactly today's order. A plan where any phase has ``needs`` runs by the graph:
a plan entry's first node waits for what the entry's phase needs and nothing else; the phases an entry
brings (its descendants) run one after another as today.

Rules checked before anything runs (every problem names the file, document and field):
an unknown need, a need on a nested phase that is not what a plan entry names, a ``same-cluster`` need on
a phase that does not run on all the dependent's clusters, a cycle (with its path ``a -> b -> a``), and a
need on a phase that ``only`` or ``skip`` removed. A need on a phase before ``start_at`` is satisfied:
``start_at`` means the earlier phases already ran, as it does for a line.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from ansible_collections.phasekit.kube.plugins.module_utils.planning.entry_names import BEFORE_START_AT, OCCURRENCE
from ansible_collections.phasekit.kube.plugins.module_utils.planning.problems import (
    Problems,
    did_you_mean,
    given_as,
    type_name,
)

SAME_CLUSTER = "same-cluster"
ALL_CLUSTERS = "all-clusters"
WAITS = (SAME_CLUSTER, ALL_CLUSTERS)
DEFAULT_WAIT = ALL_CLUSTERS     # a need written as a plain name waits for all the needed phase's clusters
NEED_FIELDS = ("phase", "wait")
TASKS_IN_GRAPH = ("a tasks phase runs per host in a step of its own, which a plan run as a graph cannot place "
                  "yet: remove spec.needs (the plan then runs as a line), or run the task file's work with a "
                  "controller executor (command, apply, wait)")


@dataclass(frozen=True)
class Need:
    """One entry of ``spec.needs``: the needed phase (full name, or ``name#k`` for one run) and how to wait."""

    phase: str
    wait: str = DEFAULT_WAIT
    where: str = ""          # the entry's place in its document, for messages


def parse_needs(value, at, problems: Problems) -> tuple:
    """``spec.needs`` as ``Need``s; ``at(suffix)`` gives the place of ``needs<suffix>`` in the document."""
    if not given_as(value, list, at(""), problems, "a list of phase names or {phase, wait} mappings"):
        return ()
    needs = []
    for position, item in enumerate(value):
        where = at(f"[{position}]")
        if isinstance(item, str) and item:
            needs.append(Need(item, DEFAULT_WAIT, where))
            continue
        if not isinstance(item, dict):
            problems.add(where, f"expected a phase name or a mapping {{phase: <full name>, wait: "
                                f"{' | '.join(WAITS)}}}, got {type_name(item)}")
            continue
        for key in item:
            if key not in NEED_FIELDS:
                # YAML 1.1 reads an unquoted key "on" as true: say which key was meant
                problems.add(at(f"[{position}].{key}"),
                             f"unknown field{did_you_mean(key, NEED_FIELDS)}; expected one of {', '.join(NEED_FIELDS)}")
        phase, wait = item.get("phase"), item.get("wait", DEFAULT_WAIT)
        if not isinstance(phase, str) or not phase:
            problems.add(at(f"[{position}].phase"), f"expected a phase's full name, got {type_name(phase)}")
            continue
        if wait not in WAITS:
            problems.add(at(f"[{position}].wait"), f"expected {' or '.join(WAITS)}, got {wait!r}")
            continue
        needs.append(Need(phase, wait, where))
    return tuple(needs)


@dataclass(frozen=True)
class GraphEntry:
    """A run list entry as the graph reads it (built from the planner's ``PlannedPhase``, see ``graph_entries``)."""

    name: str                       # unique in the run list (``full name`` or ``full name#k``)
    full_name: str
    entry: int                      # the plan entry that brought it (its descendants share it)
    hosts: tuple = ()               # where it runs; none: a group phase, which runs nothing itself
    needs: tuple = ()               # its phase's ``Need``s
    root: bool = True               # it is what its plan entry names (not a descendant the entry brought)
    rollout: str | None = None      # the entry name of the rollout it runs under, if any
    reason: str | None = None       # why the selection leaves it out (None: it runs)
    where: str = ""                 # its phase's place, for messages
    runs: bool = True               # it has an executor (hosts or none: a slice's share may have none of them)


def graph_entries(planned_phases) -> list[GraphEntry]:
    """The planner's run list (``PlannedPhase``s with their reasons set) as ``GraphEntry``s."""
    entries, position = [], 0
    for planned in planned_phases:
        root = planned.parent_name is None
        position += root    # without a plan, each top-level phase is an entry of its own
        entries.append(GraphEntry(name=planned.name, full_name=planned.phase.full_name,
                                  entry=planned.entry or position, hosts=tuple(planned.placement.hosts),
                                  needs=tuple(planned.phase.needs), root=root, reason=planned.reason,
                                  rollout=planned.rollout.phase if planned.rollout is not None else None,
                                  where=planned.phase.where("needs"), runs=bool(planned.phase.executor)))
    return entries


@dataclass(frozen=True)
class Edge:
    need: str        # node name
    wait: str        # SAME_CLUSTER or ALL_CLUSTERS


@dataclass
class Node:
    """What the scheduler hands out: a run list entry (or a rollout's whole subtree) on its hosts."""

    name: str
    hosts: tuple
    members: tuple                  # the run list entries it runs, in order (more than one: a rollout)
    rollout: bool = False
    needs: list = field(default_factory=list)     # ``Edge``s


@dataclass
class PlanGraph:
    """The selected entries as a graph: nodes in plan order, and a deterministic topological order."""

    nodes: dict                     # name -> Node, in plan order
    order: list                     # topological: plan order wherever the edges allow
    is_line: bool                   # no phase has needs: each node needs the one before on all clusters

    def destroy_order(self) -> list:
        """Teardown removes dependents before what they need: the reverse of the graph's order."""
        return list(reversed(self.order))


def has_needs(entries) -> bool:
    return any(entry.needs for entry in entries)


def plan_graph(planned_phases, runs_on_controller, sliced: bool = False) -> PlanGraph | None:
    """The graph a plan with ``needs`` runs by (None: no phase has needs, the plan is a line and runs as one);
    every problem of its graph is raised at once, naming where it is written. ``runs_on_controller(executor)``: a
    graph plan with a phase that runs per host in a step of its own (``tasks``) is refused. ``sliced``: a slice of
    a sliced run, whose graph keeps the phases with none of their clusters here (every slice has the same nodes,
    and meets the others at each)."""
    entries = graph_entries(planned_phases)
    if not has_needs(entries):
        return None
    problems = Problems()
    graph = build_graph(entries, problems, sliced)
    for planned in planned_phases:
        if planned.reason is None and planned.phase.executor and not runs_on_controller(planned.phase.executor):
            problems.add(planned.phase.where("executor"), f"phase {planned.name}: {TASKS_IN_GRAPH}")
    problems.raise_if_any()
    return graph


def build_graph(entries: list[GraphEntry], problems: Problems, sliced: bool = False) -> PlanGraph:
    """The graph of the selected entries; every problem of its ``needs`` is added to ``problems``."""
    is_line = not has_needs(entries)
    nodes = _nodes(entries, sliced)
    if is_line:
        previous = None
        for node in nodes.values():
            if previous is not None:
                node.needs.append(Edge(previous, ALL_CLUSTERS))
            previous = node.name
        return PlanGraph(nodes, list(nodes), True)
    node_of = _node_of(nodes)
    _link(entries, nodes, node_of, problems)
    order = _order(nodes, entries, problems)
    return PlanGraph(nodes, order, False)


def _nodes(entries: list[GraphEntry], sliced: bool = False) -> dict:
    """Selected entries that run something, a rollout's subtree folded into one node named after the rollout
    (``sliced``: also those with an executor and no cluster in this slice)."""
    nodes: dict = {}
    for entry in entries:
        if entry.reason is not None or not (entry.hosts or (sliced and entry.runs)):
            continue
        if entry.rollout is not None:
            node = nodes.get(entry.rollout)
            if node is None:
                nodes[entry.rollout] = Node(entry.rollout, entry.hosts, (entry.name,), rollout=True)
            else:
                node.members += (entry.name,)
                node.hosts = tuple(dict.fromkeys(node.hosts + entry.hosts))
            continue
        nodes[entry.name] = Node(entry.name, entry.hosts, (entry.name,))
    return nodes


def _node_of(nodes: dict) -> dict:
    """Entry name -> the node that runs it (absent: it runs nothing, or is not selected)."""
    found = {}
    for node in nodes.values():
        for member in node.members:
            found[member] = node.name
    return found


def _link(entries: list[GraphEntry], nodes: dict, node_of: dict, problems: Problems) -> None:
    """Edges: within a plan entry, each node after the one before (all clusters, as today); an entry's first
    node after the nodes its phase needs."""
    by_entry: dict = {}
    for entry in entries:
        by_entry.setdefault(entry.entry, []).append(entry)
    for entry in entries:
        if entry.needs and not entry.root:
            problems.add(entry.where, f"phase {entry.full_name} is run as part of a plan entry that names an "
                                      f"ancestor of it: needs are read on the phase a plan entry names; move "
                                      f"them there, or name {entry.full_name} in the plan")
    for members in by_entry.values():
        chain = list(dict.fromkeys(node_of[member.name] for member in members if member.name in node_of))
        for before, after in zip(chain, chain[1:]):
            nodes[after].needs.append(Edge(before, ALL_CLUSTERS))
        root = members[0]
        if not chain or not root.root:
            continue
        first = nodes[chain[0]]
        for need in root.needs:
            for needed in _needed_nodes(need, root, entries, node_of, problems):
                if need.wait == SAME_CLUSTER:
                    needed_hosts = set(nodes[needed].hosts)
                    missing = [host for host in first.hosts if host not in needed_hosts]
                    if missing:
                        problems.add(need.where, f"phase {root.full_name} waits for {need.phase} on the same "
                                                 f"cluster, but {need.phase} does not run on "
                                                 f"{_listed(missing)}: use wait: {ALL_CLUSTERS}, or run "
                                                 f"{need.phase} on those clusters too")
                        continue
                first.needs.append(Edge(needed, need.wait))


def _needed_nodes(need: Need, dependent: GraphEntry, entries: list[GraphEntry], node_of: dict,
                  problems: Problems) -> list:
    """The nodes a need waits for: every run of the needed phase and of its descendants (``name#k``: that run)."""
    full_name, _sep, occurrence = need.phase.partition(OCCURRENCE)
    matched = [entry for entry in entries
               if (entry.name == need.phase if occurrence else
                   entry.full_name == full_name or entry.full_name.startswith(full_name + "/"))]
    if occurrence and matched:
        matched = [entry for entry in entries if entry.entry == matched[0].entry
                   and (entry.full_name == full_name or entry.full_name.startswith(full_name + "/"))]
    if not matched:
        known = sorted({entry.full_name for entry in entries} | {entry.name for entry in entries})
        problems.add(need.where, f"phase {dependent.full_name} needs {need.phase!r}, which this plan does not "
                                 f"run{did_you_mean(need.phase, known)}")
        return []
    removed = [entry for entry in matched if entry.reason is not None and entry.reason != BEFORE_START_AT]
    if removed:
        problems.add(need.where, f"phase {dependent.full_name} needs {need.phase}, which the selection leaves "
                                 f"out ({removed[0].name}: {removed[0].reason}): select it too, or leave "
                                 f"{dependent.full_name} out")
        return []
    return list(dict.fromkeys(node_of[entry.name] for entry in matched if entry.name in node_of))


def _order(nodes: dict, entries: list[GraphEntry], problems: Problems) -> list:
    """Kahn's order, plan order breaking ties; a cycle is a problem naming its path and documents."""
    position = {name: index for index, name in enumerate(nodes)}
    dependents: dict = {name: [] for name in nodes}
    waiting = {name: 0 for name in nodes}
    for node in nodes.values():
        for edge in node.needs:
            dependents[edge.need].append(node.name)
            waiting[node.name] += 1
    ready = [position[name] for name, count in waiting.items() if count == 0]
    heapq.heapify(ready)
    names = list(nodes)
    order = []
    while ready:
        name = names[heapq.heappop(ready)]
        order.append(name)
        for dependent in dependents[name]:
            waiting[dependent] -= 1
            if waiting[dependent] == 0:
                heapq.heappush(ready, position[dependent])
    if len(order) < len(nodes):
        cycle = _a_cycle(nodes, {name for name, count in waiting.items() if count})
        where = {entry.name: entry.where for entry in entries}
        documents = list(dict.fromkeys(where[nodes[name].members[0]] for name in cycle[:-1]))
        problems.add(documents[0], f"the phases' needs make a cycle: {' -> '.join(cycle)} (needs in "
                                   f"{'; '.join(documents)}); a phase cannot wait for itself: remove one need")
    return order


def _a_cycle(nodes: dict, stuck: set) -> list:
    """One cycle among the nodes left waiting, as a path that ends where it starts, in the direction of needs
    reversed: ``a -> b`` reads "a is needed by b"."""
    start = min(stuck, key=list(nodes).index)
    path, seen = [start], {start: 0}
    current = start
    while True:
        current = next(edge.need for edge in nodes[current].needs if edge.need in stuck)
        if current in seen:
            cycle = path[seen[current]:] + [current]
            return list(reversed(cycle))
        seen[current] = len(path)
        path.append(current)


def _listed(hosts: list, shown: int = 5) -> str:
    return ", ".join(hosts[:shown]) + (f" and {len(hosts) - shown} more" if len(hosts) > shown else "")
