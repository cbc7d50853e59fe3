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

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError

POLL_SECONDS = 2.0
MISSING_STATUSES = (404,)


def read_kubeconfig_secret(config: dict, secret: dict, *, sleep=time.sleep, clock=time.monotonic) -> bytes:
    """The decoded ``secret['key']`` of Secret ``namespace/name``, waiting up to ``timeout`` seconds for it.

    ``config`` is the resolved kubeconfig of the cluster holding the Secret.
    """
    # imported here: the kubernetes client is slow to import and only Secret sources need it
    from ansible_collections.phasekit.kube.plugins.module_utils.kube.client import api_client
    from ansible_collections.phasekit.kube.plugins.module_utils.kube.client import require_kubernetes

    require_kubernetes()
    from kubernetes.client import CoreV1Api  # pylint: disable=import-outside-toplevel

    name, namespace, key, timeout = secret["name"], secret["namespace"], secret["key"], secret["timeout"]
    where = f"Secret {namespace}/{name}"
    deadline = clock() + timeout
    with api_client(config) as api:
        core = CoreV1Api(api)
        while True:
            found = _read_secret(core, name, namespace, where)
            if found is not None:
                return _decode_value(found, key, where)
            remaining = deadline - clock()
            if remaining <= 0:
                raise PhasekitError(f"{where} did not appear within {timeout} seconds")
            sleep(min(POLL_SECONDS, remaining))


def _read_secret(core, name: str, namespace: str, where: str):
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError as Urllib3Error

    try:
        return core.read_namespaced_secret(name, namespace)
    except ApiException as exc:
        if exc.status in MISSING_STATUSES:
            return None
        if exc.status in (401, 403):
            raise PhasekitError(f"not allowed to read {where} (HTTP {exc.status} {exc.reason})") from None
        raise PhasekitError(f"cannot read {where}: HTTP {exc.status} {exc.reason}") from None
    except (Urllib3Error, OSError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise PhasekitError(f"cannot reach the API server to read {where}: {reason}") from None


def _decode_value(found, key: str, where: str) -> bytes:
    data = found.data or {}
    if key not in data:
        keys = ", ".join(sorted(data)) or "none"
        raise PhasekitError(f"{where} has no key {key!r}; its keys: {keys}")
    try:
        return base64.b64decode(data[key] or "", validate=True)
    except (binascii.Error, ValueError):
        raise PhasekitError(f"{where} key {key!r} is not valid base64") from None
