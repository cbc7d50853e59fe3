# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""kubernetes.core's connection options on every cluster action, against the local clusters.

Written from kubernetes.core's contract (doc_fragments/k8s_auth_options.py): ``host`` + ``api_key`` +
``ca_cert`` connect without a kubeconfig; ``K8S_AUTH_HOST`` replaces the kubeconfig's server; the
``impersonate_*`` options act as that user. The hosts' own kubeconfig points at the *other* cluster (or an
unreachable server), so an option that was ignored would show.
"""

from __future__ import annotations

import json
import uuid

import pytest
import yaml

LIMITED_NAMESPACE = "phasekit-limited"  # the limited token's user may edit here only (hack/clusters.py)
WHOAMI = ["kubectl", "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"]


def configmap(name: str, namespace: str = LIMITED_NAMESPACE) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace},
            "data": {"from": "connection-options"}}


def save(directory, *names) -> list:
    """Tasks writing the registered results to DIRECTORY/NAME.json (read back with ``saved``)."""
    return [{"name": f"Save {name}", "ansible.builtin.copy": {"content": f"{{{{ {name} | to_json }}}}",
                                                              "dest": f"{directory}/{name}.json"}}
            for name in names]


def saved(directory, name: str) -> dict:
    return json.loads((directory / f"{name}.json").read_text())


@pytest.fixture()
def marker(clusters, request) -> str:
    name = f"conn-{uuid.uuid4().hex[:8]}"

    def clean():
        for cluster in clusters.values():
            for namespace in (LIMITED_NAMESPACE, "default"):
                cluster.kubectl("delete", "configmap", "-n", namespace, "-l", f"phasekit-test={name}",
                                "--ignore-not-found", check=False)
                cluster.kubectl("delete", "configmap", "-n", namespace, name, f"{name}-as", f"{name}-chart",
                                f"{name}-plan", "--ignore-not-found", check=False)
        clusters["target"].kubectl("delete", "secret", "-n", LIMITED_NAMESPACE, "-l", f"owner=helm,name={name}-chart",
                                   "--ignore-not-found", check=False)
    request.addfinalizer(clean)
    return name


def test_every_action_connects_with_host_api_key_and_ca_cert(clusters, run_playbook, tmp_path, marker):
    """apply, wait, helm, kube_command and kubeconfig with kubernetes.core's host/api_key/ca_cert: they act on
    that server as the token's user, although the host's kubeconfig names the other cluster; -vvv never shows
    the token."""
    target, ephemeral = clusters["target"], clusters["ephemeral"]
    token = (target.dir / "pki/limited.token").read_text().strip()
    chart = tmp_path / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: conn\nversion: 0.1.0\n")
    (chart / "templates/cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: '{{ .Release.Name }}'}\n")
    connection = {"host": target.server, "api_key": "{{ target_token }}", "ca_cert": str(target.dir / "pki/ca.crt")}
    tasks = [
        {"name": "apply", "phasekit.kube.apply": {**connection, "definition": configmap(marker)},
         "register": "applied"},
        {"name": "wait", "phasekit.kube.wait": {**connection, "definition": configmap(marker)}, "register": "waited"},
        {"name": "helm", "phasekit.kube.helm": {**connection, "name": f"{marker}-chart", "chart_ref": str(chart),
                                                "release_namespace": LIMITED_NAMESPACE}, "register": "charted"},
        {"name": "kube_command", "phasekit.kube.kube_command": {**connection, "argv": WHOAMI}, "register": "whoami"},
        {"name": "kubeconfig", "phasekit.kube.kubeconfig": {**connection, "validate_certs": True,
                                                            "dest": str(tmp_path / "written.yaml")},
         "register": "resolved"},
        *save(tmp_path, "applied", "waited", "charted", "whoami", "resolved"),
    ]
    playbook = [{"hosts": "cluster", "gather_facts": False, "vars": {"target_token": token}, "tasks": tasks}]
    inventory = {"all": {"hosts": {"cluster": {"ansible_connection": "local",
                                               "kube_kubeconfig": str(ephemeral.admin_kubeconfig),
                                               "kube_context": "ephemeral"}}}}
    result = run_playbook(yaml.safe_dump(playbook), yaml.safe_dump(inventory), verbosity=3)
    assert result.rc == 0, result
    assert token not in result.output
    found = {name: saved(tmp_path, name) for name in ("applied", "waited", "charted", "whoami", "resolved")}
    for name in ("applied", "waited", "charted", "whoami"):
        summary = found[name]["kubeconfig"]
        assert (summary["server"], summary["context"]) == (target.server, "connection-options"), name
        assert summary["provenance"]["cluster"] == {"from": "task parameter host"}, name
        assert summary["provenance"]["user"] == {"from": "task parameter api_key"}, name
        assert "not read: host (from task parameter host) and api_key" in summary["provenance"]["kubeconfig_from"]
    assert found["resolved"]["server"] == target.server
    assert found["resolved"]["provenance"]["connection"]["validate_certs"] == {"from": "task parameter validate_certs"}
    assert found["whoami"]["stdout"] == "limited-user"
    assert target.get_json("configmap", "-n", LIMITED_NAMESPACE, marker)["data"] == {"from": "connection-options"}
    assert target.get_json("configmap", "-n", LIMITED_NAMESPACE, f"{marker}-chart")["metadata"]["name"]
    assert ephemeral.kubectl("get", "configmap", "-n", LIMITED_NAMESPACE, marker, check=False).returncode != 0
    written = yaml.safe_load((tmp_path / "written.yaml").read_text())
    assert written["clusters"][0]["cluster"]["server"] == target.server
    assert written["users"][0]["user"] == {"token": token}


def test_impersonation_options_act_as_that_user(clusters, run_playbook, tmp_path, marker):
    """impersonate_user/impersonate_groups over the admin's kubeconfig: the server sees the limited user and the
    group, and the user may write in its namespace only. persist_config=true changes nothing for a user without an
    auth-provider (as in kubernetes.core) and is refused, with a message, for one whose tokens kubernetes.core would
    write back."""
    target = clusters["target"]
    impersonate = {"impersonate_user": "limited-user", "impersonate_groups": ["phasekit-testers"]}
    config = yaml.safe_load(target.admin_kubeconfig.read_text())
    config["users"][0]["user"] = {"auth-provider": {"name": "oidc", "config": {
        "client-id": "phasekit", "id-token": "not-a-real-token", "idp-issuer-url": "https://127.0.0.1:1"}}}
    oidc = tmp_path / "oidc.kubeconfig"
    oidc.write_text(yaml.safe_dump(config))
    oidc.chmod(0o600)
    tasks = [
        {"name": "whoami", "phasekit.kube.kube_command": {**impersonate, "argv": ["kubectl", "auth", "whoami",
                                                                                  "-o", "json"]},
         "register": "whoami"},
        {"name": "allowed", "phasekit.kube.apply": {**impersonate, "definition": configmap(f"{marker}-as")},
         "register": "allowed"},
        {"name": "refused", "phasekit.kube.apply": {**impersonate, "definition": configmap(marker, "default")},
         "register": "refused", "ignore_errors": True},
        {"name": "persist", "phasekit.kube.wait": {"persist_config": True, "definition": configmap(f"{marker}-as")},
         "register": "persist", "ignore_errors": True},
        {"name": "persist refused", "phasekit.kube.wait": {"persist_config": True, "kubeconfig": str(oidc),
                                                           "definition": configmap(f"{marker}-as")},
         "register": "persist_refused", "ignore_errors": True},
        *save(tmp_path, "whoami", "allowed", "refused", "persist", "persist_refused"),
    ]
    playbook = [{"hosts": "cluster", "gather_facts": False, "tasks": tasks}]
    inventory = {"all": {"hosts": {"cluster": {"ansible_connection": "local",
                                               "kube_kubeconfig": str(target.admin_kubeconfig)}}}}
    result = run_playbook(yaml.safe_dump(playbook), yaml.safe_dump(inventory))
    assert result.rc == 0, result
    found = {name: saved(tmp_path, name) for name in ("whoami", "allowed", "refused", "persist", "persist_refused")}
    user = json.loads(found["whoami"]["stdout"])["status"]["userInfo"]
    assert user["username"] == "limited-user" and "phasekit-testers" in user["groups"]
    assert found["allowed"]["kubeconfig"]["provenance"]["connection"] == {
        "impersonate_user": {"from": "task parameter impersonate_user"},
        "impersonate_groups": {"from": "task parameter impersonate_groups"}}
    assert found["refused"]["failed"] and "forbidden" in found["refused"]["msg"].lower()
    assert "limited-user" in found["refused"]["msg"]
    # a client-certificate user has no token to write back: persist_config changes nothing, in kubernetes.core too
    assert not found["persist"].get("failed") and not found["persist"]["changed"]
    assert found["persist"]["kubeconfig"]["provenance"]["connection"] == {
        "persist_config": {"from": "task parameter persist_config"}}
    # an auth-provider's refreshed tokens would be written back: refused before any request, naming option and origin
    refused = found["persist_refused"]
    assert refused["failed"] and not refused["changed"]
    assert refused["msg"].startswith("persist_config (from task parameter persist_config): user "), refused["msg"]
    assert "authenticates with oidc" in refused["msg"] and "never writes to a kubeconfig source" in refused["msg"]
    assert "not-a-real-token" not in result.output
    assert "Traceback" not in result.output
    assert target.kubectl("get", "configmap", "-n", LIMITED_NAMESPACE, f"{marker}-as", check=False).returncode == 0
    assert target.kubectl("get", "configmap", "-n", "default", marker, check=False).returncode != 0


def test_k8s_auth_host_replaces_the_kubeconfig_server_in_actions_and_plans(clusters, run_playbook, tmp_path, marker):
    """K8S_AUTH_HOST is honoured (not silently ignored) over a kubeconfig whose server is unreachable, keeping the
    kubeconfig's user; plan phases get kube_host from the host's variables the same way."""
    target = clusters["target"]
    config = yaml.safe_load(target.admin_kubeconfig.read_text())
    config["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:1"  # nothing listens there
    unreachable = tmp_path / "unreachable.kubeconfig"
    unreachable.write_text(yaml.safe_dump(config))
    unreachable.chmod(0o600)
    tasks = [{"name": "apply", "phasekit.kube.apply": {"definition": configmap(marker)}, "register": "applied"},
             *save(tmp_path, "applied")]
    playbook = [{"hosts": "cluster", "gather_facts": False, "tasks": tasks}]
    inventory = {"all": {"hosts": {"cluster": {"ansible_connection": "local",
                                               "kube_kubeconfig": str(unreachable)}}}}
    result = run_playbook(yaml.safe_dump(playbook), yaml.safe_dump(inventory),
                          env={"K8S_AUTH_HOST": target.server})
    assert result.rc == 0, result
    summary = saved(tmp_path, "applied")["kubeconfig"]
    assert summary["server"] == target.server
    assert summary["provenance"]["connection"] == {"host": {"from": "controller environment K8S_AUTH_HOST"}}
    assert summary["provenance"]["cluster"]["location"] == str(unreachable)  # the user and CA still came from it
    assert target.kubectl("get", "configmap", "-n", LIMITED_NAMESPACE, marker, check=False).returncode == 0

    # a plan phase: the host's kube_host does the same, and beats a K8S_AUTH_HOST set for the whole controller
    site = tmp_path / "site"
    (site / "phases").mkdir(parents=True)
    phase = {"apiVersion": "phasekit.dev/v1alpha1", "kind": "Phase", "metadata": {"name": "app"},
             "spec": {"cluster": "cluster", "executor": "apply", "source": "../manifests"}}
    plan = {"apiVersion": "phasekit.dev/v1alpha1", "kind": "PhasePlan", "metadata": {"name": "deploy"},
            "spec": {"phases": ["app"]}}
    (site / "phases/plan.yaml").write_text(yaml.safe_dump_all([phase, plan]))
    (site / "manifests").mkdir()
    (site / "manifests/cm.yaml").write_text(yaml.safe_dump(configmap(f"{marker}-plan")))
    inventory["all"]["hosts"]["cluster"]["kube_host"] = target.server
    (site / "inventory.yml").write_text(yaml.safe_dump(inventory))
    result = run_playbook("- ansible.builtin.import_playbook: phasekit.kube.run\n", site / "inventory.yml",
                          "-e", "plan=deploy", env={"K8S_AUTH_HOST": "https://127.0.0.1:1"})
    assert result.rc == 0, result
    assert "K8S_AUTH_HOST from the controller environment is overridden by 1 host's own kube_host" in \
        " ".join(result.output.split()), result
    assert target.kubectl("get", "configmap", "-n", LIMITED_NAMESPACE, f"{marker}-plan",
                          check=False).returncode == 0


def test_the_kubeconfig_lookup_takes_the_connection_options_with_the_actions_precedence(
        clusters, run_playbook, tmp_path):
    """The lookup applies kubernetes.core's options as the actions do: keyword > host var kube_* > K8S_AUTH_*.
    Here the host var's host and token and the environment's CA make a complete connection (the environment's own
    token loses to the host var's), which kubectl then uses as the limited user; a keyword overrides the host;
    provenance says where each came from; the token is never shown at -vvv."""
    target, ephemeral = clusters["target"], clusters["ephemeral"]
    token = (target.dir / "pki/limited.token").read_text().strip()
    ca_cert = str(target.dir / "pki/ca.crt")
    written = tmp_path / "from-lookup.kubeconfig"
    lookup = "lookup('phasekit.kube.kubeconfig', provenance=true"
    tasks = [
        {"name": "the lookup", "ansible.builtin.set_fact": {
            "found": "{{ " + lookup + ") }}", "keyword": "{{ " + lookup + ", host='https://127.0.0.2:6443') }}"},
         "no_log": True},
        {"name": "write it", "ansible.builtin.copy": {"content": "{{ found.kubeconfig | to_nice_yaml }}",
                                                      "dest": str(written), "mode": "0600"}, "no_log": True},
        {"name": "provenance", "ansible.builtin.copy": {
            "content": "{{ {'found': found.provenance, 'keyword': keyword.provenance,"
                       " 'keyword_server': keyword.kubeconfig.clusters[0].cluster.server} | to_json }}",
            "dest": str(tmp_path / "provenance.json")}},
        {"name": "use it", "ansible.builtin.command": {"argv": ["kubectl", "--kubeconfig", str(written), "auth",
                                                                "whoami", "-o",
                                                                "jsonpath={.status.userInfo.username}"]},
         "register": "whoami", "changed_when": False},
        {"name": "as the limited user", "ansible.builtin.assert": {"that": ["whoami.stdout == 'limited-user'"]}},
    ]
    playbook = [{"hosts": "cluster", "gather_facts": False, "tasks": tasks}]
    inventory = {"all": {"hosts": {"cluster": {"ansible_connection": "local",
                                               "kube_kubeconfig": str(ephemeral.admin_kubeconfig),
                                               "kube_host": target.server, "kube_api_key": token}}}}
    result = run_playbook(yaml.safe_dump(playbook), yaml.safe_dump(inventory), verbosity=3,
                          env={"K8S_AUTH_API_KEY": "wrong-token-of-the-controller", "K8S_AUTH_SSL_CA_CERT": ca_cert})
    assert result.rc == 0, result
    assert token not in result.output
    provenance = json.loads((tmp_path / "provenance.json").read_text())
    assert provenance["found"]["connection"] == {"host": {"from": "host var kube_host of cluster"},
                                                 "api_key": {"from": "host var kube_api_key of cluster"},
                                                 "ca_cert": {"from": "controller environment K8S_AUTH_SSL_CA_CERT"}}
    assert provenance["found"]["sources"].startswith("not read: host (from host var kube_host of cluster) and "
                                                     "api_key (from host var kube_api_key of cluster) make a "
                                                     "complete connection")
    assert provenance["keyword"]["connection"]["host"] == {"from": "lookup option host"}
    assert provenance["keyword_server"] == "https://127.0.0.2:6443"
    config = yaml.safe_load(written.read_text())
    assert config["clusters"][0]["cluster"]["server"] == target.server and config["users"][0]["user"] == {
        "token": token}
