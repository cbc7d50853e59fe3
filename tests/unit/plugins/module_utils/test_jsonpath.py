"""kubectl's JSONPath dialect, one rule per row (the differential test against the real kubectl is
tests/integration/test_jsonpath_differential.py)."""

from __future__ import annotations

import re

import pytest

from ansible_collections.phasekit.kube.plugins.module_utils.jsonpath import JSONPath, JSONPathError, go_float, go_json

NODES = {
    "kind": "List",
    "items": [
        {"kind": "None", "metadata": {"name": "127.0.0.1", "labels": {"kubernetes.io/hostname": "127.0.0.1"}},
         "status": {"capacity": {"cpu": "4"}, "ready": True,
                    "addresses": [{"type": "LegacyHostIP", "address": "127.0.0.1"}]}},
        {"kind": "None", "metadata": {"name": "127.0.0.2", "labels": {"kubernetes.io/hostname": "127.0.0.2"}},
         "status": {"capacity": {"cpu": "8"}, "ready": False,
                    "addresses": [{"type": "LegacyHostIP", "address": "127.0.0.2"},
                                  {"type": "another", "address": "127.0.0.3"}]}},
    ],
    "users": [{"name": "myself", "user": {}}, {"name": "e2e", "user": {"username": "admin", "password": "secret"}}],
}
TYPES = {"bools": [True, False, True, False], "integers": [1, 2, 3, 4], "floats": [1.0, 2.2, 3.3, 4.0],
         "strings": ["one", "two", "three", "four"], "interfaces": [True, "one", 1, 1.1],
         "maps": [{"name": "one", "value": 1}, {"name": "two", "value": 2.02}, {"name": "three", "value": 3.03},
                  {"name": "four", "value": 4.04}]}
POINTS = [{"id": "i1", "x": 4, "y": -5}, {"id": "i2", "x": -2, "y": -5, "z": 1}, {"id": "i3", "x": 8, "y": 3},
          {"id": "i4", "x": -6, "y": -1}, {"id": "i5", "x": 0, "y": 2, "z": 1}, {"id": "i6", "x": 1, "y": 4},
          {"id": "i7", "x": None, "y": 4}]


