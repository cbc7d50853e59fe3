# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""kubectl's JSONPath: templates such as ``{.status.conditions[?(@.type=="Ready")].status}``, as
``kubectl get -o jsonpath=...`` evaluates and prints them.

kubectl's dialect is its own (client-go ``util/jsonpath``): a template of text and
``{...}`` actions, ``range``/``end`` loops, quoted text, unions, slices with
kubectl's bounds rules, filters compared with Go's template comparison rules,
``..`` that yields every non-empty container, and results printed as Go prints
them (maps and lists as compact JSON with sorted keys and HTML escaped, numbers
in Go's ``%v`` form). No Python library implements that dialect (jsonpath-ng
and the RFC 9535 libraries have no templates, ranges or kubectl's printing, and
differ in filters and ``..``), so this module follows client-go's parser and
evaluator, rule by rule; ``tests/integration/test_jsonpath_differential.py``
holds it to the real kubectl's output over the same objects.

Maps are walked in sorted key order (Go's order is random, so any order is
kubectl's; sorted is stable). The template is parsed once (``JSONPath``) and may
be evaluated any number of times.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from decimal import Decimal

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError

EOF = ""
INT64 = (-(2 ** 63), 2 ** 63 - 1)
SLICE = re.compile(r"^(-?[0-9]*)(:-?[0-9]*)?(:-?[0-9]*)?$")
DICT_KEY = re.compile(r"^'([^']*)'$")
FILTER = re.compile(r"^([^!<>=]+)([!<>=]+)(.+?)$", re.DOTALL)
INTEGER = re.compile(r"^[+-]?[0-9]+$")
DECIMAL = re.compile(r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)$")
HTML_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}
SIMPLE_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\"}


class JSONPathError(PhasekitError):
    """A template kubectl would refuse, or one that fails on the object it is evaluated on."""


class _Byte(int):
    """One byte of a string, as a wildcard over a string yields them (Go's uint8)."""


class _Nothing:
    """No value (Go's invalid reflect.Value): what a range over nothing, or over a null, evaluates its body on."""

    def __repr__(self):
        return "<no value>"


NOTHING = _Nothing()


# ---------------------------------------------------------------- nodes

class _Node:
    __slots__ = ()


# The syntax tree, as client-go's jsonpath/node.go has it: one small class per node type, found by name when the
# tree is walked (``_Evaluator``).
@dataclass(slots=True)
class _List(_Node):
    nodes: list = field(default_factory=list)


@dataclass(slots=True)
class _Text(_Node):
    text: str


@dataclass(slots=True)
class _Field(_Node):
    name: str


@dataclass(slots=True)
class _Identifier(_Node):
    name: str


@dataclass(slots=True)
class _Array(_Node):
    params: list          # three [value, known, derived]: start, end, step


@dataclass(slots=True)
class _Filter(_Node):
    left: object
    right: object
    operator: str


@dataclass(slots=True)
class _Literal(_Node):
    """An int, float or bool written in the template."""

    value: object


class _Wildcard(_Node):
    __slots__ = ()


class _Recursive(_Node):
    __slots__ = ()


@dataclass(slots=True)
class _Union(_Node):
    lists: list


# ---------------------------------------------------------------- parser

def _is_digit(char: str) -> bool:
    return bool(char) and unicodedata.category(char) == "Nd"


def _is_alphanumeric(char: str) -> bool:
    return char == "_" or (bool(char) and char.isalpha()) or _is_digit(char)


def _is_terminator(char: str) -> bool:
    return char in (EOF, " ", "\t", "\r", "\n", ".", ",", "[", "]", "$", "@", "{", "}")


