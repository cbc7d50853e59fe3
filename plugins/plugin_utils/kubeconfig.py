# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Kubeconfig resolution inside Ansible: which settings win, vault files, Secrets of other hosts, reuse.

Every action plugin that talks to a cluster calls ``resolve_for_task`` and
includes ``AUTH_ARGUMENT_SPEC`` in its argument spec (documented by the doc
fragment ``phasekit.kube.kubeconfig``).

Precedence, decided separately for the sources, the context and each of kubernetes.core's connection options
(``host``, ``api_key``, ``ca_cert``, ... see ``module_utils.kubeconfig.connection``); each host acts on the cluster
it names, and a value set for the whole controller or play only fills what a host leaves unset:

==============================  ==========================  =====================  =========================
                                kubeconfig sources          context                connection option
==============================  ==========================  =====================  =========================
1. task parameter               ``kubeconfig``              ``context``            ``host``, ``api_key``, ...
2. host/group vars              ``kube_kubeconfig``         ``kube_context``       ``kube_host``, ...
3. environment: keyword, then   ``K8S_AUTH_KUBECONFIG``     ``K8S_AUTH_CONTEXT``   ``K8S_AUTH_HOST``, ...
   the controller's environment
4. kubectl default              ``$KUBECONFIG``, else       merged current-context (none)
                                ``~/.kube/config``
==============================  ==========================  =====================  =========================

Row 3 is the action's ``environ`` (``plugin_utils.environment``: the task's ``environment:`` over the controller's
environment; a lookup has no task and sees the controller's only). Provenance names the row and, for the
environment, which one (``play environment K8S_AUTH_CONTEXT``). An environment value a host's own variable beat is
in the request's ``overridden``, said once per run (``resolve_for_task``; the fleet in ``run_phases``).

