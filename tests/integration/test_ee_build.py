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
    for name in ("requirements.txt", "bindep.txt", "hack/build-tools.sh"):  # the EE definition refers to ../../NAME
        (root / name).parent.mkdir(parents=True, exist_ok=True)
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
    'ARG EE_BASE_IMAGE="quay.io/fedora/fedora:42"',
    'ARG PKGMGR="/usr/local/bin/pkgmgr"',
    "COPY _build/files/pkgmgr /usr/local/bin/pkgmgr",
    "bash /output/build-tools.sh kubectl helm sops",
    "COPY --from=builder /opt/phasekit-tools/ /usr/local/bin/",
    "RUN kubectl version --client && helm version && sops --version",
    "ansible-galaxy collection install $ANSIBLE_GALAXY_CLI_COLLECTION_OPTS -r requirements.yml",
    "introspect.py introspect --user-pip=requirements.txt --user-bindep=bindep.txt",
], ids=["conventional-base", "package-manager-wrapper", "wrapper-installed", "tools-built-from-go-modules",
        "only-the-binaries-kept", "tools-checked", "collection-installed", "deps-introspected"])
def test_containerfile_installs_everything(context, step):
    assert step in (context / "Containerfile").read_text()


def test_tools_are_built_before_the_collection_is_copied(context):
    """The Go build layer depends only on the base: a change of the collection does not rebuild kubectl."""
    text = (context / "Containerfile").read_text()
    builder = text[text.index("AS builder"):]
    assert builder.index("build-tools.sh kubectl helm sops") < builder.index("COPY --from=galaxy")


def test_distribution_kubectl_is_replaced_by_the_built_one(context):
    assert "kubernetes-client" in (context / "_build/exclude-bindep.txt").read_text()
    assert (context / "_build/files/build-tools.sh").read_text() == (REPO / "hack/build-tools.sh").read_text()


@pytest.mark.parametrize("call, expected", [
    (["install", "-y", "git"], "apt-get install -y -qq --no-install-recommends git"),
    (["install", "-y", "--nodocs", "--setopt", "install_weak_deps=0", "python3", "python3-pip"],
     "apt-get install -y -qq --no-install-recommends python3 python3-pip"),
    (["remove", "-y", "golang"], "apt-get remove -y -qq golang"),
    (["clean", "all"], "apt-get clean"),
], ids=["install", "dnf-options-dropped", "remove", "clean"])
def test_package_manager_wrapper_speaks_apt_on_debian(tmp_path, call, expected):
    """files/pkgmgr on a base without dnf: ansible-builder's calls become apt-get's (a stand-in apt-get records)."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "apt-get").write_text('#!/bin/sh\necho "apt-get $*" >> "$CALLS"\n')
    (fake / "apt-get").chmod(0o755)
    calls = tmp_path / "calls"
    env = {"PATH": f"{fake}:/usr/bin:/bin", "CALLS": str(calls)}
    proc = subprocess.run(["sh", str(REPO / "examples/ee/files/pkgmgr"), *call], env=env, capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert expected in calls.read_text().splitlines()


def test_package_manager_wrapper_refuses_what_it_cannot_translate(tmp_path):
    proc = subprocess.run(["sh", str(REPO / "examples/ee/files/pkgmgr"), "upgrade"], env={"PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2 and "'upgrade' is not one of install, remove, clean" in proc.stderr
