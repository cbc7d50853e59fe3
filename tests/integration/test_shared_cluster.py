# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Each host is its own cluster (issue 35, point 3), through the plan role as a user runs it, on the local clusters.

- hosts ``ephemeral`` (its context set) and ``cluster-b``, ``cluster-c`` (no context: the kubeconfig's
  current-context, ephemeral): the run fails before writing, naming the three hosts and ``current-context``;
- one API server reached by two names (``https://127.0.0.1:PORT`` and ``https://localhost:PORT``, which its
  serving certificate covers) in one namespace: refused; in two namespaces: both written; with
  ``plan_allow_shared_cluster``: written;
- kubectl says nothing was written where the run was refused, not even a run record;
- a fleet of 12 hosts over the two API servers, a namespace each, runs as always, and asks each server for its
  identity once.
"""

from __future__ import annotations

import copy
import re
import uuid

import pytest
import yaml
from fleet_site import fleet_kubeconfig, recap
from test_role_flows import SITE_YML as ROLE_SITE_YML

pytestmark = [pytest.mark.smoke]

API = "phasekit.dev/v1alpha1"
RUN = uuid.uuid4().hex[:6]
PROBE = "fanin-probe"
# the role as the documented flows run it, without the plan table
SITE_YML = ROLE_SITE_YML + "        plan_show_plan: false\n"
PHASES = [
    {"apiVersion": API, "kind": "Phase", "metadata": {"name": "probe"},
     "spec": {"cluster": "all", "executor": "apply",
              "source": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": PROBE}, "data": {"v": "1"}}]}},
    {"apiVersion": API, "kind": "PhasePlan", "metadata": {"name": "site"}, "spec": {"phases": ["probe"]}},
]


@pytest.fixture(scope="module")
def namespaces(clusters):
    """Two namespaces of this run in each cluster (the contexts' default namespaces), removed afterwards."""
    names = [f"pk-fanin-{RUN}-a", f"pk-fanin-{RUN}-b"]
    for cluster in clusters.values():
        for name in names:
            cluster.kubectl("create", "namespace", name)
    yield names
    for cluster in clusters.values():
        cluster.kubectl("delete", "namespace", *names, "--wait=false", "--ignore-not-found")


def admin(cluster) -> dict:
    """The cluster's admin kubeconfig: its cluster, user and context entries."""
    return yaml.safe_load(cluster.admin_kubeconfig.read_text())


def merged_kubeconfig(clusters, namespace: str) -> dict:
    """ephemeral and target, each with its own context (namespace ``namespace``); current-context: ephemeral."""
    config = {"apiVersion": "v1", "kind": "Config", "clusters": [], "users": [], "contexts": [],
              "current-context": "ephemeral"}
    for name in ("ephemeral", "target"):
        own = admin(clusters[name])
        config["clusters"].append({"name": name, "cluster": own["clusters"][0]["cluster"]})
        config["users"].append({"name": f"{name}-admin", "user": own["users"][0]["user"]})
        config["contexts"].append({"name": name, "context": {"cluster": name, "user": f"{name}-admin",
                                                             "namespace": namespace}})
    return config


def two_names_kubeconfig(cluster, namespaces: tuple[str, str]) -> dict:
    """One API server as two clusters: ``by-ip`` (127.0.0.1) and ``by-name`` (localhost), a context each."""
    own = admin(cluster)
    entry = own["clusters"][0]["cluster"]
    port = entry["server"].rsplit(":", 1)[1]
    by_name = copy.deepcopy(entry)
    by_name["server"] = f"https://localhost:{port}"
    return {"apiVersion": "v1", "kind": "Config", "current-context": "by-ip",
            "clusters": [{"name": "by-ip", "cluster": {**entry, "server": f"https://127.0.0.1:{port}"}},
                         {"name": "by-name", "cluster": by_name}],
            "users": [{"name": "admin", "user": own["users"][0]["user"]}],
            "contexts": [{"name": "by-ip", "context": {"cluster": "by-ip", "user": "admin",
                                                       "namespace": namespaces[0]}},
                         {"name": "by-name", "context": {"cluster": "by-name", "user": "admin",
                                                         "namespace": namespaces[1]}}]}


@pytest.fixture()
def site(tmp_path, run_playbook):
    """write(kubeconfig, hosts, phases) -> run(*args): the site in tmp_path, run through the role in the user's
    site.yml."""
    (tmp_path / "phases").mkdir()
    (tmp_path / "site.yml").write_text(SITE_YML)

    def write(kubeconfig: dict, hosts: dict, phases=None):
        (tmp_path / "phases" / "site.yaml").write_text(yaml.safe_dump_all(phases or PHASES, sort_keys=False))
        path = tmp_path / "site.kubeconfig"
        path.write_text(yaml.safe_dump(kubeconfig))
        path.chmod(0o600)
        inventory = {"all": {"vars": {"ansible_connection": "local", "kube_kubeconfig": str(path)},
                             "hosts": hosts}}
        return lambda *args: run_playbook(tmp_path / "site.yml", inventory, *args)

    return write


def written(cluster, namespace: str) -> list[str]:
    """The ConfigMaps this site wrote into ``namespace``: the probe and any run record."""
    found = cluster.get_json("configmaps", "-n", namespace)["items"]
    return sorted(item["metadata"]["name"] for item in found
                  if item["metadata"]["name"] == PROBE or item["metadata"]["name"].startswith("phasekit-run-"))


def clean(cluster, *names: str) -> None:
    """What an earlier test of this module wrote into these namespaces, removed (the namespaces are shared)."""
    for namespace in set(names):
        cluster.kubectl("delete", "configmap", PROBE, "phasekit-run-site.alpha", "phasekit-run-site.beta", "-n",
                        namespace, "--ignore-not-found")


def refusal(result) -> str:
    lines = [line for line in result.output.splitlines() if "refused before anything was written" in line]
    assert lines, result
    return lines[0]


def test_hosts_without_a_context_falling_to_the_current_context_are_refused(clusters, namespaces, site):
    for cluster in clusters.values():
        clean(cluster, namespaces[0])
    run = site(merged_kubeconfig(clusters, namespaces[0]),
               {"ephemeral": {"kube_context": "ephemeral"}, "cluster-b": {}, "cluster-c": {}})
    result = run()
    assert result.rc != 0, result
    message = refusal(result)
    for said in ("ephemeral (context ephemeral from host var kube_context)",
                 "cluster-b (context ephemeral from current-context)",
                 "cluster-c (context ephemeral from current-context)",
                 f"one namespace ({namespaces[0]})", "kube-system uid ", "plan_allow_shared_cluster: true"):
        assert said in message, message
    for cluster in clusters.values():
        assert written(cluster, namespaces[0]) == [], result
    # the phase's line says it once for its three clusters
    assert "  cluster-b, cluster-c, ephemeral: failed: phase probe refused before anything" in result.output, result
    # the summary shows where each host went: all three on ephemeral's server
    server = clusters["ephemeral"].server.removeprefix("https://")
    rows = dict(re.findall(r'^probe\s+(\S+)\s+failed\s+\S+\s+-\s+(\S+)$', result.output, flags=re.MULTILINE))
    assert rows == {"ephemeral": server, "cluster-b": server, "cluster-c": server}, result.output


def test_in_a_graph_hosts_of_one_cluster_are_refused_before_either_writes(clusters, namespaces, site):
    """A plan with ``needs`` runs pair by pair: the guard still sees the phase's clusters together, before any
    pair starts, and what needs the phase never starts."""
    for cluster in clusters.values():
        clean(cluster, namespaces[0])
    after = {"apiVersion": API, "kind": "Phase", "metadata": {"name": "after"},
             "spec": {"cluster": "all", "executor": "apply", "needs": [{"phase": "probe", "wait": "same-cluster"}],
                      "source": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": PROBE},
                                  "data": {"v": "2"}}]}}
    graph = [PHASES[0], after, {**PHASES[1], "spec": {"phases": ["probe", "after"]}}]
    run = site(merged_kubeconfig(clusters, namespaces[0]),
               {"ephemeral": {"kube_context": "ephemeral"}, "cluster-b": {}, "cluster-c": {}}, graph)
    result = run()
    assert result.rc != 0, result
    message = refusal(result)
    for said in ("cluster-b (context ephemeral from current-context)", f"one namespace ({namespaces[0]})"):
        assert said in message, message
    for cluster in clusters.values():
        assert written(cluster, namespaces[0]) == [], result
    # the phase's line says it once for its three clusters (once a second time at the run's end)
    assert result.output.count("  cluster-b, cluster-c, ephemeral: failed: phase probe refused before anything") == 1, \
        result
    never = re.findall(r"^after\s+(\S+)\s+needs probe, which failed on \S+$", result.output, flags=re.MULTILINE)
    assert sorted(never) == ["cluster-b", "cluster-c", "ephemeral"], result.output


