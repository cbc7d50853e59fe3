#!/usr/bin/env python3
# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Benchmark: one plan over a fleet run as 1, 2 and 4 slices at once (issue #42), as AWX runs a sliced job.

The fleet: ``--hosts`` cluster hosts (contexts over the local API servers, a namespace each, as ``fleet.py`` builds
them) x ``--phases`` apply phases (one ConfigMap each, every phase on every host). One slice: the plan run as today
(``phasekit.kube.run``, no slicing, nothing met). N slices: N ``ansible-playbook`` processes started together, each
with the inventory AWX deals its slice (hosts sorted by name, round-robin: ``slices.slice_hosts``), ``plan_slice:
*/N`` (the slices number themselves), one ``plan_run_id``, and ``plan_coordination`` on the ``ephemeral`` cluster:
every phase is a barrier across the slices. First run (every object created), then a re-run (nothing to change), on
a fresh site for each slice count.

Figures: the wall time; the CPU seconds (user + system) of every process of every slice together, against one
controller's (the issue's goal: at most 1.15x); the seconds each slice waited at barriers for the others (the line
each slice prints), and the API requests each slice sent to the coordination cluster. The wall time a real mesh would give is
about the one controller's wall time divided by (N / the CPU ratio), as long as the API servers keep up: this
machine has 2 CPUs for every slice and both API servers, so its wall time is not that.

Usage: python bench/sliced.py [--hosts 2000] [--phases 10] [--slices 1,2,4]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fleet import CLUSTERS, CLUSTERS_DIR, FORKS, PEAK, Bench  # noqa: E402  pylint: disable=wrong-import-position
from run import REPO, VENV_BIN, tools_bin  # noqa: E402  pylint: disable=wrong-import-position

COORDINATION = "ephemeral"
BARRIER_LINE = re.compile(r"slice (\d+)/(\d+) of run \S+: (\d+) barrier\(s\), ([\d.]+)s waited for other slices, "
                          r"(\d+) request\(s\)")


def slice_of(hosts: list[str], number: int, count: int) -> list[str]:
    """AWX's deal (``Inventory.get_sliced_hosts``): sorted by name, then every ``count``-th from the ``number``-th."""
    ordered = sorted(hosts)
    return ordered[number - 1::count] if count > 1 else ordered


def sliced_inventories(site: dict, count: int) -> list[Path]:
    """The inventory each of ``count`` slices gets: its share of the hosts, with their variables."""
    whole = yaml.safe_load((site["root"] / "inventory.yml").read_text())
    paths = []
    for number in range(1, count + 1):
        mine = slice_of(site["hosts"], number, count)
        part = {"all": {"vars": whole["all"]["vars"],
                        "hosts": {host: whole["all"]["hosts"][host] for host in mine}}}
        path = site["root"] / f"inventory-{number}-of-{count}.yml"
        path.write_text(yaml.safe_dump(part))
        paths.append(path)
    return paths


