# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Documentation of the phasekit.kube.plan_summary action (the work is done in plugins/action/plan_summary.py)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: plan_summary
short_description: Show the summary of a plan run as plain lines, and write it for CI as JSON and JUnit XML
version_added: 0.1.0
description:
  - Makes the summary table of a plan run - one row per phase and cluster of the run list, with its result,
    duration and objects changed - from the run's records, shows it as plain lines at every verbosity (as
    C(kubectl) prints a table, not quoted in JSON), and returns it as RV(summary).
  - With O(lines), shows those lines as they are instead (a table another task made, such as
    RV(phasekit.kube.phase_plan#module:table)); the role C(phasekit.kube.plan) shows every table this way.
  - Lines are shown under the task's banner, before its outcome line; ansible-runner and AWX get each as a
    C(verbose) event of the task, its text in C(stdout). With a stdout callback that prints JSON
    (C(ansible.posix.json), C(ansible.posix.jsonl)) nothing is shown - it would break the JSON document - and the
    lines are returned in RV(lines) instead.
  - With O(report_json), O(report_junit) or O(report_timeline), also writes the summary to those files, as
    M(phasekit.kube.run_phases) does for a run in one task (same formats; see its options).
  - The role C(phasekit.kube.plan) uses it at the end of a plan with C(tasks) phases, which runs in steps;
    there is usually no reason to call it directly.
  - Reads no kubeconfig and contacts no cluster. Messages are written as the records hold them (the
    executors mask them).
options:
  records:
    description: The run's records, as M(phasekit.kube.run_phases) returns them (C(phase), C(host), C(result), ...).
    type: list
    elements: dict
    default: []
  phases:
    description:
      - The run list, as M(phasekit.kube.phase_plan) returns it (RV(phasekit.kube.phase_plan#module:phases)).
        Required for a summary (without O(lines)).
    type: list
    elements: dict
    default: []
  lines:
    description:
      - Lines to show as they are, followed by O(tail), instead of a summary made from O(records) (no report is
        written then).
    type: list
    elements: str
  hosts:
    description: The play's hosts; a phase's host not among them is C(not in play). Empty, the play's hosts.
    type: list
    elements: str
    default: []
  mode:
    description:
      - What the run did (C(run), C(validate), C(status), C(destroy)); it names the results, and whether
        O(fail_on_drift) judges the run.
    type: str
    default: run
  plan:
    description: The plan's name, in the reports.
    type: str
    default: ""
  stopped_by:
    description: The phase that stopped the run, in the JSON report.
    type: str
    default: ""
  tail:
    description: Lines shown after the summary table (why a rollout ended the run, the drift the gate found).
    type: list
    elements: str
    default: []
  rollout_messages:
    description:
      - Why a rollout ended the run (over its failure budget, or paused after a number of batches), as
        RV(phasekit.kube.run_phases#module:rollout) says it in each step; shown after the summary (and O(tail)),
        empty ones left out.
    type: list
    elements: str
    default: []
  fail_on_drift:
    description:
      - The drift gate (the role's C(plan_fail_on_drift)). When O(mode=status), or O(mode=run) in check mode, and a
        record of O(records) differs from its cluster, is not ready or could not be checked, the task lists them
        after the summary and fails, its message the count.
    type: bool
    default: false
  servers:
    description:
      - Each host's API server as host:port, the summary's C(SERVER) column and the reports' C(server) (the role
        gathers RV(phasekit.kube.run_phases#module:servers) of every step). A host it does not name shows C(-).
    type: dict
    default: {}
  report_json:
    description:
      - Write the summary to this file as JSON (see O(phasekit.kube.run_phases#module:report_json)). The
        directory must exist; the file is replaced atomically. Empty, no file.
    type: path
    default: ""
  report_junit:
    description:
      - Write the summary to this file as JUnit XML (see O(phasekit.kube.run_phases#module:report_junit)).
        Same rules as O(report_json).
    type: path
    default: ""
  report_timeline:
    description:
      - Write the run's timeline to this file as an HTML page (see
        O(phasekit.kube.run_phases#module:report_timeline)). Same rules as O(report_json).
    type: path
    default: ""
  failure:
    description:
      - Instead of the summary, fail the task with the failure in O(records) (usually one cluster's) - the first
        failed phase, its cluster, the document that defines it (from O(phases)) and why, and the other failures;
        succeed when no phase failed. The role C(phasekit.kube.plan) fails each cluster whose phase failed this way.
      - On ansible-core 2.19 and later the failure is shown without the C(Origin) excerpt of the task's own file
        (for the role, a file of the role rather than your document).
    type: bool
    default: false
  outcome:
    description:
      - Instead of the summary, report this cluster's own outcome of the run as the task's result, one of
        RV(outcomes)' values - C(result) (V(ok), V(changed), V(failed) or V(skipped)) and C(msg) - so that PLAY
        RECAP, ansible-runner's events and AWX's host summaries show every cluster with its outcome. The role
        C(phasekit.kube.plan) does this on each cluster host with its variable C(plan_host_results).
      - A failed outcome fails the task (on ansible-core 2.19 and later without the C(Origin) excerpt, as
        O(failure)).
    type: dict
attributes:
  action:
    support: full
  async:
    support: none
  bypass_host_loop:
    support: none
  check_mode:
    support: full
    details: The report files are written in check mode too (they say the run was one).
  diff_mode:
    support: none
  platform:
    platforms: all
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
seealso:
  - module: phasekit.kube.run_phases
author:
  - phasekit.kube contributors (@phasekit)
"""

EXAMPLES = r"""
- name: The plan's table, as plain lines
  phasekit.kube.plan_summary:
    lines: "{{ plan_result.table }}"
  run_once: true

- name: Summary of a run made in steps, also for CI
  phasekit.kube.plan_summary:
    records: "{{ step_one.records + step_two.records }}"
    phases: "{{ plan_result.phases }}"
    plan: deploy
    report_junit: "{{ playbook_dir }}/out/plan.xml"
  run_once: true
"""

RETURN = r"""
summary:
  description: The summary table, one line per phase and cluster.
  returned: without O(lines) and O(failure)
  type: list
  elements: str
  sample: ["PHASE  CLUSTER    RESULT   DURATION  CHANGED", "e1     ephemeral  changed  0.4s      -"]
outcomes:
  description:
    - Each host's own outcome of the run (the summary, not O(failure) or O(outcome)), by these rules, first match
      wins - V(failed) (a phase failed there; C(msg) names it and its document), V(changed) (a phase changed
      something there, in a run or a destroy), V(ok) (a phase ran there), V(skipped) (no phase ran there - resumed
      past, or never reached by the run).
  returned: when the summary is made
  type: dict
  sample: {"ephemeral": {"result": "changed", "msg": "changed: apps"}, "target": {"result": "ok", "msg": "run: apps"}}
lines:
  description: The lines shown (the summary or O(lines), then O(tail)), when the stdout callback prints JSON.
  returned: with a stdout callback that prints JSON
  type: list
  elements: str
msg:
  description:
    - With O(failure=true), the failure. Otherwise the last line of O(tail) (why a rollout ended the run, or the drift
      gate's verdict), so that a failed summary task says why on its own line.
  returned: with O(failure=true), or a non-empty O(tail)
  type: str
"""
