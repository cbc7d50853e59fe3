# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""kubernetes.core's connection options (``host``, ``api_key``, ``ca_cert``, ...) as one more kubeconfig source.

Each option is taken from the task parameter, else the host's ``kube_<option>`` variable (so plan phases get
them too, and a host's own value beats one set for the whole controller or play), else its ``K8S_AUTH_*``
environment variable as kubernetes.core reads it (the task's ``environment:`` keyword, then the controller's).
Then kubernetes.core's rule (``module_utils/k8s/client.py``): a ``host`` with a credential (``api_key``,
``username`` and ``password``, or ``client_cert`` and ``client_key``) is a complete connection and no kubeconfig
is read; otherwise the kubeconfig is resolved as usual and every option that is set overrides the matching
field of the chosen context's cluster or user. Every value says where it came from (provenance); the
credentials are kubeconfig fields afterwards, masked like any kubeconfig's.
"""

from __future__ import annotations

import base64
import ipaddress
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from ansible_collections.phasekit.kube.plugins.module_utils.environ import Overridden, environment_label, origin_of
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError

try:
    from ansible.module_utils.parsing.convert_bool import boolean
except ImportError:  # pragma: no cover - always present where the collection runs
    boolean = None


PROXY_HEADER_KEYS = ("proxy_basic_auth", "basic_auth", "user_agent")
PROXY_HEADERS_OPTIONS = {
    "proxy_basic_auth": {"type": "str", "no_log": True},
    "basic_auth": {"type": "str", "no_log": True},
    "user_agent": {"type": "str"},
}


@dataclass(frozen=True)
class OptionSpec:
    """One connection option: its name, type, the environment variables kubernetes.core reads (in order), and
    its argument spec's aliases."""

    name: str
    kind: str  # str, bool, path, list, dict: also its argument spec's type
    env: tuple
    secret: bool = False
    aliases: tuple = ()

    @property
    def host_var(self) -> str:
        return f"kube_{self.name}"

    @property
    def argument(self) -> dict:
        """The option's argument spec (kubernetes.core's ``args_common.AUTH_ARG_SPEC`` entry)."""
        argument = {"type": self.kind}
        if self.kind == "dict":
            argument["options"] = PROXY_HEADERS_OPTIONS  # secret in its suboptions
        elif self.secret:
            argument["no_log"] = True
        if self.kind == "list":
            argument["elements"] = "str"
        if self.aliases:
            argument["aliases"] = list(self.aliases)
        return argument


# kubernetes.core reads K8S_AUTH_<option> then K8S_AUTH_<kubernetes client name> (validate_certs, verify_ssl)
OPTIONS = (
    OptionSpec("host", "str", ("K8S_AUTH_HOST",)),
    OptionSpec("api_key", "str", ("K8S_AUTH_API_KEY",), secret=True),
    OptionSpec("username", "str", ("K8S_AUTH_USERNAME",)),
    OptionSpec("password", "str", ("K8S_AUTH_PASSWORD",), secret=True),
    OptionSpec("validate_certs", "bool", ("K8S_AUTH_VALIDATE_CERTS", "K8S_AUTH_VERIFY_SSL"), aliases=("verify_ssl",)),
    OptionSpec("ca_cert", "path", ("K8S_AUTH_CA_CERT", "K8S_AUTH_SSL_CA_CERT"), aliases=("ssl_ca_cert",)),
    OptionSpec("client_cert", "path", ("K8S_AUTH_CLIENT_CERT", "K8S_AUTH_CERT_FILE"), aliases=("cert_file",)),
    OptionSpec("client_key", "path", ("K8S_AUTH_CLIENT_KEY", "K8S_AUTH_KEY_FILE"), aliases=("key_file",)),
    OptionSpec("proxy", "str", ("K8S_AUTH_PROXY",)),
    OptionSpec("no_proxy", "str", ("K8S_AUTH_NO_PROXY",)),
    OptionSpec("proxy_headers", "dict",
               tuple(f"K8S_AUTH_PROXY_HEADERS_{key.upper()}" for key in PROXY_HEADER_KEYS), secret=True),
    OptionSpec("persist_config", "bool", ("K8S_AUTH_PERSIST_CONFIG",)),
    OptionSpec("impersonate_user", "str", ("K8S_AUTH_IMPERSONATE_USER",)),
    OptionSpec("impersonate_groups", "list", ("K8S_AUTH_IMPERSONATE_GROUPS",)),
)
OPTION_NAMES = tuple(spec.name for spec in OPTIONS)
HOST_VARS = tuple(spec.host_var for spec in OPTIONS)
# the argument spec every cluster action adds (kubernetes.core's args_common.AUTH_ARG_SPEC, less kubeconfig/context)
ARGUMENT_SPEC = {spec.name: spec.argument for spec in OPTIONS}
CONNECTION_NAME = "connection-options"  # the context, cluster and user a complete connection is described as
FALSE_WORDS = ("0", "false", "no")  # kubernetes.core: any other value of a K8S_AUTH_* boolean is true


