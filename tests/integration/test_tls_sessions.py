"""A cluster's further connections resume the TLS session of its first one (on the real API server)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import yaml

from ansible_collections.phasekit.kube.plugins.module_utils.kube.client import api_client
from ansible_collections.phasekit.kube.plugins.module_utils.kube.session import ApiSession

LANES = 3


def open_connections(api) -> list:
    """The sockets of the client's pooled connections to its API server."""
    sockets = []
    pools = api.rest_client.pool_manager.pools
    for key in pools.keys():
        pool = pools[key]
        while not pool.pool.empty():
            conn = pool.pool.get_nowait()
            if conn is not None and conn.sock is not None:
                sockets.append(conn.sock)
    return sockets


def test_lanes_after_the_first_resume_its_session(clusters):
    config = yaml.safe_load(next(iter(clusters.values())).admin_kubeconfig.read_text())
    with api_client(config, pool_maxsize=LANES) as api:
        session = ApiSession(api)
        session.get("/version")                      # the first connection: a full handshake, then its ticket
        with ThreadPoolExecutor(LANES) as lanes:     # the others open while it is busy or idle in the pool
            list(lanes.map(lambda _n: session.list("/api/v1/namespaces/default/configmaps"), range(LANES * 4)))
        reused = sorted(sock.session_reused for sock in open_connections(api))
    assert len(reused) >= 2, reused
    assert reused.count(False) == 1 and reused.count(True) == len(reused) - 1, reused
