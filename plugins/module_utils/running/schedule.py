# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Which (phase, cluster) pairs of a plan graph may start now: a pure, deterministic scheduler (issue #41).

The runner asks ``ready()`` for pairs to start and tells ``ended()`` how each ended; nothing here runs,
sleeps or reads a clock, so every rule is pinned by a table test.

- A ``same-cluster`` edge releases a cluster as soon as that cluster ended the needed node; an
  ``all-clusters`` edge waits for the needed node on all its clusters.
- ``ok`` and ``skipped`` satisfy a need (a skipped phase ended without failing, as in a line);
  ``failed`` does not: the node's dependents never start on that cluster (``same-cluster``) or anywhere
  (``all-clusters``), and so on down the graph.
- After a failure, without ``keep_going`` nothing new starts anywhere (what started finishes: make without
  ``-k``); with it, every pair that does not depend on the failure goes on.
- At most ``phase_concurrency`` nodes run at once and at most ``cluster_concurrency`` pairs (over all
  clusters together, like ``--forks``); a node already running takes more of its clusters without a new
  phase slot. Ties go to the node first in the graph's order, then to its hosts' order.
- A rollout node is handed out once, as ``(node, (host, ...))``, when each of its clusters may start or never
  will (those hosts are the ones to run; a cluster whose need failed is not among them): the runner runs
  its batches itself and reports ``ended(node, host, ...)`` per cluster as each batch ends, so the phases
  that need it on the same cluster start batch by batch while its later batches go on. It takes one phase
  slot and no cluster slots (its batch size bounds it). A failure its failure budget tolerates blocks only that
  cluster's dependents (``tolerated``): the run goes on, as a line goes on after a batch within budget.
