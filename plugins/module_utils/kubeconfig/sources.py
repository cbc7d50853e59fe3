# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Kubeconfig sources: what a user may write, checked once, and the documents each one yields.

A source is a mapping with exactly one kind key (path, env, content, url, sops,
vault, secret, or a kind another format registers), the options of that kind, and ``optional``. A plain string is a
``path`` source; a mapping that looks like a kubeconfig is a ``content`` source.
``path`` and ``env`` hold ``KUBECONFIG``-style lists and follow kubectl: empty
and repeated entries are dropped, missing files are skipped.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

from ansible_collections.phasekit.kube.plugins.module_utils.compat import is_vault_object, vault_plaintext
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.formats import Registry
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.model import Origin

OWN_KINDS = ("path", "env", "content", "url", "sops", "vault", "secret")
# kinds whose value is one file that ~ is expanded in
OWN_FILE_KINDS = ("sops", "vault")
COMMON_OPTIONS = ("optional",)
KIND_OPTIONS = {
    "url": ("ca_path", "headers", "timeout", "validate_certs"),
    "sops": ("input_type",),
}
SOPS_INPUT_TYPES = ("yaml", "json", "dotenv", "ini", "binary")
SECRET_FIELDS = ("name", "namespace", "key", "host", "kubeconfig", "context", "timeout")
SECRET_DEFAULTS = {"namespace": "default", "key": "value", "host": None, "timeout": 60}   # kubeconfig, context: unset
DEFAULT_URL_TIMEOUT = 30
# keys that make a mapping an inline kubeconfig rather than a source
KUBECONFIG_KEYS = ("apiVersion", "kind", "clusters", "users", "contexts", "current-context", "preferences")


@dataclass(frozen=True)
class SourceKind:
    """A source kind another format brings (``register_source_kind``): its key, how it is checked, named and read.

    ``check_value(value, here)`` and ``check_options(kind, item, here)`` raise PhasekitError naming ``here``;
    ``describe(value, options)`` is its location in messages; ``read(unit, hooks)`` is its kubeconfig (see
    ``readers.read_unit``). Its value is one file or directory, ``~`` expanded."""

    name: str
    options: tuple
    check_value: Callable
    check_options: Callable
    describe: Callable
    read: Callable


_REGISTERED_KINDS = Registry()


def register_source_kind(kind: SourceKind) -> None:
    _REGISTERED_KINDS.add(kind.name, kind)


def registered_kind(name: str) -> SourceKind | None:
    """The registered kind of that name (None for the collection's own kinds)."""
    return _REGISTERED_KINDS.get(name)


def source_kinds() -> tuple:
    """Every kind a source may have: the collection's own, then the registered ones."""
    return OWN_KINDS + _REGISTERED_KINDS.names()


def file_kinds() -> tuple:
    """The kinds whose value is one file (or directory) that ``~`` is expanded in."""
    return OWN_FILE_KINDS + _REGISTERED_KINDS.names()


@dataclass(frozen=True)
class SourceSpec:
    """One checked source: its 1-based index, kind, value and kind options."""

    index: int
    kind: str
    value: object
    options: dict = field(default_factory=dict)
    optional: bool = False

    def to_dict(self) -> dict:
        """The source as a user would write it, with defaults filled in."""
        written = {self.kind: self.value, **self.options}
        if self.optional:
            written["optional"] = True
        return written

    def location(self) -> str:
        """What the source points at, safe to show (no URL credentials, no inline content)."""
        if self.kind == "env":
            return f"${self.value}"
        if self.kind == "content":
            return "inline"
        if self.kind == "url":
            return safe_url(self.value)
        if self.kind == "secret":
            return describe_secret(self.value)
        registered = registered_kind(self.kind)
        return registered.describe(self.value, self.options) if registered is not None else str(self.value)

    def label(self) -> str:
        return f"kubeconfig source {self.index} ({self.kind}: {self.location()})"


@dataclass(frozen=True)
class SourceUnit:
    """One document a source yields: a file of a path list, or the whole source."""

    spec: SourceSpec
    origin: Origin


def normalize_sources(value, where: str) -> list[SourceSpec]:
    """Check sources as written (a string, a mapping, or a list of them) and number them from 1.

    ``where`` names the setting in messages, e.g. ``host var kube_kubeconfig``.
    """
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    return [_normalize_source(item, index, where) for index, item in enumerate(items, start=1)]


def decrypted_path(value, here: str):
    """A ``!vault`` path (a whole source or a file kind's value) decrypted, now that it is used; anything else as
    it is. Before 2.19 templating a host variable leaves a vault-encrypted value encrypted."""
    if not is_vault_object(value):
        return value
    try:
        return vault_plaintext(value)
    except Exception as exc:  # pylint: disable=broad-exception-caught  # the controller's vault errors
        reason = str(getattr(exc, "message", None) or exc).strip().splitlines()
        raise PhasekitError(f"{here}: cannot decrypt the vault-encrypted value (!vault): "
                            f"{reason[0] if reason else type(exc).__name__}") from None


