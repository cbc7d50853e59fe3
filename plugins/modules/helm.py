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
  - A superset of M(kubernetes.core.helm) 6.5.0. Every option of it (its connection options aside, see the
    C(phasekit.kube.kubeconfig) fragment) with the same name, aliases, type, default and meaning, mapped to the
    flags of helm 3 and helm 4 as it maps them; every return value (RV(status), RV(stdout), RV(stderr),
    RV(command)) with the same shape on success and failure, and its C(changed) rules (a failed request is
    C(changed=false)). A task moves over by changing the module name. phasekit.kube adds RV(release),
    RV(action), RV(reasons), O(helm_mode=apply) and secret hiding beside them; the differences are listed in the
    collection's C(docs/migrating-from-kubernetes-core.md).
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
      - Ignored for a chart on disk, as helm (and M(kubernetes.core.helm)) ignore C(--version) there.
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
      - Values, merged over the values files (as a last C(-f) file would be).
      - Shown in RV(status) as M(kubernetes.core.helm) shows them, except secrets, shown as C(***) wherever they
        appear - values from vault-encrypted variables, and strings under a key that names a credential
        (C(password), C(passwd), C(passphrase), C(token), C(apiKey), C(privateKey), C(secretKey), C(accessKey),
        C(clientSecret), C(credential), in any case, anywhere in the key, at any depth).
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
    description:
      - With O(release_state=present), wait until the release's resources are ready (helm C(--wait)).
      - With O(release_state=absent), wait until its resources are deleted.
    type: bool
    default: false
  wait_timeout:
    description:
      - How long helm waits, as a Go duration (C(300s), C(5m), C(1h30m)); helm's default is C(5m).
      - As in M(kubernetes.core.helm), passed (C(--timeout)) to an install or upgrade only with O(wait), to an
        uninstall always. Mutually exclusive with O(timeout).
    type: str
  timeout:
    description:
      - A Go duration (C(5m0s)) helm waits for Kubernetes commands to complete (helm C(--timeout)), without
        O(wait) too; install and upgrade only, as in M(kubernetes.core.helm). Mutually exclusive with
        O(wait_timeout).
    type: str
  atomic:
    description:
      - Roll a failed upgrade back, and delete a failed install (helm 3 C(--atomic), helm 4
        C(--rollback-on-failure)).
    type: bool
    default: false
  history_max:
    description:
      - Revisions kept per release (helm C(--history-max)); C(0) keeps all. Helm's default is 10.
      - Mutually exclusive with O(replace).
    type: int
  skip_crds:
    description: Do not install the chart's C(crds/) (helm C(--skip-crds)).
    type: bool
    default: false
  plain_http:
    description:
      - Use http instead of https with OCI registries, to pull the chart and on install (helm C(--plain-http)); for a
        registry on a trusted network only.
    type: bool
    default: false
  dependency_update:
    description:
      - Update the chart's dependencies first. For a chart on disk that declares dependencies, C(helm dependency
        update CHART) runs before the install (the chart's files, dependencies included, are then what phasekit.kube
        digests); for a packaged C(.tgz) helm refuses it and the task fails, as with M(kubernetes.core.helm).
      - For a chart of a repository, only with O(replace) (C(helm install --dependency-update)); otherwise the task
        fails, as M(kubernetes.core.helm) does. A chart without dependencies gets a warning.
    type: bool
    default: false
    aliases: [dep_up]
  update_repo_cache:
    description: Run C(helm repo update) first (with O(release_state=absent) too).
    type: bool
    default: false
  set_values:
    description:
      - Values given as helm's C(--set) family, after the values files and O(release_values). A value whose key
        names a credential is hidden as such values are; they are all part of the digest that decides whether
        the release changed (a C(file) value by the file's content).
    type: list
    elements: dict
    suboptions:
      value:
        description: C(key=value), as helm's C(--set) takes it (C(phase=prod)).
        type: str
        required: true
      value_type:
        description:
          - C(raw) is C(--set), C(string) C(--set-string), C(json) C(--set-json), C(file) C(--set-file) (the value
            read from a file on the controller).
        type: str
        default: raw
        choices: [raw, string, json, file]
  reuse_values:
    description:
      - On upgrade, reuse the last release's values and merge these in (helm C(--reuse-values=true|false)).
      - Ignored by helm while O(reset_values) is true.
    type: bool
  reset_values:
    description: On upgrade, reset the values to the chart's before applying these (helm C(--reset-values)).
    type: bool
    default: true
  reset_then_reuse_values:
    description:
      - On upgrade, reset to the chart's values, apply the last release's, then these (helm
        C(--reset-then-reuse-values), helm 3.14 or later). Ignored by helm while O(reset_values) or O(reuse_values)
        is true.
    type: bool
    default: false
  disable_hook:
    description: Do not run the chart's hooks on install, upgrade or uninstall (helm C(--no-hooks)).
    type: bool
    default: false
  force:
    description:
      - Reinstall an existing release even when it is as asked (the task then always changes it), replacing
        objects (helm 3 C(--force); helm 4 C(--server-side=false --force-replace), as M(kubernetes.core.helm)).
        Ignored on a new install.
      - Mutually exclusive with O(server_side) and O(force_conflicts).
    type: bool
    default: false
  purge:
    description:
      - With O(release_state=absent), remove the release's history too. C(false) keeps it (helm
        C(--keep-history)); the name is then reused only with O(replace).
    type: bool
    default: true
  server_side:
    description:
      - Helm 4's server-side apply on install and upgrade (helm C(--server-side)). Helm 3 refuses it (the task
        fails, as M(kubernetes.core.helm)).
    type: str
    choices: ["auto", "true", "false"]
  force_conflicts:
    description:
      - With server-side apply (helm 4's default), force changes against conflicts (helm C(--force-conflicts)).
        Helm 4 only; not with O(server_side=false).
    type: bool
    default: false
  post_renderer:
    description:
      - A post-renderer (helm C(--post-renderer)). With helm 3 the path of an executable, with helm 4 the name of a
        post-renderer plugin (helm 4 refuses a path; the value is passed on as M(kubernetes.core.helm) does).
    type: str
  replace:
    description:
      - Reuse the name of a release uninstalled with its history kept (helm C(install --replace)). Unsafe in
        production. Mutually exclusive with O(history_max); not with O(release_state=absent).
    type: bool
    default: false
  insecure_skip_tls_verify:
    description:
      - Skip the certificate check of the chart download (helm C(--insecure-skip-tls-verify), helm 3.16 or later).
        Not the API server's certificate (that is the kubeconfig's business).
    type: bool
    default: false
    aliases: [skip_tls_certs_check]
  take_ownership:
    description:
      - Take over existing objects that carry no helm annotations (helm C(--take-ownership), helm 3.17 or later).
    type: bool
    default: false
  skip_schema_validation:
    description:
      - Do not validate values against the chart's JSON schema (helm C(--skip-schema-validation), helm 3.16 or
        later).
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
    details:
      - Decides and reports whether the release would change, without changing it. RV(command) is the helm call
        that would run; RV(status) holds only C(values) and C(release_values), each C({current, declared}) as
        M(kubernetes.core.helm) fills them in check mode - C(current) the live release's values, C(declared) the
        live release's status - or C({}) without a deployed release.
  diff_mode:
    support: full
    details:
      - Shows the rendered manifest against the live release's, object by object (C(helm upgrade --dry-run)),
        Secret values and the release's secret values (see O(release_values)) shown as C(***).
      - M(kubernetes.core.helm) shows a diff only with the helm-diff plugin (C(diff.prepared)); phasekit.kube needs
        no plugin and returns Ansible's before/after diffs (also for a first install).
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
  - As in M(kubernetes.core.helm), O(kubeconfig) may be given as C(kubeconfig_path) and O(context) as C(kube_context),
    and O(context) and O(ca_cert) are mutually exclusive.
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

