# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Write kubeconfig files for other tools (kubectl, helm, clusterctl): atomically, mode 0600.

A write is planned first (what the file holds now, what it will hold, whether
that is a change) so check mode and diff mode see the same answer as a real
run; the plan is then applied by replacing the file in one rename.
"""

from __future__ import annotations

import os
import stat
import time
from contextlib import contextmanager
from dataclasses import dataclass

from ansible_collections.phasekit.kube.plugins.module_utils import yaml_io
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.decode import decode_kubeconfig
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.decode import decode_kubeconfig_bytes
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.model import SECTIONS
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.model import Kubeconfig
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.model import Origin
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.model import kubeconfig_to_v1
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.readers import read_kubeconfig_file
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.redact import redact_kubeconfig
from ansible_collections.phasekit.kube.plugins.module_utils.private_files import write_atomically

FILE_MODE = 0o600
CONFLICT_CHOICES = ("keep", "replace")
LOCK_TIMEOUT = 60.0
LOCK_POLL = 0.02


@contextmanager
def kubeconfig_lock(path: str, timeout: float = LOCK_TIMEOUT):
    """Hold ``PATH.lock`` while a kubeconfig file is read, merged and replaced: the lock file kubectl
    (client-go's ModifyConfig) creates for the same purpose, so parallel hosts - and kubectl itself - take
    turns instead of losing each other's entries. Created exclusively, removed afterwards."""
    lock = f"{path}.lock"
    deadline = time.monotonic() + timeout
    while True:
        try:
            descriptor = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, FILE_MODE)
            break
        except FileExistsError:
            if time.monotonic() >= deadline:
                raise PhasekitError(f"{path}: still locked by {lock} after {timeout:g}s (another writer, or a "
                                    f"stale lock left by a killed process: remove {lock} if nothing writes)") from None
            time.sleep(LOCK_POLL)
        except OSError as exc:
            raise PhasekitError(f"{path}: cannot create the lock file {lock}: {exc.strerror}") from None
    os.close(descriptor)
    try:
        yield
    finally:
        try:
            os.unlink(lock)
        except FileNotFoundError:
            pass


@dataclass(frozen=True)
class WritePlan:
    """What writing ``path`` would do. ``before`` is None when the file is absent or unreadable."""

    path: str
    before: dict | None
    after: dict
    content_changed: bool
    mode_changed: bool

    @property
    def changed(self) -> bool:
        return self.content_changed or self.mode_changed

    def diff(self) -> dict:
        """Before/after for Ansible's diff mode, with every credential redacted."""
        return {
            "before_header": self.path,
            "after_header": self.path,
            "before": render_kubeconfig(redact_kubeconfig(self.before)) if self.before else "",
            "after": render_kubeconfig(redact_kubeconfig(self.after)),
        }


def render_kubeconfig(config: dict) -> str:
    """YAML text of a kubectl-shaped kubeconfig dict, keys ordered as kubectl orders them."""
    return yaml_io.safe_dump(config, sort_keys=True)


def normalize_on_conflict(value) -> dict:
    """``keep``/``replace`` for all entries, or per section: ``{clusters: keep, users: replace}``."""
    if isinstance(value, str):
        value = {section: value for section in SECTIONS}
    if not isinstance(value, dict) or any(key not in SECTIONS for key in value):
        raise PhasekitError(f"on_conflict: expected keep, replace, or a mapping of {', '.join(SECTIONS)} to them")
    chosen = {section: value.get(section, "replace") for section in SECTIONS}
    for section, choice in chosen.items():
        if choice not in CONFLICT_CHOICES:
            raise PhasekitError(f"on_conflict {section}: expected keep or replace, got {choice!r}")
    return chosen


def plan_dest(path: str, config: dict) -> WritePlan:
    """Replace ``path`` with ``config``."""
    before = _read_existing(path, "dest")[0]
    return _plan(path, before, config)


def plan_merge_into(path: str, config: dict, on_conflict: dict, set_current_context: bool) -> WritePlan:
    """Merge the entries of ``config`` into the kubeconfig file at ``path`` (created if absent).

    An entry whose name the file already has is kept or replaced as ``on_conflict``
    says for its section. The file's current-context is kept unless it has none
    or ``set_current_context`` is true. Everything else in the file is kept.
    """
    before, existing = _read_existing(path, "merge_into")
    merged = existing.copy() if existing else Kubeconfig()
    incoming = decode_kubeconfig(config, Origin(0, "resolved", "memory"))
    for section in SECTIONS:
        entries = merged.section(section)
        for name, entry in incoming.section(section).items():
            if name in entries and on_conflict[section] == "keep":
                continue
            entries[name] = entry
    if set_current_context or not merged.current_context:
        merged.current_context = incoming.current_context
    return _plan(path, before, kubeconfig_to_v1(merged))


def _read_existing(path: str, option: str) -> tuple[dict | None, Kubeconfig | None]:
    try:
        data = read_kubeconfig_file(path)
    except PhasekitError as err:
        raise PhasekitError(str(err), where=f"{option} {path}") from None
    if data is None:
        return None, None
    try:
        existing = decode_kubeconfig_bytes(data, Origin(0, "path", path, path=path))
    except PhasekitError as err:
        if option == "dest":
            return None, None  # replaced anyway; its content is never shown
        raise PhasekitError(f"the file is not a valid kubeconfig: {err}", where=f"{option} {path}") from None
    return kubeconfig_to_v1(existing), existing


def _plan(path: str, before: dict | None, after: dict) -> WritePlan:
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        mode = None
    return WritePlan(path=path, before=before, after=after, content_changed=before != after,
                     mode_changed=mode is not None and mode != FILE_MODE)


def apply_write(plan: WritePlan, *, create_directory: bool = True) -> None:
    """Carry out a plan: a new file is written next to the old one and renamed over it.

    A symlink is written through, as kubectl does: the file it points at is replaced, the link stays.
    Without ``create_directory`` a missing directory is an error (``dest``); ``merge_into`` creates it,
    as kubectl does for its kubeconfig.
    """
    target = os.path.realpath(plan.path)
    directory = os.path.dirname(target)
    if not create_directory and not os.path.isdir(directory):
        raise PhasekitError(f"{plan.path}: the directory {directory} does not exist")
    try:
        if plan.content_changed:
            write_atomically(target, render_kubeconfig(plan.after))
        elif plan.mode_changed:
            os.chmod(target, FILE_MODE)
    except OSError as exc:
        raise PhasekitError(f"{plan.path}: cannot write: {exc.strerror}") from None
