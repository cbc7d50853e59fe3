# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""docs/awx.md, 'ansible-navigator': the documented command, as written, runs the example site in the execution
environment `make ee` built (and once more with ``--ee false``, without a container).

The commands are taken from the page (snippet ``navigator-run``) and run by bash in a scratch copy of the repository's
``examples/site``, with the local clusters' directory as the reader's: the kubeconfigs and the certificate and key
files they name are mounted read-only into the container, ``SOPS_AGE_KEY_FILE`` and ``PHASEKIT_CLUSTERS_DIR`` passed,
the host's network shared for the loopback API servers. What is checked is what a CI job checks: the exit code, the
playbook artifact's status, hosts and summary, the clusters themselves, and that no credential is in the artifact or
the output.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from conftest import REPO, VENV_BIN, Cluster
from test_doc_snippets import console_commands, marked_snippets
from test_ee_job import IMAGE, SITE_CLUSTERS, ee_image, site_clusters  # noqa: F401  pylint: disable=unused-import
from test_inventory import leaked, secret_strings

pytestmark = [pytest.mark.ee]

DEMO_KEY = REPO / "examples/site/secrets/demo-age.key"
ANSI = re.compile(r"\x1b\[[0-9;]*m")
# the site's phases and where each runs (examples/site/README.md's table)
SITE_ROWS = {("infra/namespaces", "ephemeral"), ("infra/namespaces", "target"), ("infra/crds", "target"),
             ("infra/widgets", "target"), ("workload01/kubeconfig", "workload01"), ("apps/hello", "workload01"),
             ("apps/hello", "target"), ("apps/settings", "workload01"), ("apps/smoke", "target"),
             ("apps/report", "workload01")}


def documented_script(*extra: str) -> str:
    """The page's commands, one bash script: ``cd`` and ``export`` carry over as in the reader's shell; ``extra``
    goes on the end of the ansible-navigator command line."""
    commands = console_commands(marked_snippets("docs/awx.md")["navigator-run"].text)
    navigator = [index for index, command in enumerate(commands) if command.startswith("ansible-navigator run ")]
    assert len(navigator) == 1, commands
    # the image make ee built, under the name the page uses unless PHASEKIT_EE_IMAGE names another
    commands[navigator[0]] = " ".join([commands[navigator[0]].replace("--eei phasekit-kube-ee:latest", f"--eei {IMAGE}"),
                                       *extra])
    return "\n".join(commands)


@pytest.fixture(scope="module")
def encrypted_target(site_clusters):
    """target's kubeconfig encrypted for the demo key, as the example site's README makes it once (its own
    commands, run from the repository root as it says)."""
    block = marked_snippets("examples/site/README.md")["encrypt-target"]
    env = dict(os.environ, SOPS_AGE_KEY_FILE=str(DEMO_KEY),
               PHASEKIT_CLUSTERS_DIR=str(site_clusters["target"].dir.parent))
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", block.text], cwd=REPO, env=env, capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return site_clusters["target"].dir / "admin.enc.yaml"


@pytest.fixture(scope="module")
def secrets(site_clusters) -> list[str]:
    """The clusters' keys, certificates and tokens, and the age identity that decrypts the SOPS file."""
    age_identity = next(line for line in DEMO_KEY.read_text().splitlines() if line.startswith("AGE-SECRET-KEY-"))
    return [*secret_strings(site_clusters["ephemeral"].dir.parent), age_identity]


def run_documented(tmp_path: Path, clusters_dir: Path, *extra: str, collections: Path | None = None):
    """The documented script in a scratch copy of the repository's examples/site; ``extra`` goes on the end of the
    ansible-navigator command line."""
    shutil.copytree(REPO / "examples/site", tmp_path / "examples/site")
    script = documented_script(*extra)
    env = dict(os.environ, PHASEKIT_CLUSTERS_DIR=str(clusters_dir), ANSIBLE_NOCOLOR="1",
               PATH=f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}")
    for name in ("KUBECONFIG", "SOPS_AGE_KEY_FILE", "K8S_AUTH_KUBECONFIG", "K8S_AUTH_CONTEXT"):
        env.pop(name, None)
    env.pop("ANSIBLE_COLLECTIONS_PATH", None)
    if collections:
        env["ANSIBLE_COLLECTIONS_PATH"] = str(collections)
    started = time.monotonic()
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path, env=env, capture_output=True,
                          text=True, check=False, timeout=900)
    seconds = time.monotonic() - started
    artifacts = sorted((tmp_path / "examples/site/artifacts").glob("site-*.json"))
    return done, artifacts, seconds


def summary_rows(stdout_lines: list[str]) -> dict[tuple[str, str], str]:
    """The summary table's rows, (phase, cluster) -> result, from the playbook's output."""
    rows = {}
    for line in stdout_lines:
        row = re.match(r'\s*"?(\S+/\S+)\s+(\S+)\s+(ok|changed|failed|not run)\s', ANSI.sub("", line))
        if row:
            rows[(row.group(1), row.group(2))] = row.group(3)
    return rows


def check_artifact(artifact_path: Path, output: str, secrets: list[str]) -> dict:
    artifact = json.loads(artifact_path.read_text())
    assert artifact["status"] == "successful", artifact["stdout"][-60:]
    results = [task for play in artifact["plays"] for task in play["tasks"]]
    assert set(SITE_CLUSTERS) <= {task["host"] for task in results if task["__result"] == "Ok"}
    assert not [task for task in results if task["__result"] not in ("Ok", "Skipped")], "a task failed"
    rows = summary_rows(artifact["stdout"])
    assert SITE_ROWS <= set(rows), rows
    assert leaked(artifact_path.read_text(), secrets) == []
    assert leaked(output, secrets) == []
    return rows


def test_the_documented_navigator_command_runs_the_site_in_the_ee(ee_image, site_clusters, encrypted_target, secrets,
                                                                  tmp_path):
    target = site_clusters["target"]
    target.kubectl("delete", "widget", "small", "-n", "demo-apps", "--ignore-not-found", check=False)
    done, artifacts, seconds = run_documented(tmp_path, target.dir.parent)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    assert len(artifacts) == 1, artifacts
    rows = check_artifact(artifacts[0], output, secrets)
    # ran in the image: the role came from the collection installed there, not from this checkout
    assert "/usr/share/ansible/collections/ansible_collections/phasekit/kube/roles/plan" in output, output[-3000:]
    # the clusters changed as the site says: the Widget deleted before the run is back, the site's objects are there
    assert rows[("infra/widgets", "target")] == "changed", rows
    assert target.get_json("widget", "small", "-n", "demo-apps")["metadata"]["name"] == "small"
    workload01 = Cluster("workload01", target.dir.parent)
    assert workload01.get_json("deployment", "hello", "-n", "demo-apps")["status"].get("availableReplicas")
    print(f"ansible-navigator in the EE: {seconds:.1f}s")


def test_the_documented_navigator_command_runs_without_a_container(site_clusters, encrypted_target, secrets,
                                                                   collections_path, tmp_path):
    """``--ee false``: navigator runs the ansible-playbook on PATH (this venv's) with the collection installed here."""
    done, artifacts, seconds = run_documented(tmp_path, site_clusters["target"].dir.parent, "--ee", "false",
                                              collections=collections_path)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    assert len(artifacts) == 1, artifacts
    check_artifact(artifacts[0], output, secrets)
    assert "/usr/share/ansible/collections" not in output
    print(f"ansible-navigator --ee false: {seconds:.1f}s")
