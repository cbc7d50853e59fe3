#!/usr/bin/env python3
# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Benchmark: a plan over a fleet of cluster hosts, per-phase overhead, and the API server's floor.

Scenarios (all on the local clusters, in fresh namespaces, tools taking turns):

- fleet: a 4-phase plan (each phase applies 10 ConfigMaps) over N cluster hosts (N contexts over
  the local API servers, each with a namespace of its own, and its own cluster and user entry, so
  nothing is shared between hosts that real clusters would not share). First run and re-run, for
  ``phasekit.kube.run`` (``-f 10``), the role ``phasekit.kube.plan`` in a user's own ``site.yml`` as the README and
  the example site show it (``-f 10``, in the same rounds: the role's cost against the playbook's), a shell loop of
  ``kubectl apply --server-side --context X`` over
  the phases and contexts, and a ``kubernetes.core.k8s`` task per phase over the hosts (``-f 10``; past 60
  hosts its first run only: it sends every object again on a re-run, so a re-run costs what a first run does).
  Times are the whole command (``ansible-playbook`` start-up included: it is what a user waits for).
- overhead: one host, a plan of 20 no-op apply phases, minus the same playbook with zero phases.
- floor: 1000 ConfigMaps, first apply: raw server-side apply PATCHes over 16 keep-alive connections
  (a small client, the floor), ``phasekit.kube.apply`` (the task's own time), ``kubectl apply --server-side``.
- large: 500, 2000 and 5000 cluster hosts x 10 phases (phasekit only), first run and re-run: the cost per
  host and phase against the smallest size's, and the controller's peak memory.
- rollout: 500 cluster hosts, a 3-child phase with and without a rollout in batches [1, "10%", "100%"]
  (pause 0): the cost per batch; then failures injected in batch 2, and the clusters of batch 3 counted.
- requests: the API requests of the fleet plan's first run and no-op re-run at 1 and 60 cluster hosts
  (``--request-sizes``), and how many of them are watches guarding kept lists, as the run counts them (its -vvv
  line): figures the machine's load does not move.
- outputs: the API requests of the fleet plan's first run at 500 cluster hosts (``--outputs-sizes``), without and
  with an output on every phase (a field of an object the phase applies): the same count says an output costs no
  request when the apply's answer holds it. Not in the default run: ``--only outputs`` runs it.
- lock: what one run at a time costs (the lock in each run record): the fleet plan's first run and no-op re-run at
  60 and 500 cluster hosts (``--lock-sizes``), this tree against the tree before the lock (``--lock-baseline``, a
  git ref; default: the parent of the commit that added ``module_utils/phases/lock.py``), taking turns in each
  round; wall time and the controller's CPU time. Not in the default run: ``--only lock`` runs it.
- recap: what a result per cluster host costs (PLAY RECAP and AWX host summaries, the role's ``plan_host_results``):
  the fleet plan's first run and no-op re-run through the role in a user's ``site.yml`` at ``--recap-sizes``
  (default 1,60,500), with ``plan_host_results`` false and true, against the role of ``--recap-baseline`` (a git
  ref, default main), the three taking turns in each round; wall time and CPU time. ``--only recap`` runs it.
- preview: what a preview of a plan on empty clusters costs against the same plan's real first run (issue #40:
  goal within 1.3x): the fleet plan with a first phase that creates each host's namespace (the clusters hold
  nothing of the plan), at ``--preview-sizes`` (default 3 and 60 cluster hosts), ``--check`` then the real first
  run on a fresh site each round; wall time and CPU time. Not in the default run: ``--only preview`` runs it.

Usage: python bench/fleet.py [--sizes 1,10,60,200] [--rounds 3] [--core-max-hosts 200] [--skip large]
       [--large-sizes 500,2000,5000] [--rollout-hosts 500] [--fleet-others kubectl,core] [--collection DIR]
       [--only lock] [--lock-sizes 60,500] [--lock-baseline REF] [--request-sizes 1,60]
       [--only recap] [--recap-sizes 1,60,500] [--recap-baseline main]
       [--only preview] [--preview-sizes 3,60]
Prints Markdown tables and writes them with the raw figures under bench/results/.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import urllib3
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import CACHE, REPO, VENV_BIN, collections_root, config_maps, kubernetes_core_collections, tools_bin  # noqa: E402

API = "phasekit.dev/v1alpha1"
CLUSTERS = ("ephemeral", "target")
PHASES = 4
PER_PHASE = 10
CORE_RERUN_MAX = 60  # hosts
RAW_MAX_HOSTS = 60  # the first run's API work alone is timed up to this many hosts
REQUEST_BUDGET = 32  # requests in flight in a fleet step (module_utils/running/builtin.py)
ROLLOUT = {"batches": [1, "10%", "100%"], "pause": 0}
DEFAULT_APPLY_CONCURRENCY = 16  # module_utils/kube/apply.py
FORKS = 10  # -f of every ansible-playbook run here
CLUSTERS_DIR = Path(os.environ.get("PHASEKIT_CLUSTERS_DIR", CACHE / "clusters"))
# a command under this wrapper prints the peak resident memory (KiB) of its largest process (ansible-playbook or
# the worker that runs the plan) and the CPU seconds (user + system) of all its processes as its last line on stderr
PEAK = ("import resource, subprocess, sys; done = subprocess.run(sys.argv[1:]); "
        "used = resource.getrusage(resource.RUSAGE_CHILDREN); "
        "print(f'peak-rss-kib {used.ru_maxrss} cpu-s {used.ru_utime + used.ru_stime:.3f}', file=sys.stderr); "
        "sys.exit(done.returncode)")


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


