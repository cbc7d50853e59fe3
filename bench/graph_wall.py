#!/usr/bin/env python3
# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Benchmark: the wall time of plans as graphs against the same plans as lines (issue #41), through the role in a
user's own ``site.yml`` on the local clusters.

Scenarios:

- critical path: a base phase (an apply) and four add-on phases that each hold a ``sleep --hold`` seconds
  (``command`` phases), on ``--sizes`` cluster hosts (default 1 and 60): as a line, as a graph (each add-on needs only
  the base, per cluster), and the critical path alone (the base and one add-on, as a line). Goal: the graph at
  most 1.15x its critical path; the line/graph ratio is reported.
- slow clusters: ``--slow-hosts`` cluster hosts (default 500), a base phase and a chain of three phases per cluster,
  each holding ``--hold`` seconds, 5x that on 5% of the clusters: as a line and as a graph (the chain per cluster,
  ``wait: same-cluster``). Each host's finish is when its last phase ended (the command logs it); reported: the
  median cluster's finish and the slowest's, both ways. Goal: the fast clusters are not held by the slow ones.
- chain: the fleet plan of ``--chain-hosts`` cluster hosts (default 500) x 10 apply phases (a ConfigMap each) as a
  line and the same plan with each phase needing the one before (all clusters, written as ``needs``): first runs,
  wall and CPU time. Goal: the graph within 1.05x of the line (the issue's large scenario, at 5000 hosts, is the
  same with ``--chain-hosts 5000``).

Every (phase, cluster) pair may run at once (``plan_cluster_concurrency`` is the pairs there are, up to its ceiling
of 256), so the figures are the plan's shape, not a pool's. Medians of ``--rounds`` rounds.

Usage: python bench/graph_wall.py [--sizes 1,60] [--slow-hosts 500] [--chain-hosts 500] [--hold 3] [--rounds 3]
       [--only critical,slow,chain]
Prints Markdown tables and writes them with the raw figures under bench/results/.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fleet import API, CLUSTERS, Bench  # noqa: E402  pylint: disable=wrong-import-position
from run import REPO, VENV_BIN, tools_bin  # noqa: E402  pylint: disable=wrong-import-position

ADDONS = ("a1", "a2", "a3", "a4")
CHAIN = ("s1", "s2", "s3")
SLOW_SHARE = 0.05
SLOW_FACTOR = 5
MAX_PAIRS = 256     # plan_cluster_concurrency's ceiling (action/run_phases.py MAX_CLUSTER_CONCURRENCY)


def hold_phase(name: str, needs: list | None, finish_log: Path | None = None) -> dict:
    """A command phase that sleeps the host's ``graph_hold`` seconds; with ``finish_log``, it appends its host and
    end time (epoch seconds) there."""
    script = 'sleep "{{ graph_hold }}"'
    if finish_log is not None:
        script += f'; echo "$PHASEKIT_HOST $(date +%s.%N)" >> {finish_log}'
    spec = {"cluster": "all", "executor": "command", "options": {"cmd": script, "shell": True}}
    if needs:
        spec["needs"] = needs
    return {"apiVersion": API, "kind": "Phase", "metadata": {"name": name}, "spec": spec}


def write_plan(site: dict, phases: list[dict]) -> None:
    base = {"apiVersion": API, "kind": "Phase", "metadata": {"name": "p00"},
            "spec": {"cluster": "all", "executor": "apply", "source": "../manifests/p00.yaml"}}
    (site["root"] / "phases" / "plan.yaml").write_text(yaml.safe_dump_all([base, *phases]))


def set_holds(site: dict, holds: dict[str, float]) -> None:
    inventory = yaml.safe_load((site["root"] / "inventory.yml").read_text())
    for host, seconds in holds.items():
        inventory["all"]["hosts"][host]["graph_hold"] = seconds
    (site["root"] / "inventory.yml").write_text(yaml.safe_dump(inventory))


def per_cluster(needed: str) -> list:
    return [{"phase": needed, "wait": "same-cluster"}]


