# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Fleets simulated over the local clusters: a context per cluster host, each with a namespace of its own."""

from __future__ import annotations

import os
import re
import signal
import subprocess

import yaml


def fleet_kubeconfig(clusters, hosts, cluster_of, namespace_of) -> dict:
    """A kubeconfig with one context per host (its cluster's admin user, its own namespace, created here)."""
    kubeconfig = {"apiVersion": "v1", "kind": "Config", "clusters": [], "users": [], "contexts": []}
    for name, cluster in clusters.items():
        admin = yaml.safe_load(cluster.admin_kubeconfig.read_text())
        kubeconfig["clusters"].append({"name": name, "cluster": admin["clusters"][0]["cluster"]})
        kubeconfig["users"].append({"name": f"{name}-admin", "user": admin["users"][0]["user"]})
    for host in hosts:
        name = cluster_of(host, clusters)
        clusters[name].kubectl("create", "namespace", namespace_of(host))
        kubeconfig["contexts"].append({"name": host, "context": {
            "cluster": name, "user": f"{name}-admin", "namespace": namespace_of(host)}})
    return kubeconfig


def recap(output: str) -> dict:
    """PLAY RECAP as host -> {ok, changed, failed, ...}."""
    rows = {}
    for line in output[output.rindex("PLAY RECAP"):].splitlines()[1:]:
        match = re.match(r"^(\S+)\s*:\s*(ok=.*)$", line.strip())
        if match:
            rows[match.group(1)] = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", match.group(2))}
    return rows


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (Ansible's workers lead process groups of their own)."""
    found, queue = [], [pid]
    while queue:
        parent = queue.pop()
        listed = subprocess.run(["ps", "-o", "pid=", "--ppid", str(parent)], capture_output=True, text=True,
                                check=False)   # no child: ps exits 1
        children = [int(line) for line in listed.stdout.split()]
        found += children
        queue += children
    return found


def kill_outright(proc: subprocess.Popen) -> None:
    """SIGKILL to the run's process group and to every process below it: nothing of it can release anything."""
    below = descendants(proc.pid)
    for pid in [proc.pid, *below]:
        try:
            os.kill(pid, signal.SIGSTOP)  # frozen first: no process of it acts on the others' deaths
        except ProcessLookupError:
            pass
    for pid in [proc.pid, *below]:
        for kill in (os.killpg, os.kill):
            try:
                kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
    proc.wait(timeout=30)
