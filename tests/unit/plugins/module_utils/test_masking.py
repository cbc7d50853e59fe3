# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Masks: a secret embedded in any text, in any form a program or a serializer prints it, does not survive."""

from __future__ import annotations

import base64
import json
import re
import textwrap

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pki import make_pki

from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.redact import kubeconfig_credentials
from ansible_collections.phasekit.kube.plugins.module_utils.masking import (
    HIDDEN, MIN_SECRET, Masks, says_secret, scrub_secrets, secret_named_strings)
from ansible_collections.phasekit.kube.plugins.module_utils.planning.command import CommandResult, command_failure_message
from ansible_collections.phasekit.kube.plugins.module_utils.records.vocabulary import MAX_RECORD_MESSAGE
from ansible_collections.phasekit.kube.plugins.module_utils.running.record import RunInfo, entry_for

# no '*': the marker itself; letters, digits, punctuation, quotes, backslashes, non-ASCII of one to four bytes
SECRET_CHARS = st.sampled_from(
    list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
    + list("!\"#$%&'()+,-./:;<=>?@[\\]^_`{|}~ ") + list("üÜßéñ€漢字é\u00a0😀"))
SECRET_LINE = st.text(SECRET_CHARS, min_size=MIN_SECRET, max_size=60).map(str.strip).filter(
    lambda line: len(line) >= MIN_SECRET)
SECRETS = st.lists(SECRET_LINE, min_size=1, max_size=4).map("\n".join)
AROUND = st.text(st.characters(codec="utf-8", exclude_characters="*"), max_size=40)
EXAMPLES = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def lines_of(secret: str) -> list[str]:
    return [line.strip() for line in secret.splitlines() if len(line.strip()) >= MIN_SECRET]


def python_escaped(text: str) -> str:
    return text.encode("ascii", "backslashreplace").decode()


# form name -> how a program prints the secret (each row: one way found in a failing command, a diff, an error)
PRINTED = {
    "as-written": lambda secret: secret,
    "each-line": lambda secret: "\n".join(f"line {number}: {line}" for number, line in enumerate(lines_of(secret))),
    "joined-with-bars": lambda secret: " | ".join(secret.splitlines()),
    "base64-of-whole": lambda secret: base64.b64encode(secret.encode()).decode(),
    "base64-of-echo-wrapped": lambda secret: "\n".join(textwrap.wrap(
        base64.b64encode((secret + "\n").encode()).decode(), 76)),
    "json-escaped": lambda secret: json.dumps({"value": secret}),
    "json-escaped-utf8": lambda secret: json.dumps({"value": secret}, ensure_ascii=False),
    "python-repr": repr,
    "python-escaped-non-ascii": python_escaped,
    "yaml-double-quoted": lambda secret: yaml.safe_dump({"data": {"key": secret}}, default_style='"'),
}


def leaks(secret: str, shown: str) -> list[str]:
    """The pieces of ``secret`` (whole and lines, in each quoting) that ``shown`` still holds."""
    pieces = {secret, *lines_of(secret)}
    return sorted({form for piece in pieces
                   for form in (piece, json.dumps(piece)[1:-1], json.dumps(piece, ensure_ascii=False)[1:-1],
                                repr(piece)[1:-1], python_escaped(piece))
                   if len(form) >= MIN_SECRET and form in shown})


@pytest.mark.parametrize("form", list(PRINTED), ids=list(PRINTED))
@EXAMPLES
@given(secret=SECRETS, before=AROUND, after=AROUND)
def test_no_printed_form_of_a_secret_survives(form, secret, before, after):
    printed = PRINTED[form](secret)
    text = f"{before}{printed}{after}"
    scrubbed = Masks([secret]).scrub(text)
    assert HIDDEN in scrubbed
    assert printed not in scrubbed or len(printed) < MIN_SECRET
    if form.startswith("base64"):
        assert not [line for line in printed.splitlines() if len(line) >= 8 and line in scrubbed]
    assert leaks(secret, scrubbed) == [], scrubbed


def unfolded(text: str) -> str:
    """A YAML text (or a diff of one) with folded scalars joined again: what a reader sees, line breaks aside."""
    text = re.sub(r"\\\n[+\- ]?[ \t]*(\\(?= ))?", "", text)     # double-quoted style: escaped line breaks
    return re.sub(r"\s+", " ", re.sub(r"\n[+\- ]?", " ", text))  # single-quoted and plain: breaks are spaces


@EXAMPLES
@given(secret=SECRETS, width=st.integers(min_value=20, max_value=120), depth=st.integers(min_value=0, max_value=4),
       unicode=st.booleans(), diffed=st.booleans())
def test_a_secret_folded_by_yaml_in_a_diff_does_not_survive(secret, width, depth, unicode, diffed):
    data = {"data": {"key": secret, "other": "kept as it is"}}
    for level in range(depth):
        data = {f"level{level}": data}
    text = yaml.safe_dump(data, width=width, allow_unicode=unicode)
    if diffed:
        text = "\n".join(f"+{line}" for line in text.splitlines())
    quoted = [(line, line.replace("'", "''"), yaml.safe_dump(line, default_style='"', width=10 ** 6)[1:-2])
              for line in lines_of(secret)]
    expected = {re.sub(r"\s+", " ", form) for forms in quoted for form in forms}
    assume(any(form in unfolded(text) for form in expected))  # the check below sees what a reader would see
    scrubbed = Masks([secret]).scrub(text)
    assert [form for form in expected if form in unfolded(scrubbed)] == [], scrubbed
    assert "kept as it is" in unfolded(scrubbed)


