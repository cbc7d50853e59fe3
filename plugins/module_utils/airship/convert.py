# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""airshipctl's phase documents written as the collection's own (``phasekit.dev/v1alpha1``).

The site is read with the same reader plans use (``phases.read_airship_documents``) and checked first: nothing
is written when it has problems. The output is two files, deterministic (no date in them):

- ``phases.yaml``: one ``Phase`` document per airshipctl phase, in document order; sources are paths relative
  to the written file, pointing at the original entry point directories; options as the reader maps them.
- ``plans.yaml``: one ``PhasePlan`` per airshipctl plan (``phaseGroups`` flattened, in order).
- with ``ClusterMap`` documents, ``inventory/site.clusters.yml`` (the ``phasekit.kube.clusters`` plugin's
  configuration) and the site file it reads, ``inventory/clusters.yml``: the hosts the plugin's
  ``airship_cluster_map`` source gives for those documents, read by the same reader, with paths relative to
  the site file. A sub-directory, because ``src: <dest>`` reads every ``*.yaml``/``*.yml`` file of ``dest``
  as a phase document.

A phase whose executor has no equivalent (``airship:<Kind>``) is left out of both files: it appears as a
comment where it would be, with the reader's message saying why and what to do instead. A placeholder phase
is not written because several of these phases have no cluster, and a plan must validate as written.
"""

from __future__ import annotations

import copy
import os
import shutil
import textwrap
import uuid
from dataclasses import dataclass, field

from ansible_collections.phasekit.kube.plugins.module_utils import yaml_io
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.airship.cluster_map import (
    KIND as CLUSTER_MAP_KIND,
    hosts_from_cluster_map,
    is_cluster_map,
)
from ansible_collections.phasekit.kube.plugins.module_utils.inventory.cluster_map import ClusterMap
from ansible_collections.phasekit.kube.plugins.module_utils.inventory.site_file import site_file_data
from ansible_collections.phasekit.kube.plugins.module_utils.airship.phases import (
    read_airship_documents,
    site_from_metadata,
    split_airship_documents,
)
from ansible_collections.phasekit.kube.plugins.module_utils.planning.built_dirs import OPTION as OPTION_ENV_DIRS
from ansible_collections.phasekit.kube.plugins.module_utils.planning.built_dirs import rebased_env_dirs
from ansible_collections.phasekit.kube.plugins.module_utils.planning.documents import DOCUMENT_SUFFIXES, RawDocument
from ansible_collections.phasekit.kube.plugins.module_utils.planning.executors import Executor
from ansible_collections.phasekit.kube.plugins.module_utils.planning.formats import CONVERT_BUNDLE_OPTION as BUNDLE_OPTION
from ansible_collections.phasekit.kube.plugins.module_utils.planning.model import (
    API_VERSION,
    PHASE_KIND,
    PLAN_KIND,
    Catalog,
    Phase,
    PhasePlan,
)
from ansible_collections.phasekit.kube.plugins.module_utils.planning.problems import Problems
from ansible_collections.phasekit.kube.plugins.module_utils.planning.validation import check_phases, plan_phases

PHASES_FILE = "phases.yaml"
PLANS_FILE = "plans.yaml"
INVENTORY_DIR = "inventory"
INVENTORY_FILE = f"{INVENTORY_DIR}/site.clusters.yml"
SITE_FILE = f"{INVENTORY_DIR}/clusters.yml"
COMMENT_WIDTH = 110


@dataclass
class Conversion:
    """What a conversion writes: file name -> text, and which phases were (not) converted."""

    files: dict[str, str] = field(default_factory=dict)
    phases: list[str] = field(default_factory=list)
    plans: list[str] = field(default_factory=list)
    plans_not_converted: list[str] = field(default_factory=list)   # every phase of theirs was left out
    not_converted: list[dict] = field(default_factory=list)   # {name, executor, reason}
    hosts: list[str] | None = None   # the inventory's hosts; None: no ClusterMap, no inventory
    warnings: list[str] = field(default_factory=list)

    def summary(self, dest: str) -> dict:
        """The conversion as the action returns it."""
        return {"dest": dest, "files": [os.path.join(dest, name) for name in sorted(self.files)],
                "phases": list(self.phases), "plans": list(self.plans),
                "plans_not_converted": list(self.plans_not_converted),
                "not_converted": [dict(item) for item in self.not_converted],
                "inventory": None if self.hosts is None else os.path.join(dest, INVENTORY_FILE),
                "hosts": list(self.hosts or [])}

    def message(self, verb: str, dest: str) -> str:
        """What the action says it did (``verb``: wrote, or would write in check mode)."""
        inventory = (f"the inventory of {len(self.hosts)} cluster(s) in {os.path.join(dest, INVENTORY_FILE)}"
                     if self.hosts is not None else "no inventory (no ClusterMap among the documents)")
        return f"{verb} {len(self.phases)} phase(s) and {len(self.plans)} plan(s) in {dest}, and {inventory}"

    def check(self, dest: str) -> None:
        check_destination(dest, self.files)

    def write(self, dest: str) -> None:
        write_conversion(self, dest)


def convert_documents(documents: list[RawDocument], executors: dict[str, Executor], dest: str,
                      target_path: str | None = None, kubeconfig_bundle=None) -> Conversion:
    """The phasekit.dev documents equivalent to airshipctl's ``documents``, to be written in ``dest``.

    ``kubeconfig_bundle``: the kubeconfig source(s) standing for the KubeConfig document in the inventory
    (checked and anchored, as ``check_source_refs`` returns them); by default a ``bundle`` source reading it
    from the directory of the ClusterMap's file, as the inventory plugin reads it. Raises PhasekitError listing every problem
    of the input; writes nothing.
    """
    problems = Problems()
    documents, target_path, manifest_root = site_from_metadata(documents, target_path, problems)
    problems.raise_if_any()
    airship, native = split_airship_documents(documents)
    if not airship:
        raise PhasekitError("convert_to: the documents hold no airshipctl Phase or PhasePlan "
                            "(airshipit.org/v1alpha1); there is nothing to convert")
    if native:
        labels = ", ".join(document.origin.label() for document in native[:3])
        raise PhasekitError(f"convert_to: converts airshipctl's documents only; give src without the other "
                            f"documents ({labels})")
    catalog = Catalog()
    for item in read_airship_documents(airship, problems, target_path=target_path, manifest_root=manifest_root):
        catalog.add(item, problems)
    # the reader's options, before checking fills in defaults: those are what the written documents say
    options = {phase.full_name: copy.deepcopy(phase.options) for phase in catalog.walk()}
    check_phases(list(catalog.walk()), executors)
    for plan in catalog.plans:
        problems.extend(plan.problems.messages)
        plan_phases(catalog, plan, problems)
    for phase in catalog.walk():   # every phase and plan is written: each must be valid
        problems.extend(phase.problems.messages)
    problems.raise_if_any()
    conversion = Conversion()
    dest = os.path.abspath(dest)
    conversion.files[PHASES_FILE] = _phases_text(catalog.phases, options, dest, conversion)
    if catalog.plans:
        conversion.files[PLANS_FILE] = _plans_text(catalog, conversion)
    cluster_maps = [document for document in airship if is_cluster_map(document.content)]
    if cluster_maps:
        _add_inventory(cluster_maps, kubeconfig_bundle, dest, conversion)
    elif kubeconfig_bundle is not None:
        raise PhasekitError(f"{BUNDLE_OPTION}: the documents hold no {CLUSTER_MAP_KIND}, so no inventory is "
                            "written and nothing uses this option; remove it, or add the ClusterMap's file to src")
    return conversion


def _add_inventory(cluster_maps: list[RawDocument], bundle, dest: str, conversion: Conversion) -> None:
    """The clusters plugin's configuration and site file for the hosts of the ClusterMap documents."""
    hosts = ClusterMap()
    for document in cluster_maps:
        metadata = document.content.get("metadata")
        name = metadata.get("name") if isinstance(metadata, dict) else None
        origin = document.origin.named(CLUSTER_MAP_KIND, name) if isinstance(name, str) else document.origin
        for host in hosts_from_cluster_map(document.content, label=origin.label(), base_dir=document.base_dir,
                                           bundle=bundle):
            hosts.add(host)
    conversion.warnings.extend(hosts.check_parents())
    conversion.hosts = hosts.names()
    site = site_file_data(list(hosts), base_dir=os.path.join(dest, INVENTORY_DIR))
    conversion.files[SITE_FILE] = (
        _comment("The clusters of the airshipctl site's ClusterMap, as a site file of the phasekit.kube.clusters "
                 "inventory plugin (read through site.clusters.yml). Relative paths are relative to this file; "
                 "kubeconfig sources are references, read when a play needs the cluster.")
        + _dump(site))
    conversion.files[INVENTORY_FILE] = (
        _comment("The converted site's inventory: ansible-inventory -i inventory/site.clusters.yml --graph")
        + _dump({"plugin": "phasekit.kube.clusters", "site": [os.path.basename(SITE_FILE)]}))


