"""New connections to an API server resume a TLS session an earlier connection to it reported (on the real API
server): a client's lanes, other clients with the same TLS material, many of them opening at once."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack

import yaml

from ansible_collections.phasekit.kube.plugins.module_utils.kube.client import api_client, pooled_sockets
from ansible_collections.phasekit.kube.plugins.module_utils.kube.session import ApiSession

LANES = 3


def test_lanes_after_the_first_resume_its_session(clusters):
    config = yaml.safe_load(next(iter(clusters.values())).admin_kubeconfig.read_text())
    with api_client(config, pool_maxsize=LANES) as api:
        session = ApiSession(api)
        session.get("/version")                      # the first connection: a full handshake, then its ticket
        with ThreadPoolExecutor(LANES) as lanes:     # the others open while it is busy or idle in the pool
            list(lanes.map(lambda _n: session.list("/api/v1/namespaces/default/configmaps"), range(LANES * 4)))
        reused = sorted(sock.session_reused for sock in pooled_sockets(api))
    # the first one's may resume too: an earlier test's client with this TLS material may still hold the context
    assert len(reused) >= 2, reused
    assert reused.count(True) >= len(reused) - 1, reused


def test_a_client_with_the_same_credentials_resumes_the_session_of_another(clusters):
    """Two inventory hosts on one cluster with one user (two clients, as a fleet makes them): they share a TLS
    context, as client-go's transport cache shares a transport, and the second one's first connection resumes the
    session the first one's opened instead of a full handshake."""
    config = yaml.safe_load(next(iter(clusters.values())).admin_kubeconfig.read_text())
    with api_client(config, pool_maxsize=1) as first, api_client(config, pool_maxsize=1) as second:
        ApiSession(first).get("/version")
        ApiSession(second).get("/version")
        reused = [sock.session_reused for api in (first, second) for sock in pooled_sockets(api)]
    # the first one's may resume too: a context lives while a client of the process holds it
    assert len(reused) == 2 and reused[1] is True, reused


def test_many_clients_open_their_lanes_at_once_and_every_request_succeeds(clusters):
    """A fleet's first phase at its sharpest: clients with the same TLS material (inventory hosts on one cluster)
    open all their lanes at once, each request tried once. Connections resume sessions other connections reported
    while those are still reading theirs; none fails. A session read from another thread's socket while that one
    took in its ticket broke resumptions ("i2d() failed", the API server's "invalid PSK binder")."""
    config = yaml.safe_load(next(iter(clusters.values())).admin_kubeconfig.read_text())
    clients, lanes, rounds = 24, 6, 3
    failures, reused = [], []
    for _round in range(rounds):
        with ExitStack() as stack:
            sessions = [ApiSession(stack.enter_context(api_client(config, pool_maxsize=lanes)), max_attempts=1)
                        for _client in range(clients)]
            sessions[0].get("/version")   # a session to resume, reported by its connection's own thread

            def one(index):
                try:
                    sessions[index % clients].list("/api/v1/namespaces/default/configmaps")
                except Exception as exc:  # pylint: disable=broad-except
                    failures.append(f"{type(exc).__name__}: {exc}")

            with ThreadPoolExecutor(clients * lanes) as pool:
                list(pool.map(one, range(clients * lanes * 2)))
            reused += [sock.session_reused for session in sessions for sock in pooled_sockets(session.api_client)]
    assert not failures, failures[:5]
    assert reused.count(True) >= len(reused) // 2, (reused.count(True), len(reused))
