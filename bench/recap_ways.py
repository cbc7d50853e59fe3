#!/usr/bin/env python3
# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Benchmark: the ways a play could give each of N hosts its own PLAY RECAP line after one run-once task.

No cluster: N local hosts, a role whose first task runs once and sets each host's outcome (as the plan role's engine
does), then one of these tails, every way in each round (interleaved), wall time and CPU time of the whole
``ansible-playbook`` (all its processes):

- none: nothing after the run-once task (the floor);
- end_role: ``meta: end_role`` on every host (the plan role's tail on ansible-core 2.18+ today): no PLAY RECAP line;
- task: one task per host whose result is its outcome (``debug`` with ``changed_when``): a worker process per host;
- include: an ``include_tasks`` of a file without tasks per host (the 2.16/2.17 tail): a worker per host, ``ok`` only;
- include+task: the include, then the task (what ``plan_host_results: true`` runs);
- strategy: a strategy plugin (linear, with the outcome task's result made in the controller's process, no worker).
  ansible-core 2.19 and later deprecate strategy plugins outside ansible.builtin (a warning on every run, no
  compatibility promise), so phasekit.kube does not ship it; it is measured here as the cost floor of a per-host line.

Usage: python bench/recap_ways.py [--sizes 60,500] [--rounds 3] [--ansible-playbook PATH]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ENGINE = """\
- name: Engine (run once)
  ansible.builtin.set_fact:
    outcomes: "{{ dict(ansible_play_hosts_all | zip(['ok', 'changed'] * 5000)) }}"
  run_once: true
"""
TAILS = {
    "none": "",
    "end_role": """\
- name: Clusters with nothing left to do leave the role
  ansible.builtin.meta: end_role
  when: inventory_hostname not in []
""",
    "task": """\
- name: This cluster's result
  ansible.builtin.debug:
    msg: "{{ outcomes[inventory_hostname] }}"
  changed_when: outcomes[inventory_hostname] == 'changed'
""",
    "include": """\
- name: This cluster
  ansible.builtin.include_tasks: empty.yml
""",
    "include+task": """\
- name: This cluster
  ansible.builtin.include_tasks: result.yml
""",
    "strategy": """\
- name: This cluster's result
  outcome:
    results: "{{ outcomes }}"
""",
}
RESULT = TAILS["task"]
ACTION = """\
from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        outcome = self._task.args["results"].get(task_vars["inventory_hostname"], "ok")
        return {"changed": outcome == "changed", "msg": outcome}
"""
# the prototype: linear, but the "outcome" action's result is made in the controller's process and handed to the
# strategy's own result processing (stats, callbacks) as a worker's would be
STRATEGY = """\
from ansible.plugins.strategy.linear import StrategyModule as Linear
from ansible.template import Templar
try:
    from ansible.executor.task_result import _WireTaskResult
except ImportError:  # before 2.19
    _WireTaskResult = None
from ansible.executor.task_result import TaskResult


class StrategyModule(Linear):
    def _queue_task(self, host, task, task_vars, play_context):
        if task.action != "outcome":
            return super()._queue_task(host, task, task_vars, play_context)
        if getattr(self, "_outcome_args", (None,))[0] != task._uuid:  # templated once per task, not per host
            self._outcome_args = (task._uuid, Templar(loader=self._loader, variables=task_vars).template(task.args))
        outcome = self._outcome_args[1]["results"].get(host.name, "ok")
        data = {"changed": outcome == "changed", "msg": outcome}
        self._queued_task_cache[(host.name, task._uuid)] = {"host": host, "task": task, "task_vars": task_vars,
                                                           "play_context": play_context}
        self._tqm.send_callback("v2_runner_on_start", host, task)
        fields = task.dump_attrs()
        if _WireTaskResult is not None:
            result = self._convert_wire_task_result_to_raw(_WireTaskResult(
                host_name=host.name, task_uuid=task._uuid, return_data=data, task_fields=fields))
        else:
            result = self.normalize_task_result(TaskResult(host.name, task._uuid, data, fields))
        with self._results_lock:
            self._results.append(result)
        self._pending_results += 1
"""


def write_tree(root: Path, sizes: list[int]) -> None:
    tasks = root / "roles" / "r" / "tasks"
    tasks.mkdir(parents=True)
    (tasks / "empty.yml").write_text("[]\n")
    (tasks / "result.yml").write_text(RESULT)
    (root / "action_plugins").mkdir()
    (root / "action_plugins" / "outcome.py").write_text(ACTION)
    (root / "strategy_plugins").mkdir()
    (root / "strategy_plugins" / "outcome_linear.py").write_text(STRATEGY)
    for way, tail in TAILS.items():
        name = way.replace("+", "_")
        (tasks / f"{name}.yml").write_text(ENGINE + tail)
        strategy = "  strategy: outcome_linear\n" if way == "strategy" else ""
        (root / f"site_{name}.yml").write_text(
            f"- hosts: all\n  gather_facts: false\n{strategy}  tasks:\n    - ansible.builtin.import_role:\n"
            f"        name: r\n        tasks_from: {name}\n")
    for size in sizes:
        hosts = "".join(f"    c{number:04d}:\n" for number in range(size))
        (root / f"inventory{size}.yml").write_text(f"all:\n  vars:\n    ansible_connection: local\n  hosts:\n{hosts}")


def run(root: Path, playbook_bin: str, size: int, way: str) -> tuple[float, float, int]:
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_RETRY_FILES_ENABLED="0",
               ANSIBLE_ROLES_PATH=str(root / "roles"), ANSIBLE_ACTION_PLUGINS=str(root / "action_plugins"),
               ANSIBLE_STRATEGY_PLUGINS=str(root / "strategy_plugins"), ANSIBLE_DEPRECATION_WARNINGS="0",
               ANSIBLE_PYTHON_INTERPRETER=sys.executable)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run([playbook_bin, "-f", "10", "-i", str(root / f"inventory{size}.yml"),
                           str(root / f"site_{way.replace('+', '_')}.yml")], env=env, capture_output=True, text=True,
                          check=False)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        raise SystemExit(f"{way} at {size} hosts failed:\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}")
    recap = done.stdout[done.stdout.rindex("PLAY RECAP"):].count(" : ok=")
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, recap


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="60,500")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ansible-playbook", default=str(Path(sys.executable).parent / "ansible-playbook"))
    parser.add_argument("--ways", default=",".join(TAILS))
    args = parser.parse_args(argv)
    sizes = [int(size) for size in args.sizes.split(",")]
    ways = args.ways.split(",")
    version = subprocess.run([args.ansible_playbook, "--version"], capture_output=True, text=True,
                             check=True).stdout.splitlines()[0]
    with tempfile.TemporaryDirectory(prefix="phasekit-recap-ways-") as tmp:
        root = Path(tmp)
        write_tree(root, sizes)
        figures = {}
        for size in sizes:
            for round_no in range(args.rounds):
                for way in ways:
                    wall, cpu, recap = run(root, args.ansible_playbook, size, way)
                    figures.setdefault((size, way), []).append((wall, cpu, recap))
                    print(f"bench recap ways: round {round_no + 1}, {size} hosts, {way}: {wall:.2f}s, CPU {cpu:.2f}s, "
                          f"{recap} PLAY RECAP lines", file=sys.stderr)
    print(f"{version}, {os.cpu_count()} CPUs, {args.rounds} rounds, medians; cost: against `none` of the same round\n")
    print("| hosts | way | PLAY RECAP lines | wall (s) | CPU (s) | wall cost (s) | CPU cost (s) | CPU cost a host (ms) |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|")
    for size in sizes:
        floor = figures[(size, "none")] if "none" in ways else None
        for way in ways:
            rows = figures[(size, way)]
            wall_cost = cpu_cost = None
            if floor:
                wall_cost = statistics.median(mine[0] - base[0] for mine, base in zip(rows, floor))
                cpu_cost = statistics.median(mine[1] - base[1] for mine, base in zip(rows, floor))
            print(f"| {size} | {way} | {rows[0][2]} | {statistics.median(r[0] for r in rows):.2f} "
                  f"| {statistics.median(r[1] for r in rows):.2f} "
                  f"| {'-' if wall_cost is None else f'{wall_cost:+.2f}'} | {'-' if cpu_cost is None else f'{cpu_cost:+.2f}'} "
                  f"| {'-' if cpu_cost is None else f'{cpu_cost * 1000 / size:.1f}'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
