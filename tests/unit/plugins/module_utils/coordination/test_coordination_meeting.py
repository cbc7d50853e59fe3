"""The meeting's rules, one row each: how a waiter judges the other slices (by its own clock, as client-go judges a
Lease), when a barrier is passed, the first verdict winning, facts (never secrets), clean-up by the last slice out;
against a small stand-in of the API server (server-side apply with one field manager per slice)."""

from __future__ import annotations

import json
from urllib.parse import unquote

import pytest

from ansible_collections.phasekit.kube.plugins.module_utils.coordination.meeting import (
    BARRIER_ANNOTATION, PLAN_LABEL, RUN_LABEL, Judgement, Meeting, MeetingError, MeetingFailed, MeetingSettings, Seen,
    Stopped, Verdict, judge, label_value, missing_slices, observe, verdict_of)
from ansible_collections.phasekit.kube.plugins.module_utils.coordination.slices import SliceError, SliceId
from ansible_collections.phasekit.kube.plugins.module_utils.kube.session import ApiError, Response

NS = "coord"
RUN = "awx-11"


class FakeServer:
    """ConfigMaps and Leases by path; server-side apply owning each data key per field manager (a key another manager
    owns with another value is refused with 409 unless forced; a key the manager applied before and leaves out is
    removed), GET, LIST by label selector, DELETE of one object or a collection."""

    def __init__(self):
        self.objects: dict[str, dict] = {}
        self.owners: dict[str, dict] = {}     # path -> data key -> manager
        self.version = 0
        self.server = "https://coordination.test"

    def request(self, method, path, *, query=None, body=None, content_type=None, attempts=None, accept=None):
        query = query or {}
        del content_type, attempts, accept
        if method == "PATCH":
            return Response(200, self._apply(path, body, query["fieldManager"], query.get("force") == "true"))
        if method == "GET" and path in self.objects:
            return Response(200, json.loads(json.dumps(self.objects[path])))
        if method == "GET" and path.endswith(("/leases", "/configmaps")):
            return Response(200, {"items": self._selected(path, query.get("labelSelector"))})
        if method == "DELETE" and path in self.objects:
            del self.objects[path]
            return Response(200, {})
        if method == "DELETE" and path.endswith("/configmaps"):
            for item in self._selected(path, query.get("labelSelector")):
                del self.objects[f"{path}/{item['metadata']['name']}"]
            return Response(200, {})
        raise ApiError(404, "NotFound", f"{unquote(path)} not found")

    def _selected(self, collection, selector):
        wanted = dict(pair.split("=") for pair in (selector or "").split(",") if pair)
        return [obj for path, obj in self.objects.items() if path.rsplit("/", 1)[0] == collection and
                all(obj["metadata"].get("labels", {}).get(k) == v for k, v in wanted.items())]

    def _apply(self, path, body, manager, force):
        found = self.objects.get(path)
        owners = self.owners.setdefault(path, {})
        data = dict((found or {}).get("data") or {})
        for key, value in (body.get("data") or {}).items():
            if owners.get(key, manager) != manager and data.get(key) != value and not force:
                raise ApiError(409, "Conflict", f"Apply failed with 1 conflict: conflict with \"{owners[key]}\": .data.{key}")
        for key in [key for key, owner in owners.items() if owner == manager and key not in (body.get("data") or {})]:
            data.pop(key, None)
            del owners[key]
        for key, value in (body.get("data") or {}).items():
            data[key] = value
            owners[key] = manager
        self.version += 1
        merged = {**(found or {}), **{k: v for k, v in body.items() if k != "data"},
                  "metadata": {**body["metadata"], "resourceVersion": str(self.version)}}
        if data:
            merged["data"] = data
        self.objects[path] = merged
        return merged


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def meeting(server, number, count=3, clock=None, **settings):
    clock = clock or Clock()
    values = {"namespace": NS, "run_id": RUN, "plan": "site", "lease_duration": 6, "arrival_timeout": 30.0,
              "poll": 0.5, **settings}
    return Meeting(server, SliceId(number, count), MeetingSettings(**values), clock=clock, sleep=clock.sleep,
                   identity=f"slice {number}/{count} on ctl pid {number}")


def seen(since, duration=6.0, gone=False, marker="m"):
    return Seen(marker=marker, since=since, duration=duration, holder="h", gone=gone)


# ---------------------------------------------------------------- the rules


