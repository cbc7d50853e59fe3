# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""SIGTERM and SIGINT to ansible-playbook during a command phase (to the main process, or to its process group,
as a terminal's Ctrl-C or an AWX cancel does): no kubeconfig and no client key is left on disk."""

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


def left_files(scratch: Path) -> list:
    return [path for path in scratch.glob("phasekit-*/**/*") if path.is_file()]


@pytest.mark.parametrize("signum, target", [
    (signal.SIGTERM, "process"), (signal.SIGINT, "process"), (signal.SIGTERM, "group"), (signal.SIGINT, "group"),
], ids=["sigterm-main-process", "sigint-main-process", "sigterm-process-group", "sigint-process-group"])
def test_interrupted_command_phase_leaves_no_credentials(clusters, collections_path, tmp_path, signum, target):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    marker = tmp_path / "kubeconfig-path"
    (tmp_path / "phases").mkdir()
    (tmp_path / "phases" / "site.yaml").write_text(yaml.safe_dump({
        "apiVersion": "phasekit.dev/v1alpha1", "kind": "Phase", "metadata": {"name": "long"},
        "spec": {"cluster": "target", "executor": "command",
                 "options": {"cmd": f'echo "$KUBECONFIG" > {marker}; sleep 120', "shell": True}}}))
    (tmp_path / "inventory.yml").write_text(yaml.safe_dump({"all": {"vars": {"ansible_connection": "local"}, "hosts": {
        "target": {"kube_kubeconfig": str(clusters["target"].admin_kubeconfig), "kube_context": "target"}}}}))
    env = {**os.environ, "TMPDIR": str(scratch), "ANSIBLE_COLLECTIONS_PATH": str(collections_path),
           "ANSIBLE_PYTHON_INTERPRETER": sys.executable, "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-tmp")}
    env.pop("KUBECONFIG", None)
    proc = subprocess.Popen([str(VENV_BIN / "ansible-playbook"), "phasekit.kube.run", "-i", "inventory.yml"],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while not (marker.exists() and marker.read_text().strip()) and time.monotonic() < deadline:
            assert proc.poll() is None, proc.stdout.read().decode()
            time.sleep(0.2)
        kubeconfig = Path(marker.read_text().strip())
        assert kubeconfig.exists() and str(kubeconfig).startswith(str(scratch))
        if target == "group":
            os.killpg(proc.pid, signum)
        else:
            proc.send_signal(signum)
        # The credentials go when the signal arrives, whether or not Ansible then takes long to wind down.
        gone_by = time.monotonic() + 20
        while (kubeconfig.exists() or left_files(scratch)) and time.monotonic() < gone_by:
            time.sleep(0.2)
        assert not kubeconfig.exists()
        assert left_files(scratch) == []          # no kubeconfig, no client key, nothing of ours
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the command's sleep, if the signal did not reach it
        except ProcessLookupError:
            pass
        proc.wait(timeout=30)