class _Parser:
    """client-go's parser: text and ``{...}`` actions, scanned one character at a time."""

    def __init__(self, text: str):
        self.input = text
        self.pos = 0
        self.start = 0
        self.width = 0
        self.root = _List()

    def parse(self) -> _List:
        while True:
            if self.input.startswith("{", self.pos):
                if self.pos > self.start:
                    self.root.nodes.append(_Text(self._consume()))
                self.pos += 1
                self._consume()
                action = _List()
                self.root.nodes.append(action)
                self._inside_action(action)
                continue
            if self._next() == EOF:
                break
        if self.pos > self.start:
            self.root.nodes.append(_Text(self._consume()))
        return self.root

    def _consume(self) -> str:
        value = self.input[self.start:self.pos]
        self.start = self.pos
        return value

    def _next(self) -> str:
        if self.pos >= len(self.input):
            self.width = 0
            return EOF
        self.width = 1
        self.pos += 1
        return self.input[self.pos - 1]

    def _peek(self) -> str:
        char = self._next()
        self._backup()
        return char

    def _backup(self):
        self.pos -= self.width

    def _inside_action(self, cur: _List):
        """Tokens until the action's closing brace."""
        while True:
            rest = self.input[self.pos:]
            if rest.startswith("}"):
                self.pos += 1
                self._consume()
                return
            if rest.startswith("[?("):
                self._filter(cur)
                continue
            if rest.startswith(".."):
                self._recursive(cur)
                continue
            char = self._next()
            if char == EOF or char in "\r\n":
                raise JSONPathError("unclosed action")
            if char in " @$":
                self._consume()
            elif char == "[":
                self._array(cur)
            elif char in "\"'":
                self._quote(cur, char)
            elif char == ".":
                self._field(cur)
            elif char in "+-" or _is_digit(char):
                self._backup()
                self._number(cur)
            elif _is_alphanumeric(char):
                self._backup()
                self._identifier(cur)
            else:
                raise JSONPathError(f"unrecognized character in action: U+{ord(char):04X} {char!r}")

    def _identifier(self, cur: _List):
        while not _is_terminator(self._next()):
            pass
        self._backup()
        value = self._consume()
        cur.nodes.append(_Literal(value == "true") if value in ("true", "false") else _Identifier(value))

    def _recursive(self, cur: _List):
        if cur.nodes and isinstance(cur.nodes[-1], _Recursive):
            raise JSONPathError("invalid multiple recursive descent")
        self.pos += 2
        self._consume()
        cur.nodes.append(_Recursive())
        if _is_alphanumeric(self._peek()):
            self._field(cur)

    def _number(self, cur: _List):
        if self._peek() in ("+", "-"):
            self._next()
        while True:
            char = self._next()
            if char != "." and not _is_digit(char):
                self._backup()
                break
        value = self._consume()
        if INTEGER.match(value) and INT64[0] <= int(value) <= INT64[1]:
            cur.nodes.append(_Literal(int(value)))
        elif DECIMAL.match(value):
            cur.nodes.append(_Literal(float(value)))
        else:
            raise JSONPathError(f"cannot parse number {value}")

    def _array(self, cur: _List):
        while True:
            char = self._next()
            if char in (EOF, "\n"):
                raise JSONPathError("unterminated array")
            if char == "]":
                break
        text = self._consume()[1:-1]
        if text == "*":
            text = ":"
        parts = text.split(",")
        if len(parts) > 1:
            cur.nodes.append(_Union([_action(f"[{part.strip(' ')}]") for part in parts]))
            return
        key = DICT_KEY.match(text)
        if key is not None:
            cur.nodes.extend(_action(f".{key.group(1)}").nodes)
            return
        found = SLICE.match(text)
        if found is None:
            raise JSONPathError(f"invalid array index {text}")
        params = []
        for position, given in enumerate(found.groups(default="")):
            if given:
                number = given[1:] if position else given
                if position and not number:
                    params.append([0, False, False])
                    continue
                if not INTEGER.match(number):
                    raise JSONPathError(f"array index {number} is not a number")
                params.append([int(number), True, False])
            elif position == 1:
                params.append([params[0][0] + 1, True, True])
            else:
                params.append([0, False, False])
        cur.nodes.append(_Array(params))

    def _filter(self, cur: _List):
        self.pos += 3
        self._consume()
        begin = end = False
        pair = ""
        while True:
            char = self._next()
            if char in (EOF, "\n"):
                raise JSONPathError("unterminated filter")
            if char in "\"'":
                if not begin:
                    begin, pair = True, char
                    continue
                if self.input[self.pos - 2] != "\\" and char == pair:
                    end = True
            elif char == ")" and begin == end:
                break
        if self._next() != "]":
            raise JSONPathError("unclosed array expect ]")
        text = self._consume()[:-2]
        found = FILTER.match(text)
        if found is None:
            cur.nodes.append(_Filter(_action(text), _List(), "exists"))
        else:
            cur.nodes.append(_Filter(_action(found.group(1)), _action(found.group(3)), found.group(2)))

    def _quote(self, cur: _List, end: str):
        while True:
            char = self._next()
            if char in (EOF, "\n"):
                raise JSONPathError("unterminated quoted string")
            if char == end and self.input[self.pos - 2] != "\\":
                break
        value = self._consume()
        cur.nodes.append(_Text(_unquote(value)))

    def _field(self, cur: _List):
        self._consume()
        while True:
            char = self._next()
            if char == "\\":
                self._next()
            elif _is_terminator(char):
                self._backup()
                break
        value = self._consume()
        cur.nodes.append(_Wildcard() if value == "*" else _Field(value.replace("\\", "")))