def _normalize_source(item, index: int, where: str) -> SourceSpec:
    here = f"{where}, source {index}"
    item = decrypted_path(item, here)
    if isinstance(item, str):
        item = {"path": item}
    if not isinstance(item, dict):
        raise PhasekitError(f"{here}: expected a path string or a mapping with one of "
                            f"{', '.join(source_kinds())}, got {type(item).__name__}")
    kinds = [key for key in source_kinds() if key in item]
    if not kinds and any(key in item for key in KUBECONFIG_KEYS):
        item = {"content": item}  # an inline kubeconfig given where a source was expected
        kinds = ["content"]
    if len(kinds) != 1:
        found = f"found {', '.join(kinds)}" if kinds else f"found keys {', '.join(map(str, item)) or 'none'}"
        raise PhasekitError(f"{here}: a source needs exactly one of {', '.join(source_kinds())}; {found}")
    kind = kinds[0]
    registered = registered_kind(kind)
    allowed = (kind,) + (registered.options if registered else KIND_OPTIONS.get(kind, ())) + COMMON_OPTIONS
    unknown = [str(key) for key in item if key not in allowed]
    if unknown:
        raise PhasekitError(f"{here} ({kind}): unknown option {', '.join(unknown)}; "
                            f"a {kind} source accepts {', '.join(allowed)}")
    optional = item.get("optional", False)
    if not isinstance(optional, bool):
        raise PhasekitError(f"{here} ({kind}): optional must be true or false")
    value = item[kind]
    if kind in ("path",) + file_kinds():
        value = decrypted_path(value, f"{here} ({kind})")
    value = (registered.check_value if registered else _CHECK_VALUE[kind])(value, f"{here} ({kind})")
    options = (registered.check_options if registered else _check_options)(kind, item, f"{here} ({kind})")
    return SourceSpec(index=index, kind=kind, value=value, options=options, optional=optional)


