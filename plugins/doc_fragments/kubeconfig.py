# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Documentation of AUTH_ARGUMENT_SPEC (plugins/plugin_utils/kubeconfig.py), shared by every cluster action."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  kubeconfig:
    description:
      - Kubeconfig sources for this task, in order, overriding the host's C(kube_kubeconfig) and
        C(K8S_AUTH_KUBECONFIG).
      - A path string (may be a C(KUBECONFIG)-style C(a:b) list), a source dictionary, a list of them,
        or a kubeconfig given inline as a dictionary.
      - "A source dictionary has exactly one kind key: C(path), C(env) (variable name, default C(KUBECONFIG)),
        C(content) (YAML text or dictionary), C(url) (https, with C(ca_path), C(headers), C(timeout),
        C(validate_certs)), C(sops) (file, with C(input_type)), C(vault) (ansible-vault file), C(secret)
        (C(name), C(namespace=default), C(key=value), C(host=kube_parent) or C(kubeconfig) and C(context) (a
        kubeconfig file naming the Secret's cluster), C(timeout=60)) or C(bundle) (a file or
        directory of airshipctl documents whose C(KubeConfig) document holds the kubeconfig, decrypted with sops when
        encrypted; with C(name), its C(metadata.name)); and C(optional)."
      - Without it, the host's C(kube_kubeconfig); else E(K8S_AUTH_KUBECONFIG) (from the task's C(environment)
        keyword, then the controller's environment); else kubectl's default, C($KUBECONFIG) else C(~/.kube/config).
        A host's own variable beats a value set for the whole controller or play, which only fills what a host
        leaves unset.
      - Not read when O(host) and a credential (for example O(api_key)) make a complete connection, as in
        kubernetes.core; then O(context) is not used either.
      - See the collection's C(docs/kubeconfig.md) for the precedence table and examples of every source.
    type: raw
  context:
    description:
      - Context to use, overriding the host's C(kube_context) and E(K8S_AUTH_CONTEXT) (from the task's
        C(environment) keyword or the controller's environment), which come in that order.
      - Default is the merged current-context. An unknown context, or one whose cluster or user no source
        defines, is an error that lists what exists.
    type: str
notes:
  - The kubeconfig of a host is resolved once per run when the P(phasekit.kube.kubeconfig#module) action runs with
    O(phasekit.kube.kubeconfig#module:remember=true) and is registered as C(phasekit_kube_resolved); later tasks reuse
    it from memory.
"""
