# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Writing kubeconfigs (dest, merge_into), atomically with mode 0600, and redaction for diffs."""

from __future__ import annotations

import os
import stat

import pytest
import yaml

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.redact import redact_kubeconfig
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.write import apply_write
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.write import normalize_on_conflict
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.write import plan_dest
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.write import plan_merge_into

SECRETS = ("tok-s3cr3t", "cGFzc3dvcmQ=", "pw-s3cr3t", "idtoken-s3cr3t", "env-s3cr3t", "S0VZ", "Q0VSVA==", "Q0E=")


def resolved(context="new", cluster="new-cluster", user="new-user", server="https://new"):
    return {
        "kind": "Config", "apiVersion": "v1",
        "clusters": [{"name": cluster, "cluster": {"server": server, "certificate-authority-data": "Q0E="}}],
        "users": [{"name": user, "user": {"token": "tok-s3cr3t", "client-key-data": "S0VZ",
                                          "client-certificate-data": "Q0VSVA=="}}],
        "contexts": [{"name": context, "context": {"cluster": cluster, "user": user}}],
        "current-context": context,
    }


def test_redaction_removes_every_credential():
    config = resolved()
    config["users"].append({"name": "other", "user": {
        "username": "admin", "password": "pw-s3cr3t",
        "auth-provider": {"name": "oidc", "config": {"id-token": "idtoken-s3cr3t"}},
        "exec": {"command": "x", "args": None, "env": [{"name": "TOKEN", "value": "env-s3cr3t"}],
                 "provideClusterInfo": False}}})
    text = yaml.safe_dump(redact_kubeconfig(config))
    assert not [secret for secret in SECRETS if secret in text]
    assert "DATA+OMITTED" in text and "REDACTED" in text and "admin" in text
    assert config["users"][0]["user"]["token"] == "tok-s3cr3t"  # the original is untouched


def test_dest_writes_atomically_with_mode_0600_and_is_idempotent(tmp_path):
    dest = tmp_path / "sub" / "target.kubeconfig"
    plan = plan_dest(str(dest), resolved())
    assert plan.changed and plan.before is None
    apply_write(plan)
    assert stat.S_IMODE(dest.stat().st_mode) == 0o600
    assert yaml.safe_load(dest.read_text()) == resolved()
    assert os.listdir(dest.parent) == ["target.kubeconfig"]  # no temporary file left behind
    assert not plan_dest(str(dest), resolved()).changed


def test_dest_with_a_loose_mode_is_tightened(tmp_path):
    dest = tmp_path / "k"
    apply_write(plan_dest(str(dest), resolved()))
    dest.chmod(0o644)
    plan = plan_dest(str(dest), resolved())
    assert plan.changed and not plan.content_changed
    apply_write(plan)
    assert stat.S_IMODE(dest.stat().st_mode) == 0o600


def test_dest_over_an_unparseable_file_replaces_it_without_showing_it(tmp_path):
    dest = tmp_path / "k"
    dest.write_text("token: [old-s3cr3t")
    plan = plan_dest(str(dest), resolved())
    assert plan.changed and plan.diff()["before"] == ""


def test_diff_is_redacted(tmp_path):
    diff = plan_dest(str(tmp_path / "k"), resolved()).diff()
    assert not [secret for secret in SECRETS if secret in diff["after"]]
    assert diff["before"] == "" and diff["after_header"] == str(tmp_path / "k")


EXISTING = {
    "apiVersion": "v1", "kind": "Config",
    "clusters": [{"name": "new-cluster", "cluster": {"server": "https://old", "certificate-authority": "rel/ca.crt"}},
                 {"name": "kept", "cluster": {"server": "https://kept"}}],
    "users": [{"name": "new-user", "user": {"token": "old"}}],
    "contexts": [{"name": "old", "context": {"cluster": "kept", "user": "new-user"}}],
    "current-context": "old",
    "preferences": {"colors": True},
}


@pytest.mark.parametrize("on_conflict, set_current, server, token, current", [
    ("replace", False, "https://new", "tok-s3cr3t", "old"),
    ("keep", False, "https://old", "old", "old"),
    ({"clusters": "keep"}, True, "https://old", "tok-s3cr3t", "new"),
], ids=["replace-keeps-current-context", "keep", "per-section-and-set-current-context"])
def test_merge_into(tmp_path, on_conflict, set_current, server, token, current):
    target = tmp_path / "config"
    target.write_text(yaml.safe_dump(EXISTING))
    plan = plan_merge_into(str(target), resolved(), normalize_on_conflict(on_conflict), set_current)
    apply_write(plan)
    written = yaml.safe_load(target.read_text())
    clusters = {item["name"]: item["cluster"] for item in written["clusters"]}
    users = {item["name"]: item["user"] for item in written["users"]}
    assert clusters["new-cluster"]["server"] == server
    assert clusters["kept"] == {"server": "https://kept"}
    assert users["new-user"].get("token") == token
    assert [item["name"] for item in written["contexts"]] == ["new", "old"]
    assert written["current-context"] == current
    assert written["preferences"] == {"colors": True}
    if server == "https://old":
        assert clusters["new-cluster"]["certificate-authority"] == "rel/ca.crt"  # kept as written
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert not plan_merge_into(str(target), resolved(), normalize_on_conflict(on_conflict), set_current).changed


def test_merge_into_a_missing_file_creates_it_with_the_context_current(tmp_path):
    target = tmp_path / "config"
    apply_write(plan_merge_into(str(target), resolved(), normalize_on_conflict("replace"), False))
    assert yaml.safe_load(target.read_text())["current-context"] == "new"


def test_merge_into_an_invalid_file_fails_and_writes_nothing(tmp_path):
    target = tmp_path / "config"
    target.write_text("users: [{name: a}, {name: a, user: {token: old-s3cr3t}}]")
    before = target.read_text()
    with pytest.raises(PhasekitError, match=r"merge_into .*config: the file is not a valid kubeconfig: users\[1\]: "
                                            "duplicate user name 'a'") as caught:
        plan_merge_into(str(target), resolved(), normalize_on_conflict("keep"), False)
    assert "old-s3cr3t" not in str(caught.value)
    assert target.read_text() == before


@pytest.mark.parametrize("value, message", [
    ("merge", "on_conflict clusters: expected keep or replace, got 'merge'"),
    ({"secrets": "keep"}, "on_conflict: expected keep, replace, or a mapping"),
    (3, "on_conflict: expected keep, replace, or a mapping"),
], ids=["unknown-choice", "unknown-section", "wrong-type"])
def test_on_conflict_errors(value, message):
    with pytest.raises(PhasekitError, match=message):
        normalize_on_conflict(value)


def test_write_failure_is_a_clear_error(tmp_path):
    plan = plan_dest(str(tmp_path / "dir" / "k"), resolved())
    (tmp_path / "dir").write_text("")  # the directory became a file
    with pytest.raises(PhasekitError, match=r"dir/k: cannot write: File exists"):
        apply_write(plan)
