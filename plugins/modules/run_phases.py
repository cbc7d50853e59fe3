# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Documentation of the phasekit.kube.run_phases action (the work is done by plugins/action/run_phases.py)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: run_phases
short_description: Run planned phases on all their cluster hosts from one controller task
version_added: 0.2.0
description:
  - The fleet engine of the M(phasekit.kube.phase_plan) run list, used by the C(phasekit.kube.plan) role. Runs the
    built-in executors (C(apply), C(wait), C(command), C(kubeconfig)) of the given phases, in order, for all the
    phases' hosts that are in the play, from one task on the controller. Use it with C(run_once=true).
  - A phase runs on all its hosts concurrently (at most O(cluster_concurrency) clusters at once) and finishes on all
    of them before the next phase starts. A failed phase stops the plan after that barrier, unless O(mode) is a dry
    run (C(validate), C(status)), which reports on every phase.
  - Each host's kubeconfig is resolved with the same precedence as a task on that host (C(K8S_AUTH_*) environment,
    then the C(kube_kubeconfig) and C(kube_context) host variables, then kubectl's default), lazily, when a phase first
    needs that cluster, and at most once per run - resolutions registered earlier as C(phasekit_kube_resolved) are
    reused. One pooled API connection per cluster serves all the phases of the task.
  - The task itself never fails because a cluster failed (that would fail every host of a C(run_once) task); the
    outcome of every phase on every host is returned in RV(records) and RV(failed_hosts), and the role fails exactly
    those hosts, so PLAY RECAP, retry files and AWX host status name the failed clusters.
  - C(tasks) phases are skipped here; the role includes their task files on each host.
  - "Phases under a rollout (a phase's C(spec.rollout), or the default O(rollout)) run batch by batch: a batch of the
    rollout phase's clusters runs the phase's whole subtree (a barrier per phase) before the next batch starts. A
    batch whose failed share exceeds C(max_fail_percentage) stops the run (no later batch, no later phase); after
    a batch that succeeded, C(pause) seconds pass with the batch's objects watched (kstatus: an object that stops
    being Current fails its cluster for that batch). Check mode, C(status), C(validate) and C(destroy) run batch by
    batch without pausing; C(status) and C(validate) report every batch."
  - Prints one line per phase after its barrier (every cluster at C(-v)) and, in diff mode, the object diffs (Secret
    values redacted).
author:
  - phasekit.kube contributors (@phasekit)
