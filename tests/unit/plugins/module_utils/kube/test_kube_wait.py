"""Waiting: options validated, conditions evaluated, all objects polled together, reasons on timeout."""

from __future__ import annotations

import pytest

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kube import wait as waiting
from ansible_collections.phasekit.kube.plugins.module_utils.kube.discovery import ResourceType
from ansible_collections.phasekit.kube.plugins.module_utils.kube.live import Target
from ansible_collections.phasekit.kube.plugins.module_utils.kube.wait import (
    WaitRules, evaluate, not_ready_message, wait_for, wait_rules)

DEPLOYMENT = ResourceType("apps", "v1", "Deployment", "deployments", True)
WIDGET = ResourceType("example.com", "v1", "Widget", "widgets", True)


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
    ({"conditions": [{"value": 1}]}, "conditions[1] needs 'path'"),
    ({"conditions": [{"path": "status.phase", "equals": 1}]}, "unknown option(s) equals"),
    ({"conditions": [{"path": "status[?"}]}, "is not valid JMESPath"),
], ids=["negative-timeout", "timeout-not-a-number", "unknown-readiness", "condition-without-path",
        "condition-unknown-key", "bad-jmespath"])
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
], ids=["kstatus-only", "condition-unmet", "condition-met", "condition-for-other-kind", "condition-for-other-name",
        "truthy-condition", "bool-matches-text", "kind-readiness-none", "missing-object"])
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


def test_known_state_saves_the_first_poll(monkeypatch):
    target = Target(WIDGET, "ns", "w")
    monkeypatch.setattr(waiting, "fetch_live", lambda session, pending: pytest.fail("no poll expected"))
    outcomes = wait_for(None, [target], WaitRules(timeout=5), known={target.key: widget("x")})
    assert outcomes[0].status.status == "Current"
