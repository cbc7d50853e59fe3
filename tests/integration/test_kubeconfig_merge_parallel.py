# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""50 cluster hosts merging into one kubeconfig file at once: no entry lost, atomic, 0600, lock removed."""

from __future__ import annotations

import stat

import yaml

HOSTS = [f"h{i:02d}" for i in range(50)]


def test_parallel_merges_into_one_file_lose_nothing(run_playbook, tmp_path):
    target = tmp_path / "merged" / "config"
    target.parent.mkdir()
    target.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "clusters": [
        {"name": "kept", "cluster": {"server": "https://kept.example:6443"}}], "users": [], "contexts": []}))
    hosts = {host: {"kube_kubeconfig": {"content": {
        "apiVersion": "v1", "kind": "Config", "current-context": host,
        "clusters": [{"name": host, "cluster": {"server": f"https://{host}.example:6443"}}],
        "users": [{"name": host, "user": {"token": f"token-{host}"}}],
        "contexts": [{"name": host, "context": {"cluster": host, "user": host}}]}}} for host in HOSTS}
    inventory = {"all": {"vars": {"ansible_connection": "local"}, "hosts": hosts}}
    playbook = ("- hosts: all\n  gather_facts: false\n  tasks:\n"
                f"    - phasekit.kube.kubeconfig:\n        merge_into: {target}\n")
    result = run_playbook(playbook, inventory, "-f", "50")
    assert result.rc == 0, result
    merged = yaml.safe_load(target.read_text())
    assert sorted(c["name"] for c in merged["contexts"]) == HOSTS
    assert sorted(c["name"] for c in merged["clusters"]) == sorted(HOSTS + ["kept"])
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert sorted(p.name for p in target.parent.iterdir()) == ["config"]   # no lock or temporary file left
