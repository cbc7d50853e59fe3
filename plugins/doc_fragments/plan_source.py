# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Documentation of PLAN_SOURCE_SPEC (plugins/plugin_utils/plan.py): where a plan comes from and what it selects."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  src:
    description:
      - Files or directories holding phase and plan documents, read in the order given.
      - A directory contributes its C(*.yaml) and C(*.yml) files in name order, not its sub-directories.
      - A directory with a kustomization (C(kustomization.yaml), C(kustomization.yml) or C(Kustomization)) is
        built with C(kubectl kustomize) instead, as airshipctl builds its phase bundle; its documents come in the
        order the kustomization lists them, and paths inside them are relative to that directory.
      - Relative paths are relative to the playbook directory. Paths inside a document (sources, C(chdir))
        are relative to the document's directory.
      - Exactly one of O(src), O(plan) and O(source) is required.
    type: list
    elements: path
  plan:
    description:
      - The documents themselves, as a list of C(Phase) and C(PhasePlan) mappings (or a single mapping).
      - Relative paths inside them are relative to the playbook directory.
    type: raw
  name:
    description:
      - The C(PhasePlan) to run.
      - Without it, the only plan the documents define; if they define none, every phase in document order.
    type: str
  only:
    description:
      - Full names of the phases to run, with their descendants.
      - The name of a phase the plan runs several times selects every run of it; C(NAME#K) only its K-th run
        (and the descendants that plan entry brings).
    type: list
    elements: str
    default: []
  skip:
    description:
      - Full names of the phases not to run, with their descendants. Applied after O(only).
      - The name of a phase the plan runs several times skips every run of it; C(NAME#K) only its K-th run.
    type: list
    elements: str
    default: []
  start_at:
    description:
      - Full name of the phase to resume at; phases before it in run order do not run.
      - For a phase the plan runs several times, name the run to start at, C(NAME#K).
      - To recover after a failed or stopped rollout, resume instead (the role's C(plan_resume)); a O(start_at)
        inside a rollout is refused, see O(partial_rollout).
    type: str
  partial_rollout:
    description:
      - Let O(only), O(skip) and O(start_at) run only part of a rollout's phases (a C(spec.rollout) phase's subtree,
        or a subtree O(rollout) governs).
      - By default a plan to be run, validated or destroyed (not C(status)) that keeps some of a rollout's phases
        and leaves others out is refused before anything runs, naming the rollout and the phases left out - after
        a rollout that stopped, the clusters of the batches it did not reach would get the kept phases only, keep
        their old state and the run would report success. Recover with the role's C(plan_resume=true) instead.
      - Set it when running part of a rollout is meant (every batch already had the phases left out).
    type: bool
    default: false
  target_path:
    description:
      - For airshipctl's own documents (C(airshipit.org/v1alpha1)), the directory their C(config.documentEntryPoint)
        paths are relative to, as airshipctl's C(targetPath), C(phaseRepositoryName) and the site's
        C(docEntryPointPrefix) made it.
      - Relative paths are relative to the playbook directory.
      - Without it, the parent of the directory holding the phase documents (for inline documents, the playbook
        directory).
    type: path
  rollout:
    description:
      - The default progressive rollout of phases without a C(spec.rollout) of their own (the role's
        C(plan_rollout)), with the same fields - C(batches), C(max_fail_percentage), C(pause), C(order).
      - It governs the largest subtrees of the plan that have no rollout of their own and can have one (no
        C(tasks) phase, every phase on the subtree root's cluster).
      - Checked with the documents; a wrong value fails before anything runs, naming the field.
    type: dict
  slice:
    description:
      - This run is slice C(k) of C(N) (V(2/3)) of one run whose cluster hosts were dealt to N slices, such as the
        jobs of a sliced AWX job; V(*/N) - one of N slices, numbered when they meet; V(awx) - this AWX job's C(k/N)
        read from AWX's API (C(GET /api/v2/jobs/JOB_ID/)) with the job template's controller credential
        (C(CONTROLLER_HOST) and a token or user), so that AWX's Job Slicing count alone says N; a job that is no
        slice runs unsliced, and so does a run outside AWX. In a run that writes, after each phase (a rollout - all
        its batches) ended on this slice's clusters, the slice waits at that phase's barrier until every slice ended
        it, so no later phase starts on any slice before then; a phase that failed on one slice stops every slice
        at that barrier, and a slice that died is named by the others within its lease. Where the slices meet is
        the option C(coordination) of M(phasekit.kube.run_phases) (the role's C(plan_coordination)).
      - A phase whose cluster is a host or group this slice does not have (or a group empty here) runs on no host
        here; before the first phase the slices check together that every such name is a host or group of some
        slice.
      - Needs the run ID every slice shares (the role's C(plan_run_id); under AWX it defaults from
        C(awx_workflow_job_id)). Not yet with a plan with C(tasks) phases, nor with C(spec.needs) and a rollout
        (refused). Empty or V(1/1) - not sliced, the run is as always.
      - The role C(phasekit.kube.plan) sets it from its variable C(plan_slice). See docs/awx.md.
    type: str
    default: ""
  source:
    description:
      - The options above in one mapping (the role C(phasekit.kube.plan) passes its C(plan_source) this way), instead
        of O(src), O(plan) and the others given one by one. An empty value in it (V(""), V([]), V({})) is not set;
        O(plan) wins over O(src) when it holds documents. O(partial_rollout) is given beside it.
    type: dict
    suboptions:
      src:
        description: As O(src).
        type: list
        elements: path
      plan:
        description: As O(plan).
        type: raw
      name:
        description: As O(name).
        type: str
      only:
        description: As O(only).
        type: list
        elements: str
      skip:
        description: As O(skip).
        type: list
        elements: str
      start_at:
        description: As O(start_at).
        type: str
      target_path:
        description: As O(target_path).
        type: path
      rollout:
        description: As O(rollout).
        type: dict
      slice:
        description: As O(slice).
        type: str
"""
