"""Make `ansible_collections.phasekit.kube` importable from this working tree.

The collection lives at the repository root; tests import it by its real
name through Ansible's own collection finder, over a symlinked tree kept in
the cache directory (outside the repository).
"""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
COLLECTIONS = Path(os.environ.get("PHASEKIT_CACHE", Path.home() / ".cache/phasekit")) / "collections" / REPO.name


def _collections_root() -> Path:
    link = COLLECTIONS / "ansible_collections" / "phasekit" / "kube"
    if not (link.is_symlink() and link.resolve() == REPO):
        link.parent.mkdir(parents=True, exist_ok=True)
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(REPO)
    return COLLECTIONS


def _install_collection_finder():
    from ansible.utils.collection_loader._collection_finder import _AnsibleCollectionFinder

    finder = _AnsibleCollectionFinder(paths=[str(_collections_root())])
    finder._install()  # pylint: disable=protected-access


_install_collection_finder()


def pytest_configure(config):
    """The markers that pick the integration tests each part of CI runs (see the Makefile)."""
    for line in (
        "smoke: the integration tests every ansible-core line runs (the full set runs on 2.19 and the newest)",
        "k8s_matrix: the integration tests that also run against clusters of the oldest Kubernetes version",
        "ee: runs a job in the execution environment image (make ee-test), not in the plain integration run",
        "first_full_line: the slowest files (the hostile set, airshipctl's published site, rollouts over a fleet, "
        "control-plane faults, teardown, the demo), run on the first full line (2.19) only: they exercise no "
        "version-specific code and would add about fifteen minutes to CI's budget on the newest line",
    ):
        config.addinivalue_line("markers", line)
