# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Per-object diffs for Ansible's diff mode, with Secret values redacted.

Secret ``data``/``stringData`` values never leave: like ``kubectl diff``, a
value is shown as ``***`` when unchanged and as ``*** (before)`` /
``*** (after)`` when it changed, so the diff still says *which* keys changed.
The ``last-applied-configuration`` annotation of a Secret (which holds the
whole Secret) is redacted the same way where an object is shown whole.

A diff shows only what changes, as ``kubectl diff`` does: both sides are
dumped with one key order (sorted: the live object and a dry run's answer
list their keys in different orders), without what the server sets
(managedFields, resourceVersion, uid, creationTimestamp, generation, status,
the last-applied annotation).
"""

from __future__ import annotations

import copy

from ansible_collections.phasekit.kube.plugins.module_utils import yaml_io
from ansible_collections.phasekit.kube.plugins.module_utils.masking import HIDDEN, scrub_secrets

# HIDDEN (masking): a value that must not be shown (Secret data); kubeconfig views say REDACTED, as kubectl
SECRET_FIELDS = ("data", "stringData")
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
NOISY_METADATA = ("managedFields", "resourceVersion", "uid", "creationTimestamp", "generation", "selfLink")
NOISY_TOP = ("status",)  # the server's report of the object, not what was applied


def is_secret(obj: dict | None) -> bool:
    return bool(obj) and obj.get("kind") == "Secret" and (obj.get("apiVersion") or "v1") == "v1"


def scrub_secret_values(text: str, obj: dict | None) -> str:
    """``text`` (an API server's message about ``obj``) with the Secret's values replaced by ``***``: the server
    quotes a refused value back (a number in stringData, a bad base64 string in data)."""
    if not is_secret(obj) or not text:
        return text
    values = [value for field in SECRET_FIELDS if isinstance(obj.get(field), dict) for value in obj[field].values()]
    return scrub_secrets(text, {str(value) for value in values}, HIDDEN)  # in every form the server may quote it


def clean(obj: dict | None) -> dict:
    """A copy without what the server sets: bookkeeping metadata, status, the last-applied annotation."""
    if not obj:
        return {}
    out = copy.deepcopy(obj)
    for key in NOISY_TOP:
        out.pop(key, None)
    metadata = out.get("metadata")
    if isinstance(metadata, dict):
        for key in NOISY_METADATA:
            metadata.pop(key, None)
        annotations = metadata.get("annotations")
        if isinstance(annotations, dict) and LAST_APPLIED in annotations:
            annotations.pop(LAST_APPLIED)
            if not annotations:   # only the client's copy was there: no empty mapping left to differ
                metadata.pop("annotations")
    return out


def redact_pair(before: dict, after: dict) -> tuple[dict, dict]:
    """Redact Secret values in both sides, keeping changed/unchanged visible per key."""
    before, after = copy.deepcopy(before), copy.deepcopy(after)
    if not (is_secret(before) or is_secret(after)):
        return before, after
    for field in SECRET_FIELDS:
        old = before.get(field) if isinstance(before.get(field), dict) else {}
        new = after.get(field) if isinstance(after.get(field), dict) else {}
        if field in before and isinstance(before[field], dict):
            before[field] = {k: (HIDDEN if new.get(k) == v else f"{HIDDEN} (before)") for k, v in old.items()}
        if field in after and isinstance(after[field], dict):
            after[field] = {k: (HIDDEN if old.get(k) == v else f"{HIDDEN} (after)") for k, v in new.items()}
    for side in (before, after):
        annotations = (side.get("metadata") or {}).get("annotations")
        if isinstance(annotations, dict) and LAST_APPLIED in annotations:
            annotations[LAST_APPLIED] = HIDDEN
    return before, after


def redact(obj: dict | None) -> dict:
    """One object with Secret values hidden (for anything shown that is not a diff)."""
    if not obj:
        return {}
    redacted, _other = redact_pair(obj, obj)
    return redacted


def object_diff(before: dict | None, after: dict | None, label: str, after_label: str = "applied") -> dict:
    """An Ansible diff entry (before/after as YAML text) for one object."""
    old, new = redact_pair(clean(before), clean(after))
    return {
        "before_header": f"{label} (live)" if before else f"{label} (absent)",
        "after_header": f"{label} ({after_label})" if after else f"{label} (deleted)",
        "before": _yaml(old) if old else "",
        "after": _yaml(new) if new else "",
    }


def _yaml(obj: dict) -> str:
    # one key order for both sides (kubectl diff's too): only changed lines differ
    return yaml_io.safe_dump(obj, sort_keys=True)


MAX_FIELDS = 8  # fields named per drifted object; the rest are counted


def changed_fields(before: dict | None, after: dict | None) -> list[str]:
    """The dotted paths whose values differ between the live object and what applying would make of it (keys
    only, never values; a list that differs is named as a whole). An object that does not exist yet: ``absent``."""
    if not before:
        return ["absent"]
    old, new = (clean(side) for side in (before, after))
    paths: list[str] = []
    _differences(old, new, "", paths)
    if len(paths) > MAX_FIELDS:
        paths = paths[:MAX_FIELDS] + [f"and {len(paths) - MAX_FIELDS} more"]
    return paths


def _differences(old, new, prefix: str, out: list) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        for key in list(old) + [key for key in new if key not in old]:
            if old.get(key) != new.get(key):
                _differences(old.get(key), new.get(key), f"{prefix}{key}.", out)
        return
    if old != new:
        out.append(prefix.rstrip("."))
