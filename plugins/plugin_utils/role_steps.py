# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""A run in steps (the role phasekit.kube.plan with a plan that has ``tasks`` phases): what its controller steps found
so far, carried by each step's registered result to the next.

Each step is a ``phasekit.kube.run_phases`` task with ``phases`` and the run's ``run_id``. Its result's ``run`` adds
the step to the run so far (records, the phase that stopped the run, resumed clusters, rollout batches, servers, why a
rollout ended the run); the next step of the same run reads it from the registered ``phasekit_kube_resolved``, so the
role needs no task per step to add them up.
"""

from __future__ import annotations

from collections.abc import Mapping

RUN_KEY = "run"  # the run so far, in run_phases' result
EMPTY = {"run_id": "", "records": [], "stopped_by": "", "resumed_hosts": [], "rollout_batches": 0, "servers": {},
         "rollout_messages": [], "carried": {}}


def run_before(remembered, run_id: str) -> dict:
    """The run so far, from the previous step's result (``remembered``) when it is a step of the run ``run_id``;
    otherwise (the run's first step, another run's result, none) nothing yet."""
    previous = remembered.get(RUN_KEY) if isinstance(remembered, Mapping) else None
    if not run_id or not isinstance(previous, Mapping) or previous.get("run_id") != run_id:
        return {**EMPTY, "run_id": run_id}
    return {**EMPTY, **previous}


def continued_args(args: dict, before: dict) -> dict:
    """A step's arguments continuing the run so far: the phase that stopped it (the task's ``stopped_by``, a tasks
    phase's failure, comes first), the clusters resumed and the rollout batches run before."""
    return {"stopped_by": args["stopped_by"] or before["stopped_by"],
            "resumed_hosts": list(dict.fromkeys([*before["resumed_hosts"], *args["resumed_hosts"]])),
            "rollout_batches_before": max(args["rollout_batches_before"], before["rollout_batches"])}


def run_after(before: dict, step: dict) -> dict:
    """The run so far with this step's result (``step``: run_phases' records, stopped_by, resumed_hosts, servers,
    rollout)."""
    rollout = step.get("rollout") or {}
    message = rollout.get("message") or ""
    return {"run_id": before["run_id"],
            "records": [*before["records"], *step["records"]],
            "stopped_by": before["stopped_by"] or step["stopped_by"],
            "resumed_hosts": list(step["resumed_hosts"]),
            "rollout_batches": rollout.get("batches_run", before["rollout_batches"]),
            "servers": {**before["servers"], **step["servers"]},
            "rollout_messages": [*before["rollout_messages"], *([message] if message else [])],
            "carried": step.get("carried") or before["carried"]}  # a preview's carried-forward state
