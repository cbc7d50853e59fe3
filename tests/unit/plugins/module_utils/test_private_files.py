# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Private files for credentials: where they live, what removes them (block end, signal, parent gone, next run)."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from ansible_collections.phasekit.kube.plugins.module_utils import private_files
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.private_files import (
    base_directory, private_directory, remove_all, remove_on_signals, remove_stale_runs, write_private_file)

TESTS = Path(__file__).resolve().parents[3]


@pytest.fixture(autouse=True)
def scratch(tmp_path, monkeypatch):
    """Each test its own TMPDIR and a process state as a fresh worker has it."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(private_files, "_STATE", private_files._State())  # pylint: disable=protected-access
    monkeypatch.setattr(private_files._State, "watched", True)  # no watchdog thread in the test process
    return tmp_path


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_directory_is_private_in_the_run_directory_and_gone_afterwards(scratch):
    with private_directory("phasekit-kubeconfig-") as directory:
        write_private_file(os.path.join(directory, "kubeconfig"), "secret")
        run = Path(directory).parent
        assert run == scratch / f"phasekit-{os.getuid()}" / str(os.getpid())
        for path in (run.parent, run, Path(directory)):
            assert stat.S_IMODE(path.stat().st_mode) == 0o700
        assert stat.S_IMODE((Path(directory) / "kubeconfig").stat().st_mode) == 0o600
    assert not Path(directory).exists() and not run.exists()  # no empty run directory left either


@pytest.mark.parametrize("name, removed", [
    ("dead", True), ("alive", False), ("this-process-before-it-started", True), ("not-a-pid", False),
], ids=["dead-process-removed", "live-process-kept", "reused-pid-removed", "other-names-kept"])
def test_stale_run_directories(scratch, name, removed):
    base = Path(base_directory())
    entry = {"dead": str(dead_pid()), "alive": str(os.getppid()), "this-process-before-it-started": str(os.getpid()),
             "not-a-pid": "notes"}[name]
    (base / entry / "phasekit-kubeconfig-x").mkdir(parents=True)
    (base / entry / "phasekit-kubeconfig-x" / "kubeconfig").write_text("key")
    remove_stale_runs()
    assert (base / entry).exists() is not removed


def test_first_directory_of_a_process_removes_stale_runs(scratch):
    stale = Path(base_directory()) / str(dead_pid()) / "phasekit-files-x"
    stale.mkdir(parents=True)
    with private_directory("phasekit-files-"):
        assert not stale.parent.exists()


@pytest.mark.parametrize("mode", [0o755, 0o770], ids=["readable-by-others", "group-writable"])
def test_base_directory_that_is_not_private_is_refused(scratch, mode):
    base = scratch / f"phasekit-{os.getuid()}"
    base.mkdir()
    base.chmod(mode)
    with pytest.raises(PhasekitError, match=r"not a private directory of this user .* set TMPDIR"):
        with private_directory("phasekit-kubeconfig-"):
            pass


def test_base_directory_that_is_a_symlink_is_refused(scratch):
    (scratch / "elsewhere").mkdir(mode=0o700)
    (scratch / f"phasekit-{os.getuid()}").symlink_to(scratch / "elsewhere")
    with pytest.raises(PhasekitError, match="not a private directory"):
        base_directory()


def test_remove_all_removes_live_directories_and_refuses_new_ones(scratch):
    with private_directory("phasekit-tls-") as directory:
        write_private_file(os.path.join(directory, "key"), "k")
        remove_all()
        assert not Path(directory).exists()
        assert list(scratch.glob("phasekit-*/**/*")) == []
        with pytest.raises(PhasekitError, match="interrupted"):
            with private_directory("phasekit-tls-"):
                pass


def test_ignored_signal_stays_ignored(monkeypatch):
    installed = {}
    monkeypatch.setattr(signal, "getsignal", lambda number: signal.SIG_IGN if number == signal.SIGHUP else None)
    monkeypatch.setattr(signal, "signal", installed.setdefault)
    remove_on_signals()
    assert signal.SIGHUP not in installed  # nohup: the run goes on and needs its files
    assert {signal.SIGTERM, signal.SIGINT} <= set(installed)


WORKER = textwrap.dedent("""
    import multiprocessing, os, sys, time
    sys.path.insert(0, {tests!r})
    import conftest  # the collection finder
    from ansible_collections.phasekit.kube.plugins.module_utils.private_files import (
        private_directory, remove_on_signals)

    def worker(marker):
        remove_on_signals()
        with private_directory("phasekit-kubeconfig-") as directory:
            open(os.path.join(directory, "kubeconfig"), "w").write("key")
            open(marker, "w").write(directory)
            time.sleep(60)

    if __name__ == "__main__":
        multiprocessing.set_start_method("fork")
        multiprocessing.Process(target=worker, args=(sys.argv[1],)).start()
        time.sleep(60)
