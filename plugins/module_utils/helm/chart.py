# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""A chart made local once: its name, version and a digest of its content.

A chart in a repository or an OCI registry is pulled once per run into a
private directory (``ChartCache``), and every cluster then installs that same
archive: a phase over 60 clusters downloads its chart once, and all 60 get the
same version even when the repository changes meanwhile. A chart directory or
a packaged ``.tgz`` is used where it is.

The digest covers every file of the chart (names and contents, not archive
timestamps), so a chart whose templates changed without a version bump is
still seen as changed.
"""

from __future__ import annotations

import hashlib
import os
import tarfile
import threading
from contextlib import ExitStack
from dataclasses import dataclass

from ansible_collections.phasekit.kube.plugins.module_utils import yaml_io
from ansible_collections.phasekit.kube.plugins.module_utils.closing import Closing
from ansible_collections.phasekit.kube.plugins.module_utils.memo import made_once
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.private_files import private_directory

CHART_FILE = "Chart.yaml"
REMOTE_PREFIXES = ("oci://", "https://", "http://", "file://")
LOCAL_PREFIXES = ("/", "./", "../", "~")


@dataclass(frozen=True)
class Chart:
    """A chart on local disk, as helm will install it."""

    path: str        # a chart directory or a packaged .tgz
    name: str
    version: str
    digest: str      # sha256 of the chart's files (names and contents)
    ref: str         # as the user wrote it (shown in results)


@dataclass(frozen=True)
class ChartSource:
    """Where a chart comes from: ``ref`` is a local path, ``repo/chart``, a chart name with ``repo_url``, an
    ``oci://`` reference or an absolute URL of a packaged chart; ``version`` pins it (None: the newest)."""

    ref: str
    repo_url: str | None = None
    version: str | None = None
    plain_http: bool = False      # an OCI registry or repository over http (helm --plain-http)
    insecure_skip_tls_verify: bool = False  # the download's certificate not checked (helm --insecure-skip-tls-verify)

    @property
    def is_local(self) -> bool:
        """A path (it exists, or is written as one: /x, ./x, ../x, x.tgz), not a chart of a repository."""
        if self.repo_url or self.ref.startswith(REMOTE_PREFIXES):
            return False
        return os.path.exists(self.ref) or self.ref.startswith(LOCAL_PREFIXES) or self.ref.endswith(".tgz")


def chart_dependencies(path: str) -> list:
    """The dependencies a chart directory or packaged ``.tgz`` declares (Chart.yaml, or requirements.yaml of
    apiVersion v1 charts)."""
    if os.path.isfile(path):
        files = _archive_files(path)
        texts = {name: files[name].decode("utf-8", "replace") for name in (CHART_FILE, "requirements.yaml")
                 if name in files}
    else:
        texts = {name: yaml_io.read_document_file(os.path.join(path, name), "chart")
                 for name in (CHART_FILE, "requirements.yaml") if os.path.isfile(os.path.join(path, name))}
    found = []
    for name, text in texts.items():
        if text:
            documents = yaml_io.load_all(text, f"chart {path}: {name}")
            metadata = documents[0] if documents else None
            if isinstance(metadata, dict) and isinstance(metadata.get("dependencies"), list):
                found += metadata["dependencies"]
    return found


def local_chart(path: str, ref: str | None = None) -> Chart:
    """A chart directory or ``.tgz`` read: name and version from its Chart.yaml, digest from its files."""
    if os.path.isdir(path):
        files = _directory_files(path)
    elif os.path.isfile(path):
        files = _archive_files(path)
    else:
        raise PhasekitError(f"chart {ref or path}: no such chart directory or archive ({path})")
    metadata_text = files.get(CHART_FILE)
    if metadata_text is None:
        raise PhasekitError(f"chart {ref or path}: no {CHART_FILE} in {path}")
    documents = yaml_io.load_all(metadata_text.decode("utf-8", "replace"), f"chart {ref or path}: {CHART_FILE}")
    metadata = documents[0] if documents else None
    if not isinstance(metadata, dict) or not metadata.get("name") or not metadata.get("version"):
        raise PhasekitError(f"chart {ref or path}: {CHART_FILE} must give name and version")
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode("utf-8") + b"\0" + files[name] + b"\0")
    return Chart(path=path, name=str(metadata["name"]), version=str(metadata["version"]),
                 digest=digest.hexdigest(), ref=ref or path)


def _directory_files(root: str) -> dict[str, bytes]:
    files = {}
    for directory, subdirectories, names in os.walk(root):
        subdirectories.sort()
        for name in names:
            path = os.path.join(directory, name)
            with open(path, "rb") as handle:
                files[os.path.relpath(path, root).replace(os.sep, "/")] = handle.read()
    return files


def _archive_files(path: str) -> dict[str, bytes]:
    """The files of a packaged chart, named relative to its top directory (``mychart/Chart.yaml`` -> ``Chart.yaml``)."""
    files = {}
    try:
        with tarfile.open(path, "r:*") as archive:
            for member in archive.getmembers():
                if not member.isfile():
                    continue
                _top, _slash, name = member.name.partition("/")
                handle = archive.extractfile(member)
                files[name or member.name] = handle.read() if handle else b""
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise PhasekitError(f"chart {path}: not a packaged chart (.tgz): {exc}") from None
    return files


class ChartCache(Closing):
    """Charts made local for one run: each source pulled (``pull``) at most once, into a private directory
    removed on ``close``. Thread-safe: the clusters of a phase ask for the same chart at once."""

    def __init__(self):
        self._stack = ExitStack()
        self._directory: str | None = None
        self._charts: dict[ChartSource, Chart | PhasekitError] = {}
        self._lock = threading.Lock()

    def close(self) -> None:
        self._stack.close()
        self._directory = None
        self._charts.clear()

    def chart(self, source: ChartSource, pull) -> Chart:
        """The chart ``source`` names, local; ``pull(source, into_directory) -> path`` fetches a remote one."""
        with self._lock:   # made once: every cluster of the phase reports a failure
            return made_once(self._charts, source, lambda: self._make_local(source, pull))

    def _make_local(self, source: ChartSource, pull) -> Chart:
        if source.is_local:
            return local_chart(source.ref)  # helm (so kubernetes.core) ignores --version for a chart on disk
        if self._directory is None:
            self._directory = self._stack.enter_context(private_directory("phasekit-charts-"))
        into = os.path.join(self._directory, str(len(self._charts)))
        os.mkdir(into)
        return local_chart(pull(source, into), ref=source.ref)
