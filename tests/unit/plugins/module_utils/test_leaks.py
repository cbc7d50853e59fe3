# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Secrets that messages, diffs and inventories used to repeat: one row per leak found by the hostile-input probe."""

from __future__ import annotations

import base64
import ssl

import pytest
from pki import make_pki

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.inventory.source_refs import check_source_refs
from ansible_collections.phasekit.kube.plugins.module_utils.kube.diff import scrub_secret_values
from ansible_collections.phasekit.kube.plugins.module_utils.kube.wait import wait_rules
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.redact import redact_exec_args, redact_kubeconfig

TOKEN = "tok-9f8e7d6c5b4a"
SECRET = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"token": "dG9r"},
          "stringData": {"password": TOKEN, "pin": 987654}}


def test_wait_condition_on_a_secret_does_not_echo_its_value():
    rules = wait_rules({"conditions": [{"path": "data.token", "value": "c2VjcmV0"}]})
    met, message = rules.conditions[0].check({**SECRET, "data": {"token": TOKEN}})
    assert not met and TOKEN not in message and "c2VjcmV0" not in message
    assert "data.token is *** (a Secret value)" in message


def test_wait_condition_on_other_objects_still_says_what_it_saw():
    rules = wait_rules({"conditions": [{"path": "data.mode", "value": "on"}]})
    _met, message = rules.conditions[0].check({"kind": "ConfigMap", "data": {"mode": "off"}})
    assert message == "data.mode is 'off', expected 'on'"


@pytest.mark.parametrize("message", [
    f"Secret \"s\" is invalid: stringData.password: Invalid value: \"{TOKEN}\"",
    ".stringData.pin: expected string, got &value.valueUnstructured{Value:987654}",
], ids=["string-value-quoted", "non-string-value-quoted"])
def test_api_server_messages_about_a_secret_lose_its_values(message):
    scrubbed = scrub_secret_values(message, SECRET)
    assert TOKEN not in scrubbed and "987654" not in scrubbed and "***" in scrubbed


def test_messages_about_other_objects_are_untouched():
    message = f"ConfigMap \"c\" is invalid: {TOKEN}"
    assert scrub_secret_values(message, {"kind": "ConfigMap", "data": {"a": TOKEN}}) == message


@pytest.mark.parametrize("args, shown", [
    (["--token=abc123", "get-token"], ["--token=REDACTED", "get-token"]),
    (["--password", "hunter22", "--region", "eu"], ["--password", "REDACTED", "--region", "eu"]),
    (["eks", "get-token", "--cluster-name", "prod"], ["eks", "get-token", "--cluster-name", "prod"]),
    (["--client-secret=x", "--api-key", "k"], ["--client-secret=REDACTED", "--api-key", "REDACTED"]),
], ids=["flag-equals", "flag-then-value", "harmless-args-kept", "secret-and-key"])
def test_exec_args_hide_secret_flags(args, shown):
    assert redact_exec_args(args) == shown


def test_merge_diff_view_hides_exec_args_of_users_in_the_file():
    config = {"users": [{"name": "u", "user": {"exec": {"command": "aws", "args": ["--token=abc123"]}}}]}
    assert redact_kubeconfig(config)["users"][0]["user"]["exec"]["args"] == ["--token=REDACTED"]


@pytest.mark.parametrize("url", [
    "https://user:pass@kc.example/target", "https://kc.example/target?token=abc", "https://kc.example/t?sig=1",
], ids=["userinfo", "token-query", "any-query"])
def test_inventory_refuses_url_sources_carrying_credentials(url):
    with pytest.raises(PhasekitError, match="credentials in the URL|the url carries credentials"):
        check_source_refs({"url": url}, base_dir="/site", where="site.yml: clusters[1]")


def test_inventory_keeps_a_url_whose_token_is_templated():
    url = "https://kc.example/target?token={{ lookup('env', 'KC_TOKEN') }}"
    assert check_source_refs({"url": url}, base_dir="/site", where="site.yml: clusters[1]") == {"url": url}


@pytest.mark.parametrize("output, kept", [
    ("Error: trouble configuring builtin PatchTransformer with config: `\npatch: |-\n  stringData:\n    token: " + TOKEN,
     "trouble configuring builtin PatchTransformer"),
    ("Error: accumulating resources: accumulation err='accumulating resources from 'x.yaml': missing'",
     "accumulating resources: accumulation err='accumulating resources from 'x.yaml': missing'"),
    ('E1124 18:47:15.335847   26785 run.go:72] "command failed" err=<\n\ttrouble configuring builtin '
     'PatchTransformer with config: `\n\tpatch: |-\n\t  token: ' + TOKEN + '\n >',
     "trouble configuring builtin PatchTransformer"),
    ('E1124 18:47:15.401929   26792 run.go:72] "command failed" err="accumulating resources from \'x.yaml\'"',
     "accumulating resources from 'x.yaml'"),
], ids=["patch-config-withheld", "plain-reason-kept", "klog-multi-line", "klog-quoted"])
def test_kustomize_failures_keep_the_reason_not_the_quoted_config(output, kept):
    from ansible_collections.phasekit.kube.plugins.module_utils.bundle import kustomize_failure
    message = kustomize_failure(output, "/site/apps")
    assert message.startswith(kept)
    assert TOKEN not in message


