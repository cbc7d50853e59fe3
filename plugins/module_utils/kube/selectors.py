# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Label selectors as kubectl takes them (``-l`` / ``--selector``), matched against objects of a bundle.

The syntax is apimachinery's ``labels.Parse``: requirements separated by commas,
each ``key``, ``!key``, ``key=value``, ``key==value``, ``key!=value``,
``key in (a,b)``, ``key notin (a,b)``, ``key>N`` or ``key<N``. ``!=`` and
``notin`` match objects without the label too, as in Kubernetes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError

KEY = r"(?:[A-Za-z0-9](?:[-A-Za-z0-9.]*[A-Za-z0-9])?/)?[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?"
VALUE = r"(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?)?"
SET_REQUIREMENT = re.compile(rf"^({KEY})\s+(in|notin)\s*\(\s*((?:{VALUE}\s*,\s*)*{VALUE})\s*\)$")
EXISTS = re.compile(rf"^(!?)\s*({KEY})$")
COMPARISON = re.compile(rf"^({KEY})\s*(==|=|!=|>|<)\s*({VALUE})$")


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: str          # exists, !exists, in, notin, gt, lt
    values: tuple = ()

    def matches(self, labels: dict) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        if self.operator == "exists":
            return present
        if self.operator == "!exists":
            return not present
        if self.operator == "in":
            return present and value in self.values
        if self.operator == "notin":
            return not present or value not in self.values
        if not present or not re.fullmatch(r"-?[0-9]+", str(value)):
            return False
        return int(value) > int(self.values[0]) if self.operator == "gt" else int(value) < int(self.values[0])


@dataclass(frozen=True)
class LabelSelector:
    text: str
    requirements: tuple

    def matches(self, obj: dict) -> bool:
        """Whether the object's labels meet every requirement."""
        labels = ((obj.get("metadata") or {}).get("labels")) or {}
        return all(requirement.matches(labels) for requirement in self.requirements)


def parse_label_selector(text: str, where: str = "selector") -> LabelSelector:
    """A selector in kubectl's syntax; an error names ``where`` and the requirement that is not valid."""
    if not isinstance(text, str):
        raise PhasekitError(f"{where}: expected a label selector (a string such as 'tier=web,track!=canary')")
    requirements = [_requirement(part.strip(), text, where) for part in _split(text) if part.strip()]
    return LabelSelector(text, tuple(requirements))


def _split(text: str) -> list[str]:
    """The requirements: commas inside the parentheses of in/notin do not separate them."""
    parts, depth, current = [], 0, []
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return parts


def _requirement(part: str, text: str, where: str) -> Requirement:
    found = SET_REQUIREMENT.match(part)
    if found:
        values = tuple(value.strip() for value in found.group(3).split(","))
        return Requirement(found.group(1), found.group(2), values)
    found = EXISTS.match(part)
    if found:
        return Requirement(found.group(2), "!exists" if found.group(1) else "exists")
    found = COMPARISON.match(part)
    if found:
        key, operator, value = found.groups()
        if operator in (">", "<"):
            if not re.fullmatch(r"-?[0-9]+", value):
                raise PhasekitError(f"{where}: {part!r} in {text!r}: {operator} needs a whole number")
            return Requirement(key, "gt" if operator == ">" else "lt", (value,))
        return Requirement(key, "notin" if operator == "!=" else "in", (value,))
    raise PhasekitError(f"{where}: {part!r} in {text!r} is not a label requirement (expected key, !key, key=value, "
                        "key!=value, key in (a,b), key notin (a,b), key>N or key<N)")
