# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""airshipctl's ClusterMap document read as cluster hosts (fixture modelled on airshipctl's test site)."""

from __future__ import annotations

import os
import re

import pytest

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.airship.cluster_map import (
    hosts_from_cluster_map,
    parse_cluster_map_entry,
    read_cluster_maps,
)

PHASES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "fixtures", "airshipctl", "site", "phases")
PHASES = os.path.normpath(PHASES)
BUNDLE = {"sops": "/site/secrets/site-kubeconfig.enc.yaml"}
LABEL = "/site/phases/cluster-map.yaml document 1 (ClusterMap main-map)"


def read(document, bundle=None):
    hosts = hosts_from_cluster_map(document, label=LABEL, base_dir="/site/phases", bundle=bundle)
    return {host.name: host.host_vars() for host in hosts}


def cluster_map(**clusters):
    return {"apiVersion": "airshipit.org/v1alpha1", "kind": "ClusterMap", "metadata": {"name": "main-map"},
            "map": clusters}


def test_fixture_directory_reads_only_the_cluster_map():
    found = read_cluster_maps(PHASES)
    assert [label for _document, label, _path in found] == [f"{PHASES}/cluster-map.yaml document 1 (ClusterMap main-map)"]


def test_fixture_cluster_map_becomes_hosts_with_all_three_source_kinds():
    document, label, file_path = read_cluster_maps(PHASES)[0]
    hosts = hosts_from_cluster_map(document, label=label, base_dir=os.path.dirname(file_path), bundle=BUNDLE)
    assert [host.name for host in hosts] == ["ephemeral-cluster", "target-cluster"]
    assert hosts[0].host_vars() == {
        "ansible_connection": "local", "kube_context": "ephemeral-cluster", "kube_labels": {},
        "kube_kubeconfig": [{"path": "~/.airship/kubeconfig", "optional": True}, BUNDLE],
    }
    assert hosts[1].host_vars() == {
        "ansible_connection": "local", "kube_context": "target-cluster", "kube_labels": {},
        "kube_parent": "ephemeral-cluster",
        "kube_kubeconfig": [{"secret": {"name": "target-cluster-kubeconfig", "namespace": "default"},
                             "optional": True}, BUNDLE],
    }


FILESYSTEM = {"type": "filesystem", "filesystem": {"path": "kubeconfig", "contextName": "a"}}
CAPI = {"type": "clusterAPI", "clusterAPI": {"clusterNamespacedName": {"name": "b"}}}
SECRET_B = {"secret": {"name": "b-kubeconfig", "namespace": "default"}}


@pytest.mark.parametrize("clusters, bundle, expected", [
    ({"a": {"kubeconfigSources": [FILESYSTEM]}}, None,
     {"a": {"kube_kubeconfig": {"path": "/site/phases/kubeconfig"}, "kube_context": "a"}}),
    ({"a": {"kubeconfigSources": [{"type": "filesystem", "filesystem": {"path": "/abs/k:rel/k"}}]}}, None,
     {"a": {"kube_kubeconfig": {"path": "/abs/k:rel/k"}}}),
    ({"a": {}, "b": {"parent": "a", "kubeconfigSources": [CAPI]}}, None,
     {"a": {}, "b": {"kube_parent": "a", "kube_kubeconfig": SECRET_B}}),
    ({"a": None, "b": {"parent": "a", "dynamicKubeConf": True}}, None,
     {"a": {}, "b": {"kube_parent": "a", "kube_kubeconfig": SECRET_B}}),
    ({"a": {"kubeconfigSources": [{"type": "bundle", "bundle": {"contextName": "a"}}]}},
     [{"path": "/s/one.yaml"}, {"vault": "/s/two.yaml"}],
     {"a": {"kube_context": "a", "kube_kubeconfig": [
         {"path": "/s/one.yaml", "optional": True}, {"vault": "/s/two.yaml"}]}}),
    ({"a": {"kubeconfigSources": [FILESYSTEM, {"type": "bundle", "bundle": {}}]}}, "/s/site.yaml",
     {"a": {"kube_context": "a", "kube_kubeconfig": [
         {"path": "/site/phases/kubeconfig", "optional": True}, {"path": "/s/site.yaml"}]}}),
    ({"a": {"kubeconfigContext": "ctx-a", "dynamicKubeConf": False}}, None, {"a": {"kube_context": "ctx-a"}}),
    ({"a": {"kubeconfigSources": [{"type": "bundle", "bundle": {"contextName": "a"}}]}}, None,
     {"a": {"kube_context": "a", "kube_kubeconfig": {"bundle": "/site/phases"}}}),
    ({"a": {"kubeconfigSources": [FILESYSTEM, {"type": "bundle", "bundle": {"contextName": "a"}}]}},
     {"bundle": "/site/phases"},
     {"a": {"kube_context": "a", "kube_kubeconfig": [
         {"path": "/site/phases/kubeconfig", "optional": True}, {"bundle": "/site/phases"}]}}),
], ids=["filesystem-relative-to-the-map", "filesystem-path-list-kept", "cluster-api-secret-on-parent",
        "older-dynamic-kube-conf", "bundle-option-list-all-but-last-optional", "source-without-context-agrees",
        "older-kubeconfig-context", "bundle-defaults-to-the-maps-directory", "bundle-of-the-entry-path"])
