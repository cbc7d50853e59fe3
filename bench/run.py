#!/usr/bin/env python3
# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Benchmark: phasekit.kube.apply against kubectl and kubernetes.core.k8s on the local cluster.

Scenarios, each in fresh namespaces and with its own CRD group per tool and round:

- configmaps: 1000 ConfigMaps (plus their Namespace);
- mixed: a CRD, 200 custom resources, 50 Deployments and 50 Services;
- for both: the first apply, the no-op re-apply, and the prune of half the objects.

Tools:

- phasekit: ``phasekit.kube.apply`` with ``applyset`` and ``prune: true`` (one bundle per step);
  the time is the task's own (inside a running ``ansible-playbook``);
- kubectl SSA: ``kubectl apply --server-side`` (no prune);
- kubectl ApplySet: ``kubectl apply --server-side --applyset=... --prune``;
- kubernetes.core: ``kubernetes.core.k8s`` with ``apply: true``, on a tenth of the objects
  (it applies one object after the other); compared per object.

kubectl needs the CRD Established before its custom resources, so its mixed steps are
``apply CRD; wait --for=condition=Established; apply the rest`` (all timed). Usage:

    python bench/run.py [--rounds 3] [--core-scale 0.1] [--keep]

Prints a Markdown table (median of the rounds) and writes it with the raw figures
under bench/results/.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("PHASEKIT_CACHE", Path.home() / ".cache/phasekit"))
VENV_BIN = Path(sys.executable).parent
BENCH_VENV = CACHE / "bench-venv"
ANSIBLE_PACKAGE = "ansible>=12,<13"  # ships kubernetes.core (6.x), only for the comparison
CLUSTER = os.environ.get("BENCH_CLUSTER", "target")
STEPS = ("first", "noop", "prune")


# ---------------------------------------------------------------- environment

def tools_bin() -> Path:
    if os.environ.get("PHASEKIT_BIN"):
        return Path(os.environ["PHASEKIT_BIN"])
    out = subprocess.run(["bash", str(REPO / "hack/build-tools.sh")], check=True, capture_output=True, text=True)
    return Path(out.stdout.strip().splitlines()[-1])


def kubernetes_core_collections() -> Path:
    """kubernetes.core from the 'ansible' PyPI package, in a venv of its own (never the main one)."""
    site = next(BENCH_VENV.glob("lib/python*/site-packages"), None) if BENCH_VENV.exists() else None
    if site is None or not (site / "ansible_collections/kubernetes/core").is_dir():
        print(f"bench: installing {ANSIBLE_PACKAGE} into {BENCH_VENV} for kubernetes.core", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(BENCH_VENV)], check=True)
        subprocess.run([str(BENCH_VENV / "bin/pip"), "install", "-q", ANSIBLE_PACKAGE], check=True)
        site = next(BENCH_VENV.glob("lib/python*/site-packages"))
    return site


def collections_root(work: Path) -> Path:
    """An ANSIBLE_COLLECTIONS_PATH entry in which phasekit.kube is this working tree."""
    root = work / "collections"
    link = root / "ansible_collections" / "phasekit" / "kube"
    link.parent.mkdir(parents=True, exist_ok=True)
    if not link.exists():
        link.symlink_to(REPO)
    return root


# ---------------------------------------------------------------- bundles

def namespace(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def config_maps(ns: str, count: int) -> list:
    return [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{i:04d}", "namespace": ns},
             "data": {"index": str(i), "payload": "x" * 64}} for i in range(count)]


def crd(group: str) -> dict:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"widgets.{group}"},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
                     "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                         "type": "object", "properties": {"spec": {"type": "object", "properties": {
                             "size": {"type": "integer"}, "color": {"type": "string"}}}}}}}]}}


