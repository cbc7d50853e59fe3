# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""A plan read once per run: the next task that asks for the same plan gets the one already built, unless its inputs
changed.

The role reads the plan's documents in ``phase_plan`` and again in each step's ``run_phases`` (each task is a process
of its own, so nothing built in one is in memory in the next). A ``PlanStore`` keeps each plan built, keyed by what
built it: the build's arguments, the inventory's groups, and the size, modification time and inode of every document
file and directory read. A task whose key matches, and whose inventory answers the questions the build asked of it
(a host's ``kube_parent``, whether it has ``kube_kubeconfig``) the same way, gets the stored plan; any other builds
it again, as before.

Only plans read from files are kept: their content is already on disk in the user's files. Inline documents
(``plan``) may hold vault-decrypted values, and a kustomization directory's inputs are wherever kustomize reads them
(other directories, remote bases), which no stamp here covers: both are built each time.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
from dataclasses import dataclass, field
from typing import Callable

from ansible_collections.phasekit.kube.plugins.module_utils import yaml_io
from ansible_collections.phasekit.kube.plugins.module_utils.bundle import is_kustomization
from ansible_collections.phasekit.kube.plugins.module_utils.planning.inventory import Inventory
from ansible_collections.phasekit.kube.plugins.module_utils.version import COLLECTION_VERSION

STORE_SUFFIX = ".plan"


def document_stamps(paths: list[str], base_dir: str) -> list[tuple] | None:
    """What tells that the documents ``paths`` name changed: each file and directory read, with its size, times and
    inode. ``None`` when the plan cannot be kept (a kustomization directory) or a path is missing (the build says
    so)."""
    stamps = []
    for given in paths:
        path = given if os.path.isabs(given) else os.path.join(base_dir, given)
        if os.path.isdir(path):
            if is_kustomization(path):
                return None
            stamps.append(_stamp(path))   # a directory's times change when a file is added, removed or renamed
            stamps.extend(_stamp(file_path) for file_path in yaml_io.document_files(path))
        elif os.path.isfile(path):
            stamps.append(_stamp(path))
        else:
            return None
    return stamps


def _stamp(path: str) -> tuple:
    info = os.stat(path)
    return (path, info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)


@dataclass
class InventoryReads:
    """The questions a build asked of the inventory, with their answers: a stored plan is reused only where the
    inventory answers them the same way."""

    parents: dict[str, str | None] = field(default_factory=dict)
    kubeconfigs: dict[str, bool] = field(default_factory=dict)

    def recording(self, inventory: Inventory) -> Inventory:
        """``inventory``, answering as it does and noting each answer here."""
        return Inventory(groups=inventory.groups,
                         parent_of=_noted(inventory.parent_of, self.parents),
                         has_kubeconfig=_noted(inventory.has_kubeconfig, self.kubeconfigs))

    def same_in(self, inventory: Inventory) -> bool:
        return (all(inventory.parent_of(host) == parent for host, parent in self.parents.items())
                and all(inventory.has_kubeconfig(host) == has for host, has in self.kubeconfigs.items()))


def _noted(answer: Callable, answers: dict) -> Callable:
    def noted(host: str):
        answers[host] = answer(host)
        return answers[host]
    return noted


def plan_key(build: dict, stamps: list[tuple], inventory: Inventory) -> str:
    """The key of a plan built with the arguments ``build`` from documents stamped ``stamps`` over ``inventory``."""
    given = [COLLECTION_VERSION, build, stamps, inventory.groups]
    return hashlib.sha256(json.dumps(given, sort_keys=True, default=str).encode()).hexdigest()


@dataclass(frozen=True)
class PlanStore:
    """Plans of one run, one file each in a private directory (see ``plugin_utils.plan.plan_store``)."""

    directory: str

    def reuse_or_build(self, key: str, inventory: Inventory, build: Callable[[Inventory], object]) -> tuple:
        """(the plan stored under ``key`` if the inventory still answers as it did, True), else
        (``build(inventory)``, stored, False)."""
        stored = self._load(key)
        if stored is not None and stored[0].same_in(inventory):
            return stored[1], True
        reads = InventoryReads()
        plan = build(reads.recording(inventory))
        self._save(key, reads, plan)
        return plan, False

    def _path(self, key: str) -> str:
        return os.path.join(self.directory, key + STORE_SUFFIX)

    def _load(self, key: str):
        try:
            with open(self._path(key), "rb") as handle:
                return pickle.load(handle)
        except (OSError, pickle.PickleError, EOFError, AttributeError, ImportError, TypeError):
            return None  # none stored, or unreadable: built again

    def _save(self, key: str, reads: InventoryReads, plan) -> None:
        path = self._path(key)
        temporary = f"{path}.{os.getpid()}.tmp"
        try:
            os.makedirs(self.directory, mode=0o700, exist_ok=True)
            descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(descriptor, "wb") as handle:
                pickle.dump((reads, plan), handle, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(temporary, path)
        except (OSError, pickle.PickleError, TypeError, AttributeError):
            try:   # not kept: the next task builds the plan again
                os.unlink(temporary)
            except OSError:
                pass
