#!/usr/bin/env python3
# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Benchmark: the plan graph scheduler's own cost per (phase, cluster) pair it hands out (issue #41).

No cluster and no Ansible run: the graph of a plan of ``--phases`` phases over ``--hosts`` cluster hosts is built,
then the scheduler (``running/schedule.py``) is driven to the end, every pair it hands out ending ``ok`` before the
next call, ``--cluster-concurrency`` pairs at a time (the runner's default pool). Shapes:

- line: no phase has needs (today's meaning: each phase after the one before, on all clusters);
- chain (all clusters): each phase needs the one before, written as ``needs`` (goal: within 1.05x of the line);
- chain (same cluster): each phase needs the one before with ``wait: same-cluster`` (a pipeline per cluster);
- fan-out (all clusters) / fan-out (same cluster): one base phase, every other phase needs only it.

Per shape: the time to build the graph and to schedule it, the microseconds per pair (goal: under 1000), and
the ratio to the line's. The median of ``--rounds`` rounds; the plain loop over phases and hosts (what walking a
line costs without any scheduler) is printed for scale.

Usage: python bench/graph.py [--hosts 5000] [--phases 10] [--rounds 5] [--cluster-concurrency 16]
(part of ``make bench``)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import REPO, collections_root  # noqa: E402  pylint: disable=wrong-import-position


def load_collection(work: Path) -> None:
    from ansible.utils.collection_loader._collection_finder import _AnsibleCollectionFinder  # pylint: disable=import-outside-toplevel
    _AnsibleCollectionFinder(paths=[str(collections_root(work, REPO))])._install()  # pylint: disable=protected-access


def shapes(phases: int) -> dict:
    """Shape name -> each phase's needs: None (a line) or (needed phase index, wait)s."""
    from ansible_collections.phasekit.kube.plugins.module_utils.planning.graph import ALL_CLUSTERS, SAME_CLUSTER  # pylint: disable=import-outside-toplevel
    return {
        "line": [() for _ in range(phases)],
        "chain (all clusters)": [((index - 1, ALL_CLUSTERS),) if index else () for index in range(phases)],
        "chain (same cluster)": [((index - 1, SAME_CLUSTER),) if index else () for index in range(phases)],
        "fan-out (all clusters)": [((0, ALL_CLUSTERS),) if index else () for index in range(phases)],
        "fan-out (same cluster)": [((0, SAME_CLUSTER),) if index else () for index in range(phases)],
    }


def one_round(needs: list, hosts: tuple, concurrency: int) -> tuple[float, float, int]:
    from ansible_collections.phasekit.kube.plugins.module_utils.planning.graph import (  # pylint: disable=import-outside-toplevel
        GraphEntry, Need, build_graph)
    from ansible_collections.phasekit.kube.plugins.module_utils.planning.problems import Problems  # pylint: disable=import-outside-toplevel
    from ansible_collections.phasekit.kube.plugins.module_utils.running.schedule import OK, Scheduler  # pylint: disable=import-outside-toplevel

    entries = [GraphEntry(name=f"p{index}", full_name=f"p{index}", entry=index + 1, hosts=hosts,
                          needs=tuple(Need(f"p{needed}", wait) for needed, wait in need))
               for index, need in enumerate(needs)]
    started = time.perf_counter()
    problems = Problems()
    graph = build_graph(entries, problems)
    problems.raise_if_any()
    built = time.perf_counter()
    scheduler = Scheduler(graph, cluster_concurrency=concurrency)
    pairs = 0
    while True:
        wave = scheduler.ready()
        if not wave:
            break
        pairs += len(wave)
        for name, host in wave:
            scheduler.ended(name, host, OK)
    scheduled = time.perf_counter()
    assert scheduler.done() and pairs == len(hosts) * len(needs)
    return built - started, scheduled - built, pairs


def plain_loop(phases: int, hosts: tuple) -> float:
    started = time.perf_counter()
    pairs = [(f"p{index}", host) for index in range(phases) for host in hosts]
    assert pairs
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=5000)
    parser.add_argument("--phases", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cluster-concurrency", type=int, default=16)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        load_collection(Path(work))
        hosts = tuple(f"cluster-{index:05d}" for index in range(args.hosts))
        rows = []
        for shape, needs in shapes(args.phases).items():
            times = [one_round(needs, hosts, args.cluster_concurrency) for _ in range(args.rounds)]
            build = statistics.median(one[0] for one in times)
            schedule = statistics.median(one[1] for one in times)
            pairs = times[0][2]
            rows.append({"shape": shape, "build": build, "schedule": schedule,
                         "per_pair_us": (build + schedule) / pairs * 1e6, "pairs": pairs})
            print(f"bench graph: {shape}: build {build:.3f}s, schedule {schedule:.3f}s", file=sys.stderr)
        loop = statistics.median(plain_loop(args.phases, hosts) for _ in range(args.rounds))
    line = rows[0]["per_pair_us"]
    print(f"Scheduler cost, {args.hosts} hosts x {args.phases} phases, {args.cluster_concurrency} pairs at a time, "
          f"median of {args.rounds} rounds:\n")
    print("| shape | pairs | build graph (s) | schedule (s) | per pair (µs) | vs line |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for row in rows:
        print(f"| {row['shape']} | {row['pairs']} | {row['build']:.3f} | {row['schedule']:.3f} | "
              f"{row['per_pair_us']:.2f} | {row['per_pair_us'] / line:.2f}x |")
    print(f"\nFor scale: listing the pairs in a plain loop (no scheduler) takes "
          f"{loop / (args.hosts * args.phases) * 1e6:.2f} µs per pair.")


if __name__ == "__main__":
    main()
