# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Kubeconfig sources against the real local clusters: Secret in a parent, SOPS+age, ansible-vault, lookup.

Fixtures encrypt at test time (age-keygen, sops --encrypt, ansible-vault encrypt);
no key is committed. ``ephemeral`` plays the parent (management) cluster and
holds ``target``'s kubeconfig in a Secret, as Cluster API does.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest
import yaml

from ansible_collections.phasekit.kube.plugins.module_utils.kube.client import api_client
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.resolve import resolve_kubeconfig
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.sources import normalize_sources

VENV_BIN = Path(sys.executable).parent
NAMESPACE = "default"


def flat_kubeconfig(path: Path) -> str:
    """A self-contained kubeconfig (what Cluster API stores in <cluster>-kubeconfig)."""
    return subprocess.run(["kubectl", "--kubeconfig", str(path), "config", "view", "--raw", "--flatten", "--minify"],
                          check=True, capture_output=True, text=True).stdout


def new_age_key(directory: Path, bin_dir: Path) -> tuple[Path, str]:
    """A fresh age identity file and its public key (the SOPS recipient)."""
    key_file = directory / "keys.txt"
    subprocess.run([str(bin_dir / "age-keygen"), "-o", str(key_file)], check=True, capture_output=True)
    recipient = next(line.split(": ")[1] for line in key_file.read_text().splitlines() if "public key" in line)
    return key_file, recipient


@pytest.fixture(scope="module")
def age_key(tmp_path_factory, bin_dir) -> tuple[Path, str]:
    return new_age_key(tmp_path_factory.mktemp("age"), bin_dir)


def sops_encrypt(plain: str, destination: Path, recipient: str) -> Path:
    source = destination.with_suffix(".plain.yaml")
    source.write_text(plain)
    encrypted = subprocess.run(["sops", "--encrypt", "--age", recipient, "--input-type", "yaml",
                                "--output-type", "yaml", str(source)], check=True, capture_output=True, text=True)
    destination.write_text(encrypted.stdout)
    source.unlink()
    return destination


def inventory(**hosts) -> dict:
    return {"all": {"hosts": {name: {"ansible_connection": "local", **variables} for name, variables in hosts.items()}}}


RESOLVE_AND_LIST = """
- hosts: all
  gather_facts: false
  tasks:
    - name: Resolve and write for kubectl
      phasekit.kube.kubeconfig:
        dest: "{{ out }}/{{ inventory_hostname }}.kubeconfig"
      register: resolved
    - name: Keep the secrets-free summary
      ansible.builtin.copy:
        content: "{{ resolved | to_json }}"
        dest: "{{ out }}/{{ inventory_hostname }}.json"
        mode: "0600"
    - name: List namespaces with the written kubeconfig
      ansible.builtin.command: kubectl --kubeconfig {{ out }}/{{ inventory_hostname }}.kubeconfig get namespaces -o name
      register: namespaces
      changed_when: false
    - ansible.builtin.assert:
        that: "'namespace/default' in namespaces.stdout_lines"
"""


def summary(out: Path, host: str) -> dict:
    return json.loads((out / f"{host}.json").read_text())


def test_secret_source_reads_target_kubeconfig_from_the_parent_cluster(clusters, run_playbook, tmp_path):
    ephemeral, target = clusters["ephemeral"], clusters["target"]
    name = f"target-kubeconfig-{uuid.uuid4().hex[:8]}"
    late = f"late-kubeconfig-{uuid.uuid4().hex[:8]}"
    plain = tmp_path / "value"
    plain.write_text(flat_kubeconfig(target.admin_kubeconfig))
    ephemeral.kubectl("create", "secret", "generic", name, "-n", NAMESPACE, f"--from-file=value={plain}")
    # a second Secret appears only while the playbook is waiting for it (the parent is "creating" the cluster)
    creator = threading.Timer(4, ephemeral.kubectl, ("create", "secret", "generic", late, "-n", NAMESPACE,
                                                     f"--from-file=config={plain}"))
    creator.start()
    try:
        result = run_playbook(RESOLVE_AND_LIST, inventory(
            ephemeral={"kube_kubeconfig": str(ephemeral.admin_kubeconfig)},
            target={"kube_parent": "ephemeral", "kube_kubeconfig": {"secret": {"name": name}}},
            late={"kube_parent": "ephemeral", "kube_context": "target",
                  "kube_kubeconfig": {"secret": {"name": late, "key": "config", "timeout": 60}}},
        ), "-e", f"out={tmp_path}")
    finally:
        creator.join()
        ephemeral.kubectl("delete", "secret", name, late, "-n", NAMESPACE, "--ignore-not-found")
    assert result.rc == 0, result
    for host in ("target", "late"):
        resolved = summary(tmp_path, host)
        assert resolved["server"] == target.server
        assert resolved["provenance"]["context"]["kind"] == "secret"
    assert summary(tmp_path, "target")["provenance"]["context"]["location"] == \
        f"{NAMESPACE}/{name} key value in kube_parent"


