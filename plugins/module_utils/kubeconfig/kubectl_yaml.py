# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Read YAML the way kubectl reads a kubeconfig.

kubectl converts YAML to JSON with go-yaml v2 (YAML 1.1) before decoding. Its
plain-scalar rules differ from PyYAML's in a few places that decide whether a
file loads at all (``y`` and ``n`` are booleans, ``1e3`` is a number, dates
stay strings), so the scalar resolver here follows go-yaml v2. Only the first
document of a stream is used, map keys become strings, and error messages carry
a position but never the offending text (it may be a token).
"""

from __future__ import annotations

import datetime
import functools
import math
import re
import struct

from ansible_collections.phasekit.kube.plugins.module_utils import yaml_io
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError

_STR_TAG = "tag:yaml.org,2002:str"
_BOOL_TAG = "tag:yaml.org,2002:bool"
_INT_TAG = "tag:yaml.org,2002:int"
_FLOAT_TAG = "tag:yaml.org,2002:float"
_NULL_TAG = "tag:yaml.org,2002:null"
_MERGE_TAG = "tag:yaml.org,2002:merge"

_BOOLEANS = {word: True for word in "y Y yes Yes YES true True TRUE on On ON".split()}
_BOOLEANS.update({word: False for word in "n N no No NO false False FALSE off Off OFF".split()})
_NULLS = {"", "~", "null", "Null", "NULL"}
_SPECIAL_FLOATS = {
    **{word: math.nan for word in (".nan", ".NaN", ".NAN")},
    **{word: math.inf for word in (".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF")},
    **{word: -math.inf for word in ("-.inf", "-.Inf", "-.INF")},
}
_YAML_STYLE_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")
_DOT_FLOAT = re.compile(r"^\.[0-9]+([eE][-+]?[0-9]+)?$")
_TIMESTAMP = re.compile(
    r"^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}"
    r"(([Tt][0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(\.[0-9]+)?(Z|[-+][0-9]{2}:[0-9]{2}))"
    r"|( [0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(\.[0-9]+)?))?$")
_INT_DIGITS = {"0x": (16, "0123456789abcdefABCDEF"), "0o": (8, "01234567"), "0b": (2, "01")}
_INT64 = (-(1 << 63), (1 << 63) - 1)
_UINT64_MAX = (1 << 64) - 1


def _go_parse_int(text: str) -> int | None:
    """strconv.ParseInt(text, 0, 64), then ParseUint: sign, 0x/0o/0b prefixes, leading-0 octal."""
    sign, digits = 1, text
    if digits[:1] in "+-" and digits:
        sign, digits = (-1 if digits[0] == "-" else 1), digits[1:]
    if not digits:
        return None
    base, alphabet = 10, "0123456789"
    prefix = digits[:2].lower()
    if prefix in _INT_DIGITS:
        base, alphabet = _INT_DIGITS[prefix]
        digits = digits[2:]
    elif len(digits) > 1 and digits[0] == "0":
        base, alphabet = 8, "01234567"
        digits = digits[1:]
    if not digits or any(char not in alphabet for char in digits):
        return None
    value = sign * int(digits, base)
    if _INT64[0] <= value <= _INT64[1]:
        return value
    if text[:1] != "+" and sign > 0 and value <= _UINT64_MAX:
        return value
    return None


def _go_parse_float(text: str) -> float | None:
    """A float go-yaml accepts; values that overflow stay strings, as there."""
    value = float(text)
    return None if math.isinf(value) else value


def resolve_plain_scalar(text: str) -> tuple[str, object]:
    """The tag and value go-yaml v2 gives an untagged plain scalar."""
    if text in _BOOLEANS:
        return _BOOL_TAG, _BOOLEANS[text]
    if text in _NULLS:
        return _NULL_TAG, None
    if text in _SPECIAL_FLOATS:
        return _FLOAT_TAG, _SPECIAL_FLOATS[text]
    if text == "<<":
        return _MERGE_TAG, text
    first = text[0]
    if first == "." and _DOT_FLOAT.match(text):
        value = _go_parse_float(text)
        if value is not None:
            return _FLOAT_TAG, value
    elif first in "+-0123456789":
        if _TIMESTAMP.match(text):
            return _STR_TAG, text  # go-yaml keeps timestamps as strings when decoding untyped data
        plain = text.replace("_", "")
        integer = _go_parse_int(plain)
        if integer is not None:
            return _INT_TAG, integer
        if _YAML_STYLE_FLOAT.match(plain):
            value = _go_parse_float(plain)
            if value is not None:
                return _FLOAT_TAG, value
    return _STR_TAG, text


@functools.cache
def _kubectl_loader_class() -> type:
    """A safe loader whose plain scalars resolve as in go-yaml v2.

    Built on first use: the base class exists only when PyYAML is installed,
    which the sanity import test does not guarantee.
    """

    class KubectlYAMLLoader(yaml_io.safe_loader_class()):  # pylint: disable=too-many-ancestors
        def resolve(self, kind, value, implicit):
            if kind is yaml_io.ScalarNode and implicit[0]:
                return resolve_plain_scalar(value)[0]
            return super().resolve(kind, value, implicit)

        def construct_mapping(self, node, deep=False):
            # keys become JSON strings here, before 1 and true (equal in Python) could collide
            if isinstance(node, yaml_io.MappingNode):
                self.flatten_mapping(node)
            mapping = {}
            for key_node, value_node in node.value:
                key = _json_key(self.construct_object(key_node, deep=True), f"line {key_node.start_mark.line + 1}")
                mapping[key] = self.construct_object(value_node, deep=deep)
            return mapping

        def construct_go_scalar(self, node):
            if node.style is None or node.style == "":  # plain: the resolver decided
                return resolve_plain_scalar(node.value)[1]
            return self.construct_scalar(node)

    for tag in (_BOOL_TAG, _INT_TAG, _FLOAT_TAG, _NULL_TAG):
        KubectlYAMLLoader.add_constructor(tag, KubectlYAMLLoader.construct_go_scalar)
    return KubectlYAMLLoader


def load_kubectl_yaml(data: bytes | str):
    """Parse the first YAML document of ``data`` into JSON-compatible Python data.

    Raises PhasekitError with the line and column of a syntax error; the message
    never quotes the document.
    """
    loader = _kubectl_loader_class()(data)
    try:
        document = loader.get_data() if loader.check_data() else None
    except RecursionError:
        raise PhasekitError("invalid YAML: nested too deeply") from None
    except yaml_io.MarkedYAMLError as exc:
        raise PhasekitError(_describe_yaml_error(exc)) from None
    except yaml_io.YAMLError as exc:
        if type(exc).__name__ == "ReaderError":  # the reader refuses control bytes and invalid UTF-8
            raise PhasekitError("not a kubeconfig: the content is not text (binary data?)") from None
        raise PhasekitError(f"invalid YAML: {type(exc).__name__}") from None
    finally:
        loader.dispose()
    yaml_io.check_structure(document, "kubeconfig")
    return to_json_compatible(document, "")


def _describe_yaml_error(exc: yaml_io.MarkedYAMLError) -> str:
    mark = exc.problem_mark or exc.context_mark
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    return f"invalid YAML{where}: {yaml_io.yaml_problem(exc)}"


def to_json_compatible(value, path: str):
    """What a YAML value becomes after kubectl's YAML-to-JSON step (keys are strings)."""
    if isinstance(value, dict):
        return {_json_key(key, path): to_json_compatible(item, f"{path}.{key}" if path else str(key))
                for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json_compatible(item, f"{path}[{index}]") for index, item in enumerate(value)]
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise PhasekitError(f"{path or 'document'}: NaN and infinity cannot be represented in JSON")
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    if isinstance(value, set):
        return {_json_key(key, path): None for key in value}
    raise PhasekitError(f"{path or 'document'}: unsupported YAML value of type {type(value).__name__}")


def _json_key(key, path: str) -> str:
    """Map keys as sigs.k8s.io/yaml turns them into JSON object keys."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        return str(key)
    if isinstance(key, float):
        return _go_float32_text(key)
    raise PhasekitError(f"{path or 'document'}: unsupported map key of type {type(key).__name__}")


def _go_float32_text(value: float) -> str:
    """strconv.FormatFloat(value, 'g', -1, 32), as used for float map keys."""
    if math.isnan(value):
        return ".nan"
    if math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    single = struct.unpack("f", struct.pack("f", value))[0]
    for digits in range(1, 10):
        text = f"{single:.{digits}e}"
        if struct.unpack("f", struct.pack("f", float(text)))[0] == single:
            break
    mantissa, exponent = text.split("e")
    exponent_value = int(exponent)
    mantissa = mantissa.rstrip("0").rstrip(".") if "." in mantissa else mantissa
    if exponent_value < -4 or exponent_value >= 6:
        return f"{mantissa}e{'+' if exponent_value >= 0 else '-'}{abs(exponent_value):02d}"
    return repr(float(f"{mantissa}e{exponent_value}")).removesuffix(".0")
