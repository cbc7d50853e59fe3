"""Waiting: options validated, conditions evaluated, all objects polled together, reasons on timeout."""

from __future__ import annotations

import pytest

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kube import session as waiting_session
from ansible_collections.phasekit.kube.plugins.module_utils.kube import wait as waiting
from ansible_collections.phasekit.kube.plugins.module_utils.kube.discovery import ResourceType
from ansible_collections.phasekit.kube.plugins.module_utils.kube.live import Target
from ansible_collections.phasekit.kube.plugins.module_utils.kube.wait import (
    WaitRules, evaluate, not_ready_message, wait_for, wait_rules, waiting_summary)

DEPLOYMENT = ResourceType("apps", "v1", "Deployment", "deployments", True)
WIDGET = ResourceType("example.com", "v1", "Widget", "widgets", True)
JOB = ResourceType("batch", "v1", "Job", "jobs", True)


def deployment(ready):
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "generation": 1},
            "spec": {"replicas": 1},
            "status": {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "readyReplicas": ready,
                       "availableReplicas": ready, "conditions": [
                           {"type": "Available", "status": "True" if ready else "False"},
                           {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"}]}}


def widget(phase):
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "status": {"phase": phase}}


@pytest.mark.parametrize("options, message", [
    ({"timeout": -1}, "timeout must be a number of seconds >= 0"),
    ({"timeout": "soon"}, "timeout must be a number"),
    ({"kinds": {"Deployment": "ready"}}, "kinds.Deployment must be one of kstatus, none"),
    ({"conditions": [{"value": 1}]}, "conditions[1] needs one of 'path' (a JMESPath expression) and 'jsonpath'"),
    ({"conditions": [{"path": "status.phase", "jsonpath": "{.status.phase}"}]}, "conditions[1] needs one of"),
    ({"conditions": [{"path": "status.phase", "equals": 1}]}, "unknown option(s) equals"),
    ({"conditions": [{"path": "status[?"}]}, "is not valid JMESPath"),
    ({"conditions": [{"jsonpath": "{.status[?(@.x=='a'}"}]},
     "conditions[1].jsonpath \"{.status[?(@.x=='a'}\" is not valid kubectl JSONPath: unterminated filter"),
    ({"poll_interval": 0}, "poll_interval must be a number of seconds > 0"),
], ids=["negative-timeout", "timeout-not-a-number", "unknown-readiness", "condition-without-path",
        "condition-with-both-paths", "condition-unknown-key", "bad-jmespath", "bad-jsonpath", "poll-interval-zero"])
def test_wait_options_are_validated(options, message):
    with pytest.raises(PhasekitError) as err:
        wait_rules(options)
    assert message in str(err.value)


@pytest.mark.parametrize("conditions, kinds, live, status, message", [
    ([], {}, widget("Pending"), "Current", "Resource is current"),
    ([{"path": "status.phase", "value": "Ready"}], {}, widget("Pending"), "InProgress",
     "status.phase is 'Pending', expected 'Ready'"),
    ([{"path": "status.phase", "value": "Ready"}], {}, widget("Ready"), "Current", ""),
    ([{"path": "status.phase", "value": "Ready", "kind": "Deployment"}], {}, widget("Pending"), "Current", ""),
    ([{"path": "status.phase", "value": "Ready", "name": "other"}], {}, widget("Pending"), "Current", ""),
    ([{"path": "status.missing"}], {}, widget("Ready"), "InProgress", "expected a true value"),
    ([{"path": "status.ok", "value": True}], {}, {**widget("x"), "status": {"ok": "True"}}, "Current", ""),
    ([], {"Widget.example.com": "none"}, {**widget("x"), "status": {"conditions": [
        {"type": "Ready", "status": "False"}]}}, "Current", "readiness not checked"),
    ([], {}, None, "NotFound", "object not found"),
    ([{"jsonpath": "{.status.conditions[?(@.type=='Available')].status}", "value": "True"}], {},
     {**widget("x"), "status": {"conditions": [{"type": "Available", "status": "True"}]}}, "Current", ""),
    ([{"jsonpath": "{.status.conditions[?(@.type=='Available')].status}", "value": "True"}], {},
     {**widget("x"), "status": {"conditions": [{"type": "Available", "status": "False"}]}}, "InProgress",
     "{.status.conditions[?(@.type=='Available')].status} is 'False', expected 'True'"),
    ([{"jsonpath": "{.status.computed}"}], {}, {**widget("x"), "status": {"computed": {"variant": "Calico"}}},
     "Current", ""),
    ([{"jsonpath": "{.status.computed}"}], {}, widget("x"), "InProgress",
     "{.status.computed} finds 0 values, expected one"),
    ([{"jsonpath": "{.status.conditions[*].status}", "value": "True"}], {}, {**widget("x"), "status": {
        "conditions": [{"status": "True"}, {"status": "True"}]}}, "InProgress", "finds 2 values, expected one"),
    ([{"jsonpath": "{.status.replicas}", "value": 3}], {}, {**widget("x"), "status": {"replicas": 3}}, "Current", ""),
    ([{"jsonpath": "{.status.ready}", "value": True}], {}, {**widget("x"), "status": {"ready": True}}, "Current", ""),
    ([{"jsonpath": "{.status.items[5]}"}], {}, {**widget("x"), "status": {"items": [1]}}, "InProgress",
     "array index out of bounds"),
], ids=["kstatus-only", "condition-unmet", "condition-met", "condition-for-other-kind", "condition-for-other-name",
        "truthy-condition", "bool-matches-text", "kind-readiness-none", "missing-object", "jsonpath-filter-met",
        "jsonpath-filter-unmet", "jsonpath-exists", "jsonpath-missing", "jsonpath-two-values-are-not-one",
        "jsonpath-number-as-kubectl-prints-it", "jsonpath-bool-as-kubectl-prints-it", "jsonpath-error-is-unmet"])
def test_evaluate(conditions, kinds, live, status, message):
    rules = wait_rules({"conditions": conditions, "kinds": kinds})
    result = evaluate(Target(WIDGET, "ns", "w"), live, rules)
    assert result.status == status
    assert message in result.message


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def test_all_objects_are_polled_together_until_ready(monkeypatch):
    targets = [Target(DEPLOYMENT, "ns", "web"), Target(WIDGET, "ns", "w")]
    states = iter([
        {targets[0].key: deployment(0), targets[1].key: widget("Ready")},
        {targets[0].key: deployment(1)},
    ])
    polls = []

    def fake_fetch(session, pending):
        polls.append([t.name for t in pending])
        return next(states)

    monkeypatch.setattr(waiting, "fetch_live", fake_fetch)
    clock = FakeClock()
    outcomes = wait_for(None, targets, WaitRules(timeout=30), clock=clock, sleep=clock.sleep)
    assert [o.status.status for o in outcomes] == ["Current", "Current"]
    assert polls == [["web", "w"], ["web"]]  # one poll for all, then only what is still pending
    assert not_ready_message(outcomes, 30) is None


def test_timeout_names_each_object_and_why(monkeypatch):
    targets = [Target(DEPLOYMENT, "ns", "web"), Target(WIDGET, "ns", "w")]
    monkeypatch.setattr(waiting, "fetch_live", lambda session, pending: {
        targets[0].key: deployment(0), targets[1].key: widget("Ready")})
    clock = FakeClock()
    outcomes = wait_for(None, targets, WaitRules(timeout=5), clock=clock, sleep=clock.sleep)
    message = not_ready_message(outcomes, 5)
    assert message.startswith("timed out after 5s: 1 of 2 objects not ready")
    assert "Deployment ns/web: InProgress: Available: 0/1" in message
    assert 4.9 < clock.now <= 5.0


def test_failed_objects_end_the_wait_early(monkeypatch):
    target = Target(DEPLOYMENT, "ns", "web")
    failed = deployment(0)
    failed["status"]["conditions"] = [{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"}]
    monkeypatch.setattr(waiting, "fetch_live", lambda session, pending: {target.key: failed})
    clock = FakeClock()
    outcomes = wait_for(None, [target], WaitRules(timeout=300), clock=clock, sleep=clock.sleep)
    assert clock.now == 0.0
    assert not_ready_message(outcomes, 300) == "1 of 1 objects failed: Deployment ns/web: Failed: " \
                                               "Progress deadline exceeded"


def test_one_failed_object_ends_the_wait_while_others_are_in_progress(monkeypatch):
    web, job = Target(DEPLOYMENT, "ns", "web"), Target(JOB, "ns", "migrate")
    failed_job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "migrate"},
                  "status": {"startTime": "t", "failed": 1, "conditions": [
                      {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
                       "message": "Job has reached the specified backoff limit"}]}}
    monkeypatch.setattr(waiting, "fetch_live", lambda session, pending: {web.key: deployment(0), job.key: failed_job})
    clock = FakeClock()
    outcomes = wait_for(None, [web, job], WaitRules(timeout=300), clock=clock, sleep=clock.sleep)
    assert clock.now == 0.0
    assert not_ready_message(outcomes, 300) == (
        "1 of 2 objects failed (1 more not ready yet): Job ns/migrate: Failed: Job Failed. failed: 1/1 "
        "(BackoffLimitExceeded: Job has reached the specified backoff limit); "
        "Deployment ns/web: InProgress: Available: 0/1")


class EventsApi:
    """Lists of Warning events and of pods, as the API server answers them; records what was asked."""

    def __init__(self, events, pods):
        self.events, self.pods, self.asked = events, pods, []

    def list(self, path, *, label_selector=None, field_selector=None, reuse=False):
        self.asked.append((path, label_selector, field_selector))
        return self.events if path.endswith("/events") else self.pods


def event(uid, kind, name, reason, message, when):
    return {"involvedObject": {"uid": uid, "kind": kind, "name": name}, "reason": reason, "message": message,
            "lastTimestamp": when, "type": "Warning"}


def test_not_ready_workloads_are_explained_by_their_pods_events():
    web = Target(DEPLOYMENT, "ns", "web")
    live = dict(deployment(0), metadata={"name": "web", "uid": "d1"},
                spec={"replicas": 1, "selector": {"matchLabels": {"app": "web"}}})
    unschedulable = "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."
    api = EventsApi(events=[
        event("p1", "Pod", "web-1", "FailedScheduling", unschedulable, "2026-01-01T00:00:02Z"),
        event("p1", "Pod", "web-1", "FailedScheduling", unschedulable, "2026-01-01T00:00:01Z"),
        event("other", "Pod", "db-1", "BackOff", "Back-off restarting failed container", "2026-01-01T00:00:03Z"),
    ], pods=[{"metadata": {"name": "web-1", "uid": "p1"}}])
    outcome = waiting.WaitOutcome(web, waiting.Status("InProgress", "Available: 0/1"), live)
    message = waiting.explained_not_ready(api, [outcome], 5)
    assert message == ("timed out after 5s: 1 of 1 objects not ready: Deployment ns/web: InProgress: Available: 0/1 "
                       "[events: FailedScheduling (Pod web-1): 0/3 nodes are available: 3 node(s) didn't match "
                       "Pod's node affinity/selector.]")
    assert api.asked == [("/api/v1/namespaces/ns/events", None, "type=Warning"),
                         ("/api/v1/namespaces/ns/pods", "app=web", None)]


def test_events_that_cannot_be_read_leave_the_message_as_it_was():
    class Forbidden:
        @staticmethod
        def list(path, **_kwargs):
            raise waiting_session.ApiError(403, "Forbidden", f"cannot list {path}")

    web = Target(DEPLOYMENT, "ns", "web")
    outcome = waiting.WaitOutcome(web, waiting.Status("InProgress", "Available: 0/1"), deployment(0))
    assert waiting.explained_not_ready(Forbidden(), [outcome], 5) == \
        "timed out after 5s: 1 of 1 objects not ready: Deployment ns/web: InProgress: Available: 0/1"


def test_known_state_saves_the_first_poll(monkeypatch):
    target = Target(WIDGET, "ns", "w")
    monkeypatch.setattr(waiting, "fetch_live", lambda session, pending: pytest.fail("no poll expected"))
    outcomes = wait_for(None, [target], WaitRules(timeout=5), known={target.key: widget("x")})
    assert outcomes[0].status.status == "Current"


def test_unreadable_events_are_asked_for_once_per_namespace():
    class Forbidden:
        asked = []

        def list(self, path, **_kwargs):
            self.asked.append(path)
            raise waiting_session.ApiError(403, "Forbidden", f"cannot list {path}")

    api = Forbidden()
    outcomes = [waiting.WaitOutcome(Target(DEPLOYMENT, "ns", name), waiting.Status("InProgress", "Available: 0/1"),
                                    deployment(0)) for name in ("a", "b", "c")]
    waiting.explained_not_ready(api, outcomes, 5)
    assert api.asked == ["/api/v1/namespaces/ns/events"]


def test_each_poll_says_what_is_still_pending(monkeypatch):
    targets = [Target(DEPLOYMENT, "ns", "web"), Target(WIDGET, "ns", "w")]
    states = iter([
        {targets[0].key: deployment(0), targets[1].key: widget("Ready")},
        {targets[0].key: deployment(1)},
    ])
    monkeypatch.setattr(waiting, "fetch_live", lambda session, pending: next(states))
    noted = []
    clock = FakeClock()
    wait_for(None, targets, WaitRules(timeout=30, on_poll=lambda outcomes: noted.append(waiting_summary(outcomes))),
             clock=clock, sleep=clock.sleep)
    assert noted == ["Deployment ns/web: Available: 0/1"]   # the second poll found every object Current


def pending(count):
    target = [Target(DEPLOYMENT, "ns", f"web{number}") for number in range(count)]
    return [waiting.WaitOutcome(one, evaluate(one, deployment(0), WaitRules())) for one in target]


@pytest.mark.parametrize("outcomes, summary", [
    (pending(1), "Deployment ns/web0: Available: 0/1"),
    (pending(3), "Deployment ns/web0: Available: 0/1; Deployment ns/web1: Available: 0/1; "
                 "Deployment ns/web2: Available: 0/1"),
    (pending(5), "Deployment ns/web0: Available: 0/1; Deployment ns/web1: Available: 0/1; "
                 "Deployment ns/web2: Available: 0/1; and 2 more"),
    ([waiting.WaitOutcome(Target(WIDGET, "ns", "w"), evaluate(Target(WIDGET, "ns", "w"), None, WaitRules()))],
     "Widget ns/w: object not found"),
], ids=["one-object-with-its-kstatus-message", "up-to-three-named", "more-counted", "missing-object"])
def test_waiting_summary(outcomes, summary):
    assert waiting_summary(outcomes) == summary