def test_sops_source_with_age(clusters, run_playbook, tmp_path, age_key):
    key_file, recipient = age_key
    target = clusters["target"]
    encrypted = sops_encrypt(flat_kubeconfig(target.admin_kubeconfig), tmp_path / "target.enc.yaml", recipient)
    hosts = inventory(target={"kube_kubeconfig": [{"path": str(tmp_path / "absent.yaml")}, {"sops": str(encrypted)}]})
    result = run_playbook(RESOLVE_AND_LIST, hosts, "-e", f"out={tmp_path}", env={"SOPS_AGE_KEY_FILE": str(key_file)})
    assert result.rc == 0, result
    provenance = summary(tmp_path, "target")["provenance"]
    assert provenance["cluster"] == {"index": 2, "kind": "sops", "location": str(encrypted)}
    assert [entry["status"] for entry in provenance["sources"]] == ["missing", "read"]


def vault_encrypt(plain: str, destination: Path, password: Path) -> Path:
    destination.write_text(plain)
    subprocess.run([str(VENV_BIN / "ansible-vault"), "encrypt", "--vault-password-file", str(password),
                    str(destination)], check=True, capture_output=True)
    assert destination.read_text().startswith("$ANSIBLE_VAULT")
    return destination


def test_vault_source(clusters, run_playbook, tmp_path):
    target = clusters["target"]
    password = tmp_path / "vault-password"
    password.write_text("correct horse battery staple\n")
    vaulted = vault_encrypt(flat_kubeconfig(target.admin_kubeconfig), tmp_path / "target.vault.yaml", password)
    hosts = inventory(target={"kube_kubeconfig": {"vault": str(vaulted)}, "kube_context": "target"})
    result = run_playbook(RESOLVE_AND_LIST, hosts, "-e", f"out={tmp_path}", "--vault-password-file", str(password))
    assert result.rc == 0, result
    assert summary(tmp_path, "target")["provenance"]["user"]["kind"] == "vault"


LOOKUP_AND_LIST = """
- hosts: target
  gather_facts: false
  tasks:
    - name: Resolve with the lookup (one context, self-contained)
      ansible.builtin.copy:
        content: >-
          {{ lookup('phasekit.kube.kubeconfig', sources=kube_kubeconfig, context=kube_context,
                    minify=true, flatten=true) | to_nice_yaml }}
        dest: "{{ out }}/lookup.kubeconfig"
        mode: "0600"
      no_log: true
    - name: List namespaces with it
      ansible.builtin.command: kubectl --kubeconfig {{ out }}/lookup.kubeconfig get namespaces -o name
      register: namespaces
      changed_when: false
    - ansible.builtin.assert:
        that: "'namespace/kube-system' in namespaces.stdout_lines"
"""


@pytest.mark.smoke
def test_lookup_then_list_namespaces(clusters, run_playbook, tmp_path):
    target = clusters["target"]
    hosts = inventory(target={"kube_kubeconfig": [str(clusters["ephemeral"].admin_kubeconfig),
                                                  str(target.admin_kubeconfig)],
                              "kube_context": "target"})
    result = run_playbook(LOOKUP_AND_LIST, hosts, "-e", f"out={tmp_path}")
    assert result.rc == 0, result
    written = yaml.safe_load((tmp_path / "lookup.kubeconfig").read_text())
    assert written["current-context"] == "target" and len(written["users"]) == 1
    assert "client-key-data" in written["users"][0]["user"]


def test_resolution_opens_an_api_session(clusters):
    """The Resolution's config is what api_client needs: list namespaces through the kubernetes client."""
    from kubernetes.client import CoreV1Api

    resolution = resolve_kubeconfig(normalize_sources(str(clusters["target"].admin_kubeconfig), "test"))
    with api_client(resolution.config) as api:
        names = [item.metadata.name for item in CoreV1Api(api).list_namespace().items]
    assert "default" in names and "kube-system" in names


LIMITED = """
- hosts: target
  gather_facts: false
  tasks:
    - phasekit.kube.kubeconfig:
        dest: "{{ out }}/limited.kubeconfig"
      register: resolved
    - ansible.builtin.command: >-
        kubectl --kubeconfig {{ out }}/limited.kubeconfig auth can-i create configmaps -n {{ item.namespace }}
      register: can
      failed_when: can.stdout != item.answer
      changed_when: false
      loop:
        - {namespace: phasekit-limited, answer: "yes"}
        - {namespace: default, answer: "no"}
    - ansible.builtin.assert:
        that: resolved.user == 'target-limited'
"""


