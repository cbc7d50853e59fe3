# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The words run records and the executors share: how a record's objects are labelled, the Secret that keys its
digests, a bundle's digest, and a failed phase's message as a record keeps it. Below both ``running`` (which writes
records) and ``executors`` (which make digests and messages, and keep those objects out of their own work)."""

from __future__ import annotations

import hashlib
import json

from ansible_collections.phasekit.kube.plugins.module_utils.masking import Masks

LABELS = {"app.kubernetes.io/managed-by": "phasekit.kube", "phasekit.kube/record": "run"}
KEY_SECRET = "phasekit-run-key"  # the Secret of the record's namespace that keys its digests
MAX_RECORD_MESSAGE = 300        # a failed entry's message, shortened (the ConfigMap stays small)


def bundle_digest(parts) -> str:
    """``sha256:<hex>`` of plain data (objects, options, texts), independent of key order. Kept in memory only:
    a record holds it keyed (``keyed_digest``), never as is."""
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def recorded_message(msg: str, masks: Masks | None = None) -> str:
    """A failed phase's message as a record keeps it (people with ``view`` read it): every mask hidden, then cut
    to ``MAX_RECORD_MESSAGE`` characters (masked first: a cut secret would not be found any more)."""
    msg = masks.scrub(msg) if masks else msg
    return msg if len(msg) <= MAX_RECORD_MESSAGE else msg[:MAX_RECORD_MESSAGE] + "..."
