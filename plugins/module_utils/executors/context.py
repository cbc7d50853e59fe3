# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""What an executor is given to run a phase on a host: the ``HostWork`` interface, the run's modes, an ``Outcome``,
and the small rules more than one executor follows.

The executor modules depend on this module only, never on the class that calls them (``running.builtin``) nor on
the runner (tests/unit/plugins/module_utils/executors/test_executor_layers.py).
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from typing import Callable, Protocol

from ansible_collections.phasekit.kube.plugins.module_utils.kube.preview import deleted_changes
from ansible_collections.phasekit.kube.plugins.module_utils.kube.ownership import PLAN_ANNOTATION
from ansible_collections.phasekit.kube.plugins.module_utils.records.vocabulary import KEY_SECRET, LABELS

RUN, VALIDATE, STATUS, DESTROY = "run", "validate", "status", "destroy"
EXTRA_CONNECTIONS = 4  # live-state reads run beside the apply workers
REQUEST_BUDGET = 32


@dataclass
class Outcome:
    """What an executor did on one host."""

    changed: bool = False
    skipped: bool = False
    failed: bool = False
    not_ready: bool = False          # a readiness check that found objects not ready (status mode)
    msg: str = ""
    objects_changed: int | None = None
    details: dict = field(default_factory=dict)   # executor output kept in the task result (no secrets)


class HostWork(Protocol):
    """The run as an executor sees it (implemented by ``running.builtin.BuiltinExecutors``).

    Attributes: ``access`` (``ClusterAccess``: resolution, session, templates, secrets of a host), ``mode`` (RUN,
    VALIDATE, STATUS or DESTROY), ``dry_run``, ``check_mode``, ``diff``, ``shared`` (``SharedRequests`` or None),
    ``charts`` (``ChartCache``), ``files`` (``FileDigests``), ``records`` (``RunRecords`` or None),
    ``delete_nonempty_namespaces``, ``environ_of(host)``.

    ``entry`` is the runner's ``planning.planner.RunEntry`` (options rendered for the host), ``context`` its
    ``running.runner.HostContext`` on one host: the host, its barrier and its deadline.
    """

    def bundle(self, entry, context) -> list:
        """The entry's rendered bundle for the host (rendered once per phase, or per host with templates)."""

    def bundle_digest(self, entry, context) -> str:
        """The rendered bundle's digest."""

    def built(self, key: tuple, make: Callable[[], object]):
        """``make()``'s value (or its error, raised again), made once per run for ``key``."""

    def time_left(self, context) -> float | None:
        """Seconds left of the phase's timeout on the context's host (None: no timeout)."""

    def capped(self, seconds, context, default: float | None = None) -> float | None:
        """A wait's ``seconds`` (``default`` when unset), no longer than what is left of the phase's timeout on
        the context's host."""

    def owner(self, entry, context):
        """Who applies (``kube.ownership.PlanOwner``), None outside a plan."""

    def carried(self, host: str):
        """A dry run's carried-forward state of host (``kube.preview.PlannedState``); None in a real run."""

    def plan_objects(self, host: str):
        """What this destroy deleted on host so far (``kube.teardown.PlanObjects``)."""

    def keeps_lists_watched(self, entry, context) -> bool:
        """Whether a later apply of the step runs on the host (what the phase listed may answer it)."""

    def keep_for_outputs(self, entry, context, source: str, found) -> None:
        """What the phase's outputs are read from later (its apply's objects, its command's stdout)."""

    def watching(self, entry, context):
        """A wait's ``on_poll``: notes what the wait still waits for (progress lines)."""

    def masks(self, entry, context):
        """What the phase on the host must not show (``masking.Masks``)."""

    def set_waiting(self, entry, context, said: Callable[[], str]) -> None:
        """What the phase waits for now, looked at when a progress line asks."""


def whole_seconds(limit: float | None) -> int | None:
    """A program's time limit in whole seconds (at least 1)."""
    return None if limit is None else max(1, math.ceil(limit))


def timeout_of(wait) -> float | None:
    """An apply phase's wait timeout, which also bounds its teardown."""
    if isinstance(wait, dict) and wait.get("timeout") is not None:
        return float(wait["timeout"])
    return None


def run_bookkeeping(plan: str | None):
    """Whether an object is this plan's run record, or the records' key (no plan: records are not written)."""
    def is_bookkeeping(resource, metadata: dict) -> bool:
        labels = metadata.get("labels") or {}
        if any(labels.get(key) != value for key, value in LABELS.items()):
            return False
        if (resource.group, resource.kind) == ("", "Secret"):
            return metadata.get("name") == KEY_SECRET
        return (resource.group, resource.kind) == ("", "ConfigMap") and plan is not None and \
            (metadata.get("annotations") or {}).get(PLAN_ANNOTATION) == plan
    return is_bookkeeping


def host_diffs(host: str, diffs: list) -> list:
    """Diff entries whose headers name the cluster host (a step shows the diffs of many clusters)."""
    return [dict(one, before_header=f"{host}: {one.get('before_header', '')}",
                 after_header=f"{host}: {one.get('after_header', '')}") for one in diffs]


def api_warnings(host: str, session, before: int) -> list:
    """What the API server warned of on host since ``before`` (its session's warnings then)."""
    return [f"{host}: API server: {text}" for text in session.warnings[before:]]


class OncePerKey:
    """Values made once per key, side by side for different keys; an error is kept and raised again."""

    def __init__(self):
        self._lock = threading.Lock()
        self._locks: dict = {}
        self._made: dict = {}

    def get(self, key, make: Callable[[], object]):
        with self._lock:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            if key not in self._made:
                try:
                    self._made[key] = make()
                except Exception as err:  # pylint: disable=broad-exception-caught
                    self._made[key] = err  # every host asking gets the same error
            made = self._made[key]
        if isinstance(made, Exception):
            raise made
        return made


def teardown_outcome(report) -> Outcome:
    """A teardown's (or a release's removal's) report as an outcome."""
    details = {key: value for key, value in report.result().items() if key != "changed"}
    if report.dry_run:  # destroy --check: what the plan summary counts as destroyed
        details["changes"] = [change.to_dict() for change in deleted_changes(report.objects)]
    return Outcome(changed=report.changed, failed=report.failure is not None, msg=report.message,
                   objects_changed=report.deleted, details=details)