def test_limited_user(clusters, run_playbook, tmp_path):
    target = clusters["target"]
    hosts = inventory(target={"kube_kubeconfig": str(target.limited_kubeconfig), "kube_context": target.limited_context})
    result = run_playbook(LIMITED, hosts, "-e", f"out={tmp_path}")
    assert result.rc == 0, result


ERRORS = """
- hosts: all
  gather_facts: false
  tasks:
    - phasekit.kube.kubeconfig:
        dest: "{{ out }}/{{ inventory_hostname }}.kubeconfig"
      register: outcome
      ignore_errors: true
    - ansible.builtin.copy:
        content: "{{ outcome.msg | default('') }}"
        dest: "{{ out }}/{{ inventory_hostname }}.msg"
        mode: "0600"
"""


def test_bad_input_fails_with_one_clear_message_and_writes_nothing(clusters, run_playbook, tmp_path, age_key):
    recipient = age_key[1]
    (tmp_path / "malformed.yaml").write_text("users:\n- name: u\n  user: {token: tok-s3cr3t-in-a-broken-file\n")
    (tmp_path / "a-directory").mkdir()
    plain = flat_kubeconfig(clusters["target"].admin_kubeconfig)
    encrypted = sops_encrypt(plain, tmp_path / "t.enc.yaml", recipient)
    (tmp_path / "password").write_text("unknown to the playbook\n")
    vaulted = vault_encrypt(plain, tmp_path / "t.vault.yaml", tmp_path / "password")
    admin = str(clusters["ephemeral"].admin_kubeconfig)
    cases = {
        "unknown_kind": ({"kube_kubeconfig": {"file": "x"}},
                         "host var kube_kubeconfig of unknown_kind, source 1: a source needs exactly one of path, "
                         "env, content, url, sops, vault, secret, bundle; found keys file"),
        "wrong_type": ({"kube_kubeconfig": {"content": {"current-context": 7}}},
                       "kubeconfig source 1 (content: inline): current-context: expected a string, got a number"),
        "malformed": ({"kube_kubeconfig": str(tmp_path / "malformed.yaml")},
                      f"kubeconfig source 1 (path: {tmp_path}/malformed.yaml): invalid YAML at line 4"),
        "unreadable": ({"kube_kubeconfig": str(tmp_path / "a-directory")},
                       f"kubeconfig source 1 (path: {tmp_path}/a-directory): is a directory, not a kubeconfig file"),
        "sops_no_key": ({"kube_kubeconfig": {"sops": str(encrypted)}},
                        f"kubeconfig source 1 (sops: {encrypted}): sops could not decrypt: no age identity matches"),
        "vault_no_password": ({"kube_kubeconfig": {"vault": str(vaulted)}},
                              f"kubeconfig source 1 (vault: {vaulted}): cannot decrypt the vault file"),
        "unreachable": ({"kube_kubeconfig": {"url": "https://127.0.0.1:9/kubeconfig?token=s3cr3t", "timeout": 5}},
                        "kubeconfig source 1 (url: https://127.0.0.1:9/kubeconfig?…): cannot fetch: Connection refused"),
        "no_secret": ({"kube_parent": "parent", "kube_kubeconfig": {"secret": {"name": "never-created", "timeout": 3}}},
                      "kubeconfig source 1 (secret: default/never-created key value in kube_parent): host parent: "
                      "Secret default/never-created did not appear within 3 seconds"),
        "cycle_a": ({"kube_parent": "cycle_b", "kube_kubeconfig": {"secret": {"name": "x"}}},
                    "kubeconfig source 1 (secret: default/x key value in kube_parent): host cycle_b: kubeconfig source 1 "
                    "(secret: default/y key value in kube_parent): parent cycle: cycle_a -> cycle_b -> cycle_a"),
        "unknown_context": ({"kube_kubeconfig": admin, "kube_context": "nope"},
                            "context 'nope' is not defined by any kubeconfig source; known contexts: 'ephemeral'"),
    }
    hosts = {name: case[0] for name, case in cases.items()}
    hosts["parent"] = {"kube_kubeconfig": admin}
    hosts["cycle_b"] = {"kube_parent": "cycle_a", "kube_kubeconfig": {"secret": {"name": "y"}}}
    result = run_playbook(ERRORS, inventory(**hosts), "-e", f"out={tmp_path}", "--forks", "12",
                          env={"SOPS_AGE_KEY_FILE": str(tmp_path / "none.txt"), "HOME": str(tmp_path)})
    assert result.rc == 0, result
    for name, case in cases.items():
        message = case[1]
        assert message in (tmp_path / f"{name}.msg").read_text(), name
        assert not (tmp_path / f"{name}.kubeconfig").exists(), name
    assert "Traceback" not in result.output
    assert "s3cr3t" not in result.output
