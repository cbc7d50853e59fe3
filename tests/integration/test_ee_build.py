# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""`ansible-builder create` on examples/ee writes a complete build context (no container engine needed)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def context(tmp_path_factory) -> Path:
    """Run build-context.sh from a copy of examples/ee (the repository stays untouched)."""
    root = tmp_path_factory.mktemp("ee")
    shutil.copytree(REPO / "examples/ee", root / "examples/ee", ignore=shutil.ignore_patterns("collections", "context"))
    for name in ("requirements.txt", "bindep.txt"):  # the EE definition refers to ../../NAME
        shutil.copy(REPO / name, root / name)
    out = root / "context"
    env = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}", "PHASEKIT_COLLECTION_DIR": str(REPO)}
    proc = subprocess.run(["bash", str(root / "examples/ee/build-context.sh"), str(out)], env=env,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


@pytest.mark.parametrize("name, source", [
    ("requirements.txt", "requirements.txt"),
    ("bindep.txt", "bindep.txt"),
], ids=["python-requirements", "bindep"])
def test_context_carries_the_collections_requirements(context, name, source):
    assert (context / "_build" / name).read_text() == (REPO / source).read_text()


def test_context_carries_the_collection(context):
    galaxy = yaml.safe_load((context / "_build/requirements.yml").read_text())
    assert galaxy["collections"] == [{"name": "/build/collections/phasekit-kube.tar.gz", "type": "file"}]
    with tarfile.open(context / "_build/collections/phasekit-kube.tar.gz") as tar:
        manifest = json.load(tar.extractfile("MANIFEST.json"))
        names = set(tar.getnames())
    assert (manifest["collection_info"]["namespace"], manifest["collection_info"]["name"]) == ("phasekit", "kube")
    assert {"plugins/inventory/clusters.py", "meta/execution-environment.yml", "requirements.txt",
            "bindep.txt"} <= names


@pytest.mark.parametrize("step", [
    "COPY _build/files/kubernetes.repo /etc/yum.repos.d/kubernetes.repo",
    "$PKGMGR install -y kubectl",
    "go install -trimpath -ldflags \"-s -w\" github.com/getsops/sops/v3/cmd/sops@${SOPS_VERSION}",
    "RUN kubectl version --client && sops --version",
    "ansible-galaxy collection install $ANSIBLE_GALAXY_CLI_COLLECTION_OPTS -r requirements.yml",
    "introspect.py introspect --user-pip=requirements.txt --user-bindep=bindep.txt",
], ids=["kubectl-repository", "kubectl", "sops", "tools-checked", "collection-installed", "deps-introspected"])
def test_containerfile_installs_everything(context, step):
    assert step in (context / "Containerfile").read_text()


def test_distribution_kubectl_is_replaced_by_the_pinned_one(context):
    assert "kubernetes-client" in (context / "_build/exclude-bindep.txt").read_text()
    assert "pkgs.k8s.io/core:/stable:/v1.34/rpm/" in (context / "_build/files/kubernetes.repo").read_text()
