# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Phases and plans as plain data, parsed from documents with their shape checked.

A ``Phase`` document defines one top-level phase; its ``spec.phases`` nest
child phases inline, to any depth. A ``PhasePlan`` names phases in the order
they run. Full names join parents and children with ``/`` (``certs/ca``), as
kubeadm's workflow runner does. This module checks the shape of documents
(kinds, fields, types, names); what the fields mean (executors, sources,
clusters, plan references) is checked by ``validation``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ansible_collections.phasekit.kube.plugins.module_utils.planning.documents import RawDocument
from ansible_collections.phasekit.kube.plugins.module_utils.planning.graph import parse_needs
from ansible_collections.phasekit.kube.plugins.module_utils.planning.outputs import parse_outputs
from ansible_collections.phasekit.kube.plugins.module_utils.planning.problems import (
    DocumentOrigin, Problems, did_you_mean, shown_value, type_name)
from ansible_collections.phasekit.kube.plugins.module_utils.planning.rollout import Rollout, parse_rollout

API_VERSION = "phasekit.dev/v1alpha1"
PHASE_KIND = "Phase"
PLAN_KIND = "PhasePlan"
KINDS = (PHASE_KIND, PLAN_KIND)
SEPARATOR = "/"

DOCUMENT_FIELDS = ("apiVersion", "kind", "metadata", "spec")
METADATA_FIELDS = ("name", "labels", "annotations")
PHASE_SPEC_FIELDS = ("description", "cluster", "executor", "source", "options", "retries", "delay", "timeout",
                     "rollout", "outputs", "needs", "phases")
# Attempts after a failed one, the first pause between them (doubled each time) and the phase's time limit per host.
RETRY_FIELDS = ("retries", "delay", "timeout")
MAX_RETRIES = 100
DEFAULT_RETRY_DELAY = 5.0
MAX_RETRY_DELAY = 300.0  # the doubling stops here
CHILD_PHASE_FIELDS = ("name",) + PHASE_SPEC_FIELDS
PLAN_SPEC_FIELDS = ("description", "phases")

# A name is one path segment: no "/", which joins full names.
NAME_PATTERN = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9_.-]*[A-Za-z0-9])?$")


@dataclass
class Phase:
    """One phase: what runs (executor, source, options), where (cluster), and its children."""

    name: str
    full_name: str
    origin: DocumentOrigin
    path: str                          # the phase's place in its document: "spec" or "spec.phases[0]"
    base_dir: str                      # relative paths in this phase start here
    parent: str | None = None          # full name of the parent phase
    level: int = 0
    description: str = ""
    cluster: str | None = None         # effective: its own, else inherited from the parent
    cluster_path: str | None = None    # field that set the effective cluster (for messages)
    executor: str | None = None        # None: a group phase, it only holds children
    source: object = None              # as written: a path, or inline objects
    source_path: str | None = None     # the source path made absolute (set by validation)
    options: dict = field(default_factory=dict)
    retries: int = 0                   # attempts after the first, when an attempt fails
    delay: float = DEFAULT_RETRY_DELAY  # seconds before the first retry; doubled before each next one
    timeout: float | None = None       # seconds the phase may take on one host, all attempts together
    retry_fields_set: tuple = ()       # which of them the document sets (group and tasks phases take none)
    rollout: Rollout | None = None     # its own progressive rollout across its clusters (see rollout.py)
    outputs: tuple = ()                # ``outputs.PhaseOutput``s: values read after it ran, for later phases
    needs: tuple = ()                  # ``graph.Need``s: the phases that must have ended before it starts
    children: list[Phase] = field(default_factory=list)
    # A phase read from another format's document keeps a field elsewhere in it (set by that format's reader):
    # the field's name -> its path in the document, for messages.
    field_paths: dict = field(default_factory=dict)
    # Why this phase cannot run here (an executor with no equivalent); it is listed, and fails validate and run.
    not_runnable: str | None = None
    # Programs it runs that must be on the controller's PATH when it is validated or run (not to list or render).
    requires: tuple = ()
    # The problems of its document (shared by every phase of it): they fail a plan that runs the phase, and are
    # warnings of validate otherwise (a plan needs only its own phases to be valid).
    problems: Problems = field(default_factory=Problems, repr=False, compare=False)

    def where(self, name: str | None = None) -> str:
        """``file document N (Phase top) field spec.phases[0].name`` for a field of this phase."""
        if name in self.field_paths:
            return self.origin.at(self.field_paths[name])
        return self.origin.at(f"{self.path}.{name}" if name else self.path)

    def walk(self):
        """This phase, then its descendants: depth-first, parent before children, in order."""
        yield self
        for child in self.children:
            yield from child.walk()


