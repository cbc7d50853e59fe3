# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
from __future__ import annotations

import pytest

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.inventory.cluster_api import (
    cluster_summary,
    hosts_from_cluster_objects,
    parse_cluster_api_entry,
)


def cluster(name, namespace="default", labels=None, status=None, spec=None):
    return {"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
            "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
            "spec": spec or {}, "status": status or {}}


def test_entry_defaults():
    assert parse_cluster_api_entry({"host": "mgmt"}, where="w") == {
        "host": "mgmt", "namespaces": [], "label_selector": "", "version": "v1beta1", "host_name": "{name}",
        "labels": {}, "cluster_labels": True, "timeout": 30}


@pytest.mark.parametrize("entry, message", [
    ({}, "'host' must name the management cluster"),
    ({"host": "m", "namespace": "x"}, "unknown field.s. namespace"),
    ({"host": "m", "host_name": "{cluster}"}, "'host_name' must be a format string using only"),
    ({"host": "m", "timeout": 0}, "'timeout' must be a positive number"),
    ({"host": "m", "namespaces": [""]}, "'namespaces' must be a list"),
], ids=["no-host", "unknown-field", "bad-host-name-key", "bad-timeout", "empty-namespace"])
def test_bad_entries(entry, message):
    with pytest.raises(PhasekitError, match=f"^w: .*{message}"):
        parse_cluster_api_entry(entry, where="w")


def test_each_cluster_is_a_child_whose_kubeconfig_is_its_secret_on_the_parent():
    entry = parse_cluster_api_entry({"host": "mgmt", "labels": {"provisioner": "capi"}}, where="w")
    hosts = hosts_from_cluster_objects([
        cluster("work-1", "fleet", labels={"env": "prod"},
                status={"phase": "Provisioned", "infrastructureReady": True, "controlPlaneReady": True},
                spec={"topology": {"version": "v1.34.4"}}),
    ], entry, origin="w")
    assert [host.host_vars() for host in hosts] == [{
        "ansible_connection": "local",
        "kube_kubeconfig": {"secret": {"host": "mgmt", "name": "work-1-kubeconfig", "namespace": "fleet"}},
        "kube_parent": "mgmt",
        "kube_labels": {"env": "prod", "provisioner": "capi"},
        "kube_cluster_api": {"name": "work-1", "namespace": "fleet", "phase": "Provisioned",
                             "infrastructure_ready": True, "control_plane_ready": True, "version": "v1.34.4",
                             "deleting": False},
    }]
    assert hosts[0].name == "work-1"


@pytest.mark.parametrize("options, names", [
    ({}, None),
    ({"host_name": "{namespace}-{name}"}, ["a-w", "b-w"]),
], ids=["same-name-in-two-namespaces-fails", "host-name-format-separates-them"])
def test_host_names(options, names):
    entry = parse_cluster_api_entry({"host": "mgmt", **options}, where="w")
    objects = [cluster("w", "a"), cluster("w", "b")]
    if names is None:
        with pytest.raises(PhasekitError, match="Clusters a/w and b/w both become host 'w'"):
            hosts_from_cluster_objects(objects, entry, origin="w")
    else:
        assert [h.name for h in hosts_from_cluster_objects(objects, entry, origin="w")] == names


def test_cluster_labels_can_be_left_out():
    entry = parse_cluster_api_entry({"host": "mgmt", "cluster_labels": False}, where="w")
    assert hosts_from_cluster_objects([cluster("w", labels={"x": "y"})], entry, origin="w")[0].labels == {}


def test_summary_reads_v1beta2_status():
    summary = cluster_summary(cluster("w", status={"phase": "Provisioned", "initialization": {
        "infrastructureProvisioned": True, "controlPlaneInitialized": True}}))
    assert summary["infrastructure_ready"] and summary["control_plane_ready"]