- name: A kubernetes.core.helm task, its module name changed
  phasekit.kube.helm:
    name: test
    chart_ref: stable/grafana
    release_namespace: monitoring
    update_repo_cache: true
    reuse_values: true
    reset_values: false
    set_values:
      - value: phase=prod
        value_type: string
  register: grafana

- name: Its asserts unchanged
  ansible.builtin.assert:
    that:
      - grafana.status.status == 'deployed'
      - grafana.status.chart is match('grafana-')
      - "'--reuse-values=True' in grafana.command"
"""

RETURN = r"""
status:
  description:
    - The release as M(kubernetes.core.helm) returns it, from C(helm list) and C(helm get values) after the task
      (helm_mode release). C(None) when there is no release (uninstalled and purged, or never installed).
    - In check mode, only C(values) and C(release_values), each C({current, declared}) (see check mode).
  returned: when the request did not fail (helm_mode release; None when there is no release, outside check mode)
  type: complex
  contains:
    name:
      description: Name of the release.
      type: str
    namespace:
      description: Namespace of the release.
      type: str
    chart:
      description: Chart name and version (C(name-version)).
      type: str
      sample: grafana-8.5.1
    appversion:
      description: The chart's appVersion (C("") when it has none).
      type: str
    app_version:
      description: The same, as C(helm list) names it (M(kubernetes.core.helm) returns this key, not C(appversion)).
      type: str
    revision:
      description: The release revision, a string as C(helm list) prints it.
      type: str
      sample: "3"
    status:
      description: Helm's status of the release (C(deployed), C(failed), C(uninstalled), ...).
      type: str
    updated:
      description: When the release last changed, as helm prints it.
      type: str
      sample: "2026-11-27 01:20:36.425349349 +0000 UTC"
    release_values:
      description:
        - The user-supplied values of the release (C(helm get values)).
        - As M(kubernetes.core.helm) shows them, secrets aside (C(***), see O(release_values)).
        - The key C(values) holds the same, as in M(kubernetes.core.helm), which deprecated it (it is not listed
          here because Jinja's dot notation cannot reach it - C(status.values) is the dict method - use
          C(status['values']) or C(release_values)).
      type: dict