@dataclass
class PhasePlan:
    """A named, ordered list of phase names; each brings its descendants along."""

    name: str
    phases: list[str]
    origin: DocumentOrigin
    description: str = ""
    entry_paths: list[str] = field(default_factory=list)  # where each entry is written, if not spec.phases[i]
    problems: Problems = field(default_factory=Problems, repr=False, compare=False)  # its document's

    def where(self, name: str | None = None) -> str:
        return self.origin.at(name)

    def entry_where(self, position: int) -> str:
        """The place of the plan's entry at ``position``."""
        if position < len(self.entry_paths):
            return self.origin.at(self.entry_paths[position])
        return self.origin.at(f"spec.phases[{position}]")


@dataclass
class Catalog:
    """Every phase and plan defined by a set of documents."""

    phases: list[Phase] = field(default_factory=list)       # top-level phases in document order
    plans: list[PhasePlan] = field(default_factory=list)

    def walk(self):
        for phase in self.phases:
            yield from phase.walk()

    def by_full_name(self) -> dict[str, Phase]:
        return {phase.full_name: phase for phase in self.walk()}

    def plan(self, name: str) -> PhasePlan | None:
        return next((plan for plan in self.plans if plan.name == name), None)

    def add(self, item: Phase | PhasePlan, problems: Problems):
        """Keep a top-level phase or a plan; a name defined twice is a problem."""
        kept = self.phases if isinstance(item, Phase) else self.plans
        earlier = next((known for known in kept if known.name == item.name), None)
        if earlier is not None:
            kind = "phase" if isinstance(item, Phase) else "plan"
            problems.add(item.origin.at("metadata.name"), f"duplicate {kind} name {item.name!r} "
                                                          f"(also defined in {earlier.origin.label()})")
            return
        kept.append(item)


def parse_documents(documents: list[RawDocument], problems: Problems, catalog: Catalog | None = None) -> Catalog:
    """Build the catalog (or add to ``catalog``). A phase's or plan's shape problems stay with it (``problems`` of
    the item); those of a document that gives no phase or plan are added to ``problems``."""
    catalog = Catalog() if catalog is None else catalog
    for document in documents:
        own = Problems()
        parsed = _parse_document(document, own)
        if parsed is None:
            problems.extend(own.messages)
            continue
        keep_problems(parsed, own)
        catalog.add(parsed, problems)
    return catalog


def keep_problems(item: Phase | PhasePlan, problems: Problems):
    """``problems`` (its document's) become the item's own, shared with every phase the document nests."""
    if isinstance(item, PhasePlan):
        item.problems = problems
        return
    for phase in item.walk():
        phase.problems = problems


