# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Tables shown as plain lines on the controller's screen, or returned when the stdout callback prints JSON."""

from __future__ import annotations

import pytest

from ansible_collections.phasekit.kube.plugins.action.plan_summary import tail_message
from ansible_collections.phasekit.kube.plugins.plugin_utils import output


@pytest.mark.parametrize("callback, json", [
    ("default", False),
    ("ansible.builtin.default", False),
    ("awx_display", False),
    ("community.general.yaml", False),
    ("json", True),
    ("ansible.posix.json", True),
    ("ansible.posix.jsonl", True),
], ids=["default", "default-by-fqcn", "ansible-runner", "yaml", "json", "posix-json", "posix-jsonl"])
def test_prints_json(callback, json):
    assert output.prints_json(callback) is json


class Shown:
    def __init__(self):
        self.lines = []

    def display(self, line):
        self.lines.append(line)


@pytest.mark.parametrize("callback, lines, shown, result", [
    ("default", ["PHASE  RESULT", "a      ok"], ["PHASE  RESULT", "a      ok"], {}),
    ("default", ["# one\n---\nkind: X", ""], ["# one", "---", "kind: X", ""], {}),
    ("ansible.posix.json", ["PHASE  RESULT"], [], {"lines": ["PHASE  RESULT"]}),
], ids=["each-line-shown-as-it-is", "text-of-several-lines-one-line-each", "json-callback-gets-the-lines-in-result"])
def test_show_lines(monkeypatch, callback, lines, shown, result):
    screen = Shown()
    monkeypatch.setattr(output, "display", screen)
    monkeypatch.setattr(output, "stdout_callback", lambda: callback)
    assert output.show_lines(lines) == result
    assert screen.lines == shown


@pytest.mark.parametrize("tail, expected", [
    ([], {}),
    (["", "plan p: rollout of phase a paused"], {"msg": "plan p: rollout of phase a paused"}),
    (["", "a on b: differs: x", "plan p: 1 phase run(s) differ", ""], {"msg": "plan p: 1 phase run(s) differ"}),
], ids=["no-tail-no-msg", "the-stop-message", "the-drift-gate-verdict-last"])
def test_tail_message(tail, expected):
    assert tail_message(tail) == expected
