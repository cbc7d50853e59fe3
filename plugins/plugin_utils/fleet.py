# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Cluster access for a controller step over many cluster hosts (see module_utils.running.runner).

Each host's kubeconfig is resolved through the same precedence table as a task
on that host (``kubeconfig_request``), lazily on first use and at most once per
run: resolutions made by earlier steps (``phasekit_kube_resolved``) are reused,
and a parent whose Secret several children read is resolved once. Every host
keeps one pooled API session for the whole step, so phases after the first
reuse its TLS connections and the discovery cache.

Ansible's templating is not meant for threads: host variables are read (and
templated) under one lock, and only the few a kubeconfig needs.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from contextlib import ExitStack

from ansible_collections.phasekit.kube.plugins.module_utils.closing import Closing
from ansible_collections.phasekit.kube.plugins.module_utils.memo import made_once
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kube.client import api_client
from ansible_collections.phasekit.kube.plugins.module_utils.kube.identity import (
    ClusterIdentities, ClusterIdentity, server_address)
from ansible_collections.phasekit.kube.plugins.module_utils.kube.session import ApiSession, ListMemory
from ansible_collections.phasekit.kube.plugins.module_utils.environ import Overridden, origin_of
from ansible_collections.phasekit.kube.plugins.module_utils.planning.outputs import VARIABLE as OUTPUTS_VARIABLE
from ansible_collections.phasekit.kube.plugins.module_utils.planning.outputs import OutputValues
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.connection import HOST_VARS as CONNECTION_VARS
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.connection import OPTIONS as CONNECTION_OPTIONS
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.redact import kubeconfig_credentials
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.resolve import Resolution
from ansible_collections.phasekit.kube.plugins.plugin_utils.kubeconfig import (
    HOST_VAR_CLUSTER, HOST_VAR_CONTEXT, HOST_VAR_KUBECONFIG, HOST_VAR_PARENT, REMEMBERED_VAR, RESOLUTION_KEY,
    ENV_CONTEXT, ENV_KUBECONFIG, RESOLUTIONS_KEY, HostResolver, remembered_resolution, to_plain)
from ansible_collections.phasekit.kube.plugins.plugin_utils.environment import TaskEnvironment
from ansible_collections.phasekit.kube.plugins.plugin_utils.templates import (
    TEMPLATE_LOCK, host_variables, render_strings, render_template_file, vault_values)

KUBECONFIG_VARS = (HOST_VAR_KUBECONFIG, HOST_VAR_CONTEXT, HOST_VAR_PARENT, HOST_VAR_CLUSTER) + CONNECTION_VARS
# each K8S_AUTH_* variable and the host variable that beats it
ENV_HOST_VARS = ((ENV_KUBECONFIG, HOST_VAR_KUBECONFIG), (ENV_CONTEXT, HOST_VAR_CONTEXT)) + tuple(
    (env_var, spec.host_var) for spec in CONNECTION_OPTIONS for env_var in spec.env)
MIN_CONNECTIONS = 20  # apply's default concurrency (16) plus its live-state readers


class FleetVars(Mapping):
    """``hostvars`` reduced to what kubeconfig resolution reads, templated once per host under a lock."""

    def __init__(self, hostvars):
        self._hostvars = hostvars
        self._lock = threading.Lock()
        self._cache: dict[str, dict] = {}

    def __getitem__(self, host: str) -> dict:
        with self._lock:
            if host not in self._cache:
                self._cache[host] = self._read(host)
            return self._cache[host]

    def __contains__(self, host) -> bool:
        return self._hostvars is not None and host in self._hostvars

    def __iter__(self):
        return iter(self._hostvars or ())

    def __len__(self) -> int:
        return len(self._hostvars or ())

    def prefetch(self, hosts) -> None:
        """Read the hosts' variables now, in the calling thread: templating in the pool's threads would
        serialise them behind the lock while competing with the API work for the interpreter."""
        for host in hosts:
            if host in self:
                self[host]  # pylint: disable=pointless-statement

    def _read(self, host: str) -> dict:
        if host not in self:
            raise PhasekitError(f"host {host!r} is not in the inventory")
        variables = self._hostvars[host]
        values = {name: to_plain(variables[name]) for name in KUBECONFIG_VARS if name in variables}
        if REMEMBERED_VAR in variables:
            # only this host's entry: the registered value may hold every host's resolution
            entry = remembered_resolution(lambda _name: variables[REMEMBERED_VAR], host)
            if entry is not None:
                values[REMEMBERED_VAR] = {RESOLUTION_KEY: entry}
        return values