class GraphWall:
    def __init__(self, bench: Bench, hold: float):
        self.bench, self.hold = bench, hold

    def timed(self, site: dict, pairs: int) -> float:
        return self.bench.phasekit_role(site, "-e", f"plan_cluster_concurrency={min(pairs, MAX_PAIRS)}")

    def critical(self, sizes: list[int], rounds: int) -> list[dict]:
        shapes = {
            "line": [hold_phase(name, None) for name in ADDONS],
            "graph": [hold_phase(name, per_cluster("p00")) for name in ADDONS],
            "critical": [hold_phase(ADDONS[0], None)],
        }
        rows = []
        for size in sizes:
            row = {"hosts": size}
            for round_no in range(rounds):
                for shape, phases in shapes.items():
                    site = self.bench.site(f"graph-{shape}", size, 1, 1)
                    write_plan(site, phases)
                    set_holds(site, {host: self.hold for host in site["hosts"]})
                    row.setdefault(f"{shape}_rounds", []).append(self.timed(site, size * len(ADDONS)))
                print(f"bench graph: round {round_no + 1}, {size} hosts: "
                      + ", ".join(f"{shape} {row[f'{shape}_rounds'][-1]:.2f}s" for shape in shapes), file=sys.stderr)
                self.bench.cleanup()
            for shape in shapes:
                row[shape] = statistics.median(row[f"{shape}_rounds"])
            # each round against its own: the machine's load moves between rounds
            row["graph_over_critical"] = statistics.median(
                [graph / critical for graph, critical in zip(row["graph_rounds"], row["critical_rounds"])])
            row["line_over_graph"] = statistics.median(
                [line / graph for line, graph in zip(row["line_rounds"], row["graph_rounds"])])
            rows.append(row)
        return rows

    def slow(self, hosts: int, rounds: int) -> dict:
        row = {"hosts": hosts, "slow": max(1, round(hosts * SLOW_SHARE))}
        for round_no in range(rounds):
            for shape in ("line", "graph"):
                site = self.bench.site(f"slow-{shape}", hosts, 1, 1)
                finish_log = site["root"] / "finished.log"
                phases = [hold_phase(name, per_cluster(needed) if shape == "graph" else None,
                                     finish_log if name == CHAIN[-1] else None)
                          for name, needed in zip(CHAIN, ("p00", *CHAIN))]
                write_plan(site, phases)
                slow = set(site["hosts"][::max(1, hosts // row["slow"])][:row["slow"]])
                set_holds(site, {host: self.hold * (SLOW_FACTOR if host in slow else 1) for host in site["hosts"]})
                began = time.time()
                row.setdefault(f"{shape}_wall_rounds", []).append(self.timed(site, hosts))
                finished = {line.split()[0]: float(line.split()[1]) - began
                            for line in finish_log.read_text().splitlines()}
                if set(finished) != set(site["hosts"]):
                    raise SystemExit(f"bench graph: {len(finished)} of {hosts} clusters logged their last phase")
                fast = [seconds for host, seconds in finished.items() if host not in slow]
                row.setdefault(f"{shape}_median_rounds", []).append(statistics.median(finished.values()))
                row.setdefault(f"{shape}_fast_last_rounds", []).append(max(fast))
                print(f"bench graph slow: round {round_no + 1}, {hosts} hosts, {shape}: wall "
                      f"{row[f'{shape}_wall_rounds'][-1]:.1f}s, median cluster done at "
                      f"{row[f'{shape}_median_rounds'][-1]:.1f}s", file=sys.stderr)
                self.bench.cleanup()
        for key in [key for key in row if key.endswith("_rounds")]:
            row[key[:-len("_rounds")]] = statistics.median(row[key])
        return row

    def chain(self, hosts: int, rounds: int) -> dict:
        """The fleet plan (10 apply phases) as a line and as a chain of needs, first runs, taking turns."""
        row: dict = {"hosts": hosts}
        for round_no in range(rounds):
            for shape in ("line", "graph"):
                site = self.bench.site(f"chain-{shape}", hosts, 10, 1)
                if shape == "graph":
                    documents = list(yaml.safe_load_all((site["root"] / "phases" / "plan.yaml").read_text()))
                    for before, document in zip(documents, documents[1:]):
                        document["spec"]["needs"] = [before["metadata"]["name"]]
                    (site["root"] / "phases" / "plan.yaml").write_text(yaml.safe_dump_all(documents))
                row.setdefault(f"{shape}_rounds", []).append(self.bench.phasekit_role(site))
                row.setdefault(f"{shape}_cpu_rounds", []).append(self.bench.last["cpu_s"])
                print(f"bench graph chain: round {round_no + 1}, {hosts} hosts, {shape}: "
                      f"{row[f'{shape}_rounds'][-1]:.1f}s (CPU {row[f'{shape}_cpu_rounds'][-1]:.1f}s)", file=sys.stderr)
                self.bench.cleanup()
        for what in ("", "_cpu"):
            for shape in ("line", "graph"):
                row[f"{shape}{what}"] = statistics.median(row[f"{shape}{what}_rounds"])
            row[f"ratio{what}"] = statistics.median([graph / line for graph, line in
                                                     zip(row[f"graph{what}_rounds"], row[f"line{what}_rounds"])])
        return row


def report(results: dict, hold: float) -> str:
    lines = [f"# Plans as graphs: wall time ({results['date']}, {results['machine']}, hold {hold:g}s)", ""]
    if "critical" in results:
        lines += ["| cluster hosts | line | graph | critical path | graph / critical path (goal <= 1.15) | line / graph |",
                  "| ---: | ---: | ---: | ---: | ---: | ---: |"]
        lines += [f"| {row['hosts']} | {row['line']:.2f}s | {row['graph']:.2f}s | {row['critical']:.2f}s | "
                  f"{row['graph_over_critical']:.2f}x | {row['line_over_graph']:.2f}x |" for row in results["critical"]]
        lines.append("")
    if "slow" in results:
        row = results["slow"]
        lines += [f"{row['hosts']} cluster hosts, {row['slow']} of them {SLOW_FACTOR}x slower; times from the start of "
                  "the run:", "",
                  "| shape | wall | median cluster done | last fast cluster done |", "| --- | ---: | ---: | ---: |"]
        lines += [f"| {shape} | {row[f'{shape}_wall']:.1f}s | {row[f'{shape}_median']:.1f}s | "
                  f"{row[f'{shape}_fast_last']:.1f}s |" for shape in ("line", "graph")]
        lines.append("")
    if "chain" in results:
        row = results["chain"]
        lines += [f"{row['hosts']} cluster hosts x 10 apply phases, first runs:", "",
                  "| shape | wall | CPU |", "| --- | ---: | ---: |",
                  f"| line | {row['line']:.1f}s | {row['line_cpu']:.1f}s |",
                  f"| graph (a chain of needs) | {row['graph']:.1f}s | {row['graph_cpu']:.1f}s |",
                  f"| graph / line (goal <= 1.05x) | {row['ratio']:.2f}x | {row['ratio_cpu']:.2f}x |"]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,60")
    parser.add_argument("--slow-hosts", type=int, default=500)
    parser.add_argument("--chain-hosts", type=int, default=500)
    parser.add_argument("--hold", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", default="critical,slow,chain")
    args = parser.parse_args(argv)
    only = set(args.only.split(","))
    env = dict(os.environ, PATH=f"{tools_bin()}{os.pathsep}{VENV_BIN}{os.pathsep}{os.environ['PATH']}")
    env.pop("KUBECONFIG", None)
    subprocess.run([sys.executable, str(REPO / "hack/clusters.py"), "up", *CLUSTERS], check=True, env=env,
                   capture_output=True, text=True)
    results = {"date": time.strftime("%Y-%m-%d %H:%M"), "machine": f"{os.cpu_count()} CPUs"}
    with tempfile.TemporaryDirectory(prefix="phasekit-graph-bench-") as tmp:
        bench = Bench(Path(tmp), env, None)
        wall = GraphWall(bench, args.hold)
        try:
            if "critical" in only:
                results["critical"] = wall.critical([int(size) for size in args.sizes.split(",")], args.rounds)
            if "slow" in only:
                results["slow"] = wall.slow(args.slow_hosts, args.rounds)
            if "chain" in only:
                results["chain"] = wall.chain(args.chain_hosts, args.rounds)
        finally:
            bench.cleanup()
    text = report(results, args.hold)
    out_dir = REPO / "bench" / "results" / time.strftime("%Y%m%d-%H%M%S")
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "graph_wall.md").write_text(text + "\n")
    (out_dir / "graph_wall.json").write_text(json.dumps(results, indent=1))
    print(text)
    print(f"bench: written to {out_dir}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