def test_merge_into_a_symlink_writes_through_it(tmp_path):
    from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.write import apply_write, plan_dest
    real = tmp_path / "real-config"
    real.write_text("apiVersion: v1\nkind: Config\n")
    link = tmp_path / "config"
    link.symlink_to(real)
    apply_write(plan_dest(str(link), {"apiVersion": "v1", "kind": "Config", "current-context": "x"}))
    assert link.is_symlink() and "current-context: x" in real.read_text()


def test_dest_in_a_missing_directory_fails_and_writes_nothing(tmp_path):
    from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.write import apply_write, plan_dest
    target = tmp_path / "missing" / "config"
    with pytest.raises(PhasekitError, match="does not exist"):
        apply_write(plan_dest(str(target), {"apiVersion": "v1", "kind": "Config"}), create_directory=False)
    assert not (tmp_path / "missing").exists()


def test_a_plaintext_file_is_not_accepted_as_a_vault_source(tmp_path):
    from ansible_collections.phasekit.kube.plugins.plugin_utils import kubeconfig as glue
    plain = tmp_path / "k.yaml"
    plain.write_text("apiVersion: v1\nkind: Config\n")

    class Loader:
        def get_text_file_contents(self, path):
            return plain.read_text()

    host_vars = {"kube_kubeconfig": {"vault": str(plain)}, "kube_context": "x"}
    with pytest.raises(PhasekitError, match="not an ansible-vault encrypted file"):
        glue.HostResolver(Loader(), None, {}).resolve("h", host_vars.get, {})