def _phases_text(phases: list[Phase], options: dict, dest: str, conversion: Conversion) -> str:
    parts, pending = [], ""
    for phase in phases:
        if phase.not_runnable is not None:
            conversion.not_converted.append({"name": phase.name, "executor": phase.executor,
                                             "reason": phase.not_runnable})
            # a comment goes with the document after it: a comment alone would be an empty document
            cluster = phase.cluster or "none"
            why = (f"phase {phase.name} (cluster {cluster}, executor {phase.executor}) is not converted and not in "
                   f"the plans: {phase.not_runnable}")
            pending += _comment(why) + "\n"
            continue
        conversion.phases.append(phase.name)
        spec: dict = {}
        if phase.cluster is not None:
            spec["cluster"] = phase.cluster
        spec["executor"] = phase.executor
        if phase.source_path is not None:
            spec["source"] = os.path.relpath(phase.source_path, dest)
        if options.get(phase.full_name):
            spec["options"] = _rebased(options[phase.full_name], phase.base_dir, dest)
        parts.append(pending + _document(PHASE_KIND, phase.name, spec))
        pending = ""
    if not parts:
        raise PhasekitError("convert_to: no phase of the documents can be converted (see each phase's executor)")
    return _joined(parts) + pending


def _rebased(options: dict, base_dir: str, dest: str) -> dict:
    """Options whose directories are relative to the phase's target path, relative to ``dest`` instead."""
    if OPTION_ENV_DIRS not in options:
        return options
    return {**options, OPTION_ENV_DIRS: rebased_env_dirs(options[OPTION_ENV_DIRS], base_dir, dest)}


