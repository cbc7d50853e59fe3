# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Benchmark helper: the duration of every task, written as JSON to $BENCH_TIMINGS at the end of the play.

Task time is what a step costs inside a running playbook (Ansible's start-up is measured separately).
"""

from __future__ import annotations

DOCUMENTATION = r"""
name: bench_timings
type: aggregate
short_description: Write task durations to a JSON file (benchmark harness only)
description:
  - Records the wall time of each task, from its start to its result, and writes them to the file named by the
    C(BENCH_TIMINGS) environment variable.
requirements:
  - enabled in ANSIBLE_CALLBACKS_ENABLED
"""

import json
import os
import time

from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "bench_timings"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        self.started = {}
        self.timings = []

    def v2_playbook_on_task_start(self, task, is_conditional):
        self.started[task._uuid] = time.perf_counter()  # pylint: disable=protected-access

    def _record(self, result, ok: bool):
        task = result._task  # pylint: disable=protected-access
        began = self.started.get(task._uuid)  # pylint: disable=protected-access
        if began is None:
            return
        outcome = result._result  # pylint: disable=protected-access
        self.timings.append({"task": task.get_name(), "seconds": time.perf_counter() - began, "ok": ok,
                             "counts": outcome.get("counts"), "msg": outcome.get("msg") if not ok else None})

    def v2_runner_on_ok(self, result):
        self._record(result, True)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._record(result, False)

    def v2_playbook_on_stats(self, stats):
        path = os.environ.get("BENCH_TIMINGS")
        if path:
            with open(path, "w", encoding="utf-8") as out:
                json.dump(self.timings, out, indent=1)
