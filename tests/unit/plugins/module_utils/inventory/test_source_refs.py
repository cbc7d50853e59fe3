# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
from __future__ import annotations

import re

import pytest
from vaulted import vaulted

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.inventory.source_refs import (
    check_source_refs,
    relative_source_refs,
)

BASE = "/site/inventory"


@pytest.mark.parametrize("value, expected", [
    ("kubeconfigs/a.yaml", "/site/inventory/kubeconfigs/a.yaml"),
    ("a.yaml:../b.yaml", "/site/inventory/a.yaml:/site/b.yaml"),
    ("/abs/a.yaml:~/.kube/config", "/abs/a.yaml:~/.kube/config"),
    ("{{ playbook_dir }}/a.yaml", "{{ playbook_dir }}/a.yaml"),
    ({"path": "a.yaml", "optional": True}, {"path": "/site/inventory/a.yaml", "optional": True}),
    ({"sops": "secrets/t.enc.yaml"}, {"sops": "/site/inventory/secrets/t.enc.yaml"}),
    ({"vault": "t.vault.yaml"}, {"vault": "/site/inventory/t.vault.yaml"}),
    ({"env": "KUBECONFIG"}, {"env": "KUBECONFIG"}),
    ({"url": "https://x/kc", "ca_path": "ca.pem", "headers": {"Authorization": "{{ lookup('env', 'T') }}"}},
     {"url": "https://x/kc", "ca_path": "/site/inventory/ca.pem", "headers": {"Authorization": "{{ lookup('env', 'T') }}"}}),
    ({"secret": {"name": "t-kubeconfig"}}, {"secret": {"name": "t-kubeconfig"}}),
    ([{"path": "a.yaml"}, "b.yaml", {"secret": {"name": "s"}}],
     [{"path": "/site/inventory/a.yaml"}, "/site/inventory/b.yaml", {"secret": {"name": "s"}}]),
], ids=["relative-path-anchored", "path-list-each-anchored", "absolute-and-home-kept", "template-kept",
        "path-source-common-keys-kept", "sops-anchored", "vault-anchored", "env-untouched", "url-ca-anchored",
        "secret-untouched", "list-mixed"])
def test_source_refs_anchored(value, expected):
    assert check_source_refs(value, base_dir=BASE, where="f") == expected


@pytest.mark.parametrize("value, message", [
    ({"content": "apiVersion: v1"}, "source 1: inline kubeconfig content does not belong in an inventory"),
    ([{"path": "a"}, {"content": {"users": []}}], "source 2: inline kubeconfig content"),
    ({"apiVersion": "v1", "clusters": []}, "source 1: inline kubeconfig content"),
    ({"url": "https://x", "headers": {"Authorization": "Bearer abc"}}, "header(s) Authorization hold a literal"),
    ("", "kubeconfig sources must not be empty"),
    ({"path": "a", "env": "B"}, "source 1: a source needs exactly one of"),
    ({"secret": {"namespace": "x"}}, "source 1 (secret)"),
    ([42], "source 1: expected a path string or a mapping"),
], ids=["content-refused", "content-in-list-refused-with-index", "bare-kubeconfig-refused", "literal-header-refused",
        "empty", "two-kinds-checked-by-kubeconfig-module", "secret-without-name-checked",
        "wrong-item-type-checked"])
def test_source_refs_refused(value, message):
    with pytest.raises(PhasekitError, match="^where[:,] .*" + re.escape(message)):
        check_source_refs(value, base_dir=BASE, where="where")


def test_refusal_never_echoes_the_secret():
    with pytest.raises(PhasekitError) as err:
        check_source_refs({"url": "https://x", "headers": {"Authorization": "Bearer s3cr3t"}}, base_dir=BASE, where="w")
    assert "s3cr3t" not in str(err.value)


