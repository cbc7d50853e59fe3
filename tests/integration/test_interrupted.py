# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""An interrupted run leaves no credential file behind: SIGINT, SIGTERM and SIGHUP to ansible-playbook or to its
process group (a terminal's Ctrl-C, an AWX cancel, a closed terminal), while a command phase holds its KUBECONFIG,
``kubeconfigs``, ``env_files`` and ``env_dirs``, and while a cluster's kubeconfig is being loaded (its client key
written, its exec plugin running). What SIGKILL leaves, the next run removes when it starts.

Each case has a TMPDIR of its own; the signal arrives once the credential files are seen on disk."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

VENV_BIN = Path(sys.executable).parent
NAMESPACE = "phasekit-interrupted"
HOLD_SECONDS = 20  # how long the command (or exec plugin) holds the files: longer than any case waits for them


def our_entries(scratch: Path) -> list:
    """Every file and directory the collection left under TMPDIR (the per-user base directory itself aside)."""
    found = []
    for base in scratch.glob("phasekit-*"):
        for root, directories, files in os.walk(base):  # os.walk: files removed meanwhile are no error
            found += [os.path.join(root, name) for name in directories + files]
    return sorted(found)


def credential_files(scratch: Path) -> list:
    return [path for path in our_entries(scratch) if os.path.isfile(path)]