def _plans_text(catalog: Catalog, conversion: Conversion) -> str:
    known = catalog.by_full_name()
    parts, pending = [], ""
    for plan in catalog.plans:
        if all(known[name].not_runnable is not None for name in plan.phases):
            conversion.plans_not_converted.append(plan.name)
            pending += _comment(f"plan {plan.name} is not converted: none of its phases can be "
                                f"({', '.join(plan.phases)}); see phases.yaml") + "\n"
            continue
        conversion.plans.append(plan.name)
        parts.append(pending + _plan_text(plan, known))
        pending = ""
    return (_joined(parts) if parts else "") + pending


def _plan_text(plan: PhasePlan, known: dict[str, Phase]) -> str:
    """A plan's document; entries left out are comments at their place in the list."""
    head = {"apiVersion": API_VERSION, "kind": PLAN_KIND, "metadata": {"name": plan.name}}
    text = _dump(head) + "spec:\n"
    if plan.description:
        text += textwrap.indent(_dump({"description": plan.description}), "  ")
    text += "  phases:\n"
    for name in plan.phases:
        phase = known[name]
        if phase.not_runnable is not None:
            text += f"    # - {name}  (not converted: executor {phase.executor}; see phases.yaml)\n"
        else:
            text += f"    - {_dump(name).strip()}\n"
    return text


def _document(kind: str, name: str, spec: dict) -> str:
    return _dump({"apiVersion": API_VERSION, "kind": kind, "metadata": {"name": name}, "spec": spec})


def _dump(data) -> str:
    text = yaml_io.safe_dump(data, sort_keys=False, literal_text=True)
    return text[:-len("...\n")] if text.endswith("...\n") else text


def _comment(message: str) -> str:
    lines = textwrap.wrap(message, COMMENT_WIDTH - 2, break_long_words=False, break_on_hyphens=False)
    return "".join(f"# {line}\n" for line in lines)


def _joined(parts: list[str]) -> str:
    return "---\n" + "---\n".join(parts)


def check_destination(dest: str, names=()) -> None:
    """Refuse a target directory that already holds YAML documents (or a path that is not a directory).

    ``names``: the files to be written (``inventory/clusters.yml``): the directories they go in are held to the
    same rule.
    """
    directories = sorted({os.path.dirname(name) for name in names} | {""})
    for directory in directories:
        path = os.path.join(dest, directory) if directory else dest
        if os.path.lexists(path) and not os.path.isdir(path):
            raise PhasekitError(f"convert_to {dest}: {directory or dest} exists and is not a directory")
        if os.path.isdir(path):
            held = sorted(os.path.join(directory, name) if directory else name
                          for name in os.listdir(path) if name.endswith(DOCUMENT_SUFFIXES))
            if held:
                raise PhasekitError(f"convert_to {dest}: the directory already holds {', '.join(held[:5])}; "
                                    "choose a new or empty directory, or remove those files")


def write_conversion(conversion: Conversion, dest: str) -> None:
    """Write the files in ``dest`` (created if needed): every one of them, or on an error none.

    They are written in a staging directory beside ``dest`` first; a new ``dest`` is that directory renamed,
    into an existing one the files are moved.
    """
    check_destination(dest, conversion.files)
    dest = os.path.abspath(dest)
    parent = os.path.dirname(dest)
    staging = os.path.join(parent, f".{os.path.basename(dest)}.{uuid.uuid4().hex[:12]}.tmp")
    moved: list[str] = []
    try:
        os.makedirs(parent, exist_ok=True)
        os.mkdir(staging)   # mode from the umask, as the directory it becomes
        for name in sorted(conversion.files):
            path = os.path.join(staging, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(conversion.files[name])
        if not os.path.exists(dest):
            os.rename(staging, dest)
            return
        for name in sorted(conversion.files):
            os.makedirs(os.path.dirname(os.path.join(dest, name)), exist_ok=True)
            os.replace(os.path.join(staging, name), os.path.join(dest, name))
            moved.append(name)
    except OSError as exc:
        done = f"only {', '.join(moved)} written" if moved else "nothing written"
        raise PhasekitError(f"convert_to {dest}: cannot write {exc.filename or dest}: {exc.strerror or exc} "
                            f"({done})") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
