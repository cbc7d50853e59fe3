# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Directories of files kustomize builds, for a command phase (its option ``env_dirs``).

``env_dirs`` maps an environment variable to the files of one directory: ``{VARIABLE: {relative path: file}}``,
where a file is ``{kustomize: DIR}`` (the build output of that kustomization) with optional document filters:

- ``kind``: ``group/Kind`` (``/Kind`` for the core group): only that document, and the build must have exactly one;
- ``exclude_kinds``: ``[group/Kind]``: documents left out;
- ``exclude_labels``: ``{label: [values]}``: documents whose label has one of the values are left out;
- ``about``: what the file stands for, named in every error about it (such as the document field it came from).

The files are built before the command runs (and by validate, which only builds them), written into one private
0700 directory per variable and removed with it when the command ends. ``${VARIABLE}`` in an ``env_files`` text
is that directory's path, so a tool's configuration file can name files in it (clusterctl's local repository).
"""

from __future__ import annotations

import os
from contextlib import contextmanager

from ansible_collections.phasekit.kube.plugins.module_utils import yaml_io
from ansible_collections.phasekit.kube.plugins.module_utils.bundle import is_kustomization, render_bundle
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.private_files import (
    make_private_subdirectories, private_directory, write_private_file)

OPTION = "env_dirs"
FILE_FIELDS = ("kustomize", "kind", "exclude_kinds", "exclude_labels", "about")
MAX_NAME_BYTES = 255  # one file or directory name (NAME_MAX of Linux and macOS file systems)
MAX_PATH_BYTES = 1024  # a whole relative path: the private directory's own path comes before it (PATH_MAX 4096)


def check_env_dirs(env_dirs: dict) -> None:
    """The shape of ``env_dirs`` (variable names are checked with the other file options); raises PhasekitError."""
    for variable, files in env_dirs.items():
        where = f"{OPTION}.{variable}"
        if not isinstance(files, dict) or not files:
            raise PhasekitError(f"{where}: expected a mapping of relative file paths to {{kustomize: DIR}}, "
                                f"got {type(files).__name__}")
        for path, spec in files.items():
            shown = path if isinstance(path, str) and path.isprintable() and path else repr(path)
            _check_file(f"{where}.{shown}", path, spec)
        _check_no_file_is_a_directory(where, files)


def _check_no_file_is_a_directory(where: str, files: dict) -> None:
    """A path that is a file cannot also be a directory of another path (a/b.yaml needs a to be a directory)."""
    directories = {"/".join(path.split("/")[:end]): path for path in files for end in range(1, path.count("/") + 1)}
    for path in sorted(files):
        if path in directories:
            raise PhasekitError(f"{where}: {path} is a file, but {directories[path]} needs it to be a directory; "
                                f"expected each path to be either a file or a directory of other files")


def _check_file(where: str, path, spec) -> None:
    if not isinstance(path, str) or not path or "\0" in path or os.path.isabs(path) or \
            os.path.normpath(path) != path or path == "." or path.split("/")[0] == "..":
        raise PhasekitError(f"{where}: expected a relative file path inside the directory (a file name, or names "
                            f"joined by '/'; not '.', no '..', no leading '/', no NUL character)")
    size = len(path.encode("utf-8", "surrogatepass"))
    longest = max(len(name.encode("utf-8", "surrogatepass")) for name in path.split("/"))
    if longest > MAX_NAME_BYTES or size > MAX_PATH_BYTES:
        raise PhasekitError(f"{where}: the path is too long for a file system: expected names of at most "
                            f"{MAX_NAME_BYTES} bytes and a path of at most {MAX_PATH_BYTES}, got a name of {longest} "
                            f"bytes in {size}")
    if not isinstance(spec, dict):
        raise PhasekitError(f"{where}: expected a mapping with kustomize (a directory), got {type(spec).__name__}")
    unknown = sorted(str(key) for key in spec if key not in FILE_FIELDS)
    if unknown:
        raise PhasekitError(f"{where}: unsupported fields {', '.join(unknown)}; expected {', '.join(FILE_FIELDS)}")
    for key in ("kustomize", "kind", "about"):
        value = spec.get(key)
        if (key == "kustomize" or value is not None) and not (isinstance(value, str) and value):
            raise PhasekitError(f"{where}.{key}: expected a string, got {type(value).__name__}")
    kinds = spec.get("exclude_kinds", [])
    if not isinstance(kinds, list) or not all(isinstance(kind, str) and "/" in kind for kind in kinds):
        raise PhasekitError(f"{where}.exclude_kinds: expected a list of group/Kind")
    labels = spec.get("exclude_labels", {})
    if not isinstance(labels, dict) or not all(isinstance(values, list) for values in labels.values()):
        raise PhasekitError(f"{where}.exclude_labels: expected a mapping of label names to lists of values")


def absolute_env_dirs(env_dirs, base_dir: str):
    """``env_dirs`` with each relative ``kustomize`` directory made absolute (relative to ``base_dir``)."""
    return _with_directories(env_dirs, lambda directory: os.path.normpath(os.path.join(base_dir, directory)))


def rebased_env_dirs(env_dirs, base_dir: str, new_base_dir: str):
    """``env_dirs`` with the ``kustomize`` directories relative to ``base_dir`` made relative to ``new_base_dir``
    (the phase is written to another directory)."""
    return _with_directories(env_dirs, lambda directory: os.path.relpath(os.path.join(base_dir, directory),
                                                                         new_base_dir))


def _with_directories(env_dirs, change):
    if not isinstance(env_dirs, dict):
        return env_dirs
    return {variable: {path: _changed(spec, change) for path, spec in files.items()}
            if isinstance(files, dict) else files for variable, files in env_dirs.items()}


def _changed(spec, change):
    if not isinstance(spec, dict) or not isinstance(spec.get("kustomize"), str):
        return spec
    return {**spec, "kustomize": change(spec["kustomize"])}


def env_dirs_layout(env_dirs: dict) -> dict[str, dict[str, str]]:
    """What ``env_dirs`` would build, for people: variable -> relative path -> the kustomization it is built from."""
    return {variable: {path: spec["kustomize"] for path, spec in sorted(files.items())}
            for variable, files in env_dirs.items()}


def build_env_dirs(env_dirs: dict) -> dict[str, dict[str, str]]:
    """Every file's text: variable -> relative path -> text. Nothing is written."""
    return {variable: {path: build_file(spec, spec.get("about") or f"{OPTION}.{variable}.{path}")
                       for path, spec in files.items()}
            for variable, files in env_dirs.items()}


def build_file(spec: dict, where: str) -> str:
    """The YAML of one file: the kustomization's build, filtered; the error names ``where``."""
    directory = spec["kustomize"]
    if not os.path.isdir(directory):
        raise PhasekitError(f"{where}: no directory {directory} (expected a kustomization directory)")
    if not is_kustomization(directory):
        raise PhasekitError(f"{where}: {directory} has no kustomization.yaml (expected a kustomization directory)")
    try:
        objects = [item.obj for item in render_bundle(src=directory)]
    except PhasekitError as err:
        raise PhasekitError(f"{where}: {err}") from None
    excluded = set(spec.get("exclude_kinds") or ())
    labels = spec.get("exclude_labels") or {}
    kept = [obj for obj in objects if group_kind(obj) not in excluded and not _labelled(obj, labels)]
    wanted = spec.get("kind")
    if wanted:
        kept = [obj for obj in kept if group_kind(obj) == wanted]
        if len(kept) != 1:
            raise PhasekitError(f"{where}: the build of {directory} has {len(kept)} {wanted} documents; "
                                f"expected exactly one")
    return "".join(f"---\n{yaml_io.safe_dump(obj, sort_keys=False)}" for obj in kept)


def group_kind(obj: dict) -> str:
    """'group/Kind' of an object ('/Kind' in the core group); the version does not count."""
    api_version = str(obj.get("apiVersion", ""))
    group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
    return f"{group}/{obj.get('kind', '')}"


def _labelled(obj: dict, labels: dict) -> bool:
    own = (obj.get("metadata") or {}).get("labels") or {}
    return any(str(own.get(label)) in {str(value) for value in values}
               for label, values in labels.items() if label in own)


@contextmanager
def written_env_dirs(built: dict[str, dict[str, str]]):
    """Yield variable -> path of a private directory holding that variable's built files (gone afterwards)."""
    if not built:
        yield {}
        return
    with private_directory("phasekit-dirs-") as top:
        directories = {}
        for number, (variable, files) in enumerate(built.items()):
            directory = directories[variable] = os.path.join(top, str(number))
            for path, text in files.items():
                target = os.path.join(directory, path)
                make_private_subdirectories(top, os.path.relpath(os.path.dirname(target), top))
                write_private_file(target, text)
        yield directories


def with_directories(text: str, directories: dict[str, str]) -> str:
    """``text`` with each ``${VARIABLE}`` of ``directories`` replaced by that directory's path."""
    for variable, directory in directories.items():
        text = text.replace("${" + variable + "}", directory)
    return text
