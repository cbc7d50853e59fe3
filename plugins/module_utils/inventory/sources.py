# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Sources of hosts another format brings to the ``phasekit.kube.clusters`` inventory plugin, registered here.

Each reads the entries of one option of the plugin's configuration; the plugin reads them after
``kubeconfigs`` and before ``site``, in the order they were registered.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ansible_collections.phasekit.kube.plugins.module_utils.formats import Registry


@dataclass(frozen=True)
class InventorySource:
    """``add_hosts(entry, base_dir=, where=, add=)`` adds the hosts of one entry of ``option`` (as written) with
    ``add`` (``ClusterMap.add``); its errors name ``where``."""

    option: str
    add_hosts: Callable[..., None]


_SOURCES = Registry()


def register_inventory_source(source: InventorySource) -> None:
    _SOURCES.add(source.option, source)


def inventory_sources() -> list[InventorySource]:
    return _SOURCES.entries()
