# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Documentation of the phasekit.kube.kubeconfig action (plugins/action/kubeconfig.py does the work)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: kubeconfig
author:
  - phasekit.kube contributors (@phasekit)
version_added: 0.1.0
short_description: Resolve a cluster host's kubeconfig, show its provenance, write it for other tools
description:
  - Resolves the kubeconfig of the inventory host (one host = one cluster) with kubectl's merge rules,
    selects the context, checks that its cluster and user are defined, and returns where each came from.
  - Sources are read lazily, in order, only until the context, its cluster and its user are all defined;
    later sources are not read, fetched or decrypted.
  - "With O(remember=true) and C(register: phasekit_kube_resolved), later tasks on the host reuse the resolution
    from memory instead of reading the sources again (once per host per run). That result is hidden from output."
  - With O(dest) or O(merge_into) it writes the kubeconfig (flattened, absolute paths) atomically with mode 0600
    for kubectl, helm or clusterctl.
  - Runs on the controller.
extends_documentation_fragment:
  - phasekit.kube.kubeconfig
  - phasekit.kube.connection
options:
  dest:
    description:
      - Write the resolved kubeconfig to this file, replacing it. Its current-context is the resolved context.
      - Mutually exclusive with O(merge_into).
    type: path
  merge_into:
    description:
      - Merge the resolved entries into this kubeconfig file (created if absent), keeping everything else in it.
      - The file's current-context is kept unless it has none or O(set_current_context=true).
    type: path
  on_conflict:
    description:
      - What to do with an entry of O(merge_into) that has the same name as a resolved one, C(keep) or C(replace).
      - "A string applies to clusters, users and contexts; a dictionary sets them one by one, for example
        C({clusters: keep, users: replace}) (unnamed sections replace)."
    type: raw
    default: replace
  set_current_context:
    description:
      - With O(merge_into), make the resolved context the file's current-context.
    type: bool
    default: false
  minify:
    description:
      - Write only the context with its cluster and user. With V(false), O(dest) and O(merge_into) get every
        entry of the merged sources (all sources are then read).
    type: bool
    default: true
  remember:
    description:
      - "Return the whole resolution (credentials included) under RV(resolution) so that
        C(register: phasekit_kube_resolved) lets later tasks reuse it. The task result is then censored like
        C(no_log)."
    type: bool
    default: false
attributes:
  check_mode:
    support: full
    description: Resolves and reports whether O(dest) or O(merge_into) would change; writes nothing.
  diff_mode:
    support: full
    description: Shows the written kubeconfig before and after, with tokens, keys, passwords and certificate data redacted.
notes:
  - Secrets never appear in results, diffs or messages at any verbosity.
seealso:
  - plugin: phasekit.kube.kubeconfig
    plugin_type: lookup
"""

EXAMPLES = r"""
- name: Resolve once for this cluster; later phasekit.kube tasks on the host reuse it
  phasekit.kube.kubeconfig:
    remember: true
  register: phasekit_kube_resolved

- name: Show which source gave the context, the cluster and the user
  phasekit.kube.kubeconfig:
  register: resolved

- name: Write a self-contained kubeconfig for helm and clusterctl
  phasekit.kube.kubeconfig:
    context: target-admin
    kubeconfig:
      - path: ~/.kube/config
        optional: true
      - sops: site/secrets/target.enc.yaml
    dest: "{{ playbook_dir }}/.work/target.kubeconfig"

- name: Add the cluster to the operator's kubeconfig without touching existing entries
  phasekit.kube.kubeconfig:
    merge_into: ~/.kube/config
    on_conflict: keep
"""

RETURN = r"""
context:
  description: The context in use.
  returned: success
  type: str
  sample: target-admin
cluster:
  description: The cluster the context names.
  returned: success
  type: str
server:
  description: The API server URL of that cluster.
  returned: success
  type: str
  sample: https://127.0.0.1:6443
user:
  description: The user the context names (null for anonymous access).
  returned: success
  type: str
namespace:
  description: The context's namespace, if any.
  returned: success
  type: str
provenance:
  description:
    - Which source defined the context, the cluster and the user (C(index), C(kind), C(location)), what happened to
      each source (C(read), C(missing), C(skipped) with a C(reason), C(unread)), and which setting chose the sources
      and the context (C(kubeconfig_from), C(context_from)).
  returned: success
  type: dict
  sample:
    context: {index: 2, kind: sops, location: site/secrets/target.enc.yaml}
    cluster: {index: 2, kind: sops, location: site/secrets/target.enc.yaml}
    user: {index: 1, kind: path, location: /home/me/.kube/config}
    sources:
      - {index: 1, kind: path, location: /home/me/.kube/config, status: read}
      - {index: 2, kind: sops, location: site/secrets/target.enc.yaml, status: read}
      - {index: 3, kind: url, location: https://vault.example/kubeconfig, status: unread}
    kubeconfig_from: host var kube_kubeconfig of target
    context_from: host var kube_context
reused:
  description: Whether the resolution was taken from C(phasekit_kube_resolved) instead of the sources.
  returned: success
  type: bool
dest:
  description: The file written (O(dest) or O(merge_into)).
  returned: when O(dest) or O(merge_into) is set
  type: str
resolution:
  description: The resolution for later tasks (holds credentials; the result is censored).
  returned: when O(remember=true)
  type: dict
"""
