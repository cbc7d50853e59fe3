# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Kubeconfigs made safe to show (diffs, debugging): credentials replaced by markers.

The markers are kubectl's own (``kubectl config view`` without ``--raw``):
``DATA+OMITTED`` for certificate and key data, ``REDACTED`` for secrets. This
goes further than kubectl: passwords, auth-provider settings and exec
environment values are credentials too.
"""

from __future__ import annotations

import copy

REDACTED = "REDACTED"
DATA_OMITTED = "DATA+OMITTED"
SECRET_USER_FIELDS = ("token", "password")
DATA_FIELDS = {
    "clusters": ("certificate-authority-data",),
    "users": ("client-certificate-data", "client-key-data"),
}


def redact_kubeconfig(config: dict) -> dict:
    """A copy of a kubectl-shaped kubeconfig dict without any credential."""
    redacted = copy.deepcopy(config)
    for item in redacted.get("clusters") or []:
        _omit_data(item.get("cluster") or {}, DATA_FIELDS["clusters"])
    for item in redacted.get("users") or []:
        user = item.get("user") or {}
        _omit_data(user, DATA_FIELDS["users"])
        for field_name in SECRET_USER_FIELDS:
            if user.get(field_name):
                user[field_name] = REDACTED
        provider = user.get("auth-provider") or {}
        if provider.get("config"):
            provider["config"] = {key: REDACTED for key in provider["config"]}
        for variable in (user.get("exec") or {}).get("env") or []:
            if isinstance(variable, dict) and variable.get("value"):
                variable["value"] = REDACTED
        if isinstance((user.get("exec") or {}).get("args"), list):
            user["exec"]["args"] = redact_exec_args(user["exec"]["args"])
    return redacted


SECRET_ARG_WORDS = ("token", "password", "passwd", "secret", "key", "credential", "auth")


def redact_exec_args(args: list) -> list:
    """An exec plugin's arguments with the values of secret-looking flags hidden: ``--token=x`` and
    ``--token x`` become ``--token=REDACTED`` and ``--token REDACTED``; other arguments stay readable."""
    shown, hide_next = [], False
    for arg in args:
        text = str(arg)
        if hide_next and not text.startswith("-"):
            shown.append(REDACTED)
            hide_next = False
            continue
        hide_next = False
        flag, sep, _value = text.partition("=")
        secret_flag = text.startswith("-") and any(word in flag.lower() for word in SECRET_ARG_WORDS)
        if secret_flag and sep:
            shown.append(f"{flag}={REDACTED}")
        else:
            shown.append(arg)
            hide_next = secret_flag
    return shown


def _omit_data(entry: dict, fields) -> None:
    for field_name in fields:
        if entry.get(field_name):
            entry[field_name] = DATA_OMITTED