@pytest.mark.parametrize("same_namespace, allow, refused", [
    (True, False, True),
    (False, False, False),
    (True, True, False),
], ids=["one-server-two-names-one-namespace-refused", "one-server-two-names-two-namespaces-written",
        "opt-in-writes"])
def test_one_api_server_reached_by_two_names(clusters, namespaces, site, same_namespace, allow, refused):
    cluster = clusters["target"]
    chosen = (namespaces[0], namespaces[0]) if same_namespace else (namespaces[0], namespaces[1])
    clean(cluster, *chosen)
    run = site(two_names_kubeconfig(cluster, chosen),
               {"alpha": {"kube_context": "by-ip"}, "beta": {"kube_context": "by-name"}})
    result = run(*(["-e", "plan_allow_shared_cluster=true"] if allow else []))
    port = cluster.server.rsplit(":", 1)[1]
    if refused:
        assert result.rc != 0, result
        message = refusal(result)
        assert "alpha (context by-ip from host var kube_context), beta (context by-name from host var " \
               "kube_context)" in message and f"one namespace ({chosen[0]})" in message, message
        assert written(cluster, chosen[0]) == [], result
        return
    assert result.rc == 0, result
    assert "refused" not in result.output, result
    if same_namespace:
        # both hosts wrote one namespace: one probe, two run records (theirs stay separate)
        assert written(cluster, chosen[0]) == [PROBE, "phasekit-run-site.alpha", "phasekit-run-site.beta"]
    else:
        assert written(cluster, chosen[0]) == [PROBE, "phasekit-run-site.alpha"]
        assert written(cluster, chosen[1]) == [PROBE, "phasekit-run-site.beta"]
    summary = result.output[result.output.index("Summary of plan site"):]
    assert f"127.0.0.1:{port}" in summary and f"localhost:{port}" in summary, summary