def _action(text: str) -> _List:
    """``text`` parsed as the inside of one action (what client-go's parseAction does)."""
    return _Parser("{" + text + "}").parse().nodes[0]


def _unquote(quoted: str) -> str:
    """A quoted string, single or double quotes, with Go's escapes (strconv.UnquoteChar)."""
    quote, body = quoted[0], quoted[1:-1]
    if len(quoted) < 2 or quoted[-1] != quote:
        raise JSONPathError(f"unquote string {quoted} error invalid syntax")
    out, index = [], 0
    while index < len(body):
        char = body[index]
        if char == quote:
            raise JSONPathError(f"unquote string {quoted} error invalid syntax")
        if char != "\\":
            out.append(char)
            index += 1
            continue
        index += 1
        escape = body[index:index + 1]
        if escape in SIMPLE_ESCAPES:
            out.append(SIMPLE_ESCAPES[escape])
            index += 1
        elif escape in ("'", '"'):
            if escape != quote:
                raise JSONPathError(f"unquote string {quoted} error invalid syntax")
            out.append(escape)
            index += 1
        elif escape in ("x", "u", "U"):
            size = {"x": 2, "u": 4, "U": 8}[escape]
            digits = body[index + 1:index + 1 + size]
            if len(digits) != size or not re.fullmatch(r"[0-9a-fA-F]+", digits):
                raise JSONPathError(f"unquote string {quoted} error invalid syntax")
            code = int(digits, 16)
            if escape != "x" and (code > 0x10FFFF or 0xD800 <= code <= 0xDFFF):
                raise JSONPathError(f"unquote string {quoted} error invalid syntax")
            out.append(chr(code))
            index += 1 + size
        elif escape and escape in "01234567":
            digits = body[index:index + 3]
            if len(digits) != 3 or not re.fullmatch(r"[0-7]{3}", digits) or int(digits, 8) > 255:
                raise JSONPathError(f"unquote string {quoted} error invalid syntax")
            out.append(chr(int(digits, 8)))
            index += 3
        else:
            raise JSONPathError(f"unquote string {quoted} error invalid syntax")
    return "".join(out)


# ---------------------------------------------------------------- evaluation

class JSONPath:
    """A parsed template; ``allow_missing_keys`` as kubectl's ``--allow-missing-template-keys`` (kubectl's default:
    true; client-go's, which airshipctl's wait conditions use: false)."""

    def __init__(self, template: str, allow_missing_keys: bool = True):
        self.template = template
        self.allow_missing_keys = allow_missing_keys
        self.nodes = _Parser(template).parse().nodes

    def find_results(self, data) -> list[list]:
        """Every action's results, in order (a range contributes its body's, once per item)."""
        return _Evaluation(self.nodes, self.allow_missing_keys).find(data, 0)

    def text(self, data) -> str:
        """What ``kubectl get -o jsonpath=<template>`` prints for ``data``."""
        return "".join(" ".join(printed(value) for value in results) for results in self.find_results(data))


