# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""What files a phase's outcome depends on, as content digests (for its run record's digest, see ``record``).

A command phase depends on the files its command names: the script it runs
(``./deploy.sh``, ``sh deploy.sh``), files and directories given as arguments
(``-f manifests/``, ``--values=site.yaml``) or in ``env``, relative to its
``chdir`` as the command sees them; a container phase on the directories it
mounts read-only. Programs found on ``PATH`` (kubectl, bash) are tools, not
content: a phase is not re-run because a tool was upgraded.

A directory counts by every file under it (names and contents), up to
``MAX_FILES`` files and ``MAX_BYTES`` bytes: beyond that it cannot be compared
cheaply, and ``UNCOMPARABLE`` (never equal to anything recorded) makes the
phase run again rather than be skipped on a guess.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shlex
import threading

MAX_FILES = 10000
MAX_BYTES = 256 * 1024 * 1024
CHUNK = 1024 * 1024
SHELLS = ("sh", "bash", "dash", "ash", "ksh", "zsh")   # ``-c TEXT`` of these is a command line (python's is code)


class TooLarge(Exception):
    """A directory beyond what is hashed for a digest."""


def uncomparable() -> str:
    """A value no recorded digest holds: the phase runs again."""
    return "uncomparable:" + secrets.token_hex(16)


class FileDigests:
    """Content digests of files and directories, each made once per run (a phase on 60 clusters names the same
    script 60 times); thread-safe."""

    def __init__(self):
        self._known: dict[str, str] = {}
        self._lock = threading.Lock()

    def of(self, path: str) -> str | None:
        """``path``'s content digest (a file, or a directory's every file); None when nothing is there."""
        path = os.path.abspath(path)
        with self._lock:
            if path in self._known:
                return self._known[path]
        try:
            if os.path.isfile(path):
                found = "file:" + _file_digest(path)
            elif os.path.isdir(path):
                found = "dir:" + _tree_digest(path)
            else:
                return None
        except (TooLarge, OSError):  # too large, or unreadable: not compared
            found = uncomparable()
        with self._lock:
            return self._known.setdefault(path, found)

    def named(self, words, base: str) -> dict[str, str]:
        """The files and directories among ``words`` (a command's arguments, option values), each relative to
        ``base`` unless absolute: word -> content digest. ``--opt=path`` counts by its path."""
        found = {}
        for word in words:
            for candidate in _paths_in(word):
                digest = self.of(os.path.join(base, os.path.expanduser(candidate)))
                if digest is not None:
                    found[candidate] = digest
        return found


def command_words(argv: list[str], env: dict | None) -> list[str]:
    """The words of a command that may name files: its arguments (a shell command's words too) and ``env``
    values; a program found on PATH (no ``/`` in it) is left out."""
    words = list(argv[1:]) if argv and "/" not in argv[0] else list(argv)
    if len(argv) == 3 and argv[1] == "-c" and os.path.basename(argv[0]) in SHELLS:  # sh -c 'text': its words
        try:
            words += shlex.split(argv[2])
        except ValueError:
            pass
    words += [value for value in (env or {}).values() if isinstance(value, str)]
    return words


def _paths_in(word) -> list[str]:
    if not isinstance(word, str) or not word or word in ("/", "~") or "\n" in word:
        return []
    paths = [word]
    if "=" in word:
        paths.append(word.split("=", 1)[1])
    return [path for path in paths if path and path not in ("/", "~")]


def _file_digest(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _tree_digest(root: str) -> str:
    """Every file under ``root``: relative names and contents, in a fixed order."""
    digest = hashlib.sha256()
    files = size = 0
    for directory, subdirectories, names in os.walk(root):
        subdirectories[:] = sorted(name for name in subdirectories if name != ".git")
        for name in sorted(names):
            path = os.path.join(directory, name)
            if not os.path.isfile(path):
                continue
            files += 1
            size += os.path.getsize(path)
            if files > MAX_FILES or size > MAX_BYTES:
                raise TooLarge(root)
            digest.update(os.path.relpath(path, root).replace(os.sep, "/").encode() + b"\0")
            digest.update(_file_digest(path).encode() + b"\0")
    return digest.hexdigest()
