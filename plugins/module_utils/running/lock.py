# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""One run at a time on a cluster host's plan: the lock a run holds in its run record, as plain rules.

The lock lives in the run record ConfigMap itself (``record.py``), as annotations: who holds it
(``lock-holder``: the run id; ``lock-by``: user, controller host, pid, start, AWX job or CI pipeline), since
when (``lock-acquired``), when last renewed (``lock-renewed``) and for how long a renewal holds
(``lock-duration``, seconds). Every write of the record by a run carries the resourceVersion the run last saw,
so a run never overwrites a holder it did not see. Times are the API server's (the ``Date`` of its answers),
never the controller's: a reader compares them with the ``Date`` of its own answer, so a controller whose
clock is off sees a live lock as live and an expired one as expired (client-go's leader election measures
expiry on the waiter's own clock; one clock, the server's, is enough here and needs no watch).

Here: the holder as data, the expiry rule, and the messages a person reads (who, since when, how to wait, how
to break a stale lock). The record's reads and writes are ``record.py``'s.
"""

from __future__ import annotations

import getpass
import json
import os
import signal
import socket
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone

from ansible_collections.phasekit.kube.plugins.module_utils.private_files import (
    reaching_main_thread, remove_all, remove_on_signals)

HOLDER = "phasekit.kube/lock-holder"      # the run id of the holder
BY = "phasekit.kube/lock-by"              # JSON: user, host, pid, started, job
ACQUIRED = "phasekit.kube/lock-acquired"  # server time (UTC) the holder took it
RENEWED = "phasekit.kube/lock-renewed"    # server time (UTC) the holder last renewed it
DURATION = "phasekit.kube/lock-duration"  # seconds a renewal holds
LOCK_ANNOTATIONS = (HOLDER, BY, ACQUIRED, RENEWED, DURATION)
DEFAULT_DURATION = 120                    # plan_lock_duration
MIN_DURATION = 5
POLL_SECONDS = 1.5                        # a waiting run looks at the record this often
FREE, OURS, LIVE, EXPIRED = "free", "ours", "live", "expired"
# environment variables that name the job a run belongs to, and how a message names it
JOB_VARIABLES = (("AWX_JOB_ID", "AWX job"), ("JOB_ID", "AWX job"), ("CI_PIPELINE_ID", "CI pipeline"),
                 ("GITHUB_RUN_ID", "GitHub run"))
STAMP = "%Y-%m-%dT%H:%M:%SZ"


@dataclass(frozen=True)
class LockSettings:
    """How this run locks: wait up to ``timeout`` seconds for a foreign holder (0: fail at once), hold each
    renewal for ``duration`` seconds, and who it is (``by``, as ``holder_by`` makes it)."""

    timeout: float = 0.0
    duration: float = DEFAULT_DURATION
    by: str = ""


@dataclass(frozen=True)
class LockHolder:
    """A holder as the record's annotations name it; times are the API server's (epoch seconds)."""

    run: str
    by: str                 # JSON as ``holder_by`` wrote it (or whatever a person wrote there)
    acquired: float | None
    renewed: float | None
    duration: float

    def annotations(self) -> dict:
        return {HOLDER: self.run, BY: self.by, ACQUIRED: server_stamp(self.acquired),
                RENEWED: server_stamp(self.renewed), DURATION: str(int(self.duration))}


def released() -> dict:
    """The merge patch's annotations that release the lock (null removes a key)."""
    return {name: None for name in LOCK_ANNOTATIONS}


def holder_of(annotations) -> LockHolder | None:
    """The holder a record's annotations name, or None when there is none. A time or duration a person wrote
    badly reads as unknown (such a holder counts as expired: see ``lock_state``)."""
    annotations = annotations if isinstance(annotations, dict) else {}
    run = annotations.get(HOLDER)
    if not isinstance(run, str) or not run:
        return None
    try:
        duration = float(annotations.get(DURATION))
    except (TypeError, ValueError):
        duration = float(DEFAULT_DURATION)
    return LockHolder(run=run, by=str(annotations.get(BY) or ""), acquired=parse_stamp(annotations.get(ACQUIRED)),
                      renewed=parse_stamp(annotations.get(RENEWED)), duration=duration)


