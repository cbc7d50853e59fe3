# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The inventory as phases see it: which hosts (clusters) a host or group name stands for."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable


@dataclass
class Inventory:
    """Host and group names of the inventory; ``kube_parent`` and whether ``kube_kubeconfig`` is set (when asked)."""

    groups: dict[str, list[str]]
    parent_of: Callable[[str], str | None] = field(default=lambda host: None)
    has_kubeconfig: Callable[[str], bool] = field(default=lambda host: True)
    # a slice of a sliced run: its share of the hosts, so a host or group of another slice is missing or empty here
    sliced: bool = False

    @classmethod
    def from_task_vars(cls, task_vars: dict, sliced: bool = False) -> Inventory:
        """The whole inventory (not only the play's hosts), as Ansible hands it to a task."""
        groups = {str(name): [str(host) for host in hosts] for name, hosts in (task_vars.get("groups") or {}).items()}
        hostvars = task_vars.get("hostvars") or {}

        def parent_of(host: str) -> str | None:
            # Only this one variable of this one host is templated: no kubeconfig source is touched.
            try:
                parent = hostvars[host].get("kube_parent")
            except KeyError:
                return None
            return str(parent) if parent else None

        def has_kubeconfig(host: str) -> bool:
            # A membership test: the value is not templated, nothing is read or decrypted.
            try:
                return "kube_kubeconfig" in hostvars[host]
            except KeyError:
                return False

        return cls(groups=groups, parent_of=parent_of, has_kubeconfig=has_kubeconfig, sliced=sliced)

    @property
    def hosts(self) -> list[str]:
        return list(self.groups.get("all", []))

    def hosts_for(self, name: str) -> list[str] | None:
        """Hosts a cluster name stands for: a group's hosts, or the host itself; ``None`` if unknown."""
        if name in self.groups:
            return list(self.groups[name])
        if name in self.hosts:
            return [name]
        return None

    def names(self) -> list[str]:
        """Every host and group name (for suggestions in messages)."""
        return [*self.hosts, *(group for group in self.groups if group not in ("all", "ungrouped"))]