def mixed_rest(ns: str, group: str, crs: int, deployments: int) -> list:
    objects = [{"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": f"w-{i:04d}", "namespace": ns},
                "spec": {"size": i, "color": "blue"}} for i in range(crs)]
    for i in range(deployments):
        labels = {"app": f"app-{i:03d}"}
        objects.append({"apiVersion": "apps/v1", "kind": "Deployment",
                        "metadata": {"name": f"app-{i:03d}", "namespace": ns, "labels": labels},
                        "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                                 "template": {"metadata": {"labels": labels}, "spec": {"containers": [
                                     {"name": "app", "image": "registry.example/app:1.0",
                                      "ports": [{"containerPort": 8080}]}]}}}})
        objects.append({"apiVersion": "v1", "kind": "Service",
                        "metadata": {"name": f"app-{i:03d}", "namespace": ns},
                        "spec": {"selector": labels, "ports": [{"port": 80, "targetPort": 8080}]}})
    return objects


def halve(objects: list) -> list:
    """Every other object of each kind: what stays after the prune step."""
    seen, kept = {}, []
    for obj in objects:
        index = seen.get(obj["kind"], 0)
        seen[obj["kind"]] = index + 1
        if obj["kind"] in ("Namespace", "CustomResourceDefinition") or index % 2 == 0:
            kept.append(obj)
    return kept


def write(path: Path, objects: list) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump_all(objects, sort_keys=False))
    return str(path)


class Bundles:
    """The files one tool uses in one round, sized by ``scale``."""

    def __init__(self, work: Path, tool: str, round_no: int, scale: float):
        tag = f"{tool}-{round_no}-{uuid.uuid4().hex[:5]}"
        self.cm_ns, self.mixed_ns, self.group = f"bench-cm-{tag}", f"bench-mx-{tag}", f"{tag}.bench.phasekit.dev"
        base = work / "bundles" / tag
        cms = [namespace(self.cm_ns)] + config_maps(self.cm_ns, round(1000 * scale))
        rest = mixed_rest(self.mixed_ns, self.group, round(200 * scale), round(50 * scale))
        self.objects = {"configmaps": len(cms) - 1, "mixed": len(rest) + 1}
        self.cm_full, self.cm_half = write(base / "cm-full.yaml", cms), write(base / "cm-half.yaml", halve(cms))
        self.crd = write(base / "mixed-crd.yaml", [crd(self.group)])
        self.rest_full = write(base / "mixed-rest.yaml", [namespace(self.mixed_ns)] + rest)
        self.rest_half = write(base / "mixed-rest-half.yaml", [namespace(self.mixed_ns)] + halve(rest))
        self.mixed_full = write(base / "mixed-full" / "all.yaml",
                                [crd(self.group), namespace(self.mixed_ns)] + rest)
        self.mixed_half = write(base / "mixed-half" / "all.yaml",
                                [crd(self.group), namespace(self.mixed_ns)] + halve(rest))

    def namespaces(self):
        return [self.cm_ns, self.mixed_ns]


# ---------------------------------------------------------------- runners