@dataclass(frozen=True)
class Setting:
    """One option's value and the place it came from (``K8S_AUTH_HOST``, ``task parameter host``, ...)."""

    value: object
    origin: str


@dataclass(frozen=True)
class ConnectionOptions:
    """The connection options that are set, each with its origin."""

    settings: dict  # option name -> Setting
    overridden: tuple = ()  # Overridden: environment variables a host's own kube_<option> beat

    def __bool__(self) -> bool:
        return bool(self.settings)

    def get(self, name: str):
        setting = self.settings.get(name)
        return setting.value if setting else None

    def origin(self, name: str) -> str | None:
        setting = self.settings.get(name)
        return setting.origin if setting else None

    @property
    def credential(self) -> tuple:
        """The options that, with ``host``, make a complete connection, or (): the token first, as it is the one
        sent when several are set (client certificates are sent beside it)."""
        for names in (("api_key",), ("username", "password"), ("client_cert", "client_key")):
            if all(self.get(name) for name in names):
                return names
        return ()

    @property
    def complete(self) -> bool:
        """kubernetes.core's rule: a host and a credential, and no kubeconfig is loaded."""
        return bool(self.get("host")) and bool(self.credential)

    def fingerprint_data(self) -> dict:
        """What identifies these options in a request fingerprint (values included: the fingerprint is a hash)."""
        return {name: setting.value for name, setting in sorted(self.settings.items())}

    def provenance(self) -> dict:
        """Where each option came from; never a value."""
        return {name: {"from": setting.origin} for name, setting in self.settings.items()}


def connection_options(task_args: Mapping, environ: Mapping, host_vars: Callable[[str], object],
                       host: str | None = None, given_as: str = "task parameter") -> ConnectionOptions:
    """Each option from the task parameter (``given_as``: the lookup's keyword), else the host's ``kube_<option>``,
    else its K8S_AUTH_* variables in ``environ`` (the task's environment: keyword over the controller's)."""
    settings, overridden = {}, []
    for spec in OPTIONS:
        setting = _from_task(spec, task_args, given_as)
        if setting is None:
            setting = _from_host_vars(spec, host_vars, host)
            if setting is not None:
                overridden += _environment_overridden(spec, environ)
        if setting is None:
            setting = _from_environment(spec, environ)
        if setting is not None:
            settings[spec.name] = setting
    options = ConnectionOptions(settings, tuple(overridden))
    _check(options)
    return options


def _environment_overridden(spec: OptionSpec, environ: Mapping) -> list:
    """The option's environment variables that are set, now that the host's own variable wins over them."""
    return [Overridden(name, origin_of(environ, name), spec.host_var) for name in spec.env if environ.get(name)]


def _is_set(value) -> bool:
    return value is not None and value != "" and value != [] and value != {}


def _from_task(spec: OptionSpec, task_args: Mapping, given_as: str) -> Setting | None:
    value = task_args.get(spec.name)
    if spec.name == "proxy_headers" and isinstance(value, Mapping):
        value = {key: item for key, item in value.items() if _is_set(item)}
    return Setting(value, f"{given_as} {spec.name}") if _is_set(value) else None


def _from_environment(spec: OptionSpec, environ: Mapping) -> Setting | None:
    """kubernetes.core's reading of K8S_AUTH_*: the first variable of the option that is set; an empty one is
    unset here (AWX sets every injector variable, empty ones included)."""
    if spec.name == "proxy_headers":
        found = {key: environ[name] for key, name in zip(PROXY_HEADER_KEYS, spec.env) if environ.get(name)}
        names = [environment_label(environ, name) for name in spec.env if environ.get(name)]
        return Setting(found, ", ".join(names)) if found else None
    for name in spec.env:
        text = environ.get(name)
        if text:
            label = environment_label(environ, name)
            if spec.kind == "bool":
                return Setting(text.lower() not in FALSE_WORDS, label)
            if spec.kind == "list":
                return Setting([item for item in text.split(",") if item], label)
            return Setting(text, label)
    return None


