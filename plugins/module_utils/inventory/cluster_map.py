# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The cluster map: one entry per cluster, becoming one inventory host each.

Sources (kubeconfig files, site files, Cluster API discovery) each produce
``ClusterHost`` entries; ``ClusterMap`` merges them in source order and answers
what the inventory needs: host variables and group memberships.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError

PARENT_GROUP_PREFIX = "children_of_"
LABEL_GROUP_PREFIX = "label_"


@dataclass
class ClusterHost:
    """One cluster as an inventory host. ``None`` means "not said by this source"."""

    name: str
    kubeconfig: object = None          # kubeconfig sources reference (never kubeconfig data)
    context: str | None = None
    parent: str | None = None
    cluster: str | None = None         # optional assertion: the context must use this cluster
    labels: dict = field(default_factory=dict)
    extra_vars: dict = field(default_factory=dict)
    origin: str = ""                   # which source said so, for error messages

    def merged_with(self, later: ClusterHost) -> ClusterHost:
        """This entry updated by a later source: fields it sets win, labels and vars merge."""
        def pick(attr):
            value = getattr(later, attr)
            return getattr(self, attr) if value is None else value

        return ClusterHost(
            name=self.name,
            kubeconfig=pick("kubeconfig"),
            context=pick("context"),
            parent=pick("parent"),
            cluster=pick("cluster"),
            labels={**self.labels, **later.labels},
            extra_vars={**self.extra_vars, **later.extra_vars},
            origin=f"{self.origin}, {later.origin}" if later.origin and later.origin != self.origin else self.origin,
        )

    def host_vars(self) -> dict:
        """The host variables of the inventory contract (secrets-free: references only)."""
        variables = dict(self.extra_vars)
        variables["ansible_connection"] = "local"
        if self.kubeconfig is not None:
            variables["kube_kubeconfig"] = self.kubeconfig
        if self.context is not None:
            variables["kube_context"] = self.context
        if self.parent is not None:
            variables["kube_parent"] = self.parent
        if self.cluster is not None:
            variables["kube_cluster"] = self.cluster
        variables["kube_labels"] = dict(self.labels)
        return variables

    def to_data(self) -> dict:
        """Plain data for the inventory cache."""
        return {"name": self.name, "kubeconfig": self.kubeconfig, "context": self.context, "parent": self.parent,
                "cluster": self.cluster, "labels": self.labels, "extra_vars": self.extra_vars,
                "origin": self.origin}

    @classmethod
    def from_data(cls, data: dict) -> ClusterHost:
        return cls(**data)


class ClusterMap:
    """Cluster hosts by name, in the order sources first named them."""

    def __init__(self, hosts: list[ClusterHost] | None = None):
        self._hosts: dict[str, ClusterHost] = {}
        for host in hosts or ():
            self.add(host)

    def add(self, host: ClusterHost):
        """Add a host, or merge it into the entry an earlier source made for the same name."""
        known = self._hosts.get(host.name)
        self._hosts[host.name] = known.merged_with(host) if known else host

    def __contains__(self, name: str) -> bool:
        return name in self._hosts

    def __getitem__(self, name: str) -> ClusterHost:
        return self._hosts[name]

    def __iter__(self):
        return iter(self._hosts.values())

    def __len__(self):
        return len(self._hosts)

    def names(self) -> list[str]:
        return list(self._hosts)

    def to_data(self) -> list[dict]:
        return [host.to_data() for host in self]

    @classmethod
    def from_data(cls, data: list[dict]) -> ClusterMap:
        return cls([ClusterHost.from_data(item) for item in data])

    def check_parents(self) -> list[str]:
        """Fail on a parent cycle; return warnings for parents this map does not define.

        An unknown parent is a warning, not an error: it may come from another
        inventory source given to the same run.
        """
        for host in self:
            chain = [host.name]
            parent = host.parent
            while parent is not None and parent in self._hosts:
                if parent in chain:
                    loop = " -> ".join(chain[chain.index(parent):] + [parent])
                    raise PhasekitError(f"parent cycle: {loop}; a cluster cannot be its own ancestor",
                                        where=f"cluster {host.name} ({host.origin})")
                chain.append(parent)
                parent = self._hosts[parent].parent
        return [f"cluster {host.name} ({host.origin}): parent {host.parent!r} is not a cluster of this "
                f"inventory source; known: {', '.join(self.names())}"
                for host in self if host.parent is not None and host.parent not in self._hosts]


def host_groups(host: ClusterHost, *, parent_groups: bool = True, label_patterns: list[str] | tuple = ("*",),
                parent_prefix: str = PARENT_GROUP_PREFIX, label_prefix: str = LABEL_GROUP_PREFIX) -> list[str]:
    """The groups a cluster host belongs to: its parent's children group and one per matching label.

    ``label_patterns`` are shell patterns of label keys that make groups (``[]``: none). Names are
    raw; the inventory plugin makes them safe with Ansible's own rule, as for keyed groups.
    """
    groups = []
    if parent_groups and host.parent:
        groups.append(f"{parent_prefix}{host.parent}")
    for key, value in host.labels.items():
        if any(fnmatch.fnmatchcase(key, pattern) for pattern in label_patterns):
            groups.append(f"{label_prefix}{key}_{value}")
    return groups