@pytest.mark.parametrize("secrets, text, expected", [
    ({"abc"}, "pin abc", "pin abc"),
    ({"   ab  "}, "a   ab  b", "a   ab  b"),
    ({"abcd"}, "x abcd y", f"x {HIDDEN} y"),
    ({"line one\nab\nline three"}, "line one | ab | line three", HIDDEN),
    ({"-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIOa\n-----END EC PRIVATE KEY-----"},
     "-----BEGIN CERTIFICATE-----", "-----BEGIN CERTIFICATE-----"),
], ids=["shorter-than-the-minimum-is-no-mask", "white-space-does-not-count", "minimum-length-masks",
        "a-short-line-is-masked-in-the-joined-form", "pem-armour-is-no-secret"])
def test_what_is_a_mask(secrets, text, expected):
    assert scrub_secrets(text, secrets) == expected


def test_structures_are_scrubbed_to_any_depth_keys_too():
    masks = Masks(["s3cret-value"])
    shown = masks.scrub({"msg": "x s3cret-value", "s3cret-value": [("s3cret-value", 1)], "n": None})
    assert shown == {"msg": f"x {HIDDEN}", HIDDEN: [(HIDDEN, 1)], "n": None}


def test_every_credential_of_a_kubeconfig_is_a_mask(tmp_path):
    key = (make_pki(tmp_path) / "client.key").read_text()
    token_file = tmp_path / "token"
    token_file.write_text("file-token-123456\n")
    config = {"users": [
        {"name": "a", "user": {"token": "tok-abcdef", "client-key-data": base64.b64encode(key.encode()).decode(),
                               "client-certificate-data": base64.b64encode(b"cert-body-xyz").decode()}},
        {"name": "b", "user": {"username": "admin", "password": "pw-123456", "tokenFile": str(token_file)}},
        {"name": "c", "user": {"auth-provider": {"name": "oidc", "config": {"id-token": "oidc-tok-1"}}}},
        {"name": "d", "user": {"exec": {"command": "get-token", "args": ["--token=arg-tok-1", "--secret",
                                                                         "arg-tok-2", "--region", "eu"],
                                        "env": [{"name": "API_KEY", "value": "env-key-1"}]}}},
    ]}
    found = kubeconfig_credentials(config)
    assert {"tok-abcdef", "pw-123456", "file-token-123456", "oidc-tok-1", "arg-tok-1", "arg-tok-2", "env-key-1",
            "cert-body-xyz", key} <= found
    assert "eu" not in found and "admin" not in found
    masks = Masks(found)
    printed = f"+ cat $KUBECONFIG\n{yaml.safe_dump(config)}\n{key}"
    scrubbed = masks.scrub(printed)
    assert not [line for line in key.splitlines() if "PRIVATE KEY" not in line and line in scrubbed]
    assert not [value for value in found if value in scrubbed]
    assert "--region" in scrubbed and "get-token" in scrubbed


def test_a_failing_commands_message_and_its_record_hold_no_secret():
    secret = "first line of it\nsecond line ü of it\nthird"
    done = CommandResult(["sh", "-c", "x"], 3, "", f"+ echo\n{secret}\nfailed here")
    message = command_failure_message(done)
    assert "second line ü of it" in message                   # the message itself is shown masked by the caller
    masks = Masks([secret])
    assert "line" not in masks.scrub(message).replace("failed here", "")
    long = ("x" * (MAX_RECORD_MESSAGE - 10)) + secret
    entry = entry_for(RunInfo("r", "p", "1", "me"), result="failed", started=0, duration=0, digest=None, msg=long,
                      masks=masks)
    assert "first" not in entry["msg"] and "fir" not in entry["msg"][-20:]
    assert len(entry["msg"]) <= MAX_RECORD_MESSAGE + 3


@pytest.mark.parametrize("name, secret", [
    ("password", True), ("adminPassword", True), ("DB_PASSWD", True), ("ssh-passphrase", True),
    ("authToken", True), ("api_key", True), ("apiKey", True), ("privateKey", True), ("aws.secretKey", True),
    ("clientSecret", True), ("credentials", True),
    ("existingSecret", False), ("secretName", False), ("key", False), ("keyName", False), ("myValue", False),
    ("author", False), ("monkey", False),
], ids=str)
def test_names_that_say_a_value_is_a_credential(name, secret):
    assert says_secret(name) is secret


def test_values_held_under_a_credential_name_at_any_depth():
    data = {"db": {"password": "p4ss", "host": "db.local"}, "tokens": ["t1-abc", {"note": "n-1"}],
            "existingSecret": "my-secret", "apiKey": 42, "tolerations": [{"key": "node-role"}]}
    assert sorted(secret_named_strings(data)) == ["n-1", "p4ss", "t1-abc"]
