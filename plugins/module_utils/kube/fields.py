# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Is a server-side apply already in effect? Decided from the live object, without a request.

A re-apply of an unchanged bundle is the common case, and kubectl pays one
PATCH per object for it. Here the live object (read in bulk) answers instead:
the apply would change nothing when

1. our field manager's ``Apply`` entry in ``managedFields`` (same apiVersion)
   owns exactly the fields of the desired object: nothing to add, nothing to
   release; associative list items are matched by their keys, set items by
   value, atomic maps and lists are single leaves; and
2. every desired value equals the live value (leaves we own must be equal as a
   whole, so an atomic list that lost an item is still a change).

Anything this does not understand (other list kinds, a key it cannot match)
answers "changed", which only costs the PATCH the server then decides on.
"""

from __future__ import annotations

import json

IDENTITY_FIELDS = ("apiVersion", "kind")
IDENTITY_METADATA = ("name", "namespace")
_MISSING = object()


def manager_entry(live: dict, manager: str, api_version: str) -> dict | None:
    for entry in (live.get("metadata") or {}).get("managedFields") or []:
        if (entry.get("manager") == manager and entry.get("operation") == "Apply"
                and not entry.get("subresource") and entry.get("apiVersion") == api_version):
            return entry
    return None


def already_applied(desired: dict, live: dict, manager: str) -> bool:
    """True when applying ``desired`` as ``manager`` would leave ``live`` exactly as it is."""
    applied = _applied_fields(desired)
    entry = manager_entry(live, manager, desired.get("apiVersion"))
    if entry is None:
        # an apply of nothing but the name records no entry; then owning nothing is the desired state
        return not applied and not any(e.get("manager") == manager for e in
                                       (live.get("metadata") or {}).get("managedFields") or [])
    if entry.get("fieldsType", "FieldsV1") != "FieldsV1":
        return False
    return _unchanged(applied, entry.get("fieldsV1") or {}, live)


def _applied_fields(desired: dict) -> dict:
    """The desired object without the identity fields that managedFields never lists."""
    body = {k: v for k, v in desired.items() if k not in IDENTITY_FIELDS}
    metadata = {k: v for k, v in (desired.get("metadata") or {}).items()
                if k not in IDENTITY_METADATA and v is not None}
    if metadata:
        body["metadata"] = metadata
    else:
        body.pop("metadata", None)
    return body


def _unchanged(desired, owned: dict, live) -> bool:
    children = {k: v for k, v in owned.items() if k != "."}
    if not children:  # a leaf owned as a whole (scalar, atomic map or list): must be equal as a whole
        return live is not _MISSING and _equal(desired, live)
    if isinstance(desired, dict):
        return _same_map(desired, children, live)
    if isinstance(desired, list):
        return _same_list(desired, children, live)
    return False


def _same_map(desired: dict, children: dict, live) -> bool:
    desired = {key: value for key, value in desired.items() if value is not None}  # null = not set
    if not isinstance(live, dict) or set(children) != {"f:" + key for key in desired}:
        return False
    return all(_unchanged(value, children["f:" + key], live.get(key, _MISSING)) for key, value in desired.items())


def _same_list(desired: list, children: dict, live) -> bool:
    if not isinstance(live, list) or len(children) != len(desired):
        return False
    unmatched = list(range(len(desired)))
    for path, owned in children.items():
        kind, _sep, raw = path.partition(":")
        try:
            key = json.loads(raw)
        except ValueError:
            return False
        if kind == "v":  # set of scalars: the value is the key
            index = next((i for i in unmatched if _equal(desired[i], key)), None)
            if index is None or not any(_equal(item, key) for item in live):
                return False
            unmatched.remove(index)
            continue
        if kind != "k" or not isinstance(key, dict):
            return False  # positional ("i:") and unknown forms: let the server decide
        index = _match_item(desired, unmatched, key)
        live_item = next((item for item in live if isinstance(item, dict) and _has_key(item, key, exact=True)),
                         _MISSING)
        if index is None or live_item is _MISSING or not _unchanged(desired[index], owned, live_item):
            return False
        unmatched.remove(index)
    return not unmatched


def _match_item(desired: list, candidates: list, key: dict) -> int | None:
    """The one desired item with this key; key fields the server defaulted may be absent in it."""
    matches = [i for i in candidates if isinstance(desired[i], dict) and _has_key(desired[i], key, exact=False)]
    return matches[0] if len(matches) == 1 else None


def _has_key(item: dict, key: dict, exact: bool) -> bool:
    present = 0
    for field, value in key.items():
        if field in item:
            if not _equal(item[field], value):
                return False
            present += 1
        elif exact:
            return False
    return present > 0


def _equal(a, b) -> bool:
    """JSON equality: 1 == 1.0, but True != 1 and "1" != 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, str) and isinstance(b, str):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    return a is None and b is None
