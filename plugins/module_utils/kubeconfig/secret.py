# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Read a kubeconfig stored in a Secret of another cluster (Cluster API's ``<cluster>-kubeconfig``).

The Secret may not exist yet (the parent is still creating the cluster), so a
missing Secret is polled for until a timeout. The decoded value only lives in
memory; errors name the Secret and key, never its content.
"""

from __future__ import annotations

import base64
import binascii
import time
from urllib.parse import quote

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError

POLL_SECONDS = 2.0
MISSING_STATUSES = (404,)


class SecretNotThereYet(PhasekitError):
    """The kubeconfig Secret is not there (after its timeout; a preview waits for nothing: timeout 0). A run fails
    on it; a preview says the host's kubeconfig is known after the run (an earlier phase or a controller makes it)."""


def read_kubeconfig_secret(config: dict, secret: dict, *, sleep=time.sleep, clock=time.monotonic,
                           environ=None) -> bytes:
    """The decoded ``secret['key']`` of Secret ``namespace/name``, waiting up to ``timeout`` seconds for it.

    ``config`` is the resolved kubeconfig of the cluster holding the Secret; ``environ`` the task's environment
    (its proxy variables).
    """
    # imported here: the kubernetes client is slow to import and only Secret sources need it
    from ansible_collections.phasekit.kube.plugins.module_utils.kube.client import api_client
    from ansible_collections.phasekit.kube.plugins.module_utils.kube.session import ApiSession

    name, namespace, key, timeout = secret["name"], secret["namespace"], secret["key"], secret["timeout"]
    where = f"Secret {namespace}/{name}"
    deadline = clock() + timeout
    with api_client(config, environ=environ) as api:
        session = ApiSession(api)
        while True:
            found = _read_secret(session, name, namespace, where)
            if found is not None:
                return _decode_value(found, key, where)
            remaining = deadline - clock()
            if remaining <= 0:
                raise SecretNotThereYet(f"{where} did not appear within {timeout} seconds" if timeout else
                                        f"{where} is not there")
            sleep(min(POLL_SECONDS, remaining))


def _read_secret(session, name: str, namespace: str, where: str):
    from ansible_collections.phasekit.kube.plugins.module_utils.kube.session import ApiError, TransportError

    try:
        return session.get(f"/api/v1/namespaces/{quote(namespace, safe='')}/secrets/{quote(name, safe='')}")
    except ApiError as exc:
        if exc.status in MISSING_STATUSES:
            return None
        if exc.status in (401, 403):
            raise PhasekitError(f"not allowed to read {where} (HTTP {exc.status} {exc.reason})") from None
        raise PhasekitError(f"cannot read {where}: HTTP {exc.status} {exc.reason}") from None
    except TransportError as exc:
        raise PhasekitError(f"cannot reach the API server to read {where}: {exc}") from None


def _decode_value(found: dict, key: str, where: str) -> bytes:
    data = found.get("data") or {}
    if key not in data:
        keys = ", ".join(sorted(data)) or "none"
        raise PhasekitError(f"{where} has no key {key!r}; its keys: {keys}")
    try:
        return base64.b64decode(data[key] or "", validate=True)
    except (binascii.Error, ValueError):
        raise PhasekitError(f"{where} key {key!r} is not valid base64") from None
