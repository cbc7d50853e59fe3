# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Merge kubeconfig documents with client-go's loading rules (tools/clientcmd/loader.go).

- For every named cluster, user, context and extension, the first document that
  defines the name wins the whole entry; later definitions are ignored, even
  their fields the first one lacks.
- The first non-empty current-context wins.
- ``preferences.colors`` is on when any document turns it on (client-go merges
  non-zero scalar fields); preference extensions are first-wins per name.
"""

from __future__ import annotations

from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.model import SECTIONS
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.model import Kubeconfig


def merge_kubeconfig(merged: Kubeconfig, later: Kubeconfig) -> None:
    """Fold ``later`` (a document read after everything in ``merged``) into ``merged``."""
    for section in SECTIONS:
        entries = merged.section(section)
        for name, entry in later.section(section).items():
            if name not in entries:
                entries[name] = entry
                merged.origins[(section, name)] = later.origins.get((section, name))
    if not merged.current_context:
        merged.current_context = later.current_context
    merged.colors = merged.colors or later.colors
    for name, value in later.extensions.items():
        merged.extensions.setdefault(name, value)
    for name, value in later.preference_extensions.items():
        merged.preference_extensions.setdefault(name, value)
