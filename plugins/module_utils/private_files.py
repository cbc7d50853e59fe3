# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Private temporary directories for credentials that must be files for a while: a command's KUBECONFIG, the
TLS material the kubernetes client loads, the files of ``env_files`` and ``env_dirs``.

Where they live: ``$TMPDIR/phasekit-<uid>/<pid>/<prefix>XXXX``, one 0700 base directory per user, one run
directory per process that writes them (an Ansible worker), each block's own directory inside. A directory is
removed when its block ends, and registered, so that:

- SIGTERM, SIGINT or SIGHUP to the process removes every one still alive before the process goes (Ansible's
  main process passes SIGINT and SIGTERM on to its workers, which it starts in sessions of their own);
- a signal that lands in another thread than the main one (where Python runs handlers, once that thread wakes
  up) removes them at once, and wakes the main thread;
- a worker whose parent (ansible-playbook) is gone, whatever ended it (SIGHUP, SIGKILL), removes them too
  and ends itself, as its parent would have told it to;
- what SIGKILL to the worker itself leaves behind is in a run directory of a dead process, which the next run
  removes when it starts (``remove_stale_runs``).
"""

from __future__ import annotations

import errno
import multiprocessing
import os
import select
import shutil
import signal
import stat
import tempfile
import threading
import time
from contextlib import contextmanager

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError

_LIVE: set[str] = set()
_LOCK = threading.RLock()  # re-entrant: the signal handler may run while its own thread holds it
CLEANUP_SIGNALS = ("SIGTERM", "SIGINT", "SIGHUP")
PARENT_POLL_SECONDS = 0.25  # how soon a worker notices that ansible-playbook is gone
MAIN_THREAD_GRACE = 0.2  # how long a signal's handler may take to start in the main thread before it is woken
BASE_PREFIX = "phasekit-"


class _State:
    """This process's run directory and watchdog (a forked worker starts with none: ``pid`` tells them apart)."""
    pid: int | None = None
    run_directory: str | None = None
    closing = False  # set by the signal handler: no new credential file from now on
    swept = False  # stale run directories removed
    watched = False  # the watch thread started
    inherited_wakeup = -1  # the signal wake-up pipe this process set (a forked child inherits it)
    handled: dict = {}  # signal number -> how many times its handler ran (the watch thread's way to know)


_STATE = _State()


def base_directory() -> str:
    """``$TMPDIR/phasekit-<uid>``: this user's 0700 directory for private files; created if missing.

    Refused (PhasekitError) when it is not a directory of this user's that only this user can enter: another
    user could have created it in a shared /tmp beforehand to read what is written there.
    """
    path = os.path.join(tempfile.gettempdir(), f"{BASE_PREFIX}{os.getuid()}")
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise PhasekitError(f"cannot create the private directory {path}: {exc.strerror}") from None
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise PhasekitError(f"{path} is not a private directory of this user (expected a directory owned by uid "
                            f"{os.getuid()}, mode 0700): remove it, or set TMPDIR to another directory")
    return path


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_runs(base: str | None = None) -> list[str]:
    """Remove the run directories of processes that are gone (killed with SIGKILL mid-run); return their paths.

    A run directory is named after its process id; one named after this process's id predates this process
    (a reused id) and goes too, unless this process made it.
    """
    base = base or base_directory()
    removed = []
    try:
        names = os.listdir(base)
    except OSError:
        return removed
    own = _STATE.run_directory if _STATE.pid == os.getpid() else None
    for name in names:
        path = os.path.join(base, name)
        if not name.isdigit() or path == own:
            continue
        if int(name) == os.getpid() or not _pid_alive(int(name)):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def _this_process() -> None:
    """Forget what a forked worker inherited from its parent (call with ``_LOCK`` held)."""
    if _STATE.pid != os.getpid():
        _STATE.pid, _STATE.run_directory, _STATE.handled = os.getpid(), None, {}
        _STATE.swept = _STATE.watched = _STATE.closing = False


