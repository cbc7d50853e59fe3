# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
from __future__ import annotations

import pytest

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.inventory.cluster_map import (
    ClusterHost,
    ClusterMap,
    host_groups,
)


def test_host_vars_follow_the_contract():
    host = ClusterHost("target", kubeconfig={"secret": {"name": "target-kubeconfig"}}, context="target-admin",
                       parent="ephemeral", labels={"env": "dev"}, extra_vars={"region": "eu"})
    assert host.host_vars() == {
        "ansible_connection": "local", "kube_kubeconfig": {"secret": {"name": "target-kubeconfig"}},
        "kube_context": "target-admin", "kube_parent": "ephemeral", "kube_labels": {"env": "dev"}, "region": "eu"}


def test_unset_fields_are_not_host_vars():
    assert ClusterHost("bare").host_vars() == {"ansible_connection": "local", "kube_labels": {}}


@pytest.mark.parametrize("earlier, later, expected", [
    (ClusterHost("a", kubeconfig="/k", context="a"), ClusterHost("a", parent="m"),
     {"kube_kubeconfig": "/k", "kube_context": "a", "kube_parent": "m"}),
    (ClusterHost("a", kubeconfig="/k", context="a"), ClusterHost("a", kubeconfig="/other"),
     {"kube_kubeconfig": "/other", "kube_context": "a"}),
    (ClusterHost("a", labels={"env": "dev", "tier": "1"}), ClusterHost("a", labels={"env": "prod"}),
     {"kube_labels": {"env": "prod", "tier": "1"}}),
], ids=["later-adds-fields", "later-set-field-wins", "labels-merge-later-wins"])
def test_same_host_from_two_sources_merges(earlier, later, expected):
    merged = ClusterMap([earlier, later])
    assert len(merged) == 1
    host_vars = merged["a"].host_vars()
    assert {key: host_vars[key] for key in expected} == expected


def test_order_is_first_mention():
    cluster_map = ClusterMap([ClusterHost("b"), ClusterHost("a"), ClusterHost("b", parent="a")])
    assert cluster_map.names() == ["b", "a"]


def test_cache_round_trip():
    cluster_map = ClusterMap([ClusterHost("a", kubeconfig=[{"path": "/k"}], labels={"x": "y"}, origin="f")])
    assert ClusterMap.from_data(cluster_map.to_data()).to_data() == cluster_map.to_data()


@pytest.mark.parametrize("hosts, message", [
    ([ClusterHost("a", parent="a")], "parent cycle: a -> a"),
    ([ClusterHost("a", parent="b"), ClusterHost("b", parent="c"), ClusterHost("c", parent="a")],
     "parent cycle: a -> b -> c -> a"),
], ids=["self-parent", "three-cycle"])
def test_parent_cycles_fail(hosts, message):
    with pytest.raises(PhasekitError, match=message):
        ClusterMap(hosts).check_parents()


def test_unknown_parent_is_a_warning_naming_known_hosts():
    warnings = ClusterMap([ClusterHost("a", parent="mgmt", origin="site.yml: clusters.a"), ClusterHost("b")]).check_parents()
    assert warnings == ["cluster a (site.yml: clusters.a): parent 'mgmt' is not a cluster of this inventory source; "
                        "known: a, b"]


@pytest.mark.parametrize("host, options, expected", [
    (ClusterHost("t", parent="ephemeral"), {}, ["children_of_ephemeral"]),
    (ClusterHost("t", parent="mgmt-eu.1"), {}, ["children_of_mgmt-eu.1"]),
    (ClusterHost("t", parent="m"), {"parent_groups": False}, []),
    (ClusterHost("t", labels={"env": "prod", "topology.cluster.x-k8s.io/owned": ""}), {},
     ["label_env_prod", "label_topology.cluster.x-k8s.io/owned_"]),
    (ClusterHost("t", labels={"env": "prod", "tier": "web"}), {"label_patterns": ["env"]}, ["label_env_prod"]),
    (ClusterHost("t", labels={"env": "prod"}), {"label_patterns": []}, []),
], ids=["parent-group", "parent-group-raw-name", "parent-groups-off", "label-groups-raw-name",
        "label-patterns-filter", "label-groups-off"])
def test_host_groups(host, options, expected):
    assert host_groups(host, **options) == expected