@pytest.mark.parametrize("record, waited, expected", [
    (None, 10.0, Judgement()),
    (None, 30.0, Judgement(never=(2,))),
    (seen(since=95.0), 40.0, Judgement()),
    (seen(since=94.0), 40.0, Judgement()),
    (seen(since=93.9), 0.0, Judgement(dead=(2,))),
    (seen(since=99.0, gone=True), 0.0, Judgement(left=(2,))),
], ids=["never-seen-within-the-arrival-timeout-is-waited-for", "never-seen-after-the-arrival-timeout-never-started",
        "renewed-within-its-duration-is-working", "unchanged-exactly-its-duration-is-still-alive",
        "unchanged-longer-than-its-duration-is-dead", "a-lease-removed-after-being-seen-left"])
def test_a_waiter_judges_a_missing_slice_by_its_own_clock(record, waited, expected):
    found = {} if record is None else {2: record}
    assert judge([2], found, now=100.0, waited=waited, arrival_timeout=30.0) == expected


def test_only_missing_slices_are_judged():
    assert judge([], {2: seen(since=0.0)}, now=100.0, waited=99.0, arrival_timeout=1.0) == Judgement()


@pytest.mark.parametrize("before, leases, expected", [
    ({}, {2: ("a", 6.0, "h")}, {2: Seen("a", 50.0, 6.0, "h")}),
    ({2: Seen("a", 10.0, 6.0, "h")}, {2: ("a", 6.0, "h")}, {2: Seen("a", 10.0, 6.0, "h")}),
    ({2: Seen("a", 10.0, 6.0, "h")}, {2: ("b", 6.0, "h")}, {2: Seen("b", 50.0, 6.0, "h")}),
    ({2: Seen("a", 10.0, 6.0, "h")}, {}, {2: Seen("a", 10.0, 6.0, "h", gone=True)}),
    ({2: Seen("a", 10.0, 6.0, "h", gone=True)}, {2: ("a", 6.0, "h")}, {2: Seen("a", 50.0, 6.0, "h")}),
], ids=["a-new-lease-is-dated-now", "an-unchanged-record-keeps-its-date-and-ages",
        "a-renewal-seen-is-dated-now", "a-lease-no-longer-listed-is-gone", "a-lease-back-after-gone-is-dated-now"])
def test_a_look_dates_what_changed_as_client_go_does(before, leases, expected):
    assert observe(before, leases, now=50.0) == expected


@pytest.mark.parametrize("data, expected", [
    ({}, [1, 2, 3]),
    ({"slice-1": "{}", "slice-3": "{}"}, [2]),
    ({"slice-1": "{}", "slice-2": "{}", "slice-3": "{}", "verdict": "{}"}, []),
], ids=["nobody-arrived", "the-slice-without-its-key-is-missing", "every-slice-arrived"])
def test_a_barrier_is_passed_once_every_slice_arrived(data, expected):
    assert missing_slices(data, 3) == expected


@pytest.mark.parametrize("data, expected", [
    ({"slice-1": "{}"}, None),
    ({"verdict": json.dumps({"reason": "budget spent", "by": "2/3"})}, Verdict("b", "budget spent", "2/3")),
    ({"verdict": "stop now"}, Verdict("b", "stop now", "?")),
], ids=["no-verdict", "a-verdict-says-why-and-who", "a-hand-written-verdict-still-stops"])
def test_a_verdict_is_read_from_the_barrier(data, expected):
    assert verdict_of(data, "b") == expected


@pytest.mark.parametrize("plan, expected", [
    ("site", "site"), ("", "all"), ("my plan/v2", "my-plan-v2-"),
], ids=["a-label-value-stays", "no-plan-is-all", "anything-else-is-a-slug-and-a-digest"])
def test_the_plan_label(plan, expected):
    assert label_value(plan or "all").startswith(expected)


@pytest.mark.parametrize("settings, says", [
    ({"namespace": "Not_A_Namespace"}, "plan_coordination.namespace: 'Not_A_Namespace' is not a namespace name"),
    ({"run_id": "Run 1"}, "plan_run_id: 'Run 1' is not a run ID"),
    ({"lease_duration": 1}, "lease duration 1: expected whole seconds, at least 2"),
    ({"lease_duration": 2.5}, "lease duration 2.5: expected whole seconds"),
    ({"arrival_timeout": -1}, "arrival_timeout -1: expected seconds"),
    ({"poll": 0}, "poll 0: expected seconds"),
], ids=["a-namespace-name", "a-run-id", "a-lease-of-two-seconds-at-least", "whole-seconds", "no-negative-timeout",
        "a-poll-above-zero"])
