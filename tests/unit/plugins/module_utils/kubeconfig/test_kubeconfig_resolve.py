# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Resolution: context-first checks, laziness (proved equal to reading everything), provenance, optional sources."""

from __future__ import annotations

import base64
import random
import re

import pytest
import yaml

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.readers import SourceHooks
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.resolve import Resolution
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.resolve import request_fingerprint
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.resolve import resolve_kubeconfig
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.resolve import view_kubeconfig
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.sources import normalize_sources

TOKEN = "tok-s3cr3t-value"
KEY_DATA = base64.b64encode(b"-----BEGIN PRIVATE KEY----- s3cr3t").decode()


class RecordingHooks:
    """Vault reads answered from a dict, every read recorded in ``read``; Secret reads must not happen."""

    def __init__(self, vault_files=None, environ=None):
        self.vault_files = vault_files or {}
        self.read = []
        self.hooks = SourceHooks(environ if environ is not None else {}, read_vault=self.read_vault,
                                 read_secret=self.read_secret)

    def read_vault(self, path):
        self.read.append(path)
        if path not in self.vault_files:
            raise PhasekitError("cannot decrypt the vault file: no vault secret matches")
        return self.vault_files[path].encode()

    @staticmethod
    def read_secret(_secret):
        raise AssertionError("no Secret may be read in this test")


def kubeconfig(contexts=(), clusters=(), users=(), current=""):
    return {
        "clusters": [{"name": name, "cluster": {"server": f"https://{name}.test", "certificate-authority-data":
                                                base64.b64encode(b"CA").decode()}} for name in clusters],
        "users": [{"name": name, "user": {"token": TOKEN, "client-key-data": KEY_DATA}} for name in users],
        "contexts": [{"name": name, "context": {"cluster": cluster, "user": user}} for name, cluster, user in contexts],
        "current-context": current,
        "preferences": {"colors": True},
        "extensions": [{"name": "e", "extension": 1}],
    }


def sources(*written):
    return normalize_sources(list(written), "test")


