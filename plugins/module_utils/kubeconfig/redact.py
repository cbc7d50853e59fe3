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
    return redacted


def _omit_data(entry: dict, fields) -> None:
    for field_name in fields:
        if entry.get(field_name):
            entry[field_name] = DATA_OMITTED