class Bench:
    def __init__(self, work: Path, env: dict, core: Path | None, records: bool = True, collection: Path | None = None):
        self.work, self.env, self.core = work, env, core
        self.records = records  # phasekit keeps its run record in each cluster (its default); the floor writes it too
        # this process's namespaces: a cleanup leaves those of another bench running on the same clusters alone
        self.label = f"phasekit-fleet-{uuid.uuid4().hex[:8]}"
        self.collections = collections_root(work, collection)
        self.admin = {name: yaml.safe_load((CLUSTERS_DIR / name / "admin.kubeconfig").read_text())
                      for name in CLUSTERS}

    # ------------------------------------------------------------ helpers

    def run(self, argv: list, env: dict | None = None, cwd: Path | None = None, rc: int = 0) -> float:
        """Run ``argv``; its time, and in ``last`` its output and the peak memory of its largest process."""
        began = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", PEAK, *argv], env=env or self.env, capture_output=True,
                              text=True, cwd=cwd, check=False)
        elapsed = time.perf_counter() - began
        if done.returncode != rc:
            raise SystemExit(f"bench: {' '.join(argv[:6])} exited with {done.returncode}, not {rc}:\n"
                             f"{done.stdout[-4000:]}\n{done.stderr[-3000:]}")
        peak = [line for line in done.stderr.splitlines() if line.startswith("peak-rss-kib ")]
        self.last = {"stdout": done.stdout, "peak_mib": int(peak[-1].split()[1]) / 1024 if peak else None,
                     "cpu_s": float(peak[-1].split()[3]) if peak else None}
        return elapsed

    def ansible_env(self, **extra) -> dict:
        return dict(self.env, ANSIBLE_PYTHON_INTERPRETER=sys.executable, ANSIBLE_NOCOLOR="1",
                    ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0",
                    ANSIBLE_HOST_KEY_CHECKING="0", ANSIBLE_RETRY_FILES_ENABLED="0", **extra)

    def kubectl(self, cluster: str, *args, stdin: str | None = None, check: bool = True):
        kubeconfig = CLUSTERS_DIR / cluster / "admin.kubeconfig"
        return subprocess.run(["kubectl", "--kubeconfig", str(kubeconfig), *args], input=stdin, env=self.env,
                              capture_output=True, text=True, check=check)

    def fleet_kubeconfig(self, path: Path, hosts: list[str], namespaces: dict[str, str]) -> None:
        """One context per host, each with its own cluster and user entry (copies of the admin ones)."""
        config = {"apiVersion": "v1", "kind": "Config", "clusters": [], "users": [], "contexts": []}
        for index, host in enumerate(hosts):
            cluster = CLUSTERS[index % len(CLUSTERS)]
            admin = self.admin[cluster]
            config["clusters"].append({"name": f"{host}-cluster", "cluster": admin["clusters"][0]["cluster"]})
            config["users"].append({"name": f"{host}-user", "user": admin["users"][0]["user"]})
            config["contexts"].append({"name": host, "context": {
                "cluster": f"{host}-cluster", "user": f"{host}-user", "namespace": namespaces[host]}})
        path.write_text(yaml.safe_dump(config))
        path.chmod(0o600)

    def create_namespaces(self, hosts: list[str], namespaces: dict[str, str]) -> None:
        """Create the namespaces and wait until the controllers are done with them (their default
        ServiceAccount exists): a tool timed right after would share the API server with that work."""
        by_cluster = {name: [] for name in CLUSTERS}
        for index, host in enumerate(hosts):
            by_cluster[CLUSTERS[index % len(CLUSTERS)]].append(namespaces[host])
        for cluster, names in by_cluster.items():
            if names:
                docs = [{"apiVersion": "v1", "kind": "Namespace",
                         "metadata": {"name": name, "labels": {"bench": self.label}}} for name in names]
                self.kubectl(cluster, "apply", "-f", "-", stdin=yaml.safe_dump_all(docs))
        deadline = time.monotonic() + 120
        for cluster, names in by_cluster.items():
            while names and time.monotonic() < deadline:
                done = subprocess.run(["kubectl", "--kubeconfig", str(CLUSTERS_DIR / cluster / "admin.kubeconfig"),
                                       "get", "serviceaccounts", "-A", "--field-selector", "metadata.name=default",
                                       "-o", "jsonpath={.items[*].metadata.namespace}"],
                                      env=self.env, capture_output=True, text=True, check=False)
                if set(names) <= set(done.stdout.split()):
                    break
                time.sleep(0.2)

    def cleanup(self) -> None:
        """Delete what a scenario made and wait until it is gone: the next measurement gets an idle server."""
        for cluster in CLUSTERS:
            self.kubectl(cluster, "delete", "namespace", "-l", f"bench={self.label}", "--wait=false")
        # polled, not `kubectl wait --for=delete -l`: that watch missed the last deletions once and sat out its
        # whole timeout with nothing left (12 minutes of a bench run)
        deadline = time.monotonic() + 600
        for cluster in CLUSTERS:
            while time.monotonic() < deadline and self.kubectl(
                    cluster, "get", "namespace", "-l", f"bench={self.label}", "-o", "name").stdout.strip():
                time.sleep(2)

    def site(self, tool: str, size: int, phases: int, per_phase: int, empty: bool = False) -> dict:
        """Namespaces, kubeconfig, phase bundles and inventory for one tool and fleet size. ``empty``: the
        namespaces are not made here; the plan's first phase (``ns``) creates each host's own."""
        tag = f"{tool}-{size}-{uuid.uuid4().hex[:4]}"
        root = self.work / tag
        (root / "manifests").mkdir(parents=True)
        hosts = [f"c{i:03d}" for i in range(size)]
        namespaces = {host: f"bf-{tag}-{host}" for host in hosts}
        if not empty:
            self.create_namespaces(hosts, namespaces)
        kubeconfig = root / "fleet.kubeconfig"
        self.fleet_kubeconfig(kubeconfig, hosts, namespaces)
        bundles = []
        for number in range(phases):
            objects = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"p{number:02d}-{i:02d}"},
                        "data": {"phase": str(number), "payload": "x" * 64}} for i in range(per_phase)]
            path = root / "manifests" / f"p{number:02d}.yaml"
            path.write_text(yaml.safe_dump_all(objects))
            bundles.append(path)
        documents = [{"apiVersion": API, "kind": "Phase", "metadata": {"name": f"p{number:02d}"},
                      "spec": {"cluster": "all", "executor": "apply", "source": f"../manifests/p{number:02d}.yaml"}}
                     for number in range(phases)]
        if empty:   # each host's namespace, labelled for cleanup, rendered with the host's variables
            (root / "manifests" / "namespace.yaml.j2").write_text(
                f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: \"{{{{ fleet_namespace }}}}\"\n"
                f"  labels:\n    bench: {self.label}\n")
            documents.insert(0, {"apiVersion": API, "kind": "Phase", "metadata": {"name": "ns"}, "spec": {
                "cluster": "all", "executor": "apply", "source": "../manifests/namespace.yaml.j2"}})
        (root / "phases").mkdir()
        (root / "phases" / "plan.yaml").write_text(yaml.safe_dump_all(documents))
        inventory = {"all": {"vars": {"ansible_connection": "local", "kube_kubeconfig": str(kubeconfig),
                                      "kube_context": "{{ inventory_hostname }}"},
                             "hosts": {host: {"fleet_namespace": namespaces[host]} for host in hosts}}}
        (root / "inventory.yml").write_text(yaml.safe_dump(inventory))
        # the role as the README and the example site use it: in the user's own play
        (root / "site.yml").write_text(yaml.safe_dump([{
            "name": "Deploy the fleet", "hosts": "all", "gather_facts": False,
            "roles": [{"role": "phasekit.kube.plan", "vars": {"plan_src": ["phases"]}}]}], sort_keys=False))
        return {"root": root, "hosts": hosts, "kubeconfig": kubeconfig, "bundles": bundles, "namespaces": namespaces,
                "phase_names": [f"p{number:02d}" for number in range(phases)]}

    # ------------------------------------------------------------ tools

    def phasekit_plan(self, site: dict, *extra, rc: int = 0, collections: Path | None = None) -> float:
        env = self.ansible_env(ANSIBLE_COLLECTIONS_PATH=str(collections or self.collections))
        records = () if self.records else ("-e", "plan_record=false")
        return self.run([str(VENV_BIN / "ansible-playbook"), "phasekit.kube.run", "-i", str(site["root"] / "inventory.yml"),
                         "-f", str(FORKS), "-e", "plan_show_plan=false", *records, *extra], env=env, cwd=site["root"],
                        rc=rc)

    def phasekit_role(self, site: dict, *extra, rc: int = 0, collections: Path | None = None) -> float:
        """The same plan through the role in the user's site.yml (the README's way), with the same options."""
        env = self.ansible_env(ANSIBLE_COLLECTIONS_PATH=str(collections or self.collections))
        records = () if self.records else ("-e", "plan_record=false")
        return self.run([str(VENV_BIN / "ansible-playbook"), str(site["root"] / "site.yml"),
                         "-i", str(site["root"] / "inventory.yml"), "-f", str(FORKS), "-e", "plan_show_plan=false",
                         *records, *extra], env=env, cwd=site["root"], rc=rc)

    def kubectl_loop(self, site: dict) -> float:
        script = ("set -e\nfor bundle in " + " ".join(str(b) for b in site["bundles"]) + "; do\n"
                  "  for ctx in " + " ".join(site["hosts"]) + "; do\n"
                  f"    kubectl --kubeconfig {site['kubeconfig']} --context \"$ctx\" apply --server-side -f \"$bundle\" >/dev/null\n"
                  "  done\ndone\n")
        return self.run(["bash", "-c", script])

    def kubernetes_core(self, site: dict) -> float:
        tasks = [{"name": f"phase {bundle.stem}", "kubernetes.core.k8s": {
            "kubeconfig": str(site["kubeconfig"]), "context": "{{ inventory_hostname }}", "src": str(bundle),
            "namespace": "{{ fleet_namespace }}",  # it does not default to the context's namespace
            "apply": True, "server_side_apply": {"field_manager": "bench"}}} for bundle in site["bundles"]]
        playbook = site["root"] / "core.yml"
        playbook.write_text(yaml.safe_dump([{"hosts": "all", "gather_facts": False, "tasks": tasks}]))
        env = self.ansible_env(ANSIBLE_COLLECTIONS_PATH=str(self.core))  # its modules run with the kubernetes client here
        return self.run([str(VENV_BIN / "ansible-playbook"), str(playbook), "-i",
                         str(site["root"] / "inventory.yml"), "-f", str(FORKS)], env=env)

    # ------------------------------------------------------------ scenarios

    def fleet(self, sizes: list[int], core_max: int, rounds: int, others: tuple = ("kubectl", "core")) -> list[dict]:
        """phasekit over every size ``rounds`` times (sizes taking turns; the playbook, then the role in a user's
        site.yml, in each round), then ``others`` (kubectl, kubernetes.core) once.

        Up to RAW_MAX_HOSTS hosts, each round also times the first run's API work alone (``raw_fleet``): the
        floor under the first run's ratio on this machine, where the API servers share the controller's CPUs.
        """
        rows = [{"hosts": size, "phasekit_first_rounds": [], "phasekit_rerun_rounds": [], "raw_first_rounds": [],
                 "role_first_rounds": [], "role_rerun_rounds": [], "phasekit_rerun_cpu_rounds": [],
                 "role_rerun_cpu_rounds": []} for size in sizes]
        for round_no in range(rounds):
            for row in rows:
                site = self.site("phasekit", row["hosts"], PHASES, PER_PHASE)
                row["phasekit_first_rounds"].append(self.phasekit_plan(site))
                row["phasekit_rerun_rounds"].append(self.phasekit_plan(site))
                row["phasekit_rerun_cpu_rounds"].append(self.last["cpu_s"])
                site = self.site("role", row["hosts"], PHASES, PER_PHASE)
                row["role_first_rounds"].append(self.phasekit_role(site))
                row["role_rerun_rounds"].append(self.phasekit_role(site))
                row["role_rerun_cpu_rounds"].append(self.last["cpu_s"])
                if row["hosts"] <= RAW_MAX_HOSTS:
                    row["raw_first_rounds"].append(self.raw_fleet(self.site("raw", row["hosts"], PHASES, PER_PHASE)))
                print(f"bench fleet: round {round_no + 1}, {row['hosts']} hosts, phasekit: first "
                      f"{row['phasekit_first_rounds'][-1]:.2f}s, re-run {row['phasekit_rerun_rounds'][-1]:.2f}s; "
                      f"role: first {row['role_first_rounds'][-1]:.2f}s, re-run {row['role_rerun_rounds'][-1]:.2f}s; "
                      f"re-run CPU: playbook {row['phasekit_rerun_cpu_rounds'][-1]:.2f}s, "
                      f"role {row['role_rerun_cpu_rounds'][-1]:.2f}s"
                      + (f", its API work alone {row['raw_first_rounds'][-1]:.2f}s" if row["raw_first_rounds"] else ""),
                      file=sys.stderr)
                self.cleanup()
        one = rows[0]
        for row in rows:
            if row["raw_first_rounds"] and one["raw_first_rounds"]:
                # the best a first run could do here: the 1-host run (start-up, nearly no API work) plus the
                # API work the extra hosts add, each against the 1-host run of its own round
                row["floor_first_vs_one"] = median([
                    (first_one + raw - raw_one) / first_one for first_one, raw, raw_one in zip(
                        one["phasekit_first_rounds"], row["raw_first_rounds"], one["raw_first_rounds"])])
        for row in rows:
            size = row["hosts"]
            for step in ("first", "rerun"):
                for how in ("phasekit", "role"):
                    row[f"{how}_{step}"] = median(row[f"{how}_{step}_rounds"])
                    # against one host of the same round: the machine's load moves between rounds
                    row[f"{how}_{step}_vs_one"] = median([mine / one for mine, one in zip(
                        row[f"{how}_{step}_rounds"], rows[0][f"{how}_{step}_rounds"])])
                # the role against the playbook, each pair from the same round
                row[f"role_{step}_vs_playbook"] = median([role / playbook for role, playbook in zip(
                    row[f"role_{step}_rounds"], row[f"phasekit_{step}_rounds"])])
            # the controller's CPU time of a re-run (all its processes): steadier than wall time on a loaded machine
            for how in ("phasekit", "role"):
                row[f"{how}_rerun_cpu"] = median(row[f"{how}_rerun_cpu_rounds"])
            for tool in others:
                if tool == "core" and (self.core is None or size > core_max):
                    continue
                site = self.site(tool, size, PHASES, PER_PHASE)
                runner = {"kubectl": self.kubectl_loop, "core": self.kubernetes_core}[tool]
                row[f"{tool}_first"] = runner(site)
                # kubernetes.core sends every object again on a re-run: past CORE_RERUN_MAX hosts its re-run
                # would cost as much as its first run (minutes) and tell nothing new
                if tool != "core" or size <= CORE_RERUN_MAX:
                    row[f"{tool}_rerun"] = runner(site)
                print(f"bench fleet: {size} hosts, {tool}: first {row[f'{tool}_first']:.2f}s, "
                      f"re-run {fmt(row.get(f'{tool}_rerun'))}s", file=sys.stderr)
                self.cleanup()
        return rows

    def raw_fleet(self, site: dict) -> float:
        """A fleet first run's API work alone, from a small raw client: per phase in order, every host's LIST of its
        namespace's ConfigMaps (as phasekit reads before applying), then every object's server-side apply PATCH;
        one TLS context and keep-alive pool per host (its own CA, certificate and key, as separate clusters
        need), as many requests in flight per host as phasekit's share gives it at ``-f 10`` (REQUEST_BUDGET
        over the clusters at once, at most apply's default concurrency). No Ansible, no planning, no results."""
        lanes = min(DEFAULT_APPLY_CONCURRENCY, max(1, REQUEST_BUDGET // min(FORKS, len(site["hosts"]))))
        objects_of = [list(yaml.safe_load_all(bundle.read_text())) for bundle in site["bundles"]]
        began = time.perf_counter()
        config = yaml.safe_load(site["kubeconfig"].read_text())
        clusters = {entry["name"]: entry["cluster"] for entry in config["clusters"]}
        users = {entry["name"]: entry["user"] for entry in config["users"]}
        hosts = []
        for entry in config["contexts"]:
            cluster, user = clusters[entry["context"]["cluster"]], users[entry["context"]["user"]]
            context = ssl.create_default_context(cafile=cluster["certificate-authority"])
            context.load_cert_chain(user["client-certificate"], user["client-key"])
            base = f"{cluster['server']}/api/v1/namespaces/{entry['context']['namespace']}/configmaps"
            hosts.append((urllib3.PoolManager(maxsize=lanes, block=True, ssl_context=context), base))
        headers = {"Content-Type": "application/apply-patch+yaml", "Accept": "application/json"}
        errors = []

        def send(request):
            pool, method, url, body = request
            sent = headers if method == "PATCH" else {"Content-Type": "application/json"} if body else None
            response = pool.request(method, url, body=body, headers=sent)
            if response.status >= 300:
                errors.append(response.status)
            json.loads(response.data)

        def record(number: int):
            """Each host's run record after a phase, as phasekit writes it: read and create after the first
            phase, a merge patch of the phase's key after the others."""
            def write(host):
                pool, base = host
                entry = json.dumps({"data": {f"p{number:02d}": json.dumps([{"run": "bench", "result": "changed"}])}})
                if number == 0:
                    pool.request("GET", f"{base}/phasekit-run-raw")
                    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "phasekit-run-raw"},
                            **json.loads(entry)}
                    send((pool, "POST", base, json.dumps(body).encode()))
                else:
                    response = pool.request("PATCH", f"{base}/phasekit-run-raw", body=entry.encode(),
                                            headers={"Content-Type": "application/merge-patch+json"})
                    if response.status >= 300:
                        errors.append(response.status)
            return write

        with ThreadPoolExecutor(max_workers=min(REQUEST_BUDGET, lanes * len(hosts))) as workers:
            for number, objects in enumerate(objects_of):
                list(workers.map(send, [(pool, "GET", f"{base}?limit=500", None) for pool, base in hosts]))
                # hosts take turns, so the requests in flight spread over them as phasekit's lanes do
                list(workers.map(send, [(pool, "PATCH", f"{base}/{obj['metadata']['name']}?fieldManager=raw",
                                         json.dumps(obj).encode()) for obj in objects for pool, base in hosts]))
                if self.records:
                    list(workers.map(record(number), hosts))
        elapsed = time.perf_counter() - began
        for pool, _base in hosts:
            pool.clear()
        if errors:
            raise SystemExit(f"bench: raw fleet: {len(errors)} errors, e.g. HTTP {errors[0]}")
        return elapsed

    def overhead(self, rounds: int, phases: int = 20) -> dict:
        site = self.site("overhead", 1, phases, 1)
        self.phasekit_plan(site)  # creates the objects: every later run is a no-op
        full, empty = [], []
        skip_all = ",".join(site["phase_names"])
        for _ in range(rounds):
            full.append(self.phasekit_plan(site))
            empty.append(self.phasekit_plan(site, "-e", f"skip={skip_all}"))
        self.cleanup()
        return {"phases": phases, "with_phases": full, "zero_phases": empty,
                "per_phase": (median(full) - median(empty)) / phases}

    def floor(self, rounds: int, count: int = 1000) -> list[dict]:
        results = []
        for round_no in range(rounds):
            row = {}
            for tool in ("raw", "phasekit", "kubectl"):
                ns = f"bf-floor-{tool}-{round_no}-{uuid.uuid4().hex[:4]}"
                self.create_namespaces(["x"], {"x": ns})
                objects = config_maps(ns, count)
                path = self.work / f"{ns}.yaml"
                path.write_text(yaml.safe_dump_all(objects))
                row[tool] = getattr(self, f"floor_{tool}")(objects, path, ns)
            print(f"bench floor: round {round_no + 1}: raw {row['raw']:.2f}s, phasekit {row['phasekit']:.2f}s, "
                  f"kubectl {row['kubectl']:.2f}s", file=sys.stderr)
            results.append(row)
        self.cleanup()
        return results

    def floor_raw(self, objects: list, _path: Path, _ns: str) -> float:
        """The floor: server-side apply PATCHes of every object over 16 keep-alive connections."""
        admin = self.admin["ephemeral"]
        cluster, user = admin["clusters"][0]["cluster"], admin["users"][0]["user"]
        context = ssl.create_default_context(cafile=cluster["certificate-authority"])
        context.load_cert_chain(user["client-certificate"], user["client-key"])
        pool = urllib3.PoolManager(maxsize=16, ssl_context=context)
        server = cluster["server"]
        headers = {"Content-Type": "application/apply-patch+yaml", "Accept": "application/json"}
        bodies = [(f"{server}/api/v1/namespaces/{obj['metadata']['namespace']}/configmaps/{obj['metadata']['name']}"
                   "?fieldManager=floor", json.dumps(obj).encode()) for obj in objects]
        errors = []

        def patch(item):
            response = pool.request("PATCH", item[0], body=item[1], headers=headers)
            if response.status >= 300:
                errors.append(response.status)

        began = time.perf_counter()
        with ThreadPoolExecutor(max_workers=16) as workers:
            list(workers.map(patch, bodies))
        elapsed = time.perf_counter() - began
        pool.clear()
        if errors:
            raise SystemExit(f"bench: raw floor: {len(errors)} errors, e.g. HTTP {errors[0]}")
        return elapsed

    def floor_phasekit(self, _objects: list, path: Path, ns: str) -> float:
        timings = self.work / f"{ns}.timings.json"
        playbook = self.work / f"{ns}.yml"
        kubeconfig = CLUSTERS_DIR / "ephemeral" / "admin.kubeconfig"
        playbook.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "tasks": [
            {"name": "apply", "phasekit.kube.apply": {"kubeconfig": str(kubeconfig), "context": "ephemeral",
                                                      "src": str(path), "namespace": ns}}]}]))
        env = self.ansible_env(ANSIBLE_COLLECTIONS_PATH=str(self.collections),
                               ANSIBLE_CALLBACK_PLUGINS=str(REPO / "bench/callback_plugins"),
                               ANSIBLE_CALLBACKS_ENABLED="bench_timings", BENCH_TIMINGS=str(timings))
        self.run([str(VENV_BIN / "ansible-playbook"), str(playbook)], env=env)
        return json.loads(timings.read_text())[0]["seconds"]

    def floor_kubectl(self, _objects: list, path: Path, _ns: str) -> float:
        kubeconfig = CLUSTERS_DIR / "ephemeral" / "admin.kubeconfig"
        return self.run(["kubectl", "--kubeconfig", str(kubeconfig), "apply", "--server-side", "-f", str(path)])

    def large(self, sizes: list[int], phases: int = 10) -> dict:
        """``sizes`` cluster hosts x ``phases`` phases (one ConfigMap a phase), first run and re-run, one size
        after the other; the cost per host and phase against the smallest size's, and the controller's peak
        memory (its largest process: ansible-playbook, or the worker that runs the plan)."""
        rows = []
        for hosts in sizes:
            site = self.site("large", hosts, phases, 1)
            row = {"hosts": hosts, "phases": phases}
            for step in ("first", "rerun"):
                row[step] = self.phasekit_plan(site)
                row[f"{step}_peak_mib"] = self.last["peak_mib"]
                row[f"{step}_ms_per_host_phase"] = row[step] * 1000 / (hosts * phases)
            print(f"bench large: {hosts} hosts x {phases} phases: first {row['first']:.1f}s, re-run {row['rerun']:.1f}s, "
                  f"peak {row['first_peak_mib']:.0f} / {row['rerun_peak_mib']:.0f} MiB", file=sys.stderr)
            self.cleanup()
            rows.append(row)
        for row in rows:
            for step in ("first", "rerun"):
                row[f"{step}_vs_smallest"] = row[f"{step}_ms_per_host_phase"] / rows[0][f"{step}_ms_per_host_phase"]
        return {"rows": rows}

    def requests(self, sizes: list[int]) -> list[dict]:
        """The fleet plan's API requests (run records included) and watches, first run and no-op re-run, per size,
        as the run counts them (its -vvv line)."""
        rows = []
        for size in sizes:
            site = self.site("requests", size, PHASES, PER_PHASE)
            row = {"hosts": size}
            for step in ("first", "rerun"):
                self.phasekit_plan(site, "-vvv")
                counted = REQUESTS_LINE.search(self.last["stdout"])
                if counted is None:
                    raise SystemExit("bench: the run printed no request count (phasekit.kube.run_phases at -vvv)")
                row[f"{step}_requests"], row[f"{step}_watches"] = int(counted.group(1)), int(counted.group(2))
            print(f"bench requests: {size} hosts: first run {row['first_requests']} ({row['first_watches']} watches), "
                  f"re-run {row['rerun_requests']} ({row['rerun_watches']} watches)", file=sys.stderr)
            self.cleanup()
            rows.append(row)
        return rows

    def outputs(self, sizes: list[int]) -> list[dict]:
        """The fleet plan's first-run API requests without and with an output on every phase (the first ConfigMap's
        ``.data.phase``, which the phase applies), as the run counts them (its -vvv line)."""
        rows = []
        for size in sizes:
            row = {"hosts": size}
            for variant in ("without", "with"):
                site = self.site(f"outputs-{variant}", size, PHASES, PER_PHASE)
                if variant == "with":
                    plan = site["root"] / "phases" / "plan.yaml"
                    documents = list(yaml.safe_load_all(plan.read_text()))
                    for document in documents:
                        document["spec"]["outputs"] = {"phase": {
                            "kind": "ConfigMap", "name": f"{document['metadata']['name']}-00", "jsonpath": "{.data.phase}"}}
                    plan.write_text(yaml.safe_dump_all(documents))
                self.phasekit_plan(site, "-vvv")
                counted = REQUESTS_LINE.search(self.last["stdout"])
                if counted is None:
                    raise SystemExit("bench: the run printed no request count (phasekit.kube.run_phases at -vvv)")
                row[f"{variant}_requests"] = int(counted.group(1))
                self.cleanup()
            row["extra"] = row["with_requests"] - row["without_requests"]
            print(f"bench outputs: {size} hosts: {row['without_requests']} requests without outputs, "
                  f"{row['with_requests']} with ({row['extra']} more)", file=sys.stderr)
            rows.append(row)
        return rows

    def lock(self, sizes: list[int], rounds: int, baseline: Path) -> list[dict]:
        """The lock's cost: the fleet plan (PHASES x PER_PHASE) over each size, first run and no-op re-run, with
        this tree and with ``baseline`` (the tree before the lock), taking turns in each round."""
        trees = {"lock": self.collections, "baseline": collections_root(self.work / "baseline", baseline)}
        rows = []
        for size in sizes:
            row = {"hosts": size}
            for round_no in range(rounds):
                for tree, collections in trees.items():
                    site = self.site(f"lock-{tree}", size, PHASES, PER_PHASE)
                    for step in ("first", "rerun"):
                        seconds = self.phasekit_plan(site, collections=collections)
                        row.setdefault(f"{tree}_{step}_rounds", []).append(seconds)
                        row.setdefault(f"{tree}_{step}_cpu_rounds", []).append(self.last["cpu_s"])
                    print(f"bench lock: round {round_no + 1}, {size} hosts, {tree}: first "
                          f"{row[f'{tree}_first_rounds'][-1]:.2f}s, re-run {row[f'{tree}_rerun_rounds'][-1]:.2f}s "
                          f"(CPU {row[f'{tree}_rerun_cpu_rounds'][-1]:.2f}s)", file=sys.stderr)
                    self.cleanup()
            for step in ("first", "rerun"):
                for what in ("", "_cpu"):
                    mine, theirs = row[f"lock_{step}{what}_rounds"], row[f"baseline_{step}{what}_rounds"]
                    row[f"lock_{step}{what}"], row[f"baseline_{step}{what}"] = median(mine), median(theirs)
                    # each round's pair against itself: the machine's load moves between rounds
                    row[f"{step}{what}_cost"] = median([ours / base - 1 for ours, base in zip(mine, theirs)])
            rows.append(row)
        return rows

    def recap(self, sizes: list[int], rounds: int, baseline: Path) -> list[dict]:
        """What ``plan_host_results`` costs: the fleet plan (PHASES x PER_PHASE) through the role in ``site.yml``,
        first run and no-op re-run, for the baseline tree (``main``: today's role), this tree with the option off
        (the default) and on, taking turns in each round."""
        variants = {"baseline": (collections_root(self.work / "recap-baseline", baseline), ()),
                    "off": (self.collections, ()),
                    "on": (self.collections, ("-e", "plan_host_results=true"))}
        rows = []
        for size in sizes:
            row = {"hosts": size}
            for round_no in range(rounds):
                for variant, (collections, extra) in variants.items():
                    site = self.site(f"recap-{variant}", size, PHASES, PER_PHASE)
                    for step in ("first", "rerun"):
                        seconds = self.phasekit_role(site, *extra, collections=collections)
                        row.setdefault(f"{variant}_{step}_rounds", []).append(seconds)
                        row.setdefault(f"{variant}_{step}_cpu_rounds", []).append(self.last["cpu_s"])
                    print(f"bench recap: round {round_no + 1}, {size} hosts, {variant}: first "
                          f"{row[f'{variant}_first_rounds'][-1]:.2f}s, re-run {row[f'{variant}_rerun_rounds'][-1]:.2f}s "
                          f"(CPU {row[f'{variant}_rerun_cpu_rounds'][-1]:.2f}s)", file=sys.stderr)
                    self.cleanup()
            for variant in variants:
                for step in ("first", "rerun"):
                    for what in ("", "_cpu"):
                        mine, base = row[f"{variant}_{step}{what}_rounds"], row[f"baseline_{step}{what}_rounds"]
                        row[f"{variant}_{step}{what}"] = median(mine)
                        # each round against the same round's baseline: the machine's load moves between rounds
                        row[f"{variant}_{step}{what}_cost"] = median([ours - theirs for ours, theirs in zip(mine, base)])
            rows.append(row)
        return rows

    def preview(self, sizes: list[int], rounds: int) -> list[dict]:
        """A preview (``--check``) of the fleet plan on clusters that hold nothing of it, against the same plan's
        real first run right after it, on a fresh site each round (issue #40: goal within 1.3x)."""
        rows = []
        for size in sizes:
            row = {"hosts": size}
            for round_no in range(rounds):
                site = self.site("preview", size, PHASES, PER_PHASE, empty=True)
                for step, extra in (("preview", ("--check",)), ("first", ())):
                    row.setdefault(f"{step}_rounds", []).append(self.phasekit_plan(site, *extra))
                    row.setdefault(f"{step}_cpu_rounds", []).append(self.last["cpu_s"])
                    if step == "preview" and "Plan: " not in self.last["stdout"]:
                        raise SystemExit("bench: the preview printed no plan summary (Plan: N to add, ...)")
                print(f"bench preview: round {round_no + 1}, {size} hosts: preview {row['preview_rounds'][-1]:.2f}s, "
                      f"first run {row['first_rounds'][-1]:.2f}s", file=sys.stderr)
                self.cleanup()
            for what in ("", "_cpu"):
                row[f"preview{what}"] = median(row[f"preview{what}_rounds"])
                row[f"first{what}"] = median(row[f"first{what}_rounds"])
                # each round's pair against itself: the machine's load moves between rounds
                row[f"ratio{what}"] = median([ours / base for ours, base in
                                              zip(row[f"preview{what}_rounds"], row[f"first{what}_rounds"])])
            rows.append(row)
        return rows

    def rollout_site(self, hosts: int, rollout: bool, broken: tuple = ()) -> dict:
        """A 3-child group phase over ``hosts`` cluster hosts (each child applies one ConfigMap), with the rollout
        ``ROLLOUT`` or without; ``broken`` hosts use a context whose namespace does not exist (their apply fails)."""
        site = self.site("rollout" if rollout else "plain", hosts, 3, 1)
        spec = {"cluster": "all", "phases": [{"name": f"c{number}", "executor": "apply",
                                              "source": f"../manifests/p{number:02d}.yaml"} for number in range(3)]}
        if rollout:
            spec["rollout"] = ROLLOUT
        documents = [{"apiVersion": API, "kind": "Phase", "metadata": {"name": "fleetwide"}, "spec": spec}]
        (site["root"] / "phases" / "plan.yaml").write_text(yaml.safe_dump_all(documents))
        if broken:
            config = yaml.safe_load(site["kubeconfig"].read_text())
            for host in broken:
                config["contexts"].append({"name": f"{host}-broken", "context": {
                    "cluster": f"{host}-cluster", "user": f"{host}-user", "namespace": "bf-no-such-namespace"}})
            site["kubeconfig"].write_text(yaml.safe_dump(config))
            inventory = yaml.safe_load((site["root"] / "inventory.yml").read_text())
            for host in broken:
                inventory["all"]["hosts"][host]["kube_context"] = f"{host}-broken"
            (site["root"] / "inventory.yml").write_text(yaml.safe_dump(inventory))
        return site

    def touched(self, site: dict, hosts: list[str]) -> list[str]:
        """Which of ``hosts`` hold an object of the plan (its first child's ConfigMap)."""
        found = set()
        for cluster in CLUSTERS:
            done = subprocess.run(["kubectl", "--kubeconfig", str(CLUSTERS_DIR / cluster / "admin.kubeconfig"), "get",
                                   "configmaps", "-A", "--field-selector", "metadata.name=p00-00", "-o",
                                   "jsonpath={.items[*].metadata.namespace}"],
                                  env=self.env, capture_output=True, text=True, check=True)
            found.update(done.stdout.split())
        namespace = {site["namespaces"][host]: host for host in hosts}
        return sorted(namespace[name] for name in found if name in namespace)

    def rollout(self, hosts: int) -> dict:
        """The same 3-child phase over ``hosts`` clusters without and with a rollout in batches [1, "10%", "100%"]
        (pause 0), first run and re-run: the rollout's cost over the plain phase, per batch; then a rollout whose
        second batch has failed clusters: none of the third batch's clusters is touched."""
        sizes = batch_sizes(hosts)
        result = {"hosts": hosts, "batches": sizes}
        for kind in ("plain", "rollout"):
            site = self.rollout_site(hosts, kind == "rollout")
            for step in ("first", "rerun"):
                result[f"{kind}_{step}"] = self.phasekit_plan(site)
                result[f"{kind}_{step}_phases"] = child_phase_seconds(self.last["stdout"])
            self.cleanup()
        for step in ("first", "rerun"):
            result[f"per_batch_{step}"] = (result[f"rollout_{step}"] - result[f"plain_{step}"]) / len(sizes)
            # the barriers: the children's own time (each child's line, per batch) beyond the plain run's children;
            # what is left of the extra cost is the controller's, per batch (target under 0.1 s)
            result[f"barriers_{step}"] = result[f"rollout_{step}_phases"] - result[f"plain_{step}_phases"]
            result[f"overhead_per_batch_{step}"] = (
                result[f"rollout_{step}"] - result[f"plain_{step}"] - result[f"barriers_{step}"]) / len(sizes)
        hosts_list = [f"c{i:03d}" for i in range(hosts)]
        second = hosts_list[sizes[0]:sizes[0] + sizes[1]]
        broken = tuple(second[::max(1, len(second) // 3)][:3])
        site = self.rollout_site(hosts, True, broken)
        result["failure_run"] = self.phasekit_plan(site, rc=2)
        output = self.last["stdout"]
        after = hosts_list[sizes[0] + sizes[1]:]
        result["failure_broken"] = list(broken)
        result["failure_stopped"] = "stopped at batch 2 of 3" in output
        result["failure_touched_after"] = len(self.touched(site, after))
        result["failure_untouched_said"] = f"{len(after)} cluster(s) never touched" in output
        print(f"bench rollout: {hosts} hosts: plain {result['plain_first']:.1f}s / {result['plain_rerun']:.1f}s, "
              f"rollout {result['rollout_first']:.1f}s / {result['rollout_rerun']:.1f}s; with failures in batch 2: "
              f"stopped there {result['failure_stopped']}, clusters touched after it "
              f"{result['failure_touched_after']}", file=sys.stderr)
        self.cleanup()
        return result


REQUESTS_LINE = re.compile(r"phasekit\.kube\.run_phases: (\d+) API request\(s\), (\d+) of them watches")
PHASE_LINE = re.compile(r"^\[(?:[^\]]*/)?c[0-9]\] .*\((\d+(?:\.\d+)?)s\)$")


def baseline_tree(work: Path, ref: str) -> Path:
    """The collection as it was at ``ref`` (default: just before the lock was added), exported from git."""
    if not ref:
        added = subprocess.run(["git", "-C", str(REPO), "log", "--format=%H", "--diff-filter=A", "--",
                                "plugins/module_utils/phases/lock.py"], capture_output=True, text=True, check=True)
        ref = added.stdout.split()[-1] + "^"
    tree = work / "baseline-tree"
    tree.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(REPO), "archive", ref], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    return tree


def child_phase_seconds(output: str) -> float:
    """The seconds of the rollout scenario's child phases (c0, c1, c2) as their outcome lines give them, every
    batch's; progress lines of a phase still running are not counted."""
    return sum(float(match.group(1)) for line in output.splitlines()
               if "still running" not in line and (match := PHASE_LINE.match(line.strip())))


def batch_sizes(hosts: int) -> list[int]:
    """The batch sizes of ROLLOUT over ``hosts`` clusters (Ansible's serial rules, as the collection computes)."""
    sizes, left = [], hosts
    for size in ROLLOUT["batches"]:
        if left <= 0:
            break
        count = min(left, size if isinstance(size, int) else max(1, int(int(size[:-1]) / 100.0 * hosts)))
        sizes.append(count)
        left -= count
    return sizes


# ---------------------------------------------------------------- report

def fmt(value) -> str:
    return "–" if value is None else f"{value:.2f}"


def ratio(theirs, ours) -> str:
    return "–" if theirs is None or ours is None else f"{theirs / ours:.1f}x"


def report(results: dict) -> str:
    out = []
    if results.get("preview"):
        out += ["A preview (`--check`) of the fleet plan on clusters that hold nothing of it, against its real first "
                "run (medians; the ratio is the median of each round's; goal: within 1.3x):", "",
                "| hosts | preview (s) | first run (s) | preview / first run | CPU preview / first run (s) "
                "| CPU ratio | within 1.3x |", "|---:|---:|---:|---:|---|---:|---|"]
        for row in results["preview"]:
            out.append(f"| {row['hosts']} | {fmt(row['preview'])} | {fmt(row['first'])} | {row['ratio']:.2f}x "
                       f"| {fmt(row['preview_cpu'])} / {fmt(row['first_cpu'])} | {row['ratio_cpu']:.2f}x "
                       f"| {'yes' if row['ratio'] <= 1.3 else 'no'} |")
        out.append("")
    if results.get("requests"):
        out += ["| hosts | first run: requests | of them watches | no-op re-run: requests | of them watches |",
                "|---:|---:|---:|---:|---:|"]
        out += [f"| {row['hosts']} | {row['first_requests']} | {row['first_watches']} | {row['rerun_requests']} "
                f"| {row['rerun_watches']} |" for row in results["requests"]]
        out.append("")
    if results.get("outputs"):
        out += ["| hosts | first run: requests without outputs | with an output on every phase | more |",
                "|---:|---:|---:|---:|"]
        out += [f"| {row['hosts']} | {row['without_requests']} | {row['with_requests']} | {row['extra']} |"
                for row in results["outputs"]]
        out.append("")
    if results.get("recap"):
        out += ["The role in `site.yml`: `main` (today), this tree with `plan_host_results` false (default) and true "
                "(medians; the cost is the median of each round's difference to the same round's `main`):", "",
                "| hosts | step | main (s) | off (s) | off cost (s) | on (s) | on cost (s) | CPU main / off / on (s) "
                "| CPU cost off / on (s) |", "|---:|---|---:|---:|---:|---:|---:|---|---|"]
        for row in results["recap"]:
            for step in ("first", "rerun"):
                out.append(f"| {row['hosts']} | {'first run' if step == 'first' else 'no-op re-run'} "
                           f"| {fmt(row[f'baseline_{step}'])} | {fmt(row[f'off_{step}'])} "
                           f"| {row[f'off_{step}_cost']:+.2f} | {fmt(row[f'on_{step}'])} | {row[f'on_{step}_cost']:+.2f} "
                           f"| {fmt(row[f'baseline_{step}_cpu'])} / {fmt(row[f'off_{step}_cpu'])} "
                           f"/ {fmt(row[f'on_{step}_cpu'])} | {row[f'off_{step}_cpu_cost']:+.2f} "
                           f"/ {row[f'on_{step}_cpu_cost']:+.2f} |")
        out.append("")
    if results.get("lock"):
        out += ["| hosts | step | without the lock (s) | with it (s) | cost (wall) | CPU without (s) | CPU with (s) "
                "| cost (CPU) |", "|---:|---|---:|---:|---:|---:|---:|---:|"]
        for row in results["lock"]:
            for step in ("first", "rerun"):
                out.append(f"| {row['hosts']} | {'first run' if step == 'first' else 'no-op re-run'} "
                           f"| {fmt(row[f'baseline_{step}'])} | {fmt(row[f'lock_{step}'])} "
                           f"| {row[f'{step}_cost'] * 100:+.1f}% | {fmt(row[f'baseline_{step}_cpu'])} "
                           f"| {fmt(row[f'lock_{step}_cpu'])} | {row[f'{step}_cpu_cost'] * 100:+.1f}% |")
        out.append("")
    fleet = results.get("fleet")
    if fleet:
        base = fleet[0]
        out += ["| hosts | step | phasekit (s) | vs 1 host | kubectl loop (s) | x vs kubectl | kubernetes.core (s) "
                "| x vs k8s |", "|---:|---|---:|---:|---:|---:|---:|---:|"]
        for row in fleet:
            if row.get("raw_first_rounds"):
                row["raw_first"] = median(row["raw_first_rounds"])
            for step in ("first", "rerun"):
                ours = row.get(f"phasekit_{step}")
                vs_one = row.get(f"phasekit_{step}_vs_one")
                out.append(f"| {row['hosts']} | {'first run' if step == 'first' else 're-run'} | {fmt(ours)} "
                           f"| {f'{vs_one:.1f}x' if vs_one else ratio(ours, base.get(f'phasekit_{step}'))} "
                           f"| {fmt(row.get(f'kubectl_{step}'))} "
                           f"| {ratio(row.get(f'kubectl_{step}'), ours)} | {fmt(row.get(f'core_{step}'))} "
                           f"| {ratio(row.get(f'core_{step}'), ours)} |")
        out.append("")
        if any(row.get("role_first_rounds") for row in fleet):
            out += ["The role `phasekit.kube.plan` in a user's `site.yml` (as the README and the example site use it) "
                    "against the playbook `phasekit.kube.run`, same plan, same rounds (medians; ratios are medians of "
                    "per-round ratios):", "",
                    "| hosts | step | playbook (s) | role (s) | role / playbook | playbook vs 1 host "
                    "| role vs 1 host |",
                    "|---:|---|---:|---:|---:|---:|---:|"]
            for row in fleet:
                for step in ("first", "rerun"):
                    out.append(f"| {row['hosts']} | {'first run' if step == 'first' else 're-run'} "
                               f"| {fmt(row.get(f'phasekit_{step}'))} | {fmt(row.get(f'role_{step}'))} "
                               f"| {row[f'role_{step}_vs_playbook']:.2f}x | {row[f'phasekit_{step}_vs_one']:.2f}x "
                               f"| {row[f'role_{step}_vs_one']:.2f}x |")
            out += ["", "Re-run, the CPU time of all the run's processes (user + system, medians): steadier than the "
                        "wall time when the machine is shared.", "",
                    "| hosts | playbook CPU (s) | role CPU (s) | role / playbook | playbook vs 1 host "
                    "| role vs 1 host |",
                    "|---:|---:|---:|---:|---:|---:|"]
            for row in fleet:
                out.append(f"| {row['hosts']} | {fmt(row['phasekit_rerun_cpu'])} | {fmt(row['role_rerun_cpu'])} "
                           f"| {ratio(row['role_rerun_cpu'], row['phasekit_rerun_cpu'])} "
                           f"| {ratio(row['phasekit_rerun_cpu'], fleet[0]['phasekit_rerun_cpu'])} "
                           f"| {ratio(row['role_rerun_cpu'], fleet[0]['role_rerun_cpu'])} |")
            out.append("")
        floors = [row for row in fleet if row.get("floor_first_vs_one")]
        if floors:
            out += ["First run, the floor on this machine: its API work alone (a raw client sending the same LISTs "
                    "and PATCHes), and the best ratio to 1 host a first run could reach here (the 1-host run plus "
                    "the API work the other hosts add; medians of per-round figures).", "",
                    "| hosts | API work alone (s) | best first run vs 1 host | phasekit first run vs 1 host |",
                    "|---:|---:|---:|---:|"]
            out += [f"| {row['hosts']} | {fmt(row.get('raw_first'))} | {row['floor_first_vs_one']:.1f}x "
                    f"| {row['phasekit_first_vs_one']:.1f}x |" for row in floors]
            out.append("")
    overhead = results.get("overhead")
    if overhead:
        out += [f"Per-phase overhead (1 host, {overhead['phases']} no-op apply phases minus zero phases, medians): "
                f"{median(overhead['with_phases']):.2f}s - {median(overhead['zero_phases']):.2f}s = "
                f"**{overhead['per_phase'] * 1000:.0f} ms a phase**", ""]
    floor = results.get("floor")
    if floor:
        raw, ours, theirs = (median([r[t] for r in floor]) for t in ("raw", "phasekit", "kubectl"))
        out += ["| 1000 ConfigMaps, first apply | seconds (median) | vs the floor |", "|---|---:|---:|",
                f"| raw SSA PATCHes, 16 keep-alive connections (floor) | {raw:.2f} | 1.00x |",
                f"| phasekit.kube.apply (task time) | {ours:.2f} | {ours / raw:.2f}x |",
                f"| kubectl apply --server-side | {theirs:.2f} | {theirs / raw:.2f}x |",
                "", f"phasekit vs kubectl: **{median([r['kubectl'] / r['phasekit'] for r in floor]):.1f}x** faster "
                    "(median of per-round ratios)", ""]
    large = results.get("large")
    if large:
        out += ["| hosts x phases | step | seconds | ms per host-phase | vs the smallest | controller peak (MiB) |",
                "|---|---|---:|---:|---:|---:|"]
        for row in large["rows"]:
            for step in ("first", "rerun"):
                out.append(f"| {row['hosts']} x {row['phases']} | {'first run' if step == 'first' else 're-run'} "
                           f"| {row[step]:.1f} | {row[f'{step}_ms_per_host_phase']:.2f} "
                           f"| {row[f'{step}_vs_smallest']:.2f}x | {fmt(row[f'{step}_peak_mib'])} |")
        out.append("")
    rollout = results.get("rollout")
    if rollout:
        out += [f"A 3-child phase over {rollout['hosts']} cluster hosts, batches {ROLLOUT['batches']} "
                f"({rollout['batches']}), pause 0:", "",
                "| step | without rollout (s) | with rollout (s) | extra cost per batch (s) "
                "| the batches' barriers (s) | controller overhead per batch (s) |", "|---|---:|---:|---:|---:|---:|"]
        for step in ("first", "rerun"):
            out.append(f"| {'first run' if step == 'first' else 're-run'} | {rollout[f'plain_{step}']:.2f} "
                       f"| {rollout[f'rollout_{step}']:.2f} | {rollout[f'per_batch_{step}']:.3f} "
                       f"| {rollout[f'barriers_{step}']:.2f} | {rollout[f'overhead_per_batch_{step}']:.3f} |")
        out += ["", f"Injected failures in batch 2 ({', '.join(rollout['failure_broken'])}): the rollout stopped at "
                    f"batch 2: {rollout['failure_stopped']}; clusters of batch 3 touched: "
                    f"**{rollout['failure_touched_after']}**; the stop message lists them as never touched: "
                    f"{rollout['failure_untouched_said']}", ""]
    return "\n".join(out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,10,60,200")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--core-max-hosts", type=int, default=200)
    parser.add_argument("--skip", default="",
                        help="comma-separated scenarios to skip: fleet,overhead,floor,large,rollout,requests")
    parser.add_argument("--large-sizes", default="500,2000,5000",
                        help="cluster hosts of the large scenario (10 phases each), smallest first")
    parser.add_argument("--rollout-hosts", type=int, default=500, help="cluster hosts of the rollout scenario")
    parser.add_argument("--fleet-others", default="kubectl,core",
                        help="the other tools of the fleet scenario (kubectl,core; empty: phasekit's playbook "
                             "and role only)")
    parser.add_argument("--collection", type=Path, default=None,
                        help="the phasekit.kube tree to measure (default: this checkout), e.g. an export of "
                             "another commit")
    parser.add_argument("--only", default="", help="comma-separated scenarios to run (the others are skipped)")
    parser.add_argument("--lock-sizes", default="60,500", help="cluster hosts of the lock scenario")
    parser.add_argument("--request-sizes", default="1,60", help="cluster hosts of the requests scenario")
    parser.add_argument("--outputs-sizes", default="500", help="cluster hosts of the outputs scenario")
    parser.add_argument("--lock-baseline", default="",
                        help="git ref of the tree without the lock (default: the parent of the commit that added "
                             "plugins/module_utils/phases/lock.py)")
    parser.add_argument("--recap-sizes", default="1,60,500", help="cluster hosts of the recap scenario")
    parser.add_argument("--recap-baseline", default="main", help="git ref of the role to compare the recap scenario with")
    parser.add_argument("--preview-sizes", default="3,60", help="cluster hosts of the preview scenario")
    parser.add_argument("--no-records", action="store_true",
                        help="phasekit runs with plan_record=false, and the floor writes no run records")
    args = parser.parse_args(argv)
    skip = set(filter(None, args.skip.split(",")))
    scenarios = {"floor", "overhead", "fleet", "large", "rollout", "lock", "requests", "recap", "outputs", "preview"}
    if args.only:
        skip = scenarios - set(args.only.split(","))
    else:
        # before/after comparisons: asked for by name (--only lock, --only recap, --only outputs, --only preview)
        skip.update({"lock", "recap", "outputs", "preview"})
    bin_dir = tools_bin()
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{VENV_BIN}{os.pathsep}{os.environ['PATH']}")
    env.pop("KUBECONFIG", None)
    subprocess.run([sys.executable, str(REPO / "hack/clusters.py"), "up", *CLUSTERS], check=True, env=env,
                   capture_output=True, text=True)
    others = tuple(filter(None, args.fleet_others.split(",")))
    core = None if "fleet" in skip or "core" not in others else kubernetes_core_collections()
    results = {"date": time.strftime("%Y-%m-%d %H:%M"), "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
               "python": platform.python_version(), "records": not args.no_records}
    with tempfile.TemporaryDirectory(prefix="phasekit-fleet-bench-") as tmp:
        bench = Bench(Path(tmp), env, core, records=not args.no_records, collection=args.collection)
        try:
            if "floor" not in skip:
                # the floor moves by ±20 % from round to round on a 2-CPU machine: at least 5 rounds for its median
                results["floor"] = bench.floor(max(args.rounds, 5))
            if "overhead" not in skip:
                results["overhead"] = bench.overhead(args.rounds)
            if "fleet" not in skip:
                results["fleet"] = bench.fleet([int(s) for s in args.sizes.split(",")], args.core_max_hosts,
                                               args.rounds, others)
            if "large" not in skip:
                results["large"] = bench.large([int(size) for size in args.large_sizes.split(",")])
            if "rollout" not in skip:
                results["rollout"] = bench.rollout(args.rollout_hosts)
            if "requests" not in skip:
                results["requests"] = bench.requests([int(size) for size in args.request_sizes.split(",")])
            if "outputs" not in skip:
                results["outputs"] = bench.outputs([int(size) for size in args.outputs_sizes.split(",")])
            if "lock" not in skip:
                results["lock"] = bench.lock([int(size) for size in args.lock_sizes.split(",")], args.rounds,
                                             baseline_tree(Path(tmp), args.lock_baseline))
            if "preview" not in skip:
                results["preview"] = bench.preview([int(size) for size in args.preview_sizes.split(",")], args.rounds)
            if "recap" not in skip:
                results["recap"] = bench.recap([int(size) for size in args.recap_sizes.split(",")], args.rounds,
                                               baseline_tree(Path(tmp) / "recap", args.recap_baseline))
        finally:
            bench.cleanup()
    text = report(results)
    out_dir = REPO / "bench" / "results" / time.strftime("%Y%m%d-%H%M%S")
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "fleet.md").write_text(text + "\n")
    (out_dir / "fleet.json").write_text(json.dumps(results, indent=1))
    print(text)
    print(f"bench: written to {out_dir}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
