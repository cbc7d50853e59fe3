"""The collection builds into a tarball that installs and works from the installed location."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from conftest import REPO, VENV_BIN


CACHES = (".hypothesis", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".tox", "__pycache__", ".ansible")
# what running the tests, the linters and the documented commands leaves in a checkout, at the root and below it
LEFT_BEHIND = [*(f"{where}{cache}/probe" for cache in CACHES for where in ("", "tests/unit/", "plugins/action/")),
               "tests/output/junit/probe.xml", "ansible-navigator.log", "examples/site/ansible-navigator.log",
               "examples/site/artifacts/site-probe.json", "examples/ee/context/Containerfile",
               "examples/ee/collections/phasekit-kube.tar.gz", "plugins/action/probe.pyc"]


@pytest.fixture(scope="module")
def tarball(tmp_path_factory) -> Path:
    """``ansible-galaxy collection build`` of this checkout as it is (what is ignored included: a checkout where
    tests ran), with every cache and output the tests, the linters and the docs' commands leave added."""
    work = tmp_path_factory.mktemp("galaxy")
    checkout = work / "checkout"
    shutil.copytree(REPO, checkout, ignore=shutil.ignore_patterns(".git"), symlinks=True)
    for path in LEFT_BEHIND:
        (checkout / path).parent.mkdir(parents=True, exist_ok=True)
        (checkout / path).write_text("left behind\n")
    subprocess.run([str(VENV_BIN / "ansible-galaxy"), "collection", "build", "--output-path", str(work),
                    str(checkout)], check=True, capture_output=True, text=True)
    tarballs = list(work.glob("phasekit-kube-*.tar.gz"))
    assert len(tarballs) == 1, tarballs
    return tarballs[0]


@pytest.fixture(scope="module")
def installed(tarball) -> Path:
    """The tarball installed into a fresh collections path."""
    dest = tarball.parent / "collections"
    # --force and a clean environment: the working tree may be on ANSIBLE_COLLECTIONS_PATH already
    subprocess.run([str(VENV_BIN / "ansible-galaxy"), "collection", "install", "--force", "-p", str(dest),
                    str(tarball)], check=True, capture_output=True, text=True, env=_env(dest))
    return dest


def _env(collections: Path) -> dict:
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(collections), ANSIBLE_NOCOLOR="1")
    env.pop("KUBECONFIG", None)
    return env


def test_tarball_lists_no_cache_or_output(tarball):
    """The built tarball's listing: none of what tests, linters and navigator leave in a checkout is shipped."""
    with tarfile.open(tarball) as archive:
        members = [member.name.removeprefix("./") for member in archive.getmembers()]
    assert "MANIFEST.json" in members and "plugins/action/apply.py" in members, members[:20]
    shipped = [name for name in members if set(Path(name).parts) & set(CACHES)
               or name.startswith(("tests/output", "examples/site/artifacts", "examples/ee/context",
                                   "examples/ee/collections", "hack", "Makefile", ".ci"))
               or name.endswith((".pyc", "ansible-navigator.log"))]
    assert shipped == [], shipped


def test_gitignore_covers_what_the_tarball_leaves_out():
    """What the tests and the documented commands leave in a checkout is ignored by git too (never committed)."""
    checked = subprocess.run(["git", "check-ignore", "--no-index", "--stdin"], cwd=REPO, input="\n".join(LEFT_BEHIND),
                             capture_output=True, text=True, check=False)
    assert sorted(set(LEFT_BEHIND) - set(checked.stdout.split())) == []


def test_tarball_installs_without_development_files(installed):
    root = installed / "ansible_collections/phasekit/kube"
    assert (root / "MANIFEST.json").is_file()
    for dev_only in ("hack", "Makefile", ".ci", "tests/output"):
        assert not (root / dev_only).exists(), dev_only
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
