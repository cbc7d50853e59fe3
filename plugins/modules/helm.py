# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Documentation of the phasekit.kube.helm action (the work is done in plugins/action/helm.py)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: helm
short_description: Install, upgrade or uninstall a Helm release on this host's cluster
version_added: 0.1.0
description:
  - Brings a Helm release on the current inventory host's cluster to the requested state, with the C(helm)
    command line (helm 3.13 or later, or helm 4) on the Ansible controller.
  - Options are named as M(kubernetes.core.helm) names them where they mean the same, so a task moves over by
    changing the module name.
  - The host's kubeconfig is resolved like every action of this collection does it (once per run, reused
    afterwards) and given to helm as a single-context file of mode 0600 in a private directory, removed
    afterwards. Helm's own C(HELM_KUBE*) and C(HELM_NAMESPACE) variables are removed from its environment, so
    helm talks to this host's cluster and no other.
  - Idempotent. A release at the same chart (name, version and file contents) with the same values and status
    C(deployed) is left alone (no new revision); otherwise it is upgraded, and the result says why
    (RV(reasons)). phasekit.kube records digests of the chart's files and of the values in each revision's
    description (C(helm history) shows them); a release last changed by another tool is upgraded once.
  - A chart in a repository or a registry is pulled once per task (once per phase in a plan) into a private
    directory, so every cluster gets the same archive.
  - With O(helm_mode=apply) the chart is only rendered (C(helm template)) and its objects are applied by the
    collection's apply engine (server-side apply) as an ApplySet named after the release, pruned, so
    C(kubectl) sees the set; there is then no Helm release in the cluster.
  - The executor of C(helm) phases of the C(phasekit.kube.plan) role.