@pytest.fixture(scope="module")
def tls_kubeconfig(tmp_path_factory):
    """A kubeconfig embedding a real CA, client certificate and key; and the PEM bytes by client attribute."""
    import base64
    pki = make_pki(tmp_path_factory.mktemp("pki"))
    pem = {"ssl_ca_cert": (pki / "ca.crt").read_bytes(), "cert_file": (pki / "client.crt").read_bytes(),
           "key_file": (pki / "client.key").read_bytes()}
    data = {name: base64.b64encode(value).decode() for name, value in pem.items()}
    config = {"apiVersion": "v1", "kind": "Config", "current-context": "c",
              "clusters": [{"name": "k", "cluster": {"server": "https://127.0.0.1:1",
                                                     "certificate-authority-data": data["ssl_ca_cert"]}}],
              "users": [{"name": "u", "user": {"client-certificate-data": data["cert_file"],
                                               "client-key-data": data["key_file"]}}],
              "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}]}
    return config, pem


def test_a_client_with_the_material_of_an_open_one_takes_its_context_and_writes_no_file(tls_kubeconfig):
    """A fleet step keeps one client per cluster while other clients (a parent's Secret read) come and go. A client
    whose TLS material an open client holds takes that client's context (client-go's transport cache shares one
    TLS configuration) and writes no file; when the other closes and its files go, the context still holds the
    material, loaded in memory."""
    from ansible_collections.phasekit.kube.plugins.module_utils.kube.client import api_client
    config, _pem = tls_kubeconfig
    short_lived_block = api_client(config)
    short_lived = short_lived_block.__enter__()  # pylint: disable=unnecessary-dunder-call
    with api_client(config) as long_lived:        # made while the other client is open
        context = long_lived.rest_client.pool_manager.connection_pool_kw["ssl_context"]
        assert context is short_lived.rest_client.pool_manager.connection_pool_kw["ssl_context"]
        assert all(getattr(long_lived.configuration, attribute) is None
                   for attribute in ("ssl_ca_cert", "cert_file", "key_file"))
        short_lived_block.__exit__(None, None, None)
        assert [cert["subject"] for cert in context.get_ca_certs()] == [((("commonName", "phasekit test CA"),),)]


def test_a_client_with_other_material_gets_its_own_context(tls_kubeconfig, tmp_path):
    import copy
    from ansible_collections.phasekit.kube.plugins.module_utils.kube.client import api_client
    config, _pem = tls_kubeconfig
    other = copy.deepcopy(config)
    other_pki = make_pki(tmp_path)
    user = other["users"][0]["user"]
    user["client-certificate-data"] = base64.b64encode((other_pki / "client.crt").read_bytes()).decode()
    user["client-key-data"] = base64.b64encode((other_pki / "client.key").read_bytes()).decode()
    with api_client(config) as first, api_client(other) as second:
        contexts = [api.rest_client.pool_manager.connection_pool_kw["ssl_context"] for api in (first, second)]
        assert contexts[0] is not contexts[1]
        assert second.configuration.cert_file is not None   # built from files of its own


def test_clients_built_at_once_in_threads_each_get_complete_tls_files(tls_kubeconfig):
    """A fleet builds its hosts' clients in a pool: every client gets whole files of its own (or the loaded context
    of an open client with the same material), whatever the others do at the same time (the loader's shared table
    named a file before writing it, and removed it with its first client: a fleet host then failed with 'PEM lib')."""
    import copy
    import os
    import threading
    from ansible_collections.phasekit.kube.plugins.module_utils.kube.client import api_client
    config, pem = tls_kubeconfig
    original = copy.deepcopy(config)
    problems, start = [], threading.Barrier(24)

    def one_client():
        start.wait()
        try:
            several_clients()
        except Exception as exc:  # pylint: disable=broad-exception-caught
            problems.append(repr(exc))  # reported by the assertion below instead of lost in the thread

    def several_clients():
        for _round in range(5):
            with api_client(config) as api:
                for attribute, expected in pem.items():
                    path = getattr(api.configuration, attribute)
                    if path is None:   # the context of another open client with this material: no file written
                        if not api.rest_client.pool_manager.connection_pool_kw["ssl_context"].get_ca_certs():
                            problems.append(f"{attribute}: neither a file nor a loaded context")
                        continue
                    with open(path, "rb") as handle:
                        if handle.read() != expected:
                            problems.append(f"{attribute}: {path} incomplete")
                    if os.stat(path).st_mode & 0o077:
                        problems.append(f"{attribute}: {path} readable by others")

    threads = [threading.Thread(target=one_client) for _thread in range(24)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not problems, problems[:3]
    assert config == original  # the caller's kubeconfig is left as it was


def test_every_connection_of_a_client_shares_one_tls_context(tls_kubeconfig):
    """urllib3 would build a context and parse the CA, certificate and key files again for each connection
    (hundreds in a fleet step); the client hands it one context, loaded once, and no file names."""
    from ansible_collections.phasekit.kube.plugins.module_utils.kube.client import api_client
    config, _pem = tls_kubeconfig
    with api_client(config) as api:
        pool_kw = api.rest_client.pool_manager.connection_pool_kw
        context = pool_kw["ssl_context"]
        assert context.verify_mode == ssl.CERT_REQUIRED
        assert [cert["subject"] for cert in context.get_ca_certs()] == [((("commonName", "phasekit test CA"),),)]
        assert all(pool_kw.get(key) is None for key in ("ca_certs", "ca_cert_data", "cert_file", "key_file"))
        pool = api.rest_client.pool_manager.connection_from_url("https://127.0.0.1:1")
        assert pool.conn_kw["ssl_context"] is context


def test_insecure_skip_tls_verify_loads_no_ca(tls_kubeconfig):
    import copy
    from ansible_collections.phasekit.kube.plugins.module_utils.kube.client import api_client
    config = copy.deepcopy(tls_kubeconfig[0])
    cluster = config["clusters"][0]["cluster"]
    del cluster["certificate-authority-data"]
    cluster["insecure-skip-tls-verify"] = True
    with api_client(config) as api:
        context = api.rest_client.pool_manager.connection_pool_kw["ssl_context"]
        assert context.verify_mode == ssl.CERT_NONE and not context.check_hostname
        assert context.get_ca_certs() == []


@pytest.mark.parametrize("field", ["certificate-authority-data", "client-key-data"])
def test_broken_tls_material_is_refused_when_the_client_is_made_without_echoing_it(tls_kubeconfig, field):
    import base64
    import copy
    from ansible_collections.phasekit.kube.plugins.module_utils.kube.client import api_client
    config = copy.deepcopy(tls_kubeconfig[0])
    section = config["clusters"][0]["cluster"] if field.startswith("certificate") else config["users"][0]["user"]
    broken = b"-----BEGIN PRIVATE KEY-----\nc2VjcmV0LWtleS1ieXRlcw==\n-----END PRIVATE KEY-----\n" \
        if field == "client-key-data" else b"-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n"
    section[field] = base64.b64encode(broken).decode()
    with pytest.raises(PhasekitError) as err:
        with api_client(config):
            pass
    message = str(err.value)
    assert message.startswith("cannot use kubeconfig: its TLS certificate or key: ")
    assert "c2VjcmV0" not in message and "bm90IGEg" not in message and section[field] not in message


def _swap_certificate_and_key(user):
    user["client-certificate-data"], user["client-key-data"] = user["client-key-data"], user["client-certificate-data"]


@pytest.mark.parametrize("change, expected", [
    (_swap_certificate_and_key,
     "cannot use kubeconfig: users[u].user.client-certificate-data: expected the base64 of a PEM certificate"),
    (lambda user: user.__setitem__("client-key-data", user["client-certificate-data"]),
     "cannot use kubeconfig: users[u].user.client-key-data: expected the base64 of a PEM private key"),
    (lambda user: user.__setitem__("token", base64.b64decode(user["client-key-data"]).decode()),
     "cannot use kubeconfig: users[u].user.token holds a line break or a character an HTTP header cannot carry"),
    (lambda user: user.__setitem__("token", "abc\r\nX-Injected: 1"), "users[u].user.token holds a line break"),
    (lambda user: user.update({"as": "jane", "as-groups": ["dev\nops"]}), "users[u].user.as-groups holds a line"),
], ids=["certificate-and-key-swapped", "certificate-as-key", "pem-key-as-token", "token-with-crlf",
        "impersonated-group-with-line-break"])
def test_misplaced_credentials_are_refused_by_field_without_echoing_them(tls_kubeconfig, change, expected):
    """A credential in the wrong field is refused naming the user and the field; the TLS library would only say
    'PEM lib', and Python's HTTP client would echo a header value with the key in it."""
    import copy
    from ansible_collections.phasekit.kube.plugins.module_utils.kube.client import api_client
    config = copy.deepcopy(tls_kubeconfig[0])
    user = config["users"][0]["user"]
    secrets = [base64.b64decode(user[key]).decode() for key in ("client-key-data", "client-certificate-data")]
    change(user)
    with pytest.raises(PhasekitError) as err:
        with api_client(config):
            pass
    message = str(err.value)
    assert message.startswith("cannot use kubeconfig: ") and expected in message
    assert not any(line in message for secret in secrets for line in secret.splitlines()[1:-1])
    assert "X-Injected" not in message


def test_a_header_value_an_exec_plugin_returns_is_refused_without_echoing_it():
    """An exec plugin's token reaches the header only when a request is sent: refused there, by header name."""
    from ansible_collections.phasekit.kube.plugins.module_utils.kube.session import ApiSession, TransportError

    class Configuration:
        host = "https://127.0.0.1:6443"

        @staticmethod
        def auth_settings():
            return {"BearerToken": {"in": "header", "key": "authorization", "value": "Bearer line1\nsecret-line2"}}

    client = type("Client", (), {"configuration": Configuration(),
                                 "rest_client": type("Rest", (), {"pool_manager": None})()})()
    with pytest.raises(TransportError) as err:
        ApiSession(client).get("/api/v1/namespaces")
    assert str(err.value).startswith("cannot send the authorization header to https://127.0.0.1:6443: its value holds")
    assert "secret-line2" not in str(err.value)


KEY_BASE64 = base64.b64encode(b"-----BEGIN RSA PRIVATE KEY-----\nMIIEsecretsecretsecret+/==\n").decode()


@pytest.mark.parametrize("server", [
    "https://" + KEY_BASE64,
    "https://" + "a" * 300,
    "https://" + "a" * 64 + ".example",
    "ftp://example.com",
    "https://",
    "https://exa mple.com",
    "https://example.com:99999",
    "https://example.com\n" + KEY_BASE64,
], ids=["base64-key-as-host", "host-over-253", "label-over-63", "not-http", "no-host", "space-in-host",
        "port-out-of-range", "line-break"])
def test_an_unusable_server_url_is_refused_showing_only_its_start(tls_kubeconfig, server):
    import copy
    from ansible_collections.phasekit.kube.plugins.module_utils.kube.client import api_client
    config = copy.deepcopy(tls_kubeconfig[0])
    config["clusters"][0]["cluster"]["server"] = server
    with pytest.raises(PhasekitError) as err:
        with api_client(config):
            pass
    message = str(err.value)
    assert message.startswith("cannot use kubeconfig: clusters[k].cluster.server: expected an https:// URL with a "
                              f"host name or IP address, got {server[:16]!r}"[:-1])
    assert KEY_BASE64[10:30] not in message and "a" * 20 not in message


@pytest.mark.parametrize("server", ["https://127.0.0.1:6443", "https://[::1]:6443", "http://localhost:8080",
                                    "https://api.my_cluster.example.com", "127.0.0.1:6443", "https://k8s.example./"],
                         ids=["ipv4", "ipv6", "http-name", "underscore", "no-scheme", "trailing-dot"])
def test_usable_server_urls_are_accepted(tls_kubeconfig, server):
    import copy
    from ansible_collections.phasekit.kube.plugins.module_utils.kube.client import api_client
    config = copy.deepcopy(tls_kubeconfig[0])
    config["clusters"][0]["cluster"]["server"] = server
    with api_client(config):
        pass