A ``host`` with a credential is a complete connection: no kubeconfig is read (kubernetes.core's rule);
otherwise the options that are set override the resolved context's cluster and user.

Once per run: the ``phasekit.kube.kubeconfig`` action with ``remember: true``
returns the resolution (credentials included, the result marked no_log); when
registered as ``phasekit_kube_resolved`` later tasks on that host reuse it, as
long as it answers the same request (same sources and context).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ansible.utils.display import Display

from ansible_collections.phasekit.kube.plugins.module_utils import compat
from ansible_collections.phasekit.kube.plugins.module_utils.environ import (
    CONTROLLER, Overridden, environment_label, origin_of, overridden_warning)
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.connection import ARGUMENT_SPEC as CONNECTION_SPEC
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.connection import ConnectionOptions
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.connection import connection_options
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.readers import SourceHooks
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.resolve import Resolution
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.resolve import request_fingerprint
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.resolve import resolve_kubeconfig
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.resolve import resolve_with_connection
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.resolve import view_with_connection
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.secret import SecretNotThereYet
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.secret import read_kubeconfig_secret
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.sources import SourceSpec
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.sources import normalize_sources

try:
    from ansible.errors import AnsibleError
except ImportError:  # pragma: no cover - always present where plugins run
    AnsibleError = Exception

AUTH_ARGUMENT_SPEC = {
    "kubeconfig": {"type": "raw"},
    "context": {"type": "str"},
    **CONNECTION_SPEC,
}
REMEMBERED_VAR = "phasekit_kube_resolved"
RESOLUTION_KEY = "resolution"
RESOLUTIONS_KEY = "resolutions"
ENV_KUBECONFIG = "K8S_AUTH_KUBECONFIG"
ENV_CONTEXT = "K8S_AUTH_CONTEXT"
HOST_VAR_KUBECONFIG = "kube_kubeconfig"
HOST_VAR_CONTEXT = "kube_context"
HOST_VAR_PARENT = "kube_parent"
HOST_VAR_CLUSTER = "kube_cluster"
DEFAULT_KUBECONFIG = "~/.kube/config"
VAULT_HEADER = b"$ANSIBLE_VAULT;"

display = Display()
HostVars = Callable[[str], object]  # variable name -> templated value, or None when unset


@dataclass(frozen=True)
class KubeconfigRequest:
    """What to resolve for one host, and which setting supplied each part."""

    host: str | None
    sources: list[SourceSpec]
    sources_from: str
    context: str | None
    context_from: str
    expected_cluster: str | None = None
    connection: ConnectionOptions = ConnectionOptions({})
    overridden: tuple = ()  # Overridden: K8S_AUTH_* variables the host's own kube_* variables beat

    @property
    def fingerprint(self) -> str:
        return request_fingerprint(self.sources, self.context, self.connection)


def kubeconfig_request(host: str | None, host_vars: HostVars, task_args: Mapping, environ: Mapping) -> KubeconfigRequest:
    """Apply the precedence table: task parameter > host vars > K8S_AUTH_* (the task's environment: keyword, then
    the controller's environment) > kubectl default, separately for the sources, the context and each option."""
    # plain data: a templated parameter is Ansible's tagged string on 2.19, which the kubeconfig YAML cannot hold
    connection = connection_options({name: to_plain(task_args.get(name)) for name in CONNECTION_SPEC}, environ,
                                    lambda name: to_plain(host_vars(name)), host)
    overridden = list(connection.overridden)
    source, sources_from = _by_precedence(to_plain(task_args.get("kubeconfig")), "task parameter kubeconfig",
                                          to_plain(host_vars(HOST_VAR_KUBECONFIG)), HOST_VAR_KUBECONFIG, host,
                                          environ, ENV_KUBECONFIG, overridden)
    if sources_from is None:
        sources, sources_from = kubectl_default_sources(environ)
    elif sources_from == environment_label(environ, ENV_KUBECONFIG):  # a path list, as kubernetes.core reads it
        sources = normalize_sources({"path": source}, sources_from)
    else:
        sources = normalize_sources(source, sources_from)
    context, context_from = _by_precedence(to_plain(task_args.get("context")), "task parameter context",
                                           to_plain(host_vars(HOST_VAR_CONTEXT)), HOST_VAR_CONTEXT, host,
                                           environ, ENV_CONTEXT, overridden)
    if context_from is None:
        context_from = "current-context"
    elif not isinstance(context, str):
        raise PhasekitError(f"{context_from}: expected a context name (a string)")
    expected = to_plain(host_vars(HOST_VAR_CLUSTER))
    if expected is not None and not isinstance(expected, str):
        raise PhasekitError(f"host var {HOST_VAR_CLUSTER}: expected a cluster name (a string)")
    return KubeconfigRequest(host=host, sources=sources, sources_from=sources_from, context=context,
                             context_from=context_from, expected_cluster=expected or None, connection=connection,
                             overridden=tuple(overridden))


def _by_precedence(task_value, task_label: str, host_value, host_var: str, host: str | None, environ: Mapping,
                   env_var: str, overridden: list) -> tuple:
    """(value, provenance) of the first that is set of the task parameter, the host variable and the environment
    variable, or (None, None); an environment variable the host variable beat is added to ``overridden``."""
    env_value = environ.get(env_var)
    if _is_set(task_value):
        return task_value, task_label
    if _is_set(host_value):
        if _is_set(env_value):
            overridden.append(Overridden(env_var, origin_of(environ, env_var), host_var))
        return host_value, f"host var {host_var}" + (f" of {host}" if host else "")
    if _is_set(env_value):
        return env_value, environment_label(environ, env_var)
    return None, None


def kubectl_default_sources(environ: Mapping) -> tuple[list[SourceSpec], str]:
    """kubectl's own default: the files in $KUBECONFIG, else ~/.kube/config."""
    if environ.get("KUBECONFIG"):
        origin = origin_of(environ, "KUBECONFIG")
        return normalize_sources({"env": "KUBECONFIG"}, "kubectl default"), \
            "kubectl default ($KUBECONFIG)" if origin == CONTROLLER else f"kubectl default ($KUBECONFIG from the {origin})"
    return normalize_sources({"path": DEFAULT_KUBECONFIG}, "kubectl default"), f"kubectl default ({DEFAULT_KUBECONFIG})"


def _is_set(value) -> bool:
    return value is not None and value != "" and value != [] and value != {}


def to_plain(value):
    """Ansible's tagged/unsafe/lazy containers and strings as plain Python data."""
    if isinstance(value, Mapping):
        return {to_plain(key): to_plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_plain(item) for item in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, str):
        return compat.plain_str(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    return value


class HostResolver:
    """Resolves inventory hosts' kubeconfigs within one task, following kube_parent for Secret sources."""

    def __init__(self, loader, hostvars, environ: Mapping | None = None, chain: tuple[str, ...] = (),
                 other_hosts: Callable[[str, "HostResolver"], Resolution] | None = None,
                 overridden: dict | None = None, *, waits_for_secrets: bool = True,
                 not_there_yet: dict | None = None):
        self.loader = loader
        self.hostvars = hostvars
        # the task's environment: keyword over the controller's environment (plugin_utils.environment)
        self.environ = os.environ if environ is None else environ
        self.chain = chain
        # how another host (a parent holding a Secret) is resolved; a fleet run shares one cache here
        self.other_hosts = other_hosts
        # Overridden -> the hosts whose own variables beat it, of the requests made here (and by nested resolvers)
        self.overridden: dict = {} if overridden is None else overridden
        # a preview waits for no kubeconfig Secret: nothing it does creates one (see ``known_after_run``)
        self.waits_for_secrets = waits_for_secrets
        # host -> the Secret its kubeconfig is in, for hosts whose Secret (or a parent's) is not there yet
        self.not_there_yet: dict[str, str] = {} if not_there_yet is None else not_there_yet

    def resolve(self, host: str | None, host_vars: HostVars, task_args: Mapping, *,
                keep_merged: bool = False) -> Resolution:
        """Resolve ``host``'s kubeconfig, reusing the remembered resolution when it answers the same request."""
        request = kubeconfig_request(host, host_vars, task_args, self.environ)
        for overridden in request.overridden:
            self.overridden.setdefault(overridden, set()).add(host)
        if not keep_merged:
            reused = Resolution.from_memory(remembered_resolution(host_vars, host), request.fingerprint)
            if reused is not None:
                if not request.connection.complete:  # a complete connection reads no kubeconfig: no cluster name
                    _check_expected_cluster(reused, request.expected_cluster)
                return reused
        hooks = ansible_source_hooks(self, host, host_vars)
        return resolve_with_connection(request.sources, request.context, request.connection, hooks=hooks,
                                       expected_cluster=request.expected_cluster, keep_merged=keep_merged,
                                       chosen_by={"kubeconfig_from": request.sources_from,
                                                  "context_from": request.context_from},
                                       fingerprint=request.fingerprint)

    def with_environ(self, environ: Mapping) -> HostResolver:
        """This resolver (same chain, cache and record of overridden values) reading ``environ``."""
        return HostResolver(self.loader, self.hostvars, environ, self.chain, self.other_hosts, self.overridden,
                            waits_for_secrets=self.waits_for_secrets, not_there_yet=self.not_there_yet)

    def check_no_cycle(self, host: str, requested_by: str | None) -> tuple[str, ...]:
        """The chain of hosts being resolved; fails when ``host`` is already in it."""
        chain = self.chain + ((requested_by,) if requested_by else ())
        if host in chain:
            raise PhasekitError(f"parent cycle: {' -> '.join(chain + (host,))}")
        return chain

    def resolve_other_host(self, host: str, requested_by: str | None) -> Resolution:
        """Resolve another inventory host (a parent holding a Secret), detecting parent cycles."""
        chain = self.check_no_cycle(host, requested_by)
        if self.hostvars is None or host not in self.hostvars:
            raise PhasekitError(f"host {host!r} is not in the inventory")
        nested = HostResolver(self.loader, self.hostvars, self.environ, chain, self.other_hosts, self.overridden,
                              waits_for_secrets=self.waits_for_secrets, not_there_yet=self.not_there_yet)
        if self.other_hosts is not None:
            return self.other_hosts(host, nested)
        return nested.resolve(host, vars_of(self.hostvars, host), {})


def vars_of(hostvars, host: str) -> HostVars:
    """One inventory host's variables (templated on access) from ``hostvars``."""
    other = hostvars[host]

    def get(name):
        return other[name] if name in other else None

    return get


def remembered_resolution(host_vars: HostVars, host: str | None = None):
    """What ``phasekit_kube_resolved`` remembers for ``host``: one host's resolution (the kubeconfig action),
    or the resolutions of many hosts by name (a controller step of the plan role)."""
    registered = host_vars(REMEMBERED_VAR)
    if not isinstance(registered, Mapping):
        return None
    # plain data: a registered result's strings are Ansible's unsafe text before 2.19, which YAML cannot write
    if RESOLUTION_KEY in registered:
        return to_plain(registered.get(RESOLUTION_KEY))
    by_host = registered.get(RESOLUTIONS_KEY)
    return to_plain(by_host.get(host)) if isinstance(by_host, Mapping) and host else None


def _check_expected_cluster(resolution: Resolution, expected: str | None) -> None:
    if expected and resolution.cluster != expected:
        raise PhasekitError(f"context {resolution.context!r} uses cluster {resolution.cluster!r}, "
                            f"but {HOST_VAR_CLUSTER} expects {expected!r}")


def ansible_source_hooks(resolver: HostResolver, host: str | None, host_vars: HostVars) -> SourceHooks:
    """Vault files through Ansible's DataLoader; Secrets through the parent host's own resolution."""
    readers = {"read_secret": functools.partial(read_secret_through_parent, resolver, host, host_vars)}
    if resolver.loader is not None:  # without one (no Ansible loader), vault sources keep the default refusal
        readers["read_vault"] = functools.partial(read_vault_file, resolver.loader)
    return SourceHooks(resolver.environ, **readers)


def read_vault_file(loader, path: str) -> bytes:
    """The plaintext of an ansible-vault encrypted file, decrypted with the run's vault secrets."""
    if not os.path.isfile(path):
        raise PhasekitError("no such file" if not os.path.exists(path) else "is not a file")
    with open(path, "rb") as handle:
        head = handle.read(len(VAULT_HEADER))
    if head != VAULT_HEADER:
        raise PhasekitError("not an ansible-vault encrypted file (no $ANSIBLE_VAULT header): use a path source "
                            "for a plaintext kubeconfig, or encrypt it with ansible-vault")
    try:
        text = loader.get_text_file_contents(os.path.abspath(path))
    except AnsibleError as exc:
        raise PhasekitError(f"cannot decrypt the vault file: {_ansible_message(exc)}") from None
    return str(text).encode("utf-8")


def read_secret_through_parent(resolver: HostResolver, host: str | None, host_vars: HostVars, secret: dict) -> bytes:
    """A kubeconfig Secret, read from its cluster host (the source's ``host``, else ``kube_parent``).

    Called only when the Secret source is reached (sources are read lazily): the parent is resolved then, once
    per run in a fleet step, and a parent cycle fails naming the chain. A source with ``kubeconfig`` reads the Secret
    from that file's cluster (``context``), no inventory host involved."""
    if secret.get("kubeconfig"):
        return read_secret_through_file(resolver, host, secret)
    parent = secret.get("host") or to_plain(host_vars(HOST_VAR_PARENT))
    if not parent:
        raise PhasekitError(f"no cluster host to read the Secret from: set host in the source or "
                            f"{HOST_VAR_PARENT} for {host or 'this host'}")
    if not isinstance(parent, str):
        raise PhasekitError(f"host var {HOST_VAR_PARENT}: expected an inventory host name")
    resolver.check_no_cycle(parent, host)
    where = f"Secret {secret['namespace']}/{secret['name']} on host {parent}"
    if not resolver.waits_for_secrets:
        secret = {**secret, "timeout": 0}
    try:
        resolution = resolver.resolve_other_host(parent, host)
        return read_kubeconfig_secret(resolution.config, secret, environ=resolver.environ)
    except SecretNotThereYet as err:
        resolver.not_there_yet[host or ""] = where
        raise PhasekitError(str(err), where=f"host {parent}") from None
    except PhasekitError as err:
        if parent in resolver.not_there_yet:  # the parent's own kubeconfig is known after the run: so is this one
            resolver.not_there_yet[host or ""] = f"{where}, whose kubeconfig is {resolver.not_there_yet[parent]}"
        raise PhasekitError(str(err), where=f"host {parent}") from None


def read_secret_through_file(resolver: HostResolver, host: str | None, secret: dict) -> bytes:
    """A kubeconfig Secret read from the cluster a kubeconfig file's context names (kubectl's rules for the file)."""
    where = f"Secret {secret['namespace']}/{secret['name']} in {secret['kubeconfig']}"
    if not resolver.waits_for_secrets:
        secret = {**secret, "timeout": 0}
    try:
        resolution = resolve_kubeconfig([SourceSpec(1, "path", secret["kubeconfig"])], secret.get("context"),
                                        hooks=SourceHooks(resolver.environ))
        return read_kubeconfig_secret(resolution.config, secret, environ=resolver.environ)
    except SecretNotThereYet as err:
        resolver.not_there_yet[host or ""] = where
        raise PhasekitError(str(err), where=where) from None


def _ansible_message(exc) -> str:
    message = getattr(exc, "message", None) or str(exc)
    return str(message).splitlines()[0] if message else type(exc).__name__


def current_host_vars(templar, task_vars: Mapping) -> HostVars:
    """The running host's variables, templated on access (action plugins receive them raw)."""

    def get(name: str):
        if name not in task_vars:
            return None
        if name == REMEMBERED_VAR:
            return task_vars[name]  # registered data, never a template
        return templar.template(task_vars[name])

    return get


def resolver_for(plugin, task_vars: Mapping) -> HostResolver:
    """A resolver for an action (its task's environment: keyword over the controller's environment) or a lookup
    (the controller's environment: Ansible gives lookups no task)."""
    return HostResolver(getattr(plugin, "_loader", None), task_vars.get("hostvars"), getattr(plugin, "environ", None))


def resolve_for_task(action_plugin, task_vars: Mapping, args: Mapping, *, keep_merged: bool = False) -> Resolution:
    """The kubeconfig a task on this host uses, by the precedence table, resolved once per run.

    ``args`` holds the task's ``kubeconfig`` and ``context`` parameters (see
    ``AUTH_ARGUMENT_SPEC``). With ``keep_merged`` the whole merged kubeconfig is
    kept too (sources are then all read). Raises PhasekitError.
    """
    host = task_vars.get("inventory_hostname")
    resolver = resolver_for(action_plugin, task_vars)
    resolution = resolver.resolve(host, current_host_vars(action_plugin._templar, task_vars),  # pylint: disable=protected-access
                                  args, keep_merged=keep_merged)
    # the same text on every host: Ansible shows a warning once per run
    for overridden in sorted(resolver.overridden, key=lambda item: (item.variable, item.origin)):
        display.warning(overridden_warning(overridden))
    return resolution


def view_for_lookup(lookup_plugin, variables: Mapping, sources, *, context: str | None, minify: bool,
                    flatten: bool, options: Mapping | None = None) -> tuple:
    """The lookup's answer: ``kubectl config view --raw`` for ``sources`` (default: kubectl's own), with
    kubernetes.core's connection ``options`` on top, each from the lookup's keyword, else its K8S_AUTH_* variable,
    else the host's ``kube_<option>`` (the actions' precedence). Returns the kubeconfig and its provenance."""
    variables = variables or {}
    specs = normalize_sources(to_plain(sources), "lookup sources") if _is_set(sources) else \
        kubectl_default_sources(os.environ)[0]
    host = variables.get("inventory_hostname")
    host_vars = current_host_vars(lookup_plugin._templar, variables)  # pylint: disable=protected-access
    connection = connection_options({name: to_plain((options or {}).get(name)) for name in CONNECTION_SPEC},
                                    os.environ, lambda name: to_plain(host_vars(name)), host, given_as="lookup option")
    hooks = ansible_source_hooks(resolver_for(lookup_plugin, variables), host, host_vars)
    return view_with_connection(specs, context, connection, minify=minify, flatten=flatten, hooks=hooks)
