# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The one place that imports PyYAML: safe loading and dumping, C-accelerated when available.

ansible-core requires PyYAML, so it is present whenever a plugin runs, but
``ansible-test sanity --test import`` loads module_utils without it; the import
is therefore guarded and using YAML without it raises PhasekitError. Code that
subclasses the loader must build the subclass when first needed (see
``kubeconfig/kubectl_yaml.py``), not at import time.

The libyaml-based ``CSafeLoader``/``CSafeDumper`` are several times faster than
the pure-Python ones on large manifest bundles and behave the same.
"""

from __future__ import annotations

import errno
import functools
import os
import stat

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError

try:
    import yaml
except ImportError as exc:  # reported when YAML is first used
    yaml = None
    YAML_IMPORT_ERROR: ImportError | None = exc

    class YAMLError(Exception):
        """Stand-in so ``except YAMLError`` works without PyYAML; never raised."""

    class MarkedYAMLError(YAMLError):
        """Stand-in for ``yaml.MarkedYAMLError``; never raised."""

    SafeLoader = SafeDumper = ScalarNode = MappingNode = None
else:
    YAML_IMPORT_ERROR = None
    YAMLError = yaml.YAMLError
    MarkedYAMLError = yaml.MarkedYAMLError
    SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    SafeDumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    ScalarNode = yaml.ScalarNode
    MappingNode = yaml.MappingNode


def require_yaml() -> None:
    """Fail clearly when PyYAML is missing on the controller (ansible-core itself needs it)."""
    if YAML_IMPORT_ERROR is not None:
        raise PhasekitError(f"the 'PyYAML' Python package is required on the Ansible controller: {YAML_IMPORT_ERROR}")


def safe_loader_class() -> type:
    """The safe loader class (``CSafeLoader`` when available), to subclass or to pass as ``loader``."""
    require_yaml()
    return SafeLoader


def load_all(text: str, label: str, loader: type | None = None) -> list:
    """Every document of a YAML (or JSON) stream, empty documents as None.

    ``loader`` defaults to the safe loader and must be a safe loader or a
    subclass of one. A syntax error becomes PhasekitError naming ``label``
    (the file, for people), the line and column, and the problem.
    """
    require_yaml()
    try:
        documents = list(yaml.load_all(text, Loader=loader or SafeLoader))  # nosec B506 - a safe loader
    except RecursionError:
        raise PhasekitError(f"{label}: invalid YAML: nested too deeply") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
        raise PhasekitError(f"{label}{where}: invalid YAML: {yaml_problem(exc)}") from None
    check_structure(documents, label)
    return documents


def yaml_problem(exc) -> str:
    """What a YAML error says is wrong (token kinds or characters, never scalar text); PyYAML 6.0.4+ refuses deep
    nesting itself, said here as our own depth check says it."""
    problem = getattr(exc, "problem", None) or getattr(exc, "context", None) or str(exc) or "syntax error"
    return "nested too deeply" if "nesting depth" in problem else problem


MAX_FILE_BYTES = 64 * 1024 * 1024       # a kubeconfig, phase file or manifest larger than this is refused
MAX_NODES = 2_000_000                   # values after alias expansion: beyond this it is an alias bomb
MAX_DEPTH = 500                         # nesting: far beyond any real document, well inside Python's stack


def copy_data(value):
    """A deep copy of loaded data (dicts, lists and immutable scalars), a few times faster than
    ``copy.deepcopy``: every object of a bundle is copied once per cluster it goes to."""
    if isinstance(value, dict):
        return {key: copy_data(item) for key, item in value.items()}
    if isinstance(value, list):
        return [copy_data(item) for item in value]
    return value


def kind_of(value) -> str:
    """A YAML value's kind for messages (``a list``), also for Ansible's tagged types (``_AnsibleTaggedList``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return "a list"
    return type(value).__name__


DOCUMENT_SUFFIXES = (".yaml", ".yml")


def document_files(directory: str) -> list[str]:
    """A directory's ``*.yaml`` and ``*.yml`` regular files, in name order; hidden files and sub-directories
    are left out (manifests kept below a directory of documents are not documents of it)."""
    return [os.path.join(directory, name) for name in sorted(os.listdir(directory))
            if name.endswith(DOCUMENT_SUFFIXES) and not name.startswith(".")
            and os.path.isfile(os.path.join(directory, name))]


def document_files_of(path: str) -> list[str]:
    """A file itself, or a directory's ``document_files``; PhasekitError when nothing is there (what else is there,
    a FIFO or a device, ``read_text_file`` refuses, naming it)."""
    if os.path.isdir(path):
        return document_files(path)
    if os.path.exists(path):
        return [path]
    raise PhasekitError("no such file or directory")


def read_text_file(path: str, what: str = "file") -> str:
    """A regular file's text, bounded: FIFOs, devices (``/dev/zero``), huge files and binary content fail with
    PhasekitError (the caller names the file) instead of hanging or filling memory; a missing file raises
    FileNotFoundError and a directory IsADirectoryError."""
    raw = read_file_bytes(path, what)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise PhasekitError(f"the {what} is not text (not UTF-8): binary content?") from None


def read_document_file(path: str, what: str = "document file") -> str:
    """``read_text_file`` for a file that must exist: every failure is a PhasekitError naming ``path``."""
    try:
        return read_text_file(path, what)
    except OSError as exc:
        raise PhasekitError(f"cannot read: {exc.strerror or exc}", where=path) from None
    except PhasekitError as err:
        raise PhasekitError(str(err), where=path) from None


def read_file_bytes(path: str, what: str = "file") -> bytes:
    """A regular file's bytes, at most MAX_FILE_BYTES; see ``read_text_file``."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise PhasekitError(f"cannot read the file: {exc.strerror}") from None
    if stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
    if not stat.S_ISREG(info.st_mode):
        raise PhasekitError("not a regular file (a FIFO, socket or device): refusing to read it")
    if info.st_size > MAX_FILE_BYTES:
        raise PhasekitError(f"{info.st_size} bytes, more than the {MAX_FILE_BYTES} a {what} may have")
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise PhasekitError(f"cannot read the file: {exc.strerror}") from None
    if len(data) > MAX_FILE_BYTES:
        raise PhasekitError(f"more than the {MAX_FILE_BYTES} bytes a {what} may have")
    return data


def check_structure(data, label: str) -> None:
    """Refuse what YAML anchors can build but no document means: a value that contains itself, nesting deeper
    than MAX_DEPTH, or more than MAX_NODES values once aliases are expanded (an alias bomb). kubectl says
    ``anchor 'a' value contains itself`` and ``excessive aliasing`` for these."""
    seen = 0
    stack = [(data, 0, ())]
    while stack:
        value, depth, ancestors = stack.pop()
        if not isinstance(value, (dict, list)):
            continue
        if id(value) in ancestors:
            raise PhasekitError(f"{label}: invalid YAML: an anchor's value contains itself (an alias cycle)")
        if depth > MAX_DEPTH:
            raise PhasekitError(f"{label}: invalid YAML: nested more than {MAX_DEPTH} levels deep")
        children = value.values() if isinstance(value, dict) else value
        seen += len(children)
        if seen > MAX_NODES:
            raise PhasekitError(f"{label}: invalid YAML: excessive aliasing (more than {MAX_NODES} values once "
                                "aliases are expanded)")
        inner = ancestors + (id(value),)
        stack.extend((child, depth + 1, inner) for child in children if isinstance(child, (dict, list)))


def safe_dump(data, stream=None, *, sort_keys: bool = True, literal_text: bool = False) -> str | None:
    """Block-style YAML of plain data with the safe dumper: to ``stream``, or returned as text.

    ``literal_text``: strings of several lines as literal blocks (``|``), as people write them in files.
    """
    require_yaml()
    dumper = _literal_text_dumper() if literal_text else SafeDumper
    return yaml.dump(data, stream, Dumper=dumper, default_flow_style=False, sort_keys=sort_keys)


@functools.cache
def _literal_text_dumper() -> type:
    class LiteralTextDumper(SafeDumper):  # pylint: disable=too-many-ancestors
        pass

    def text(dumper, value):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)

    LiteralTextDumper.add_representer(str, text)
    return LiteralTextDumper
