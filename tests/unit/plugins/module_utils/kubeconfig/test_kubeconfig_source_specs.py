# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Source specifications: accepted forms, defaults, and the errors for everything else."""

from __future__ import annotations

import os

import pytest
from vaulted import vaulted

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.sources import expand_source
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.sources import normalize_sources
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.sources import safe_url
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.sources import split_path_list


@pytest.mark.parametrize("written, expected", [
    ("a.yaml:b.yaml", [{"path": "a.yaml:b.yaml"}]),
    ({"env": None}, [{"env": "KUBECONFIG"}]),
    ([{"env": "MY_KUBECONFIG", "optional": True}], [{"env": "MY_KUBECONFIG", "optional": True}]),
    ({"content": "apiVersion: v1"}, [{"content": "apiVersion: v1"}]),
    ({"apiVersion": "v1", "clusters": []}, [{"content": {"apiVersion": "v1", "clusters": []}}]),
    ({"url": "https://h/k", "headers": {"Authorization": "Bearer x"}},
     [{"url": "https://h/k", "headers": {"Authorization": "Bearer x"}, "timeout": 30, "validate_certs": True}]),
    ({"sops": "s.enc.yaml", "input_type": "yaml"}, [{"sops": "s.enc.yaml", "input_type": "yaml"}]),
    ({"vault": "v.yaml"}, [{"vault": "v.yaml"}]),
    ({"secret": {"name": "c1-kubeconfig"}},
     [{"secret": {"name": "c1-kubeconfig", "namespace": "default", "key": "value", "host": None, "timeout": 60}}]),
    ({"secret": "c1-kubeconfig"},
     [{"secret": {"name": "c1-kubeconfig", "namespace": "default", "key": "value", "host": None, "timeout": 60}}]),
    (["a.yaml", {"path": "b.yaml"}], [{"path": "a.yaml"}, {"path": "b.yaml"}]),
    (None, []),
], ids=["path-list-string", "env-defaults-to-KUBECONFIG", "optional", "content-text", "inline-kubeconfig",
        "url-defaults", "sops-input-type", "vault", "secret-defaults", "secret-by-name", "mixed-list", "none"])
def test_accepted_sources(written, expected):
    specs = normalize_sources(written, "host var kube_kubeconfig")
    assert [spec.to_dict() for spec in specs] == expected
    assert [spec.index for spec in specs] == list(range(1, len(expected) + 1))


@pytest.mark.parametrize("written, message", [
    ({"file": "a.yaml"}, "source 1: a source needs exactly one of path, env, content, url, sops, vault, secret, "
                         "bundle; found keys file"),
    ({"path": "a", "sops": "b"}, "source 1: a source needs exactly one of .*; found path, sops"),
    ({"path": "a", "ca_path": "x"}, r"source 1 \(path\): unknown option ca_path; a path source accepts path, optional"),
    ({"path": ""}, r"source 1 \(path\): expected a file path or a KUBECONFIG-style path list"),
    ({"path": 5}, r"source 1 \(path\): expected a file path"),
    ({"path": "a", "optional": "yes"}, r"source 1 \(path\): optional must be true or false"),
    ({"url": "http://h/k?token=s3cr3t"}, r"source 1 \(url\): only https:// URLs are accepted, got http://h/k\?…"),
    ({"url": "https://h", "timeout": -1}, r"source 1 \(url\) timeout: expected a positive number of seconds"),
    ({"url": "https://h", "headers": {"X": 1}},
     r"source 1 \(url\) headers.X: expected a string \(or a vault-encrypted string\), got int"),
    ({"sops": "s", "input_type": "toml"}, r"source 1 \(sops\) input_type: expected one of yaml, json, dotenv, ini, binary"),
    ({"secret": {"namespace": "x"}}, r"source 1 \(secret\) name: expected the Secret name"),
    ({"secret": {"name": "x", "keys": "v"}},
     r"source 1 \(secret\): unknown field keys; expected name, namespace, key, host, kubeconfig, context, timeout"),
    ({"secret": {"name": "x", "host": "mgmt", "kubeconfig": "/k"}},
     r"source 1 \(secret\): host and kubeconfig both name the Secret's cluster: give one"),
    ({"secret": {"name": "x", "context": "mgmt"}},
     r"source 1 \(secret\): context is a context of the kubeconfig file: give kubeconfig too"),
    ({"secret": {"name": "x", "kubeconfig": ""}}, r"source 1 \(secret\) kubeconfig: "),
    ({"content": 5}, r"source 1 \(content\): expected kubeconfig YAML text or a mapping, got int"),
    ([["a"]], "source 1: expected a path string or a mapping"),
    (["ok.yaml", {"nope": 1}], "source 2: a source needs exactly one of"),
], ids=["unknown-kind", "two-kinds", "option-of-another-kind", "empty-path", "path-not-string", "optional-not-bool",
        "http-refused-without-showing-query", "negative-timeout", "header-not-string", "sops-type",
        "secret-without-name", "secret-unknown-field", "secret-host-and-kubeconfig", "secret-context-alone",
        "secret-empty-kubeconfig", "content-type", "nested-list", "second-source-numbered"])
