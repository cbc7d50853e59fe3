# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Each host is its own cluster: hosts of one phase that reach one cluster and one namespace are refused together.

One cluster = one inventory host. Hosts that name no context all fall to the
kubeconfig's current-context, and a cluster reached by two names is still one
cluster: a phase on such hosts would apply their objects into one namespace,
where they overwrite and prune each other, and the summary would show as many
clusters changed as there are hosts. So before a phase writes, the hosts it
runs on are grouped by default namespace and cluster identity
(``kube.identity``), and a group of two or more refuses the whole phase,
naming the hosts, the cluster, the namespace and which setting chose each
host's context. Hosts on one cluster in different namespaces (a context per
tenant) are distinct. ``plan_allow_shared_cluster`` allows it for those who
mean it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ansible_collections.phasekit.kube.plugins.module_utils.kube.identity import ClusterIdentity

ALLOW_VARIABLE = "plan_allow_shared_cluster"
ALLOW_OPTION = "allow_shared_cluster"
SHOWN_HOSTS = 10  # hosts a refusal details per group; the rest are counted


@dataclass(frozen=True)
class HostTarget:
    """Where one host of a phase writes: its cluster, its default namespace, and how its context was chosen."""

    host: str
    identity: ClusterIdentity
    namespace: str
    context: str
    context_from: str


@dataclass(frozen=True)
class SharedCluster:
    """Hosts of one phase that reach one cluster and one namespace (two or more, in the phase's host order)."""

    targets: tuple

    @property
    def hosts(self) -> list[str]:
        return [target.host for target in self.targets]

    @property
    def namespace(self) -> str:
        return self.targets[0].namespace

    @property
    def identity(self) -> ClusterIdentity:
        # one with a uid when any has one: the strongest evidence names the cluster
        return next((target.identity for target in self.targets if target.identity.uid), self.targets[0].identity)


def shared_clusters(targets: list[HostTarget]) -> list[SharedCluster]:
    """The groups of two or more hosts that reach one cluster (``ClusterIdentity.same_cluster``) in one
    namespace, in the order of their first host."""
    by_namespace: dict[str, list[HostTarget]] = {}
    for target in targets:
        by_namespace.setdefault(target.namespace, []).append(target)
    groups = []
    for members in by_namespace.values():
        groups.extend(_connected(members))
    order = {target.host: position for position, target in enumerate(targets)}
    return sorted(groups, key=lambda group: order[group.targets[0].host])


def _connected(members: list[HostTarget]) -> list[SharedCluster]:
    """Hosts joined by ``same_cluster``, transitively (an address-only identity may join two UIDs' hosts)."""
    leader = list(range(len(members)))

    def root(index: int) -> int:
        while leader[index] != index:
            leader[index] = leader[leader[index]]
            index = leader[index]
        return index

    for first, one in enumerate(members):
        for second in range(first + 1, len(members)):
            if one.identity.same_cluster(members[second].identity):
                leader[root(second)] = root(first)
    joined: dict[int, list[HostTarget]] = {}
    for index, member in enumerate(members):
        joined.setdefault(root(index), []).append(member)
    return [SharedCluster(tuple(group)) for group in joined.values() if len(group) > 1]


def shared_cluster_refusal(phase: str, targets: list[HostTarget], allow_shared: bool = False) -> str | None:
    """Why ``phase`` must not run on these hosts (None: they are distinct clusters or namespaces, or the user
    allowed hosts to share one)."""
    if allow_shared:
        return None
    groups = shared_clusters(targets)
    if not groups:
        return None
    return (f"phase {phase} refused before anything was written: "
            + "; ".join(_group_text(group) for group in groups)
            + ". One cluster is one inventory host: their objects would overwrite and prune each other there. Give "
              "each host its own cluster or namespace (kube_context, a context with its own namespace), or set "
              f"{ALLOW_VARIABLE}: true (run_phases option {ALLOW_OPTION}) if they are meant to share it")


def _group_text(group: SharedCluster) -> str:
    shown = group.targets[:SHOWN_HOSTS]
    rest = len(group.targets) - len(shown)
    # "host var kube_context of a" says nothing more after "a (": the host's own name is dropped there
    how = ", ".join(f"{target.host} (context {target.context} from {target.context_from.removesuffix(' of ' + target.host)})"
                    for target in shown)
    more = f" and {rest} more" if rest else ""
    return f"hosts {how}{more} are one cluster ({_cluster_text(group)}) and one namespace ({group.namespace})"


def _cluster_text(group: SharedCluster) -> str:
    """The cluster, and which hosts were compared by address only, and why (their user may not read kube-system)."""
    identity = group.identity
    if not identity.uid:
        return identity.label()
    by_address = [target for target in group.targets if not target.identity.uid]
    if not by_address:
        return identity.label()
    hosts = ", ".join(target.host for target in by_address[:SHOWN_HOSTS])
    return (f"{identity.label()}; {hosts} compared by address {by_address[0].identity.server}: "
            f"{by_address[0].identity.unread}")