def test_resolution_is_minified_flattened_and_shows_provenance(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ca.crt").write_bytes(b"CA FILE")
    (tmp_path / "base.yaml").write_text(yaml.safe_dump({
        "clusters": [{"name": "c", "cluster": {"server": "https://c.test", "certificate-authority": "ca.crt"}}],
        "users": [{"name": "u", "user": {"tokenFile": "token"}}]}))
    resolution = resolve_kubeconfig(sources(
        {"path": "missing.yaml:base.yaml"},
        {"content": kubeconfig([("x", "c", "u"), ("other", "c", "u")], current="other")},
    ), "x")
    assert resolution.config == {
        "kind": "Config", "apiVersion": "v1",
        "clusters": [{"name": "c", "cluster": {"server": "https://c.test",
                                               "certificate-authority-data": base64.b64encode(b"CA FILE").decode()}}],
        "users": [{"name": "u", "user": {"tokenFile": str(tmp_path / "token")}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    assert resolution.summary() == {
        "context": "x", "cluster": "c", "server": "https://c.test", "user": "u", "namespace": None,
        "provenance": {
            "context": {"index": 2, "kind": "content", "location": "inline"},
            "cluster": {"index": 1, "kind": "path", "location": "base.yaml"},
            "user": {"index": 1, "kind": "path", "location": "base.yaml"},
            "sources": [
                {"index": 1, "kind": "path", "location": "missing.yaml", "status": "missing"},
                {"index": 1, "kind": "path", "location": "base.yaml", "status": "read"},
                {"index": 2, "kind": "content", "location": "inline", "status": "read"},
            ]}}


@pytest.mark.parametrize("context, expected_cluster, message", [
    ("nope", None, r"context 'nope' is not defined by any kubeconfig source; known contexts: 'anonymous', 'lost', "
                   r"'nocluster', 'ok', 'serverless'; sources: 1 content inline \(read\)"),
    ("lost", None, r"context 'lost' \(from kubeconfig source 1 \(content: inline\)\) names user 'gone', which no "
                   r"kubeconfig source defines; known users: 'u'"),
    ("nocluster", None, r"context 'nocluster' \(from kubeconfig source 1 \(content: inline\)\) names no cluster"),
    ("ok", "other", r"context 'ok' .* uses cluster 'c', but kube_cluster expects 'other'"),
    ("serverless", None, r"cluster 'empty' \(from kubeconfig source 1 \(content: inline\)\) has no server"),
    (None, None, "no context selected: set kube_context"),
], ids=["unknown-context-lists-known", "missing-user", "no-cluster", "kube-cluster-assertion", "no-server",
        "no-context-at-all"])
def test_context_first_errors(context, expected_cluster, message):
    config = kubeconfig([("ok", "c", "u"), ("lost", "c", "gone"), ("nocluster", "", "u"), ("anonymous", "c", ""),
                         ("serverless", "empty", "")], clusters=["c"], users=["u"])
    config["clusters"].append({"name": "empty", "cluster": {}})
    with pytest.raises(PhasekitError, match=message) as caught:
        resolve_kubeconfig(sources({"content": config}), context, expected_cluster=expected_cluster)
    assert "s3cr3t" not in str(caught.value)


PASTED = "9f3b2c7d1e0a4b6c8d2e5f7a9b1c3d5e7f9a0b2c4d6e8f0a"  # a token pasted as the current-context


@pytest.mark.parametrize("context, current, message", [
    (None, PASTED, "the current-context ('9f3b'..., 48 characters) is not defined by any kubeconfig source; "
                   "known contexts: 'ok'"),
    (None, "short", "the current-context (5 characters) is not defined"),
    ("no-such-context", PASTED, "context 'no-such-context' is not defined by any kubeconfig source"),
], ids=["current-context-shown-by-its-start", "short-current-context-not-shown", "named-context-shown-in-full"])
def test_an_undefined_current_context_is_not_echoed(context, current, message):
    """A kubeconfig is a file of credentials: a current-context naming no context may be one pasted in the wrong
    field. A context a setting names (kube_context, the context parameter) is shown as given."""
    config = kubeconfig([("ok", "c", "u")], clusters=["c"], users=["u"], current=current)
    for resolve in (lambda: resolve_kubeconfig(sources({"content": config}), context),
                    lambda: view_kubeconfig(sources({"content": config}), context, minify=True)):
        with pytest.raises(PhasekitError) as caught:
            resolve()
        assert message.split(" by any")[0] in str(caught.value)
        assert PASTED[4:] not in str(caught.value) and "hort" not in str(caught.value)
    with pytest.raises(PhasekitError, match=re.escape(message)):
        resolve_kubeconfig(sources({"content": config}), context)


def test_anonymous_context_has_no_user():
    config = kubeconfig([("anonymous", "c", "")], clusters=["c"], users=["u"])
    resolution = resolve_kubeconfig(sources({"content": config}), "anonymous")
    assert resolution.user is None and resolution.config["users"] is None
    assert resolution.provenance["user"] is None


def _random_sources(rng: random.Random) -> list:
    names = ["a", "b", "c"]
    written = []
    for _source in range(rng.randint(1, 5)):
        written.append({"content": kubeconfig(
            contexts=[(name, rng.choice(names + [""]), rng.choice(names + [""])) for name in rng.sample(names, 2)],
            clusters=rng.sample(names, rng.randint(0, 2)), users=rng.sample(names, rng.randint(0, 2)),
            current=rng.choice(names + ["", ""]))})
    return written


def _outcome(written, context, lazy):
    try:
        resolution = resolve_kubeconfig(sources(*written), context, keep_merged=not lazy)
    except PhasekitError as err:
        return "error", str(err)
    provenance = {key: resolution.provenance[key] for key in ("context", "cluster", "user")}
    return resolution.config, provenance, len([s for s in resolution.provenance["sources"] if s["status"] == "read"])


@pytest.mark.parametrize("seed", range(5))
def test_lazy_resolution_equals_reading_everything(seed):
    rng = random.Random(seed)
    stopped_early = 0
    for _round in range(60):
        written = _random_sources(rng)
        for context in (None, "a", "b", "c", "zz"):
            lazy, eager = _outcome(written, context, True), _outcome(written, context, False)
            assert lazy[:2] == eager[:2], (written, context)
            stopped_early += lazy[0] != "error" and lazy[2] < eager[2]
    assert stopped_early > 10  # the generator must produce cases where laziness matters


def test_sources_after_the_complete_context_are_never_touched(tmp_path):
    marker = tmp_path / "sops-was-run"
    fake_sops = tmp_path / "bin" / "sops"
    fake_sops.parent.mkdir()
    fake_sops.write_text(f"#!/bin/sh\n: > {marker}\nexit 1\n")
    fake_sops.chmod(0o755)
    (tmp_path / "broken.enc.yaml").write_text("not decryptable")
    hooks = RecordingHooks(environ={"PATH": str(fake_sops.parent)})
    written = [{"content": kubeconfig([("x", "c", "u")], clusters=["c"], users=["u"])},
               {"sops": str(tmp_path / "broken.enc.yaml")},
               {"vault": "never.yaml"},
               {"url": "https://unreachable.invalid/kubeconfig"},
               {"env": "UNSET_VARIABLE"},
               {"secret": {"name": "never"}}]
    lazy = resolve_kubeconfig(sources(*written), "x", hooks=hooks.hooks)
    assert not marker.exists() and hooks.read == []
    assert [entry["status"] for entry in lazy.provenance["sources"]] == ["read"] + ["unread"] * 5
    with pytest.raises(PhasekitError, match=r"kubeconfig source 2 \(sops: .*broken.enc.yaml\): sops could not decrypt"):
        resolve_kubeconfig(sources(*written), "x", hooks=hooks.hooks, keep_merged=True)
    assert marker.exists()


def test_a_context_completed_across_sources_stops_after_the_last_piece():
    hooks = RecordingHooks({"cluster.yaml": yaml.safe_dump(kubeconfig(clusters=["c"]))})
    written = [{"content": kubeconfig([("x", "c", "u")], users=["u"])}, {"vault": "cluster.yaml"},
               {"vault": "later.yaml"}]
    resolution = resolve_kubeconfig(sources(*written), "x", hooks=hooks.hooks)
    assert hooks.read == ["cluster.yaml"]
    assert resolution.provenance["cluster"] == {"index": 2, "kind": "vault", "location": "cluster.yaml"}
    assert resolution.provenance["user"] == {"index": 1, "kind": "content", "location": "inline"}


def test_optional_sources_are_skipped_with_a_reason():
    hooks = RecordingHooks()
    written = [{"vault": "absent.yaml", "optional": True}, {"env": "UNSET_VARIABLE", "optional": True},
               {"content": "clusters: [", "optional": True},
               {"content": kubeconfig([("x", "c", "u")], clusters=["c"], users=["u"])}]
    resolution = resolve_kubeconfig(sources(*written), "x", hooks=hooks.hooks)
    trail = resolution.provenance["sources"]
    assert [entry["status"] for entry in trail] == ["skipped", "skipped", "skipped", "read"]
    assert trail[0]["reason"] == "cannot decrypt the vault file: no vault secret matches"
    assert trail[1]["reason"] == "the environment variable UNSET_VARIABLE is not set"
    assert trail[2]["reason"].startswith("invalid YAML at line 2")


@pytest.mark.parametrize("written, message", [
    ([{"vault": "absent.yaml"}], r"kubeconfig source 1 \(vault: absent.yaml\): cannot decrypt the vault file"),
    ([{"content": f"users: [{{name: u, user: {{token: {TOKEN}"}],
     r"kubeconfig source 1 \(content: inline\): invalid YAML at line 2"),
    ([{"content": {"users": [{"name": "u", "user": {"token": 12345}}]}}],
     r"kubeconfig source 1 \(content: inline\): users\[0\].user.token: expected a string, got a number"),
    ([{"content": "a: 1"}, {"env": "UNSET_VARIABLE"}],
     r"kubeconfig source 2 \(env: \$UNSET_VARIABLE\): the environment variable UNSET_VARIABLE is not set"),
], ids=["vault-undecryptable", "malformed-yaml-with-a-token-inside", "wrong-type", "unset-env"])
def test_failing_sources_name_index_kind_and_location_never_content(written, message):
    with pytest.raises(PhasekitError, match=message) as caught:
        resolve_kubeconfig(sources(*written), "x", hooks=RecordingHooks().hooks)
    assert TOKEN not in str(caught.value) and "12345" not in str(caught.value)


def test_memory_round_trip_requires_the_same_request():
    written = sources({"content": kubeconfig([("x", "c", "u")], clusters=["c"], users=["u"])})
    fingerprint = request_fingerprint(written, "x")
    resolution = resolve_kubeconfig(written, "x")
    remembered = Resolution(config=resolution.config, context="x", provenance=resolution.provenance,
                            fingerprint=fingerprint).to_memory()
    reused = Resolution.from_memory(remembered, fingerprint)
    assert reused.config == resolution.config and reused.reused
    assert Resolution.from_memory(remembered, request_fingerprint(written, "other")) is None
    assert Resolution.from_memory({"format": 0}, fingerprint) is None
    assert Resolution.from_memory(None, fingerprint) is None
    assert TOKEN not in fingerprint


def test_fingerprint_depends_on_sources_and_context():
    one = sources("a.yaml")
    assert request_fingerprint(one, "x") == request_fingerprint(sources("a.yaml"), "x")
    assert request_fingerprint(one, "x") != request_fingerprint(sources("b.yaml"), "x")
    assert request_fingerprint(one, None) != request_fingerprint(one, "x")
