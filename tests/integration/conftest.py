"""Shared fixtures for integration tests: real local clusters and a way to run playbooks.

Every integration test talks to real control planes started by hack/clusters.py
on loopback (etcd, kube-apiserver, controller-manager, scheduler, KWOK).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("PHASEKIT_CACHE", Path.home() / ".cache/phasekit"))
CLUSTER_NAMES = os.environ.get("CLUSTERS", "ephemeral target").split()
VENV_BIN = Path(sys.executable).parent


def tools_bin() -> Path:
    """Directory with kubectl, kube-apiserver, kwok, sops, age (built once, cached)."""
    if os.environ.get("PHASEKIT_BIN"):
        return Path(os.environ["PHASEKIT_BIN"])
    out = subprocess.run(["bash", str(REPO / "hack/build-tools.sh")], check=True, capture_output=True, text=True)
    return Path(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def bin_dir() -> Path:
    path = tools_bin()
    os.environ["PHASEKIT_BIN"] = str(path)
    os.environ["PATH"] = f"{path}{os.pathsep}{VENV_BIN}{os.pathsep}{os.environ['PATH']}"
    return path


class Cluster:
    """One running local cluster: its kubeconfigs, contexts and API server URL."""

    def __init__(self, name: str, root: Path):
        self.name = name
        self.dir = root / name
        self.admin_kubeconfig = self.dir / "admin.kubeconfig"
        self.limited_kubeconfig = self.dir / "limited.kubeconfig"
        self.context = name
        self.limited_context = f"{name}-limited"
        config = yaml.safe_load(self.admin_kubeconfig.read_text())
        self.server = config["clusters"][0]["cluster"]["server"]

    def kubectl(self, *args, stdin: str | None = None, check: bool = True, limited: bool = False):
        kubeconfig = self.limited_kubeconfig if limited else self.admin_kubeconfig
        return subprocess.run(["kubectl", "--kubeconfig", str(kubeconfig), *args], input=stdin, text=True,
                              capture_output=True, check=check)

    def get_json(self, *args):
        return json.loads(self.kubectl("get", "-o", "json", *args).stdout)


@pytest.fixture(scope="session")
def clusters(bin_dir) -> dict[str, Cluster]:
    """Start (idempotently) the local clusters and return them by name."""
    root = Path(os.environ.get("PHASEKIT_CLUSTERS_DIR", CACHE / "clusters"))
    subprocess.run([sys.executable, str(REPO / "hack/clusters.py"), "up", *CLUSTER_NAMES], check=True,
                   capture_output=True, text=True)
    return {name: Cluster(name, root) for name in CLUSTER_NAMES}


@contextlib.contextmanager
def holding_the_cluster_api_objects():
    """One test file at a time across the xdist workers (--dist loadfile) holds what several files put on the shared
    clusters: the Cluster API CRD clusters.cluster.x-k8s.io (cluster-scoped, defined differently by
    test_inventory.py and by the airshipctl published site) and the airshipctl sites' ApplySets and run records
    (plan deploy-gating in `default`). Two at once lock each other out or delete each other's objects."""
    root = Path(os.environ.get("PHASEKIT_CLUSTERS_DIR", CACHE / "clusters"))
    root.mkdir(parents=True, exist_ok=True)
    with open(root / "cluster-api-objects.lock", "w", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


@pytest.fixture()
def airship_clusters(clusters) -> dict[str, Cluster]:
    """The clusters, held by one airshipctl site test at a time (see holding_the_cluster_api_objects), from the
    site's setup to its cleanup."""
    with holding_the_cluster_api_objects():
        yield clusters


@pytest.fixture(scope="session")
def collections_path(tmp_path_factory) -> Path:
    """An ANSIBLE_COLLECTIONS_PATH in which phasekit.kube is this working tree."""
    root = tmp_path_factory.mktemp("collections")
    target = root / "ansible_collections" / "phasekit"
    target.mkdir(parents=True)
    (target / "kube").symlink_to(REPO)
    return root


class PlaybookResult:
    def __init__(self, proc: subprocess.CompletedProcess):
        self.rc = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.output = proc.stdout + proc.stderr

    def __repr__(self):
        # failures first: pytest shortens long assertion messages from the end
        failures = [line.strip()[:400] for line in self.output.splitlines()
                    if line.startswith(("fatal:", "failed:", "ERROR!", "[ERROR]")) or ": failed: " in line]
        return f"<PlaybookResult rc={self.rc} {' | '.join(failures[:5])}>\n{self.output[-6000:]}"


@pytest.fixture()
def run_playbook(collections_path, tmp_path, bin_dir):
    """Run a playbook given as YAML text (or a path) with an inventory (YAML text, dict or path).

    Returns a PlaybookResult with rc, stdout, stderr and output (both).
    """

    def run(playbook, inventory=None, *args, env=None, verbosity=0, check=False):
        if isinstance(playbook, Path):
            pb_path = playbook
        else:
            pb_path = tmp_path / "playbook.yml"
            pb_path.write_text(textwrap.dedent(playbook) if isinstance(playbook, str) else yaml.safe_dump(playbook))
        cmd = [str(VENV_BIN / "ansible-playbook"), str(pb_path)]
        if inventory is not None:
            if isinstance(inventory, Path):
                inv_path = inventory
            else:
                inv_path = tmp_path / "inventory.yml"
                text = inventory if isinstance(inventory, str) else yaml.safe_dump(inventory)
                inv_path.write_text(textwrap.dedent(text))
            cmd += ["-i", str(inv_path)]
        if verbosity:
            cmd.append("-" + "v" * verbosity)
        if check:
            cmd.append("--check")
        # Tests of several files run plans with the same name on the same clusters, their run records in `default`:
        # a run that meets another's lock waits for it, as two pipelines of one user would be told to (a test's own
        # -e plan_lock_timeout comes later and wins)
        cmd += ["-e", "plan_lock_timeout=300", *args]
        full_env = dict(os.environ)
        full_env.update({
            "ANSIBLE_COLLECTIONS_PATH": str(collections_path),
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_FORCE_COLOR": "0",
            "ANSIBLE_RETRY_FILES_ENABLED": "0",
            "ANSIBLE_HOST_KEY_CHECKING": "0",
            "ANSIBLE_LOCALHOST_WARNING": "0",
            "ANSIBLE_INVENTORY_UNPARSED_WARNING": "0",
            "ANSIBLE_PYTHON_INTERPRETER": sys.executable,
        })
        full_env.pop("KUBECONFIG", None)
        full_env.update(env or {})
        proc = subprocess.run(cmd, env=full_env, capture_output=True, text=True, cwd=tmp_path, check=False)
        return PlaybookResult(proc)

    return run


@pytest.fixture
def short_tmp():
    """A private TMPDIR with a short path: ansible-core 2.21 starts a multiprocessing manager whose Unix socket
    lives in TMPDIR, and a socket's path holds at most 107 bytes (pytest's tmp_path is longer)."""
    path = Path(tempfile.mkdtemp(prefix="pk-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def one_cluster_site(cluster, root: Path, record_namespace: str, collections_path: Path, *fixed: str):
    """A site of one cluster host (named as the cluster) under ``root``, its run records in ``record_namespace``:
    returns run(*args) -> (rc, output), ``ansible-playbook phasekit.kube.run`` there with ``fixed`` then ``args``
    (no Traceback allowed), and write(documents) for its phases/site.yaml."""
    (root / "phases").mkdir(parents=True)
    (root / "inventory.yml").write_text(yaml.safe_dump({"all": {
        "vars": {"ansible_connection": "local", "plan_record_namespace": record_namespace},
        "hosts": {cluster.name: {"kube_kubeconfig": str(cluster.admin_kubeconfig), "kube_context": cluster.context}}}}))

    def run(*args) -> tuple[int, str]:
        env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(collections_path), "ANSIBLE_NOCOLOR": "1",
               "ANSIBLE_PYTHON_INTERPRETER": sys.executable}
        env.pop("KUBECONFIG", None)
        done = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "phasekit.kube.run", "-i",
                               "inventory.yml", "-e", "plan_show_plan=false", *fixed, *args], cwd=root, env=env,
                              capture_output=True, text=True, timeout=300, check=False)
        output = done.stdout + done.stderr
        assert "Traceback" not in output, output
        return done.returncode, output

    def write(documents) -> None:
        (root / "phases" / "site.yaml").write_text(yaml.safe_dump_all(documents))

    return run, write


SUMMARY_HEADER = ["PHASE", "CLUSTER", "RESULT", "DURATION", "CHANGED", "SERVER"]


def summary_text(output: str) -> str:
    """The last run summary's table in the output (its header and rows, as printed), so that a reader of results does
    not also read a preview's table of counts or a rollout's batches printed after it (the table ends at its first
    blank line)."""
    lines = output.splitlines()
    headers = [number for number, line in enumerate(lines)
               if line.strip().strip('",').split()[:len(SUMMARY_HEADER)] == SUMMARY_HEADER]
    if not headers:
        return ""
    table = []
    for line in lines[headers[-1]:]:
        if not line.strip().strip('",').strip():
            break
        table.append(line)
    return "\n".join(table)