options:
  phases:
    description:
      - Names of the plan's selected phases to run (one step of the role); default, every selected phase.
      - The plan itself is built from O(src) or O(plan) with O(name), O(only), O(skip) and O(start_at), exactly as
        M(phasekit.kube.phase_plan) builds it, so the phases' sources and options (which may hold secrets) never
        pass through a displayed result.
    type: list
    elements: str
  mode:
    description:
      - C(run) runs the phases (check mode makes apply a server-side dry run and skips commands and waits).
      - C(validate) runs C(apply) phases as a server-side dry run and skips C(command), C(wait) and C(tasks) phases.
      - C(status) runs C(apply) phases as a server-side dry run (C(changed) means the live state differs) and C(wait)
        phases with a zero timeout (C(not ready) instead of failed).
      - C(destroy) undoes the phases in reverse order. C(apply) phases lose their ApplySet's members (dependants
        first, namespaces and CRDs last, each wave waited for until gone, bounded by the phase's C(wait.timeout)
        or 300 seconds) and then the ApplySet parent; without an ApplySet, the objects their bundle names.
        C(helm) phases uninstall their release (with C(helm_mode=apply), delete its ApplySet). C(wait), C(command),
        C(tasks) and C(kubeconfig) phases are skipped. Check mode deletes with a server-side dry run.
      - C(status) also shows each phase's last recorded run on each cluster (see O(record)).
      - C(history) runs nothing; it reads each cluster's run record and returns its recent runs, newest first.
    type: str
    choices: [run, validate, status, destroy, history]
    default: run
  unreachable:
    description:
      - With O(mode=destroy), a cluster that cannot be reached, or whose kubeconfig cannot be resolved any more,
        fails its phase (C(fail)) or is reported and skipped (C(skip)).
    type: str
    choices: [fail, skip]
    default: fail
  destroy_nonempty_namespaces:
    description:
      - With O(mode=destroy), a Namespace the plan applied is deleted only when it holds nothing but what the plan
        applied and what Kubernetes puts in every namespace (the C(kube-root-ca.crt) ConfigMap, the C(default)
        ServiceAccount, Events, Leases, Endpoints, objects with an owner); otherwise it is left, and the phase's
        message names the objects that kept it (kinds, names, counts).
      - C(true) deletes such a namespace anyway, with everything in it.
    type: bool
    default: false
  stopped_by:
    description: The name of a phase that already stopped the plan; nothing runs when set.
    type: str
    default: ""
  cluster_concurrency:
    description:
      - How many clusters a phase works on at once. Default, Ansible's C(--forks).
      - Each cluster's own requests are bounded by the C(apply) option C(concurrency).
    type: int
  remember:
    description:
      - Return every resolved kubeconfig (credentials included) in the result as C(resolutions), for later tasks to
        reuse when it is registered as C(phasekit_kube_resolved). The whole result is then hidden from output
        (C(no_log)); the per-phase lines, diffs and the role's summary still show what happened.
    type: bool
    default: true
  record:
    description:
      - Keep a run record in each cluster a phase touches; a ConfigMap C(phasekit-run-<plan>.<host>) per inventory
        host (plan C(all) without a PhasePlan) in O(record_namespace), one data key per phase (its full name, C(/) as C(.)) with the
        phase's last 10 runs as JSON, newest first (run id, action, result, start (UTC), duration, digest of what
        the phase depends on, plan, collection version, and who ran it, user@controller).
      - A plan or host name that is not a DNS label itself (C(col.a), C(Col_A)) is slugged and followed by C(--)
        and a hash of the exact name, so two plans never share a record.
      - The digest is an HMAC-SHA256 keyed with a random key kept in the Secret C(phasekit-run-key) of the same
        namespace (made on first need), so a reader of the ConfigMap cannot test guesses of secrets against it.
        Without get and create on that Secret, phases are recorded without a digest (a warning, once per cluster)
        and O(resume) runs them again.
      - Written after each phase on each cluster (one merge patch), so a plan that stops half way leaves every
        phase that finished recorded. Not in check mode, validate or status; C(tasks) phases are not recorded.
      - A record that cannot be read or written (no RBAC for ConfigMaps there) is a warning, never a failure.
    type: bool
    default: true
  record_namespace:
    description: Where the run record lives in each cluster. Empty, the namespace of the host's kubeconfig context
      (C(default) if it names none).
    type: str
    default: ""
  lock_timeout:
    description:
      - When O(record) is true and the run writes (O(mode=run) or O(mode=destroy), not check mode), it takes a lock
        per plan and cluster host in that host's run record before its first write there (annotations
        C(phasekit.kube/lock-*) guarded by the record's resourceVersion). Another run's live lock fails that
        cluster at once naming the holder (V(0)), or is waited for up to this many seconds.
      - With O(record=false) there is no lock, and the first step of a run says so.
    type: float
    default: 0
  lock_duration:
    description: Seconds the lock holds after its last renewal (renewed every third of it while the step runs); a
      holder killed outright loses it after this long.
    type: int
    default: 120
  release_locks:
    description:
      - Run no phase; release the locks this run (O(run_id)) still holds on the hosts in play whose last phase of
        the plan is a C(tasks) phase (held while their task files ran). The role's last task does this.
    type: bool
    default: false
  run_id:
    description:
      - The run's id in the records (the role passes one for all the steps of a run, its variable
        C(plan_run_id) when set); empty, a new one (the start time in UTC and a random tail). The slices of a sliced
        run (O(slice)) share it; it then names their meeting (1 to 40 lowercase letters, digits and C(-)).
      - With O(phases), a step of a run in steps - it goes on from the run so far, RV(run) of the previous step's
        result registered as C(phasekit_kube_resolved) when that has the same O(run_id) (the phase that stopped the
        run, the clusters resumed, the rollout batches run; O(stopped_by) given here comes first), and returns the run
        so far with this step as RV(run).
    type: str
    default: ""
  resume:
    description:
      - Continue each cluster from its first phase whose last recorded run did not succeed, or succeeded with
        another digest (a changed bundle, options or values). The phases before it are skipped and said so;
        every phase from it on runs. Needs O(record).
    type: bool
    default: false
  resumed_hosts:
    description: Hosts a resume already runs every phase of (from an earlier step of the same run).
    type: list
    elements: str
    default: []
  carried:
    description:
      - In a preview (check mode, O(mode=status)), what the earlier steps of the same run would create on each host
        (the C(carried) an earlier step returned), so that a later step previews against it. Ignored in a real run.
    type: dict
    default: {}
  rollout_stop_after:
    description:
      - End the run after this many batches of rollouts have run (the role's C(plan_rollout_stop_after)), for a
        canary followed by an approval; the next run with O(resume=true) goes on with the next batch. A batch whose
        clusters a resume skipped entirely does not count. C(0) runs every batch.
      - Not in C(status) and C(validate), which report every batch.
    type: int
    default: 0
  rollout_batches_before:
    description: Batches that earlier steps of the same run ran (counted against O(rollout_stop_after)).
    type: int
    default: 0
  report_json:
    description:
      - Also write the run's summary to this file as JSON, for CI - one entry per phase and cluster of the run
        list (C(results)) with C(phase), C(cluster), C(executor), C(result) (C(ok), C(changed), C(failed),
        C(skipped), C(not ready), C(not run), C(not in play)), C(summary) (the summary table's word),
        C(duration) (seconds), C(objects_changed), C(message) and C(server) (the cluster's API server as
        host:port, empty when it was not resolved), C(started) and C(ended) (UTC, with milliseconds, when the
        phase ran there), and for C(command) phases C(rc), C(stdout) and C(stderr);
        then C(totals) per result, C(failed), C(stopped_by), C(plan), C(mode), C(check_mode).
      - Messages are masked as in the task output - no credential, no Secret value.
      - Written in check mode too (C(check_mode) says the run was one), as the report of a drift check.
      - Written atomically (a temporary file, then one rename); its directory must exist. A relative path is
        relative to the controller's current directory. Empty, no file.
      - Written when the task runs the whole run list (O(phases) not set), in every mode but C(history). With
        O(phases) (one step of a run) the path is only checked, before anything runs;
        M(phasekit.kube.plan_summary) writes the report of a run made in steps.
    type: path
    default: ""
  report_junit:
    description:
      - Also write the run's summary to this file as JUnit XML, which CI systems render - a C(testsuite) per
        phase, a C(testcase) per cluster (C(time) its duration), with a C(failure) element for a cluster whose
        phase failed and a C(skipped) element for one skipped or not run; a C(command) phase's output is its
        C(system-out) and C(system-err).
      - Same rules as O(report_json).
      - Each C(testcase) has a property C(server), the cluster's API server as host:port, when it was resolved,
        and C(started) and C(ended) when the phase ran there.
    type: path
    default: ""
  report_timeline:
    description:
      - Also write the run's timeline to this file, an HTML page a person opens in a browser - a row per
        cluster, a bar per phase from its start to its end, coloured by its result (a plan run as a graph shows
        which phases ran at the same time), and the phases that did not run. Self-contained (inline SVG, no
        script); no message is in it.
      - With O(mode=history), the timeline of the plan's newest run, drawn from the clusters' run records (times to
        the second).
      - Same rules as O(report_json).
    type: path
    default: ""
  allow_shared_cluster:
    description:
      - Run a phase on hosts that reach the same cluster and the same default namespace (the namespace of their
        kubeconfig context, else C(default)). The role's C(plan_allow_shared_cluster).
      - By default, in the modes that write (C(run), C(destroy), and their check mode), such a phase is refused on
        all its hosts before anything is written there, and the plan stops. The message names the hosts, the
        cluster (its server as host:port and the UID of its C(kube-system) Namespace), the namespace, and which
        setting chose each host's context (C(host var kube_context), C(current-context), ...).
      - The cluster is known by the UID of its C(kube-system) Namespace, asked once per endpoint (server URL, CA,
        proxy) and step - one API server reached by two names is one cluster. A user who may not read it is
        compared by the server's address (scheme, the IP addresses of its host, port) instead, and the refusal says
        so; an identity that cannot be read never fails a run by itself.
      - Hosts on one cluster in different namespaces (a context per tenant namespace) are always allowed.
        C(kubeconfig) phases are not checked (they resolve their host's kubeconfig), nor, with O(mode=destroy),
        the phases destroy has nothing to undo for.
      - Allowing it costs this - the hosts apply into one namespace, so their objects overwrite each other and
        each host's prune deletes what the others applied; their run records stay separate.
    type: bool
    default: false
  outcomes:
    description:
      - Also return RV(outcomes), each host's own outcome of the run (when O(phases) is not given). The role
        C(phasekit.kube.plan) asks for it with its variable C(plan_host_results).
    type: bool
    default: false
  keep_going:
    description:
      - A plan with C(spec.needs), run as a graph - after a phase failed on a cluster, V(false) lets what started
        finish and starts nothing new (C(make) without C(-k)); V(true) goes on with every phase that does not need
        the failed one. Its dependents never start either way (RV(never_started) says why).
      - The role C(phasekit.kube.plan) sets it from its variable C(plan_keep_going).
    type: bool
    default: false
  phase_concurrency:
    description:
      - A plan with C(spec.needs), run as a graph - at most this many phases at once; C(0), no bound but
        O(cluster_concurrency) (which bounds the clusters over all phases together).
      - The role C(phasekit.kube.plan) sets it from its variable C(plan_phase_concurrency).
    type: int
    default: 0
  coordination:
    description:
      - Where the slices of a sliced run (O(slice)) meet, in Leases and ConfigMaps labelled
        C(phasekit.kube/run=<run_id>), and how patiently. Used only in a sliced run, which needs O(coordination.kubeconfig)
        and O(coordination.namespace).
      - The role C(phasekit.kube.plan) sets it from its variable C(plan_coordination).
    type: dict
    default: {}
    suboptions:
      kubeconfig:
        description: The coordination cluster's kubeconfig file (read with kubectl's rules).
        type: path
      context:
        description: Its context; empty - the file's current context.
        type: str
        default: ""
      namespace:
        description: The namespace the slices meet in; it must exist.
        type: str
      lease_seconds:
        description: Each slice's presence Lease, renewed every third of it; a slice silent for longer is gone.
        type: int
        default: 30
      arrival_timeout:
        description: Seconds a slice waits at a barrier for a slice that never started, before it fails naming it.
        type: float
        default: 600
      poll:
        description: Seconds between looks at a barrier.
        type: float
        default: 0.2
attributes:
  action:
    support: full
  async:
    support: none
  bypass_host_loop:
    support: none
  check_mode:
    support: full
    details:
      - C(apply) phases become server-side dry runs; C(command) and C(wait) phases do not run.
      - With O(mode=destroy), deletions are server-side dry runs; nothing is deleted.
  diff_mode:
    support: full
    details: Object diffs of C(apply) phases are printed per cluster, Secret values redacted.
  platform:
    platforms: all
extends_documentation_fragment:
  - phasekit.kube.plan_source
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
seealso:
  - module: phasekit.kube.phase_plan
  - module: phasekit.kube.apply
"""

EXAMPLES = r"""
- name: Plan deploy
  phasekit.kube.phase_plan:
    src: "{{ playbook_dir }}/phases"
    name: deploy
  run_once: true
  register: deploy

- name: Run its phases on every cluster host of the play
  phasekit.kube.run_phases:
    src: "{{ playbook_dir }}/phases"
    name: deploy
  run_once: true
  register: phasekit_kube_resolved  # noqa: var-naming[no-role-prefix] - later phasekit.kube tasks reuse the kubeconfigs

- name: Fail the clusters whose phase failed
  ansible.builtin.fail:
    msg: "{{ phasekit_kube_resolved.failed_hosts[inventory_hostname] }}"
  when: inventory_hostname in phasekit_kube_resolved.failed_hosts

- name: After a run that stopped half way, run again only what did not succeed on each cluster
  phasekit.kube.run_phases:
    src: "{{ playbook_dir }}/phases"
    name: deploy
    resume: true
  run_once: true
  register: phasekit_kube_resolved  # noqa: var-naming[no-role-prefix] - later phasekit.kube tasks reuse the kubeconfigs

- name: The recent runs of plan deploy on each cluster
  phasekit.kube.run_phases:
    src: "{{ playbook_dir }}/phases"
    name: deploy
    mode: history
    remember: false
  run_once: true
  register: deploy_history
"""

RETURN = r"""
records:
  description: One entry per phase and host that ran, in plan order.
  returned: success
  type: list
  elements: dict
  contains:
    phase:
      description: Full name of the phase.
      type: str
    host:
      description: The cluster host.
      type: str
    executor:
      description: The phase's executor.
      type: str
    result:
      description: C(ok), C(changed), C(failed), C(skipped) or (status mode) C(not ready).
      type: str
    duration:
      description: Seconds the phase took on this host.
      type: float
    objects_changed:
      description: Objects created, configured or pruned (C(apply) phases), else null.
      type: int
    msg:
      description: Why the phase failed or was skipped; for a C(command) phase that succeeded, C(rc 0) and the last
        lines of its output.
      type: str
    rc:
      description: C(command) phases - the exit code.
      type: int
    stdout:
      description: C(command) phases - what the command printed on standard output (its last 8000 characters),
        masked.
      type: str
    stderr:
      description: C(command) phases - what the command printed on standard error (its last 8000 characters),
        masked.
      type: str
    counts:
      description: C(apply) phases - objects per action (created, configured, unchanged, pruned, failed).
      type: dict
  sample:
    - {phase: namespaces, host: target, executor: apply, result: changed, duration: 0.21, objects_changed: 2}
tasks_phases:
  description: With O(remember), the C(tasks) phases among O(phases) as their task files get them (hidden).
  returned: when remember is true
  type: dict
stopped_by:
  description: The phase whose failure stopped the plan, or an empty string.
  returned: success
  type: str
summary:
  description:
    - The summary table (one line per phase and cluster of the run list, with result, duration, objects
      changed and the cluster's API server), as the filter P(phasekit.kube.phase_summary#filter) makes it.
  returned: when O(phases) is not given (the whole run list runs in this task)
  type: list
  elements: str
outcomes:
  description:
    - Each host of the play -> its own outcome of the run, C(result) and C(msg), by the rules of
      RV(phasekit.kube.plan_summary#module:outcomes) (V(failed), V(changed), V(ok), V(skipped)); the role
      C(phasekit.kube.plan) reports it as each cluster host's task result with
      its variable C(plan_host_results).
  returned: with O(outcomes), when O(phases) is not given (the whole run list runs in this task)
  type: dict
  sample: {ephemeral: {result: changed, msg: "changed: apps"}, target: {result: skipped, msg: "not reached: ..."}}
never_started:
  description:
    - A plan with C(spec.needs), run as a graph - each phase and cluster that never started, and why (a phase it
      needs failed there or on all clusters, or the run stopped after a failure without O(keep_going)).
  returned: always (empty for a plan without C(spec.needs), which runs as a line)
  type: list
  elements: dict
  sample: [{phase: monitoring, host: c1, why: "needs storage, which failed on c1"}]
run:
  description:
    - With O(phases) and O(run_id), a step of a run in steps - the run so far, this step included (see O(run_id)).
      The role C(phasekit.kube.plan) shows its summary from it.
  returned: with O(phases) and O(run_id)
  type: dict
  contains:
    run_id:
      description: The run's id (O(run_id)).
      type: str
    records:
      description: The records of every step so far (see RV(records)).
      type: list
      elements: dict
    stopped_by:
      description: The phase whose failure stopped the run, or an empty string.
      type: str
    resumed_hosts:
      description: As RV(resumed_hosts), after this step.
      type: list
      elements: str
    rollout_batches:
      description: Rollout batches run so far (counted against O(rollout_stop_after)).
      type: int
    servers:
      description: Each cluster host's API server so far (see RV(servers)).
      type: dict
    rollout_messages:
      description: Why a rollout ended the run, one line per step that said so.
      type: list
      elements: str
resumed_hosts:
  description: The hosts that ran a phase in this step (a resume no longer skips their later phases).
  returned: success
  type: list
  elements: str
carried:
  description:
    - In a preview, when O(phases) names a step, what this and the earlier steps would create on each host, for the
      next step's O(carried). Hidden from output, as the resolutions are.
  returned: a step of a preview
  type: dict
not_previewed_hosts:
  description:
    - In a preview, the hosts whose kubeconfig is a Secret the run makes (not there yet). Their phases are not
      previewed, and a C(tasks) phase's task file does not run there.
  returned: success
  type: list
  elements: str
servers:
  description:
    - Each host resolved so far in the run -> its API server as host:port (no credentials, no path), as the
      summary's C(SERVER) column shows it; hosts that share one server show it.
  returned: success
  type: dict
  sample: {ephemeral: "127.0.0.1:6443", target: "127.0.0.1:6444"}
history:
  description: O(mode=history), each host's recorded runs, newest first, with each phase's result.
  returned: O(mode=history)
  type: dict
failed_hosts:
  description: Each host with a failed phase, and the message naming the phase, the cluster and the reason.
  returned: success
  type: dict
  sample: {target: "phase apps failed on cluster target: ..."}
resolutions:
  description: With O(remember), the resolved kubeconfig of every cluster host used so far (credentials - hidden).
  returned: when remember is true
  type: dict
rollout:
  description: The batches of the rollouts that this task ran, and the one that ended the run.
  returned: success
  type: dict
  contains:
    batches:
      description:
        - One entry per batch of every rollout the task reached, in order - C(rollout) (its phase), C(batch),
          C(of), C(hosts), C(ran), C(failed) (host to message), C(seconds), C(soak), C(stopped) (why the rollout
          stopped after it, or empty).
      type: list
      elements: dict
    batches_run:
      description: Batches that ran something in this run, this step and the earlier ones together.
      type: int
    stop:
      description:
        - The rollout that ended the run - C(phase), C(batch), C(of), C(reason), C(failed) (host to message),
          C(untouched) (the clusters of its later batches, never touched), C(paused) (true after
          O(rollout_stop_after), false after a failure). Empty when no rollout ended the run.
      type: dict
    message:
      description: The same, as one message naming the phase, the batch, the failed clusters and the untouched ones.
      type: str
"""