class Fleet(Closing):
    """``ClusterAccess`` over the inventory: a resolution and an API session per host, kept for the step."""

    def __init__(self, loader, hostvars, *, environ: Mapping | None = None, remembered: Mapping | None = None,
                 templar=None, lists: ListMemory | None = None, environment: TaskEnvironment | None = None,
                 outputs: OutputValues | None = None, preview: bool = False):
        self.vars = FleetVars(hostvars)
        self.outputs = outputs  # earlier phases' outputs: templates see them as phase_outputs
        self.lists = lists  # the step's collections listed, shared by its sessions (see ListMemory)
        self._hostvars = hostvars
        self._templar = templar
        # a parent read for a child's Secret source: the same cache; the nested resolver keeps the cycle chain
        # a preview (check mode, status) waits for no kubeconfig Secret: see ``known_after_run``
        self._resolver = HostResolver(loader, self.vars, environ, other_hosts=self._resolve,
                                      waits_for_secrets=not preview)
        self.environ = self._resolver.environ  # the task's environment: over the controller's
        # the task's environment: as each host sees it, when it holds templates (else ``environ`` for every host)
        self._environment = environment if environment is not None and environment.per_host else None
        self._environs: dict[str, Mapping] = {}
        self._remembered = dict(remembered or {})     # earlier steps' resolutions, carried forward
        self._resolutions: dict[str, Resolution | PhasekitError] = {}
        self._sessions: dict[str, ApiSession] = {}
        self._locks: dict[str, threading.RLock] = {}
        self._locks_lock = threading.Lock()
        self._templated: set[str] = set()           # hosts whose templates were rendered
        self._secrets: dict[str, frozenset] = {}       # vault-encrypted values, of hosts with templates
        self._credentials: dict[str, frozenset] = {}   # of resolved kubeconfigs
        self._identities = ClusterIdentities()          # once per endpoint for the step, whatever the hosts
        self._stack = ExitStack()

    def close(self) -> None:
        """Close every session and remove the TLS material the client needed on disk."""
        self._stack.close()
        self._sessions.clear()

    def resolution(self, host: str) -> Resolution:
        return self._resolve(host, self._resolver)

    def known_after_run(self, host: str) -> str | None:
        """Where the host's kubeconfig will be when the run makes it (a Secret, an earlier phase's or a controller's
        work, not there yet), when that is why its kubeconfig did not resolve in this preview; else None."""
        if not isinstance(self._resolutions.get(host), PhasekitError):
            return None
        return self._resolver.not_there_yet.get(host)

    def environ_of(self, host: str) -> Mapping:
        """The environment a task on ``host`` would have: its ``environment:`` keyword (templated with the host's
        variables) over the controller's environment."""
        if self._environment is None:
            return self.environ
        with self._lock_for(host):
            if host not in self._environs:
                self._environs[host] = self._environment.for_host(self._templar, self._variables(host, "environment"),
                                                                  host)
            return self._environs[host]

    def session(self, host: str, connections: int) -> ApiSession:
        with self._lock_for(host):
            if host not in self._sessions:
                resolution = self.resolution(host)
                api = self._stack.enter_context(api_client(resolution.config,
                                                           pool_maxsize=max(connections, MIN_CONNECTIONS),
                                                           environ=self.environ_of(host)))
                self._sessions[host] = ApiSession(api, memory=self.lists)
            return self._sessions[host]

    def identity(self, host: str, connections: int) -> ClusterIdentity:
        """The cluster the host's kubeconfig reaches (``kube.identity``): asked once per endpoint for the step,
        through the session of the first host that asks."""
        resolution = self.resolution(host)
        return self._identities.of(resolution.config, lambda: self.session(host, connections))

    def requests_sent(self) -> tuple[int, int]:
        """API requests sent so far through the step's sessions (run records included), and how many of them were
        watches guarding kept lists: load-independent figures for -vvv and the benchmark."""
        sessions = list(self._sessions.values())
        return sum(session.requests for session in sessions), sum(session.watches for session in sessions)

    @property
    def identities_asked(self) -> int:
        """API endpoints asked for their cluster identity in this step."""
        return self._identities.asked

    def servers(self) -> dict[str, str]:
        """Every host resolved so far in the run (earlier steps too) -> its API server as host:port (no
        credentials, no path), for the summary and the reports."""
        found = {}
        for host, memory in self.memory().items():
            try:
                found[host] = server_address(memory["config"]["clusters"][0]["cluster"]["server"])
            except (KeyError, IndexError, TypeError):
                continue
        return found

    def render_template(self, host: str, path: str) -> str:
        """A template file (a bundle manifest or a helm values file ending in .j2) rendered with the host's
        variables: inventory, group and host vars (vault-encrypted ones too), extra vars, inventory_hostname."""
        try:
            return render_template_file(self._templar, path, self._variables(host, path), what="template")
        except PhasekitError as err:
            raise PhasekitError(self._explained(str(err))) from None

    def render_options(self, host: str, options: dict, where: str) -> dict:
        """A phase's options with every string that holds a template rendered with the host's variables."""
        try:
            return render_strings(self._templar, options, self._variables(host, where), where)
        except PhasekitError as err:
            raise PhasekitError(self._explained(str(err))) from None

    def _explained(self, message: str) -> str:
        return self.outputs.explained(message) if self.outputs is not None else message

    def secrets(self, host: str) -> frozenset:
        """What must not be shown of this host: the credentials of its kubeconfig once resolved (handed to
        commands, helm and containers, which may print them), and the values of its vault-encrypted variables
        once a template of this host was rendered (only templates carry them into objects, diffs and messages).
        Nothing is resolved or decrypted for it."""
        with self._lock_for(host):
            found = self._resolutions.get(host)
            if isinstance(found, Resolution) and host not in self._credentials:
                self._credentials[host] = frozenset(kubeconfig_credentials(found.config))
            credentials = self._credentials.get(host, frozenset())
            if self.outputs is not None:  # a secret output may be rendered into any later phase's objects
                credentials = credentials | self.outputs.secret_values()
            if host not in self._templated:
                return credentials
            if host not in self._secrets:
                with TEMPLATE_LOCK:
                    self._secrets[host] = frozenset(vault_values(host_variables(self._hostvars, host)))
            return self._secrets[host] | credentials

    def _variables(self, host: str, what: str):
        if self._templar is None or self._hostvars is None or host not in self._hostvars:
            raise PhasekitError(f"{what}: no variables of host {host!r} to render it with")
        with self._lock_for(host):
            self._templated.add(host)
        variables = host_variables(self._hostvars, host)
        if self.outputs is None:
            return variables
        return {**variables, OUTPUTS_VARIABLE: self.outputs.for_host(host)}

    def memory(self) -> dict:
        """Every resolution known to this run (earlier steps' and this one's), for later steps: credentials!"""
        memory = dict(self._remembered)
        memory.update({host: found.to_memory() for host, found in self._resolutions.items()
                       if isinstance(found, Resolution)})
        return memory

    def overridden(self, hosts) -> dict:
        """``Overridden`` (a K8S_AUTH_* variable of the environment) -> the hosts whose own kube_* variables beat
        it. Only whether a host sets its own variable is looked at: nothing is templated, decrypted or resolved for
        a host that no phase has reached yet (a host's vault-encrypted kubeconfig stays sealed)."""
        found: dict = {}
        for host in hosts:
            if self._hostvars is None or host not in self._hostvars:
                continue
            environ = self.environ_of(host)
            beaten = [(env_var, host_var) for env_var, host_var in ENV_HOST_VARS if environ.get(env_var)]
            if not beaten:
                continue
            own = self._hostvars[host]
            for env_var, host_var in beaten:
                if host_var in own:
                    found.setdefault(Overridden(env_var, origin_of(environ, env_var), host_var), []).append(host)
        return found

    def _resolve(self, host: str, resolver: HostResolver) -> Resolution:
        with self._lock_for(host):   # once: a broken source is not read again
            return made_once(self._resolutions, host, lambda: self._resolved(host, resolver))

    def _resolved(self, host: str, resolver: HostResolver) -> Resolution:
        if self._environment is not None:
            resolver = resolver.with_environ(self.environ_of(host))
        return resolver.resolve(host, self._host_vars(host), {})

    def _host_vars(self, host: str):
        values = dict(self.vars[host])
        if REMEMBERED_VAR not in values and host in self._remembered:
            values[REMEMBERED_VAR] = {RESOLUTION_KEY: self._remembered[host]}
        return values.get

    def _lock_for(self, host: str) -> threading.RLock:
        with self._locks_lock:
            return self._locks.setdefault(host, threading.RLock())


def remembered_by_host(registered) -> dict:
    """The resolutions by host that a controller step registered as ``phasekit_kube_resolved``."""
    if isinstance(registered, Mapping) and isinstance(registered.get(RESOLUTIONS_KEY), Mapping):
        return dict(registered[RESOLUTIONS_KEY])
    return {}