@pytest.mark.parametrize("template, data, expected", [
    ("hello jsonpath", None, "hello jsonpath"),
    ("{..}", [1, 2, 3], "[1,2,3]"),
    ("{[?(@<5)]}", [2, 6, 3, 7], "2 3"),
    ('{"{"}', None, "{"),
    ("{[1,3,4]}", [0, 1, 2, 3, 4], "1 3 4"),
    ("{[0:2]}", ["Monday", "Tudesday"], "Monday Tudesday"),
    ("{ .bools }", TYPES, "[true,false,true,false]"),
    ("{ .bools[-1] }", TYPES, "false"),
    ("{ .bools[:4:2] }", TYPES, "true true"),
    ("{ .floats }", TYPES, "[1,2.2,3.3,4]"),
    ("{ .floats[-2] }", TYPES, "3.3"),
    ("{ .interfaces }", TYPES, '[true,"one",1,1.1]'),
    ("{ .maps[-2] }", TYPES, '{"name":"three","value":3.03}'),
    ("{ .maps[1::2] }", TYPES, '{"name":"two","value":2.02} {"name":"four","value":4.04}'),
    ("{ .strings[:2] }", TYPES, "one two"),
    ("{[?(@.z)].id}", POINTS, "i2 i5"),
    ("{[0]['id']}", POINTS, "i1"),
    ("{[-1]['x']}", POINTS, "null"),
    ("{[?(@.x>=1)].id}", POINTS[:6], "i1 i3 i6"),
    ("{range .items[*]}{.metadata.name}, {end}{.kind}", NODES, "127.0.0.1, 127.0.0.2, List"),
    ('{range .items[*]}{.metadata.name}{"\\t"}{end}', NODES, "127.0.0.1\t127.0.0.2\t"),
    ("{.items[*].status.addresses[*].address}", NODES, "127.0.0.1 127.0.0.2 127.0.0.3"),
    ("{range .items[*]}{range .status.addresses[*]}{.address}, {end}{end}", NODES,
     "127.0.0.1, 127.0.0.2, 127.0.0.3, "),
    ("{.items[*]['metadata.name', 'status.capacity']}", NODES, '127.0.0.1 127.0.0.2 {"cpu":"4"} {"cpu":"8"}'),
    ('{.users[?(@.name=="e2e")].user.password}', NODES, "secret"),
    ("{.items[0].metadata.labels.kubernetes\\.io/hostname}", NODES, "127.0.0.1"),
    ('{.items[?(@.metadata.labels.kubernetes\\.io/hostname=="127.0.0.1")].kind}', NODES, "None"),
    ("{.items[?(@..ready==true)].metadata.name}", NODES, "127.0.0.1"),
    ("{..name}", {"b": {"name": "2"}, "a": {"name": "1"}}, "1 2"),
    ("{.a.*}", {"a": "hi"}, "104 105"),
    ("{.a.*}", {"a": {"y": 2, "x": 1}}, "1 2"),
    ("{@}", {"b": "<&>", "a": 0.5}, '{"a":0.5,"b":"\\u003c\\u0026\\u003e"}'),
    ("{.x}", {"x": 1234567.0}, "1.234567e+06"),
    ("{.x[0:0]}", {"x": [1]}, ""),
    ("{.missing}", {"x": 1}, ""),
    ("before-{.missing}after", {"x": 1}, "before-after"),
    ("{range .x[*]}{@}{end}", {"x": [None, 1]}, "<no value>1"),
    ("{.x..y}", {"x": {"y": 1, "z": {"y": 2}}}, "1 2"),
    ("{['a.b']}", {"a": {"b": "nested"}, "a.b": "flat"}, "nested"),
    ("{.x[?(@.n=='a b')].v}", {"x": [{"n": "a b", "v": 1}]}, "1"),
], ids=[
    "plain-text", "recursive-of-a-list-is-the-list", "filter-on-scalars", "quoted-brace", "union-of-indexes",
    "slice", "list-as-json", "negative-index", "slice-with-step", "floats-in-go-json", "float-as-go-prints-it",
    "mixed-list-as-json", "map-as-json", "slice-of-maps-with-step", "string-slice", "filter-exists",
    "bracket-key", "null-value", "filter-greater-equal", "range-then-text", "range-with-quoted-tab",
    "nested-wildcards", "nested-ranges", "union-of-bracket-paths", "filter-equal-string", "escaped-dot-in-key",
    "filter-on-escaped-key", "filter-on-recursive-field", "recursive-field-in-key-order",
    "wildcard-of-a-string-yields-its-bytes",
    "map-wildcard-in-key-order", "current-object-html-escaped-sorted", "large-float-in-exponent-form",
    "empty-slice", "missing-key-is-empty", "missing-key-in-text", "range-over-null-is-no-value",
    "recursive-after-field", "bracket-key-with-a-dot-is-a-path", "filter-with-space-in-quotes",
])
def test_templates_print_as_kubectl_does(template, data, expected):
    assert JSONPath(template).text(data) == expected


@pytest.mark.parametrize("template, message", [
    ("{.hello", "unclosed action"),
    ("{.a[1}", "unterminated array"),
    ("{.a[x]}", "invalid array index x"),
    ("{.a[?(@.b=='c']}", "unterminated filter"),
    ("{.a[?(@.b=='c')}", "unclosed array expect ]"),
    ("{'abc}", "unterminated quoted string"),
    ("{..*}", "unrecognized character in action: U+002A '*'"),
    ("{.a.....b}", "invalid multiple recursive descent"),
    ("{1.2.3}", "cannot parse number 1.2.3"),
    ('{"\\q"}', "invalid syntax"),
], ids=["unclosed-action", "unterminated-array", "invalid-index", "unterminated-filter",
        "unclosed-filter", "unterminated-quote", "recursive-wildcard", "double-recursive", "bad-number", "bad-escape"])
