# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""A preview's plan-wide summary: per phase and cluster, the objects it would add, change and destroy (pruned,
deleted), then the totals, as ``terraform plan`` ends ("Plan: 3 to add, 1 to change, 0 to destroy.").

It is read from the records of a dry run (check mode, ``status``, ``destroy --check``): an object phase's
``changes`` (``kube.preview.ObjectChange``: names and field paths, never values), a phase that touches no object
its ``preview`` (what it would do: "would run ...", "would wait for 3 objects"). The summary table and the JSON
report (``plan_report_json``) show the same ``PlanChanges``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ansible_collections.phasekit.kube.plugins.module_utils.kube.preview import ADD, CHANGE, DESTROY, ObjectChange

SHOWN_OBJECTS = 10   # object lines per phase and cluster under the table (the JSON report has them all)
NOT_COUNTED = ("failed", "not run", "not in play")
UNKNOWN_KUBECONFIG = "kubeconfig_known_after_run"  # a record key: its host's kubeconfig is made by the run
PREVIEW_MODES = ("run", "status", "destroy")  # a dry run of these is a preview (validate checks, it plans nothing)


def named_first(names: list[str], limit: int = SHOWN_OBJECTS) -> str:
    """The first ``limit`` of ``names``, comma-separated, and how many more (a fleet's preview stays readable)."""
    return ", ".join(names[:limit]) + (f" and {len(names) - limit} more" if len(names) > limit else "")


def previews(mode: str, check_mode: bool) -> bool:
    """Whether a run in ``mode`` is a preview, whose summary ends with the plan's changes."""
    return mode == "status" or (check_mode and mode in PREVIEW_MODES)


@dataclass(frozen=True)
class PhaseChanges:
    """One phase on one cluster in a preview: its objects' changes (``counted``: the phase reported objects), or
    what it would do when it has none (``note``)."""

    phase: str
    cluster: str
    executor: str
    result: str
    objects: tuple = ()          # ObjectChange
    counted: bool = False
    note: str = ""
    known_after_run: bool = False  # not previewed: its cluster's kubeconfig is made by the run

    def count(self, action: str) -> int:
        return sum(1 for change in self.objects if change.action == action)

    def to_dict(self) -> dict:
        return {"add": self.count(ADD), "change": self.count(CHANGE), "destroy": self.count(DESTROY),
                "counted": self.counted, "note": self.note, "known_after_run": self.known_after_run,
                "objects": [change.to_dict() for change in self.objects]}


@dataclass(frozen=True)
class PlanChanges:
    """Every phase and cluster of a preview, in the summary's order, and the totals."""

    phases: tuple = ()           # PhaseChanges

    def total(self, action: str) -> int:
        return sum(one.count(action) for one in self.phases)

    @property
    def incomplete(self) -> list[str]:
        """'phase on cluster' of each phase that failed or did not run: the plan's totals leave them out."""
        return [f"{one.phase} on {one.cluster}" for one in self.phases if one.result in NOT_COUNTED]

    @property
    def unknown(self) -> list[str]:
        """'phase on cluster' of each phase not previewed because its cluster's kubeconfig is made by the run."""
        return [f"{one.phase} on {one.cluster}" for one in self.phases if one.known_after_run]

    def totals(self) -> dict:
        """What the JSON report says of the whole preview (its summary's last line)."""
        return {"add": self.total(ADD), "change": self.total(CHANGE), "destroy": self.total(DESTROY),
                "incomplete": self.incomplete, "known_after_run": self.unknown}

    def totals_line(self) -> str:
        line = f"Plan: {self.total(ADD)} to add, {self.total(CHANGE)} to change, {self.total(DESTROY)} to destroy."
        incomplete = self.incomplete
        if incomplete:
            line += f" Not counted (failed or not run): {named_first(incomplete)}."
        unknown = self.unknown
        if unknown:
            line += f" Known after the run (their cluster's kubeconfig is made by the run): {named_first(unknown)}."
        return line


def phase_changes(entry: dict) -> PhaseChanges:
    """A summary entry (``views.summary_entries``) as its phase's changes."""
    record = entry.get("record") or {}
    found = record.get("changes")
    objects = tuple(ObjectChange.from_dict(one) for one in found or () if isinstance(one, dict))
    note = str(record.get("preview") or "")
    if not note and entry["result"] not in ("ok", "changed"):
        note = entry["label"] + (f": {entry['msg']}" if entry.get("msg") else "")
    return PhaseChanges(phase=entry["phase"], cluster=entry["cluster"], executor=entry["executor"],
                        result=entry["result"], objects=objects, counted=isinstance(found, list), note=note,
                        known_after_run=bool(record.get(UNKNOWN_KUBECONFIG)))


def plan_changes(entries: list[dict]) -> PlanChanges:
    """The preview's changes from the summary's entries."""
    return PlanChanges(tuple(phase_changes(entry) for entry in entries))
