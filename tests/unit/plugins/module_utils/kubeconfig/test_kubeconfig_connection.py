# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""kubernetes.core's connection options, by its own contract (doc_fragments/k8s_auth_options.py and
module_utils/k8s/client.py): each option from the task parameter, else its K8S_AUTH_* variables; a host with a
credential reads no kubeconfig; otherwise the options override the kubeconfig's context. phasekit adds the host's
kube_<option> variables between the two: a host's own value beats the environment's."""

from __future__ import annotations

import base64
import json

import pytest
import yaml

from ansible_collections.phasekit.kube.plugins.module_utils.environ import Environ
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.connection import bypasses_proxy
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.connection import connection_options
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.resolve import view_with_connection
from ansible_collections.phasekit.kube.plugins.plugin_utils import kubeconfig as glue

TOKEN = "connection-t0ken-s3cr3t"
ENV_OPTION = {"K8S_AUTH_HOST": "host", "K8S_AUTH_PASSWORD": "password"}


def options(task=None, environ=None, host_vars=None):
    return connection_options(task or {}, environ or {}, (host_vars or {}).get, "cluster1")


@pytest.mark.parametrize("task, environ, host_vars, name, value, origin", [
    ({"host": "https://task:6443"}, {"K8S_AUTH_HOST": "https://env:6443"}, {"kube_host": "https://var:6443"},
     "host", "https://task:6443", "task parameter host"),
    ({}, {"K8S_AUTH_HOST": "https://env:6443"}, {"kube_host": "https://var:6443"},
     "host", "https://var:6443", "host var kube_host of cluster1"),
    ({}, {"K8S_AUTH_HOST": "https://env:6443"}, {}, "host", "https://env:6443", "controller environment K8S_AUTH_HOST"),
    ({}, Environ(play={"K8S_AUTH_HOST": "https://play:6443"}, base={"K8S_AUTH_HOST": "https://env:6443"}), {},
     "host", "https://play:6443", "play environment K8S_AUTH_HOST"),
    ({}, Environ(task={"K8S_AUTH_HOST": "https://task:6443"}, play={"K8S_AUTH_HOST": "https://play:6443"}), {},
     "host", "https://task:6443", "task environment K8S_AUTH_HOST"),
    ({}, {}, {"kube_host": "https://var:6443"}, "host", "https://var:6443", "host var kube_host of cluster1"),
    ({}, {"K8S_AUTH_VALIDATE_CERTS": "no", "K8S_AUTH_VERIFY_SSL": "yes"}, {}, "validate_certs", False,
     "controller environment K8S_AUTH_VALIDATE_CERTS"),
    ({}, {"K8S_AUTH_VERIFY_SSL": "False"}, {}, "validate_certs", False, "controller environment K8S_AUTH_VERIFY_SSL"),
    ({}, {"K8S_AUTH_VERIFY_SSL": "0"}, {}, "validate_certs", False, "controller environment K8S_AUTH_VERIFY_SSL"),
    ({}, {"K8S_AUTH_VERIFY_SSL": "True"}, {}, "validate_certs", True, "controller environment K8S_AUTH_VERIFY_SSL"),
    ({}, {"K8S_AUTH_VERIFY_SSL": "anything"}, {}, "validate_certs", True, "controller environment K8S_AUTH_VERIFY_SSL"),
    ({}, {"K8S_AUTH_VERIFY_SSL": ""}, {"kube_validate_certs": "no"}, "validate_certs", False,
     "host var kube_validate_certs of cluster1"),
    ({}, {"K8S_AUTH_SSL_CA_CERT": "/ca.crt"}, {}, "ca_cert", "/ca.crt", "controller environment K8S_AUTH_SSL_CA_CERT"),
    ({}, {"K8S_AUTH_CA_CERT": "/a.crt", "K8S_AUTH_SSL_CA_CERT": "/b.crt"}, {}, "ca_cert", "/a.crt",
     "controller environment K8S_AUTH_CA_CERT"),
    ({}, {"K8S_AUTH_CERT_FILE": "/c.crt"}, {}, "client_cert", "/c.crt", "controller environment K8S_AUTH_CERT_FILE"),
    ({}, {"K8S_AUTH_KEY_FILE": "/c.key"}, {}, "client_key", "/c.key", "controller environment K8S_AUTH_KEY_FILE"),
    ({}, {"K8S_AUTH_IMPERSONATE_GROUPS": "g1,,g2"}, {"kube_impersonate_user": "u"}, "impersonate_groups",
     ["g1", "g2"], "controller environment K8S_AUTH_IMPERSONATE_GROUPS"),
    ({}, {}, {"kube_impersonate_groups": "g1,g2", "kube_impersonate_user": "u"}, "impersonate_groups",
     ["g1", "g2"], "host var kube_impersonate_groups of cluster1"),
    ({"api_key": ""}, {"K8S_AUTH_API_KEY": TOKEN}, {}, "api_key", TOKEN, "controller environment K8S_AUTH_API_KEY"),
    ({}, {"K8S_AUTH_PERSIST_CONFIG": "false"}, {}, "persist_config", False, "controller environment K8S_AUTH_PERSIST_CONFIG"),
], ids=["task-parameter-wins", "host-var-beats-environment", "environment-fills-what-host-leaves-unset",
        "play-environment-beats-controller", "task-environment-beats-play", "host-vars", "validate-certs-name-before-verify-ssl",
        "verify-ssl-false", "verify-ssl-zero", "verify-ssl-true", "other-words-are-true",
        "empty-environment-is-unset", "ssl-ca-cert", "ca-cert-name-before-ssl-ca-cert", "cert-file", "key-file",
        "groups-comma-separated", "host-var-groups-string", "empty-task-parameter-is-unset",
        "persist-config-false-accepted"])
def test_each_option_from_task_then_host_vars_then_environment(task, environ, host_vars, name, value, origin):
    found = options(task, environ, host_vars)
    assert (found.get(name), found.origin(name)) == (value, origin)


@pytest.mark.parametrize("set_options, complete, credential", [
    ({"host": "h", "api_key": TOKEN}, True, ("api_key",)),
    ({"host": "h", "username": "u", "password": "p"}, True, ("username", "password")),
    ({"host": "h", "client_cert": "c", "client_key": "k"}, True, ("client_cert", "client_key")),
    ({"host": "h"}, False, ()),
    ({"api_key": TOKEN}, False, ("api_key",)),
    ({"host": "h", "ca_cert": "/ca", "validate_certs": True}, False, ()),
    ({"host": "h", "api_key": TOKEN, "username": "u", "password": "p"}, True, ("api_key",)),
], ids=["host-and-api-key", "host-username-password", "host-client-certificate", "host-alone-overrides",
        "api-key-alone-overrides", "tls-options-are-no-credential", "token-wins-over-basic"])
def test_complete_connection_rule(set_options, complete, credential):
    found = options(set_options)
    assert (found.complete, found.credential) == (complete, credential)


@pytest.mark.parametrize("task, message", [
    ({"impersonate_groups": ["g"]}, "impersonate_groups .* without impersonate_user"),
    ({"proxy_headers": {"user_agent": "x/1"}, "proxy": "http://p:3128"}, "proxy_headers .* not supported"),
    ({"username": "u"}, r"username \(from task parameter username\) without password"),
    ({"password": "p"}, "password .* without username"),
], ids=["groups-need-a-user", "proxy-headers-refused", "username-needs-password",
        "password-needs-username"])
def test_what_cannot_be_honoured_is_refused(task, message):
    with pytest.raises(PhasekitError, match=message):
        options(task)


@pytest.mark.parametrize("host_vars, message", [
    ({"kube_validate_certs": "maybe"}, "host var kube_validate_certs of cluster1: expected true or false"),
    ({"kube_host": ["a"]}, "host var kube_host of cluster1: expected a string, got list"),
    ({"kube_api_key": 42}, "host var kube_api_key of cluster1: expected a string, got int"),
    ({"kube_impersonate_groups": [1]}, "expected a list of strings"),
], ids=["bool", "string", "secret-type-not-value", "list"])
def test_bad_host_vars_name_the_variable(host_vars, message):
    with pytest.raises(PhasekitError, match=message):
        options(host_vars=host_vars)


@pytest.mark.parametrize("server, no_proxy, bypassed", [
    ("https://10.1.2.3:6443", "10.0.0.0/8", True),
    ("https://api.example.com:6443", ".example.com", True),
    ("https://api.example.com:6443", "example.com", True),
    ("https://api.example.com:6443", "api.example.com:6443", True),
    ("https://api.example.org", "example.com,localhost", False),
    ("https://anything", "*", True),
    ("https://127.0.0.1:6443", "", False),
], ids=["cidr", "leading-dot-suffix", "suffix", "host-and-port", "no-match", "star", "empty"])
def test_no_proxy_matches_as_the_kubernetes_client(server, no_proxy, bypassed):
    assert bypasses_proxy(server, no_proxy) is bypassed


def kubeconfig_file(tmp_path, name="kc.yaml", **user):
    config = {"apiVersion": "v1", "kind": "Config", "current-context": "file",
              "clusters": [{"name": "file-cluster",
                            "cluster": {"server": "https://file.test:6443", "proxy-url": "http://proxy.test:3128"}}],
              "users": [{"name": "file-user", "user": user or {"token": "file-token"}}],
              "contexts": [{"name": "file", "context": {"cluster": "file-cluster", "user": "file-user"}}]}
    path = tmp_path / name
    path.write_text(yaml.safe_dump(config))
    return str(path)


def resolve(task, environ, host_vars=None, keep_merged=False):
    return glue.HostResolver(None, None, environ).resolve("cluster1", (host_vars or {}).get, task,
                                                          keep_merged=keep_merged)


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def test_host_and_api_key_read_no_kubeconfig(tmp_path):
    """K8S_AUTH_HOST + K8S_AUTH_API_KEY: the kubeconfig (even a task parameter) is not read, as in kubernetes.core;
    the provenance says why."""
    (tmp_path / "ca.crt").write_text("-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n")
    environ = {"K8S_AUTH_HOST": "https://env.test:6443/", "K8S_AUTH_API_KEY": TOKEN,
               "K8S_AUTH_SSL_CA_CERT": str(tmp_path / "ca.crt"), "K8S_AUTH_VERIFY_SSL": "True"}
    resolution = resolve({"kubeconfig": str(tmp_path / "missing.yaml"), "context": "nope"}, environ)
    cluster = resolution.config["clusters"][0]["cluster"]
    assert cluster == {"server": "https://env.test:6443", "insecure-skip-tls-verify": False,
                       "certificate-authority-data": b64((tmp_path / "ca.crt").read_text())}
    assert resolution.config["users"][0]["user"] == {"token": TOKEN}
    summary = resolution.summary()
    assert summary["server"] == "https://env.test:6443"
    assert summary["provenance"]["cluster"] == {"from": "controller environment K8S_AUTH_HOST"}
    assert summary["provenance"]["user"] == {"from": "controller environment K8S_AUTH_API_KEY"}
    assert summary["provenance"]["connection"]["ca_cert"] == {"from": "controller environment K8S_AUTH_SSL_CA_CERT"}
    assert "not read: host (from controller environment K8S_AUTH_HOST) and api_key (from controller environment K8S_AUTH_API_KEY)" in \
        summary["provenance"]["kubeconfig_from"]
    assert summary["provenance"]["kubeconfig_from"].startswith("task parameter kubeconfig")
    assert "task parameter context" in summary["provenance"]["context_from"]
    assert TOKEN not in json.dumps(summary)


@pytest.mark.parametrize("task, environ, cluster, user", [
    ({}, {"K8S_AUTH_HOST": "https://other.test:6443"},
     {"server": "https://other.test:6443", "proxy-url": "http://proxy.test:3128"}, {"token": "file-token"}),
    ({"api_key": TOKEN}, {},
     {"server": "https://file.test:6443", "proxy-url": "http://proxy.test:3128"}, {"token": TOKEN}),
    ({"validate_certs": False}, {},
     {"server": "https://file.test:6443", "proxy-url": "http://proxy.test:3128", "insecure-skip-tls-verify": True},
     {"token": "file-token"}),
    ({"no_proxy": "file.test"}, {}, {"server": "https://file.test:6443"}, {"token": "file-token"}),
    ({"proxy": "http://p2.test:8080", "no_proxy": "elsewhere.test"}, {},
     {"server": "https://file.test:6443", "proxy-url": "http://p2.test:8080"}, {"token": "file-token"}),
    ({"impersonate_user": "jane", "impersonate_groups": ["dev"]}, {"K8S_AUTH_HOST": ""},
     {"server": "https://file.test:6443", "proxy-url": "http://proxy.test:3128"},
     {"token": "file-token", "as": "jane", "as-groups": ["dev"]}),
    ({"username": "u"}, {"K8S_AUTH_PASSWORD": "pw"},
     {"server": "https://file.test:6443", "proxy-url": "http://proxy.test:3128"}, {"username": "u", "password": "pw"}),
], ids=["host-overrides-server-keeps-user", "api-key-replaces-token", "validate-certs-false", "no-proxy-bypasses",
        "proxy-replaced-no-proxy-elsewhere", "impersonation", "username-password-over-token"])
def test_options_override_the_kubeconfig_context(tmp_path, task, environ, cluster, user):
    resolution = resolve({"kubeconfig": kubeconfig_file(tmp_path), **task}, environ)
    assert resolution.context == "file"
    assert resolution.config["clusters"][0]["cluster"] == cluster
    assert resolution.config["users"][0]["user"] == user
    from_environment = {ENV_OPTION[name] for name, value in environ.items() if value}
    assert set(resolution.provenance["connection"]) == set(task) | from_environment
    assert resolution.provenance["context"]["kind"] == "path"


def test_host_vars_reach_plan_phases_and_beat_the_environment(tmp_path):
    host_vars = {"kube_kubeconfig": kubeconfig_file(tmp_path), "kube_host": "https://var.test:6443",
                 "kube_impersonate_user": "jane"}
    resolution = resolve({}, {"K8S_AUTH_HOST": "https://env.test:6443", "K8S_AUTH_PROXY": "http://proxy.test:3128"},
                         host_vars)
    assert resolution.server == "https://var.test:6443"
    assert resolution.provenance["connection"] == {"host": {"from": "host var kube_host of cluster1"},
                                                   "proxy": {"from": "controller environment K8S_AUTH_PROXY"},
                                                   "impersonate_user": {
                                                       "from": "host var kube_impersonate_user of cluster1"}}
    assert resolution.config["users"][0]["user"]["as"] == "jane"


def test_client_certificate_files_are_embedded(tmp_path):
    (tmp_path / "c.crt").write_text("CERT")
    (tmp_path / "c.key").write_text("KEY")
    resolution = resolve({"host": "https://h.test", "client_cert": str(tmp_path / "c.crt"),
                          "client_key": str(tmp_path / "c.key")}, {})
    assert resolution.config["users"][0]["user"] == {"client-certificate-data": b64("CERT"),
                                                     "client-key-data": b64("KEY")}
    assert resolution.provenance["user"] == {"from": "task parameter client_cert, task parameter client_key"}


def test_unreadable_ca_names_option_and_origin(tmp_path):
    with pytest.raises(PhasekitError, match=r"ca_cert \(from controller environment K8S_AUTH_SSL_CA_CERT\): cannot read .*/no.crt: "
                                            "No such file"):
        resolve({}, {"K8S_AUTH_HOST": "https://h", "K8S_AUTH_API_KEY": TOKEN,
                     "K8S_AUTH_SSL_CA_CERT": str(tmp_path / "no.crt")})


def test_a_remembered_resolution_is_not_reused_when_the_options_change(tmp_path):
    first = resolve({"kubeconfig": kubeconfig_file(tmp_path)}, {})
    registered = {glue.RESOLUTION_KEY: first.to_memory()}
    host_vars = {"phasekit_kube_resolved": registered}
    assert resolve({"kubeconfig": kubeconfig_file(tmp_path)}, {}, host_vars).reused
    moved = resolve({"kubeconfig": kubeconfig_file(tmp_path)}, {"K8S_AUTH_HOST": "https://other.test"}, host_vars)
    assert not moved.reused and moved.server == "https://other.test"


def test_keep_merged_applies_the_options_to_the_chosen_context(tmp_path):
    resolution = resolve({"kubeconfig": kubeconfig_file(tmp_path), "host": "https://other.test"}, {},
                         keep_merged=True)
    assert resolution.merged["clusters"][0]["cluster"]["server"] == "https://other.test"


def test_every_cluster_action_takes_the_options():
    spec = glue.AUTH_ARGUMENT_SPEC
    assert {"host", "api_key", "ca_cert", "validate_certs", "client_cert", "client_key", "proxy", "no_proxy",
            "proxy_headers", "username", "password", "impersonate_user", "impersonate_groups",
            "persist_config"} <= set(spec)
    assert spec["api_key"]["no_log"] and spec["password"]["no_log"]
    assert spec["ca_cert"]["aliases"] == ["ssl_ca_cert"] and spec["validate_certs"]["aliases"] == ["verify_ssl"]
    assert spec["client_cert"]["aliases"] == ["cert_file"] and spec["client_key"]["aliases"] == ["key_file"]


OIDC_USER = {"auth-provider": {"name": "oidc", "config": {"id-token": TOKEN, "idp-issuer-url": "https://idp.test"}}}


@pytest.mark.parametrize("user, task, refused", [
    ({"token": "file-token"}, {"persist_config": True}, False),
    (OIDC_USER, {"persist_config": False}, False),
    (OIDC_USER, {"persist_config": True}, True),
    (OIDC_USER, {"persist_config": True, "host": "https://h.test", "api_key": TOKEN}, False),
], ids=["no-token-to-write-back-changes-nothing", "false-is-accepted", "auth-provider-tokens-would-be-written-back",
        "complete-connection-reads-no-kubeconfig"])
def test_persist_config_is_refused_only_where_kubernetes_core_would_write_a_token_back(tmp_path, user, task, refused):
    """kubernetes.core's persist_config makes the kubernetes client write an auth-provider's refreshed token back to
    the kubeconfig file; for any other user it changes nothing. phasekit never writes to a source."""
    given = {"kubeconfig": kubeconfig_file(tmp_path, **user), **task}
    if not refused:
        assert resolve(given, {}).context in ("file", "connection-options")
        return
    with pytest.raises(PhasekitError) as err:
        resolve(given, {})
    message = str(err.value)
    assert message.startswith("persist_config (from task parameter persist_config): user 'file-user' "
                              "authenticates with oidc") and TOKEN not in message


@pytest.mark.parametrize("task, environ, context, server, user, origin", [
    ({}, {}, None, "https://file.test:6443", {"token": "file-token"}, {}),
    ({}, {"K8S_AUTH_HOST": "https://env.test:6443"}, None, "https://env.test:6443", {"token": "file-token"},
     {"host": {"from": "controller environment K8S_AUTH_HOST"}}),
    ({"api_key": TOKEN}, {}, "file", "https://file.test:6443", {"token": TOKEN},
     {"api_key": {"from": "lookup option api_key"}}),
    ({"host": "https://kw.test:6443", "api_key": TOKEN}, {"K8S_AUTH_HOST": "https://env.test:6443"}, None,
     "https://kw.test:6443", {"token": TOKEN},
     {"host": {"from": "lookup option host"}, "api_key": {"from": "lookup option api_key"}}),
], ids=["no-options-kubectl-config-view", "environment-host-over-current-context", "keyword-token-over-context",
        "complete-connection-reads-no-source"])
def test_the_lookup_view_takes_the_options_as_the_actions(tmp_path, task, environ, context, server, user, origin):
    sources = glue.normalize_sources({"path": kubeconfig_file(tmp_path)}, "lookup sources")
    connection = connection_options(task, environ, {}.get, None, given_as="lookup option")
    config, provenance = view_with_connection(sources, context, connection)
    assert (config["clusters"][0]["cluster"]["server"], config["users"][0]["user"]) == (server, user)
    assert provenance.get("connection", {}) == origin


def test_the_lookup_says_when_the_options_have_no_context_to_apply_to(tmp_path):
    sources = glue.normalize_sources({"path": kubeconfig_file(tmp_path)}, "lookup sources")
    connection = connection_options({}, {"K8S_AUTH_HOST": "https://env.test:6443"}, {}.get, None)
    with pytest.raises(PhasekitError, match=r"host \(from controller environment K8S_AUTH_HOST\) has no context to apply to: context "
                                            r"'nope', which no source defines; known contexts: 'file'"):
        view_with_connection(sources, "nope", connection)
