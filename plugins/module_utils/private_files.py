# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Private temporary directories for credentials that must be files for a while: a command's KUBECONFIG, the
TLS material the kubernetes client loads. Each is 0700, removed when its block ends, and registered, so that a
SIGTERM, SIGINT or SIGHUP to the process (ansible-playbook interrupted, an AWX job cancelled) removes every one
still alive before the process goes: no client key is left behind in /tmp.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import threading
from contextlib import contextmanager

_LIVE: set[str] = set()
_LOCK = threading.Lock()
CLEANUP_SIGNALS = ("SIGTERM", "SIGINT", "SIGHUP")


@contextmanager
def private_directory(prefix: str):
    """Yield a fresh 0700 directory; it is removed afterwards, also when the process is signalled meanwhile."""
    directory = tempfile.mkdtemp(prefix=prefix)  # mode 0700
    with _LOCK:
        _LIVE.add(directory)
    try:
        yield directory
    finally:
        _remove(directory)
        with _LOCK:
            _LIVE.discard(directory)


def write_private_file(path: str, text: str) -> str:
    """Write ``text`` to a new 0600 file at ``path`` (in a private directory); return ``path``."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)
    return path


def remove_all() -> None:
    """Remove every private directory still alive (the signal handler's work)."""
    with _LOCK:
        live = list(_LIVE)
        _LIVE.clear()
    for directory in live:
        _remove(directory)


def _remove(directory: str) -> None:
    # the signal handler and the block's own clean-up may race on one directory: try again once
    for _attempt in range(2):
        shutil.rmtree(directory, ignore_errors=True)
        if not os.path.exists(directory):
            return


def remove_on_signals() -> None:
    """Make SIGTERM, SIGINT and SIGHUP remove the private directories, then act as they did before.

    Call from the main thread (Ansible runs action plugins there). Safe to call more than once.
    """
    if threading.current_thread() is not threading.main_thread():
        return
    for name in CLEANUP_SIGNALS:
        number = getattr(signal, name, None)
        if number is None:
            continue
        previous = signal.getsignal(number)
        if getattr(previous, "phasekit_cleanup", False):
            continue
        signal.signal(number, _handler_chaining(number, previous))


def _handler_chaining(number, previous):
    def handler(signum, frame):
        remove_all()
        if callable(previous):
            previous(signum, frame)
        elif previous == signal.SIG_DFL:
            signal.signal(number, signal.SIG_DFL)
            os.kill(os.getpid(), number)
    handler.phasekit_cleanup = True
    return handler


def write_atomically(path: str, text: str, mode: int = 0o600) -> None:
    """Write ``text`` to ``path`` through a private temporary file and one rename: readers see the old file or the
    new one, never a part; the temporary file is removed if anything fails."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, mode=0o700, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        os.fchmod(descriptor, mode)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
