# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Documentation of the phasekit.kube.phase_plan action (the work is done in plugins/action/phase_plan.py)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: phase_plan
short_description: Validate phase and plan documents and compute the ordered run list
version_added: 0.1.0
description:
  - Reads C(Phase) and C(PhasePlan) documents (API version C(phasekit.dev/v1alpha1)) from files and
    directories, or takes the same documents inline, validates them against the inventory, and returns the
    phases of the chosen plan in run order, each with the inventory hosts it runs on.
  - Phases run depth-first, a parent before its children, in document order (or in the order a plan names
    them). Full names join parents and children with C(/), for example C(certs/ca).
  - >-
    Selection follows kubeadm's phase runner. O(only) keeps the named phases and all their descendants
    (naming a child does not bring its parent); O(skip) then removes the named phases and their descendants;
    O(start_at) resumes the plan at a phase, leaving out every phase before it. An unknown name fails with
    C(invalid phase name: NAME).
  - >-
    A plan may name a phase more than once (airshipctl's plans repeat their checks); it runs at each position.
    Each run is an entry of the run list named C(NAME#K), the K-th run of the phase (C(check#2)); a phase that
    runs once keeps its name. In O(only) and O(skip) the phase's name selects all its entries, C(NAME#K) one
    of them; O(start_at) needs C(NAME#K) when the phase runs more than once.
  - Validation fails on an unknown kind or field, a duplicate phase name, a plan naming a missing phase, an
    unknown executor, a missing source, a cluster that is neither a host nor a group of the inventory, and
    options the executor does not take. All problems are reported at once, each naming the file, the
    document and the field.
  - Only the chosen plan and the phases it runs must be valid; the problems of other phases and plans (shared
    documents a site does not use) are reported as warnings with O(check_all=true).
  - Reads no kubeconfig, decrypts nothing and contacts no cluster. From the inventory it reads host and
    group names, and C(kube_parent) of the hosts that a C(kubeconfig) phase names.
  - The role C(phasekit.kube.plan) runs the result; see C(docs/phases.md) for the document format.
options:
  render:
    description:
      - Also render the bundle of every selected C(apply) and C(wait) phase (kustomize, manifest files, inline
        objects) without contacting a cluster, and return the objects in RV(rendered).
      - A bundle that does not render fails the task, naming the phase.
      - A bundle with templates (manifests whose names end in C(.j2)) is rendered per cluster host only with
        O(per_cluster=true); otherwise it is listed with a RV(rendered[].note) and nothing is templated.
    type: bool
    default: false
  per_cluster:
    description:
      - With O(render=true), render bundles that have templates (C(.j2) manifests) once per host of their phase,
        with that host's variables (inventory, group and host vars, vault-encrypted ones too, extra vars).
      - Needs the variables of every such host; decrypts the vault-encrypted ones a template uses.
    type: bool
    default: false
  runnable:
    description:
      - The plan is about to be validated or run, so a selected phase that cannot run fails the task. Such a phase
        comes from airshipctl's documents, with an executor kind that has no equivalent here (shown as
        C(airship:KIND)).
      - Without it such phases are listed, so that C(list) and C(tree) show the whole plan.
    type: bool
    default: false
  check_all:
    description:
      - Check every phase and plan of the documents, not only the chosen plan's; the problems of those outside the
        plan are returned as warnings (the task does not fail on them), each naming the document and field and
        ending in V((not in plan NAME\)). The role sets it for C(plan_action=validate).
    type: bool
    default: false
  render_helm:
    description:
      - With O(render=true), also render every selected C(helm) phase's release with C(helm template) and the
        phase's values (values files with templates rendered per host with O(per_cluster=true)), without a
        cluster - C(lookup) renders empty and C(.Capabilities) are helm's defaults, as with C(helm template)
        alone. The release namespace is C(release_namespace), or C(default) (a run uses the context's).
      - Secret values are hidden, and so are values held under a credential's name (C(password), C(token)...)
        and vault-encrypted values. Needs the helm binary (C(binary_path)); a chart in a repository is pulled.
    type: bool
    default: false
  render_dest:
    description:
      - With O(render=true), also write the rendered bundles as YAML (RV(rendered_yaml)) - to this file when its
        name ends in C(.yaml) or C(.yml), else into this directory (created if missing) one file per phase and
        cluster, C(PHASE/CLUSTER.yaml) (C(apps/web/target.yaml)). Files are replaced atomically; other files in the
        directory are left alone.
      - A relative path is relative to the directory C(ansible-playbook) runs in, as the report paths are; the
        parent directory must exist. Empty, nothing is written.
    type: path
    default: ""
  graph_file:
    description:
      - Also write the plan's Mermaid graph (RV(mermaid)) to this file, replaced atomically - Markdown with a
        C(mermaid) code fence when the name ends in C(.md), the graph alone otherwise (C(.mmd)).
      - A relative path is relative to the directory C(ansible-playbook) runs in; the directory must exist. Empty,
        no file.
    type: path
    default: ""
  flow:
    description:
      - For the role C(phasekit.kube.plan) (there is usually no reason to give it directly) - its variables
        C(plan_action), C(plan_offline), C(plan_show_plan) and C(plan_host_results), as O(flow.action),
        O(flow.offline), O(flow.show_plan) and O(flow.host_results). The role's choices for the run come back as
        RV(flow).
      - With O(flow), what the plan is read for follows O(flow.action), whatever O(runnable), O(render),
        O(per_cluster), O(check_all) and O(render_helm) say - C(list), C(tree) and C(render) read a plan that may not
        run here, C(render) and C(validate) render the bundles (C(render) per cluster, helm releases included, to
        O(render_dest)), C(validate) checks every phase of the documents; O(partial_rollout) is also true for
        C(status), and O(render_dest) is used by C(render) only.
    type: dict
    suboptions:
      action:
        description: What the role runs (C(run), C(list), C(tree), C(render), C(validate), C(status), C(destroy), C(history)).
        type: str
        required: true
      offline:
        description: Validate without the clusters.
        type: bool
        default: false
      show_plan:
        description: A run shows its run list first.
        type: bool
        default: true
      host_results:
        description: Every cluster host gets a task whose result is its own outcome.
        type: bool
        default: false
  convert_to:
    description:
      - Write the collection's own documents (C(phasekit.dev/v1alpha1)) equivalent to airshipctl's C(Phase) and
        C(PhasePlan) documents read from O(src) into this directory (relative to the playbook; created if
        needed), instead of computing a run list. Every phase and plan is written, so O(name), O(only),
        O(skip), O(start_at), O(render), O(per_cluster), O(runnable), O(check_all), O(render_helm),
        O(render_dest) and O(graph_file) are refused with it.
      - Two files, C(phases.yaml) (one C(Phase) per airshipctl phase, in document order) and C(plans.yaml) (one
        C(PhasePlan) per airshipctl plan, C(phaseGroups) flattened in order). The output is deterministic.
      - Sources are paths relative to the written files, pointing at the original entry point directories;
        C(apply) options (C(wait), C(prune) with C(applyset)) are those the airshipctl reader maps.
      - A phase whose executor has no equivalent (C(airship:KIND), such as C(Clusterctl) or C(GenericContainer))
        is left out of both files; a comment where it would be says why and what to write instead.
      - With C(ClusterMap) documents among them, also the inventory, in a sub-directory so that the directory
        stays readable as O(src) - C(inventory/site.clusters.yml) (a C(phasekit.kube.clusters) plugin
        configuration) and the site file it reads, C(inventory/clusters.yml) - with the hosts, C(kube_parent),
        C(kube_context) and C(kube_kubeconfig) sources the plugin's C(airship_cluster_map) source gives for the
        same documents; relative paths are relative to the site file. Without a C(ClusterMap) no inventory is
        written (RV(converted.inventory) is null). C(KubeConfig) documents are not converted; C(bundle)
        sources become C(bundle) kubeconfig sources reading them from the ClusterMap's directory (see
        O(convert_kubeconfig_bundle)).
      - The documents are checked first; nothing is written when they have problems. A directory that already
        holds C(.yaml) or C(.yml) files (or whose C(inventory) sub-directory does) is refused. The files are
        written in a staging directory first and moved in place, so an error leaves none of them.
      - In check mode nothing is written and RV(converted) says what would be. In diff mode the content of
        every file is shown (phase options and kubeconfig references only, nothing secret).
    type: path
  convert_kubeconfig_bundle:
    description:
      - With O(convert_to), the kubeconfig source(s) the written inventory uses for the ClusterMap's C(bundle)
        sources, which stand for airshipctl's C(KubeConfig) document, as the C(phasekit.kube.clusters) plugin's
        C(airship_cluster_map[].bundle) option. By default a C(bundle) kubeconfig source over the directory of
        the ClusterMap's file, which reads (and decrypts) the document when a play needs the cluster; name a
        file of its own here (the document's C(config), sops- or vault-encrypted) to use that instead.
      - "A path, a source mapping or a list of them (see the C(phasekit.kube.kubeconfig) lookup), typically
        C({sops: secrets/site-kubeconfig.enc.yaml}). Relative paths are relative to the playbook directory;
        they are written relative to the site file."
      - Refused without O(convert_to) or without a ClusterMap.
    type: raw
attributes:
  action:
    support: full
  async:
    support: none
  bypass_host_loop:
    support: none
  check_mode:
    support: full
    details: Nothing is changed in any mode, except that O(convert_to) writes files (not in check mode).
  diff_mode:
    support: partial
    details: With O(convert_to), the files written (or that check mode would write) are shown.
  platform:
    platforms: all
  action_group:
    support: full
    membership:
      - phasekit.kube.kube
extends_documentation_fragment:
  - phasekit.kube.plan_source
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
  - ansible.builtin.action_common_attributes.actiongroups
seealso:
  - module: phasekit.kube.apply
  - module: phasekit.kube.kube_command
author:
  - phasekit.kube contributors (@phasekit)
"""

EXAMPLES = r"""
- name: Compute the run list of plan deploy, resuming at controlplane
  phasekit.kube.phase_plan:
    src: "{{ playbook_dir }}/phases"
    name: deploy
    skip: [workers/monitoring]
    start_at: controlplane
  run_once: true
  register: deploy

- name: Show the plan as a table
  ansible.builtin.debug:
    msg: "{{ deploy.table }}"
  run_once: true

- name: Inline documents
  phasekit.kube.phase_plan:
    plan:
      - apiVersion: phasekit.dev/v1alpha1
        kind: Phase
        metadata: {name: namespaces}
        spec:
          cluster: target
          executor: apply
          source: manifests/namespaces
  run_once: true
  register: inline

- name: Convert an airshipctl site's phases, plans and ClusterMap to phasekit.dev documents and an inventory
  phasekit.kube.phase_plan:
    src: "{{ playbook_dir }}/site/phases"
    convert_to: "{{ playbook_dir }}/phasekit-phases"
    # the KubeConfig document's config, moved into a SOPS-encrypted kubeconfig file
    convert_kubeconfig_bundle:
      sops: "{{ playbook_dir }}/secrets/site-kubeconfig.enc.yaml"
  run_once: true
  register: converted
# then: ansible-inventory -i phasekit-phases/inventory/site.clusters.yml --graph
"""

RETURN = r"""
msg:
  description: With O(convert_to), what was written (or would be, in check mode), and whether an inventory was.
  returned: when O(convert_to) is given
  type: str
  sample: wrote 14 phase(s) and 2 plan(s) in /site/phasekit-phases, and the inventory of 2 cluster(s) in
    /site/phasekit-phases/inventory/site.clusters.yml
converted:
  description: What O(convert_to) wrote (or, in check mode, would write). The other results are not returned then.
  returned: when O(convert_to) is given
  type: dict
  contains:
    dest:
      description: The directory, as an absolute path.
      type: str
    files:
      description: The files written, as absolute paths.
      type: list
      elements: str
      sample: [/site/phasekit-phases/inventory/clusters.yml, /site/phasekit-phases/inventory/site.clusters.yml,
               /site/phasekit-phases/phases.yaml, /site/phasekit-phases/plans.yaml]
    inventory:
      description:
        - The inventory written (the C(phasekit.kube.clusters) configuration), as an absolute path.
        - Null when the documents hold no C(ClusterMap), so no inventory was written.
      type: str
      sample: /site/phasekit-phases/inventory/site.clusters.yml
    hosts:
      description: The inventory's hosts (one per cluster of the ClusterMap), in map order; empty without one.
      type: list
      elements: str
      sample: [ephemeral-cluster, target-cluster]
    phases:
      description: The phases written, in document order.
      type: list
      elements: str
    plans:
      description: The plans written.
      type: list
      elements: str
    plans_not_converted:
      description: The plans left out because none of their phases could be converted (a comment in C(plans.yaml)).
      type: list
      elements: str
    not_converted:
      description: The phases left out, each with its C(name), its C(executor) (C(airship:KIND)) and the C(reason).
      type: list
      elements: dict
plan:
  description: Name of the plan, or null when the documents define no plan.
  returned: success, without O(convert_to)
  type: str
  sample: deploy
phases:
  description: The phases that run, in run order.
  returned: success
  type: list
  elements: dict
  contains:
    name:
      description:
        - The entry's name in the run list, what O(only), O(skip), O(start_at), the summary and the run records use.
        - The full name (parents joined with C(/)); for a phase the plan runs several times, C(FULL_NAME#K) for
          its K-th run.
      type: str
      sample: certs/ca
    full_name:
      description: The phase's full name, parents joined with C(/) (the same for every run of a repeated phase).
      type: str
      sample: certs/ca
    short_name:
      description: The phase's own name.
      type: str
      sample: ca
    entry:
      description: Position (from 1) of the plan entry that brought the phase in, or null without a plan.
      type: int
      sample: 3
    occurrence:
      description: Which run of a phase the plan runs several times this entry is (from 1), or null.
      type: int
    parent:
      description: Name (RV(phases[].name)) of the parent phase brought in by the same plan entry, or null.
      type: str
    level:
      description: Nesting depth, 0 for a top-level phase.
      type: int
    children:
      description: Names (RV(phases[].name)) of the child phases.
      type: list
      elements: str
    description:
      description: The phase's description.
      type: str
    cluster:
      description: Inventory host or group the phase targets (its own or inherited from its parent).
      type: str
      sample: ephemeral
    hosts:
      description:
        - The inventory hosts the phase runs on, in inventory order. Empty for a group phase (no executor).
        - For a C(kubeconfig) phase, the child hosts whose kubeconfig it resolves.
      type: list
      elements: str
      sample: [ephemeral]
    cluster_hosts:
      description: The inventory hosts of RV(phases[].cluster).
      type: list
      elements: str
    parents:
      description: For a C(kubeconfig) phase, the parent host each child host reads its Secret from.
      type: dict
      sample: {workload-1: management}
    executor:
      description: C(apply), C(wait), C(kubeconfig), C(command), C(tasks), or null for a group phase.
      type: str
    source:
      description: The source as an absolute path, inline objects, or null.
      type: raw
    options:
      description: The executor options, checked and converted to their types; relative paths made absolute.
      type: dict
    origin:
      description: The file and document that define the phase.
      type: str
      sample: phases/10-infra.yaml document 2 (Phase initinfra)
    selected:
      description: Whether the phase runs (always true in RV(phases)).
      type: bool
    reason:
      description: Why the phase does not run (C(not in only), C(skip), C(before start_at)), or null.
      type: str
    in_plans:
      description:
        - The plans of the documents that run this phase (empty without a PhasePlan). They share what it applies, so
          an ApplySet one of them took is not refused to the others (see the apply documentation).
      type: list
      elements: str
      sample: [deploy, apps]
all_phases:
  description: Every phase of the plan in run order, including those not selected, in the format of RV(phases).
  returned: success
  type: list
  elements: dict
table:
  description: The plan as a table, one line per phase, saying whether and why not it runs.
  returned: success
  type: list
  elements: str
tree:
  description: The plan as an indented tree.
  returned: success
  type: list
  elements: str
mermaid:
  description:
    - The plan as a Mermaid flowchart, child phases boxed inside their parent, arrows in run order (one from each
      phase to the phase that runs after it).
    - O(graph_file) writes it to a file.
  returned: success
  type: list
  elements: str
tree_view:
  description: What the role prints for C(plan_action=tree) - RV(tree), an empty line, then RV(mermaid) or, with
    O(graph_file), the line saying where it was written.
  returned: success
  type: list
  elements: str
rollout_view:
  description: The batches of each rollout as lines, or a line saying that no phase rolls out in batches.
  returned: success
  type: list
  elements: str
render_view:
  description: What the role prints for C(plan_action=render) - RV(rendered_yaml) as lines, or, with O(render_dest),
    the line saying how many files were written there.
  returned: when O(render=true)
  type: list
  elements: str
rendered:
  description:
    - The rendered bundles of the selected C(apply) and C(wait) phases (and C(helm) phases with O(render_helm=true));
      Secret values are shown as C(***).
    - For a selected C(command) phase with C(env_dirs) (such as airshipctl's C(Clusterctl) providers with
      C(versions)), its command and the files it would build; they are built when the phase is validated or runs.
  returned: when O(render=true)
  type: list
  elements: dict
  contains:
    phase:
      description: Full name of the phase.
      type: str
    cluster:
      description: The phase's cluster; for a bundle with templates rendered per cluster, the host it was rendered for.
      type: str
    source:
      description: The source as written.
      type: str
      returned: for a bundle
    objects:
      description: The rendered objects (none for a bundle with templates that was not rendered per cluster).
      type: list
      elements: dict
      returned: for a bundle
    command:
      description: The command of a C(command) phase with C(env_dirs) (its C(argv) or C(cmd) option).
      type: raw
      returned: for a command phase with C(env_dirs)
    directories:
      description: For each variable of C(env_dirs), each file it would build (a path relative to the directory)
        and the kustomization directory it is built from.
      type: dict
      returned: for a command phase with C(env_dirs)
    note:
      description: Why a bundle with templates shows no objects (rendered per cluster when its phase runs).
      type: str
      returned: for a bundle with templates, without O(per_cluster=true)
    release:
      description: The helm release a C(helm) phase's objects are rendered as.
      type: str
      returned: for a helm phase, with O(render_helm=true)
    namespace:
      description: The release namespace the chart is rendered with.
      type: str
      returned: for a helm phase, with O(render_helm=true)
    chart:
      description: The chart, as the phase gives it.
      type: str
      returned: for a helm phase, with O(render_helm=true)
rendered_yaml:
  description:
    - RV(rendered) as one YAML stream, as C(kustomize build) prints it - C(---) before each object, each bundle after
      comment lines naming its phase and cluster (and what it is made of). C(yaml.safe_load_all) and
      C(kubectl apply -f -) read it.
  returned: when O(render=true)
  type: str
validated:
  description:
    - One line saying what was checked, as O(render=true) found it - how many phases are valid (and selected), and how
      many bundles render to how many objects. The role prints it for C(plan_action=validate).
  returned: when O(render=true)
  type: str
  sample: 4 phases valid (4 selected); 3 bundles render to 9 objects
render_files:
  description: The files O(render_dest) wrote, in run order.
  returned: when O(render_dest) is set
  type: list
  elements: str
graph_file:
  description: The file the Mermaid graph was written to (O(graph_file)).
  returned: when O(graph_file) is set
  type: str
flow:
  description:
    - The role C(phasekit.kube.plan)'s choices for this run, from O(flow) and the selected phases - which of its task
      files it includes, and the switches its per-host part reads (see docs/architecture.md, "The plan role").
  returned: when O(flow) is given
  type: dict
  contains:
    runs_phases:
      description: The action runs the phases (run, status, destroy, validate against the clusters).
      type: bool
    dry_run:
      description: The executors run without changing anything (validate, status).
      type: bool
    has_tasks_phases:
      description: The selected phases include C(tasks) phases (never for destroy, which runs no task file).
      type: bool
    runs_steps:
      description: The plan runs step by step on every host (phases run and the plan has C(tasks) phases).
      type: bool
    steps_in_engine:
      description: The steps run in the engine's include, on every host (O(flow.host_results) and RV(flow.runs_steps)).
      type: bool
    view_tasks:
      description: The role's task file that shows what the action shows before any step.
      type: str
      sample: run.yml
    engine_tasks:
      description: The role's task file its engine includes for the action.
      type: str
      sample: run.yml
    steps:
      description: When RV(flow.runs_steps), the steps of the plan (C(steps)), each with the role's task file that runs it
        (C(tasks)).
      type: list
      elements: dict
"""