""")


def _default_hangup():
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGHUP], ids=["parent-killed", "parent-hung-up"])
def test_worker_whose_parent_is_gone_removes_its_files(scratch, signum):
    """Ansible's main process ended by a signal it does not pass on: its worker removes the files and ends."""
    script = scratch / "run.py"
    script.write_text(WORKER.format(tests=str(TESTS)))
    marker = scratch / "marker"
    # SIGHUP as a terminal sends it: acted on by default even when this test runs under nohup (which ignores it)
    parent = subprocess.Popen([sys.executable, str(script), str(marker)], env={**os.environ, "TMPDIR": str(scratch)},
                              start_new_session=True, preexec_fn=_default_hangup)
    try:
        deadline = time.monotonic() + 30
        while not (marker.exists() and marker.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        directory = Path(marker.read_text())
        assert (directory / "kubeconfig").exists()
        parent.send_signal(signum)
        parent.wait(timeout=10)
        gone_by = time.monotonic() + 5
        while directory.parent.exists() and time.monotonic() < gone_by:   # the files, then their run's directory
            time.sleep(0.05)
        assert not directory.exists() and not directory.parent.exists()
    finally:
        try:
            os.killpg(parent.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


THREADED = textwrap.dedent("""
    import os, signal, subprocess, sys, threading
    from concurrent.futures import ThreadPoolExecutor
    sys.path.insert(0, {tests!r})
    import conftest  # the collection finder
    from ansible_collections.phasekit.kube.plugins.module_utils.private_files import (
        private_directory, remove_on_signals)

    def command(marker):
        with private_directory("phasekit-kubeconfig-") as directory:
            open(os.path.join(directory, "kubeconfig"), "w").write("key")
            open(marker, "w").write(directory)
            # the signal lands in this thread (as the kernel may choose), while the main thread waits for it
            signal.pthread_kill(threading.get_ident(), signal.SIGTERM)
            subprocess.run(["sleep", "30"], check=False)

    remove_on_signals()
    with ThreadPoolExecutor(1) as pool:
        pool.submit(command, sys.argv[1]).result()
""")


def test_signal_landing_in_another_thread_removes_the_files_and_reaches_the_main_thread(scratch):
    """A main thread waiting for a command's thread runs Python's handler only once it wakes up: the files go at
    once, and the main thread is woken to end the process."""
    script = scratch / "threaded.py"
    script.write_text(THREADED.format(tests=str(TESTS)))
    marker = scratch / "marker"
    started = time.monotonic()
    process = subprocess.run([sys.executable, str(script), str(marker)], env={**os.environ, "TMPDIR": str(scratch)},
                             timeout=60, check=False, start_new_session=True)
    assert process.returncode == -signal.SIGTERM
    assert time.monotonic() - started < 20  # not after the 30 s command
    directory = Path(marker.read_text())
    assert not directory.exists() and not directory.parent.exists()
