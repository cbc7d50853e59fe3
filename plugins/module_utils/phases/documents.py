# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Read phase and plan documents from files, directories or inline variables.

A directory contributes its ``*.yaml`` and ``*.yml`` files (not recursive, so
manifests kept in sub-directories are not mistaken for phase documents), in
name order; each file contributes its documents in order. Relative paths in a
document (sources, working directories) are relative to the file's directory.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ansible_collections.phasekit.kube.plugins.module_utils import yaml_io
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.phases.problems import DocumentOrigin

DOCUMENT_SUFFIXES = yaml_io.DOCUMENT_SUFFIXES
INLINE_SOURCE = "plan"


@dataclass(frozen=True)
class RawDocument:
    """One parsed YAML document, where it came from, and the directory its relative paths start from."""

    content: object
    origin: DocumentOrigin
    base_dir: str


def read_paths(paths: list[str], base_dir: str) -> list[RawDocument]:
    """Documents of every file and directory in ``paths`` (relative to ``base_dir``), in order."""
    documents = []
    for given in paths:
        path = given if os.path.isabs(given) else os.path.join(base_dir, given)
        if os.path.isdir(path):
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