def test_templates_kubectl_refuses_to_parse(template, message):
    with pytest.raises(JSONPathError, match=re.escape(message)):
        JSONPath(template)


@pytest.mark.parametrize("template, data, message", [
    ("{hello}", {}, "unrecognized identifier hello"),
    ("{.a[0]}", {"a": {"b": 1}}, "map[string]interface {} is not array or slice"),
    ("{.a[*]}", {"a": {"b": 1}}, "map[string]interface {} is not array or slice"),
    ("{[?(@.x>=1)].id}", POINTS, "invalid type for comparison"),
    ("{.a[5]}", {"a": [1]}, "array index out of bounds: index 5, length 1"),
    ("{.a[2:1]}", {"a": [1, 2, 3]}, "starting index 2 is greater than ending index 1"),
    ("{.a[::0]}", {"a": [1, 2]}, "step must be > 0"),
    ("{range .a[*]}{@}{end}{end}", {"a": [1]}, "not in range, nothing to end"),
    ("{.a[?(@.x<>1)]}", {"a": [{"x": 1}]}, "unrecognized filter operator <>"),
    ("{.a[?(@.x==1)]}", {"a": [{"x": 1.5}]}, "incompatible types for comparison"),
    ("{.a[?(@.x<true)]}", {"a": [{"x": False}]}, "invalid type for comparison"),
    ("{.a[?(@.x==1)]}", {"a": [{"x": {"y": 1}}]}, "invalid type for comparison"),
    ("{.a[?(@.x[*]==1)]}", {"a": [{"x": [1, 2]}]}, "can only compare one element at a time"),
    ("{.a[?(@.x==1)]}", {"a": {"x": 1}}, "is not array or slice and cannot be filtered"),
], ids=["identifier", "index-on-a-map", "bracket-wildcard-is-a-slice", "null-does-not-compare",
        "index-out-of-bounds", "start-after-end", "zero-step", "end-outside-range",
        "unknown-operator", "int-and-float-do-not-compare", "bools-do-not-order", "maps-do-not-compare",
        "one-element-at-a-time", "filter-on-a-map"])
def test_evaluation_errors_as_kubectl_reports_them(template, data, message):
    with pytest.raises(JSONPathError, match=re.escape(message)):
        JSONPath(template).text(data)


def test_missing_keys_fail_when_not_allowed():
    assert JSONPath("{.a}", allow_missing_keys=True).find_results({}) == [[]]
    with pytest.raises(JSONPathError, match="^a is not found$"):
        JSONPath("{.a}", allow_missing_keys=False).find_results({})


def test_a_parsed_template_evaluates_again_and_again():
    template = JSONPath("{range .items[*]}{.n}{end}")
    assert [template.text({"items": [{"n": i}]}) for i in range(3)] == ["0", "1", "2"]


@pytest.mark.parametrize("number, shown, as_json", [
    (1234567.0, "1.234567e+06", "1234567"), (123456.0, "123456", "123456"), (1e20, "1e+20", "100000000000000000000"),
    (1e21, "1e+21", "1e+21"), (0.0001, "0.0001", "0.0001"), (0.00001, "1e-05", "0.00001"), (1e-7, "1e-07", "1e-7"),
    (2.5, "2.5", "2.5"), (100.0, "100", "100"), (0.0, "0", "0"),
], ids=["million", "below-a-million", "1e20", "1e21", "1e-4", "1e-5", "1e-7", "fraction", "whole", "zero"])
def test_floats_as_go_prints_them(number, shown, as_json):
    """Go's fmt %v and encoding/json forms (checked against a Go program)."""
    assert (go_float(number), go_json(number)) == (shown, as_json)
