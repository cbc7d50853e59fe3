# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Action phasekit.kube.plan_summary: a plan run's summary from its records, shown as plain lines, and written for CI
when asked; or lines another task made (the plan's table or tree, a run's summary, the history), shown as they are.

The plan role uses it after a run in steps (a plan with ``tasks`` phases), whose records come from several
controller tasks and from each host's task files; a run in one task gets the same from ``run_phases``. It shows
every table of the role (``lines``): plain lines under the task's banner, not a debug task's JSON.
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible_collections.phasekit.kube.plugins.module_utils.running.outcome import cluster_outcomes, task_result
from ansible_collections.phasekit.kube.plugins.module_utils.running.report import (
    report_entries, write_reports)
from ansible_collections.phasekit.kube.plugins.module_utils.planning.views import (
    drift_gate_applies, drift_verdict, plan_failure_message, summary_lines, summary_tail)
from ansible_collections.phasekit.kube.plugins.plugin_utils.action import PhasekitAction
from ansible_collections.phasekit.kube.plugins.plugin_utils.compat import fail_without_task_origin
from ansible_collections.phasekit.kube.plugins.plugin_utils.output import show_lines

ARGUMENT_SPEC = {
    "records": {"type": "list", "elements": "dict", "default": []},
    "phases": {"type": "list", "elements": "dict", "default": []},
    "lines": {"type": "list", "elements": "str"},
    "hosts": {"type": "list", "elements": "str", "default": []},
    "mode": {"type": "str", "default": "run"},
    "plan": {"type": "str", "default": ""},
    "stopped_by": {"type": "str", "default": ""},
    "tail": {"type": "list", "elements": "str", "default": []},
    "rollout_messages": {"type": "list", "elements": "str", "default": []},
    "fail_on_drift": {"type": "bool", "default": False},
    "servers": {"type": "dict", "default": {}},
    "report_json": {"type": "path", "default": ""},
    "report_junit": {"type": "path", "default": ""},
    "report_timeline": {"type": "path", "default": ""},
    "failure": {"type": "bool", "default": False},
    "outcome": {"type": "dict"},
}


class ActionModule(PhasekitAction):
    ARGUMENT_SPEC = ARGUMENT_SPEC
    PLAIN_ARGS = True

    def run(self, tmp=None, task_vars=None):
        # a cluster's failure names the user's phase document; ansible-core 2.19+ would add the role's task file
        if self._task.args.get("outcome") is not None:
            return fail_without_task_origin(self._outcome(tmp, task_vars))
        return fail_without_task_origin(super().run(tmp, task_vars))

    def _outcome(self, tmp, task_vars) -> dict:
        """One cluster host's own outcome as the task's result. It runs once per host (a worker process each), so it
        skips what a summary needs: the arguments' conversion to plain data imports the kubeconfig glue, about as
        long as the rest of the task."""
        result = super(PhasekitAction, self).run(tmp, task_vars)  # pylint: disable=bad-super-call
        others = sorted(set(self._task.args) - {"outcome"})
        outcome = self._task.args["outcome"]
        if others:
            return {**result, "failed": True, "msg": f"option outcome: not with {', '.join(others)}"}
        if not isinstance(outcome, Mapping):
            return {**result, "failed": True, "msg": "option outcome: expected a dictionary (result and msg)"}
        return {**result, **task_result(outcome)}

    def execute(self, args, task_vars):
        records = [dict(record) for record in args["records"]]
        if args["failure"]:
            message = plan_failure_message(records, args["phases"])
            return {"changed": False, "failed": bool(message), "msg": message or "no phase failed"}
        gated = drift_gate_applies(args["fail_on_drift"], args["mode"], bool(self._task.check_mode))
        verdict = drift_verdict(records, args["plan"]) if gated else []
        tail = args["tail"] + summary_tail(args["rollout_messages"], verdict)
        if args["lines"] is not None:   # a table another task made: the data is in that task's result
            return {"changed": False, **show_lines(args["lines"] + tail), **tail_message(tail),
                    **({"failed": True} if verdict else {})}
        if not args["phases"]:
            return {"failed": True, "msg": "phases (the run list) is required to make a summary, or give lines"}
        hosts = args["hosts"] or list(task_vars.get("ansible_play_hosts_all") or [])
        servers = {str(host): str(server) for host, server in (args["servers"] or {}).items()}
        check_mode = bool(self._task.check_mode)
        summary = summary_lines(args["phases"], records, hosts, args["mode"], servers=servers, check_mode=check_mode)
        result = {"changed": False, "summary": summary, **show_lines(summary + tail), **tail_message(tail),
                  **({"failed": True} if verdict else {}),
                  "outcomes": cluster_outcomes(records, hosts, args["mode"], args["phases"], args["stopped_by"])}
        paths = {option: args[option] for option in ("report_json", "report_junit", "report_timeline")}
        if any(paths.values()):
            write_reports(paths, report_entries(args["phases"], records, hosts, args["mode"], servers=servers,
                                                check_mode=check_mode),
                          plan=args["plan"], mode=args["mode"], check_mode=check_mode, stopped_by=args["stopped_by"])
        return result


def tail_message(tail: list[str]) -> dict:
    """The task's ``msg``: the last line of ``tail`` (why a rollout ended the run, or the drift gate's verdict), which
    a failed summary task (the drift gate) shows on its ``fatal:`` line and AWX in the failed task; none without."""
    said = [line for line in tail if line.strip()]
    return {"msg": said[-1]} if said else {}