"""

from __future__ import annotations

import heapq
import itertools

from ansible_collections.phasekit.kube.plugins.module_utils.planning.graph import SAME_CLUSTER, PlanGraph

OK, FAILED, SKIPPED = "ok", "failed", "skipped"
RESULTS = (OK, FAILED, SKIPPED)
STOPPED = "stopped after a failure ({failure}); plan_keep_going is false"


class Scheduler:
    """The state of one run of a graph: who waits for what, what runs, what ended."""

    def __init__(self, graph: PlanGraph, *, phase_concurrency: int | None = None,
                 cluster_concurrency: int | None = None, keep_going: bool = False):
        self.graph = graph
        self.phase_limit = phase_concurrency or len(graph.nodes) or 1
        self.cluster_limit = cluster_concurrency or float("inf")
        self.keep_going = keep_going
        self.rank = {name: index for index, name in enumerate(graph.order)}
        self.hosts = {name: node.hosts for name, node in graph.nodes.items()}
        self.host_sets = {name: frozenset(node.hosts) for name, node in graph.nodes.items()}
        # dependents per need: (dependent, wait)
        self.dependents: dict = {name: [] for name in graph.nodes}
        # all-clusters needs not yet ended everywhere, and same-cluster needs not yet ended per host
        self.node_waiting = {name: 0 for name in graph.nodes}
        self.host_waiting = {name: dict.fromkeys(node.hosts, 0) for name, node in graph.nodes.items()}
        for node in graph.nodes.values():
            for edge in node.needs:
                self.dependents[edge.need].append((node.name, edge.wait))
                if edge.wait == SAME_CLUSTER:
                    for host in node.hosts:
                        self.host_waiting[node.name][host] += 1
                else:
                    self.node_waiting[node.name] += 1
        self.left = {name: len(node.hosts) for name, node in graph.nodes.items()}   # hosts not ended yet
        self.ready_hosts: dict = {name: [] for name in graph.nodes}     # per node, in host order
        self.queued: list = []            # ranks of nodes with ready hosts (a heap)
        self.running: dict = {}           # node -> pairs running
        self.pairs_running = 0
        self.started: set = set()
        self.results: dict = {}           # (node, host) -> result
        self.blocked: dict = {}           # (node, host) -> why it will never start
        self.blocked_nodes: dict = {}     # node -> why it never starts anywhere
        self.failure: str | None = None   # the first failure, once any
        for name in graph.order:
            if self.node_waiting[name] == 0:
                self._release(name, [host for host, count in self.host_waiting[name].items() if count == 0])

    # -- what the runner calls

    def ready(self) -> list:
        """Pairs to start now, marked started: ``(node, host)``, or ``(node, hosts)`` for a whole rollout."""
        if self.failure is not None and not self.keep_going:
            return []
        handed = []
        skipped_ranks = []
        while self.queued:
            rank = self.queued[0]
            name = self.graph.order[rank]
            waiting = self.ready_hosts[name]
            if not waiting:
                heapq.heappop(self.queued)
                continue
            if name not in self.running and len(self.running) >= self.phase_limit:
                skipped_ranks.append(heapq.heappop(self.queued))   # no phase slot: a later one may run
                continue
            if self.graph.nodes[name].rollout:
                heapq.heappop(self.queued)
                self.ready_hosts[name] = []
                self.running[name] = len(waiting)
                self.started.update((name, host) for host in waiting)
                handed.append((name, tuple(waiting)))
                continue
            room = self.cluster_limit - self.pairs_running
            if room <= 0:
                break
            taken = waiting[:room] if room < len(waiting) else waiting
            self.ready_hosts[name] = waiting[len(taken):]
            self.running[name] = self.running.get(name, 0) + len(taken)
            self.pairs_running += len(taken)
            for host in taken:
                self.started.add((name, host))
                handed.append((name, host))
        for rank in skipped_ranks:
            heapq.heappush(self.queued, rank)
        return handed

    def ended(self, name: str, host: str, result: str, tolerated: bool = False) -> None:
        """``name`` ended on ``host`` with ``result`` (ok, failed or skipped). ``tolerated``: a failure within a
        rollout's failure budget, which blocks what needs the node on that cluster but stops nothing else."""
        if result not in RESULTS:
            raise ValueError(f"result {result!r}: expected one of {', '.join(RESULTS)}")
        self.results[(name, host)] = result
        self.running[name] -= 1
        if not self.graph.nodes[name].rollout:
            self.pairs_running -= 1
        if self.running[name] == 0:
            del self.running[name]
        self.left[name] -= 1
        if result == FAILED:
            if not tolerated:
                self.failure = self.failure or f"phase {name} failed on {host}"
            self._fail(name, host, f"needs {name}, which failed on {host}")
            return
        for dependent, wait in self.dependents[name]:
            if wait == SAME_CLUSTER:
                self._host_done(dependent, host)
        if self.left[name] == 0:
            self._ended_here(name)

    def going_on(self) -> bool:
        """New work may start: nothing failed, or ``keep_going`` (a running rollout asks before each batch)."""
        return self.failure is None or self.keep_going

    def done(self) -> bool:
        """Nothing runs and nothing more can start."""
        if self.running:
            return False
        if self.failure is not None and not self.keep_going:
            return True
        return not any(self.ready_hosts[self.graph.order[rank]] for rank in self.queued)

    def never_started(self, name: str, host: str) -> str | None:
        """Why ``name`` never started on ``host`` (None: it started, or may still start)."""
        if (name, host) in self.started:
            return None
        if (name, host) in self.blocked:
            return self.blocked[(name, host)]
        if name in self.blocked_nodes:
            return self.blocked_nodes[name]
        if self.failure is not None and not self.keep_going:
            return STOPPED.format(failure=self.failure)
        return None

    # -- propagation

    def _release(self, name: str, hosts: list) -> None:
        hosts = [host for host in hosts if (name, host) not in self.blocked]
        if not hosts:
            return
        if self.graph.nodes[name].rollout:
            self.ready_hosts[name].extend(hosts)
            self._queue_whole_rollout(name)
            return
        if not self.ready_hosts[name]:
            heapq.heappush(self.queued, self.rank[name])
        self.ready_hosts[name].extend(hosts)

    def _ended_here(self, name: str) -> None:
        """``name`` ended on all its clusters (the last well): its all-clusters dependents may start (a sliced run
        waits for every slice first: ``SlicedScheduler``)."""
        self._release_all_clusters(name)

    def _release_all_clusters(self, name: str) -> None:
        for dependent, wait in self.dependents[name]:
            if wait != SAME_CLUSTER and dependent not in self.blocked_nodes:
                self.node_waiting[dependent] -= 1
                if self.node_waiting[dependent] == 0:
                    self._release(dependent, [each for each, count in self.host_waiting[dependent].items()
                                              if count == 0])

    def _queue_whole_rollout(self, name: str) -> None:
        """A rollout is handed out once, when each of its clusters may start or never will."""
        hosts = self.hosts[name]
        settled = len(self.ready_hosts[name]) + sum((name, host) in self.blocked for host in hosts)
        if self.ready_hosts[name] and settled == len(hosts):
            heapq.heappush(self.queued, self.rank[name])

    def _host_done(self, name: str, host: str) -> None:
        counts = self.host_waiting[name]
        if host not in counts:
            return      # a same-cluster dependent on fewer clusters than its need
        counts[host] -= 1
        if counts[host] == 0 and self.node_waiting[name] == 0 and name not in self.blocked_nodes:
            self._release(name, [host])

    def _fail(self, name: str, host: str, why: str) -> None:
        """``name`` will not end well on ``host``: its dependents never start there, or anywhere."""
        pending = [(name, host, why)]
        while pending:
            need, on, reason = pending.pop()
            for dependent, wait in self.dependents[need]:
                if wait == SAME_CLUSTER:
                    if (dependent, on) in self.blocked or on not in self.host_sets[dependent]:
                        continue
                    self.blocked[(dependent, on)] = reason
                    if self.graph.nodes[dependent].rollout:
                        self._queue_whole_rollout(dependent)
                    pending.append((dependent, on, f"needs {dependent}, which never started on {on} ({reason})"))
                elif dependent not in self.blocked_nodes:
                    self.blocked_nodes[dependent] = reason
                    for each in self.hosts[dependent]:
                        pending.append((dependent, each, f"needs {dependent}, which never started ({reason})"))