class _Evaluation:
    """One evaluation: the range bookkeeping client-go keeps while it walks the template's nodes."""

    def __init__(self, nodes: list, allow_missing_keys: bool):
        self.nodes = nodes
        self.allow_missing_keys = allow_missing_keys
        self.begin_range = self.in_range = self.end_range = 0
        self.last_end: int | None = None

    def find(self, data, start: int) -> list[list]:
        current = [data]
        found: list[list] = []
        index = start
        while index < len(self.nodes):
            results = self.walk(current, self.nodes[index])
            if 0 < self.end_range <= self.in_range:      # an end: this range's body ends here
                self.end_range -= 1
                self.last_end = index
                break
            if self.begin_range > 0:                     # a range: its body once per item
                self.begin_range -= 1
                self.in_range += 1
                if results:
                    for value in results:
                        found.extend(self.find(NOTHING if value is None else value, index + 1))
                else:
                    self.find(NOTHING, index + 1)        # advances to the range's end
                self.in_range -= 1
                if self.last_end is not None and self.last_end > index:
                    index = self.last_end
                index += 1
                continue
            found.append(results)
            index += 1
        return found

    def walk(self, values: list, node: _Node) -> list:
        handler = getattr(self, f"_{type(node).__name__[1:].lower()}")
        return handler(values, node)

    def _list(self, values: list, node: _List) -> list:
        for child in node.nodes:
            values = self.walk(values, child)
        return values

    def _text(self, _values: list, node: _Text) -> list:
        return [node.text]

    def _literal(self, values: list, node: _Literal) -> list:
        return [node.value] * len(values)

    def _identifier(self, values: list, node: _Identifier) -> list:
        if node.name == "range":
            self.begin_range += 1
            return values
        if node.name == "end":
            if self.in_range > 0:
                self.end_range += 1
                return []
            raise JSONPathError("not in range, nothing to end")
        raise JSONPathError(f"unrecognized identifier {node.name}")

    def _field(self, values: list, node: _Field) -> list:
        if not values:
            return []
        results = [value[node.name] for value in values if isinstance(value, dict) and node.name in value]
        if not results and not self.allow_missing_keys:
            raise JSONPathError(f"{node.name} is not found")
        return results

    def _array(self, values: list, node: _Array) -> list:
        results = []
        for value in values:
            if value is None:
                continue
            if not isinstance(value, list):
                raise JSONPathError(f"{_go_type(value)} is not array or slice")
            (start, start_known), (stop, stop_known, stop_derived), (step, step_known) = \
                node.params[0][:2], node.params[1], node.params[2][:2]
            length = len(value)
            start = start if start_known else 0
            if start < 0:
                start += length
            stop = stop if stop_known else length
            if stop < 0 or (stop == 0 and stop_derived):
                stop += length
            if stop == start:
                return results                           # zero elements: client-go stops here
            if start >= length or start < 0:
                raise JSONPathError(f"array index out of bounds: index {start}, length {length}")
            if stop > length or stop < 0:
                raise JSONPathError(f"array index out of bounds: index {stop - 1}, length {length}")
            if start > stop:
                raise JSONPathError(f"starting index {start} is greater than ending index {stop}")
            if step_known and step <= 0:
                raise JSONPathError("step must be > 0")
            results.extend(value[start:stop:step if step_known else 1])
        return results

    def _union(self, values: list, node: _Union) -> list:
        results = []
        for one in node.lists:
            results.extend(self._list(values, one))
        return results

    def _wildcard(self, values: list, _node: _Wildcard) -> list:
        results = []
        for value in values:
            results.extend(_children(value))
        return results

    def _recursive(self, values: list, node: _Recursive) -> list:
        results = []
        for value in values:
            children = _children(value)
            if children:
                results.append(value)
                results.extend(self._recursive(children, node))
        return results

    def _filter(self, values: list, node: _Filter) -> list:
        results = []
        for value in values:
            if not isinstance(value, list):
                raise JSONPathError(f"{_go_value(value)} is not array or slice and cannot be filtered")
            for item in value:
                if node.operator == "exists":
                    try:
                        lefts = self._list([item], node.left)
                    except JSONPathError:
                        lefts = []
                    if lefts:
                        results.append(item)
                    continue
                left = self._one(item, node.left)
                if left is NOTHING:
                    continue
                right = self._one(item, node.right)
                if right is NOTHING:
                    continue
                if _compare(node.operator, left, right):
                    results.append(item)
        return results

    def _one(self, item, side: _List):
        """The one value a filter side gives for ``item`` (NOTHING: none, the item is left out)."""
        found = self._list([item], side)
        if not found:
            return NOTHING
        if len(found) > 1:
            raise JSONPathError("can only compare one element at a time")
        return found[0]


def _children(value) -> list:
    """What a wildcard yields: a map's values, a list's items, a string's bytes."""
    if isinstance(value, dict):
        return [value[key] for key in sorted(value)]
    if isinstance(value, list):
        return list(value)
    if isinstance(value, str):
        return [_Byte(byte) for byte in value.encode()]
    return []


# Go's template comparison: each value has a basic kind; different kinds do not compare (ints with uints do).
def _kind(value) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, _Byte):
        return "uint"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    raise JSONPathError("invalid type for comparison")


