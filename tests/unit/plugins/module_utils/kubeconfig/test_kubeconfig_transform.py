# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Minify, flatten and path resolution (client-go clientcmd semantics)."""

from __future__ import annotations

import base64
import os

import pytest

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.decode import decode_kubeconfig_bytes
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.model import Origin
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.transform import flatten_kubeconfig
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.transform import minify_kubeconfig
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.transform import resolve_local_paths

CONFIG = """
clusters:
- {name: c, cluster: {server: https://c}}
- {name: other, cluster: {server: https://other}}
users:
- {name: u, user: {token: t}}
- {name: other, user: {token: o}}
contexts:
- {name: full, context: {cluster: c, user: u, namespace: ns}}
- {name: anonymous, context: {cluster: c}}
- {name: nowhere, context: {}}
- {name: lost-cluster, context: {cluster: gone, user: u}}
- {name: lost-user, context: {cluster: c, user: gone}}
current-context: full
extensions: [{name: e, extension: kept}]
"""


def load(text: str, path: str | None = "dir/file.yaml"):
    return decode_kubeconfig_bytes(text, Origin(1, "path", path or "inline", path=path))


@pytest.mark.parametrize("context, clusters, users", [
    (None, ["c"], ["u"]),
    ("full", ["c"], ["u"]),
    ("anonymous", ["c"], []),
    ("nowhere", [], []),
], ids=["current-context", "named-context", "no-user-keeps-no-user", "empty-context-keeps-nothing-else"])
def test_minify_keeps_the_context_with_its_cluster_and_user(context, clusters, users):
    minified = minify_kubeconfig(load(CONFIG), context)
    assert sorted(minified.clusters) == clusters
    assert sorted(minified.users) == users
    assert list(minified.contexts) == [context or "full"]
    assert minified.current_context == (context or "full")
    assert minified.extensions == {"e": "kept"}  # kubectl keeps top-level extensions and preferences


@pytest.mark.parametrize("text, context, message", [
    (CONFIG, "nope", "context 'nope' is not defined; known contexts: 'anonymous', 'full', 'lost-cluster'"),
    (CONFIG, "lost-cluster", "names cluster 'gone', which no kubeconfig source defines; known clusters: 'c', 'other'"),
    (CONFIG, "lost-user", "names user 'gone', which no kubeconfig source defines; known users: 'other', 'u'"),
    ("contexts: [{name: x}]", None, "no context selected and the kubeconfig has no current-context; known contexts: 'x'"),
], ids=["unknown-context-lists-known", "missing-cluster", "missing-user", "no-current-context"])
def test_minify_errors(text, context, message):
    with pytest.raises(PhasekitError, match=message):
        minify_kubeconfig(load(text), context)


@pytest.fixture()
def tree(tmp_path, monkeypatch):
    """tmp/dir/file.yaml defines entries; tmp/dir/certs holds files; the cwd is tmp/elsewhere."""
    (tmp_path / "dir" / "certs").mkdir(parents=True)
    (tmp_path / "dir" / "certs" / "ca.crt").write_bytes(b"CA")
    (tmp_path / "dir" / "certs" / "client.crt").write_bytes(b"CERT")
    (tmp_path / "dir" / "certs" / "empty.key").write_bytes(b"")
    (tmp_path / "top.crt").write_bytes(b"TOP")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    return tmp_path


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def test_flatten_reads_files_relative_to_the_defining_file(tree):
    config = load(f"""
clusters: [{{name: c, cluster: {{server: s, certificate-authority: certs/ca.crt}}}}]
users:
- {{name: u, user: {{client-certificate: ../top.crt, client-key: certs/empty.key, tokenFile: certs/token}}}}
- {{name: abs, user: {{client-certificate: {tree}/dir/certs/client.crt}}}}
""", path=str(tree / "dir" / "file.yaml"))
    flatten_kubeconfig(config)
    assert config.clusters["c"] == {"server": "s", "certificate-authority-data": b64(b"CA")}
    # an empty key file leaves neither path nor data; tokenFile is not embedded
    assert config.users["u"] == {"client-certificate-data": b64(b"TOP"), "tokenFile": "certs/token"}
    assert config.users["abs"] == {"client-certificate-data": b64(b"CERT")}


def test_flatten_of_a_relative_kubeconfig_path_uses_the_current_directory(tree):
    config = load("clusters: [{name: c, cluster: {certificate-authority: certs/ca.crt}}]", path="../dir/file.yaml")
    flatten_kubeconfig(config)
    assert config.clusters["c"]["certificate-authority-data"] == b64(b"CA")


def test_flatten_of_inline_content_uses_the_current_directory(tree):
    config = load("clusters: [{name: c, cluster: {certificate-authority: ../top.crt}}]", path=None)
    flatten_kubeconfig(config)
    assert config.clusters["c"]["certificate-authority-data"] == b64(b"TOP")


@pytest.mark.parametrize("text, message", [
    ("clusters: [{name: c, cluster: {certificate-authority: certs/missing.crt}}]",
     "cluster 'c': certificate-authority .*/dir/certs/missing.crt: cannot read: No such file or directory"),
    ("users: [{name: u, user: {client-key: certs/ca.crt, client-key-data: c2VjcmV0}}]",
     "user 'u': both client-key and client-key-data are set; keep one"),
], ids=["missing-file", "path-and-data"])
def test_flatten_errors_name_the_source_and_entry(tree, text, message):
    with pytest.raises(PhasekitError, match=r"kubeconfig source 1 \(path: .*file.yaml\): " + message) as caught:
        flatten_kubeconfig(load(text, path=str(tree / "dir" / "file.yaml")))
    assert "c2VjcmV0" not in str(caught.value)


@pytest.mark.parametrize("field, value, expected", [
    ("certificate-authority", "certs/ca.crt", "{dir}/certs/ca.crt"),
    ("client-certificate", "./certs/../certs/c.crt", "{dir}/certs/c.crt"),
    ("client-key", "/abs/../key", "/abs/../key"),
    ("tokenFile", "../token", "{root}/token"),
    ("exec", {"command": "./bin/cred"}, "{dir}/bin/cred"),
    ("exec", {"command": "bin/cred"}, "{dir}/bin/cred"),
    ("exec", {"command": "cred"}, "cred"),
], ids=["ca", "cleaned", "absolute-kept-as-written", "token-file", "exec-dot-slash", "exec-with-separator",
        "exec-on-path-kept"])
def test_resolve_local_paths(tree, field, value, expected):
    directory = tree / "dir"
    section, key = ("clusters", "c") if field == "certificate-authority" else ("users", "u")
    body = "cluster" if section == "clusters" else "user"
    config = load(f"{section}: [{{name: {key}, {body}: {{}}}}]", path=str(directory / "file.yaml"))
    entry = config.section(section)[key]
    entry[field] = dict(value, args=None, env=None, provideClusterInfo=False) if isinstance(value, dict) else value
    resolve_local_paths(config)
    resolved = entry[field]["command"] if field == "exec" else entry[field]
    assert resolved == expected.format(dir=directory, root=tree)


def test_resolve_local_paths_of_inline_content_uses_the_current_directory(tree):
    config = load("users: [{name: u, user: {tokenFile: token}}]", path=None)
    resolve_local_paths(config)
    assert config.users["u"]["tokenFile"] == os.path.join(str(tree / "elsewhere"), "token")