def test_cluster_map_rules(clusters, bundle, expected):
    hosts = read(cluster_map(**clusters), bundle)
    assert {name: {key: value for key, value in host.items() if key not in ("ansible_connection", "kube_labels")}
            for name, host in hosts.items()} == expected


@pytest.mark.parametrize("clusters, message", [
    ({"a": [1]}, "field map.a: expected a mapping with parent"),
    ({"a": {"sources": []}}, "field map.a: unknown field.s. sources; expected parent, kubeconfigSources"),
    ({"a": {"kubeconfigSources": {"type": "bundle"}}}, "field map.a.kubeconfigSources: expected a list"),
    ({"a": {"kubeconfigSources": [{"type": "file"}]}},
     "field map.a.kubeconfigSources\\[0\\].type: unknown source type 'file'; expected one of filesystem"),
    ({"a": {"kubeconfigSources": [{"type": "filesystem", "filesystem": {"contextName": "a"}}]}},
     "field map.a.kubeconfigSources\\[0\\].filesystem.path: expected a kubeconfig file path"),
    ({"a": {"kubeconfigSources": [CAPI]}},
     "field map.a.kubeconfigSources\\[0\\].clusterAPI: a clusterAPI source reads .* set the cluster's parent"),
    ({"a": {"parent": "p", "kubeconfigSources": [{"type": "clusterAPI", "clusterAPI": {}}]}},
     "field map.a.kubeconfigSources\\[0\\].clusterAPI.clusterNamespacedName.name: expected the Cluster API "
     "Cluster's name"),
    ({"a": {"kubeconfigSources": [FILESYSTEM, {"type": "filesystem",
                                               "filesystem": {"path": "k", "contextName": "other"}}]}},
     "field map.a.kubeconfigSources: the sources name different contexts \\(a, other\\)"),
    ({"a": {"parent": 3}}, "field map.a.parent: expected the name of another cluster"),
    ({"a\0b": {}}, r"field map: cluster name 'a\\x00b' is not a usable inventory host name"),
], ids=["cluster-not-a-mapping", "unknown-cluster-field", "sources-not-a-list", "unknown-type", "filesystem-no-path",
        "cluster-api-without-parent", "cluster-api-without-name", "contexts-disagree",
        "parent-not-a-name", "name-nul"])
def test_bad_cluster_map_names_file_document_field(clusters, message):
    with pytest.raises(PhasekitError, match=f"^{re.escape(LABEL)} {message}"):
        read(cluster_map(**clusters))


def test_map_must_be_a_mapping():
    with pytest.raises(PhasekitError, match=f"^{re.escape(LABEL)} field map: expected a mapping of cluster names"):
        read({**cluster_map(), "map": ["a"]})


@pytest.mark.parametrize("raw, message", [
    (3, "expected a path or a mapping with path, bundle, got a number"),
    ({"bundle": "x"}, "'path' must be a file or directory"),
    ({"path": "p", "bundles": "x"}, "unknown field.s. bundles"),
    ({"path": "p", "bundle": {"content": {"clusters": []}}}, "field bundle, source 1: inline kubeconfig content"),
], ids=["not-a-mapping", "no-path", "unknown-field", "inline-content-refused"])
def test_bad_entry(raw, message):
    with pytest.raises(PhasekitError, match=f"^cfg: airship_cluster_map\\[1\\].*{message}"):
        parse_cluster_map_entry(raw, base_dir="/site", where="cfg: airship_cluster_map[1]")


def test_entry_paths_are_anchored_to_the_configuration_file():
    entry = parse_cluster_map_entry({"path": "phases", "bundle": {"sops": "s/k.enc.yaml"}}, base_dir="/site",
                                    where="cfg")
    assert entry == {"path": "/site/phases", "bundle": {"sops": "/site/s/k.enc.yaml"}}


@pytest.mark.parametrize("raw, bundle", [
    ("phases", {"bundle": "/site/phases"}),
    ({"path": "phases/cluster-map.yaml"}, {"bundle": "/site/phases/cluster-map.yaml"}),
    ({"path": "phases", "bundle": {"bundle": "docs", "name": "site"}}, {"bundle": "/site/docs", "name": "site"}),
], ids=["entry-path-is-the-bundle", "entry-file-is-the-bundle", "bundle-option-overrides"])
def test_bundle_sources_read_the_entrys_own_documents_unless_overridden(raw, bundle):
    assert parse_cluster_map_entry(raw, base_dir="/site", where="cfg")["bundle"] == bundle


def test_files_without_a_cluster_map_fail(tmp_path):
    (tmp_path / "kubeconfig.yaml").write_text("apiVersion: airshipit.org/v1alpha1\nkind: KubeConfig\n")
    with pytest.raises(PhasekitError, match="no ClusterMap document .airshipit.org/v1alpha1. in 1 file"):
        read_cluster_maps(str(tmp_path))
    with pytest.raises(PhasekitError, match="no such file or directory"):
        read_cluster_maps(str(tmp_path / "nope"))
