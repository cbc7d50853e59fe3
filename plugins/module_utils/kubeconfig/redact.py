# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Kubeconfigs made safe to show (diffs, debugging): credentials replaced by markers.

The markers are kubectl's own (``kubectl config view`` without ``--raw``):
``DATA+OMITTED`` for certificate and key data, ``REDACTED`` for secrets. This
goes further than kubectl: passwords, auth-provider settings and exec
environment values are credentials too.
"""

from __future__ import annotations

import base64
import binascii
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


def kubeconfig_credentials(config) -> set[str]:
    """Every credential of a kubectl-shaped kubeconfig dict, to mask wherever what a command, helm or a container
    given this kubeconfig prints is shown: tokens (and a ``tokenFile``'s content), passwords, client key and
    certificate data (base64 as written, and decoded: the PEM text), auth-provider settings, exec environment
    values and the values of exec arguments ``redact_exec_args`` hides."""
    found: set[str] = set()
    if not isinstance(config, dict):
        return found
    for item in config.get("users") or []:
        user = (item or {}).get("user") if isinstance(item, dict) else None
        if isinstance(user, dict):
            found.update(_user_credentials(user))
    return {value for value in found if isinstance(value, str) and value}


def _user_credentials(user: dict):
    for field_name in SECRET_USER_FIELDS:
        yield user.get(field_name)
    yield _file_text(user.get("tokenFile"))
    for field_name in DATA_FIELDS["users"]:
        data = user.get(field_name)
        if isinstance(data, str):
            yield data
            yield _decoded(data)
    provider = user.get("auth-provider") or {}
    if isinstance(provider, dict) and isinstance(provider.get("config"), dict):
        yield from (str(value) for value in provider["config"].values() if value)
    exec_config = user.get("exec") or {}
    if isinstance(exec_config, dict):
        for variable in exec_config.get("env") or []:
            if isinstance(variable, dict) and variable.get("value"):
                yield str(variable["value"])
        args = exec_config.get("args")
        if isinstance(args, list):
            for arg, shown in zip(args, redact_exec_args(args)):
                if shown != arg:  # '--token=x' (its value after '=') or the 'x' after '--token'
                    yield str(arg).partition("=")[2] if shown.endswith(f"={REDACTED}") else str(arg)


def _decoded(data: str) -> str | None:
    try:
        return base64.b64decode(data, validate=False).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None


def _file_text(path) -> str | None:
    if not isinstance(path, str) or not path:
        return None
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().strip()
    except (OSError, UnicodeDecodeError):
        return None
