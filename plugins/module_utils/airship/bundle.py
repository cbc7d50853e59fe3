# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""airshipctl's ``KubeConfig`` document, read from a bundle of documents as a kubeconfig (the ``bundle`` source).

    apiVersion: airshipit.org/v1alpha1
    kind: KubeConfig
    metadata: {name: default}
    config: {apiVersion: v1, kind: Config, clusters: [...], users: [...], contexts: [...]}

airshipctl takes the one document of this kind in the bundle (none, or several, is an error) and uses its
``config``; here ``name`` (the document's ``metadata.name``) may pick one of several. The bundle is a file or a
directory whose ``*.yaml``/``*.yml`` files are read (not recursively; a kustomization is not built).

airshipctl's sites encrypt documents with SOPS one by one, leaving their identity in clear
(``unencrypted_regex: ^(kind|apiVersion|group|metadata)$``), so the document is found without decrypting anything,
and only that document is decrypted: on its own when it carries its own ``sops`` metadata, or with its whole file
when sops encrypted the file as one (every document then carries the same metadata, and one MAC covers them all).
"""

from __future__ import annotations

import os
import re
import functools
from collections.abc import Callable
from dataclasses import dataclass, replace

from ansible_collections.phasekit.kube.plugins.module_utils import yaml_io
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.decode import decode_kubeconfig
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.kubectl_yaml import load_kubectl_yaml
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.model import Kubeconfig
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.model import Origin
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.readers import decrypt_sops, decrypt_sops_document
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.sources import SourceKind, nonempty_string

API_VERSION = "airshipit.org/v1alpha1"
KIND = "KubeConfig"
SOPS_KEY = "sops"
ENCRYPTED_PREFIX = "ENC["
CLEAR_IDENTITY = "--unencrypted-regex '^(kind|apiVersion|group|metadata)$'"
# A line starting with --- at column 0 starts a document: inside a block scalar such a line is indented.
_DOCUMENT_START = re.compile(r"^---(?=\s|$)", re.MULTILINE)


@dataclass(frozen=True)
class BundleDocument:
    """One document of a bundle file: its 1-based number in the file, its text as written, and its data."""

    file: str
    number: int
    text: str
    content: object

    def field(self, key: str):
        return self.content.get(key) if isinstance(self.content, dict) else None

    @property
    def name(self) -> str | None:
        metadata = self.field("metadata")
        name = metadata.get("name") if isinstance(metadata, dict) else None
        return name if isinstance(name, str) else None

    @property
    def sops_metadata(self) -> dict | None:
        metadata = self.field(SOPS_KEY)
        return metadata if isinstance(metadata, dict) else None

    def is_kubeconfig(self) -> bool:
        return self.field("apiVersion") == API_VERSION and self.field("kind") == KIND

    def identity_encrypted(self) -> bool:
        """True for a SOPS document whose kind or apiVersion is itself encrypted: what it is cannot be seen."""
        return self.sops_metadata is not None and any(
            str(self.field(key) or "").startswith(ENCRYPTED_PREFIX) for key in ("apiVersion", "kind"))

    def location(self) -> str:
        return f"{self.file} document {self.number}"

    def label(self) -> str:
        return f"{self.location()} ({KIND} {describe_name(self.name)})"


def describe_name(name: str | None) -> str:
    """A document name for messages: an encrypted name is not shown (it is ciphertext, and says nothing)."""
    if name is None:
        return "without a name"
    return "(name encrypted)" if name.startswith(ENCRYPTED_PREFIX) else name


def read_bundle_kubeconfig(bundle: str, name: str | None, origin: Origin, decrypt_document: Callable[[str], bytes],
                           decrypt_file: Callable[[str], bytes]) -> Kubeconfig:
    """The kubeconfig in the ``config`` of the bundle's ``KubeConfig`` document (``name`` picks one of several).

    An encrypted document is decrypted with ``decrypt_document`` (its text) or, when sops encrypted its file as
    one, ``decrypt_file`` (the file's path). Relative paths in the kubeconfig are relative to the document's file.
    """
    documents = read_bundle_documents(bundle)
    chosen = select_kubeconfig_document(documents, name, bundle)
    content = _plaintext(chosen, documents, decrypt_document, decrypt_file)
    where = f"{chosen.label()} field config"
    config = content.get("config")
    if not isinstance(config, dict):
        raise PhasekitError(f"expected the kubeconfig (a mapping with clusters, users and contexts), got "
                            f"{yaml_io.kind_of(config)}", where=where)
    try:
        return decode_kubeconfig(config, replace(origin, path=chosen.file))
    except PhasekitError as err:
        raise PhasekitError(str(err), where=where) from None


def bundle_files(bundle: str) -> list[str]:
    """The files of a bundle: the file itself, or a directory's ``*.yaml`` and ``*.yml`` files."""
    files = yaml_io.document_files_of(bundle)
    if not files:
        raise PhasekitError("no *.yaml or *.yml files in the directory")
    return files


def read_bundle_documents(bundle: str) -> list[BundleDocument]:
    """Every document of the bundle's files, in order, as written (nothing is decrypted)."""
    documents = []
    for file_path in bundle_files(bundle):
        text = yaml_io.read_document_file(file_path)
        documents.extend(parse_documents(text, file_path))
    return documents


def parse_documents(text: str, file_path: str) -> list[BundleDocument]:
    """The documents of a YAML stream, each with its own text (so sops can be given one document alone).

    Parsed as kubectl and airshipctl parse YAML (go-yaml's scalars); a leading part holding only comments is
    not a document, and empty documents keep their number, as for every other document reader here.
    """
    documents = []
    for index, chunk in enumerate(_document_texts(text)):
        number = len(documents) + 1
        try:
            content = load_kubectl_yaml(chunk)
        except PhasekitError as err:
            raise PhasekitError(str(err), where=f"{file_path} document {number}") from None
        if index == 0 and content is None and not chunk.startswith("---"):
            continue
        documents.append(BundleDocument(file_path, number, chunk, content))
    return documents


def _document_texts(text: str) -> list[str]:
    starts = [match.start() for match in _DOCUMENT_START.finditer(text)]
    bounds = [0] + [start for start in starts if start > 0] + [len(text)]
    return [text[begin:end] for begin, end in zip(bounds, bounds[1:])]


def select_kubeconfig_document(documents: list[BundleDocument], name: str | None, bundle: str) -> BundleDocument:
    """The one ``KubeConfig`` document (of that ``name``, when given); none or several is an error naming them."""
    candidates = [document for document in documents if document.is_kubeconfig()]
    matching = [document for document in candidates if name is None or document.name == name]
    if len(matching) == 1:
        return matching[0]
    if matching:
        fix = ("set the source's name to the metadata.name of the one to use" if name is None
               else "keep one document of that name")
        raise PhasekitError(f"{len(matching)} {KIND} documents ({API_VERSION}){_named(name)}: "
                            f"{'; '.join(document.label() for document in matching)}; {fix}")
    message = f"no {KIND} document ({API_VERSION}){_named(name)} in {len(bundle_files(bundle))} file(s)"
    if candidates:
        message += f"; {KIND} documents found: {', '.join(describe_name(doc.name) for doc in candidates)}"
    hidden = [document.location() for document in documents if document.identity_encrypted()]
    if hidden:
        message += (f"; SOPS-encrypted documents whose kind is encrypted too are not looked into ("
                    f"{', '.join(hidden)}): encrypt them with {CLEAR_IDENTITY}, as airshipctl's sites do")
    if os.path.isdir(bundle) and not candidates:
        message += ("; only the directory's own *.yaml and *.yml files are read (a kustomization is not built): "
                    "point the source at the file or directory that holds the document")
    raise PhasekitError(message)


def _named(name: str | None) -> str:
    return f" named {name!r}" if name is not None else ""


def _plaintext(chosen: BundleDocument, documents: list[BundleDocument], decrypt_document, decrypt_file) -> dict:
    """The chosen document's content, decrypted when it is SOPS-encrypted."""
    metadata = chosen.sops_metadata
    if metadata is None:
        return chosen.content
    in_file = [document for document in documents if document.file == chosen.file]
    whole_file = len(in_file) > 1 and all(document.sops_metadata == metadata for document in in_file)
    try:
        if whole_file:  # one MAC covers every document: sops decrypts them together or not at all
            plaintexts = parse_documents(decrypt_file(chosen.file).decode("utf-8"), chosen.file)
            if len(plaintexts) != len(in_file):
                raise PhasekitError(f"sops returned {len(plaintexts)} documents for the file's {len(in_file)}")
            content = plaintexts[in_file.index(chosen)].content
        else:
            content = parse_documents(decrypt_document(chosen.text).decode("utf-8"), chosen.file)[0].content
    except (PhasekitError, UnicodeDecodeError, IndexError) as err:
        reason = str(err) if isinstance(err, PhasekitError) else "sops returned no document"
        raise PhasekitError(reason, where=chosen.label()) from None
    if not isinstance(content, dict) or content.get("kind") != KIND:
        raise PhasekitError(f"the decrypted document is not a {KIND} document", where=chosen.label())
    return content


def _check_bundle(value, here: str) -> str:
    return nonempty_string(value, here, "a file or directory of airshipctl documents")


def _check_options(_kind: str, item: dict, here: str) -> dict:
    if item.get("name") is None:
        return {}
    return {"name": nonempty_string(item["name"], f"{here} name", "the KubeConfig document's metadata.name")}


def describe_bundle(path: str, options: dict) -> str:
    name = options.get("name")
    return f"{path}, KubeConfig {name}" if name else path


def _read_unit(unit, hooks) -> Kubeconfig:
    """The ``bundle`` source's kubeconfig (``kubeconfig.readers.read_unit`` of a registered kind)."""
    return read_bundle_kubeconfig(unit.origin.path, unit.spec.options.get("name"), unit.origin,
                                  functools.partial(decrypt_sops_document, environ=hooks.environ),
                                  functools.partial(decrypt_sops, input_type="yaml", environ=hooks.environ))


SOURCE_KIND = SourceKind("bundle", ("name",), _check_bundle, _check_options, describe_bundle, _read_unit)
