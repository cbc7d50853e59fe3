# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Secrets masked in everything an action shows: the one place that hides a known secret in text.

Every credential the collection hands out (the token, client key and certificate, password, exec and
auth-provider secrets of each kubeconfig given to a command, helm or a container) and every vault-encrypted
value a template used is a *mask*. ``Masks.scrub`` replaces each of them by ``***`` in messages, diffs,
results and run records, in every form in which a program or a serializer may print it:

* as written, and each of its lines (a multi-line value printed line by line, or its lines joined by ``' | '``);
* JSON-escaped (``\\n``, ``\\"``, ``\\u00fc``), Python-escaped (``repr``, ``ascii``, ``backslashreplace``: ``\\xfc``),
  YAML double-quoted (``\\xFC``) and single-quoted (``''``);
* folded as YAML folds long or multi-line scalars (a line break and indentation, with ``\\`` in double-quoted
  style, ``+``/``-`` of a diff line in front) wherever the value has white space or an escape (forms of up to
  ``MAX_FOLDABLE`` characters: a longer one, such as a whole PEM key, is found as written, and each of its lines
  is a mask of its own);
* base64 of the whole value (also with a line break or more after it: ``echo "$S" | base64``), unwrapped or
  wrapped at 64 or 76 characters.

Short values are not masks: a secret (or one of its lines) shorter than ``MIN_SECRET`` characters would blank
out ordinary words of every message. Lines that are PEM armour (``-----BEGIN ...-----``) are structure shown by
every certificate, not a secret of this one.
"""

from __future__ import annotations

import base64
import functools
import json
import re

HIDDEN = "***"
MIN_SECRET = 4
PEM_ARMOUR = re.compile(r"^-----(BEGIN|END) [A-Z0-9 ]+-----$")
BASE64_WRAPS = (64, 76)  # PEM bodies, and base64(1)'s default
JOINED = " | "           # how a command's last lines are shown on one line
MAX_FOLDABLE = 512       # longer forms (a PEM key as a whole) are found as written; each of their lines is a mask

# How YAML's double-quoted style escapes a character (PyYAML's Emitter.ESCAPE_REPLACEMENTS)
YAML_ESCAPES = {"\0": "0", "\x07": "a", "\x08": "b", "\t": "t", "\n": "n", "\x0b": "v", "\x0c": "f", "\r": "r",
                "\x1b": "e", '"': '"', "\\": "\\", "\x85": "N", "\xa0": "_", "\u2028": "L", "\u2029": "P"}

# A printed form of a secret as tokens: escapes (after which YAML may fold), runs of white space, other characters
_TOKEN = re.compile(r"\\(?:x[0-9A-Fa-f]{2}|u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|.)|\s+|[^\s\\]+", re.DOTALL)
# White space of the value, as a folded scalar (or a diff of one) may print it: spaces, line breaks with a diff
# line's mark, YAML's escaped line break and escaped space
_SPACE = r"(?:[^\S\n]|\\?\n[+\- ]?|\\(?=[^\S\n]))+"
# A double-quoted YAML scalar may fold right after an escape: '\', line break, indentation
_FOLD = r"(?:\\\r?\n[+\- ]?[ \t]*)?"
_FOLDS_AT = re.compile(r"[\s\\]")  # where a printed form may be folded: white space, escapes


class Masks:
    """Secrets to hide, each expanded once into the forms it may be printed in; ``scrub`` hides them all."""

    def __init__(self, secrets=(), hidden: str = HIDDEN):
        self.hidden = hidden
        self._secrets: set[str] = set()
        self._forms: dict[str, object] = {}  # printed form -> a compiled pattern (foldable) or None (plain text)
        self._longest_first: list | None = None  # the forms in the order scrub_text tries them, made once
        self.add(*secrets)

    def __bool__(self) -> bool:
        return bool(self._forms)

    def __contains__(self, secret) -> bool:
        return secret in self._secrets

    def add(self, *secrets) -> Masks:
        """Add secrets (strings; anything else and strings shorter than ``MIN_SECRET`` are ignored)."""
        for secret in secrets:
            if isinstance(secret, str) and secret not in self._secrets and is_maskable(secret):
                self._secrets.add(secret)
                self._forms.update(printed_forms(secret))
                self._longest_first = None
        return self

    def update(self, other: Masks) -> Masks:
        """Add every secret of ``other``."""
        return self.add(*other.secrets())

    def secrets(self) -> frozenset:
        return frozenset(self._secrets)

    def scrub(self, value):
        """``value`` (text, or mappings, lists and tuples of it, keys too) with every form of every secret replaced
        by the hidden marker; other values are returned as they are."""
        if not self._forms:
            return value
        return self._scrub(value)

    def _scrub(self, value):
        if isinstance(value, str):
            return self.scrub_text(value)
        if isinstance(value, dict):
            return {self._scrub(key): self._scrub(item) for key, item in value.items()}
        if isinstance(value, list):  # plain containers out, whatever Ansible's tagged ones were
            return [self._scrub(item) for item in value]
        if isinstance(value, tuple):
            return tuple(self._scrub(item) for item in value)
        return value

    def scrub_text(self, text: str) -> str:
        """One text with every form of every secret hidden (longest forms first)."""
        if self._longest_first is None:  # sorted once, not for every text of every outcome
            self._longest_first = sorted(self._forms.items(), key=lambda item: len(item[0]), reverse=True)
        for form, pattern in self._longest_first:
            if pattern is None:
                if form in text:
                    text = text.replace(form, self.hidden)
            elif pattern.head in text:
                text = pattern.regex.sub(self.hidden, text)
        return text


def is_maskable(secret: str) -> bool:
    """Whether ``secret`` is long enough to be masked (``MIN_SECRET`` characters, white space at its ends aside)."""
    return len(secret.strip()) >= MIN_SECRET


# Names of settings whose value is a credential (``adminPassword``, ``auth_token``, ``apiKey``, ``clientSecret``),
# matched in the name without case, ``-``, ``_`` or ``.``. Narrower than the exec arguments' words (kubeconfig.redact):
# in chart values a bare ``key`` or ``secret`` mostly names things (a toleration's key, ``existingSecret``).
SECRET_NAME_WORDS = ("password", "passwd", "passphrase", "token", "apikey", "privatekey", "secretkey", "accesskey",
                     "clientsecret", "credential")


def says_secret(name) -> bool:
    """Whether a setting's name says its value is a credential (see ``SECRET_NAME_WORDS``)."""
    flat = re.sub(r"[-_.\s]", "", str(name)).lower()
    return any(word in flat for word in SECRET_NAME_WORDS)


def secret_named_strings(data, named_secret: bool = False):
    """The strings of ``data`` (mappings and lists, to any depth) held under a name that ``says_secret``: the values
    of a release or a settings file that are credentials by their name, whoever wrote them in plain text."""
    if isinstance(data, dict):
        for key, value in data.items():
            yield from secret_named_strings(value, named_secret or says_secret(key))
    elif isinstance(data, (list, tuple)):
        for value in data:
            yield from secret_named_strings(value, named_secret)
    elif named_secret and isinstance(data, str):
        yield data


def leaf_strings(data):
    """Every string of ``data`` (mappings and lists, to any depth)."""
    return secret_named_strings(data, named_secret=True)


def scrub_secrets(value, secrets, hidden: str = HIDDEN):
    """``value`` with every form of each of ``secrets`` hidden (a shorthand for ``Masks(secrets).scrub``)."""
    return Masks(secrets or (), hidden).scrub(value)


def printed_forms(secret: str) -> dict:
    """Every form of ``secret`` worth looking for: form -> a foldable pattern, or None for plain text."""
    return dict(_printed_forms(secret))


@functools.lru_cache(maxsize=4096)
def _printed_forms(secret: str) -> tuple:
    lines = [line.strip() for line in secret.splitlines() if line.strip()]
    wholes = {secret.strip()}
    parts: set[str] = set()
    if len(lines) > 1:
        parts.update(line for line in lines if not PEM_ARMOUR.match(line))
        wholes.add(JOINED.join(lines))
    # when every line is a mask, folded wholes need no pattern of their own (a PEM key: 28 lines, no spaces)
    lines_cover = len(lines) > 1 and all(len(line) >= MIN_SECRET or PEM_ARMOUR.match(line) for line in lines)
    forms = {form: None for piece in wholes for form in escaped_forms(piece)} if lines_cover else {
        form: _foldable(form) for piece in wholes for form in escaped_forms(piece)}
    forms.update((form, _foldable(form)) for piece in parts for form in escaped_forms(piece))
    forms.update((form, None) for form in base64_forms(secret))
    return tuple((form, pattern) for form, pattern in forms.items() if len(form) >= MIN_SECRET)


def escaped_forms(text: str) -> set[str]:
    """``text`` as written and as JSON, Python and YAML quote it."""
    return {text, json.dumps(text)[1:-1], json.dumps(text, ensure_ascii=False)[1:-1], repr(text)[1:-1],
            ascii(text)[1:-1], text.encode("ascii", "backslashreplace").decode("ascii"), yaml_double_quoted(text),
            text.replace("'", "''")}


def yaml_double_quoted(text: str) -> str:
    """``text`` inside YAML double quotes as PyYAML writes it without allow_unicode (``ü`` -> ``\\xFC``)."""
    out = []
    for char in text:
        if char in YAML_ESCAPES:
            out.append("\\" + YAML_ESCAPES[char])
        elif " " <= char <= "~":
            out.append(char)
        elif char <= "\xff":
            out.append(f"\\x{ord(char):02X}")
        elif char <= "\uffff":
            out.append(f"\\u{ord(char):04X}")
        else:
            out.append(f"\\U{ord(char):08X}")
    return "".join(out)


def base64_forms(secret: str) -> set[str]:
    """base64 of ``secret`` and of ``secret`` and a line break (``echo "$S" | base64``), standard and URL-safe,
    without padding; the part of it that does not depend on what follows the secret; its lines when wrapped."""
    forms = set()
    raw = secret.encode("utf-8", "surrogatepass")
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        for data in (raw, raw + b"\n"):
            encoded = encode(data).decode("ascii").rstrip("=")
            forms.update((encoded, encoded[:4 * (len(data) // 3)]))
            for width in BASE64_WRAPS:
                if len(encoded) > width:
                    forms.update(encoded[start:start + width] for start in range(0, len(encoded), width))
    return forms


class _Foldable:
    """A form with white space or escapes: found also when folded or diffed (``head``: plain text it starts with,
    looked for first, cheaply)."""

    def __init__(self, form: str):
        parts = []
        for token in _TOKEN.findall(form):
            if token[0] == "\\" and len(token) > 1:
                parts.append(_escape_pattern(token) + _FOLD)
            elif token.isspace():
                parts.append(_SPACE)
            else:
                parts.append(re.escape(token))
        self.regex = re.compile("".join(parts))
        first = _TOKEN.match(form)
        self.head = first.group(0) if first and not first.group(0).isspace() and first.group(0)[0] != "\\" else ""


def _foldable(form: str):
    if len(form) > MAX_FOLDABLE or not _FOLDS_AT.search(form):
        return None
    return _Foldable(form)


def _escape_pattern(token: str) -> str:
    """An escape's pattern: hexadecimal digits in either case (YAML writes \\xFC, Python \\xfc)."""
    if token[1] in "xuU" and len(token) > 2:
        return re.escape(token[:2]) + "".join(f"[{digit.lower()}{digit.upper()}]" if digit.isalpha() else digit
                                              for digit in token[2:])
    return re.escape(token)
