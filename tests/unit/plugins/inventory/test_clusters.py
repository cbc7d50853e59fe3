# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The clusters inventory plugin with kubeconfig files and site files (no cluster needed)."""

from __future__ import annotations

import os
import textwrap

import pytest
import yaml
from ansible.errors import AnsibleParserError
from ansible.inventory.data import InventoryData
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import inventory_loader

KUBECONFIG = {
    "apiVersion": "v1", "kind": "Config", "current-context": "prod-eu",
    "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
    "users": [{"name": "u", "user": {"token": "s3cr3t-token-value"}}],
    "contexts": [{"name": n, "context": {"cluster": "c", "user": "u"}} for n in ("prod-eu", "prod-us", "dev")],
}


@pytest.fixture()
def build(tmp_path):
    """Parse a config (and files next to it) with the plugin; return the InventoryData."""

    def run(config: str, files: dict | None = None, name: str = "fleet.clusters.yml"):
        (tmp_path / "kc.yaml").write_text(yaml.safe_dump(KUBECONFIG))
        for rel, text in (files or {}).items():
            (tmp_path / rel).write_text(textwrap.dedent(text))
        path = tmp_path / name
        path.write_text(textwrap.dedent(config))
        plugin = inventory_loader.get("phasekit.kube.clusters")
        assert plugin.verify_file(str(path))
        inventory = InventoryData()
        plugin.parse(inventory, DataLoader(), str(path), cache=False)
        return inventory

    return run


def host_vars(inventory, name):
    return {key: value for key, value in inventory.get_host(name).get_vars().items()
            if key not in ("inventory_file", "inventory_dir", "inventory_hostname", "inventory_hostname_short",
                           "group_names")}


def members(inventory, group):
    return sorted(host.name for host in inventory.groups[group].get_hosts()) if group in inventory.groups else []


@pytest.mark.parametrize("name, accepted", [
    ("fleet.clusters.yml", True), ("fleet.clusters.yaml", True), ("fleet.yml", False), ("clusters.yml", False),
], ids=["yml", "yaml", "other-yaml", "no-prefix"])
def test_verify_file_wants_clusters_suffix(tmp_path, name, accepted):
    path = tmp_path / name
    path.write_text("plugin: phasekit.kube.clusters\n")
    assert inventory_loader.get("phasekit.kube.clusters").verify_file(str(path)) is accepted


def test_contexts_then_site_file_merge(build, tmp_path):
    inventory = build("""\
        plugin: phasekit.kube.clusters
        kubeconfigs:
          - path: kc.yaml
            contexts: ['prod-*']
            host_names: {prod-us: us}
        site: [site.yml]
        label_groups: [env]
        """, files={"site.yml": """\
        clusters:
          mgmt: {kubeconfig: mgmt.yaml, labels: {env: ops}}
          prod-eu: {parent: mgmt, labels: {env: prod, tier: edge}}
        """})
    assert sorted(inventory.hosts) == ["mgmt", "prod-eu", "us"]
    assert host_vars(inventory, "prod-eu") == {
        "ansible_connection": "local", "kube_kubeconfig": str(tmp_path / "kc.yaml"), "kube_context": "prod-eu",
        "kube_parent": "mgmt", "kube_labels": {"env": "prod", "tier": "edge"}}
    assert host_vars(inventory, "us")["kube_context"] == "prod-us"
    assert host_vars(inventory, "mgmt")["kube_kubeconfig"] == str(tmp_path / "mgmt.yaml")
    assert members(inventory, "children_of_mgmt") == ["prod-eu"]
    assert members(inventory, "label_env_prod") == ["prod-eu"]
    assert "label_tier_edge" not in inventory.groups


def test_group_names_are_made_safe(build):
    inventory = build("""\
        plugin: phasekit.kube.clusters
        site: [site.yml]
        """, files={"site.yml": "clusters: {a: {parent: mgmt-eu.1, labels: {topology.cluster.x-k8s.io/owned: ''}}}"})
    assert members(inventory, "children_of_mgmt_eu_1") == ["a"]
    assert members(inventory, "label_topology_cluster_x_k8s_io_owned_") == ["a"]


def test_no_kubeconfig_data_reaches_host_vars(build):
    inventory = build("plugin: phasekit.kube.clusters\nkubeconfigs: [kc.yaml]\n")
    assert "s3cr3t-token-value" not in repr({name: host_vars(inventory, name) for name in inventory.hosts})


def test_env_source_lists_contexts_now_and_is_kept_as_reference(build, tmp_path, monkeypatch):
    monkeypatch.setenv("FLEET_KUBECONFIG", f"{tmp_path / 'missing.yaml'}:{tmp_path / 'kc.yaml'}")
    inventory = build("plugin: phasekit.kube.clusters\nkubeconfigs: [{env: FLEET_KUBECONFIG, contexts: dev}]\n")
    assert host_vars(inventory, "dev")["kube_kubeconfig"] == {"env": "FLEET_KUBECONFIG"}


