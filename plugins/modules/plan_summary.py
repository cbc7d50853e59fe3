# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Documentation of the phasekit.kube.plan_summary action (the work is done in plugins/action/plan_summary.py)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: plan_summary
short_description: Show the summary of a plan run, and write it for CI as JSON and JUnit XML
version_added: 0.1.0
description:
  - Makes the summary table of a plan run - one row per phase and cluster of the run list, with its result,
    duration and objects changed - from the run's records, and returns it as RV(msg), shown at every
    verbosity.
  - With O(report_json) or O(report_junit), also writes the summary to those files, as
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
    description: The run list, as M(phasekit.kube.phase_plan) returns it (RV(phasekit.kube.phase_plan#module:phases)).
    type: list
    elements: dict
    default: []
  hosts:
    description: The play's hosts; a phase's host not among them is C(not in play). Empty, the play's hosts.
    type: list
    elements: str
    default: []
  mode:
    description: What the run did (C(run), C(validate), C(status), C(destroy)); it names the results.
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
- name: Summary of a run made in steps, also for CI
  phasekit.kube.plan_summary:
    records: "{{ step_one.records + step_two.records }}"
    phases: "{{ plan_result.phases }}"
    plan: deploy
    report_junit: "{{ playbook_dir }}/out/plan.xml"
  run_once: true
"""

RETURN = r"""
msg:
  description: The summary table, one line per phase and cluster.
  returned: always
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
"""
