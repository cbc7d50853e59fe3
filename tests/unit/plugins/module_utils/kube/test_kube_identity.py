"""Which cluster an API server is: kube-system's UID, else the server's address; asked once per endpoint."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kube.identity import (
    ATTEMPTS, KUBE_SYSTEM_PATH, ClusterIdentities, ClusterIdentity, cluster_identity, endpoint_key, resolved_addresses,
    server_address)
from ansible_collections.phasekit.kube.plugins.module_utils.kube.session import ApiError, Response, TransportError

NAMES = {"localhost": ["127.0.0.1", "::1"], "127.0.0.1": ["127.0.0.1"], "api.example.com": ["10.0.0.7"]}


def resolve(host, port, type=None):  # pylint: disable=redefined-builtin,unused-argument
    if host not in NAMES:
        raise socket.gaierror("Name or service not known")
    return [(socket.AF_INET6 if ":" in ip else socket.AF_INET, socket.SOCK_STREAM, 6, "", (ip, port))
            for ip in NAMES[host]]


@pytest.mark.parametrize("server, shown", [
    ("https://127.0.0.1:6443", "127.0.0.1:6443"),
    ("https://api.example.com", "api.example.com:443"),
    ("http://api.example.com", "api.example.com:80"),
    ("https://admin:s3cret@api.example.com:8443/k8s/clusters/c-tok3n", "api.example.com:8443"),
    ("https://[::1]:6443/", "[::1]:6443"),
    ("https://", "(no host in the server URL)"),
], ids=["ip-and-port", "https-default-port", "http-default-port", "no-credentials-no-path", "ipv6-bracketed",
        "no-host"])
def test_server_address_is_host_and_port_only(server, shown):
    assert server_address(server) == shown


@pytest.mark.parametrize("server, addresses", [
    ("https://localhost:6443", {"https://127.0.0.1:6443", "https://[::1]:6443"}),
    ("https://127.0.0.1:6443", {"https://127.0.0.1:6443"}),
    ("https://api.example.com", {"https://10.0.0.7:443"}),
    ("https://unknown.invalid:6443", {"https://unknown.invalid:6443"}),
], ids=["every-address-of-a-name", "an-ip-is-itself", "default-port", "unresolvable-name-is-itself"])
def test_resolved_addresses(server, addresses):
    assert resolved_addresses(server, resolve) == addresses


def config(server="https://127.0.0.1:6443", ca="Q0E=", **cluster):
    return {"clusters": [{"name": "c", "cluster": {"server": server, "certificate-authority-data": ca, **cluster}}],
            "users": [{"name": "u", "user": {"token": "t"}}], "contexts": [{"name": "x", "context": {}}]}


@pytest.mark.parametrize("other, same", [
    (config(), True),
    ({**config(), "users": [{"name": "v", "user": {"token": "other"}}]}, True),
    (config(server="https://localhost:6443"), False),
    (config(ca="T1RIRVI="), False),
    (config(**{"proxy-url": "http://proxy:3128"}), False),
    (config(**{"tls-server-name": "kubernetes"}), False),
], ids=["same-cluster-entry", "another-user-same-endpoint", "another-url", "another-ca", "a-proxy",
        "another-tls-server-name"])
def test_endpoint_key(other, same):
    assert (endpoint_key(config()) == endpoint_key(other)) is same


class Session:
    """Answers the kube-system GET from a table; counts requests."""

    def __init__(self, answer):
        self.answer = answer
        self.asked = []

    def request(self, method, path, attempts=None, **_kw):
        self.asked.append((method, path, attempts))
        if isinstance(self.answer, Exception):
            raise self.answer
        return Response(200, self.answer, {})


@pytest.mark.parametrize("answer, uid, unread", [
    ({"metadata": {"name": "kube-system", "uid": "1f0c-uid"}}, "1f0c-uid", ""),
    (ApiError(403, "Forbidden", "namespaces \"kube-system\" is forbidden: User \"tenant\" cannot get"), None,
     "kube-system could not be read (403 Forbidden)"),
    (ApiError(401, "Unauthorized", "Unauthorized"), None, "kube-system could not be read (401 Unauthorized)"),
    (TransportError("cannot reach the API server"), None, "the API server did not answer"),
    ({"metadata": {"name": "kube-system"}}, None, "kube-system has no uid"),
], ids=["uid-read", "forbidden-falls-back-to-address", "unauthorized-falls-back", "unreachable-falls-back",
        "no-uid-falls-back"])
def test_cluster_identity(answer, uid, unread):
    session = Session(answer)
    found = cluster_identity(session, "https://localhost:6443", resolve)
    assert (found.uid, found.unread, found.server) == (uid, unread, "localhost:6443")
    assert found.addresses == {"https://127.0.0.1:6443", "https://[::1]:6443"}
    assert session.asked == [("GET", KUBE_SYSTEM_PATH, ATTEMPTS)]   # once, without the whole backoff of a gone server


@pytest.mark.parametrize("one, other, same", [
    (ClusterIdentity("a:1", "u1", frozenset({"https://127.0.0.1:1"})),
     ClusterIdentity("b:1", "u1", frozenset({"https://10.0.0.1:1"})), True),
    (ClusterIdentity("a:1", "u1", frozenset({"https://127.0.0.1:1"})),
     ClusterIdentity("a:1", "u2", frozenset({"https://127.0.0.1:1"})), False),
    (ClusterIdentity("a:1", None, frozenset({"https://127.0.0.1:1", "https://[::1]:1"})),
     ClusterIdentity("b:1", None, frozenset({"https://127.0.0.1:1"})), True),
    (ClusterIdentity("a:1", None, frozenset({"https://127.0.0.1:1"})),
     ClusterIdentity("a:2", None, frozenset({"https://127.0.0.1:2"})), False),
    (ClusterIdentity("a:1", "u1", frozenset({"https://127.0.0.1:1"})),
     ClusterIdentity("b:1", None, frozenset({"https://127.0.0.1:1"})), True),
    (ClusterIdentity("p:443", None, frozenset({"https://10.0.0.9:443"}), path="one"),
     ClusterIdentity("p:443", None, frozenset({"https://10.0.0.9:443"}), path="two"), False),
], ids=["same-uid-other-address", "other-uid-same-address", "no-uid-shared-address", "no-uid-other-port",
        "one-uid-unknown-shared-address", "no-uid-same-proxy-other-path"])
def test_same_cluster(one, other, same):
    assert one.same_cluster(other) is same and other.same_cluster(one) is same


def test_identities_are_asked_once_per_endpoint_whatever_the_hosts_and_threads():
    asked = []
    lock = threading.Lock()

    def lookup(session, server):
        with lock:
            asked.append((session, server))
        time.sleep(0.05)   # every thread arrives while the first one asks
        return ClusterIdentity(server_address(server), f"uid-of-{server}")

    identities = ClusterIdentities(lookup)
    configs = [config(server=f"https://127.0.0.1:{6443 + index % 3}") for index in range(60)]
    threads = [threading.Thread(target=identities.of, args=(one, lambda: "session")) for one in configs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(server for _session, server in asked) == [f"https://127.0.0.1:{port}" for port in (6443, 6444, 6445)]
    assert identities.asked == 3
    assert identities.of(configs[4], lambda: "session").uid == "uid-of-https://127.0.0.1:6444"


def test_a_session_that_cannot_be_made_is_an_address_not_a_failure():
    def no_session():
        raise PhasekitError("exec plugin: aws not found")

    found = ClusterIdentities(lambda *_args: pytest.fail("asked without a session")).of(config(), no_session)
    assert found.uid is None and found.unread == "no API session could be made"
    assert found.addresses == {"https://127.0.0.1:6443"}


def test_an_unexpected_error_while_asking_is_an_address_not_a_failure():
    found = cluster_identity(Session(ValueError("bad JSON")), "https://127.0.0.1:6443", resolve)
    assert found.uid is None and found.unread == "kube-system could not be read (ValueError)"
