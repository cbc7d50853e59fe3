# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Render a bundle (kustomization dir, manifest file or dir, inline objects) into objects.

Every object keeps its origin (file and document number, or inline item number)
so that later errors can say where the offending document came from. Nothing
here talks to a cluster.
"""

from __future__ import annotations

import difflib
import functools
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from typing import Callable

from ansible_collections.phasekit.kube.plugins.module_utils import yaml_io
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.private_files import private_directory

KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
TEMPLATE_SUFFIX = ".j2"  # a manifest rendered with the cluster host's variables before it is parsed
TEMPLATE_SUFFIXES = tuple(suffix + TEMPLATE_SUFFIX for suffix in MANIFEST_SUFFIXES)
# kustomization fields whose entries may name directories outside the kustomization (bases, components)
KUSTOMIZE_DIRECTORY_FIELDS = ("resources", "bases", "components")
KUSTOMIZE_TIMEOUT = 300
MAX_NAME = 253       # a DNS subdomain: the longest name of every kind but RBAC's
PATH_SEGMENT_NAMED = "rbac.authorization.k8s.io/"  # names are path segments of any length
MAX_NAMESPACE = 63   # a DNS label


@functools.cache
def manifest_loader() -> type:
    """Safe YAML loader that keeps timestamps as strings, as kubectl does (JSON has no dates).

    Built on first use: its base class exists only when PyYAML is installed.
    """
    base = yaml_io.safe_loader_class()

    class ManifestLoader(base):  # pylint: disable=too-many-ancestors
        yaml_implicit_resolvers = {
            first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
            for first, resolvers in base.yaml_implicit_resolvers.items()
        }

    return ManifestLoader


@dataclass
class BundleObject:
    """One Kubernetes object of a bundle and where it came from."""

    obj: dict
    origin: str                 # for people: "manifests/app.yaml document 2"
    file: str | None = None     # the file it was read from (None for inline definitions)
    index: int = 0              # 1-based document (or inline item) number within that file

    @property
    def kind(self) -> str:
        return self.obj.get("kind", "")

    @property
    def name(self) -> str:
        return (self.obj.get("metadata") or {}).get("name", "")

    def describe(self) -> str:
        """'Kind namespace/name' or 'Kind name' as kubectl prints it."""
        namespace = (self.obj.get("metadata") or {}).get("namespace")
        return f"{self.kind} {namespace}/{self.name}" if namespace else f"{self.kind} {self.name}"


def render_bundle(src: str | None = None, definition=None, base_dir: str | None = None,
                  render_template: Callable[[str], str] | None = None) -> list[BundleObject]:
    """Return the bundle's objects in document order, each with its origin.

    ``src`` is a kustomization directory (rendered with ``kubectl kustomize`` or
    ``kustomize build``), a manifest file, or a directory of manifest files
    (``*.yaml``, ``*.yml``, ``*.json``, not recursive, sorted by name as
    ``kubectl apply -f DIR`` does). A relative ``src`` is taken relative to
    ``base_dir`` (default: the current directory). ``definition`` is one object
    (dict), a list of objects, or a multi-document YAML string. Exactly one of
    ``src`` and ``definition`` must be given. ``kind: List`` documents are
    expanded into their items.

    A manifest whose name ends in ``.j2`` (the source file, a file of the source directory, or a file of the
    kustomization) is a template: ``render_template(path)`` renders it (with one cluster host's variables)
    before it is parsed. Without ``render_template`` such a bundle is refused: see ``has_templates``.
    """
    if (src is None) == (definition is None):
        raise PhasekitError("give exactly one of 'src' (a path) or 'definition' (objects or YAML)")
    if definition is not None:
        return _from_definition(definition)
    path = src if os.path.isabs(src) or base_dir is None else os.path.join(base_dir, src)
    if os.path.isdir(path):
        if is_kustomization(path):
            return _from_kustomization(path, label=src, render_template=render_template)
        return _from_directory(path, label=src, render_template=render_template)
    if os.path.isfile(path):
        return objects_from_text(_manifest_text(path, src, render_template), label=src)
    raise PhasekitError(f"bundle source {src!r} not found (looked for {path})")


def is_kustomization(path: str) -> bool:
    return kustomization_file(path) is not None


def kustomization_file(path: str) -> str | None:
    """The kustomization file of the directory ``path``, under a name kustomize recognises; ``None``: none."""
    return next((os.path.join(path, name) for name in KUSTOMIZATION_FILES
                 if os.path.isfile(os.path.join(path, name))), None)


def load_kustomization(path: str) -> dict | None:
    """The kustomization of the directory ``path`` as a mapping; ``None`` when it has none, or none that reads
    as one YAML mapping (kustomize says what is wrong with it when it builds)."""
    file = kustomization_file(path)
    return None if file is None else _kustomization_mapping(file)


def _kustomization_mapping(file: str) -> dict | None:
    try:
        documents = yaml_io.load_all(yaml_io.read_text_file(file, "kustomization"), file)
    except (OSError, PhasekitError):
        return None
    return documents[0] if len(documents) == 1 and isinstance(documents[0], dict) else None


def has_templates(path: str) -> bool:
    """Whether the bundle at ``path`` has ``.j2`` manifests, so that it renders differently per cluster host."""
    if os.path.isfile(path):
        return path.endswith(TEMPLATE_SUFFIX)
    if not os.path.isdir(path):
        return False
    if is_kustomization(path):
        return any(name.endswith(TEMPLATE_SUFFIX) for _root, _dirs, names in os.walk(path) for name in names)
    return any(name.endswith(TEMPLATE_SUFFIXES) for name in os.listdir(path))


def _manifest_text(path: str, label: str, render_template: Callable[[str], str] | None) -> str:
    if not path.endswith(TEMPLATE_SUFFIX):
        return _read(path, label)
    if render_template is None:
        raise PhasekitError(f"{label}: a template (.j2): it is rendered with each cluster host's variables when "
                            "the phase runs, or per cluster by plan_action=render")
    return render_template(path)


def load_documents(text: str, label: str) -> list:
    """Parse multi-document YAML (or JSON) text; the error names the document and line."""
    return yaml_io.load_all(text, label, loader=manifest_loader())


def _read(path: str, label: str) -> str:
    try:
        return yaml_io.read_text_file(path, "manifest")
    except OSError as exc:
        raise PhasekitError(f"{label}: cannot read manifest: {exc}") from None
    except PhasekitError as err:
        raise PhasekitError(f"{label}: {err}") from None


def _from_definition(definition) -> list[BundleObject]:
    if isinstance(definition, str):
        return objects_from_text(definition, label="definition", file=None)
    items = definition if isinstance(definition, list) else [definition]
    objects = []
    for number, item in enumerate(items, start=1):
        origin = f"definition item {number}" if isinstance(definition, list) else "definition"
        if isinstance(item, str):
            objects.extend(objects_from_text(item, label=origin, file=None))
        else:
            objects.extend(_checked(item, origin, None, number))
    return objects


def objects_from_text(text: str, label: str, file: str | None = "") -> list[BundleObject]:
    file = label if file == "" else file
    objects = []
    for number, document in enumerate(load_documents(text, label), start=1):
        if document is None:  # empty document between '---' separators
            continue
        objects.extend(_checked(document, f"{label} document {number}", file, number))
    return objects


def _from_directory(path: str, label: str, render_template: Callable[[str], str] | None = None) -> list[BundleObject]:
    names = sorted(name for name in os.listdir(path)
                   if name.endswith(MANIFEST_SUFFIXES + TEMPLATE_SUFFIXES) and not name.startswith(".")
                   and os.path.isfile(os.path.join(path, name)))
    near = near_kustomization_file(os.listdir(path))
    if near and _meant_as_kustomization(os.path.join(path, near)):
        raise PhasekitError(f"bundle directory {label!r} holds {near!r}, which kustomize does not read: did you mean "
                            f"kustomization.yaml? (kustomize reads {', '.join(KUSTOMIZATION_FILES)}, without templates; "
                            "rename it, or move it out to read the directory as plain manifests)")
    if not names:
        raise PhasekitError(f"bundle directory {label!r} has no manifest files (*.yaml, *.yml, *.json, or those "
                            "ending in .j2) and no kustomization.yaml")
    objects = []
    for name in names:
        shown = os.path.join(label, name)
        objects.extend(objects_from_text(_manifest_text(os.path.join(path, name), shown, render_template),
                                         label=shown))
    return objects


def _from_kustomization(path: str, label: str, render_template: Callable[[str], str] | None = None
                        ) -> list[BundleObject]:
    if not has_templates(path):
        text = _run_kustomize(path, label)
    else:
        if render_template is None:
            raise PhasekitError(f"kustomization {label}: it has templates (.j2): they are rendered with each cluster "
                                "host's variables when the phase runs, or per cluster by plan_action=render")
        with private_directory("phasekit-kustomize-") as work:
            # its messages name the user's directory, not the rendered copy (gone when they are read)
            text = _run_kustomize(rendered_kustomization(path, work, render_template), label, shown_as=path)
    return objects_from_text(text, label=f"kustomization {label} (rendered)", file=label)


def rendered_kustomization(path: str, work: str, render_template: Callable[[str], str]) -> str:
    """A private copy of the kustomization at ``path`` with its ``.j2`` files rendered (under their own names,
    which its ``resources`` use) and its entries that name directories outside it pointed at the originals."""
    copy = os.path.join(work, os.path.basename(os.path.normpath(path)) or "kustomization")
    shutil.copytree(path, copy, symlinks=True)
    for root, _dirs, names in os.walk(copy):
        original_root = os.path.join(path, os.path.relpath(root, copy))
        for name in names:
            if name.endswith(TEMPLATE_SUFFIX):
                text = render_template(os.path.join(original_root, name))
                with open(os.path.join(root, name), "w", encoding="utf-8") as target:
                    target.write(text)
            elif name in KUSTOMIZATION_FILES:
                _anchor_outside_entries(os.path.join(root, name), original_root, path, root)
    return copy


def _anchor_outside_entries(copied_file: str, original_dir: str, top: str, copied_dir: str) -> None:
    """Entries naming a directory outside the copied kustomization point at the original from the copy (kustomize
    takes no absolute path for a directory)."""
    content = _kustomization_mapping(copied_file)
    if content is None:
        return  # kustomize will say what is wrong with it
    changed = False
    top = os.path.normpath(top)
    for field_name in KUSTOMIZE_DIRECTORY_FIELDS:
        entries = content.get(field_name)
        if not isinstance(entries, list):
            continue
        for position, entry in enumerate(entries):
            if not isinstance(entry, str) or "://" in entry or os.path.isabs(entry):
                continue
            target = os.path.normpath(os.path.join(original_dir, entry))
            if os.path.commonpath([target, top]) != top:
                entries[position], changed = os.path.relpath(target, copied_dir), True
    if changed:
        with open(copied_file, "w", encoding="utf-8") as out:
            out.write(yaml_io.safe_dump(content, sort_keys=False))


def kustomize_command(path: str, label: str | None = None) -> list[str]:
    """kubectl's built-in kustomize first (pinned with the cluster tools), else a standalone kustomize."""
    if shutil.which("kubectl"):
        return ["kubectl", "kustomize", path]
    if shutil.which("kustomize"):
        return ["kustomize", "build", path]
    raise PhasekitError(f"kustomization {label or path}: neither 'kubectl' nor 'kustomize' is on PATH to render it")


def build_in_listed_order(path: str, label: str) -> str:
    """The YAML kustomize builds from the kustomization directory ``path``, its documents in the order the
    kustomization lists them (kustomize's ``fifo`` order), unless its own ``sortOptions`` choose an order.

    kustomize's default order sorts by kind, then name; where document order is meaningful (phase documents run
    in it), a private kustomization that lists ``path`` and asks for ``fifo`` is built instead.
    """
    kustomize_command(path, label)  # refused here, naming the user's directory rather than the private one
    kustomization = load_kustomization(path)
    if kustomization is None or "sortOptions" in kustomization:
        return _run_kustomize(path, label)
    with private_directory("phasekit-kustomize-") as work:
        # kustomize takes no absolute path for a directory; real paths, so that no symlink moves the '..'
        target = os.path.relpath(os.path.realpath(path), os.path.realpath(work))
        with open(os.path.join(work, KUSTOMIZATION_FILES[0]), "w", encoding="utf-8") as out:
            out.write(yaml_io.safe_dump({"resources": [target], "sortOptions": {"order": "fifo"}}, sort_keys=False))
        try:
            return _run_kustomize(work, label)
        except PhasekitError as error:
            failure = error
    # kustomize's message on the user's own kustomization names only their files, not the private one
    _run_kustomize(path, label)
    raise PhasekitError(f"{failure} (keeping the documents in the order the kustomization lists them needs "
                        "kustomize 5 or newer: kubectl 1.27 or newer)")


def _run_kustomize(path: str, label: str, shown_as: str | None = None) -> str:
    """kustomize's build of ``path``; a failure names ``shown_as`` (the user's directory, when ``path`` is a rendered
    copy of it) wherever kustomize named ``path``."""
    command = kustomize_command(path, label)
    try:
        done = subprocess.run(command, capture_output=True, timeout=KUSTOMIZE_TIMEOUT, check=False,  # pylint: disable=ansible-bad-function
                              encoding="utf-8", errors="replace")
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PhasekitError(f"kustomization {label}: {' '.join(command[:2])} failed: {exc}") from None
    if done.returncode != 0:
        output = done.stderr or done.stdout
        if shown_as:
            output = output.replace(os.path.normpath(path), os.path.normpath(shown_as))
        raise PhasekitError(f"kustomization {label}: {' '.join(command[:2])} failed: "
                            f"{kustomize_failure(output, shown_as or path, rendered=bool(shown_as))}")
    return done.stdout


QUOTING_MARKERS = (" with config:", "patch:", "\n")
MAX_KUSTOMIZE_DETAIL = 1000
KUSTOMIZE_CLAUSE = ": "  # kustomize chains its reasons with it: a long message is cut between two of them
# kubectl 1.31 and 1.32 print the error through klog: 'E1124 18:47:15.33 26785 run.go:72] "command failed" err="..."'
# (or err=< and the message on the next lines)
KLOG_FAILURE_PREFIX = re.compile(r'^[IWEF]\d{4} \S+\s+\d+ \S+\] "command failed" err=(?:<\s*|")')


def kustomize_failure(output: str, path: str, rendered: bool = False) -> str:
    """kustomize's reason without what it quotes: its errors go on to print the patch or generator config
    they failed on (Secret values included), so only the reason before that is kept, cut between two of its
    clauses, never inside one. ``rendered``: ``path`` has templates, rendered per cluster before kustomize runs."""
    text = (output or "").strip()
    klog = KLOG_FAILURE_PREFIX.match(text)
    if klog:
        text = text[klog.end():].removesuffix('"')
    text = text.removeprefix("Error: ").removeprefix("error: ")
    cut = len(text)
    for marker in QUOTING_MARKERS:
        found = text.find(marker)
        if found != -1:
            cut = min(cut, found)
    if cut > MAX_KUSTOMIZE_DETAIL:
        clause = text.rfind(KUSTOMIZE_CLAUSE, 0, MAX_KUSTOMIZE_DETAIL)
        cut = clause if clause > 0 else MAX_KUSTOMIZE_DETAIL
    reason = text[:cut].rstrip(" :") or "no message"
    if cut == len(text):
        return reason
    see = "plan_action=render renders its templates for a cluster" if rendered else f"run kubectl kustomize {path}"
    return reason + f" (the rest of its message is withheld: it can quote Secret values; {see} to see it)"


def _meant_as_kustomization(file: str) -> bool:
    """A template, or YAML that is no Kubernetes object but a Kustomization (a manifest named alike is read)."""
    if file.endswith(TEMPLATE_SUFFIX):
        return True
    content = _kustomization_mapping(file)
    return content is not None and content.get("kind") in (None, "Kustomization")


def near_kustomization_file(names) -> str | None:
    """A file name that looks meant as a kustomization (``kustomisation.yaml``, ``Kustomization.yaml``,
    ``kustomization.yaml.j2``) but that kustomize does not read; ``None`` when there is none."""
    for name in names:
        if name in KUSTOMIZATION_FILES:
            return None
    for name in names:
        stem = name.lower().removesuffix(TEMPLATE_SUFFIX)
        if stem in KUSTOMIZATION_FILES or difflib.get_close_matches(stem, KUSTOMIZATION_FILES, n=1, cutoff=0.85):
            return name
    return None


def _checked(document, origin: str, file: str | None, number: int) -> list[BundleObject]:
    """Validate the shape every object needs; expand ``kind: List``."""
    if not isinstance(document, dict):
        raise PhasekitError(f"expected a Kubernetes object (a mapping), got {type(document).__name__}",
                            where=origin)
    if document.get("kind") == "List" and isinstance(document.get("items"), list):
        objects = []
        for position, item in enumerate(document["items"], start=1):
            objects.extend(_checked(item, f"{origin} item {position}", file, number))
        return objects
    for key in ("apiVersion", "kind"):
        if not isinstance(document.get(key), str) or not document.get(key):
            raise PhasekitError(f"field '{key}' is missing or not a string", where=origin)
    metadata = document.get("metadata")
    if not isinstance(metadata, dict):
        raise PhasekitError("field 'metadata' is missing or not a mapping", where=origin)
    if not isinstance(metadata.get("name"), str) or not metadata["name"]:
        raise PhasekitError("field 'metadata.name' is missing or not a string "
                            "(server-side apply needs a name; generateName is not supported)", where=origin)
    if len(metadata["name"]) > MAX_NAME and not document["apiVersion"].startswith(PATH_SEGMENT_NAMED):
        # not echoed: a name this long would flood the output
        raise PhasekitError(f"field 'metadata.name' is {len(metadata['name'])} characters long; Kubernetes object "
                            f"names are at most {MAX_NAME}", where=origin)
    namespace = metadata.get("namespace")
    if namespace is not None and (not isinstance(namespace, str) or not namespace):
        raise PhasekitError("field 'metadata.namespace' must be a non-empty string", where=origin)
    if namespace is not None and len(namespace) > MAX_NAMESPACE:
        raise PhasekitError(f"field 'metadata.namespace' is {len(namespace)} characters long; namespace names are "
                            f"at most {MAX_NAMESPACE}", where=origin)
    return [BundleObject(obj=document, origin=origin, file=file, index=number)]