class SlicedScheduler(Scheduler):
    """One slice's share of a sliced graph run (AWX job slicing): every slice runs the same graph, each on its own
    clusters. A cluster is in one slice, so ``same-cluster`` edges stay local; an ``all-clusters`` edge waits for
    its need on every slice. The runner tells the other slices of each node settled here (``settled``: ended on
    each of its clusters here, or never starting there; a node with none here at once) and calls ``everywhere``
    once every slice settled it: only then are its all-clusters dependents released, or blocked when it did not
    end well on some slice (which, as a failure here would, stops the run without ``keep_going``). ``halt``: the
    slices' meeting failed (a slice gone): nothing new starts."""

    def __init__(self, graph: PlanGraph, **options):
        super().__init__(graph, **options)
        self.told: set = set()           # nodes handed out by ``settled``
        self.known: dict = {}            # node -> ended well on every slice
        self.halted: str | None = None
        self.blocked_count: dict = dict.fromkeys(graph.nodes, 0)    # node -> its pairs in ``blocked``
        self.counted = 0                 # of ``blocked`` (it only grows, in order)

    def settled(self) -> list:
        """Nodes settled here since the last call, in graph order, each once: ``(node, why it did not end well
        here)``, "" when it did (only host names: the other slices read it)."""
        found = []
        for name, _host in itertools.islice(self.blocked, self.counted, None):
            self.blocked_count[name] += 1
        self.counted = len(self.blocked)
        stopping = self.halted is not None or (self.failure is not None and not self.keep_going)
        for name in self.graph.order:
            if name in self.told or name in self.running or (
                    # a cluster neither ended nor blocked may still start: no need to look at each (a fleet is big)
                    not stopping and name not in self.blocked_nodes and self.left[name] > self.blocked_count[name]):
                continue
            hosts = self.hosts[name]
            failed = [host for host in hosts if self.results.get((name, host)) == FAILED]
            never = [host for host in hosts if (name, host) not in self.results and self.never_started(name, host)]
            if sum((name, host) in self.results for host in hosts) + len(never) < len(hosts):
                continue        # a cluster still waits for its needs
            self.told.add(name)
            why = [f"{what} on {len(each)} cluster(s): {_names(each)}" for what, each in
                   (("failed", failed), ("never started", never)) if each]
            found.append((name, f"phase {name} " + "; ".join(why) if why else ""))
        return found

    def everywhere(self, name: str, ok: bool, why: str = "") -> None:
        """Every slice settled ``name``: ``ok``, it ended well everywhere; else (``why``) its all-clusters dependents
        never start, and without ``keep_going`` nothing new starts."""
        if name in self.known:
            return
        self.known[name] = ok
        if ok:
            self._release_all_clusters(name)
            return
        reason = why or f"phase {name} did not end well on another slice"
        self.failure = self.failure or reason
        for dependent, wait in self.dependents[name]:
            if wait != SAME_CLUSTER and dependent not in self.blocked_nodes:
                self.blocked_nodes[dependent] = f"needs {name}, which did not end well everywhere ({reason})"
                for host in self.hosts[dependent]:
                    self._fail(dependent, host, f"needs {dependent}, which never started ({reason})")

    def halt(self, why: str) -> None:
        self.halted = self.halted or why

    def waiting(self) -> bool:
        """A node settled here is not yet known everywhere (the runner waits for the slices' word)."""
        return self.halted is None and len(self.known) < len(self.told)

    def ready(self) -> list:
        return [] if self.halted else super().ready()

    def done(self) -> bool:
        if self.halted is not None:
            return not self.running
        return super().done() and not self.waiting() and len(self.told) == len(self.graph.nodes)

    def never_started(self, name: str, host: str) -> str | None:
        why = super().never_started(name, host)
        if why is None and self.halted is not None and (name, host) not in self.started:
            return self.halted
        return why

    def _ended_here(self, name: str) -> None:
        """Held: its all-clusters dependents wait for ``everywhere``."""


def _names(hosts: list, shown: int = 5) -> str:
    return ", ".join(hosts[:shown]) + (" and more" if len(hosts) > shown else "")
