#!/usr/bin/env python3
# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Benchmark: the cost of one barrier of a run's slices meeting through a coordination cluster (``coordination.meeting``).

For 1, 2 and 4 slices (threads, each with its own API client and session, as separate controllers would have), on the
local ``ephemeral`` cluster in a fresh namespace: ``--barriers`` barriers in a row, each slice arriving after a random
bit of work (0 to 0.3 s: its phase). Per barrier: the wall time from the last slice's arrival (its key written) to the
moment every slice was released (the barrier's cost: what a plan pays per phase on top of its slowest slice), and the
API requests of ``arrive``/``wait`` per barrier per slice (the presence renewals, by time not by barrier, apart).
The issue's goal (#42): under 0.5 s per barrier.

Usage: python bench/slices.py [--sizes 1,2,4] [--barriers 10] [--poll 0.2]   (``make bench`` runs it, with the
collection linked and the clusters up)
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import CACHE, REPO, collections_root  # noqa: E402  pylint: disable=wrong-import-position

CLUSTERS_DIR = Path(os.environ.get("PHASEKIT_CLUSTERS_DIR", CACHE / "clusters"))
CLUSTER = "ephemeral"


def load_collection(work: Path) -> None:
    from ansible.utils.collection_loader._collection_finder import _AnsibleCollectionFinder  # pylint: disable=import-outside-toplevel
    _AnsibleCollectionFinder(paths=[str(collections_root(work, REPO))])._install()  # pylint: disable=protected-access


def one_size(kubeconfig: dict, namespace: str, count: int, barriers: int, poll: float) -> dict:
    from ansible_collections.phasekit.kube.plugins.module_utils.coordination.meeting import (  # pylint: disable=import-outside-toplevel
        Meeting, MeetingSettings)
    from ansible_collections.phasekit.kube.plugins.module_utils.coordination.slices import SliceId  # pylint: disable=import-outside-toplevel
    from ansible_collections.phasekit.kube.plugins.module_utils.kube.client import api_client  # pylint: disable=import-outside-toplevel
    from ansible_collections.phasekit.kube.plugins.module_utils.kube.session import ApiSession  # pylint: disable=import-outside-toplevel

    settings = MeetingSettings(namespace=namespace, run_id=f"bench-{uuid.uuid4().hex[:8]}", plan="bench",
                               lease_duration=15, arrival_timeout=60.0, poll=poll)
    arrived, released, requests, failures = {}, {}, {}, []
    started = threading.Barrier(count)

    def slice_thread(number):
        try:
            with api_client(kubeconfig) as api:
                meeting = Meeting(ApiSession(api), SliceId(number, count), settings)
                meeting.join()
                started.wait()
                sent = meeting.requests
                for index in range(barriers):
                    time.sleep(random.uniform(0, 0.3))
                    meeting.arrive(f"b{index}")
                    arrived[(index, number)] = time.monotonic()
                    meeting.wait(f"b{index}")
                    released[(index, number)] = time.monotonic()
                requests[number] = meeting.requests - sent
                meeting.wait("end")
                meeting.finish()
        except Exception as err:  # pylint: disable=broad-exception-caught  # reported below
            failures.append(f"slice {number}: {err}")

    threads = [threading.Thread(target=slice_thread, args=(number,)) for number in range(1, count + 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise SystemExit("; ".join(failures))
    costs = [max(released[(index, n)] for n in range(1, count + 1)) - max(arrived[(index, n)] for n in range(1, count + 1))
             for index in range(barriers)]
    return {"slices": count, "barriers": barriers, "median": statistics.median(costs), "max": max(costs),
            "requests": sum(requests.values()) / count / barriers}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sizes", default="1,2,4")
    parser.add_argument("--barriers", type=int, default=10)
    parser.add_argument("--poll", type=float, default=0.2)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="phasekit-bench-slices-") as work:
        load_collection(Path(work))
        rows = measure(args)
    print(f"One barrier of a run's slices (poll {args.poll:g} s, local API server, {os.cpu_count()} CPUs)\n")
    print("| slices | barriers | last arrival to all released, median (s) | max (s) | API requests per barrier per slice |")
    print("|---:|---:|---:|---:|---:|")
    for row in rows:
        print(f"| {row['slices']} | {row['barriers']} | {row['median']:.3f} | {row['max']:.3f} | {row['requests']:.1f} |")
    return 0


def measure(args) -> list[dict]:
    kubeconfig_file = CLUSTERS_DIR / CLUSTER / "admin.kubeconfig"
    kubeconfig = yaml.safe_load(kubeconfig_file.read_text())
    namespace = f"bench-slices-{uuid.uuid4().hex[:6]}"
    kubectl = ["kubectl", "--kubeconfig", str(kubeconfig_file)]
    subprocess.run([*kubectl, "create", "namespace", namespace], check=True, capture_output=True)
    try:
        rows = [one_size(kubeconfig, namespace, int(size), args.barriers, args.poll) for size in args.sizes.split(",")]
    finally:
        subprocess.run([*kubectl, "delete", "namespace", namespace, "--wait=false"], check=False, capture_output=True)
    return rows


if __name__ == "__main__":
    sys.exit(main())