def _parse_document(document: RawDocument, problems: Problems):
    content, origin = document.content, document.origin
    if not isinstance(content, dict):
        problems.add(origin.at(), f"expected a mapping (a {PHASE_KIND} or {PLAN_KIND} document), "
                                  f"got {type_name(content)}")
        return None
    kind = content.get("kind")
    if kind not in KINDS:
        shown = "missing" if kind is None else f"unknown kind {kind!r}{did_you_mean(kind, KINDS)}"
        problems.add(origin.at("kind"), f"{shown}; expected {' or '.join(KINDS)}")
        return None
    metadata = content.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get("name"), str) and metadata["name"]:
        origin = origin.named(kind, metadata["name"])  # every message about this document names it
    api_version = content.get("apiVersion")
    if api_version != API_VERSION:
        shown = "missing" if api_version is None else f"unsupported apiVersion {api_version!r}"
        problems.add(origin.at("apiVersion"), f"{shown}; expected {API_VERSION}")
    unknown_fields(content, DOCUMENT_FIELDS, origin.at, problems, prefix="")
    name = _metadata_name(metadata, origin, problems)
    if name is None:
        return None
    spec = content.get("spec")
    if not isinstance(spec, dict):
        problems.add(origin.at("spec"), f"expected a mapping, got {type_name(spec)}")
        return None
    if kind == PLAN_KIND:
        return _parse_plan(name, spec, origin, problems)
    phase = Phase(name=name, full_name=name, origin=origin, path="spec", base_dir=document.base_dir)
    unknown_fields(spec, PHASE_SPEC_FIELDS, origin.at, problems, prefix="spec.")
    _fill_phase(phase, spec, problems)
    return phase


def _metadata_name(metadata, origin: DocumentOrigin, problems: Problems) -> str | None:
    if not isinstance(metadata, dict):
        problems.add(origin.at("metadata"), f"expected a mapping with a name, got {type_name(metadata)}")
        return None
    unknown_fields(metadata, METADATA_FIELDS, origin.at, problems, prefix="metadata.")
    for key in ("labels", "annotations"):
        if key in metadata and not isinstance(metadata[key], dict):
            problems.add(origin.at(f"metadata.{key}"), f"expected a mapping, got {type_name(metadata[key])}")
    return checked_name(metadata.get("name"), origin.at("metadata.name"), problems)


def checked_name(name, where: str, problems: Problems) -> str | None:
    """``name`` when it is a valid phase or plan name; else ``None``, with the problem added."""
    if not isinstance(name, str) or not name:
        problems.add(where, f"expected a non-empty string, got {type_name(name)}")
        return None
    if not NAME_PATTERN.match(name):
        problems.add(where, f"invalid name {name!r}: use letters, digits, '-', '_' and '.', "
                            f"starting and ending with a letter or digit ('{SEPARATOR}' joins full names)")
        return None
    return name


def _parse_plan(name: str, spec: dict, origin: DocumentOrigin, problems: Problems) -> PhasePlan:
    unknown_fields(spec, PLAN_SPEC_FIELDS, origin.at, problems, prefix="spec.")
    plan = PhasePlan(name=name, phases=[], origin=origin,
                     description=_optional_str(spec, "description", origin.at("spec.description"), problems))
    names = spec.get("phases")
    if not isinstance(names, list) or not names:
        problems.add(origin.at("spec.phases"), f"expected a non-empty list of phase names, got {type_name(names)}")
        return plan
    for position, entry in enumerate(names):
        if not isinstance(entry, str) or not entry:
            problems.add(origin.at(f"spec.phases[{position}]"),
                         f"expected a phase name (a string), got {type_name(entry)}")
            continue
        plan.phases.append(entry)
    return plan