def test_a_user_who_may_not_read_kube_system_is_compared_by_address(clusters, namespaces, site):
    """Both names impersonate a user without any right: no kube-system UID, so the server's address decides
    (localhost and 127.0.0.1 resolve to one address), and the refusal says so."""
    cluster = clusters["target"]
    clean(cluster, namespaces[0])
    config = two_names_kubeconfig(cluster, (namespaces[0], namespaces[0]))
    config["users"][0]["user"]["as"] = "nobody-at-all"
    result = site(config, {"alpha": {"kube_context": "by-ip"}, "beta": {"kube_context": "by-name"}})()
    assert result.rc != 0, result
    message = refusal(result)
    port = cluster.server.rsplit(":", 1)[1]
    assert f"compared by address (https://127.0.0.1:{port}" in message, message
    assert "kube-system could not be read (403 Forbidden)" in message, message
    assert written(cluster, namespaces[0]) == [], result


def test_a_fleet_over_two_servers_a_namespace_each_runs_and_asks_each_server_once(clusters, site):
    hosts = [f"tenant{index:02d}" for index in range(12)]
    names = sorted(clusters)

    def cluster_of(host, _clusters):
        return names[int(host[-2:]) % len(names)]

    def namespace_of(host):
        return f"pk-fanin-{RUN}-{host}"

    config = fleet_kubeconfig(clusters, hosts, cluster_of, namespace_of)
    try:
        result = site(config, {host: {"kube_context": host} for host in hosts})("-vvv")
        assert result.rc == 0 and not [row for row in recap(result.output).values() if row["failed"]], result
        assert "cluster identity (kube-system uid) asked of 2 API endpoint(s)" in result.output, result
        for host in hosts:
            assert written(clusters[cluster_of(host, clusters)], namespace_of(host)) == [
                PROBE, f"phasekit-run-site.{host}"]
    finally:
        for host in hosts:
            clusters[cluster_of(host, clusters)].kubectl("delete", "namespace", namespace_of(host), "--wait=false",
                                                         "--ignore-not-found")


def test_a_tasks_phase_is_refused_before_its_task_file_runs(clusters, namespaces, site, tmp_path):
    """A tasks phase runs the user's task file on each host: refused the same way, no host runs it."""
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "mark.yml").write_text(
        "- name: Mark\n  ansible.builtin.copy:\n    content: ran\n"
        f"    dest: \"{tmp_path}/{{{{ inventory_hostname }}}}.ran\"\n")
    phases = [{"apiVersion": API, "kind": "Phase", "metadata": {"name": "mark"},
               "spec": {"cluster": "all", "executor": "tasks", "source": "../tasks/mark.yml"}},
              {"apiVersion": API, "kind": "PhasePlan", "metadata": {"name": "site"}, "spec": {"phases": ["mark"]}}]
    run = site(merged_kubeconfig(clusters, namespaces[0]), {"ephemeral": {"kube_context": "ephemeral"}, "cluster-b": {}},
               phases)
    result = run()
    assert result.rc != 0, result
    assert "cluster-b (context ephemeral from current-context)" in refusal(result), result
    assert not list(tmp_path.glob("*.ran")), result
    allowed = run("-e", "plan_allow_shared_cluster=true")
    assert allowed.rc == 0, allowed
    assert sorted(path.name for path in tmp_path.glob("*.ran")) == ["cluster-b.ran", "ephemeral.ran"], allowed
