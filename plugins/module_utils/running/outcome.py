# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Each cluster host's own outcome of a plan run, as its task result reports it to Ansible (PLAY RECAP, AWX's
host summaries and "relaunch on failed hosts"): ``ok``, ``changed``, ``failed`` or ``skipped``, with a message.

The plan's phases run on the controller for every cluster at once; with ``plan_host_results`` the plan role then
gives each cluster host one task whose result is this outcome (docs/phases.md, "Each cluster in PLAY RECAP").
"""

from __future__ import annotations

from ansible_collections.phasekit.kube.plugins.module_utils.planning.views import plan_failure_message

OK, CHANGED, FAILED, SKIPPED = "ok", "changed", "failed", "skipped"
OUTCOMES = (OK, CHANGED, FAILED, SKIPPED)
RAN = ("ok", "changed", "not ready")   # a record's results that mean the phase did its work there
WRITES = ("run", "destroy")            # the actions whose "changed" is a change (status, validate only compare)


def cluster_outcomes(records: list[dict], play_hosts: list[str], mode: str = "run", phases: list[dict] | None = None,
                     stopped_by: str = "") -> dict[str, dict]:
    """Host -> ``{"result": ..., "msg": ...}`` for every host of the play, by these rules, first match wins:

    - ``failed``: a phase failed there; the message names it and its document, as the failed host's task does;
    - ``changed``: a phase changed something there (run and destroy; check mode says what would change, as
      Ansible's tasks do; status and validate only read the clusters, so their ``changed`` is ``ok``);
    - ``ok``: a phase ran there;
    - ``skipped``: no phase ran there (every phase resumed past or skipped, or the run never reached it: a failed
      phase it needed, a rollout that stopped, a plan with no phase on it).
    """
    by_host: dict[str, list[dict]] = {}
    for record in records:
        by_host.setdefault(str(record.get("host")), []).append(record)
    return {host: cluster_outcome(by_host.get(host, []), mode, phases, stopped_by) for host in play_hosts}


def cluster_outcome(records: list[dict], mode: str = "run", phases: list[dict] | None = None,
                    stopped_by: str = "") -> dict:
    """One host's outcome from its own records (see ``cluster_outcomes``)."""
    if any(record.get("result") == FAILED for record in records):
        return {"result": FAILED, "msg": plan_failure_message(records, phases) or "a phase failed"}
    changed = [str(record.get("phase")) for record in records if record.get("result") == CHANGED]
    if changed and mode in WRITES:
        return {"result": CHANGED, "msg": f"changed: {', '.join(changed)}"}
    ran = [str(record.get("phase")) for record in records
           if record.get("result") in RAN and not record.get("resumed")]
    if ran:
        return {"result": OK, "msg": f"{mode}: {', '.join(ran)}"}
    if records:
        return {"result": SKIPPED, "msg": f"no phase ran here (skipped: {', '.join(str(r.get('phase')) for r in records)})"}
    if stopped_by:
        return {"result": SKIPPED, "msg": f"not reached: the run stopped at phase {stopped_by}"}
    return {"result": SKIPPED, "msg": "not reached: no phase of the run list ran on this cluster"}


def task_result(outcome: dict | None) -> dict:
    """The task result that reports ``outcome`` (a ``cluster_outcome``) as this host's own."""
    outcome = outcome or {"result": SKIPPED, "msg": "not reached: no phase of the run list ran on this cluster"}
    result, msg = outcome.get("result"), str(outcome.get("msg") or "")
    if result == FAILED:
        return {"changed": False, "failed": True, "msg": msg}
    if result == SKIPPED:
        return {"changed": False, "skipped": True, "skip_reason": msg, "msg": msg}
    return {"changed": result == CHANGED, "msg": msg}
