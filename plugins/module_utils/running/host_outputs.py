# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""A phase's outputs on one host (``planning.outputs``): read after it ran, kept for later phases, read again for a
step that does not run it, and said to be known after the run in a preview."""

from __future__ import annotations

import threading

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.executors.apply import APPLIED
from ansible_collections.phasekit.kube.plugins.module_utils.executors.context import EXTRA_CONNECTIONS, RUN, Outcome
from ansible_collections.phasekit.kube.plugins.module_utils.executors.registry import kind_of
from ansible_collections.phasekit.kube.plugins.module_utils.kube.discovery import Discovery
from ansible_collections.phasekit.kube.plugins.module_utils.planning.outputs import (
    FROM_STDOUT, FROM_VALUES, SECRET_NAMES, PhaseOutput, known_after_run, read_output, read_stdout_output,
    read_values_output)
from ansible_collections.phasekit.kube.plugins.module_utils.running.record import recorded_outputs
from ansible_collections.phasekit.kube.plugins.module_utils.running.runner import HostContext


class HostOutputs:
    """The outputs of the phases a ``BuiltinExecutors`` (``work``) runs."""

    def __init__(self, work):
        self.work = work
        # (phase, host, APPLIED) -> its apply's answers; (phase, host, FROM_STDOUT) -> its command's output
        self._found: dict[tuple, object] = {}
        self._lock = threading.Lock()

    def keep(self, entry, host: str, source: str, found) -> None:
        """What the entry's outputs are read from after it ran (``source``: APPLIED or FROM_STDOUT)."""
        with self._lock:
            self._found[(entry.name, host, source)] = found

    def read(self, entry, context, outcome: Outcome) -> None:
        """After the phase ran on ``host``: its outputs read there and kept for later phases (a run only; a preview
        leaves them known after the run). A value that cannot be read fails the phase on this host."""
        work, host = self.work, context.host
        with self._lock:
            applied = self._found.pop((entry.name, host, APPLIED), ())
            stdout = self._found.pop((entry.name, host, FROM_STDOUT), None)
        if not entry.outputs or work.outputs is None or work.mode != RUN or work.dry_run or outcome.failed \
                or outcome.skipped:
            return
        try:
            values, secret = self.values(entry, context, entry.outputs, applied, stdout)
        except PhasekitError as err:
            outcome.failed, outcome.msg = True, f"{outcome.msg}; {err}" if outcome.msg else str(err)
            return
        work.outputs.keep(entry.full_name, host, values, secret)
        outcome.details = {**outcome.details, "outputs": {name: ("***" if name in secret else value)
                                                          for name, value in values.items()},
                           "secret_outputs": secret}

    def say_known_after_run(self, entry, context, outcome: Outcome) -> None:
        """A preview whose objects hold outputs no run has read yet says which fields (Terraform's "known after
        apply") instead of showing the placeholder as a value."""
        work = self.work
        if not work.dry_run or work.outputs is None or not kind_of(entry.executor).watches_objects \
                or not work.bundles.templated(entry):
            return
        try:
            fields = known_after_run(one.obj for one in work.bundle(entry, context))
        except Exception:  # pylint: disable=broad-exception-caught
            return  # the phase's own outcome reports a bundle that does not render
        if fields:
            said = f"known after the run: {', '.join(fields)}"
            outcome.msg = f"{outcome.msg}; {said}" if outcome.msg else said
            outcome.details = {**outcome.details, "known_after_run": fields}

    def values(self, entry, context, declared: dict, applied=(), stdout=None) -> tuple[dict, list]:
        """The ``declared`` outputs of ``entry`` read on the context's host (from ``applied``, the apply's answers, where they
        are; from ``stdout``, a command's output: without it those are left out), and the names of the secret
        ones."""
        values, secret = {}, []
        cluster = release = None
        for name, spec in declared.items():
            output = PhaseOutput.from_dict(name, spec)
            if output.source == FROM_STDOUT:
                if stdout is None:
                    continue  # a command's output is not on the cluster: known after its next run
                values[name] = read_stdout_output(output, stdout)
            elif output.source == FROM_VALUES:
                if release is None:  # the helm phase's release values (its executor offers the source)
                    release = kind_of(entry.executor).source_values(self.work, entry, context)
                values[name] = read_values_output(output, release)
            else:
                cluster = cluster or self._cluster(entry, context.host)
                values[name] = read_output(output, *cluster, applied)
            if output.secret:
                secret.append(name)
        return values, secret

    def _cluster(self, entry, host: str) -> tuple:
        """Where the phase's outputs are read on host's cluster: its session, discovery and namespace."""
        session = self.work.access.session(host, EXTRA_CONNECTIONS)
        namespace = kind_of(entry.executor).output_namespace(entry)
        namespace = namespace or self.work.access.resolution(host).namespace or "default"
        return session, Discovery(session), namespace

    def recorded(self, entry, host: str) -> dict | None:
        """The outputs of ``entry``'s last run on ``host``, for a step that does not run it (status, destroy, a
        resume, a preview, a selection without it): the non-secret ones from the run record, the secret ones (and
        all of them without records) read again from the cluster. None when they are not known there."""
        recorded = None
        if self.work.records is not None:
            try:
                recorded = recorded_outputs(self.work.records.entries(host, entry.name))
            except PhasekitError:
                return None
            if recorded is None:
                return None  # the phase never succeeded here: nothing to read either
        declared = entry.outputs
        missing = {name: spec for name, spec in declared.items() if recorded is None or name not in recorded}
        try:
            # read outside a run there: no barrier, no deadline
            values, secret = self.values(entry, HostContext(host), missing) if missing else ({}, [])
        except PhasekitError:
            return None
        return {**(recorded or {}), **values, SECRET_NAMES: secret}