def lock_state(holder: LockHolder | None, run: str, now: float) -> str:
    """``FREE`` (no holder), ``OURS`` (this run), ``LIVE`` (another run, renewed less than its duration ago, by
    the server's clock ``now``), else ``EXPIRED`` (a holder without a readable renewal time too)."""
    if holder is None:
        return FREE
    if holder.run == run:
        return OURS
    last = holder.renewed if holder.renewed is not None else holder.acquired
    if last is not None and now <= last + holder.duration:
        return LIVE
    return EXPIRED


def due_for_renewal(holder: LockHolder | None, now: float) -> bool:
    """A lock this run holds is renewed once a third of its duration has passed (client-go renews well within
    the lease too): at a step's start, and by the renewal thread."""
    if holder is None or holder.renewed is None:
        return True
    return now - holder.renewed >= holder.duration / 3


def holder_by(run: str, environ=None) -> str:
    """Who this run is, as JSON for ``lock-by``: user, controller host, pid of ansible-playbook (the worker's
    parent), when the run started (its id's time), and the job or pipeline the environment names."""
    environ = os.environ if environ is None else environ
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (a container's random uid)
        user = str(os.getuid())
    by = {"user": user, "host": socket.gethostname(), "pid": os.getppid(), "started": run_started(run),
          **process_space()}
    for variable, label in JOB_VARIABLES:
        if environ.get(variable):
            by["job"] = f"{label} {environ[variable]}"
            break
    return json.dumps(by, separators=(",", ":"), sort_keys=True)


def process_space() -> dict:
    """Where a pid means one process: this kernel's boot and this pid namespace (two containers with one host name
    share neither); empty where they cannot be read."""
    space = {}
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as boot:
            space["boot"] = boot.read().strip()
        space["pidns"] = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return {}
    return space


def holder_gone(holder: LockHolder | None) -> bool:
    """Whether the holder's ansible-playbook is known to be gone: it ran here (this host name, this boot, this pid
    namespace) and its pid is no process any more. A run that died with its cluster unreachable could not release
    its lock; the next run on the same controller need not wait out the lease. Anywhere else: not known (False)."""
    if holder is None:
        return False
    try:
        by = json.loads(holder.by)
    except ValueError:
        return False
    space = process_space()
    if not isinstance(by, dict) or not space or by.get("host") != socket.gethostname() or any(
            by.get(key) != value for key, value in space.items()):
        return False
    pid = by.get("pid")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 1:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:   # another user's process: alive
        return False
    return False


def run_started(run: str) -> str:
    """A run id's time (20261124T144501Z-3fa2 -> 2026-11-24T14:45:01Z), or "" when it holds none."""
    try:
        return datetime.strptime(run.split("-", 1)[0], "%Y%m%dT%H%M%SZ").strftime(STAMP)
    except ValueError:
        return ""


def by_text(by: str) -> str:
    """``lock-by`` for people: ``alice@ctl (pid 4242, started 2026-11-24T14:45:01Z, AWX job 12)``."""
    try:
        parsed = json.loads(by)
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        return by or "unknown"
    details = [f"pid {parsed['pid']}" if parsed.get("pid") else "",
               f"started {parsed['started']}" if parsed.get("started") else "", str(parsed.get("job") or "")]
    shown = ", ".join(detail for detail in details if detail)
    who = f"{parsed.get('user') or '?'}@{parsed.get('host') or '?'}"
    return f"{who} ({shown})" if shown else who


def holder_text(holder: LockHolder, now: float) -> str:
    """Who holds it, since when, when last renewed (how long ago, by the server's clock) and for how long."""
    renewed = "never renewed" if holder.renewed is None else \
        f"last renewed {server_stamp(holder.renewed)} ({_ago(now - holder.renewed)})"
    return (f"run {holder.run} by {by_text(holder.by)}, since {server_stamp(holder.acquired) or 'an unknown time'}, "
            f"{renewed}, lease {holder.duration:g}s")


def break_command(namespace: str, name: str) -> str:
    """The command that breaks a stale lock (after checking its holder is gone)."""
    removed = " ".join(f"{annotation}-" for annotation in LOCK_ANNOTATIONS)
    return f"kubectl annotate configmap {name} -n {namespace} {removed}"


def held_message(host: str, namespace: str, name: str, holder: LockHolder, now: float, waited: float = 0.0) -> str:
    """A second run's failure: who holds the cluster's lock, and how to wait for it or break it."""
    waiting = f"waited {waited:.0f}s (plan_lock_timeout); " if waited else ""
    return (f"cluster {host}: plan locked by another run in ConfigMap {namespace}/{name}: {holder_text(holder, now)}; "
            f"{waiting}nothing was written to this cluster. Wait for that run (plan_lock_timeout=<seconds> waits), "
            f"or, only if that run is gone (its lease ends {server_stamp(_ends(holder))}), break the lock: "
            f"{break_command(namespace, name)}")


def changed_meanwhile_message(host: str, namespace: str, name: str, other: str) -> str:
    """Another run wrote this cluster's record between this run's read and its first write (and is done)."""
    return (f"cluster {host}: another run acted on this cluster while this run was reading it ({other}; run record "
            f"ConfigMap {namespace}/{name} changed since this run read it); nothing was written to this cluster "
            f"by this run: run again")


def lost_message(host: str, namespace: str, name: str, holder: LockHolder | None, now: float) -> str:
    """This run's lock was taken over (or broken by hand) while it worked on the cluster."""
    if holder is None:
        who = "its lock annotations were removed (by hand?)"
    else:
        who = f"now held by {holder_text(holder, now)}"
    return (f"cluster {host}: this run lost its lock on ConfigMap {namespace}/{name}: {who}; this run writes "
            f"nothing more there. Check the cluster's state, then run again")


def took_over_message(host: str, namespace: str, name: str, holder: LockHolder, now: float, gone: bool = False) -> str:
    """A run that takes over an expired lock says from whom (its holder was killed, or lost its cluster); a holder
    whose process is gone from this controller (``holder_gone``) is said so."""
    if gone:
        return (f"cluster {host}: took over the lock on ConfigMap {namespace}/{name} of a run whose process is gone "
                f"from this controller: {holder_text(holder, now)}")
    return f"cluster {host}: took over an expired lock on ConfigMap {namespace}/{name} from {holder_text(holder, now)}"


def server_stamp(epoch: float | None) -> str:
    if epoch is None:
        return ""
    return datetime.fromtimestamp(int(epoch), timezone.utc).strftime(STAMP)


def parse_stamp(text) -> float | None:
    if not isinstance(text, str):
        return None
    try:
        return datetime.strptime(text, STAMP).replace(tzinfo=timezone.utc).timestamp()
    except ValueError:
        return None


def _ends(holder: LockHolder) -> float | None:
    last = holder.renewed if holder.renewed is not None else holder.acquired
    return None if last is None else last + holder.duration


def _ago(seconds: float) -> str:
    return f"{max(0, round(seconds))}s ago"


class Interrupted(BaseException):
    """A signal ended the step (SIGTERM, SIGINT, SIGHUP): raised in the main thread so that the step's ``finally``
    releases the locks it holds, then the signal is delivered again (``signals_interrupt``)."""

    def __init__(self, signum: int):
        super().__init__(f"interrupted by signal {signum}")
        self.signum = signum


@contextmanager
def signals_interrupt(names=("SIGTERM", "SIGINT", "SIGHUP")):
    """While the block runs, those signals raise ``Interrupted`` in the main thread (their credential files
    removed first, as ``private_files`` would): the block's ``finally`` runs (a lock held is released), then the
    signal acts as it did before. A signal the process ignores stays ignored; outside the main thread: nothing.
    A signal that lands in another thread (the one running a command) reaches the main thread at once, not when
    the main thread next wakes up (``private_files.reaching_main_thread``)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    remove_on_signals()  # the watch thread that passes a signal landing elsewhere on to this thread
    previous = {}
    fired = []

    @reaching_main_thread
    def handler(signum, _frame):
        remove_all()
        if not fired:  # a second signal must not cut the release short
            fired.append(signum)
            raise Interrupted(signum)

    for name in names:
        number = getattr(signal, name, None)
        if number is None or signal.getsignal(number) == signal.SIG_IGN:
            continue
        previous[number] = signal.getsignal(number)
        signal.signal(number, handler)
    try:
        yield
    except Interrupted as interrupted:
        _restore(previous)
        previous = {}
        os.kill(os.getpid(), interrupted.signum)  # as it would have acted: the worker ends (or its handler runs)
        raise
    finally:
        _restore(previous)


def _restore(previous: dict) -> None:
    for number, handler in previous.items():
        signal.signal(number, handler if handler is not None else signal.SIG_DFL)