def _from_host_vars(spec: OptionSpec, host_vars: Callable[[str], object], host: str | None) -> Setting | None:
    value = host_vars(spec.host_var)
    if not _is_set(value):
        return None
    label = f"host var {spec.host_var}" + (f" of {host}" if host else "")
    return Setting(_host_var_value(spec, value, label), label)


def _host_var_value(spec: OptionSpec, value, label: str):
    if spec.kind == "bool":
        if isinstance(value, bool):
            return value
        try:
            return boolean(value, strict=True)
        except TypeError:
            raise PhasekitError(f"{label}: expected true or false, got {_shown(spec, value)}") from None
    if spec.kind == "list":
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
            raise PhasekitError(f"{label}: expected a list of strings (or one comma-separated string)")
        return [item for item in items if item]
    if spec.kind == "dict":
        if not isinstance(value, Mapping) or not set(value) <= set(PROXY_HEADER_KEYS):
            raise PhasekitError(f"{label}: expected a mapping with {', '.join(PROXY_HEADER_KEYS)}")
        return {key: str(item) for key, item in value.items() if _is_set(item)}
    if not isinstance(value, str):
        raise PhasekitError(f"{label}: expected a string, got {type(value).__name__}")
    return value


def _shown(spec: OptionSpec, value) -> str:
    return "a value that is not shown" if spec.secret else repr(value)


def _check(options: ConnectionOptions) -> None:
    """Refuse, naming the option and its origin, what phasekit cannot do as kubernetes.core documents it."""
    if options.get("impersonate_groups") and not options.get("impersonate_user"):
        raise PhasekitError(f"impersonate_groups (from {options.origin('impersonate_groups')}) without "
                            "impersonate_user: the API server refuses groups without a user to impersonate")
    if options.get("proxy_headers"):
        # a kubeconfig has no such field: helm and kubectl, given the resolved kubeconfig, could not send them
        raise PhasekitError(f"proxy_headers (from {options.origin('proxy_headers')}): not supported by "
                            "phasekit.kube (a kubeconfig cannot carry them, so helm and kubectl "
                            "could not send them): use a proxy that needs no headers")
    given = [name for name in ("username", "password") if options.get(name)]
    if len(given) == 1:  # HTTP Basic needs both; one alone would silently change nothing
        missing = "password" if given[0] == "username" else "username"
        raise PhasekitError(f"{given[0]} (from {options.origin(given[0])}) without {missing}: set both or neither")


def connection_kubeconfig(options: ConnectionOptions) -> dict:
    """The kubeconfig a complete connection describes (kubernetes.core reads none), one context named
    ``connection-options``. Defaults are the kubernetes client's: certificates verified against the system's CAs."""
    config = {
        "apiVersion": "v1", "kind": "Config", "preferences": {},
        "clusters": [{"name": CONNECTION_NAME, "cluster": {}}],
        "users": [{"name": CONNECTION_NAME, "user": {}}],
        "contexts": [{"name": CONNECTION_NAME, "context": {"cluster": CONNECTION_NAME, "user": CONNECTION_NAME}}],
        "current-context": CONNECTION_NAME,
    }
    return apply_connection_options(config, options, CONNECTION_NAME)


def apply_connection_options(config: dict, options: ConnectionOptions, context: str) -> dict:
    """``config`` (kubectl-shaped, flattened) with the options set over ``context``'s cluster and user, as the
    kubernetes client's Configuration takes kubernetes.core's options over what the kubeconfig loaded."""
    config = {**config, "clusters": [dict(item) for item in config.get("clusters") or []],
              "users": [dict(item) for item in config.get("users") or []],
              "contexts": [dict(item) for item in config.get("contexts") or []]}
    entry = next((item for item in config["contexts"] if item.get("name") == context), None)
    if entry is None:
        return config
    entry["context"] = dict(entry.get("context") or {})
    cluster = _named(config["clusters"], "cluster", entry["context"]["cluster"])
    if not entry["context"].get("user") and _user_options_set(options):
        entry["context"]["user"] = CONNECTION_NAME
    user = _named(config["users"], "user", entry["context"].get("user")) if entry["context"].get("user") else {}
    _check_persist_config(options, user, entry["context"].get("user"))
    _override_cluster(cluster, options)
    _override_user(user, options)
    return config