def test_bad_settings_are_named(settings, says):
    with pytest.raises((MeetingError, SliceError)) as raised:
        MeetingSettings(**{"namespace": NS, "run_id": RUN, **settings})
    assert says in str(raised.value)


# ---------------------------------------------------------------- against the stand-in


def test_slices_pass_a_barrier_once_all_arrived_and_the_objects_say_whose_run():
    server = FakeServer()
    slices = [meeting(server, number) for number in (1, 2, 3)]
    for each in slices:
        each.arrive("phase-a")
    assert all(each.wait("phase-a") == 0.0 for each in slices)
    configmap = server.objects[f"/api/v1/namespaces/{NS}/configmaps/{slices[0].barrier_name('phase-a')}"]
    assert configmap["metadata"]["annotations"][BARRIER_ANNOTATION] == "phase-a"
    assert configmap["metadata"]["labels"][RUN_LABEL] == RUN and configmap["metadata"]["labels"][PLAN_LABEL] == "site"
    assert sorted(configmap["data"]) == ["slice-1", "slice-2", "slice-3"]
    assert slices[0].requests == 2   # one apply, one read


def test_a_second_arrival_at_one_barrier_writes_nothing():
    server = FakeServer()
    first = meeting(server, 1, count=1)
    first.arrive("a")
    first.arrive("a")
    assert first.requests == 1


def test_a_slice_that_stops_renewing_is_named_with_where_it_stopped():
    server, clock = FakeServer(), Clock()
    first, second = meeting(server, 1, count=2, clock=clock), meeting(server, 2, count=2, clock=clock)
    second._renew(attempts=None)   # pylint: disable=protected-access  # its Lease, never renewed again
    for each in (first, second):
        each.arrive("a")
    first.wait("a")
    with pytest.raises(MeetingFailed) as failed:
        first.wait("b")
    assert failed.value.slices == ("2/2",)
    message = str(failed.value)
    assert "slice 2/2 stopped renewing its presence" in message and "held by 'slice 2/2 on ctl pid 2'" in message
    assert "died or was cancelled after barrier 'a', before arriving at 'b'" in message
    assert 6.0 < clock.now - 1000.0 <= 6.0 + 6.0 / 4 + 0.5 + 1e-9   # named within its lease and one look


def test_a_slice_that_left_is_named_at_the_next_look():
    server, clock = FakeServer(), Clock()
    first, second = meeting(server, 1, count=2, clock=clock), meeting(server, 2, count=2, clock=clock)
    second._renew(attempts=None)   # pylint: disable=protected-access
    first._look(clock())           # pylint: disable=protected-access  # seen once
    second.finish()
    with pytest.raises(MeetingFailed, match=r"slice 2/2 left the run \(its presence Lease coord/phasekit-slices-"
                                            r"awx-11-slice-2 was removed: it finished or was cancelled\) before "
                                            r"arriving at its first barrier 'a'"):
        first.wait("a")


def test_a_slice_that_arrived_then_finished_between_two_reads_did_not_leave_early():
    # slice 2 arrives at 'a' and finishes (its Lease removed) after slice 1 read the barrier, before it looked at
    # the Leases: slice 1 reads the barrier again before naming anyone, and passes
    server, clock = FakeServer(), Clock()
    first, second = meeting(server, 1, count=2, clock=clock), meeting(server, 2, count=2, clock=clock)
    for each in (first, second):
        each._renew(attempts=None)   # pylint: disable=protected-access
    first._look(clock())           # pylint: disable=protected-access  # seen once
    answer = server.request

    def request(method, path, **kwargs):
        if method == "GET" and path.endswith("/leases") and second.slice.number not in finished:
            finished.append(second.slice.number)
            second.arrive("a")
            second.finish()
        return answer(method, path, **kwargs)
    finished: list = []
    server.request = request
    assert first.wait("a") >= 0.0
    assert finished == [2]


def test_a_slice_never_started_fails_the_others_after_the_arrival_timeout_saying_what_capacity_is_needed():
    server, clock = FakeServer(), Clock()
    first = meeting(server, 1, count=3, clock=clock, arrival_timeout=10.0)
    with pytest.raises(MeetingFailed) as failed:
        first.wait("a")
    assert failed.value.slices == ("2/3", "3/3")
    assert "slice(s) 2/3, 3/3 never started: no presence Lease in namespace coord within arrival_timeout (10s)" \
        in str(failed.value)
    assert "capacity for 3 jobs at once" in str(failed.value)
    assert 10.0 <= clock.now - 1000.0 < 12.0


