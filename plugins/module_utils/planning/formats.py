# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Readers of other tools' phase documents: the planner asks each registered reader to claim its documents.

A reader takes the plan's documents and leaves those it does not claim; the phases and plans of the ones it
claimed are read after the collection's own documents (so problems are listed in that order). A reader may also
convert its documents to the collection's own (the ``phase_plan`` module's ``convert_to``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ansible_collections.phasekit.kube.plugins.module_utils.formats import Registry


@dataclass(frozen=True)
class Claimed:
    """What a reader made of the documents: those it left, and how to read the ones it took."""

    rest: list                                  # RawDocuments for the next reader, then the collection's own
    read: Callable[[], list]                    # the phases and plans of the claimed documents, in order


@dataclass(frozen=True)
class DocumentReader:
    """One foreign format: ``claim(documents, problems, target_path) -> Claimed``; ``convert`` writes its
    documents as the collection's own (``convert(documents, executors, dest, target_path=, kubeconfig_bundle=)``
    -> a conversion with ``files``, ``warnings``, ``check(dest)``, ``write(dest)``, ``summary(dest)`` and
    ``message(verb, dest)``); it writes nothing itself."""

    name: str
    claim: Callable[..., Claimed]
    convert: Callable | None = None


# phase_plan's option naming the kubeconfig source(s) of the inventory a conversion writes
CONVERT_BUNDLE_OPTION = "convert_kubeconfig_bundle"

_READERS = Registry()


def register_document_reader(reader: DocumentReader) -> None:
    _READERS.add(reader.name, reader)


def document_readers() -> list[DocumentReader]:
    """The registered readers, in the order they were registered."""
    return _READERS.entries()


def document_converter() -> Callable | None:
    """The one registered reader's ``convert`` (None without one)."""
    converters = [reader.convert for reader in document_readers() if reader.convert is not None]
    return converters[0] if converters else None
