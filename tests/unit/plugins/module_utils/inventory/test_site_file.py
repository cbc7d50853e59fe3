# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
from __future__ import annotations

import pytest

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.inventory.cluster_map import ClusterHost
from ansible_collections.phasekit.kube.plugins.module_utils.inventory.site_file import (
    clusters_from_site,
    site_file_data,
)

SITE = "/site/clusters.yml"


def read(data):
    return [host.host_vars() | {"name": host.name} for host in clusters_from_site(data, path=SITE, base_dir="/site")]


def test_site_file_becomes_hosts_in_order():
    hosts = read({"clusters": {
        "ephemeral": {"kubeconfig": "kc/ephemeral.yaml", "context": "ephemeral", "labels": {"env": "dev"}},
        "target": {"parent": "ephemeral", "kubeconfig": {"secret": {"name": "target-kubeconfig"}},
                   "labels": {"tier": 1, "managed": True}, "vars": {"region": "eu"}},
        "bare": None,
    }})
    assert hosts == [
        {"name": "ephemeral", "ansible_connection": "local", "kube_kubeconfig": "/site/kc/ephemeral.yaml",
         "kube_context": "ephemeral", "kube_labels": {"env": "dev"}},
        {"name": "target", "ansible_connection": "local", "kube_kubeconfig": {"secret": {"name": "target-kubeconfig"}},
         "kube_parent": "ephemeral", "kube_labels": {"tier": "1", "managed": "true"}, "region": "eu"},
        {"name": "bare", "ansible_connection": "local", "kube_labels": {}},
    ]


@pytest.mark.parametrize("data, message", [
    ({"hosts": {}}, "single key 'clusters'; found hosts"),
    ([], "single key 'clusters'; found a list"),
    ({"clusters": ["a"]}, "'clusters' must map cluster names"),
    ({"clusters": {"a": "kc.yaml"}}, "clusters.a: expected a mapping with kubeconfig"),
    ({"clusters": {"a": {"kubeconfigs": "x"}}}, "clusters.a: unknown field.s. kubeconfigs; expected kubeconfig"),
    ({"clusters": {"a": {"parent": ""}}}, "clusters.a: 'parent' must be a non-empty string"),
    ({"clusters": {"a": {"labels": ["env"]}}}, "clusters.a, field labels: 'labels' must be a mapping"),
    ({"clusters": {"a": {"labels": {"env": ["x"]}}}}, "label 'env' must have a text value"),
    ({"clusters": {"a": {"vars": {"kube_context": "x"}}}}, "'vars' must not set kube_context: use the field 'context'"),
    ({"clusters": {"a": {"kubeconfig": {"content": "x"}}}}, "clusters.a, field kubeconfig, source 1: inline kubeconfig content"),
    ({"clusters": {1: {}}}, "cluster names must be non-empty strings"),
    ({"clusters": {"a\0b": {}}}, r"clusters: cluster name 'a\\x00b' is not a usable inventory host name"),
    ({"clusters": {"a\nb": {}}}, r"clusters: cluster name 'a\\nb' is not a usable inventory host name"),
    ({"clusters": {"a\x1b[31mb": {}}}, r"clusters: cluster name 'a\\x1b\[31mb' is not a usable"),
    ({"clusters": {"": {}}}, "clusters: cluster names must be non-empty strings, got ''"),
    ({"clusters": {"  ": {}}}, "clusters: cluster names must be non-empty strings, got '  '"),
], ids=["wrong-top-key", "not-a-mapping", "clusters-not-mapping", "entry-not-mapping", "unknown-field",
        "empty-parent", "labels-not-mapping", "label-value-not-text", "contract-var-in-vars", "content-refused",
        "name-not-string", "name-nul", "name-newline", "name-escape-sequence", "name-empty", "name-blank"])
def test_bad_site_files_name_file_and_field(data, message):
    with pytest.raises(PhasekitError, match=f"^{SITE}: .*{message}"):
        clusters_from_site(data, path=SITE, base_dir="/site")


def test_site_file_data_reads_back_to_the_same_hosts():
    hosts = [
        ClusterHost(name="ephemeral", kubeconfig=[{"path": "/site/kc/e.yaml", "optional": True},
                                                  {"sops": "/site/secrets/e.enc.yaml"}], context="ephemeral"),
        ClusterHost(name="target", kubeconfig={"secret": {"name": "target-kubeconfig"}}, parent="ephemeral",
                    cluster="target", labels={"env": "dev"}, extra_vars={"region": "eu"}),
        ClusterHost(name="bare"),
    ]
    data = site_file_data(hosts, base_dir="/site/inventory")
    assert data["clusters"]["ephemeral"]["kubeconfig"] == [{"path": "../kc/e.yaml", "optional": True},
                                                           {"sops": "../secrets/e.enc.yaml"}]
    assert data["clusters"]["bare"] == {}
    again = clusters_from_site(data, path="/site/inventory/clusters.yml", base_dir="/site/inventory")
    assert [host.host_vars() for host in again] == [host.host_vars() for host in hosts]
