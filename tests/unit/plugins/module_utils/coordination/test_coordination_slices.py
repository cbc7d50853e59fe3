"""A slice's identity (``k/N``), the hosts AWX deals it, and run IDs: one row per rule."""

from __future__ import annotations

import pytest

from ansible_collections.phasekit.kube.plugins.module_utils.coordination.slices import (
    SliceError, SliceId, check_run_id, slice_hosts)


@pytest.mark.parametrize("text, expected", [
    ("2/3", SliceId(2, 3)),
    (" 1 / 1 ", SliceId(1, 1)),
    ("3/3", SliceId(3, 3)),
], ids=["k-of-n", "spaces-around-the-numbers", "the-last-slice"])
def test_a_slice_is_parsed_from_k_of_n(text, expected):
    assert SliceId.parse(text) == expected
    assert str(expected) == text.replace(" ", "")


@pytest.mark.parametrize("value, says", [
    ("0/3", "'0/3': the slice k must be from 1 to N (3)"),
    ("4/3", "'4/3': the slice k must be from 1 to N (3)"),
    ("1/0", "'1/0': the count of slices N must be 1 or more"),
    ("a/b", "'a/b' is not 'k/N'"),
    ("2", "'2' is not 'k/N'"),
    ("-1/3", "'-1/3' is not 'k/N'"),
    (3, "expected a string 'k/N'"),
    (None, "expected a string 'k/N'"),
], ids=["slice-zero", "slice-past-the-count", "count-zero", "not-numbers", "no-count", "negative", "a-number",
        "nothing"])
def test_a_bad_slice_is_named_with_what_was_expected(value, says):
    with pytest.raises(SliceError) as raised:
        SliceId.parse(value)
    assert str(raised.value).startswith("plan_slice: ")
    assert says in str(raised.value)


@pytest.mark.parametrize("number, count", [(0, 3), (4, 3), (1, 0), (True, 2)],
                         ids=["number-zero", "number-past-count", "count-zero", "a-bool-is-no-number"])
def test_a_slice_made_in_code_is_checked_too(number, count):
    with pytest.raises(SliceError):
        SliceId(number, count)


# AWX's own examples: awx/main/tests/functional/models/test_inventory.py:65-69 (host0..host2 in 3 slices, one each),
# test_unified_job.py:272-274 (a 4th host, remainder_foo, makes the slices 2, 1, 1)
@pytest.mark.parametrize("hosts, count, expected", [
    (["host0", "host1", "host2"], 3, [["host0"], ["host1"], ["host2"]]),
    (["host0", "host1", "host2", "remainder_foo"], 3, [["host0", "remainder_foo"], ["host1"], ["host2"]]),
    (["c", "a", "e", "b", "d"], 2, [["a", "c", "e"], ["b", "d"]]),
    (["b", "a"], 1, [["a", "b"]]),
    (["a", "b"], 3, [["a"], ["b"], []]),
], ids=["awx-example-one-host-each", "awx-example-the-first-slice-takes-the-remainder",
        "sorted-by-name-then-dealt-round-robin", "one-slice-gets-every-host-sorted", "more-slices-than-hosts"])
def test_hosts_are_dealt_as_awx_deals_them(hosts, count, expected):
    assert [slice_hosts(hosts, number, count) for number in range(1, count + 1)] == expected
    dealt = [host for number in range(1, count + 1) for host in slice_hosts(hosts, number, count)]
    assert sorted(dealt) == sorted(hosts)   # every host in exactly one slice


def test_slice_number_zero_is_not_sliced():
    assert slice_hosts(["b", "a"], 0, 3) == ["a", "b"]


@pytest.mark.parametrize("run_id, good", [
    ("awx-11", True), ("20261128t0840z-3fa2", True), ("a", True), ("A-1", False), ("-a", False), ("a-", False),
    ("a" * 41, False), ("a.b", False), (11, False),
], ids=["awx", "a-run-stamp", "one-character", "uppercase", "leading-dash", "trailing-dash", "too-long", "a-dot",
        "a-number"])
def test_a_run_id_names_objects_and_labels(run_id, good):
    if good:
        assert check_run_id(run_id) == run_id
    else:
        with pytest.raises(SliceError, match=r"^plan_run_id: .* is not a run ID: 1 to 40 lowercase"):
            check_run_id(run_id)