def _fill_phase(phase: Phase, spec: dict, problems: Problems):
    """Set a phase's fields from its spec and parse its children, recursively."""
    phase.description = _optional_str(spec, "description", phase.where("description"), problems)
    set_cluster(phase, spec.get("cluster"), problems)
    executor = spec.get("executor")
    if executor is not None:
        if isinstance(executor, str) and executor:
            phase.executor = executor
        else:
            problems.add(phase.where("executor"), f"expected an executor name, got {type_name(executor)}")
    phase.source = spec.get("source")
    _fill_retries(phase, spec, problems)
    phase.rollout = parse_rollout(spec.get("rollout"), lambda name: phase.where(f"rollout.{name}" if name else "rollout"),
                                  problems)
    phase.outputs = parse_outputs(spec.get("outputs"), lambda below: phase.where(f"outputs{below}"), problems)
    phase.needs = parse_needs(spec.get("needs"), lambda below: phase.where(f"needs{below}"), problems)
    options = spec.get("options")
    if options is not None:
        if isinstance(options, dict):
            phase.options = options
        else:
            problems.add(phase.where("options"), f"expected a mapping, got {type_name(options)}")
    children = spec.get("phases")
    if children is None:
        return
    if not isinstance(children, list):
        problems.add(phase.where("phases"), f"expected a list of phases, got {type_name(children)}")
        return
    seen: dict[str, str] = {}
    for position, child_spec in enumerate(children):
        path = f"{phase.path}.phases[{position}]"
        if not isinstance(child_spec, dict):
            problems.add(phase.origin.at(path), f"expected a phase (a mapping with a name), got {type_name(child_spec)}")
            continue
        unknown_fields(child_spec, CHILD_PHASE_FIELDS, phase.origin.at, problems, prefix=f"{path}.")
        name = checked_name(child_spec.get("name"), phase.origin.at(f"{path}.name"), problems)
        if name is None:
            continue
        if name in seen:
            problems.add(phase.origin.at(f"{path}.name"),
                         f"duplicate phase name {phase.full_name}{SEPARATOR}{name} (also at {seen[name]})")
            continue
        seen[name] = path
        child = Phase(name=name, full_name=f"{phase.full_name}{SEPARATOR}{name}", origin=phase.origin, path=path,
                      base_dir=phase.base_dir, parent=phase.full_name, level=phase.level + 1,
                      cluster=phase.cluster, cluster_path=phase.cluster_path)
        _fill_phase(child, child_spec, problems)
        phase.children.append(child)


def set_cluster(phase: Phase, cluster, problems: Problems):
    """The phase's own cluster, when given (a phase without one inherits its parent's)."""
    if cluster is None:
        return
    if isinstance(cluster, str) and cluster:
        phase.cluster, phase.cluster_path = cluster, phase.where("cluster")
    else:
        problems.add(phase.where("cluster"), f"expected an inventory host or group name, got {type_name(cluster)}")


def _fill_retries(phase: Phase, spec: dict, problems: Problems):
    """``retries`` (a whole number), ``delay`` and ``timeout`` (seconds) of a phase."""
    phase.retry_fields_set = tuple(name for name in RETRY_FIELDS if spec.get(name) is not None)
    retries = spec.get("retries")
    if retries is not None:
        if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= MAX_RETRIES:
            problems.add(phase.where("retries"), f"expected a whole number from 0 to {MAX_RETRIES}, "
                                                 f"got {shown_value(retries)}")
        else:
            phase.retries = retries
    for name, smallest in (("delay", 0.0), ("timeout", None)):
        value = spec.get(name)
        if value is None:
            continue
        number = _seconds(value)
        if number is None or (number < 0 if smallest is not None else number <= 0):
            wanted = "0 or more" if smallest is not None else "more than 0"
            problems.add(phase.where(name), f"expected a number of seconds, {wanted}, got {shown_value(value)}")
            continue
        setattr(phase, name, number)


def _seconds(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _optional_str(spec: dict, key: str, where: str, problems: Problems) -> str:
    value = spec.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        problems.add(where, f"expected a string, got {type_name(value)}")
        return ""
    return value


def unknown_fields(mapping: dict, known, at, problems: Problems, prefix: str):
    """A problem for every key of ``mapping`` not in ``known`` (``at``: field path -> where it is)."""
    for key in mapping:
        if key not in known:
            problems.add(at(f"{prefix}{key}"),
                         f"unknown field{did_you_mean(key, known)}; expected one of {', '.join(known)}")
