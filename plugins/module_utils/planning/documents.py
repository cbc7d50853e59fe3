# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Read phase and plan documents from files, directories or inline variables.

A directory contributes its ``*.yaml`` and ``*.yml`` files (not recursive, so
manifests kept in sub-directories are not mistaken for phase documents), in
name order; each file contributes its documents in order. Relative paths in a
document (sources, working directories) are relative to the file's directory.

A directory with a kustomization is built with ``kubectl kustomize``, as
airshipctl builds its phase bundle: its documents are the build's, in the
order the kustomization lists them, and their relative paths start at that
directory, whichever file a document came from.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass

from ansible_collections.phasekit.kube.plugins.module_utils import yaml_io
from ansible_collections.phasekit.kube.plugins.module_utils.bundle import (
    build_in_listed_order,
    is_kustomization,
    load_kustomization,
)
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.planning.problems import DocumentOrigin

DOCUMENT_SUFFIXES = yaml_io.DOCUMENT_SUFFIXES
INLINE_SOURCE = "plan"
BUILT_BY = "kubectl kustomize"


@dataclass(frozen=True)
class RawDocument:
    """One parsed YAML document, where it came from, and the directory its relative paths start from."""

    content: object
    origin: DocumentOrigin
    base_dir: str


def read_paths(paths: list[str], base_dir: str = "", shown_as: str | None = None) -> list[RawDocument]:
    """Documents of every file and directory in ``paths`` (relative to ``base_dir``), in order; messages name each
    as given, or (one absolute path) as ``shown_as``."""
    documents = []
    for given in paths:
        path = given if os.path.isabs(given) else os.path.join(base_dir, given)
        given = shown_as or given
        if os.path.isdir(path) and is_kustomization(path):
            documents.extend(_read_built(path, given))
        elif os.path.isdir(path):
            files = yaml_io.document_files(path)
            if not files:
                raise PhasekitError(f"phase directory {given}: no *.yaml or *.yml files in {path}")
            for file_path in files:
                documents.extend(_read_file(file_path, os.path.join(given, os.path.basename(file_path))))
        elif os.path.isfile(path):
            documents.extend(_read_file(path, given))
        else:
            raise PhasekitError(f"phase documents {given}: no such file or directory ({path})")
    if not documents:
        raise PhasekitError(f"phase documents {', '.join(paths)}: no documents in them (empty files?)")
    return documents


def inline_documents(value, base_dir: str) -> list[RawDocument]:
    """Documents given as variables: a list of documents, or a single document."""
    items = value if isinstance(value, list) else [value]
    return [RawDocument(item, DocumentOrigin(INLINE_SOURCE, number), base_dir)
            for number, item in enumerate(items, start=1) if item is not None]


def _read_file(path: str, shown: str) -> list[RawDocument]:
    try:
        text = yaml_io.read_text_file(path, "phase file")
    except OSError as exc:
        raise PhasekitError(f"{shown}: cannot read: {exc}") from None
    except PhasekitError as err:
        raise PhasekitError(f"{shown}: {err}") from None
    contents = yaml_io.load_all(text, shown)
    base = os.path.dirname(os.path.abspath(path))
    return [RawDocument(content, DocumentOrigin(shown, number), base)
            for number, content in enumerate(contents, start=1) if content is not None]


def _read_built(path: str, shown: str) -> list[RawDocument]:
    """The documents ``kubectl kustomize`` builds from the directory, each named after the file its
    kustomization lists it from when that is certain, else after the directory and its place in the build."""
    source = f"{shown} ({BUILT_BY})"
    contents = [content for content in yaml_io.load_all(build_in_listed_order(path, shown), source)
                if content is not None]
    identities = [_identity(content) for content in contents]
    built = Counter(identities)
    listed = _listed_origins(path, shown)
    base = os.path.abspath(path)
    documents = []
    for number, (content, identity) in enumerate(zip(contents, identities), start=1):
        origin = listed.get(identity) if built[identity] == 1 else None
        documents.append(RawDocument(content, origin or DocumentOrigin(source, number), base))
    return documents


def _listed_origins(path: str, shown: str) -> dict[tuple, DocumentOrigin | None]:
    """(kind, name) -> the file and document number of that document among the files the kustomization lists
    itself in ``resources``; ``None`` when two documents there have it (a message cannot tell which)."""
    kustomization = load_kustomization(path) or {}
    entries = kustomization.get("resources")
    found: dict[tuple, DocumentOrigin | None] = {}
    for entry in entries if isinstance(entries, list) else []:
        file_path = os.path.join(path, entry) if isinstance(entry, str) and "://" not in entry else None
        if file_path is None or not os.path.isfile(file_path):
            continue  # a directory, a URL, or what kustomize has refused already
        try:
            contents = yaml_io.load_all(yaml_io.read_text_file(file_path, "phase file"), file_path)
        except (OSError, PhasekitError):
            continue  # kustomize read it: only the file's name in messages is lost
        label = os.path.normpath(os.path.join(shown, entry))
        for number, content in enumerate(contents, start=1):
            identity = _identity(content)
            if identity is not None:
                found[identity] = None if identity in found else DocumentOrigin(label, number)
    return found


def _identity(content) -> tuple[str, str] | None:
    """A document's kind and name, which kustomize keeps unless a transformer renames it."""
    if not isinstance(content, dict) or not isinstance(content.get("metadata"), dict):
        return None
    kind, name = content.get("kind"), content["metadata"].get("name")
    return (kind, name) if isinstance(kind, str) and isinstance(name, str) else None