class Runner:
    def __init__(self, work: Path, kubeconfig: Path, context: str, env: dict, core_collections: Path | None,
                 concurrency: int | None = None):
        self.work, self.kubeconfig, self.context, self.env = work, kubeconfig, context, env
        self.core_collections = core_collections
        self.concurrency = concurrency

    def kubectl(self, *args, applyset_env=False) -> float:
        env = dict(self.env, KUBECTL_APPLYSET="true") if applyset_env else self.env
        began = time.perf_counter()
        done = subprocess.run(["kubectl", "--kubeconfig", str(self.kubeconfig), "--context", self.context, *args],
                              env=env, capture_output=True, text=True, check=False)
        elapsed = time.perf_counter() - began
        if done.returncode != 0:
            raise SystemExit(f"bench: kubectl {' '.join(args)} failed:\n{done.stderr[-3000:]}")
        return elapsed

    def playbook(self, name: str, tasks: list, collections: list) -> tuple[list, float]:
        """Run tasks in one play; returns (per-task timings, ansible-playbook wall time)."""
        path = self.work / f"{name}.yml"
        path.write_text(yaml.safe_dump([{"name": name, "hosts": "localhost", "gather_facts": False,
                                         "tasks": tasks}], sort_keys=False))
        timings = self.work / f"{name}.timings.json"
        env = dict(self.env, ANSIBLE_COLLECTIONS_PATH=os.pathsep.join(str(c) for c in collections),
                   ANSIBLE_CALLBACK_PLUGINS=str(REPO / "bench/callback_plugins"),
                   ANSIBLE_CALLBACKS_ENABLED="bench_timings", BENCH_TIMINGS=str(timings),
                   ANSIBLE_PYTHON_INTERPRETER=sys.executable, ANSIBLE_LOCALHOST_WARNING="0",
                   ANSIBLE_INVENTORY_UNPARSED_WARNING="0", ANSIBLE_NOCOLOR="1")
        began = time.perf_counter()
        done = subprocess.run([str(VENV_BIN / "ansible-playbook"), str(path)], env=env, capture_output=True,
                              text=True, check=False)
        wall = time.perf_counter() - began
        if done.returncode != 0:
            raise SystemExit(f"bench: playbook {name} failed:\n{done.stdout[-4000:]}\n{done.stderr[-2000:]}")
        return json.loads(timings.read_text()), wall

    # ---- one tool, one round: {scenario: {step: seconds}}

    def phasekit(self, b: Bundles, collections: Path) -> dict:
        auth = {"kubeconfig": str(self.kubeconfig), "context": self.context}
        if self.concurrency:
            auth["concurrency"] = self.concurrency

        def step(name, src, applyset, ns):
            return {"name": name, "phasekit.kube.apply": {**auth, "src": src, "applyset": applyset, "namespace": ns,
                                                          "prune": True}}
        tasks = [step("configmaps first", b.cm_full, "cms", b.cm_ns),
                 step("configmaps noop", b.cm_full, "cms", b.cm_ns),
                 step("mixed first", str(Path(b.mixed_full).parent), "mixed", b.mixed_ns),
                 step("mixed noop", str(Path(b.mixed_full).parent), "mixed", b.mixed_ns),
                 step("configmaps prune", b.cm_half, "cms", b.cm_ns),
                 step("mixed prune", str(Path(b.mixed_half).parent), "mixed", b.mixed_ns)]
        timings, wall = self.playbook(f"phasekit-{b.cm_ns}", tasks, [collections])
        seconds = {t["task"]: t["seconds"] for t in timings}
        expect = {"configmaps first": ("created", b.objects["configmaps"] + 1),
                  "configmaps noop": ("unchanged", b.objects["configmaps"] + 1),
                  "configmaps prune": ("pruned", b.objects["configmaps"] // 2),
                  "mixed noop": ("unchanged", b.objects["mixed"] + 1)}
        for t in timings:
            if t["task"] in expect:
                action, count = expect[t["task"]]
                if (t["counts"] or {}).get(action) != count:
                    raise SystemExit(f"bench: phasekit {t['task']}: expected {count} {action}, got {t['counts']}")
        result = {scenario: {s: seconds[f"{scenario} {s}"] for s in STEPS} for scenario in ("configmaps", "mixed")}
        result["playbook_wall"] = wall
        return result

    def kubectl_ssa(self, b: Bundles) -> dict:
        apply = ("apply", "--server-side")
        wait = ("wait", "--for=condition=Established", f"crd/widgets.{b.group}", "--timeout=60s")

        def mixed():
            return self.kubectl(*apply, "-f", b.crd) + self.kubectl(*wait) + self.kubectl(*apply, "-f", b.rest_full)
        return {"configmaps": {"first": self.kubectl(*apply, "-f", b.cm_full),
                               "noop": self.kubectl(*apply, "-f", b.cm_full)},
                "mixed": {"first": mixed(), "noop": mixed()}}

    def kubectl_applyset(self, b: Bundles) -> dict:
        def apply(ns, applyset, path):
            return self.kubectl("apply", "--server-side", f"--applyset={applyset}", "--prune", "-n", ns, "-f", path,
                                applyset_env=True)
        wait = ("wait", "--for=condition=Established", f"crd/widgets.{b.group}", "--timeout=60s")
        for ns in b.namespaces():  # kubectl writes the parent Secret first: its namespace must exist
            self.kubectl("create", "namespace", ns)
        out = {"configmaps": {"first": apply(b.cm_ns, "cms", b.cm_full), "noop": apply(b.cm_ns, "cms", b.cm_full),
                              "prune": apply(b.cm_ns, "cms", b.cm_half)}}

        def mixed(rest):
            return apply(b.mixed_ns, "crds", b.crd) + self.kubectl(*wait) + apply(b.mixed_ns, "mixed", rest)
        out["mixed"] = {"first": mixed(b.rest_full), "noop": mixed(b.rest_full), "prune": mixed(b.rest_half)}
        return out

    def kubernetes_core(self, b: Bundles, collections: Path) -> dict:
        auth = {"kubeconfig": str(self.kubeconfig), "context": self.context}

        def k8s(name, src, **extra):
            return {"name": name, "kubernetes.core.k8s": {**auth, "src": src, "apply": True, "state": "present",
                                                          **extra}}
        crd_task = {"wait": True, "wait_condition": {"type": "Established", "status": "True"}}
        tasks = [k8s("configmaps first", b.cm_full), k8s("configmaps noop", b.cm_full),
                 k8s("mixed crd first", b.crd, **crd_task), k8s("mixed rest first", b.rest_full),
                 k8s("mixed crd noop", b.crd, **crd_task), k8s("mixed rest noop", b.rest_full)]
        timings, _ = self.playbook(f"core-{b.cm_ns}", tasks, [collections, self.core_collections])
        seconds = {t["task"]: t["seconds"] for t in timings}
        return {"configmaps": {"first": seconds["configmaps first"], "noop": seconds["configmaps noop"]},
                "mixed": {"first": seconds["mixed crd first"] + seconds["mixed rest first"],
                          "noop": seconds["mixed crd noop"] + seconds["mixed rest noop"]}}

    def cleanup(self, bundles: list, wait: bool):
        """Delete what a run made; waiting keeps the next run's cluster as quiet (and its fake nodes as empty)."""
        for b in bundles:
            for kind, names in (("namespace", b.namespaces()), ("crd", [f"widgets.{b.group}"])):
                subprocess.run(["kubectl", "--kubeconfig", str(self.kubeconfig), "--context", self.context, "delete",
                                kind, *names, f"--wait={str(wait).lower()}", "--timeout=300s", "--ignore-not-found"],
                               env=self.env, capture_output=True, check=False)


# ---------------------------------------------------------------- report

def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def table(rounds: list, objects: dict, core_objects: dict) -> str:
    """Markdown: per scenario and step, seconds per tool and phasekit's speed-up."""
    def cell(tool, scenario, step):
        return median([r[tool].get(scenario, {}).get(step) for r in rounds if tool in r])

    lines = ["| scenario | step | phasekit (s) | kubectl SSA (s) | kubectl ApplySet (s) | x vs SSA | x vs ApplySet |"
             " kubernetes.core (s, objects) | x vs k8s per object |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for scenario in ("configmaps", "mixed"):
        for step in STEPS:
            ours, ssa, aset = (cell(t, scenario, step) for t in ("phasekit", "kubectl_ssa", "kubectl_applyset"))
            core = cell("kubernetes_core", scenario, step)
            per_object = None
            if core and ours:
                per_object = (core / core_objects[scenario]) / (ours / objects[scenario])
            lines.append("| {} ({} objects) | {} | {} | {} | {} | {} | {} | {} | {} |".format(
                scenario, objects[scenario], step, fmt(ours), fmt(ssa), fmt(aset), ratio(ssa, ours),
                ratio(aset, ours), f"{fmt(core)} ({core_objects[scenario]})" if core else "n/a",
                f"{per_object:.1f}x" if per_object else "n/a"))
    return "\n".join(lines)


def fmt(value):
    return "n/a" if value is None else f"{value:.2f}"


def ratio(theirs, ours):
    return "n/a" if not theirs or not ours else f"{theirs / ours:.1f}x"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds per tool; the table shows medians")
    parser.add_argument("--scale", type=float, default=1.0, help="size of the bundles (1.0 = the issue's sizes)")
    parser.add_argument("--core-scale", type=float, default=0.1, help="size of kubernetes.core's bundles")
    parser.add_argument("--skip-core", action="store_true", help="do not run kubernetes.core")
    parser.add_argument("--keep", action="store_true", help="keep the benchmark namespaces and CRDs")
    parser.add_argument("--concurrency", type=int, help="phasekit's concurrency (default: the module's)")
    args = parser.parse_args(argv)

    bin_dir = tools_bin()
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{VENV_BIN}{os.pathsep}{os.environ['PATH']}")
    env.pop("KUBECONFIG", None)
    # all clusters, in their usual order: a cluster's ports follow its position in the list
    names = os.environ.get("CLUSTERS", "ephemeral target").split()
    subprocess.run([sys.executable, str(REPO / "hack/clusters.py"), "up", *names], check=True, env=env,
                   capture_output=True)
    clusters_dir = Path(os.environ.get("PHASEKIT_CLUSTERS_DIR", CACHE / "clusters"))
    kubeconfig = clusters_dir / CLUSTER / "admin.kubeconfig"
    core = None if args.skip_core else kubernetes_core_collections()
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out_dir = REPO / "bench/results" / stamp
    out_dir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="phasekit-bench-"))
    runner = Runner(work, kubeconfig, CLUSTER, env, core, args.concurrency)
    collections = collections_root(work)
    kubectl_version = subprocess.run(["kubectl", "version", "--client", "-o", "json"], env=env, capture_output=True,
                                     text=True, check=True).stdout
    rounds, made = [], []
    try:
        for round_no in range(args.rounds):
            figures = {}
            for tool in ("phasekit", "kubectl_ssa", "kubectl_applyset", "kubernetes_core"):
                if tool == "kubernetes_core" and core is None:
                    continue
                scale = args.core_scale if tool == "kubernetes_core" else args.scale
                bundles = Bundles(work, tool.replace("_", ""), round_no, scale)
                made.append(bundles)
                print(f"bench: round {round_no + 1}/{args.rounds}: {tool}", file=sys.stderr, flush=True)
                if tool == "phasekit":
                    figures[tool] = runner.phasekit(bundles, collections)
                elif tool == "kubernetes_core":
                    figures[tool] = runner.kubernetes_core(bundles, collections)
                    figures["core_objects"] = bundles.objects
                else:
                    figures[tool] = getattr(runner, tool)(bundles)
                figures.setdefault("objects", {})[tool] = bundles.objects
                if not args.keep:
                    runner.cleanup([bundles], wait=True)
            rounds.append(figures)
    finally:
        if not args.keep:
            runner.cleanup(made, wait=False)  # after a failure; otherwise already gone
        shutil.rmtree(work, ignore_errors=True)
    objects = rounds[0]["objects"]["phasekit"]
    core_objects = rounds[0].get("core_objects", objects)
    report = table(rounds, objects, core_objects)
    playbook_wall = median([r["phasekit"]["playbook_wall"] for r in rounds])
    header = (f"phasekit.kube apply benchmark, {stamp}, cluster '{CLUSTER}' (local kube-apiserver + etcd + KWOK), "
              f"{os.cpu_count()} CPUs, Python {platform.python_version()}, kubectl "
              f"{json.loads(kubectl_version)['clientVersion']['gitVersion']}, median of {args.rounds} round(s)\n\n"
              f"phasekit times are the apply task's own; the whole ansible-playbook run of its six steps took "
              f"{playbook_wall:.2f} s (median), start-up included.\n")
    print(header)
    print(report)
    (out_dir / "results.md").write_text(header + "\n" + report + "\n")
    (out_dir / "results.json").write_text(json.dumps(rounds, indent=1))
    print(f"\nbench: written to {out_dir.relative_to(REPO)}", file=sys.stderr)


if __name__ == "__main__":
    main()
