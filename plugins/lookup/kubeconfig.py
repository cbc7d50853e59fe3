# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Lookup phasekit.kube.kubeconfig: the merged kubeconfig, exactly as kubectl config view prints it."""

from __future__ import annotations

DOCUMENTATION = r"""
name: kubeconfig
author:
  - phasekit.kube contributors (@phasekit)
version_added: 0.1.0
short_description: Merge kubeconfig sources exactly as kubectl does
description:
  - Returns the kubeconfig that C(kubectl config view --raw) prints for the same files, as a dictionary
    (apiVersion v1 shape); with O(minify) and O(flatten) it equals C(--minify --context) and C(--flatten).
  - Sources are read in order and merged with kubectl's rules (first definition of a name wins the whole entry,
    the first non-empty current-context wins, missing files in path lists are skipped).
  - Besides plain files, sources may be environment variables, inline content, https URLs, SOPS files,
    ansible-vault files and Secrets in another inventory host's cluster.
    See the collection's C(docs/kubeconfig.md).
  - Every source is read (unlike the P(phasekit.kube.kubeconfig#module) action, which stops reading once the
    context is complete), because C(kubectl config view) shows everything.
  - The result holds credentials. Do not print it; prefer the action's O(phasekit.kube.kubeconfig#module:dest)
    to hand a kubeconfig to other tools.
  - kubernetes.core's connection options (O(host), O(api_key), O(ca_cert), ...) are applied on top, as the actions
    apply them and with the same precedence, each from the lookup's keyword, else the host's C(kube_<option>)
    variable, else its E(K8S_AUTH_*) environment variable. A O(host) with a credential is a complete connection and
    no source is read (kubernetes.core's rule); otherwise the options that are set override the cluster and user of
    O(context), else of the current-context. With O(provenance) the answer says where each option came from.
  - A lookup sees the controller's environment only (E(K8S_AUTH_*), E(KUBECONFIG), E(SOPS_AGE_KEY_FILE)). Ansible
    gives lookups no task, so a play's or task's C(environment) keyword does not reach it (nor the C(ansible.builtin.env) lookup),
    unlike the actions. Pass such values as keywords or O(sources) instead.
extends_documentation_fragment:
  - phasekit.kube.connection
options:
  _terms:
    description:
      - Kubeconfig paths (each may be a C(KUBECONFIG)-style list). Used as path sources when O(sources) is not given.
    type: list
    elements: str
    required: false
  sources:
    description:
      - Kubeconfig sources in order. A path string, a source dictionary, or a list of them.
      - Source kinds are C(path), C(env), C(content), C(url), C(sops), C(vault), C(secret) and C(bundle) (airshipctl's
        C(KubeConfig) document in a file or directory of documents); any source may set C(optional=true).
      - Default is kubectl's own, the files in C($KUBECONFIG), else C(~/.kube/config).
    type: raw
  context:
    description:
      - Context to minify to (C(kubectl config view --minify --context)). Without O(minify) it is ignored,
        as by kubectl.
    type: str
  minify:
    description:
      - Keep only the context (default the current-context) with its cluster and user.
    type: bool
    default: false
  flatten:
    description:
      - Embed certificate-authority, client-certificate and client-key files as data.
    type: bool
    default: false
  provenance:
    description:
      - "Return C({kubeconfig, provenance}) instead of the kubeconfig alone: C(provenance.connection) names where each
        connection option came from (C(host) from E(K8S_AUTH_HOST), for example), never a value."
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: The same as KUBECONFIG=a.yaml:b.yaml kubectl config view --raw --flatten
  ansible.builtin.set_fact:
    merged: "{{ lookup('phasekit.kube.kubeconfig', sources=[{'path': 'a.yaml:b.yaml'}], flatten=true) }}"
  no_log: true

- name: What AWX's bearer-token credential (K8S_AUTH_HOST, K8S_AUTH_API_KEY, ...) connects to, and from where
  ansible.builtin.set_fact:
    connection: "{{ lookup('phasekit.kube.kubeconfig', provenance=true) }}"
  no_log: true

- name: One context, self-contained, from a SOPS file and a local override
  ansible.builtin.copy:
    dest: /tmp/target.kubeconfig
    mode: "0600"
    content: >-
      {{ lookup('phasekit.kube.kubeconfig', minify=true, flatten=true, context='target',
                sources=[{'path': 'local.yaml', 'optional': true}, {'sops': 'site/target.enc.yaml'}]) | to_nice_yaml }}
  no_log: true
"""

RETURN = r"""
_raw:
  description:
    - The merged kubeconfig as a dictionary in the shape of C(kubectl config view --raw -o json), connection options
      applied.
    - With O(provenance), a dictionary with C(kubeconfig) (that kubeconfig) and C(provenance).
  type: list
  elements: dict
"""

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.connection import (
    ARGUMENT_SPEC as CONNECTION_SPEC)
from ansible_collections.phasekit.kube.plugins.plugin_utils.kubeconfig import view_for_lookup


class LookupModule(LookupBase):

    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        sources = self.get_option("sources")
        if terms and sources is not None:
            raise AnsibleLookupError("give kubeconfig paths as terms or as sources, not both")
        if terms:
            sources = [{"path": term} for term in terms]
        options = {name: self.get_option(name) for name in CONNECTION_SPEC}
        try:
            config, provenance = view_for_lookup(self, variables, sources, context=self.get_option("context"),
                                                 minify=self.get_option("minify"), flatten=self.get_option("flatten"),
                                                 options=options)
            if self.get_option("provenance"):
                return [{"kubeconfig": config, "provenance": provenance}]
            return [config]
        except PhasekitError as err:
            raise AnsibleLookupError(str(err)) from None