def _equal(left, right) -> bool:
    kinds = {_kind(left), _kind(right)}
    if len(kinds) > 1 and kinds != {"int", "uint"}:
        raise JSONPathError("incompatible types for comparison")
    return left == right


def _less(left, right) -> bool:
    kinds = {_kind(left), _kind(right)}
    if len(kinds) > 1 and kinds != {"int", "uint"}:
        raise JSONPathError("incompatible types for comparison")
    if kinds == {"bool"}:
        raise JSONPathError("invalid type for comparison")
    return left < right


def _compare(operator: str, left, right) -> bool:
    if operator == "==":
        return _equal(left, right)
    if operator == "!=":
        return not _equal(left, right)
    if operator == "<":
        return _less(left, right)
    if operator == ">":
        return not (_less(left, right) or _equal(left, right))
    if operator == "<=":
        return _less(left, right) or _equal(left, right)
    if operator == ">=":
        return not _less(left, right)
    raise JSONPathError(f"unrecognized filter operator {operator}")


def _go_type(value) -> str:
    if isinstance(value, dict):
        return "map[string]interface {}"
    if value is NOTHING:
        return "<invalid Value>"
    return {bool: "bool", _Byte: "uint8", int: "int64", float: "float64", str: "string"}.get(type(value), "value")


def _go_value(value) -> str:
    return "<nil>" if value is None else printed(value)


# ---------------------------------------------------------------- printing

def printed(value) -> str:
    """One result as kubectl prints it: maps and lists as Go's compact JSON, scalars as Go's ``fmt.Print``."""
    if isinstance(value, (dict, list)):
        return go_json(value)
    if value is NOTHING:
        return "<no value>"
    constant = _go_constant(value)
    if constant is not None:
        return constant
    if isinstance(value, float):
        return go_float(value)
    return str(value)


def _go_constant(value) -> str | None:
    """nil and the booleans, which Go's fmt and encoding/json spell alike (None: ``value`` is neither)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return None


def go_json(value) -> str:
    """Go's ``json.Marshal``: compact, keys sorted, HTML characters escaped, Go's float form."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{_go_json_string(key)}:{go_json(value[key])}" for key in sorted(value)) + "}"
    if isinstance(value, list):
        return "[" + ",".join(go_json(item) for item in value) + "]"
    if isinstance(value, str):
        return _go_json_string(value)
    constant = _go_constant(value)
    if constant is not None:
        return constant
    if isinstance(value, float):
        return _go_json_float(value)
    return str(int(value))


def _go_json_string(text: str) -> str:
    out = ['"']
    for char in text:
        if char in SHORT_ESCAPES:
            out.append(SHORT_ESCAPES[char])
        elif char in HTML_ESCAPES:
            out.append(HTML_ESCAPES[char])
        elif ord(char) < 0x20:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def _digits(number: float) -> tuple[str, int, str]:
    """The shortest decimal digits of ``number``, where its point goes (digits before it), and its sign."""
    sign, digits, exponent = Decimal(repr(number)).normalize().as_tuple()
    text = "".join(str(digit) for digit in digits)
    return text, len(text) + exponent, "-" if sign else ""


def _exponent_form(digits: str, point: int, sign: str, minimum_exponent_digits: int = 2) -> str:
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    exponent = point - 1
    return f"{sign}{mantissa}e{'-' if exponent < 0 else '+'}{abs(exponent):0{minimum_exponent_digits}d}"


def _fixed_form(digits: str, point: int, sign: str) -> str:
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return f"{sign}{digits}{'0' * (point - len(digits))}"
    return f"{sign}{digits[:point]}.{digits[point:]}"


def go_float(number: float) -> str:
    """Go's ``%v`` of a float64: the shortest digits, in exponent form from 1e+06 up and below 1e-04."""
    if number == 0:
        return "-0" if str(number).startswith("-") else "0"
    digits, point, sign = _digits(number)
    if point - 1 < -4 or point - 1 >= 6:
        return _exponent_form(digits, point, sign)
    return _fixed_form(digits, point, sign)


def _go_json_float(number: float) -> str:
    """Go's JSON float64: fixed form from 1e-6 up to 1e21, exponent form outside (no leading zero in it)."""
    if number == 0:
        return "-0" if str(number).startswith("-") else "0"
    digits, point, sign = _digits(number)
    if abs(number) < 1e-6 or abs(number) >= 1e21:
        return _exponent_form(digits, point, sign, minimum_exponent_digits=1)
    return _fixed_form(digits, point, sign)