def _sweep_once(base: str) -> None:
    if not _STATE.swept:
        remove_stale_runs(base)
        _STATE.swept = True


def _run_directory() -> str:
    """This process's run directory (call with ``_LOCK`` held); the first of a process sweeps stale ones."""
    _this_process()
    _start_watch(signals=False)
    if _STATE.run_directory is None or not os.path.isdir(_STATE.run_directory):
        base = base_directory()
        _sweep_once(base)
        path = os.path.join(base, str(os.getpid()))
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        _STATE.run_directory = path
    return _STATE.run_directory


@contextmanager
def private_directory(prefix: str):
    """Yield a fresh 0700 directory; it is removed afterwards, also when the process is signalled meanwhile."""
    with _LOCK:
        _this_process()
        if _STATE.closing:
            raise PhasekitError("the run is being interrupted: no new private file is written")
        directory = tempfile.mkdtemp(prefix=prefix, dir=_run_directory())  # mode 0700
        _LIVE.add(directory)  # under the same lock: the signal handler sees every directory that exists
    try:
        yield directory
    finally:
        _remove(directory)
        with _LOCK:
            _LIVE.discard(directory)
            if not _LIVE and _STATE.pid == os.getpid() and _STATE.run_directory:
                try:
                    os.rmdir(_STATE.run_directory)  # nothing of this process is left: no empty directory either
                    _STATE.run_directory = None
                except OSError as exc:
                    if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOENT):
                        raise


