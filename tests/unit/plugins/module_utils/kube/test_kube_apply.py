"""Apply options and the engine's small decisions (the engine itself is tested on real clusters)."""

from __future__ import annotations

import pytest

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kube import apply as engine
from ansible_collections.phasekit.kube.plugins.module_utils.kube.apply import (
    APPLY_OPTIONS_SPEC, apply_options, parse_wait_option)


def args(**overrides):
    values = {name: spec.get("default") for name, spec in APPLY_OPTIONS_SPEC.items()}
    values.update(overrides)
    return values


@pytest.mark.parametrize("value, timeout", [
    (True, 300), ("yes", 300), ({}, 300), ({"timeout": 20}, 20), ({"timeout": "45"}, 45),
], ids=["true", "yes-string", "empty-dict", "timeout", "timeout-as-text"])
def test_wait_option_enables_waiting(value, timeout):
    assert parse_wait_option(value).timeout == timeout


@pytest.mark.parametrize("value", [False, None, "no"], ids=["false", "none", "no-string"])
def test_wait_option_disables_waiting(value):
    assert parse_wait_option(value) is None


@pytest.mark.parametrize("value, message", [
    ({"timout": 3}, "wait: unknown option(s) timout"),
    (["x"], "wait must be true, false or a dictionary"),
    ({"kinds": {"Deployment": "maybe"}}, "wait.kinds.Deployment must be one of kstatus, none"),
], ids=["typo", "list", "bad-kind-mode"])
def test_wait_option_errors(value, message):
    with pytest.raises(PhasekitError) as err:
        parse_wait_option(value)
    assert message in str(err.value)


def test_apply_options_from_args():
    options = apply_options(args(prune=True, applyset="web", wait={"timeout": 9}), namespace="site",
                            check_mode=True, diff=True)
    assert (options.namespace, options.prune, options.applyset, options.dry_run, options.diff) == \
        ("site", True, "web", True, True)
    assert options.field_manager == "phasekit" and options.applyset_tooling == "phasekit.kube/0.1.0"
    assert options.wait.timeout == 9


@pytest.mark.parametrize("overrides, message", [
    ({"concurrency": 0}, "concurrency must be between 1 and 64"),
    ({"field_manager": ""}, "field_manager must not be empty"),
], ids=["concurrency", "field-manager"])
def test_apply_options_errors(overrides, message):
    with pytest.raises(PhasekitError, match=message):
        apply_options(args(**overrides), namespace="default")


def entry(time):
    return {"apiVersion": "v1", "metadata": {"managedFields": [
        {"manager": "phasekit", "operation": "Apply", "apiVersion": "v1", "time": time}]}}


@pytest.mark.parametrize("stamp, date, action", [
    ("2024-01-01T12:00:00Z", "Mon, 01 Jan 2024 12:00:01 GMT", "configured"),
    ("2024-01-01T11:00:00Z", "Mon, 01 Jan 2024 12:00:01 GMT", "unchanged"),
    ("2024-01-01T11:00:00Z", None, "configured"),
], ids=["stamped-now", "stamped-earlier", "no-date-header"])
def test_action_without_readable_prior_state(stamp, date, action):
    headers = {"Date": date} if date else {}
    assert engine._action_from_timestamps(entry(stamp), "phasekit", headers) == action  # pylint: disable=protected-access


def test_dry_run_answer_equal_to_live_is_unchanged():
    live = {"metadata": {"resourceVersion": "5", "generation": 1, "managedFields": [{"time": "a"}]}, "data": {"k": 1}}
    same = {"metadata": {"resourceVersion": "5", "generation": 2, "managedFields": [{"time": "b"}]}, "data": {"k": 1}}
    other = {**same, "data": {"k": 2}}
    assert engine._same_content(live, same)  # pylint: disable=protected-access
    assert not engine._same_content(live, other)  # pylint: disable=protected-access


def test_kinds_take_turns_within_a_wave():
    class One:  # the two attributes interleave_kinds reads
        def __init__(self, kind, name):
            self.resource = type("R", (), {"group": "", "kind": kind})()
            self.name = name

    members = [One("Widget", "w1"), One("Widget", "w2"), One("Widget", "w3"), One("Service", "s1"),
               One("Deployment", "d1"), One("Service", "s2")]
    assert [m.name for m in engine.interleave_kinds(members)] == ["w1", "s1", "d1", "w2", "s2", "w3"]


@pytest.mark.parametrize("lanes, items", [(3, 20), (1, 5), (8, 2), (4, 0)], ids=["three", "one", "more-lanes", "none"])
def test_in_lanes_keeps_a_clusters_requests_in_flight_within_its_lanes(lanes, items):
    """A fleet phase shares one big pool; one cluster's writes still take at most ``lanes`` threads."""
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor
    expected = min(lanes, items)
    lock, in_flight, highest, done = threading.Lock(), [0], [0], []
    all_lanes_busy = threading.Barrier(expected) if expected else None

    def work(item):
        with lock:
            in_flight[0] += 1
            highest[0] = max(highest[0], in_flight[0])
        if item < expected:
            all_lanes_busy.wait(timeout=10)  # the first items meet: that many lanes run at once
        time.sleep(0.001)
        with lock:
            in_flight[0] -= 1
            done.append(item)

    with ThreadPoolExecutor(16) as pool:
        engine.in_lanes(pool, work, list(range(items)), lanes)
    assert sorted(done) == list(range(items))
    assert highest[0] == expected