def _check_persist_config(options: ConnectionOptions, user: dict, user_name: str | None) -> None:
    """persist_config: true has an effect in kubernetes.core only for a user whose auth-provider refreshes its
    token (the kubernetes client writes the new token back to the kubeconfig file); there phasekit refuses it, as it
    never writes to a kubeconfig source. For any other user it changes nothing, in kubernetes.core as here."""
    if options.get("persist_config") and user.get("auth-provider"):
        provider = (user.get("auth-provider") or {}).get("name") or "an auth-provider"
        raise PhasekitError(f"persist_config (from {options.origin('persist_config')}): user {user_name!r} "
                            f"authenticates with {provider}, whose refreshed tokens kubernetes.core would write back "
                            "to the kubeconfig file; phasekit.kube never writes to a kubeconfig source (sources may "
                            "be encrypted, remote or merged from several files): unset it or set it to false")


def _named(entries: list, inner: str, name: str) -> dict:
    """The body of the entry called ``name`` (a copy, set back in the list), created when there is none."""
    for item in entries:
        if item.get("name") == name:
            item[inner] = dict(item.get(inner) or {})
            return item[inner]
    entries.append({"name": name, inner: {}})
    return entries[-1][inner]


USER_OPTIONS = ("api_key", "username", "password", "client_cert", "client_key", "impersonate_user",
                "impersonate_groups")


def _user_options_set(options: ConnectionOptions) -> bool:
    return any(options.get(name) for name in USER_OPTIONS)


def _override_cluster(cluster: dict, options: ConnectionOptions) -> None:
    if options.get("host"):
        cluster["server"] = options.get("host").rstrip("/")
    if options.get("ca_cert"):
        cluster.pop("certificate-authority", None)
        cluster["certificate-authority-data"] = file_data(options, "ca_cert")
    if options.get("validate_certs") is not None:
        cluster["insecure-skip-tls-verify"] = not options.get("validate_certs")
    if cluster.get("insecure-skip-tls-verify"):
        # the kubernetes client ignores the CA when it does not verify; kubectl would refuse both
        cluster.pop("certificate-authority", None)
        cluster.pop("certificate-authority-data", None)
    if options.get("proxy"):
        cluster["proxy-url"] = options.get("proxy")
    if options.get("no_proxy") and cluster.get("proxy-url") and bypasses_proxy(cluster.get("server", ""),
                                                                               options.get("no_proxy")):
        del cluster["proxy-url"]


def _override_user(user: dict, options: ConnectionOptions) -> None:
    if options.get("api_key"):
        # the token replaces whatever the kubeconfig authenticated with (its Authorization header)
        for key in ("tokenFile", "username", "password", "exec", "auth-provider"):
            user.pop(key, None)
        user["token"] = options.get("api_key")
    elif options.get("username"):
        for key in ("token", "tokenFile", "exec", "auth-provider"):
            user.pop(key, None)
        user["username"], user["password"] = options.get("username"), options.get("password")
    for name, field in (("client_cert", "client-certificate"), ("client_key", "client-key")):
        if options.get(name):
            user.pop(field, None)
            user[f"{field}-data"] = file_data(options, name)
    if options.get("impersonate_user"):
        user["as"] = options.get("impersonate_user")
        if options.get("impersonate_groups"):
            user["as-groups"] = list(options.get("impersonate_groups"))


def file_data(options: ConnectionOptions, name: str) -> str:
    """The base64 of the file an option names (kubectl's ``--flatten``); the error names the option and origin."""
    path = os.path.expanduser(str(options.get(name)))
    try:
        with open(path, "rb") as handle:
            return base64.b64encode(handle.read()).decode("ascii")
    except OSError as exc:
        raise PhasekitError(f"{name} (from {options.origin(name)}): cannot read {path}: "
                            f"{exc.strerror or type(exc).__name__}") from None


def bypasses_proxy(server: str, no_proxy: str) -> bool:
    """Whether ``server`` matches ``no_proxy`` as the kubernetes client matches it: ``*``, an IP address or CIDR,
    a host name or a domain suffix (a leading dot optional), or host:port."""
    try:
        parts = urlsplit(server if "://" in server else f"https://{server}")
        host = (parts.hostname or "").lower()
        host_and_port = parts.netloc.lower()
    except ValueError:
        return False
    if not host:
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    for entry in (item.strip().lower() for item in no_proxy.split(",")):
        if not entry:
            continue
        if entry == "*":
            return True
        if address is not None:
            try:
                if address in ipaddress.ip_network(entry, strict=False):
                    return True
            except ValueError:
                pass
        entry = entry.lstrip(".")
        if entry in (host, host_and_port) or host.endswith("." + entry) or host_and_port.endswith("." + entry):
            return True
    return False
