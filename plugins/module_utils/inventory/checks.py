# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Checks shared by the inventory's configuration entries and site files."""

from __future__ import annotations

import unicodedata

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.yaml_io import kind_of


def checked_mapping(spec, allowed: tuple, where: str) -> dict:
    """A cluster's entry (``None`` for an empty one) as a mapping with only ``allowed`` keys; fails otherwise."""
    if spec is None:
        return {}
    if not isinstance(spec, dict):
        raise PhasekitError(f"expected a mapping with {', '.join(allowed)}, got {kind_of(spec)}", where=where)
    check_fields(spec, allowed, where)
    return spec


# control characters (NUL, newline, escape, ...) and line separators: no inventory host name, output line or file
# name carries them intact
_UNUSABLE_IN_NAMES = ("Cc", "Zl", "Zp")


def check_host_name(name, where: str) -> str:
    """A cluster's inventory host name: a non-blank string without control characters; fails naming it
    repr-escaped (the name itself may hold a NUL or an escape sequence)."""
    if not isinstance(name, str) or not name.strip():
        raise PhasekitError(f"cluster names must be non-empty strings, got {name!r}", where=where)
    if any(unicodedata.category(char) in _UNUSABLE_IN_NAMES for char in name):
        raise PhasekitError(f"cluster name {name!r} is not a usable inventory host name: it holds control "
                            "characters (NUL, newline, tab, escape, ...)", where=where)
    return name


def check_fields(entry: dict, allowed: tuple, where: str):
    """Fail on keys that are not among ``allowed``, listing what is."""
    unknown = sorted(str(key) for key in entry if key not in allowed)
    if unknown:
        raise PhasekitError(f"unknown field(s) {', '.join(unknown)}; expected {', '.join(allowed)}", where=where)


def check_labels(labels, where: str) -> dict:
    """Labels as a str -> str mapping (YAML numbers and booleans become their text)."""
    if labels is None:
        return {}
    if not isinstance(labels, dict):
        raise PhasekitError(f"'labels' must be a mapping of label name to value, got {type(labels).__name__}",
                            where=where)
    checked = {}
    for key, value in labels.items():
        if not isinstance(value, (str, int, float, bool)):
            raise PhasekitError(f"label {key!r} must have a text value, got {type(value).__name__}", where=where)
        checked[str(key)] = str(value).lower() if isinstance(value, bool) else str(value)
    return checked