def test_the_first_verdict_wins_and_reaches_every_slice_at_that_barrier():
    server = FakeServer()
    slices = [meeting(server, number) for number in (1, 2, 3)]
    slices[1].stop("failure budget spent in batch 2", "rollout-batch-2")
    slices[2].stop("another reason", "rollout-batch-2")   # too late: 409, arrives only
    for each in slices:
        with pytest.raises(Stopped) as stopped:
            each.wait("rollout-batch-2")
        assert stopped.value.verdict == Verdict("rollout-batch-2", "failure budget spent in batch 2", "2/3")
    assert "stopped at barrier 'rollout-batch-2' by slice 2/3: failure budget spent in batch 2" in str(stopped.value)


def test_facts_every_slice_published_are_read_by_slice_and_earlier_facts_stay():
    server = FakeServer()
    first, second = meeting(server, 1, count=2), meeting(server, 2, count=2)
    first.publish("hosts", ["c1", "c3"])
    second.publish("hosts", ["c2"])
    first.publish("failed-deploy-2", 1)
    assert first.read("hosts") == {1: ["c1", "c3"], 2: ["c2"]}
    assert second.read("failed-deploy-2") == {1: 1}
    assert second.read("absent") == {}


@pytest.mark.parametrize("key, value, secret, says", [
    ("token", "s3cr3t", True, "fact 'token': refused: its value is marked secret"),
    ("a.b", 1, False, "fact 'a.b': a fact's key is 1 to 100 letters"),
    ("hosts", {1, 2}, False, "fact 'hosts': its value is not JSON"),
    ("hosts", float("nan"), False, "fact 'hosts': its value is not JSON"),
    ("hosts", "x" * 300000, False, "more than the 262144 a fact may have"),
], ids=["a-secret-is-refused", "a-key-with-a-dot", "not-json", "nan-is-not-json", "too-large"])
def test_a_fact_refused_is_named_and_nothing_is_written(key, value, secret, says):
    server = FakeServer()
    with pytest.raises(MeetingError) as refused:
        meeting(server, 1).publish(key, value, secret=secret)
    assert says in str(refused.value) and "s3cr3t" not in str(refused.value)
    assert not server.objects


def test_the_last_slice_out_removes_the_runs_objects():
    server = FakeServer()
    first, second = meeting(server, 1, count=2), meeting(server, 2, count=2)
    for each in (first, second):
        each._renew(attempts=None)   # pylint: disable=protected-access
        each.arrive("a")
        each.publish("hosts", [])
    assert first.finish() is False             # the other slice is still there
    assert second.finish() is True
    assert not server.objects, server.objects


def test_a_refusal_of_the_coordination_cluster_is_a_clear_error():
    class Forbidden(FakeServer):
        def request(self, method, path, **kwargs):
            raise ApiError(403, "Forbidden", 'configmaps is forbidden: User "bob" cannot patch resource "configmaps"')
    with pytest.raises(MeetingError, match=r"^run awx-11: slice 1/3: coordination cluster https://coordination.test: "
                                           r"PATCH .*: forbidden: configmaps is forbidden: User \"bob\""):
        meeting(Forbidden(), 1).arrive("a")


def test_two_plans_under_one_run_id_are_refused_by_name():
    class Labelled(FakeServer):
        def request(self, method, path, **kwargs):
            raise ApiError(409, "Conflict", 'Apply failed with 1 conflict: conflict with "phasekit-slice-1": '
                                            '.metadata.labels.phasekit.kube/plan')
    with pytest.raises(MeetingError, match=r"^run awx-11: slice 2/3: another slice of this run ID runs another plan "
                                           r"than 'site' \(label phasekit.kube/plan of phasekit-slices-awx-11-barrier-"):
        meeting(Labelled(), 2).arrive("a")


def test_a_stop_at_a_barrier_already_passed_is_refused():
    server = FakeServer()
    alone = meeting(server, 1, count=1)
    alone.wait("a")
    with pytest.raises(MeetingError, match=r"cannot stop the run at barrier 'a': every slice passed it already"):
        alone.stop("too late", "a")
