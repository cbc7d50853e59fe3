# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Once per run: each cluster host's kubeconfig is decrypted once, later tasks reuse it from memory.

A counting ``sops`` (a wrapper around the real binary, first on PATH) records
every decryption. Two hosts with SOPS sources, plus a child host whose
kubeconfig is a Secret in one of them, over five tasks in two plays, must
decrypt exactly twice: the child reads its Secret with its parent's resolution
from memory.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import uuid

from test_kubeconfig_sources import flat_kubeconfig
from test_kubeconfig_sources import inventory
from test_kubeconfig_sources import new_age_key
from test_kubeconfig_sources import sops_encrypt

PLAYBOOK = """
- hosts: all
  gather_facts: false
  tasks:
    - name: Resolve parent clusters first
      phasekit.kube.kubeconfig:
        remember: true
      register: phasekit_kube_resolved
      when: kube_parent is not defined
    - name: Resolve every cluster (parents from memory)
      phasekit.kube.kubeconfig:
        remember: true
      register: phasekit_kube_resolved
    - name: A later task on the same cluster
      phasekit.kube.kubeconfig:
      register: second
    - name: Write it for kubectl
      phasekit.kube.kubeconfig:
        dest: "{{ out }}/{{ inventory_hostname }}.kubeconfig"
      register: third
    - ansible.builtin.copy:
        content: "{{ {'second': second.reused, 'third': third.reused, 'server': third.server} | to_json }}"
        dest: "{{ out }}/{{ inventory_hostname }}.json"
        mode: "0600"

- hosts: all
  gather_facts: false
  tasks:
    - name: A task in a later play reuses it too
      phasekit.kube.kubeconfig:
      register: fourth
    - ansible.builtin.assert:
        that: fourth.reused
"""


def test_each_host_is_decrypted_once_per_run(clusters, run_playbook, tmp_path, bin_dir):
    key_file, recipient = new_age_key(tmp_path, bin_dir)
    counter = tmp_path / "sops-calls"
    wrapper_dir = tmp_path / "counting-bin"
    wrapper_dir.mkdir()
    wrapper = wrapper_dir / "sops"
    wrapper.write_text(f'#!/bin/sh\necho "$@" >> {counter}\nexec {bin_dir / "sops"} "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    hosts = {}
    for name, cluster in clusters.items():
        encrypted = sops_encrypt(flat_kubeconfig(cluster.admin_kubeconfig), tmp_path / f"{name}.enc.yaml", recipient)
        hosts[name] = {"kube_kubeconfig": [{"sops": str(encrypted)}, {"sops": str(tmp_path / "never-read.enc.yaml")}]}
    parent, target = clusters["ephemeral"], clusters["target"]
    secret = f"child-kubeconfig-{uuid.uuid4().hex[:8]}"
    (tmp_path / "child").write_text(flat_kubeconfig(target.admin_kubeconfig))
    parent.kubectl("create", "secret", "generic", secret, f"--from-file=value={tmp_path / 'child'}")
    hosts["child"] = {"kube_parent": "ephemeral", "kube_kubeconfig": {"secret": {"name": secret}}}

    try:
        result = run_playbook(PLAYBOOK, inventory(**hosts), "-e", f"out={tmp_path}",
                              env={"SOPS_AGE_KEY_FILE": str(key_file),
                                   "PATH": f"{wrapper_dir}{os.pathsep}{os.environ['PATH']}"})
    finally:
        parent.kubectl("delete", "secret", secret, "--ignore-not-found")

    assert result.rc == 0, result
    calls = counter.read_text().splitlines()
    assert len(calls) == len(clusters), calls  # one decryption per host per run
    assert not [call for call in calls if "never-read" in call]
    servers = {name: cluster.server for name, cluster in clusters.items()}
    servers["child"] = target.server
    for name, server in servers.items():
        outcome = json.loads((tmp_path / f"{name}.json").read_text())
        assert outcome == {"second": True, "third": True, "server": server}
        listed = subprocess.run(["kubectl", "--kubeconfig", str(tmp_path / f"{name}.kubeconfig"), "get", "ns",
                                 "default", "-o", "name"], capture_output=True, text=True, check=False)
        assert listed.stdout.strip() == "namespace/default", listed.stderr
