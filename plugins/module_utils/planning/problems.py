# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Where a phase or plan came from, and the problems found in it.

Validation collects every problem before failing, so that one run shows the
user all of them, each naming the file, the document and the field.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError


@dataclass(frozen=True)
class DocumentOrigin:
    """A document in a file (or in inline variables): ``phases.yaml document 2 (Phase initinfra)``."""

    source: str              # the file as the user named it, or "plan" for inline documents
    document: int            # 1-based position of the document in that source
    kind: str | None = None
    name: str | None = None

    def label(self) -> str:
        text = f"{self.source} document {self.document}"
        if self.kind and self.name:
            text += f" ({self.kind} {self.name})"
        return text

    def at(self, field: str | None = None) -> str:
        """The place of ``field`` (a dotted path such as ``spec.phases[0].executor``) in this document."""
        return f"{self.label()} field {field}" if field else self.label()

    def named(self, kind: str, name: str) -> DocumentOrigin:
        return DocumentOrigin(self.source, self.document, kind, name)


class Problems:
    """An ordered collection of validation problems, raised together as one PhasekitError."""

    def __init__(self):
        self.messages: list[str] = []

    def add(self, where: str, message: str):
        self.messages.append(f"{where}: {message}")

    def extend(self, messages):
        """Add problems already worded (another collection's ``messages``), each once."""
        for message in messages:
            if message not in self.messages:
                self.messages.append(message)

    def __bool__(self) -> bool:
        return bool(self.messages)

    def raise_if_any(self, subject: str = "phase documents"):
        if not self.messages:
            return
        if len(self.messages) == 1:
            raise PhasekitError(self.messages[0])
        listing = "\n".join(f"- {message}" for message in self.messages)
        raise PhasekitError(f"{len(self.messages)} problems in {subject}:\n{listing}")


def given_as(value, kind: type, place: str, problems: Problems, expected: str) -> bool:
    """Whether an optional field's ``value`` is given, as a ``kind``: absent (None) is not given; another type is a
    problem at ``place``, "expected <expected>, got <its type>"."""
    if value is None:
        return False
    if not isinstance(value, kind):
        problems.add(place, f"expected {expected}, got {type_name(value)}")
        return False
    return True


def did_you_mean(word: str, choices) -> str:
    """' (did you mean X?)' when a close match exists, else ''."""
    close = difflib.get_close_matches(str(word), [str(choice) for choice in choices], n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def type_name(value) -> str:
    """'a mapping', 'a list', 'nothing' ... for messages that say what was found."""
    if value is None:
        return "nothing"
    # isinstance, not type(): Ansible hands over str/dict subclasses carrying origin tags
    for kind, shown in ((bool, "a boolean"), (dict, "a mapping"), (list, "a list"), (str, "a string"),
                        ((int, float), "a number")):
        if isinstance(value, kind):
            return shown
    return type(value).__name__


def shown_value(value) -> str:
    """A wrong value in a message: short scalars as they are, anything else by its type."""
    if isinstance(value, (int, float, bool)) or (isinstance(value, str) and len(value) <= 40):
        return repr(value)
    return type_name(value)