def test_rejected_sources_name_the_setting_and_index(written, message):
    with pytest.raises(PhasekitError, match="host var kube_kubeconfig, " + message) as caught:
        normalize_sources(written, "host var kube_kubeconfig")
    assert "s3cr3t" not in str(caught.value)


@pytest.mark.parametrize("text, expected", [
    ("a:b", ["a", "b"]),
    ("a::b:", ["a", "b"]),
    ("a:b:a", ["a", "b"]),
    ("./a:a", ["./a", "a"]),
], ids=["split", "empty-entries-dropped", "duplicates-dropped", "duplicates-are-textual"])
def test_split_path_list_like_kubectl(text, expected):
    assert split_path_list(text) == expected


@pytest.mark.parametrize("written, environ, expected", [
    ({"path": "~/.kube/config"}, {}, [os.path.expanduser("~/.kube/config")]),
    ({"path": "~/a:~/b"}, {}, ["~/a", "~/b"]),
    ({"env": "KUBECONFIG"}, {"KUBECONFIG": "~/a"}, ["~/a"]),
    ({"env": "KUBECONFIG"}, {"KUBECONFIG": "/x/a:~/b"}, ["/x/a", "~/b"]),
], ids=["single-yaml-path-expands-home", "path-list-as-kubectl", "env-as-kubectl", "env-list-as-kubectl"])
def test_tilde_is_expanded_only_in_a_single_path(written, environ, expected):
    from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.sources import expand_source
    spec = normalize_sources(written, "task parameter kubeconfig")[0]
    assert [unit.origin.path for unit in expand_source(spec, environ)] == expected


@pytest.mark.parametrize("url, shown", [
    ("https://user:pw@h:8443/k?token=x#f", "https://h:8443/k?…"),
    ("https://h/k", "https://h/k"),
], ids=["credentials-and-query-hidden", "plain"])
def test_safe_url(url, shown):
    assert safe_url(url) == shown


def test_env_source_expands_the_variable_without_reading_files():
    spec = normalize_sources({"env": "LIST"}, "test")[0]
    units = expand_source(spec, {"LIST": "x.yaml:y.yaml"})
    assert [(unit.origin.location, unit.origin.variable) for unit in units] == [("x.yaml", "LIST"), ("y.yaml", "LIST")]
    assert units[0].origin.label() == "kubeconfig source 1 (env LIST: x.yaml)"


def test_unset_env_source_is_an_error():
    spec = normalize_sources({"env": "UNSET_FOR_TEST"}, "test")[0]
    with pytest.raises(PhasekitError, match=r"kubeconfig source 1 \(env: \$UNSET_FOR_TEST\): the environment "
                                            "variable UNSET_FOR_TEST is not set"):
        expand_source(spec, {})


@pytest.mark.parametrize("written, expected", [
    (lambda: vaulted("/kc/a.yaml"), {"path": "/kc/a.yaml"}),
    (lambda: {"vault": vaulted("/kc/a.vault.yaml")}, {"vault": "/kc/a.vault.yaml"}),
    (lambda: {"url": "https://x/kc", "ca_path": vaulted("/kc/ca.pem")},
     {"url": "https://x/kc", "ca_path": "/kc/ca.pem", "timeout": 30, "validate_certs": True}),
], ids=["whole-source", "file-kind-value", "url-ca-path"])
def test_vault_encrypted_paths_decrypted_when_used(written, expected):
    """Before 2.19 templating a host variable leaves a !vault value encrypted: the source check decrypts it."""
    assert normalize_sources(written(), "host var")[0].to_dict() == expected


def test_undecryptable_vault_path_names_the_source():
    with pytest.raises(PhasekitError, match=r"^host var, source 1: cannot decrypt the vault-encrypted value"):
        normalize_sources(vaulted("", "$ANSIBLE_VAULT;9.9;AES256\nzz\n"), "host var")
