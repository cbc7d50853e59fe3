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
``apply CRD; wait --for=condition=Established; apply the rest`` (all timed). The machine is
shared with the cluster, so the tools take turns step by step (who goes first rotates per
round), ratios are taken per round and the table shows medians; everything a round made is
deleted, and waited for, before the next round. Usage:

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


def collections_root(work: Path, tree: Path | None = None) -> Path:
    """An ANSIBLE_COLLECTIONS_PATH entry in which phasekit.kube is ``tree`` (default: this working tree)."""
    root = work / "collections"
    link = root / "ansible_collections" / "phasekit" / "kube"
    link.parent.mkdir(parents=True, exist_ok=True)
    if not link.exists():
        link.symlink_to((tree or REPO).resolve())
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
        self.startup: list = []  # ansible-playbook wall time minus the task's own

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

    # ---- one step of one tool: seconds (None: the tool has no such step)

    def phasekit(self, b: Bundles, scenario: str, step: str, collections: Path) -> float:
        """The apply task's own time inside ansible-playbook (start-up excluded, reported apart)."""
        src = {("configmaps", "prune"): b.cm_half, ("mixed", "prune"): str(Path(b.mixed_half).parent)}.get(
            (scenario, step), b.cm_full if scenario == "configmaps" else str(Path(b.mixed_full).parent))
        args = {"kubeconfig": str(self.kubeconfig), "context": self.context, "src": src, "prune": True,
                "applyset": scenario, "namespace": b.cm_ns if scenario == "configmaps" else b.mixed_ns}
        if self.concurrency:
            args["concurrency"] = self.concurrency
        name = f"{scenario} {step}"
        timings, wall = self.playbook(f"phasekit-{b.cm_ns}-{scenario}-{step}",
                                      [{"name": name, "phasekit.kube.apply": args}], [collections])
        self.startup.append(wall - timings[0]["seconds"])
        counts = timings[0]["counts"] or {}
        expected = {"first": ("created", b.objects[scenario] + 1), "noop": ("unchanged", b.objects[scenario] + 1),
                    "prune": ("pruned", b.objects[scenario] // 2 if scenario == "configmaps" else None)}[step]
        if counts.get(expected[0]) != (expected[1] if expected[1] is not None else counts.get(expected[0])) \
                or counts.get("failed"):
            raise SystemExit(f"bench: phasekit {name}: expected {expected}, got {counts}")
        return timings[0]["seconds"]

    def kubectl_ssa(self, b: Bundles, scenario: str, step: str) -> float | None:
        """kubectl apply --server-side; the mixed bundle needs its CRD Established first (timed too)."""
        apply = ("apply", "--server-side")
        if step == "prune":
            return None
        if scenario == "configmaps":
            return self.kubectl(*apply, "-f", b.cm_full)
        return (self.kubectl(*apply, "-f", b.crd) + self.kubectl(*self._wait_crd(b))
                + self.kubectl(*apply, "-f", b.rest_full))

    def kubectl_applyset(self, b: Bundles, scenario: str, step: str) -> float:
        """kubectl apply --server-side --applyset --prune (the CRD in a set of its own: kubectl needs it first)."""
        def apply(applyset, path, ns):
            return self.kubectl("apply", "--server-side", f"--applyset={applyset}", "--prune", "-n", ns, "-f", path,
                                applyset_env=True)
        if step == "first":  # kubectl writes the parent Secret first: its namespace must exist (not timed)
            self.kubectl("create", "namespace", b.cm_ns if scenario == "configmaps" else b.mixed_ns)
        if scenario == "configmaps":
            return apply("cms", b.cm_half if step == "prune" else b.cm_full, b.cm_ns)
        return (apply("crds", b.crd, b.mixed_ns) + self.kubectl(*self._wait_crd(b))
                + apply("mixed", b.rest_half if step == "prune" else b.rest_full, b.mixed_ns))

    @staticmethod
    def _wait_crd(b: Bundles) -> tuple:
        return ("wait", "--for=condition=Established", f"crd/widgets.{b.group}", "--timeout=60s")

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
    """Markdown: per scenario and step, median seconds per tool, and the median of the per-round ratios."""
    def times(tool, scenario, step):
        return [r.get(tool, {}).get(scenario, {}).get(step) for r in rounds]

    def paired(theirs, ours, per_object=1.0):
        return median([t / o * per_object for t, o in zip(theirs, ours) if t and o])

    lines = ["| scenario | step | phasekit (s) | kubectl SSA (s) | kubectl ApplySet (s) | x vs SSA | x vs ApplySet |"
             " kubernetes.core (s, objects) | x vs k8s per object |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for scenario in ("configmaps", "mixed"):
        for step in STEPS:
            ours, ssa, aset, core = (times(t, scenario, step) for t in
                                     ("phasekit", "kubectl_ssa", "kubectl_applyset", "kubernetes_core"))
            per_object = paired(core, ours, objects[scenario] / core_objects[scenario])
            lines.append("| {} ({} objects) | {} | {} | {} | {} | {} | {} | {} | {} |".format(
                scenario, objects[scenario], step, fmt(median(ours)), fmt(median(ssa)), fmt(median(aset)),
                times_x(paired(ssa, ours)), times_x(paired(aset, ours)),
                f"{fmt(median(core))} ({core_objects[scenario]})" if median(core) else "n/a", times_x(per_object)))
    return "\n".join(lines)


def fmt(value):
    return "n/a" if value is None else f"{value:.2f}"


def times_x(value):
    return "n/a" if value is None else f"{value:.1f}x"


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
    tools = ["phasekit", "kubectl_ssa", "kubectl_applyset"]
    try:
        for round_no in range(args.rounds):
            bundles = {tool: Bundles(work, tool.replace("_", ""), round_no, args.scale) for tool in tools}
            made.extend(bundles.values())
            figures = {tool: {} for tool in tools}
            order = tools[round_no % len(tools):] + tools[:round_no % len(tools)]  # who goes first rotates
            for scenario in ("configmaps", "mixed"):
                for step in STEPS:
                    print(f"bench: round {round_no + 1}/{args.rounds}: {scenario} {step}", file=sys.stderr,
                          flush=True)
                    for tool in order:  # the tools take turns, so a busy moment hits all of them alike
                        extra = (collections,) if tool == "phasekit" else ()
                        seconds = getattr(runner, tool)(bundles[tool], scenario, step, *extra)
                        figures[tool].setdefault(scenario, {})[step] = seconds
            if core is not None:
                core_bundles = Bundles(work, "kubernetescore", round_no, args.core_scale)
                made.append(core_bundles)
                print(f"bench: round {round_no + 1}/{args.rounds}: kubernetes.core", file=sys.stderr, flush=True)
                figures["kubernetes_core"] = runner.kubernetes_core(core_bundles, collections)
                figures["core_objects"] = core_bundles.objects
            rounds.append(figures)
            if not args.keep:
                runner.cleanup(made, wait=True)
                made.clear()
    finally:
        if not args.keep:
            runner.cleanup(made, wait=False)  # after a failure
        shutil.rmtree(work, ignore_errors=True)
    objects = bundles["phasekit"].objects
    core_objects = rounds[0].get("core_objects", objects)
    report = table(rounds, objects, core_objects)
    header = (f"phasekit.kube apply benchmark, {stamp}, cluster '{CLUSTER}' (local kube-apiserver + etcd + KWOK), "
              f"{os.cpu_count()} CPUs, Python {platform.python_version()}, kubectl "
              f"{json.loads(kubectl_version)['clientVersion']['gitVersion']}, {args.rounds} round(s): medians, "
              "and medians of the per-round ratios.\n\n"
              "phasekit: the apply task's own time inside ansible-playbook; each one-task ansible-playbook run "
              f"added {median(runner.startup):.2f} s of start-up (median). kubectl: the whole command(s). "
              f"kubernetes.core: the k8s tasks' own time, on {args.core_scale:g} of the objects, compared per "
              "object.\n")
    print(header)
    print(report)
    (out_dir / "results.md").write_text(header + "\n" + report + "\n")
    (out_dir / "results.json").write_text(json.dumps(rounds, indent=1))
    print(f"\nbench: written to {out_dir.relative_to(REPO)}", file=sys.stderr)


if __name__ == "__main__":
    main()