options:
  name:
    description:
      - The release name. Required by the action; a C(helm) phase defaults it to the last part of the phase's
        name (C(apps/podinfo) -> C(podinfo)).
    type: str
    aliases: [release_name]
  chart_ref:
    description:
      - The chart. A chart directory or packaged C(.tgz) (relative paths are looked up as other file arguments,
        in the role's C(files/) and the playbook's directory), C(repo/chart) of a repository helm knows, a
        chart name with O(chart_repo_url), an C(oci://) reference, or an absolute URL of a packaged chart.
      - Required unless O(release_state=absent). A C(helm) phase gives a local chart as its C(source).
    type: str
  chart_repo_url:
    description: The chart repository the chart O(chart_ref) names is in (helm C(--repo)).
    type: str
  chart_version:
    description:
      - The chart version to install (a version of the repository's chart, or an OCI tag). Default is the newest.
      - For a local chart, the version its C(Chart.yaml) must have.
    type: str
  release_namespace:
    description: The release namespace. Default is the namespace of the host's kubeconfig context, else C(default).
    type: str
    aliases: [namespace]
  create_namespace:
    description: Create the release namespace if it does not exist (helm C(--create-namespace)).
    type: bool
    default: false
  release_values:
    description:
      - Values, merged over the values files (as a last C(-f) file would be). Never shown in output, diffs or
        errors; may hold secrets (vault-encrypted variables).
    type: dict
    default: {}
    aliases: [values]
  values_files:
    description:
      - Values files, merged in order as helm merges several C(-f) files. A file whose name ends in C(.j2) is a
        Jinja template rendered with the host's variables first, as M(ansible.builtin.template) would.
    type: list
    elements: path
    default: []
  release_state:
    description: C(present) installs or upgrades the release; C(absent) uninstalls it.
    type: str
    choices: [present, absent]
    default: present
    aliases: [state]
  wait:
    description: Wait until the release's resources are ready (helm C(--wait)).
    type: bool
    default: false
  wait_timeout:
    description: How long helm waits for each Kubernetes operation, as a duration (C(300s), C(5m), C(1h30m)); helm's default is C(5m).
    type: str
  atomic:
    description: Roll a failed upgrade back, and delete a failed install (helm 3 C(--atomic), helm 4 C(--rollback-on-failure)).
    type: bool
    default: false
  history_max:
    description: Revisions kept per release (helm C(--history-max)); C(0) keeps all. Helm's default is 10.
    type: int
  skip_crds:
    description: Do not install the chart's C(crds/) (helm C(--skip-crds)).
    type: bool
    default: false
  plain_http:
    description: Pull the chart from an OCI registry over plain http, not https (helm C(--plain-http)); for a registry on a trusted network only.
    type: bool
    default: false
  helm_mode:
    description:
      - C(release) leaves the release to helm.
      - C(apply) renders the chart with C(helm template) and applies the objects with server-side apply as an
        ApplySet named after the release (pruned; O(wait) waits with the collection's readiness rules).
        O(atomic) and O(history_max) do not apply; O(release_state=absent) deletes the ApplySet's members and
        then its parent.
    type: str
    choices: [release, apply]
    default: release
  binary_path:
    description: The helm binary. Default is C(helm) on the controller's C(PATH).
    type: path
attributes:
  action:
    support: full
  async:
    support: none
  bypass_host_loop:
    support: none
  check_mode:
    support: full
    details: Decides and reports whether the release would change, without changing it.
  diff_mode:
    support: full
    details:
      - Shows the rendered manifest against the live release's, object by object (C(helm upgrade --dry-run)),
        Secret values redacted, and every string of the merged values (4 characters or more) shown as C(***).
  platform:
    platforms: posix
  action_group:
    support: full
    membership:
      - phasekit.kube.kube
extends_documentation_fragment:
  - phasekit.kube.kubeconfig
  - phasekit.kube.connection
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
  - ansible.builtin.action_common_attributes.actiongroups
seealso:
  - module: phasekit.kube.apply
  - module: phasekit.kube.kube_command
  - module: kubernetes.core.helm
author:
  - phasekit.kube contributors (@phasekit)
notes:
  - See the collection's C(docs/helm.md) for helm phases, values templates and moving from M(kubernetes.core.helm).
requirements:
  - helm 3.13 or later, or helm 4, on the controller
"""

EXAMPLES = r"""
- name: Install or upgrade a chart from a repository, pinned
  phasekit.kube.helm:
    name: ingress
    chart_ref: ingress-nginx
    chart_repo_url: https://kubernetes.github.io/ingress-nginx
    chart_version: 4.11.3
    release_namespace: ingress
    create_namespace: true
    values_files:
      - values/ingress.yaml
      - values/ingress-{{ inventory_hostname }}.yaml.j2
    release_values:
      controller:
        replicaCount: 2
    wait: true
    wait_timeout: 10m
    atomic: true

- name: A chart from an OCI registry
  phasekit.kube.helm:
    name: podinfo
    chart_ref: oci://ghcr.io/stefanprodan/charts/podinfo
    chart_version: 6.7.1
    release_namespace: podinfo

- name: A chart directory of this playbook, rendered and applied as an ApplySet
  phasekit.kube.helm:
    name: hello
    chart_ref: charts/hello
    release_namespace: hello
    create_namespace: true
    helm_mode: apply

- name: Uninstall
  phasekit.kube.helm:
    name: podinfo
    release_namespace: podinfo
    release_state: absent
"""

RETURN = r"""
action:
  description:
    - What was done (or would be, in check mode).
    - C(failed) when helm failed before it made a new revision (a template error); the task then reports
      C(changed=false). A failure that left a new revision (a C(wait) timeout) says C(installed) or C(upgraded).
  returned: always (helm_mode release)
  type: str
  sample: upgraded
  choices: [installed, upgraded, unchanged, uninstalled, absent, failed]
reasons:
  description: Why the release changed (never values, only that they changed).
  returned: always (helm_mode release)
  type: list
  elements: str
  sample: ["chart hello-0.1.0 -> hello-0.2.0", "values changed"]
release:
  description: The release after the task (helm_mode release).
  returned: always (helm_mode release)
  type: dict
  contains:
    name:
      description: Release name.
      type: str
    namespace:
      description: Release namespace.
      type: str
    chart:
      description: Chart as helm shows it, name-version.
      type: str
      sample: hello-0.1.0
    revision:
      description: The release revision (unchanged when nothing was done).
      type: int
    status:
      description: Helm's status of the release (C(deployed), C(failed), ...).
      type: str
counts:
  description: Objects created, configured, unchanged, pruned and failed (helm_mode apply).
  returned: helm_mode apply
  type: dict
objects:
  description: Each applied object and what happened to it (helm_mode apply).
  returned: helm_mode apply
  type: list
  elements: dict
applyset:
  description: The ApplySet parent of the rendered release (helm_mode apply).
  returned: helm_mode apply
  type: dict
kubeconfig:
  description: Which context and cluster were used, and which source gave each (no credentials).
  returned: always
  type: dict
"""
