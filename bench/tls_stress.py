"""Stress TLS session resumption the way a fleet's first phase does, against a real API server.

CLIENTS API clients built from one kubeconfig (hosts on one cluster: one shared TLS context), each opening LANES
connections at once, every request tried once (no retry hides a failure), repeated for SECONDS; prints the
requests, the failures by message, and how many connections resumed a session or made a full handshake.

    python bench/tls_stress.py KUBECONFIG SECONDS        (CLIENTS=24 LANES=6 by default)

Run with the collection importable (ANSIBLE_COLLECTIONS_PATH's parent on sys.path, as bench/fleet.py sets it up).
"""

from __future__ import annotations

import collections
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack

import yaml

from ansible_collections.phasekit.kube.plugins.module_utils.kube.client import api_client, pooled_sockets
from ansible_collections.phasekit.kube.plugins.module_utils.kube.session import ApiSession


def main(kubeconfig_path: str, seconds: float) -> int:
    with open(kubeconfig_path, encoding="utf-8") as handle:
        kubeconfig = yaml.safe_load(handle)
    clients, lanes = int(os.environ.get("CLIENTS", "24")), int(os.environ.get("LANES", "6"))
    errors, reused, total = collections.Counter(), collections.Counter(), 0
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        with ExitStack() as stack:
            sessions = [ApiSession(stack.enter_context(api_client(kubeconfig, pool_maxsize=lanes)), max_attempts=1)
                        for _ in range(clients)]

            def one(index):
                try:
                    sessions[index % clients].list("/api/v1/namespaces/default/configmaps")
                    return None
                except Exception as exc:  # pylint: disable=broad-except
                    return f"{type(exc).__name__}: {exc}"[:160]

            with ThreadPoolExecutor(clients * lanes) as pool:
                errors.update(error for error in pool.map(one, range(clients * lanes * 2)) if error)
            total += clients * lanes * 2
            for session in sessions:
                reused.update(sock.session_reused for sock in pooled_sockets(session.api_client))
    print(f"requests {total} failures {sum(errors.values())} connections resumed {reused[True]} full {reused[False]}")
    for message, count in errors.most_common(5):
        print(count, message)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], float(sys.argv[2])))
