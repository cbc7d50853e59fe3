# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""airshipctl's own phase documents (``airshipit.org/v1alpha1``) read as phases and plans of this collection.

An airshipctl site keeps its ``Phase`` and ``PhasePlan`` documents beside the executor documents the phases
reference (``config.executorRef``). They become the collection's model here:

- ``Phase``: ``metadata.name`` is the phase's name, ``metadata.clusterName`` its cluster (an inventory host
  or group), ``config.documentEntryPoint`` its source, relative to the target path (airshipctl's
  ``targetPath`` + ``phaseRepositoryName`` + the site's ``docEntryPointPrefix``).
- ``KubernetesApply`` executors become ``apply`` phases as airshipctl's applier ran them (``apply``).
- ``Clusterctl`` executors become ``command`` phases running ``clusterctl init`` or ``clusterctl move``
  (``clusterctl``); they need ``clusterctl`` on the controller's PATH to be validated or run.
- ``GenericContainer`` executors become ``container`` phases (``container``); they need podman or docker.
- Every other executor kind (BaremetalManager, BootConfiguration, IsoConfiguration) has no equivalent: its phases
  are listed as ``airship:<Kind>`` and are refused when they would be validated or run, with what to do instead
  (a section of the migration guide).
- ``PhasePlan``: ``phases: [{name}]`` (a phase may be named again: it runs again), or the older
  ``phaseGroups: [{name, phases: [{name}]}]`` (in order).
- ``ManifestMetadata`` (a site's ``metadata.yaml``) names the phase bundle and the entry point directory.
- ``ClusterMap`` and ``KubeConfig`` documents are accepted and not read here: the inventory holds clusters.
"""

from __future__ import annotations

import copy
import os

from ansible_collections.phasekit.kube.plugins.module_utils.airship.apply import APPLY_KIND, apply_phase_options
from ansible_collections.phasekit.kube.plugins.module_utils.airship.container import CONTAINER_KIND, container_phase
from ansible_collections.phasekit.kube.plugins.module_utils.airship.clusterctl import (
    CLUSTERCTL_KIND,
    PROGRAM as CLUSTERCTL_PROGRAM,
    clusterctl_phase,
)
from ansible_collections.phasekit.kube.plugins.module_utils.planning.documents import INLINE_SOURCE, RawDocument, read_paths
from ansible_collections.phasekit.kube.plugins.module_utils.planning.formats import Claimed
from ansible_collections.phasekit.kube.plugins.module_utils.planning.model import (
    Phase,
    PhasePlan,
    checked_name,
    keep_problems,
    set_cluster,
    unknown_fields,
)
from ansible_collections.phasekit.kube.plugins.module_utils.planning.problems import (
    DocumentOrigin,
    Problems,
    did_you_mean,
    type_name,
)

API_GROUP = "airshipit.org"
API_VERSION = f"{API_GROUP}/v1alpha1"
PHASE_KIND = "Phase"
PLAN_KIND = "PhasePlan"
# Read by the inventory, not by plans (see docs/migrating-from-airshipctl.md).
IGNORED_KINDS = ("ClusterMap", "KubeConfig")
METADATA_KIND = "ManifestMetadata"
METADATA_FIELDS = ("apiVersion", "kind", "metadata", "spec")
METADATA_SECTION_FIELDS = {"phase": ("path", "docEntryPointPrefix"), "inventory": ("path",)}
# airshipctl builds its phase bundle with kustomize, and so does read_paths for a directory with a kustomization;
# a kustomization file read as a document (a file named in plan_src, inline documents) goes with them unread.
BUNDLE_BUILD_KIND = "Kustomization"
BUNDLE_BUILD_GROUP = "kustomize.config.k8s.io/"
EXECUTOR_PREFIX = "airship:"
NATIVE_GROUP = "phasekit.dev/"
GUIDE = "docs/migrating-from-airshipctl.md"

PHASE_FIELDS = ("apiVersion", "kind", "metadata", "config")
PHASE_METADATA_FIELDS = ("name", "clusterName", "namespace", "labels", "annotations")
# ``cluster`` appears in airshipctl's own manifests beside metadata.clusterName, which is the one it reads.
PHASE_CONFIG_FIELDS = ("executorRef", "documentEntryPoint", "siteWideKubeconfig", "validation", "cluster")
# corev1.ObjectReference: airshipctl selects the executor by apiVersion, kind, name and namespace; the rest unused
EXECUTOR_REF_FIELDS = ("apiVersion", "kind", "name", "namespace", "uid", "resourceVersion", "fieldPath")
PLAN_FIELDS = ("apiVersion", "kind", "metadata", "description", "phases", "phaseGroups", "validation")
PLAN_METADATA_FIELDS = ("name", "namespace", "labels", "annotations")
# airshipctl's plans find a phase by name alone (PhaseByID(ID{Name})): a step's namespace is not read.
STEP_FIELDS = ("name", "namespace")
# ValidationConfig: the settings of airshipctl's kubeval container (PhasePlan.validation, Phase config.validation)
VALIDATION_FIELDS = {"strict": bool, "ignoreMissingSchemas": bool, "kubernetesVersion": str, "schemaLocation": str,
                     "kindsToSkip": list, "crdList": list}

# Where the collection's phase fields are written in an airshipctl Phase document (for messages).
PHASE_FIELD_PATHS = {
    "cluster": "metadata.clusterName",
    "executor": "config.executorRef",
    "source": "config.documentEntryPoint",
    "options": "config.executorRef",
}

# Executor kinds with no equivalent here: what to do instead, and the guide's section that shows it.
NOT_RUNNABLE = {
    "BaremetalManager": ("use a tasks phase with the modules of your hardware (Redfish, IPMI, libvirt)",
                         "baremetalmanager-bootconfiguration-isoconfiguration"),
    "BootConfiguration": ("create the bootstrap cluster in a command or tasks phase",
                          "baremetalmanager-bootconfiguration-isoconfiguration"),
    "IsoConfiguration": ("build the image in a command or tasks phase",
                         "baremetalmanager-bootconfiguration-isoconfiguration"),
}
OTHER_EXECUTORS = ("use a command or tasks phase", "executor-kinds")


def site_from_metadata(documents: list[RawDocument], target_path: str | None,
                       problems: Problems) -> tuple[list[RawDocument], str | None, str | None]:
    """The documents and target path a site's ``ManifestMetadata`` (its ``metadata.yaml``) names, as airshipctl's
    phase helper reads it: ``spec.phase.path`` the phase bundle (read as ``src`` reads a directory), relative to
    the repository the metadata file is in, and ``spec.phase.docEntryPointPrefix`` where entry points start (unless
    ``target_path`` is given). ``spec.inventory.path`` (BaremetalManager's host inventory) is checked and not read.
    Returns the documents, the target path and airshipctl's manifest target path (the directory the repository is
    checked out in, where Clusterctl provider urls start; ``None`` without a ManifestMetadata, whose documents are
    returned as they are)."""
    found = [document for document in documents if is_airship_document(document.content)
             and document.content.get("kind") == METADATA_KIND]
    if not found:
        return documents, target_path, None
    others = [document for document in documents if not any(document is metadata for metadata in found)]
    if len(found) > 1:
        problems.add(_named(found[1]).origin.at(), f"a second {METADATA_KIND} (the first is "
                                                   f"{_named(found[0]).origin.label()}): give one site at a time")
        return others, target_path, None
    metadata = _named(found[0])
    paths = _metadata_paths(metadata, problems)
    if paths is None:
        return others, target_path, None
    phase_path, prefix = paths
    root = next((directory for directory in _ancestors(metadata.base_dir)
                 if os.path.isdir(os.path.join(directory, phase_path))), None)
    if root is None:
        problems.add(metadata.origin.at("spec.phase.path"),
                     f"no directory {phase_path} above {metadata.base_dir} (it is relative to the repository that "
                     "holds the metadata file)")
        return others, target_path, None
    phase_dir = os.path.join(root, phase_path)
    shown = os.path.normpath(os.path.join(os.path.dirname(metadata.origin.source),
                                          os.path.relpath(phase_dir, metadata.base_dir)))
    entry_points = os.path.normpath(os.path.join(root, prefix))
    if target_path is None and not os.path.isdir(entry_points):
        problems.add(metadata.origin.at("spec.phase.docEntryPointPrefix"), f"{prefix} is not a directory "
                                                                           f"({entry_points})")
    return others + read_paths([phase_dir], shown_as=shown), target_path or entry_points, os.path.dirname(root)


def _metadata_paths(metadata: RawDocument, problems: Problems) -> tuple[str, str] | None:
    """spec.phase.path and spec.phase.docEntryPointPrefix of a ManifestMetadata (each required, as airshipctl)."""
    content, origin = metadata.content, metadata.origin
    count = len(problems.messages)
    unknown_fields(content, METADATA_FIELDS, origin.at, problems, prefix="")
    spec = _mapping(content, "spec", origin, problems, required=True) or {}
    unknown_fields(spec, ("phase", "inventory"), origin.at, problems, prefix="spec.")
    values = []
    for section, key in (("phase", "path"), ("phase", "docEntryPointPrefix"), ("inventory", "path")):
        part = spec.get(section) if isinstance(spec.get(section), dict) else {}
        value = part.get(key)
        if not isinstance(value, str):
            problems.add(origin.at(f"spec.{section}.{key}"), f"expected a path relative to the repository, got "
                                                             f"{type_name(value)} (airshipctl requires it)")
        values.append(value)
    for section in ("phase", "inventory"):
        if isinstance(spec.get(section), dict):
            unknown_fields(spec[section], METADATA_SECTION_FIELDS[section], origin.at, problems,
                           prefix=f"spec.{section}.")
        elif spec.get(section) is not None:
            problems.add(origin.at(f"spec.{section}"), f"expected a mapping, got {type_name(spec[section])}")
    return (values[0], values[1]) if len(problems.messages) == count else None


def _ancestors(directory: str):
    directory = os.path.abspath(directory)
    while True:
        yield directory
        parent = os.path.dirname(directory)
        if parent == directory:
            return
        directory = parent


def is_airship_document(content) -> bool:
    """Whether a parsed document is one of airshipctl's (any ``airshipit.org`` version)."""
    return isinstance(content, dict) and str(content.get("apiVersion", "")).startswith(f"{API_GROUP}/")


def split_airship_documents(documents: list[RawDocument]) -> tuple[list[RawDocument], list[RawDocument]]:
    """airshipctl's phase bundle and phasekit's own documents.

    With airshipctl's documents, the bundle also holds the other objects airshipctl keeps in it (the ConfigMaps a
    GenericContainer's ``configRef`` names, catalogues); a kustomization read as a document goes with it unread.
    """
    airship = [document for document in documents if is_airship_document(document.content)]
    if not airship:
        return [], list(documents)
    bundle, native = [], []
    for document in documents:
        if is_airship_document(document.content) or _is_bundle_object(document.content):
            bundle.append(document)
        elif not _is_bundle_build_file(document.content):
            native.append(document)
    return bundle, native


def _is_bundle_object(content) -> bool:
    """An object of the bundle that is neither airshipctl's nor phasekit's (a ConfigMap, a catalogue)."""
    return (isinstance(content, dict) and isinstance(content.get("kind"), str)
            and content["kind"] not in (PHASE_KIND, PLAN_KIND, BUNDLE_BUILD_KIND)
            and not str(content.get("apiVersion", "")).startswith(NATIVE_GROUP))


def _is_bundle_build_file(content) -> bool:
    return (isinstance(content, dict) and content.get("kind") == BUNDLE_BUILD_KIND
            and str(content.get("apiVersion", "")).startswith(BUNDLE_BUILD_GROUP))


def read_airship_documents(documents: list[RawDocument], problems: Problems, target_path: str | None = None,
                           manifest_root: str | None = None) -> list[Phase | PhasePlan]:
    """The phases and plans of airshipctl documents, in document order; every problem added to ``problems``.

    ``target_path``: the directory documentEntryPoint paths are relative to; by default the parent of the
    directory holding the phase document (inline documents: their own base directory, the playbook's).
    ``manifest_root``: where Clusterctl provider entry points start (airshipctl's manifest targetPath), when a
    ManifestMetadata told it; by default the target path.
    """
    named = [_named(document) for document in documents]
    executors = _executor_documents(named, problems)
    # each executor document read once, for all the phases that reference it; its problems go with them
    executor_problems = {key: Problems() for key in executors}
    mapped = {key: apply_phase_options(document, executor_problems[key])
              for key, document in executors.items() if key[0] == APPLY_KIND}
    mapped.update({key: clusterctl_phase(document, executor_problems[key], manifest_root)
                   for key, document in executors.items() if key[0] == CLUSTERCTL_KIND})
    mapped.update({key: container_phase(document, executors, executor_problems[key], manifest_root)
                   for key, document in executors.items() if key[0] == CONTAINER_KIND})
    items: list[Phase | PhasePlan] = []
    for document in named:
        kind = document.content.get("kind")
        if kind not in (PHASE_KIND, PLAN_KIND):
            continue
        own = Problems()
        if document.content.get("apiVersion") != API_VERSION:
            shown = document.content.get("apiVersion")
            own.add(document.origin.at("apiVersion"), f"unsupported apiVersion {shown!r}; expected {API_VERSION}")
            item = None
        elif kind == PLAN_KIND:
            item = _read_plan(document, own)
        else:
            item = _read_phase(document, executors, mapped, _target_dir(document, target_path), own,
                               executor_problems)
        if item is None:
            problems.extend(own.messages)
            continue
        keep_problems(item, own)
        items.append(item)
    return items


def _named(document: RawDocument) -> RawDocument:
    """The document with its kind and name in its origin, so every message about it names it."""
    content = document.content
    metadata = content.get("metadata")
    kind = content.get("kind")
    if isinstance(kind, str) and isinstance(metadata, dict) and isinstance(metadata.get("name"), str):
        return RawDocument(content, document.origin.named(kind, metadata["name"]), document.base_dir)
    return document


def _outside(entry_point: str, target_dir: str) -> bool:
    """Whether ``entry_point`` (relative to ``target_dir``, as airshipctl reads it) names a directory outside it."""
    if os.path.isabs(entry_point) or "\0" in entry_point:
        return True
    resolved = os.path.normpath(os.path.join(target_dir, entry_point))
    return os.path.commonpath([resolved, os.path.normpath(target_dir)]) != os.path.normpath(target_dir)


def _target_dir(document: RawDocument, target_path: str | None) -> str:
    if target_path:
        return target_path
    if document.origin.source == INLINE_SOURCE:
        return document.base_dir
    return os.path.dirname(document.base_dir)


def _executor_documents(documents: list[RawDocument], problems: Problems) -> dict[tuple, RawDocument]:
    """Every document a phase may reference, by (kind, name): all but phases, plans and inventory kinds."""
    found: dict[tuple, RawDocument] = {}
    for document in documents:
        content, origin = document.content, document.origin
        kind = content.get("kind")
        if kind in (PHASE_KIND, PLAN_KIND, METADATA_KIND) or kind in IGNORED_KINDS:
            continue
        if not isinstance(kind, str) or not kind:
            problems.add(origin.at("kind"), f"expected the kind of an airshipctl document, got {type_name(kind)}")
            continue
        metadata = content.get("metadata")
        name = metadata.get("name") if isinstance(metadata, dict) else None
        if not isinstance(name, str) or not name:
            problems.add(origin.at("metadata.name"), f"expected the name of this {kind}, got {type_name(name)}")
            continue
        if (kind, name) in found:
            if is_airship_document(content):   # the bundle's other objects may share a name across namespaces
                problems.add(origin.at("metadata.name"), f"duplicate {kind} name {name!r} "
                                                         f"(also defined in {found[(kind, name)].origin.label()})")
            continue
        found[(kind, name)] = document
    return found


def _mapping(content: dict, key: str, origin: DocumentOrigin, problems: Problems, required: bool = False):
    """``content[key]`` when it is a mapping; ``{}`` when absent (a problem if required); ``None`` when wrong."""
    value = content.get(key)
    if value is None and not required:
        return {}
    if not isinstance(value, dict):
        problems.add(origin.at(key), f"expected a mapping, got {type_name(value)}")
        return None
    return value


def _metadata_and_name(document: RawDocument, fields: tuple, metadata_fields: tuple,
                       problems: Problems) -> tuple[dict, str | None]:
    """A Phase's or PhasePlan's metadata and valid name (``None``: a problem was added); unknown fields refused."""
    content, origin = document.content, document.origin
    unknown_fields(content, fields, origin.at, problems, prefix="")
    metadata = _mapping(content, "metadata", origin, problems, required=True)
    if metadata is None:
        return {}, None
    unknown_fields(metadata, metadata_fields, origin.at, problems, prefix="metadata.")
    return metadata, checked_name(metadata.get("name"), origin.at("metadata.name"), problems)


def _read_phase(document: RawDocument, executors: dict, mapped: dict, target_dir: str,
                problems: Problems, executor_problems: dict) -> Phase | None:
    content, origin = document.content, document.origin
    metadata, name = _metadata_and_name(document, PHASE_FIELDS, PHASE_METADATA_FIELDS, problems)
    config = _mapping(content, "config", origin, problems, required=True)
    if name is None or config is None:
        return None
    unknown_fields(config, PHASE_CONFIG_FIELDS, origin.at, problems, prefix="config.")
    _validation_settings(config, "validation", origin, problems, prefix="config.")
    site_wide = config.get("siteWideKubeconfig")
    if site_wide is not None and not isinstance(site_wide, bool):
        problems.add(origin.at("config.siteWideKubeconfig"), f"expected true or false, got {type_name(site_wide)}")
    phase = Phase(name=name, full_name=name, origin=origin, path="config", base_dir=target_dir,
                  field_paths=dict(PHASE_FIELD_PATHS))
    set_cluster(phase, metadata.get("clusterName"), problems)
    entry_point = config.get("documentEntryPoint")
    if entry_point is not None and not (isinstance(entry_point, str) and entry_point):
        problems.add(phase.where("source"), f"expected a directory (relative to the target path {target_dir}), "
                                            f"got {type_name(entry_point)}")
        entry_point = None
    elif entry_point is not None and _outside(entry_point, target_dir):
        problems.add(phase.where("source"), f"expected a directory inside the target path {target_dir}, got "
                                            f"{entry_point!r}, which leads outside it")
        entry_point = None
    phase.source = entry_point
    reference = _executor_reference(config, phase, executors, problems)
    if reference is None:
        # the reference's problem fails the plan; keep the phase (a plan may name it) out of further checks
        phase.executor, phase.not_runnable = f"{EXECUTOR_PREFIX}?", "the executor reference is not valid"
        return phase
    kind, executor_name = reference
    problems.extend(executor_problems[reference].messages)
    if kind == APPLY_KIND:
        phase.executor = "apply"
        options = mapped.get(reference)
        # airshipctl's applier keeps an inventory per phase, its id the phase's name: here the phase's ApplySet
        phase.options = {**options, "applyset": name} if options is not None else {}
    elif kind == CLUSTERCTL_KIND:
        _clusterctl(phase, mapped.get(reference))
    elif kind == CONTAINER_KIND:
        _container(phase, mapped.get(reference), config.get("siteWideKubeconfig") is True,
                   f"{kind} {executor_name} ({executors[reference].origin.source} document "
                   f"{executors[reference].origin.document})")
    else:
        phase.executor = f"{EXECUTOR_PREFIX}{kind}"
        phase.not_runnable = not_runnable_message(kind, executor_name, executors[reference].origin)
    return phase


def _clusterctl(phase: Phase, mapped):
    """A command phase running clusterctl; one that cannot run here keeps airshipctl's kind in the listing."""
    if mapped is not None and mapped.refusal is not None:
        phase.executor, phase.not_runnable = f"{EXECUTOR_PREFIX}{CLUSTERCTL_KIND}", mapped.refusal
        return
    phase.executor = "command"
    phase.options = copy.deepcopy(mapped.options) if mapped is not None else {"argv": [CLUSTERCTL_PROGRAM]}
    phase.requires = (CLUSTERCTL_PROGRAM,)


def _container(phase: Phase, mapped, site_wide: bool, executor: str):
    """A container phase; one that cannot run here keeps airshipctl's kind in the listing, saying why."""
    if phase.cluster is None:
        phase.executor = f"{EXECUTOR_PREFIX}{CONTAINER_KIND}"
        phase.not_runnable = (f"executor {executor} runs on no cluster (the phase has no metadata.clusterName), and "
                              f"phasekit.kube runs a phase on the hosts of its cluster: give the phase a "
                              f"metadata.clusterName (its kubeconfig is then the container's), or run the container "
                              f"in a command phase (see {GUIDE}#genericcontainer), or leave the phase out with "
                              f"plan_skip")
        return
    if site_wide:
        phase.executor = f"{EXECUTOR_PREFIX}{CONTAINER_KIND}"
        phase.not_runnable = (f"phase {phase.name} field config.siteWideKubeconfig: a container here gets the "
                              f"kubeconfig of its own cluster only, not every cluster of the site; remove "
                              f"siteWideKubeconfig (see {GUIDE}#genericcontainer), or leave the phase out with plan_skip")
        return
    if mapped is not None and mapped.refusal is not None:
        phase.executor = f"{EXECUTOR_PREFIX}{CONTAINER_KIND}"
        phase.not_runnable = (f"executor {executor} {mapped.refusal} (see {GUIDE}#genericcontainer), or leave the "
                              f"phase out with plan_skip")
        return
    phase.executor = "container"
    if mapped is None:   # the executor document's problems are the phase's: nothing more to check
        phase.not_runnable = f"executor {executor} has problems"
        return
    phase.options = dict(mapped.options)
    if mapped.sink:
        # airshipctl wrote the output relative to the site's entry point directory
        phase.options["output_dir"] = os.path.normpath(os.path.join(phase.base_dir, mapped.sink))


def _executor_reference(config: dict, phase: Phase, executors: dict, problems: Problems) -> tuple | None:
    """(kind, name) of the executor document ``config.executorRef`` names, when it exists."""
    where = phase.where("executor")
    reference = config.get("executorRef")
    if not isinstance(reference, dict):
        problems.add(where, f"expected a mapping with the kind and name of an executor document, "
                            f"got {type_name(reference)}")
        return None
    unknown_fields(reference, EXECUTOR_REF_FIELDS, phase.origin.at, problems, prefix="config.executorRef.")
    kind, name = reference.get("kind"), reference.get("name")
    if not isinstance(kind, str) or not kind or not isinstance(name, str) or not name:
        problems.add(where, f"expected kind and name of an executor document (such as kind: {APPLY_KIND}, "
                            f"name: kubernetes-apply), got kind {type_name(kind)} and name {type_name(name)}")
        return None
    api_version = reference.get("apiVersion")
    if api_version is not None and api_version != API_VERSION:
        problems.add(phase.origin.at("config.executorRef.apiVersion"),
                     f"unsupported apiVersion {api_version!r}; expected {API_VERSION}")
    if (kind, name) not in executors:
        same_kind = sorted(known for known_kind, known in executors if known_kind == kind)
        defined = f"{kind} documents defined: {', '.join(same_kind)}" if same_kind else \
            f"the documents define no {kind}"
        problems.add(where, f"no {kind} document named {name!r} among the documents"
                            f"{did_you_mean(name, same_kind)}; {defined}")
        return None
    namespace = reference.get("namespace")
    found = (executors[(kind, name)].content.get("metadata") or {}).get("namespace")
    if namespace and namespace != found:
        problems.add(phase.origin.at("config.executorRef.namespace"),
                     f"the {kind} document named {name!r} is in namespace {found or 'none'}, not {namespace!r} "
                     "(airshipctl selects the executor by its namespace too)")
        return None
    return kind, name


def not_runnable_message(kind: str, name: str, origin: DocumentOrigin) -> str:
    """Why a phase with this executor cannot run here, and what to do instead."""
    instead, section = NOT_RUNNABLE.get(kind, OTHER_EXECUTORS)
    return (f"executor {kind} {name} ({origin.source} document {origin.document}) has no equivalent in "
            f"phasekit.kube yet, so this phase cannot be validated or run: {instead} (see {GUIDE}#{section}), "
            f"or leave the phase out with plan_skip")


def _validation_settings(content: dict, key: str, origin: DocumentOrigin, problems: Problems, prefix: str = ""):
    """airshipctl's kubeval settings (ValidationConfig): their shape is checked; validate here checks the objects
    against the cluster's own schemas instead (a server-side dry run), so they have no effect."""
    settings = content.get(key)
    key = f"{prefix}{key}"
    if settings is None:
        return
    if not isinstance(settings, dict):
        problems.add(origin.at(key), f"expected a mapping, got {type_name(settings)}")
        return
    unknown_fields(settings, tuple(VALIDATION_FIELDS), origin.at, problems, prefix=f"{key}.")
    for name, wanted in VALIDATION_FIELDS.items():
        value = settings.get(name)
        if value is not None and (not isinstance(value, wanted) or (wanted is not bool and isinstance(value, bool))
                                  or (wanted is list and not all(isinstance(item, str) for item in value))):
            shown = {bool: "true or false", str: "a string", list: "a list of strings"}[wanted]
            problems.add(origin.at(f"{key}.{name}"), f"expected {shown}, got {type_name(value)}")


def _read_plan(document: RawDocument, problems: Problems) -> PhasePlan | None:
    content, origin = document.content, document.origin
    _metadata, name = _metadata_and_name(document, PLAN_FIELDS, PLAN_METADATA_FIELDS, problems)
    if name is None:
        return None
    description = content.get("description")
    if description is not None and not isinstance(description, str):
        problems.add(origin.at("description"), f"expected a string, got {type_name(description)}")
        description = None
    # validation configured airshipctl's kubeval container: checked, not used (validate renders every bundle)
    _validation_settings(content, "validation", origin, problems)
    plan = PhasePlan(name=name, phases=[], origin=origin, description=description or "")
    steps, groups = content.get("phases"), content.get("phaseGroups")
    if steps is not None and groups is not None:
        problems.add(origin.at("phaseGroups"), "give the phases either as phases or as phaseGroups, not both")
    elif groups is not None:
        _read_phase_groups(plan, groups, problems)
    else:
        _read_steps(plan, steps, "phases", problems)
    return plan


def _read_phase_groups(plan: PhasePlan, groups, problems: Problems):
    """The older layout: groups of steps, one after the other."""
    if not isinstance(groups, list) or not groups:
        problems.add(plan.where("phaseGroups"), f"expected a non-empty list of groups ({{name, phases}}), "
                                                f"got {type_name(groups)}")
        return
    for position, group in enumerate(groups):
        path = f"phaseGroups[{position}]"
        if not isinstance(group, dict):
            problems.add(plan.where(path), f"expected a group (a mapping with name and phases), got {type_name(group)}")
            continue
        unknown_fields(group, ("name", "phases"), plan.origin.at, problems, prefix=f"{path}.")
        _read_steps(plan, group.get("phases"), f"{path}.phases", problems)


def _read_steps(plan: PhasePlan, steps, path: str, problems: Problems):
    """Entries ``[{name: phase}]`` of a plan (or of one of its groups), in order."""
    if not isinstance(steps, list) or not steps:
        problems.add(plan.where(path), f"expected a non-empty list of phases ([{{name: <phase>}}]), "
                                       f"got {type_name(steps)}")
        return
    for position, step in enumerate(steps):
        at = f"{path}[{position}]"
        name = step.get("name") if isinstance(step, dict) else None
        if not isinstance(name, str) or not name:
            problems.add(plan.where(f"{at}.name"), f"expected the name of a phase, got {type_name(name)}")
            continue
        unknown_fields(step, STEP_FIELDS, plan.origin.at, problems, prefix=f"{at}.")
        plan.phases.append(name)
        plan.entry_paths.append(f"{at}.name")


def claim_documents(documents: list[RawDocument], problems: Problems, target_path: str | None = None) -> Claimed:
    """The planner's reader: airshipctl's documents taken (a site's ``ManifestMetadata`` brings the phase bundle
    and target path it names), the others left to the collection's own reader."""
    documents, target_path, manifest_root = site_from_metadata(documents, target_path, problems)
    airship, native = split_airship_documents(documents)
    return Claimed(native, lambda: read_airship_documents(airship, problems, target_path=target_path,
                                                          manifest_root=manifest_root))
