"""Values remembered for the process: made once per key, a failure kept and said to every asker."""

from __future__ import annotations

import pytest

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.memo import Memo, made_once


def test_a_value_is_made_once_per_key():
    memo, made = Memo(), []
    first = memo.get_or_make("a", lambda: made.append("a") or 1)
    again = memo.get_or_make("a", lambda: made.append("a again") or 2)
    assert (first, again, made, len(memo)) == (1, 1, ["a"], 1)


def test_a_forgotten_key_is_made_again_and_clear_forgets_all():
    memo = Memo()
    memo.put("a", 1)
    memo.put("b", 2)
    memo.forget("a")
    assert (memo.get("a"), memo.get("b")) == (None, 2)
    memo.clear()
    assert len(memo) == 0


def test_a_failure_is_made_once_and_raised_to_every_asker():
    values, calls = {}, []

    def broken():
        calls.append(1)
        raise PhasekitError("chart x: no Chart.yaml")

    for _asker in range(3):
        with pytest.raises(PhasekitError, match="no Chart.yaml"):
            made_once(values, "x", broken)
    assert len(calls) == 1


def test_another_error_is_not_kept():
    values = {}
    with pytest.raises(ValueError):
        made_once(values, "x", lambda: int("not a number"))
    assert made_once(values, "x", lambda: 5) == 5