def write_private_file(path: str, text: str) -> str:
    """Write ``text`` to a new 0600 file at ``path`` (in a private directory); return ``path``."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)
    return path


def make_private_subdirectories(top: str, relative: str) -> str:
    """Create ``relative`` (0700, each level) below the existing private directory ``top``; return its path.

    Unlike ``os.makedirs`` it never creates ``top`` again: once a signal removed it, writing fails.
    """
    path = top
    for part in [part for part in relative.split("/") if part]:
        path = os.path.join(path, part)
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
    return path


def remove_all() -> None:
    """Remove every private directory of this process still alive, and its run directory (the signal handler's
    work); from now on no new one is made."""
    with _LOCK:
        _STATE.closing = True
        live = list(_LIVE)
        _LIVE.clear()
        run_directory = _STATE.run_directory if _STATE.pid == os.getpid() else None
    for directory in live:
        _remove(directory)
    if run_directory:
        _remove(run_directory)  # also a directory being made while the signal arrived


def _remove(directory: str) -> None:
    # the signal handler and the block's own clean-up may race on one directory: try again once
    for _attempt in range(2):
        shutil.rmtree(directory, ignore_errors=True)
        if not os.path.exists(directory):
            return


def _start_watch(signals: bool) -> None:
    """Start this process's watch thread, once (call with ``_LOCK`` held); see ``_watch``. ``signals``: the
    signal handlers are ours (``remove_on_signals``), so the thread may act on signals too."""
    if _STATE.watched:
        return
    _STATE.watched = True
    wakeup = _signal_wakeup_pipe() if signals else None
    parent = os.getppid() if multiprocessing.parent_process() is not None else None
    if wakeup is None and parent is None:
        return
    threading.Thread(target=_watch, args=(wakeup, parent), name="phasekit-private-files", daemon=True).start()


def _signal_wakeup_pipe() -> int | None:
    """The read end of a pipe the interpreter writes each signal's number to, in whichever thread the signal
    lands; None where that cannot be set up (not the main thread, or another wake-up file is in use)."""
    if threading.current_thread() is not threading.main_thread():
        return None
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    try:
        previous = signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    except (ValueError, OSError):
        previous = None
    if previous is None or previous not in (-1, _STATE.inherited_wakeup):
        if previous is not None:
            signal.set_wakeup_fd(previous)  # someone else's (asyncio): leave it to them
        os.close(read_end)
        os.close(write_end)
        return None
    _STATE.inherited_wakeup = write_end  # a child forked from here inherits it, and may replace it
    return read_end


def _watch(wakeup: int | None, parent: int | None) -> None:
    """Two things a signal handler cannot do alone:

    - a signal sent to the process may land in any of its threads, and Python runs the handler only when the main
      thread next runs Python code: a main thread waiting for the threads that run commands would run it when the
      command ends. The files go as soon as the signal lands instead, and the signal is passed on to the main
      thread if its handler did not run within ``MAIN_THREAD_GRACE`` (its wait is then interrupted).
    - a worker (multiprocessing's child: Ansible's workers) whose parent is gone, ansible-playbook ended by a
      signal it does not pass on (SIGHUP, SIGKILL), removes the files and ends itself with its commands.
    """
    cleanup = {getattr(signal, name) for name in CLEANUP_SIGNALS if hasattr(signal, name)}
    while True:
        if wakeup is not None:
            ready = select.select([wakeup], [], [], PARENT_POLL_SECONDS)[0]
            landed = {number for number in (os.read(wakeup, 512) if ready else b"") if number in cleanup}
        else:
            time.sleep(PARENT_POLL_SECONDS)
            landed = set()
        if landed:
            handled = dict(_STATE.handled)
            remove_all()
            _pass_on_to_main_thread(landed, handled)
        if parent is not None and os.getppid() != parent:
            remove_all()
            os.kill(os.getpid(), signal.SIGTERM)  # as Ansible's main process would: the worker and its commands end
            return


def _pass_on_to_main_thread(landed: set, handled: dict) -> None:
    deadline = time.monotonic() + MAIN_THREAD_GRACE
    waiting = set(landed)
    while waiting and time.monotonic() < deadline:
        waiting = {number for number in waiting if _STATE.handled.get(number, 0) == handled.get(number, 0)}
        time.sleep(0.01)
    for number in waiting:
        if getattr(signal.getsignal(number), "phasekit_cleanup", False):  # never another's handler twice
            signal.pthread_kill(threading.main_thread().ident, number)


def remove_on_signals() -> None:
    """Make SIGTERM, SIGINT and SIGHUP remove the private directories, then act as they did before; remove the
    run directories that processes killed earlier left behind (once per process).

    Call from the main thread (Ansible runs action plugins there). Safe to call more than once. A signal the
    process ignores (``nohup``) stays ignored: the run goes on and needs its files.
    """
    if threading.current_thread() is not threading.main_thread():
        return
    for name in CLEANUP_SIGNALS:
        number = getattr(signal, name, None)
        if number is None:
            continue
        previous = signal.getsignal(number)
        if getattr(previous, "phasekit_cleanup", False) or previous == signal.SIG_IGN:
            continue
        signal.signal(number, _handler_chaining(number, previous))
    with _LOCK:
        _this_process()
        _start_watch(signals=True)
        if not _STATE.swept:
            try:
                _sweep_once(base_directory())
            except PhasekitError:
                pass  # said when a file is to be written


def _handler_chaining(number, previous):
    def handler(signum, frame):
        remove_all()
        if callable(previous):
            previous(signum, frame)
        elif previous == signal.SIG_DFL:
            signal.signal(number, signal.SIG_DFL)
            os.kill(os.getpid(), number)
    return reaching_main_thread(handler)


def reaching_main_thread(handler):
    """``handler`` as a handler of this module: counted when it runs, so that the watch thread passes a signal that
    landed in another thread on to the main thread when the handler has not run within ``MAIN_THREAD_GRACE`` (a
    main thread blocked on a lock without a timeout would otherwise run it only when the lock is released)."""
    def counted(signum, frame):
        _STATE.handled[signum] = _STATE.handled.get(signum, 0) + 1
        return handler(signum, frame)
    counted.phasekit_cleanup = True
    return counted


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