def nonempty_string(value, here: str, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise PhasekitError(f"{here}: expected {what} (a non-empty string)")
    return value


def _check_path(value, here):
    return nonempty_string(value, here, "a file path or a KUBECONFIG-style path list")


def _check_env(value, here):
    if value is None or value == "":
        return "KUBECONFIG"
    return nonempty_string(value, here, "the name of an environment variable")


def _check_content(value, here):
    if isinstance(value, (str, dict)):
        return value
    raise PhasekitError(f"{here}: expected kubeconfig YAML text or a mapping, got {type(value).__name__}")


def _check_url(value, here):
    value = nonempty_string(value, here, "an https:// URL")
    parts = urlsplit(value)
    if parts.scheme != "https" or not parts.netloc:
        raise PhasekitError(f"{here}: only https:// URLs are accepted, got {safe_url(value)}")
    if parts.username or parts.password:
        raise PhasekitError(f"{here}: credentials in the URL (user:password@) are not sent; give them in headers "
                            f"(for example Authorization), got {safe_url(value)}")
    return value


def _check_file(value, here):
    return nonempty_string(value, here, "a file path")


def _check_secret(value, here):
    if isinstance(value, str):
        value = {"name": value}
    if not isinstance(value, dict):
        raise PhasekitError(f"{here}: expected a mapping with {', '.join(SECRET_FIELDS)}")
    unknown = [str(key) for key in value if key not in SECRET_FIELDS]
    if unknown:
        raise PhasekitError(f"{here}: unknown field {', '.join(unknown)}; expected {', '.join(SECRET_FIELDS)}")
    secret = {**SECRET_DEFAULTS, **{key: item for key, item in value.items() if item is not None}}
    nonempty_string(secret.get("name"), f"{here} name", "the Secret name")
    for key in ("namespace", "key"):
        nonempty_string(secret[key], f"{here} {key}", f"the Secret {key}")
    if secret["host"] is not None:
        nonempty_string(secret["host"], f"{here} host", "an inventory host name")
    _check_secret_cluster(secret, here)
    secret["timeout"] = _positive_number(secret["timeout"], f"{here} timeout", allow_zero=True)
    return secret


def _check_secret_cluster(secret: dict, here: str) -> None:
    """The Secret's cluster is an inventory host (``host``, else ``kube_parent``) or a kubeconfig file and context
    (``kubeconfig``, ``context``: a host of another slice of a sliced run, whose variables this slice lacks)."""
    if secret.get("kubeconfig") is not None:
        nonempty_string(secret["kubeconfig"], f"{here} kubeconfig", "a kubeconfig file's path")
        if secret["host"] is not None:
            raise PhasekitError(f"{here}: host and kubeconfig both name the Secret's cluster: give one")
    if secret.get("context") is not None:
        nonempty_string(secret["context"], f"{here} context", "a context of the kubeconfig file")
        if secret.get("kubeconfig") is None:
            raise PhasekitError(f"{here}: context is a context of the kubeconfig file: give kubeconfig too")


_CHECK_VALUE = {
    "path": _check_path,
    "env": _check_env,
    "content": _check_content,
    "url": _check_url,
    "sops": _check_file,
    "vault": _check_file,
    "secret": _check_secret,
}


def _check_options(kind: str, item: dict, here: str) -> dict:
    options = {}
    if kind == "url":
        options["timeout"] = _positive_number(item.get("timeout", DEFAULT_URL_TIMEOUT), f"{here} timeout")
        validate_certs = item.get("validate_certs", True)
        if not isinstance(validate_certs, bool):
            raise PhasekitError(f"{here} validate_certs: must be true or false")
        options["validate_certs"] = validate_certs
        if item.get("ca_path") is not None:
            options["ca_path"] = nonempty_string(decrypted_path(item["ca_path"], f"{here} ca_path"),
                                                 f"{here} ca_path", "a CA bundle file path")
        headers = item.get("headers") or {}
        if not isinstance(headers, dict):
            raise PhasekitError(f"{here} headers: expected a mapping of header names to strings, "
                                f"got {type(headers).__name__}")
        for key, header in headers.items():
            # a vault-encrypted value (!vault) is a string too: decrypted when the request is sent
            if not isinstance(key, str) or not (isinstance(header, str) or is_vault_object(header)):
                raise PhasekitError(f"{here} headers.{key}: expected a string (or a vault-encrypted string), "
                                    f"got {type(header).__name__}")
        if headers:
            options["headers"] = dict(headers)
    if kind == "sops" and item.get("input_type") is not None:
        if item["input_type"] not in SOPS_INPUT_TYPES:
            raise PhasekitError(f"{here} input_type: expected one of {', '.join(SOPS_INPUT_TYPES)}")
        options["input_type"] = item["input_type"]
    return options


def _positive_number(value, here: str, allow_zero: bool = False):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or (value == 0 and not allow_zero):
        raise PhasekitError(f"{here}: expected a positive number of seconds")
    return value


def safe_url(url: str) -> str:
    """The URL without user info, query or fragment (they may carry credentials)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        if parts.port:
            host = f"{host}:{parts.port}"
    except ValueError:
        return "<unparseable URL>"
    hidden = "?…" if parts.query else ""
    return urlunsplit((parts.scheme, host, parts.path, "", "")) + hidden


def describe_secret(secret: dict) -> str:
    where = secret.get("host") or "kube_parent"
    if secret.get("kubeconfig"):
        where = secret["kubeconfig"] + (f" context {secret['context']}" if secret.get("context") else "")
    return f"{secret['namespace']}/{secret['name']} key {secret['key']} in {where}"


def split_path_list(text: str) -> list[str]:
    """A KUBECONFIG-style list as kubectl reads it: split, deduplicated, empty entries dropped; ``~`` is
    not expanded (kubectl leaves it to the shell, which does not expand it after a ``:``)."""
    seen = []
    for entry in text.split(os.pathsep):
        if entry and entry not in seen:
            seen.append(entry)
    return seen


def source_paths(spec: SourceSpec, text: str) -> list[str]:
    """The files of a path or env source. A single path written in YAML (``path: ~/.kube/x``) has ``~``
    expanded, as Ansible users expect of a path; a list and ``$KUBECONFIG`` are taken as kubectl takes them."""
    entries = split_path_list(text)
    if spec.kind == "path" and os.pathsep not in text:
        return [os.path.expanduser(entry) for entry in entries]
    return entries


def expand_source(spec: SourceSpec, environ) -> list[SourceUnit]:
    """The documents a source yields, in order, without reading any of them."""
    if spec.kind in ("path", "env"):
        variable = None
        text = spec.value
        if spec.kind == "env":
            variable = spec.value
            text = environ.get(variable, "")
            if not text:
                raise PhasekitError(f"the environment variable {variable} is not set", where=spec.label())
        return [SourceUnit(spec, Origin(spec.index, spec.kind, entry, path=entry, variable=variable))
                for entry in source_paths(spec, text)]
    path = os.path.expanduser(spec.value) if spec.kind in file_kinds() else None
    location = path if path else spec.location()
    registered = registered_kind(spec.kind)
    if registered is not None:
        location = registered.describe(path, spec.options)
    return [SourceUnit(spec, Origin(spec.index, spec.kind, location, path=path))]
