"""The collection builds into a tarball that installs and works from the installed location."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, VENV_BIN


CACHES = (".hypothesis", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".tox", "__pycache__")


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """Build the collection and install the tarball into a fresh collections path, from a checkout where tests ran:
    the test tools' caches are there (made here if a run left none), and none of them may be shipped."""
    for cache in CACHES:
        (REPO / cache / "phasekit-probe").mkdir(parents=True, exist_ok=True)
    work = tmp_path_factory.mktemp("galaxy")
    subprocess.run([str(VENV_BIN / "ansible-galaxy"), "collection", "build", "--output-path", str(work), str(REPO)],
                   check=True, capture_output=True, text=True)
    tarballs = list(work.glob("phasekit-kube-*.tar.gz"))
    assert len(tarballs) == 1, tarballs
    dest = work / "collections"
    # --force and a clean environment: the working tree may be on ANSIBLE_COLLECTIONS_PATH already
    subprocess.run([str(VENV_BIN / "ansible-galaxy"), "collection", "install", "--force", "-p", str(dest),
                    str(tarballs[0])], check=True, capture_output=True, text=True, env=_env(dest))
    return dest


def _env(collections: Path) -> dict:
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(collections), ANSIBLE_NOCOLOR="1")
    env.pop("KUBECONFIG", None)
    return env


def test_tarball_leaves_out_development_files(installed):
    root = installed / "ansible_collections/phasekit/kube"
    assert (root / "MANIFEST.json").is_file()
    for dev_only in ("hack", "Makefile", ".ci", "tests/output"):
        assert not (root / dev_only).exists(), dev_only
    shipped = [str(path.relative_to(root)) for path in root.rglob("*")]
    assert not [path for path in shipped if set(Path(path).parts) & set(CACHES)], "caches in the tarball"
    manifest = json.loads((root / "MANIFEST.json").read_text())
    assert manifest["collection_info"]["license"] == ["Apache-2.0"]


@pytest.mark.parametrize("plugin_type, name", [
    ("module", "phasekit.kube.kubeconfig"),
    ("module", "phasekit.kube.apply"),
    ("module", "phasekit.kube.phase_plan"),
    ("lookup", "phasekit.kube.kubeconfig"),
    ("inventory", "phasekit.kube.clusters"),
    ("role", "phasekit.kube.plan"),
], ids=lambda v: v)
def test_ansible_doc_from_installed_collection(installed, plugin_type, name):
    proc = subprocess.run([str(VENV_BIN / "ansible-doc"), "-t", plugin_type, name], env=_env(installed),
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "EXAMPLES" in proc.stdout or "ENTRY POINT" in proc.stdout


def test_installed_collection_reaches_a_real_cluster(installed, clusters, tmp_path):
    """A playbook using the installed collection resolves the kubeconfig and talks to the API."""
    target = clusters["target"]
    inventory = tmp_path / "inventory.yml"
    inventory.write_text(json.dumps({"all": {"hosts": {"target": {
        "ansible_connection": "local", "kube_kubeconfig": str(target.admin_kubeconfig),
        "kube_context": target.context}}}}))
    playbook = tmp_path / "site.yml"
    playbook.write_text("""
- hosts: all
  gather_facts: false
  tasks:
    - name: Resolve the kubeconfig
      phasekit.kube.kubeconfig:
      register: kc
    - name: Apply one object
      phasekit.kube.apply:
        definition:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: installed-check, namespace: default}
          data: {from: installed-collection}
      register: applied
    - ansible.builtin.assert:
        that:
          - kc.server == '%s'
          - kc.provenance.context.kind == 'path'
""" % target.server)
    proc = subprocess.run([str(VENV_BIN / "ansible-playbook"), "-i", str(inventory), str(playbook)],
                          env=_env(installed), capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    live = target.get_json("configmap", "installed-check", "-n", "default")
    assert live["data"] == {"from": "installed-collection"}
    target.kubectl("delete", "configmap", "installed-check", "-n", "default")
