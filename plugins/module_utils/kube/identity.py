# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Which cluster an API server is: the UID of its ``kube-system`` Namespace, asked once per endpoint.

A URL does not say which cluster it reaches: one API server answers to
``127.0.0.1`` and ``localhost``, to a load balancer and to each node. The
``kube-system`` Namespace exists in every cluster and lives as long as the
cluster; its UID is the same whichever address reaches it (the cluster ID
SIG Multicluster's ClusterProperty recommends). A user who may not read it
(a user confined to a namespace: 403) gets the server's address instead: the
URL's scheme, the IP addresses its host resolves to, and its port, so two
names of one address still compare equal. Nothing here ever fails a run:
an identity that cannot be read is an address.

Hosts whose resolved kubeconfigs reach the same endpoint (server URL, CA,
proxy, TLS server name) share one answer (``ClusterIdentities``): a fleet of
hundreds of hosts over a few API servers costs a few requests.
"""

from __future__ import annotations

import dataclasses
import hashlib
import socket
import threading
from dataclasses import dataclass
from typing import Callable
from urllib.parse import urlsplit

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kube.session import ApiError

KUBE_SYSTEM_PATH = "/api/v1/namespaces/kube-system"
DEFAULT_PORTS = {"https": 443, "http": 80}
ATTEMPTS = 3  # a busy server's 429 or a dropped connection is retried; a gone one is not waited for long

Resolve = Callable[..., list]  # socket.getaddrinfo's signature


@dataclass(frozen=True)
class ClusterIdentity:
    """One API server as a cluster: its ``kube-system`` UID when it could be read, and its addresses.

    ``server`` is host:port as shown to people (never credentials, never the URL's path); ``addresses`` the
    ``scheme://ip:port`` forms its host resolves to; ``path`` a digest of the URL's path (a proxy may route
    clusters by path; the path itself may hold a token); ``unread`` why the UID is unknown ("" when known).
    """

    server: str
    uid: str | None = None
    addresses: frozenset = frozenset()
    unread: str = ""
    path: str = ""

    def same_cluster(self, other: ClusterIdentity) -> bool:
        """Two UIDs decide; without one of them, a shared address (and the same path) does."""
        if self.uid and other.uid:
            return self.uid == other.uid
        return bool(self.addresses & other.addresses) and self.path == other.path

    def label(self) -> str:
        """The cluster as a refusal names it."""
        if self.uid:
            return f"{self.server}, kube-system uid {self.uid}"
        return f"{self.server}, compared by address ({', '.join(sorted(self.addresses)) or 'none'}): {self.unread}"


def server_address(server: str) -> str:
    """An API server URL as host:port (a bracketed IPv6 host; the scheme's port when the URL names none): no
    user, password or path of the URL, which may hold a token."""
    try:
        parts = urlsplit(server)
        host, port = parts.hostname, parts.port
    except ValueError:
        return "(unparsable server URL)"
    if not host:
        return "(no host in the server URL)"
    port = port or DEFAULT_PORTS.get(parts.scheme.lower(), 443)
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def resolved_addresses(server: str, resolve: Resolve = socket.getaddrinfo) -> frozenset:
    """``scheme://ip:port`` for every address the server URL's host resolves to (the host as written when it does
    not resolve: one name still equals itself)."""
    try:
        parts = urlsplit(server)
        host, scheme = parts.hostname or "", parts.scheme.lower()
        port = parts.port or DEFAULT_PORTS.get(scheme, 443)
    except ValueError:
        return frozenset()
    try:
        found = {info[4][0] for info in resolve(host, port, type=socket.SOCK_STREAM)}
    except (OSError, UnicodeError):
        found = set()
    found = found or {host}
    return frozenset(f"{scheme}://[{ip}]:{port}" if ":" in ip else f"{scheme}://{ip}:{port}" for ip in found)


def endpoint_key(config: dict) -> tuple:
    """What makes two resolved kubeconfigs (minified, flattened) reach the same endpoint: the server URL, the CA,
    the proxy, the TLS server name and whether TLS is verified; the user is not part of it."""
    cluster = (config.get("clusters") or [{}])[0].get("cluster") or {}
    authority = cluster.get("certificate-authority-data") or cluster.get("certificate-authority") or ""
    return (cluster.get("server") or "", hashlib.sha256(str(authority).encode()).hexdigest(),
            cluster.get("proxy-url") or "", cluster.get("tls-server-name") or "",
            bool(cluster.get("insecure-skip-tls-verify")))


def address_identity(server: str, unread: str, resolve: Resolve = socket.getaddrinfo) -> ClusterIdentity:
    """The identity of a server whose ``kube-system`` UID is unknown (``unread`` says why): its address."""
    try:
        path = urlsplit(server).path.rstrip("/")
    except ValueError:
        path = server
    return ClusterIdentity(server_address(server), None, resolved_addresses(server, resolve), unread,
                           hashlib.sha256(path.encode()).hexdigest() if path else "")


def cluster_identity(session, server: str, resolve: Resolve = socket.getaddrinfo) -> ClusterIdentity:
    """Ask the API server behind ``session`` for its ``kube-system`` UID (one GET, at most ``ATTEMPTS`` tries: a
    server that does not answer is compared by address, and the phase will say what is wrong with it)."""
    try:
        namespace = session.request("GET", KUBE_SYSTEM_PATH, attempts=ATTEMPTS).body
    except ApiError as err:
        return address_identity(server, f"kube-system could not be read ({err.status} {err.reason})", resolve)
    except PhasekitError:
        return address_identity(server, "the API server did not answer", resolve)
    # whatever else went wrong, an identity that cannot be read must not fail the run
    except Exception as err:  # pylint: disable=broad-exception-caught
        return address_identity(server, f"kube-system could not be read ({type(err).__name__})", resolve)
    uid = ((namespace or {}).get("metadata") or {}).get("uid") if isinstance(namespace, dict) else None
    if not uid:
        return address_identity(server, "kube-system has no uid", resolve)
    return dataclasses.replace(address_identity(server, "", resolve), uid=str(uid))


class ClusterIdentities:
    """The identity of each endpoint a step reaches, asked once per endpoint (``endpoint_key``) even when many
    threads ask at once."""

    def __init__(self, lookup: Callable[[object, str], ClusterIdentity] = cluster_identity):
        self._lookup = lookup
        self._known: dict[tuple, ClusterIdentity] = {}
        self._locks: dict[tuple, threading.Lock] = {}
        self._lock = threading.Lock()

    def of(self, config: dict, session_for: Callable[[], object]) -> ClusterIdentity:
        """The identity of the endpoint ``config`` (a resolved kubeconfig) reaches; ``session_for()`` makes the
        session to ask with, only when this endpoint was not asked before."""
        key = endpoint_key(config)
        with self._lock:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            if key not in self._known:
                try:
                    session = session_for()
                except PhasekitError:  # the phase will fail on it with the reason; identity never fails a run
                    self._known[key] = address_identity(key[0], "no API session could be made")
                else:
                    self._known[key] = self._lookup(session, key[0])
            return self._known[key]

    @property
    def asked(self) -> int:
        """Endpoints asked so far."""
        with self._lock:
            return len(self._known)