@pytest.mark.parametrize("headers, message", [
    ({"Authorization": "vaulted"}, None),
    ({"Authorization": 42}, "headers.Authorization: expected a string (or a vault-encrypted string), got int"),
    (["Authorization: x"], "headers: expected a mapping of header names to strings, got list"),
], ids=["vault-encrypted-header-allowed", "non-string-header-names-the-header", "headers-not-a-mapping"])
def test_url_source_headers(headers, message):
    """A !vault header value in a site file is what ansible-inventory --list shows encrypted: accepted."""
    if headers == {"Authorization": "vaulted"}:
        headers = {"Authorization": vaulted("Bearer s3cr3t-token")}
    value = {"url": "https://x/kc", "headers": headers}
    if message is None:
        assert check_source_refs(value, base_dir=BASE, where="w")["headers"] == headers
        return
    with pytest.raises(PhasekitError, match=re.escape(message)):
        check_source_refs(value, base_dir=BASE, where="w")


BAD_ENVELOPE = "$ANSIBLE_VAULT;9.9;AES256\nzz\n"


@pytest.mark.parametrize("value, vaulted_at", [
    (vaulted("/kc/a.yaml"), ()),
    ([vaulted("~/kc/a.yaml"), "b.yaml"], (0,)),
    ({"vault": vaulted("/kc/a.vault.yaml")}, ("vault",)),
    ({"path": vaulted("/kc/a.yaml:/kc/b.yaml"), "optional": True}, ("path",)),
], ids=["whole-value-absolute", "list-item-home", "vault-source-file", "path-source-list"])
def test_vault_encrypted_paths_kept_encrypted(value, vaulted_at):
    """A !vault path is decrypted to be checked, and kept encrypted: ansible-inventory --list shows it so."""
    checked = check_source_refs(value, base_dir=BASE, where="w")
    if not vaulted_at:
        assert checked is value
    elif isinstance(value, list):
        assert checked[0] is value[0] and checked[1] == "/site/inventory/b.yaml"
    else:
        assert checked[vaulted_at[0]] is value[vaulted_at[0]]


@pytest.mark.parametrize("value, message", [
    (vaulted("kc/a.yaml"), "w: a vault-encrypted path must be absolute"),
    ({"path": vaulted("/kc/a.yaml:b.yaml")}, "w: a vault-encrypted path must be absolute"),
    (vaulted("", BAD_ENVELOPE), "w: cannot decrypt the vault-encrypted value (!vault): "),
    ([{"vault": vaulted("", BAD_ENVELOPE)}], "w: cannot decrypt the vault-encrypted value (!vault): "),
], ids=["relative-path-refused", "relative-entry-of-list-refused", "malformed-envelope-names-where",
        "malformed-file-value-names-where"])
def test_vault_encrypted_paths_refused(value, message):
    with pytest.raises(PhasekitError, match=re.escape(message)) as err:
        check_source_refs(value, base_dir=BASE, where="w")
    assert "zz" not in str(err.value) and "ANSIBLE_VAULT" not in str(err.value)


@pytest.mark.parametrize("anchored, written", [
    ("/site/inventory/kubeconfigs/a.yaml", "kubeconfigs/a.yaml"),
    ("/site/inventory/a.yaml:/site/b.yaml", "a.yaml:../b.yaml"),
    ("/etc/kubernetes/admin.conf:~/.kube/config", "/etc/kubernetes/admin.conf:~/.kube/config"),
    ("{{ playbook_dir }}/a.yaml", "{{ playbook_dir }}/a.yaml"),
    ({"path": "/site/inventory/a.yaml", "optional": True}, {"path": "a.yaml", "optional": True}),
    ({"sops": "/site/secrets/t.enc.yaml"}, {"sops": "../secrets/t.enc.yaml"}),
    ({"url": "https://x/kc", "ca_path": "/site/ca.pem"}, {"url": "https://x/kc", "ca_path": "../ca.pem"}),
    ([{"secret": {"name": "s"}, "optional": True}, {"vault": "/site/v.yaml"}],
     [{"secret": {"name": "s"}, "optional": True}, {"vault": "../v.yaml"}]),
], ids=["path-relative", "path-list-each-relative", "outside-the-site-and-home-kept", "template-kept",
        "path-source-common-keys-kept", "sops-relative", "url-ca-relative", "list-mixed"])
def test_relative_source_refs_read_back_to_the_same_sources(anchored, written):
    """What a file written in BASE says, so that check_source_refs reading it from BASE gives the sources again."""
    assert relative_source_refs(anchored, BASE) == written
    assert check_source_refs(written, base_dir=BASE, where="f") == anchored
