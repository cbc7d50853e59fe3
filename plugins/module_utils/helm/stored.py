# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""A release's objects as helm stored them, read through the API: what ``helm --wait`` is waiting for.

Helm (3 and 4) keeps each revision of a release in a Secret of the release's
namespace (its default ``secret`` storage driver), labelled ``owner=helm``,
``name=<release>`` and ``version=<revision>``; its ``release`` key holds the
revision as gzipped JSON, base64-encoded once more. The revision being
installed is stored (``pending-install``, ``pending-upgrade``) before helm
creates its objects and waits for them, so the newest revision names the
objects a running ``helm upgrade --install --wait`` is waiting for. Only the
object identities of its manifest are used; its values never leave here.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import json

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.yaml_io import load_all

GZIP_MAGIC = b"\x1f\x8b"


def stored_manifest_objects(session, release: str, namespace: str) -> list[dict]:
    """The objects of the newest stored revision of ``release`` (none when helm stored none, or not in Secrets)."""
    secrets = session.list(f"/api/v1/namespaces/{namespace}/secrets", label_selector=f"owner=helm,name={release}")
    if not secrets:
        return []
    newest = max(secrets, key=_revision)
    manifest = decoded_release(((newest.get("data") or {}).get("release")) or "").get("manifest") or ""
    return [obj for obj in load_all(manifest, f"release {release}") if isinstance(obj, dict) and obj.get("kind")]


def decoded_release(data: str) -> dict:
    """A release as helm's Secret driver stores it (``data.release``: base64 of base64 of gzipped JSON)."""
    try:
        raw = base64.b64decode(base64.b64decode(data))
        if raw[:2] == GZIP_MAGIC:
            raw = gzip.decompress(raw)
        return json.loads(raw)
    except (binascii.Error, OSError, ValueError) as err:
        raise PhasekitError(f"helm's stored release could not be read: {err}") from None


def _revision(secret: dict) -> int:
    try:
        return int(((secret.get("metadata") or {}).get("labels") or {}).get("version") or 0)
    except ValueError:
        return 0
