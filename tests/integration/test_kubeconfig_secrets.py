# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Secrets never appear: a playbook at -vvvv with --diff, successes and failures, grepped for key material."""

from __future__ import annotations

import base64

import yaml

from test_kubeconfig_sources import inventory

PLAYBOOK = """
- hosts: all
  gather_facts: false
  tasks:
    - name: Remember (result censored)
      phasekit.kube.kubeconfig:
        remember: true
      register: phasekit_kube_resolved
    - name: Summary and provenance
      phasekit.kube.kubeconfig:
    - name: Write in check mode with a diff
      phasekit.kube.kubeconfig:
        dest: "{{ out }}/{{ inventory_hostname }}.kubeconfig"
      check_mode: true
    - name: Write with a diff
      phasekit.kube.kubeconfig:
        dest: "{{ out }}/{{ inventory_hostname }}.kubeconfig"
    - name: Merge into an operator kubeconfig with a diff
      phasekit.kube.kubeconfig:
        merge_into: "{{ out }}/operator-{{ inventory_hostname }}.kubeconfig"
        minify: false
    - name: Rewrite over it with other credentials
      phasekit.kube.kubeconfig:
        merge_into: "{{ out }}/operator-{{ inventory_hostname }}.kubeconfig"
        kubeconfig: "{{ other }}"
        context: "{{ other_context }}"
    # separate tasks, not a loop: Ansible itself prints every loop item in the result
    - name: Malformed inline YAML holding a token
      phasekit.kube.kubeconfig:
        kubeconfig: {content: "users: [{name: u, user: {token: {{ token }}"}
      ignore_errors: true
    - name: A number where a token belongs
      phasekit.kube.kubeconfig:
        kubeconfig: {content: {users: [{name: u, user: {token: 1234567890123}}]}}
      ignore_errors: true
    - name: An unreachable URL with a token in its query and headers
      phasekit.kube.kubeconfig:
        kubeconfig:
          url: "https://127.0.0.1:9/k?access_token={{ token }}"
          headers: {Authorization: "Bearer {{ token }}"}
      ignore_errors: true
    - name: A complete inline kubeconfig with a token, asked for a context it lacks
      phasekit.kube.kubeconfig:
        kubeconfig:
          clusters: [{name: c, cluster: {server: "https://x"}}]
          users: [{name: u, user: {token: "{{ token }}"}}]
          contexts: [{name: x, context: {cluster: c, user: u}}]
        context: y
      ignore_errors: true
    - name: A context that does not exist
      phasekit.kube.kubeconfig:
        context: nope
      ignore_errors: true
"""


def test_no_secret_at_vvvv(clusters, run_playbook, tmp_path):
    target = clusters["target"]
    limited = yaml.safe_load(target.limited_kubeconfig.read_text())
    token = limited["users"][0]["user"]["token"]
    admin = yaml.safe_load(target.admin_kubeconfig.read_text())
    admin_user = admin["users"][0]["user"]
    material = {"token": token}
    for field in ("client-key", "client-certificate"):
        content = open(admin_user[field], "rb").read()
        material[field] = base64.b64encode(content).decode()
        material[f"{field} body"] = content.decode().splitlines()[1]
    ca = open(admin["clusters"][0]["cluster"]["certificate-authority"], "rb").read()
    material["ca"] = base64.b64encode(ca).decode()

    hosts = inventory(target={"kube_kubeconfig": [str(target.admin_kubeconfig)], "kube_context": target.context,
                              "other": str(target.limited_kubeconfig), "other_context": target.limited_context,
                              "token": token})
    result = run_playbook(PLAYBOOK, hosts, "-e", f"out={tmp_path}", "--diff", verbosity=4)

    assert result.rc == 0, result
    assert "PRIVATE KEY" not in result.output
    leaked = [name for name, value in material.items() if value in result.output or value[:40] in result.output]
    assert not leaked, f"{leaked} appear in the output"
    assert "REDACTED" in result.output and "DATA+OMITTED" in result.output  # the diffs were shown
    assert "censored" in result.output
    assert result.output.count("fatal: [target]") == 5
    # the files do hold the credentials, with mode 0600
    assert token in (tmp_path / "operator-target.kubeconfig").read_text()
    assert oct((tmp_path / "target.kubeconfig").stat().st_mode & 0o777) == "0o600"
