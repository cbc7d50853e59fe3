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
each slice prints), and the API requests each slice sent to the coordination cluster. The wall time a real mesh would
give is about the one controller's wall time divided by (N / the CPU ratio), as long as the API servers keep up: this
machine has 2 CPUs for every slice and both API servers, so its wall time is not that.

``--runner ee``: each slice is a job as AWX runs one (``bench/ee_job.py``): a private data dir with the slice's
inventory and AWX's variables (``awx_job_id`` its own, ``awx_workflow_job_id`` the same for the slices of one launch,
new on every launch; ``JOB_ID``, ``AWX_HOST``), the fleet's kubeconfig as the "phasekit kubeconfigs" credential puts
it there, sent through ``ansible-runner transmit | podman run -i IMAGE ansible-runner worker | ansible-runner
process`` into the execution environment image (``make ee``; the collection is the one built into it). The slices
number themselves (``*/N``); the run ID is AWX's (``awx-<digest of AWX_HOST>-<workflow job id>``). One slice is one
unsliced job. CPU: everything each job runs, host side and container (its cgroup, see ``ee_job.py``).

Usage: python bench/sliced.py [--hosts 2000] [--phases 10] [--slices 1,2,4] [--runner playbook|ee]
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
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ee_job  # noqa: E402  pylint: disable=wrong-import-position
from fleet import CLUSTERS, CLUSTERS_DIR, FORKS, PEAK, Bench  # noqa: E402  pylint: disable=wrong-import-position
from run import REPO, VENV_BIN, tools_bin  # noqa: E402  pylint: disable=wrong-import-position

COORDINATION = "ephemeral"
# before the first phase a slice waits this long for the others to start (the default, said here: 4 jobs' start-up
# on a loaded 2-CPU machine, a 2000-host inventory and kubeconfig each, is well within it)
ARRIVAL_TIMEOUT = 600
JOB_TIMEOUT = 7200   # seconds a job may take (one controller's 2000 x 10 first run: about 150 s here)
BARRIER_LINE = re.compile(r"slice (\d+)/(\d+) of run \S+: (\d+) barrier\(s\), ([\d.]+)s waited for other slices, "
                          r"(\d+) request\(s\)")


def met(outputs) -> dict:
    """The slices' barrier lines in their outputs: the lines, and of each its seconds waited and requests sent."""
    found = [match for text in outputs for match in BARRIER_LINE.finditer(" ".join(text.split()))]
    return {"waited": [float(match.group(4)) for match in found], "requests": [int(match.group(5)) for match in found],
            "per_barrier": [float(match.group(4)) / max(int(match.group(3)), 1) for match in found],
            "barriers": [match.group(0) for match in found]}


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
    cpu = 0.0
    for proc, (stdout, stderr) in zip(procs, outputs):
        if proc.returncode != 0:
            raise SystemExit(f"bench sliced: a slice exited with {proc.returncode}:\n{stdout[-4000:]}\n"
                             f"{stderr[-2000:]}")
        cpu += float([line for line in stderr.splitlines() if line.startswith("peak-rss-kib ")][-1].split()[3])
    return {"wall": wall, "cpu": cpu, **met(stdout for stdout, _ in outputs)}


