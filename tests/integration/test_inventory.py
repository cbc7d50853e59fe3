# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The phasekit.kube.clusters inventory plugin against the local clusters.

Each source kind builds an inventory through ``ansible-inventory``: kubeconfig
files, a site file, and Cluster API discovery with a real ``Cluster`` CRD,
``Cluster`` objects and their ``<name>-kubeconfig`` Secrets on the ``ephemeral``
cluster (the Secrets hold a flattened kubeconfig of ``target``).
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from conftest import holding_the_cluster_api_objects

VENV_BIN = Path(sys.executable).parent
CAPI_NAMESPACE = "phasekit-capi"
CAPI_CLUSTERS = {"work-a": {"env": "prod", "region": "eu"}, "work-b": {"env": "dev", "region": "us"}}

CLUSTER_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "clusters.cluster.x-k8s.io"},
    "spec": {
        "group": "cluster.x-k8s.io",
        "names": {"kind": "Cluster", "listKind": "ClusterList", "plural": "clusters", "singular": "cluster"},
        "scope": "Namespaced",
        "versions": [{"name": "v1beta1", "served": True, "storage": True, "subresources": {"status": {}},
                      "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}],
    },
}


def secret_strings(clusters_root: Path) -> list[str]:
    """Distinctive pieces of every credential of the local clusters, raw and base64 (as in *-data fields)."""
    pieces = []
    for pki in clusters_root.glob("*/pki"):
        pieces.append((pki / "limited.token").read_text().strip())
        for path in [*pki.glob("*.key"), pki / "admin.crt"]:
            text = path.read_text()
            body = "".join(line for line in text.splitlines() if not line.startswith("-----"))
            encoded = base64.b64encode(text.encode()).decode()
            pieces += [body[len(body) // 2:len(body) // 2 + 40], encoded[len(encoded) // 2:len(encoded) // 2 + 40]]
    return pieces


def leaked(text: str, secrets: list[str]) -> list[str]:
    return [secret[:8] + "..." for secret in secrets if secret in text]


@pytest.fixture(scope="module")
def secrets(clusters) -> list[str]:
    return secret_strings(clusters["ephemeral"].dir.parent)


@pytest.fixture(scope="module")
def target_kubeconfig_flat(clusters) -> str:
    """A self-contained kubeconfig of target (what Cluster API writes into <name>-kubeconfig)."""
    return clusters["target"].kubectl("config", "view", "--raw", "--flatten", "--minify").stdout


@pytest.fixture(scope="module")
def capi(clusters, target_kubeconfig_flat):
    """The Cluster CRD, two Clusters and their kubeconfig Secrets on ephemeral (server-side applied), held from the
    first test that uses them to the module's end and then removed: the airshipctl published site defines the same
    CRD on the same cluster."""
    with holding_the_cluster_api_objects():
        yield applied_capi(clusters["ephemeral"], target_kubeconfig_flat)
        clusters["ephemeral"].kubectl("delete", "namespace", CAPI_NAMESPACE, "--ignore-not-found", "--timeout=180s")
        clusters["ephemeral"].kubectl("delete", "crd", CLUSTER_CRD["metadata"]["name"], "--ignore-not-found",
                                      "--timeout=180s")


def applied_capi(mgmt, target_kubeconfig_flat):
    mgmt.kubectl("apply", "--server-side", "-f", "-", stdin=json.dumps(CLUSTER_CRD))
    mgmt.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd/clusters.cluster.x-k8s.io")
    documents = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": CAPI_NAMESPACE}}]
    for name, labels in CAPI_CLUSTERS.items():
        documents.append({"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
                          "metadata": {"name": name, "namespace": CAPI_NAMESPACE, "labels": labels},
                          "spec": {"topology": {"class": "local", "version": "v1.34.4"}}})
        documents.append({"apiVersion": "v1", "kind": "Secret", "type": "cluster.x-k8s.io/secret",
                          "metadata": {"name": f"{name}-kubeconfig", "namespace": CAPI_NAMESPACE,
                                       "labels": {"cluster.x-k8s.io/cluster-name": name}},
                          "stringData": {"value": target_kubeconfig_flat}})
    mgmt.kubectl("apply", "--server-side", "-f", "-", stdin=yaml.safe_dump_all(documents))
    return mgmt


@pytest.fixture()
def inventory(collections_path, tmp_path, bin_dir):
    """Write fleet.clusters.yml (and other files, by relative path) and run ansible-inventory on it."""

    def run(config: str, *args, files: dict | None = None, check: bool = True, env: dict | None = None):
        for name, text in (files or {}).items():
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / name).write_text(textwrap.dedent(text))
        path = tmp_path / "fleet.clusters.yml"
        path.write_text(textwrap.dedent(config))
        full_env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(collections_path), "ANSIBLE_NOCOLOR": "1"}
        full_env.pop("KUBECONFIG", None)
        full_env.update(env or {})
        proc = subprocess.run([str(VENV_BIN / "ansible-inventory"), "-i", str(path), *args], env=full_env,
                              capture_output=True, text=True, check=False, cwd=tmp_path)
        if check:
            assert proc.returncode == 0 and "[WARNING]: Unable to parse" not in proc.stderr, proc.stdout + proc.stderr
        return proc

    return run


def listing(proc) -> dict:
    """The --list output with Ansible's unsafe-string wrappers removed."""
    def plain(node):
        if isinstance(node, dict):
            if set(node) == {"__ansible_unsafe"}:
                return node["__ansible_unsafe"]
            return {key: plain(value) for key, value in node.items()}
        if isinstance(node, list):
            return [plain(item) for item in node]
        return node
    return plain(json.loads(proc.stdout))


def group_hosts(data: dict, group: str) -> list[str]:
    return sorted(data.get(group, {}).get("hosts", []))


@pytest.mark.smoke
def test_kubeconfig_files_give_one_host_per_context(clusters, inventory, secrets):
    # A KUBECONFIG-style list of exactly the two test clusters' limited users (other clusters may run).
    merged = f"{clusters['ephemeral'].limited_kubeconfig}:{clusters['target'].limited_kubeconfig}"
    proc = inventory(f"""\
        plugin: phasekit.kube.clusters
        kubeconfigs:
          - path: {merged}
            contexts: ['*-limited']
            labels: {{access: limited}}
          - path: {clusters['ephemeral'].admin_kubeconfig}:{clusters['target'].admin_kubeconfig}
        """, "--list")
    data = listing(proc)
    hostvars = data["_meta"]["hostvars"]
    assert sorted(hostvars) == ["ephemeral", "ephemeral-limited", "target", "target-limited"]
    assert hostvars["target-limited"] == {"ansible_connection": "local", "kube_kubeconfig": str(merged),
                                          "kube_context": "target-limited", "kube_labels": {"access": "limited"}}
    assert hostvars["target"]["kube_kubeconfig"] == (f"{clusters['ephemeral'].admin_kubeconfig}:"
                                                     f"{clusters['target'].admin_kubeconfig}")
    assert group_hosts(data, "label_access_limited") == ["ephemeral-limited", "target-limited"]
    assert leaked(proc.stdout, secrets) == []


def site_file(clusters) -> str:
    return f"""\
        clusters:
          ephemeral:
            kubeconfig: {clusters['ephemeral'].admin_kubeconfig}
            context: ephemeral
            labels: {{env: dev, role: management}}
          target:
            parent: ephemeral
            kubeconfig:
              - path: ../kubeconfigs/target.yaml
                optional: true
              - secret: {{name: target-kubeconfig, namespace: {CAPI_NAMESPACE}}}
            labels: {{env: dev}}
            vars: {{region: eu}}
        """


@pytest.mark.smoke
def test_site_file_gives_the_cluster_map(clusters, inventory, secrets, tmp_path):
    proc = inventory("""\
        plugin: phasekit.kube.clusters
        site: [site/clusters.yml]
        keyed_groups:
          - key: kube_labels.env
            prefix: env
        groups:
          workloads: kube_parent is defined
        compose:
          kube_namespace: "'apps-' ~ inventory_hostname"
        """, "--list", files={"site/clusters.yml": site_file(clusters)})
    data = listing(proc)
    hostvars = data["_meta"]["hostvars"]
    assert hostvars["target"] == {
        "ansible_connection": "local", "kube_parent": "ephemeral", "kube_labels": {"env": "dev"},
        "kube_kubeconfig": [{"path": str(tmp_path / "kubeconfigs/target.yaml"), "optional": True},
                            {"secret": {"name": "target-kubeconfig", "namespace": CAPI_NAMESPACE}}],
        "region": "eu", "kube_namespace": "apps-target"}
    assert group_hosts(data, "children_of_ephemeral") == ["target"]
    assert group_hosts(data, "env_dev") == ["ephemeral", "target"]
    assert group_hosts(data, "label_role_management") == ["ephemeral"]
    assert group_hosts(data, "workloads") == ["target"]
    assert leaked(proc.stdout, secrets) == []


def capi_config(clusters, **entry) -> str:
    options = {"host": "ephemeral", "namespaces": [CAPI_NAMESPACE], "labels": {"provisioner": "capi"}, **entry}
    return yaml.safe_dump({"plugin": "phasekit.kube.clusters",
                           "kubeconfigs": [{"path": str(clusters["ephemeral"].admin_kubeconfig)}],
                           "cluster_api": [options]})


@pytest.mark.smoke
def test_cluster_api_discovery_adds_children_with_secret_sources(clusters, capi, inventory, secrets):
    proc = inventory(capi_config(clusters), "--list")
    data = listing(proc)
    hostvars = data["_meta"]["hostvars"]
    assert sorted(hostvars) == ["ephemeral", "work-a", "work-b"]
    assert hostvars["work-a"] == {
        "ansible_connection": "local",
        "kube_kubeconfig": {"secret": {"host": "ephemeral", "name": "work-a-kubeconfig", "namespace": CAPI_NAMESPACE}},
        "kube_parent": "ephemeral",
        "kube_labels": {"env": "prod", "region": "eu", "provisioner": "capi"},
        "kube_cluster_api": {"name": "work-a", "namespace": CAPI_NAMESPACE, "phase": None, "version": "v1.34.4",
                             "infrastructure_ready": False, "control_plane_ready": False, "deleting": False},
    }
    assert group_hosts(data, "children_of_ephemeral") == ["work-a", "work-b"]
    assert group_hosts(data, "label_env_prod") == ["work-a"]
    assert leaked(proc.stdout + proc.stderr, secrets) == []


def test_graph_shows_the_fleet(clusters, capi, inventory):
    graph = inventory(capi_config(clusters), "--graph").stdout
    assert "@children_of_ephemeral:\n  |  |--work-a\n  |  |--work-b" in graph
    assert "|--ephemeral" in graph


@pytest.mark.parametrize("entry, hosts", [
    ({"label_selector": "env=prod"}, ["ephemeral", "work-a"]),
    ({"namespaces": [], "label_selector": "region in (eu,us)"}, ["ephemeral", "work-a", "work-b"]),
    ({"host_name": "{management}-{namespace}-{name}"},
     ["ephemeral", f"ephemeral-{CAPI_NAMESPACE}-work-a", f"ephemeral-{CAPI_NAMESPACE}-work-b"]),
], ids=["label-selector", "all-namespaces", "host-name-format"])
def test_cluster_api_selection(clusters, capi, inventory, entry, hosts):
    assert sorted(listing(inventory(capi_config(clusters, **entry), "--list"))["_meta"]["hostvars"]) == hosts


@pytest.mark.parametrize("config, message", [
    ("capi-unknown-host", "management host 'mgmt' is not defined"),
    ("capi-version", "clusters.cluster.x-k8s.io/v1alpha9 is not served by this cluster"),
    ("capi-forbidden", "not allowed to list clusters.cluster.x-k8s.io/v1beta1 (HTTP 403"),
    ("site-content", "inline kubeconfig content does not belong in an inventory"),
    ("site-missing", "site file not found"),
    ("capi-unreachable", "cluster_api[1] (management host ephemeral): cannot list Cluster API clusters: cannot reach "
                         "the API server https://127.0.0.1:9 after 6 attempt(s): NewConnectionError: "),
], ids=["unknown-management-host", "version-not-served", "forbidden", "inline-content", "missing-site-file",
        "unreachable-management-cluster"])
def test_bad_inventories_fail_clearly(clusters, capi, inventory, secrets, config, message):
    limited = clusters["ephemeral"]
    unreachable = yaml.safe_load(limited.admin_kubeconfig.read_text())
    unreachable["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:9"  # nothing listens on port 9
    configs = {
        "capi-unreachable": yaml.safe_dump({
            "plugin": "phasekit.kube.clusters", "kubeconfigs": [{"path": "down.kubeconfig"}],
            "cluster_api": [{"host": "ephemeral"}]}),
        "capi-unknown-host": capi_config(clusters, host="mgmt"),
        "capi-version": capi_config(clusters, version="v1alpha9"),
        "capi-forbidden": yaml.safe_dump({
            "plugin": "phasekit.kube.clusters",
            "kubeconfigs": [{"path": str(limited.limited_kubeconfig)}],
            "cluster_api": [{"host": limited.limited_context}]}),
        "site-content": "plugin: phasekit.kube.clusters\nsite: [bad.yml]\n",
        "site-missing": "plugin: phasekit.kube.clusters\nsite: [nowhere.yml]\n",
    }
    bad_site = {"clusters": {"x": {"kubeconfig": {"content": clusters["target"].admin_kubeconfig.read_text()}}}}
    proc = inventory(configs[config], "--list", check=False,
                     files={"bad.yml": yaml.safe_dump(bad_site), "down.kubeconfig": yaml.safe_dump(unreachable)},
                     env={"ANSIBLE_INVENTORY_UNPARSED_FAILED": "1"})
    assert proc.returncode != 0
    assert message in " ".join(proc.stderr.split()), proc.stderr
    assert "Traceback" not in proc.stderr and "MaxRetryError" not in proc.stderr  # urllib3's retry wrapper, raw
    assert leaked(proc.stdout + proc.stderr, secrets) == []


def test_inventory_cache_serves_the_last_result_until_flushed(clusters, inventory, tmp_path):
    config = f"""\
        plugin: phasekit.kube.clusters
        site: [clusters.yml]
        cache: true
        cache_plugin: ansible.builtin.jsonfile
        cache_connection: {tmp_path / 'cache'}
        """

    def hosts(*args, site):
        return sorted(listing(inventory(config, "--list", *args, files={"clusters.yml": site}))["_meta"]["hostvars"])

    assert hosts(site="clusters: {one: {}}") == ["one"]
    assert hosts(site="clusters: {one: {}, two: {}}") == ["one"]
    assert hosts("--flush-cache", site="clusters: {one: {}, two: {}}") == ["one", "two"]
    assert list((tmp_path / "cache").iterdir())


@pytest.mark.smoke
def test_discovered_cluster_resolves_through_its_parent(clusters, capi, run_playbook, collections_path, tmp_path,
                                                        secrets):
    """A discovered child's kubeconfig comes from its Secret on the parent; the child's API answers."""
    config = tmp_path / "capi.clusters.yml"
    config.write_text(capi_config(clusters))
    result = run_playbook(f"""\
        - hosts: work-a
          gather_facts: false
          tasks:
            - name: Resolve work-a's kubeconfig from the Secret on ephemeral
              ansible.builtin.copy:
                content: "{{{{ lookup('phasekit.kube.kubeconfig', sources=[kube_kubeconfig], flatten=True) | to_nice_yaml }}}}"
                dest: "{tmp_path}/work-a.kubeconfig"
                mode: "0600"
              no_log: true
            - name: List namespaces of the child
              ansible.builtin.command: kubectl --kubeconfig {tmp_path}/work-a.kubeconfig get namespaces -o name
              register: namespaces
              changed_when: false
            - ansible.builtin.assert:
                that: "'namespace/kube-system' in namespaces.stdout_lines"
        """, config, verbosity=2)
    assert result.rc == 0, result
    assert leaked(result.output, secrets) == []