@pytest.fixture()
def site(clusters, tmp_path):
    """A command phase holding every kind of private file, and an apply phase on a cluster whose kubeconfig user
    runs a slow exec plugin (the client key is on disk meanwhile)."""
    target = clusters["target"]
    marker = tmp_path / "holding"
    (tmp_path / "kust").mkdir()
    (tmp_path / "kust" / "kustomization.yaml").write_text("resources: [cm.yaml]\n")
    (tmp_path / "kust" / "cm.yaml").write_text(yaml.safe_dump(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "built"}, "data": {"token": "s3cr3t"}}))
    phases = tmp_path / "phases"
    phases.mkdir()
    hold = {"apiVersion": "phasekit.dev/v1alpha1", "kind": "Phase", "metadata": {"name": "hold"},
            "spec": {"cluster": "target", "executor": "command", "options": {
                "shell": True, "cmd": f'echo "$KUBECONFIG" > {marker}; sleep {HOLD_SECONDS}',
                "kubeconfigs": {"OTHER_KUBECONFIG": "target"}, "env_files": {"SETTINGS": "password: s3cr3t\n"},
                "env_dirs": {"BUILT": {"built.yaml": {"kustomize": "../kust"}}}}}}
    resolve = {"apiVersion": "phasekit.dev/v1alpha1", "kind": "Phase", "metadata": {"name": "resolve"},
               "spec": {"cluster": "slow", "executor": "apply", "source": [
                   {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": NAMESPACE}}]}}
    (phases / "site.yaml").write_text(yaml.safe_dump_all([hold, resolve]))
    slow = yaml.safe_load(target.admin_kubeconfig.read_text())
    slow["users"][0]["user"]["exec"] = {
        "apiVersion": "client.authentication.k8s.io/v1", "command": "/bin/sh", "interactiveMode": "Never",
        "args": ["-c", f"echo exec > {marker}; sleep {HOLD_SECONDS}; echo '{{\"apiVersion\": "
                       f"\"client.authentication.k8s.io/v1\", \"kind\": \"ExecCredential\", \"status\": {{}}}}'"]}
    (tmp_path / "slow.kubeconfig").write_text(yaml.safe_dump(slow))
    (tmp_path / "inventory.yml").write_text(yaml.safe_dump({"all": {"vars": {"ansible_connection": "local"}, "hosts": {
        "target": {"kube_kubeconfig": str(target.admin_kubeconfig), "kube_context": target.context},
        "slow": {"kube_kubeconfig": str(tmp_path / "slow.kubeconfig"), "kube_context": target.context}}}}))
    return tmp_path


def start_run(collections_path, site: Path, scratch: Path, *args) -> subprocess.Popen:
    env = {**os.environ, "TMPDIR": str(scratch), "ANSIBLE_COLLECTIONS_PATH": str(collections_path),
           "ANSIBLE_PYTHON_INTERPRETER": sys.executable, "ANSIBLE_LOCAL_TEMP": str(site / "ansible-tmp")}
    env.pop("KUBECONFIG", None)
    return subprocess.Popen([str(VENV_BIN / "ansible-playbook"), "phasekit.kube.run", "-i", "inventory.yml", *args],
                            cwd=site, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True, preexec_fn=_default_hangup)


def _default_hangup():
    """SIGHUP acted on as a terminal's hang-up is, even when the tests run under nohup (which ignores it)."""
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def wait_for_credentials(proc: subprocess.Popen, site: Path, scratch: Path) -> list:
    """The credential files of the moment, once the command (or exec plugin) holds them."""
    marker = site / "holding"
    deadline = time.monotonic() + 60
    while not (marker.exists() and marker.read_text().strip() and credential_files(scratch)):
        assert proc.poll() is None, proc.stdout.read().decode()
        assert time.monotonic() < deadline, "the run never held its credential files"
        time.sleep(0.1)
    return credential_files(scratch)


def end(proc: subprocess.Popen):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=30)


MOMENTS = {
    # the command runs with KUBECONFIG, kubeconfigs, env_files and env_dirs on disk
    "command": ("hold", {"kubeconfig", "OTHER_KUBECONFIG", "SETTINGS", "built.yaml"}),
    # the API client loads the kubeconfig: the client key is written, the exec plugin runs
    "kubeconfig-loading": ("resolve", {"users-0-client-key"}),
}
CASES = [(moment, signum, target) for moment in MOMENTS for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
         for target in ("process", "group")]


@pytest.mark.parametrize("moment, signum, target", CASES,
                         ids=[f"{moment}-{signal.Signals(signum).name.lower()}-to-{target}"
                              for moment, signum, target in CASES])
def test_interrupted_run_leaves_no_credential_file(clusters, collections_path, site, short_tmp, moment, signum,
                                                   target):
    scratch = short_tmp
    phase, expected = MOMENTS[moment]
    proc = start_run(collections_path, site, scratch, "-e", f"only={phase}")
    try:
        held = wait_for_credentials(proc, site, scratch)
        assert expected <= {os.path.basename(path) for path in held}, held
        if target == "group":
            os.killpg(proc.pid, signum)
        else:
            proc.send_signal(signum)
        # The files go when the signal arrives, however long Ansible then takes to wind down.
        gone_by = time.monotonic() + 10
        while our_entries(scratch) and time.monotonic() < gone_by:
            time.sleep(0.1)
        assert our_entries(scratch) == []
        proc.wait(timeout=30)
        assert proc.returncode != 0
        assert our_entries(scratch) == []  # nothing written while the run wound down either
    finally:
        end(proc)


def test_what_sigkill_leaves_the_next_run_removes(clusters, collections_path, site, short_tmp):
    """SIGKILL to ansible-playbook and to the worker holding the files: nothing can remove them then; the next run
    does, when it starts (their run directory is named after a process that no longer exists)."""
    scratch = short_tmp
    proc = start_run(collections_path, site, scratch, "-e", "only=hold")
    try:
        held = wait_for_credentials(proc, site, scratch)
        base = next(scratch.glob("phasekit-*"))
        worker = int(Path(held[0]).relative_to(base).parts[0])  # the run directory is named after the worker
        os.killpg(proc.pid, signal.SIGKILL)
        os.kill(worker, signal.SIGKILL)
        try:
            os.killpg(worker, signal.SIGKILL)  # its command (ansible-core 2.19 workers lead a group of their own)
        except ProcessLookupError:
            pass
        proc.wait(timeout=30)
        time.sleep(1)  # the worker's parent watchdog would have run by now, had it survived
        assert credential_files(scratch) == held
    finally:
        end(proc)
    listing = start_run(collections_path, site, scratch, "-e", "plan_action=list")
    assert listing.wait(timeout=120) == 0, listing.stdout.read().decode()
    assert our_entries(scratch) == []
