# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""What each executor is, in one place: one ExecutorKind per executor module, found by name in EXECUTORS.

Adding an executor is one new module beside this one (a subclass of ExecutorKind) and one line in
EXECUTORS; no other module names an executor (tests/unit/plugins/module_utils/executors). The generic
flow (records, resume, locks, outputs) asks the kind of a phase's executor what it needs: how it runs, what its
digest covers, how destroy undoes it, what readiness a rollout's soak watches, what it masks, which output sources
it offers, whether it writes outside the API session or only reads.

A kind's hooks get the host work that runs the phase as ``work`` (``executors.context.HostWork``: an executor
module never imports the class that calls it), the run entry as ``entry`` (``planning.planner.RunEntry``, its options
rendered for the host) and the runner's ``HostContext`` of the host as ``context`` (``context.host``, its barrier and
deadline).
"""

from __future__ import annotations

# the task file executor's name, for plugins/action/run_phases.py (which keeps the role's per-host includes apart)
TASKS_EXECUTOR = "tasks"
SOURCE_OBJECTS = "a kustomization directory, a manifest file or directory, or inline objects"


def option_values(spec: dict, options: dict) -> dict:
    """A phase's options completed with the spec's defaults, as an action would receive them."""
    values = {name: rule.get("default") for name, rule in spec.items()}
    values.update({name: value for name, value in (options or {}).items() if name in spec})
    return values


class ExecutorKind:
    """One executor's behaviour; the defaults are those of an executor that reaches its cluster only through its
    program or API session and leaves nothing for destroy to undo."""

    name = ""
    runs_on_controller = True    # False: a task file the role includes on each host (its options are not rendered)
    recorded = True              # its runs are kept in the run records (with a digest of what it does)
    reaches_cluster = True       # False: it only reads its kubeconfig (no lock, no shared-cluster check)
    reads_only = False           # it never writes to its cluster (the lock is checked, not taken)
    only_through_session = False  # it reads and writes only through the API session: what was listed before it
    #                               still answers during it (others may change the cluster behind the session's back)
    watches_objects = False      # it applies or waits for a bundle's objects: a soak watches them, a preview says
    #                              which of their fields are known after the run
    undone_by_destroy = False    # destroy undoes its work (destroy)
    output_sources: tuple = ()   # the output sources only it offers (besides the objects it named)
    source_wanted = SOURCE_OBJECTS  # what its source must be, for the message when it has none
    source_is_file = False       # its source must be one file
    placed_by_host_option = False  # its host option names the inventory host it is placed on
    renders_release = False      # plan action render shows its chart's release
    builds_env_dirs = False      # plan action render shows the directories its ``env_dirs`` build

    def run(self, work, entry, context):
        """The entry run (or previewed: work.dry_run) on the context's host, as an Outcome."""
        raise NotImplementedError(self.name)

    def known_after_run_note(self, host: str, where: str) -> str:
        """What a preview says of the phase on a host whose kubeconfig the run makes (``where``: its Secret)."""
        return f"not previewed: {host}'s kubeconfig is known after the run ({where}: not there yet)"

    def writes_outside_session(self, options: dict) -> bool:  # pylint: disable=unused-argument
        """Whether its program writes to the cluster on its own: the run's lock is taken when the phase starts."""
        return False

    def keeps_lists(self, options: dict) -> bool:  # pylint: disable=unused-argument
        """Whether its run lists through the API session (what it listed may answer a later phase)."""
        return False

    def deletes(self, options: dict) -> bool:  # pylint: disable=unused-argument
        """Whether the phase (options rendered for its host) deletes what it names."""
        return False

    def content(self, work, entry, context) -> dict:
        """What the phase's digest covers besides its executor and options."""
        source = entry.source
        return {"source": work.files.of(source) or source} if isinstance(source, str) else {}

    def destroy(self, work, entry, context):
        """Undo the phase on the context's host (only when undone_by_destroy)."""
        raise NotImplementedError(self.name)

    def readiness(self, work, entry, context):
        """What a soak watches (only when watches_objects): the wait option values and the namespace."""
        raise NotImplementedError(self.name)

    def source_values(self, work, entry, context) -> dict:
        """The values its own output source reads on the context's host (only when it offers one that reads values)."""
        raise NotImplementedError(self.name)

    def output_namespace(self, entry) -> str | None:  # pylint: disable=unused-argument
        """The namespace its outputs' objects are read in, when its options name one."""
        return None

    def add_masks(self, work, entry, masks) -> None:
        """Add to masks what the phase handed its program besides the host's own secrets."""

    def other_kubeconfigs(self, options: dict):  # pylint: disable=unused-argument
        """Its option naming other hosts whose kubeconfigs it is handed (None: none)."""
        return None


def executors() -> dict[str, ExecutorKind]:
    """Every executor by name (imported here, late: the executor modules import the floors below the runner)."""
    # pylint: disable=import-outside-toplevel
    from ansible_collections.phasekit.kube.plugins.module_utils.executors import (
        apply, command, container, helm, kubeconfig, tasks, wait)
    kinds = [apply.Apply(), wait.Wait(), helm.Helm(), kubeconfig.Kubeconfig(), command.Command(),
             container.Container(), tasks.Tasks()]
    return {kind.name: kind for kind in kinds}


def source_executor(source: str) -> str | None:
    """The one executor that offers the output source ``source`` (None: any executor naming objects)."""
    if not _FOUND:
        _FOUND.update(executors())
    return next((kind.name for kind in _FOUND.values() if source in kind.output_sources), None)


UNKNOWN = ExecutorKind()
_FOUND: dict[str, ExecutorKind] = {}


def kind_of(name) -> ExecutorKind:
    """The kind of the executor called name (an unknown name, reported by validation: a kind that does nothing)."""
    if not _FOUND:
        _FOUND.update(executors())
    return _FOUND.get(name, UNKNOWN)