stdout:
  description: What the helm call printed on its standard output (C("") when helm was not run to change anything).
  returned: always (helm_mode release)
  type: str
  sample: "Release \"test\" has been upgraded. Happy Helming!"
stderr:
  description:
    - What the helm call printed on its standard error; on failure helm's error (or phasekit.kube's, when it
      failed before helm ran, such as a chart directory that cannot be read). For a context no kubeconfig source
      defines, helm's own (C(helm list) in that context, as M(kubernetes.core.helm) asks it first).
  returned: always (helm_mode release)
  type: str
command:
  description:
    - The helm command line of the install, upgrade or uninstall, helm's path first (the one that would run, in
      check mode); on failure, the helm call that failed. Values are in a private file removed afterwards; a chart
      of a repository is the local copy phasekit.kube pulled.
    - When nothing needs doing, as M(kubernetes.core.helm), helm's path with the chart flags it puts first
      (C(/usr/local/bin/helm --version=0.1.0)), or the path alone. C("") when the task failed before a helm call
      was decided.
  returned: always (helm_mode release)
  type: str
  sample: /usr/local/bin/helm upgrade test /charts/grafana --install --reset-values --namespace monitoring ...
action:
  description:
    - What was done (or would be, in check mode).
    - C(failed) when helm failed before it made a new revision (a template error). A failure that left a new
      revision (a C(wait) timeout) says C(installed) or C(upgraded). A failed task is C(changed=false) either
      way, as M(kubernetes.core.helm) reports it.
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