def test_constructed_options_apply(build):
    inventory = build("""\
        plugin: phasekit.kube.clusters
        kubeconfigs: [kc.yaml]
        compose:
          region: kube_context.split('-')[-1]
        groups:
          production: kube_context.startswith('prod')
        keyed_groups:
          - key: region
            prefix: region
        """)
    assert members(inventory, "production") == ["prod-eu", "prod-us"]
    assert members(inventory, "region_eu") == ["prod-eu"]
    assert host_vars(inventory, "dev")["region"] == "dev"


AIRSHIP_PHASES = os.path.normpath(
    os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "airshipctl", "site", "phases"))


def test_airship_cluster_map_then_site_file(build, tmp_path):
    """airshipctl's ClusterMap makes the hosts; a site file read later adds labels and may replace fields."""
    inventory = build(f"""\
        plugin: phasekit.kube.clusters
        airship_cluster_map:
          - path: {AIRSHIP_PHASES}
            bundle: {{sops: secrets/site.enc.yaml}}
        site: [site.yml]
        """, files={"site.yml": "clusters: {target-cluster: {labels: {env: dev}}}"})
    assert sorted(inventory.hosts) == ["ephemeral-cluster", "target-cluster"]
    bundle = {"sops": str(tmp_path / "secrets" / "site.enc.yaml")}
    assert host_vars(inventory, "ephemeral-cluster") == {
        "ansible_connection": "local", "kube_context": "ephemeral-cluster", "kube_labels": {},
        "kube_kubeconfig": [{"path": "~/.airship/kubeconfig", "optional": True}, bundle]}
    assert host_vars(inventory, "target-cluster") == {
        "ansible_connection": "local", "kube_context": "target-cluster", "kube_parent": "ephemeral-cluster",
        "kube_labels": {"env": "dev"},
        "kube_kubeconfig": [{"secret": {"name": "target-cluster-kubeconfig", "namespace": "default"},
                             "optional": True}, bundle]}
    assert members(inventory, "children_of_ephemeral_cluster") == ["target-cluster"]


def test_airship_cluster_map_reads_no_kubeconfig_document(build, tmp_path):
    """The KubeConfig document beside the map (here with a credential) is neither read into hosts nor decrypted."""
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "documents.yaml").write_text(textwrap.dedent("""\
        apiVersion: airshipit.org/v1alpha1
        kind: ClusterMap
        metadata: {name: main-map}
        map:
          lab: {kubeconfigSources: [{type: bundle, bundle: {contextName: lab}}]}
        ---
        apiVersion: airshipit.org/v1alpha1
        kind: KubeConfig
        metadata: {name: default}
        config: {users: [{name: u, user: {token: s3cr3t-token-value}}]}
        """))
    inventory = build("plugin: phasekit.kube.clusters\nairship_cluster_map: [{path: site, bundle: lab.yaml}]\n")
    assert host_vars(inventory, "lab")["kube_kubeconfig"] == {"path": str(tmp_path / "lab.yaml")}
    assert "s3cr3t-token-value" not in repr(host_vars(inventory, "lab"))


def test_airship_bundle_source_defaults_to_the_cluster_maps_own_documents(build):
    """Without a bundle option, airshipctl's bundle sources read the KubeConfig document among the documents the
    entry names, when a play needs the cluster: the inventory holds the reference only."""
    inventory = build(f"plugin: phasekit.kube.clusters\nairship_cluster_map: [{AIRSHIP_PHASES}]\n")
    assert host_vars(inventory, "ephemeral-cluster")["kube_kubeconfig"] == [
        {"path": "~/.airship/kubeconfig", "optional": True}, {"bundle": AIRSHIP_PHASES}]
    assert host_vars(inventory, "target-cluster")["kube_kubeconfig"][-1] == {"bundle": AIRSHIP_PHASES}
    assert "10.23.25.102" not in repr([host_vars(inventory, name) for name in inventory.hosts])


@pytest.mark.parametrize("config, files, message", [
    ("site: [site.yml]", {"site.yml": "clusters: {a: {parent: b}, b: {parent: a}}"}, "parent cycle: a -> b -> a"),
    ("airship_cluster_map: [{path: nowhere}]", {}, "airship_cluster_map[1]: "),
    ("site: [site.yml]", {"site.yml": "hosts: {}"}, "site.yml: a site file is a mapping with the single key"),
    ("cluster_api: [{host: mgmt}]", {}, "management host 'mgmt' is not defined"),
    ("kubeconfigs: [{path: kc.yaml, env: X}]", {}, "kubeconfigs[1]: give exactly one of 'path'"),
    ("kubeconfigs: [bad.yaml]", {"bad.yaml": "contexts: [\n"},
     "kubeconfigs[1]: kubeconfig source 1 (path: "),
], ids=["parent-cycle", "airship-no-such-path", "bad-site-file",
        "unknown-management-host", "bad-kubeconfigs-entry", "malformed-kubeconfig"])
def test_errors_name_the_file_and_field(build, config, files, message):
    with pytest.raises(AnsibleParserError) as err:
        build(f"plugin: phasekit.kube.clusters\n{config}\n", files=files)
    assert message in str(err.value)