def run_jobs(bench: Bench, site: dict, count: int, namespace: str, step: str) -> dict:
    """The plan on ``site`` as ``count`` AWX jobs at once in the execution environment (1: one unsliced job); wall
    time, CPU of all (and of it, the containers'), barrier lines."""
    if "credential" not in site:   # the fleet's kubeconfig as a credential holds it, made once per site
        site["credential"] = ee_job.self_contained(site["kubeconfig"], site["root"] / "credential.kubeconfig")
        site["mgmt"] = ee_job.self_contained(CLUSTERS_DIR / COORDINATION / "admin.kubeconfig",
                                             site["root"] / "mgmt.kubeconfig")
    whole = yaml.safe_load((site["root"] / "inventory.yml").read_text())["all"]
    # what an inventory sync of the credential's contexts gives (phasekit.kube.clusters): each host its context
    group_vars = {"ansible_connection": "local", "kube_kubeconfig": {"env": "KUBECONFIG"}}
    launch = ee_job.AwxJobs(count)
    tag = f"{count}-{step}-{uuid.uuid4().hex[:6]}"
    pipes = []
    try:
        for number in range(1, count + 1):
            extra = {"plan_show_plan": False, "phases": f"{ee_job.RUNNER_DIR}/project/phases"}
            if count > 1:
                extra.update(plan_slice=f"*/{count}", plan_coordination={
                    "kubeconfig": f"{ee_job.RUNNER_DIR}/env/mgmt.kubeconfig", "namespace": namespace,
                    "arrival_timeout": ARRIVAL_TIMEOUT})
            hosts = {host: {**whole["hosts"][host], "kube_context": host}
                     for host in slice_of(site["hosts"], number, count)}
            data_dir = ee_job.private_data_dir(
                site["root"] / f"job-{tag}-{number}", site_root=site["root"], hosts=hosts, group_vars=group_vars,
                kubeconfigs={"awx_kubeconfig_1": site["credential"], "mgmt.kubeconfig": site["mgmt"]},
                extra_vars={**launch.extra_vars(number), **extra}, environ=launch.environ(number))
            pipes.append((ee_job.CpuGroup(f"{bench.label}/{tag}-{number}"), data_dir))
        began = time.perf_counter()
        jobs = [ee_job.JobPipe(data_dir, site["root"] / f"processed-{tag}-{number}", group, timeout=JOB_TIMEOUT,
                               playbook="run.yml", forks=FORKS)
                for number, (group, data_dir) in enumerate(pipes, start=1)]
        with ThreadPoolExecutor(len(jobs)) as pool:   # each job's wall ends when it does
            ended = list(pool.map(ee_job.JobPipe.finish, jobs))
        wall = time.perf_counter() - began
    finally:
        for group, _ in pipes:
            group.remove()
    for got in ended:
        if got["status"] != "successful" or got["rc"] != "0":
            raise SystemExit(f"bench sliced: a job ended {got['status']} (rc {got['rc']}, pipe {got['pipe_rc']}):\n"
                             f"{got['stdout'][-4000:]}\n{got['pipe_output']}")
    return {"wall": wall, "cpu": sum(got["cpu"] for got in ended),
            "cpu_container": sum(got["cpu_container"] for got in ended), **met(got["stdout"] for got in ended),
            "jobs": [{key: got[key] for key in ("wall", "in_playbook", "cpu", "cpu_container")} for got in ended]}


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
                row[step] = (run_jobs(bench, site, count, namespace, step) if args.runner == "ee"
                             else run_slices(bench, site, count, namespace))
                in_playbooks = [job["in_playbook"] or 0 for job in row[step].get("jobs", [])]
                print(f"bench sliced: {count} slice(s), {step}: {row[step]['wall']:.1f}s wall"
                      + (f" (the longest playbook {max(in_playbooks):.1f}s of it)" if in_playbooks else "")
                      + f", {row[step]['cpu']:.1f} CPU-s", *(f"\n  {line}" for line in row[step]["barriers"]),
                      file=sys.stderr)
            rows.append(row)
            bench.cleanup()       # the next slice count gets idle API servers
    finally:
        bench.cleanup()
        if args.runner == "ee":
            ee_job.remove_cgroups(bench.label)   # the jobs' groups were made below it
        bench.kubectl(COORDINATION, "delete", "namespace", namespace, "--wait=false", check=False)
    return rows


def report(rows: list[dict], args) -> str:
    one = {step: rows[0][step] for step in ("first", "rerun")} if rows and rows[0]["slices"] == 1 else None
    ee = args.runner == "ee"
    how = (f"each slice an AWX job (ansible-runner transmit | podman worker in {args.image} | process)" if ee
           else "each slice an ansible-playbook process")
    lines = [f"{args.hosts} cluster hosts x {args.phases} phases, slices at once on one machine "
             f"({platform.machine()}, {os.cpu_count()} CPUs), {how}, {time.strftime('%Y-%m-%d')}", "",
             "| slices | run | wall (s) | CPU of all slices (s) | CPU vs one controller | waited at barriers per "
             "slice, median (s) | waited per barrier, median (s) | coordination requests per slice |"
             + (" of the CPU, in the containers (s) |" if ee else ""),
             "|---:|---|---:|---:|---:|---:|---:|---:|" + ("---:|" if ee else "")]
    for row in rows:
        for step in ("first", "rerun"):
            got = row[step]
            ratio = f"{got['cpu'] / one[step]['cpu']:.2f}x" if one else "-"
            waited = sorted(got["waited"])
            median_wait = f"{waited[len(waited) // 2]:.1f}" if waited else "-"
            per_barrier = sorted(got.get("per_barrier", []))
            median_per_barrier = f"{per_barrier[len(per_barrier) // 2]:.2f}" if per_barrier else "-"
            requests = f"{sum(got['requests']) / len(got['requests']):.0f}" if got["requests"] else "-"
            lines.append(f"| {row['slices']} | {step} | {got['wall']:.1f} | {got['cpu']:.1f} | {ratio} | "
                         f"{median_wait} | {median_per_barrier} | {requests} |"
                         + (f" {got['cpu_container']:.1f} |" if ee else ""))
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--hosts", type=int, default=2000)
    parser.add_argument("--phases", type=int, default=10)
    parser.add_argument("--slices", default="1,2,4", help="slice counts, 1 first (one controller, the baseline)")
    parser.add_argument("--runner", choices=("playbook", "ee"), default="playbook",
                        help="a slice as an ansible-playbook process, or as an AWX job in the execution environment")
    parser.add_argument("--image", default=ee_job.IMAGE, help="the execution environment image (--runner ee)")
    args = parser.parse_args(argv)
    if args.runner == "ee":
        ee_job.IMAGE = args.image
        problem = ee_job.image_problem(args.image)
        if problem:
            raise SystemExit(f"bench sliced --runner ee: {problem}")
    with tempfile.TemporaryDirectory(prefix="phasekit-bench-sliced-") as work:
        rows = measure(args, Path(work))
    text = report(rows, args)
    print(text)
    results = REPO / "bench" / "results"
    results.mkdir(exist_ok=True)
    name = "sliced-ee" if args.runner == "ee" else "sliced"
    (results / f"{name}.md").write_text(text + "\n")
    (results / f"{name}.json").write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