def run_slices(bench: Bench, site: dict, count: int, namespace: str) -> dict:
    """The plan on ``site`` as ``count`` slices at once (1: as today); wall time, CPU of all, barrier lines."""
    env = bench.ansible_env(ANSIBLE_COLLECTIONS_PATH=str(bench.collections))
    run_id = f"bench-{uuid.uuid4().hex[:10]}"
    coordination = {"kubeconfig": str(CLUSTERS_DIR / COORDINATION / "admin.kubeconfig"), "namespace": namespace}
    commands = []
    for inventory in sliced_inventories(site, count) if count > 1 else [site["root"] / "inventory.yml"]:
        extra = {"plan_show_plan": False}
        if count > 1:
            extra.update(plan_slice=f"*/{count}", plan_run_id=run_id, plan_coordination=coordination)
        commands.append([sys.executable, "-c", PEAK, str(VENV_BIN / "ansible-playbook"), "phasekit.kube.run",
                         "-i", str(inventory), "-f", str(FORKS), "-e", json.dumps(extra)])
    began = time.perf_counter()
    procs = [subprocess.Popen(command, env=env, cwd=site["root"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for command in commands]
    outputs = [proc.communicate() for proc in procs]
    wall = time.perf_counter() - began
    cpu, waited, requests = 0.0, [], []
    for proc, (stdout, stderr) in zip(procs, outputs):
        if proc.returncode != 0:
            raise SystemExit(f"bench sliced: a slice exited with {proc.returncode}:\n{stdout[-4000:]}\n{stderr[-2000:]}")
        cpu += float([line for line in stderr.splitlines() if line.startswith("peak-rss-kib ")][-1].split()[3])
        for match in BARRIER_LINE.finditer(" ".join(stdout.split())):
            waited.append(float(match.group(4)))
            requests.append(int(match.group(5)))
    return {"wall": wall, "cpu": cpu, "waited": waited, "requests": requests}


def measure(args, work: Path) -> list[dict]:
    bin_dir = tools_bin()
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{VENV_BIN}{os.pathsep}{os.environ['PATH']}")
    env.pop("KUBECONFIG", None)
    subprocess.run([sys.executable, str(REPO / "hack/clusters.py"), "up", *CLUSTERS], check=True, env=env,
                   capture_output=True, text=True)
    bench = Bench(work, env, None)
    namespace = f"bench-sliced-{uuid.uuid4().hex[:6]}"
    bench.kubectl(COORDINATION, "create", "namespace", namespace)
    rows = []
    try:
        for count in (int(size) for size in args.slices.split(",")):
            site = bench.site(f"sliced{count}", args.hosts, args.phases, 1)
            row = {"slices": count, "hosts": args.hosts, "phases": args.phases}
            for step in ("first", "rerun"):
                row[step] = run_slices(bench, site, count, namespace)
                print(f"bench sliced: {count} slice(s), {step}: {row[step]['wall']:.1f}s wall, "
                      f"{row[step]['cpu']:.1f} CPU-s", file=sys.stderr)
            rows.append(row)
            bench.cleanup()       # the next slice count gets idle API servers
    finally:
        bench.cleanup()
        bench.kubectl(COORDINATION, "delete", "namespace", namespace, "--wait=false", check=False)
    return rows


def report(rows: list[dict], args) -> str:
    one = {step: rows[0][step] for step in ("first", "rerun")} if rows and rows[0]["slices"] == 1 else None
    lines = [f"{args.hosts} cluster hosts x {args.phases} phases, slices at once on one machine "
             f"({platform.machine()}, {os.cpu_count()} CPUs), {time.strftime('%Y-%m-%d')}", "",
             "| slices | run | wall (s) | CPU of all slices (s) | CPU vs one controller | waited at barriers per "
             "slice, median (s) | coordination requests per slice |",
             "|---:|---|---:|---:|---:|---:|---:|"]
    for row in rows:
        for step in ("first", "rerun"):
            got = row[step]
            ratio = f"{got['cpu'] / one[step]['cpu']:.2f}x" if one else "-"
            waited = sorted(got["waited"])
            median_wait = f"{waited[len(waited) // 2]:.1f}" if waited else "-"
            requests = f"{sum(got['requests']) / len(got['requests']):.0f}" if got["requests"] else "-"
            lines.append(f"| {row['slices']} | {step} | {got['wall']:.1f} | {got['cpu']:.1f} | {ratio} | "
                         f"{median_wait} | {requests} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--hosts", type=int, default=2000)
    parser.add_argument("--phases", type=int, default=10)
    parser.add_argument("--slices", default="1,2,4", help="slice counts, 1 first (one controller, the baseline)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="phasekit-bench-sliced-") as work:
        rows = measure(args, Path(work))
    text = report(rows, args)
    print(text)
    results = REPO / "bench" / "results"
    results.mkdir(exist_ok=True)
    (results / "sliced.md").write_text(text + "\n")
    (results / "sliced.json").write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
