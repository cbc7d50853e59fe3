"""HTTP layer: retries with backoff on transient failures, API warnings collected, errors for people."""

from __future__ import annotations

import json

import pytest
import urllib3

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kube.discovery import ResourceType
from ansible_collections.phasekit.kube.plugins.module_utils.kube import session
from ansible_collections.phasekit.kube.plugins.module_utils.kube.session import (
    ApiError, ApiSession, TransportError, conflicting_fields, describe_api_error, object_path)


class Raw:
    def __init__(self, status, body=None, headers=None, reason="Reason"):
        self.status = status
        self.reason = reason
        self.data = json.dumps(body).encode() if body is not None else b""
        self.headers = urllib3.HTTPHeaderDict(headers or {})


class FakePool:
    def __init__(self, answers):
        self.answers = list(answers)
        self.requests = []

    def request(self, method, url, **kwargs):
        self.requests.append((method, url, kwargs))
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


class FakeConfiguration:
    host = "https://127.0.0.1:6443/"

    @staticmethod
    def auth_settings():
        return {"BearerToken": {"in": "header", "key": "authorization", "value": "Bearer t0ken"}}


class FakeApiClient:
    def __init__(self, pool):
        self.configuration = FakeConfiguration()
        self.rest_client = type("Rest", (), {"pool_manager": pool})()


def session_with(*answers):
    pool = FakePool(answers)
    sleeps = []
    return ApiSession(FakeApiClient(pool), sleep=sleeps.append), pool, sleeps


STATUS_403 = {"kind": "Status", "reason": "Forbidden", "message": 'configmaps "a" is forbidden: User "limited-user" '
              'cannot patch resource "configmaps" in API group "" in the namespace "default"'}


@pytest.mark.parametrize("answers, attempts, slept", [
    ([Raw(503), Raw(200, {"ok": 1})], 2, 1),
    ([Raw(429, headers={"Retry-After": "3"}), Raw(200, {"ok": 1})], 2, 1),
    ([urllib3.exceptions.ProtocolError("connection reset"), Raw(200, {"ok": 1})], 2, 1),
    ([Raw(502), Raw(503), Raw(504), Raw(200, {"ok": 1})], 4, 3),
    ([Raw(500), Raw(200, {"ok": 1})], 2, 1),
], ids=["503", "429-retry-after", "connection-reset", "several-5xx", "500-once"])
def test_transient_failures_are_retried(answers, attempts, slept):
    session, pool, sleeps = session_with(*answers)
    assert session.get("/api") == {"ok": 1}
    assert len(pool.requests) == attempts and len(sleeps) == slept
    if answers[0].__class__ is Raw and answers[0].headers.get("Retry-After"):
        assert sleeps == [3.0]


def test_schema_refusal_is_not_retried():
    refusal = {"kind": "Status", "message": "failed to create typed patch object (ns/d; apps/v1, Kind=Deployment): "
                                            ".spec.replica: field not declared in schema"}
    session, pool, _rest = session_with(Raw(500, refusal))
    with pytest.raises(ApiError) as err:
        session.get("/api")
    assert len(pool.requests) == 1
    assert describe_api_error(err.value) == "invalid: .spec.replica: field not declared in schema"


def test_retries_give_up_with_a_clear_error():
    session, _pool, _rest = session_with(*[urllib3.exceptions.ProtocolError("reset")] * 6)
    with pytest.raises(TransportError, match="cannot reach the API server https://127.0.0.1:6443 after 6 attempt\\(s\\)"):
        session.get("/api")


class SlowPool(FakePool):
    """Each request takes ``seconds`` on the session's clock before its answer."""

    def __init__(self, answers, seconds, clock):
        super().__init__(answers)
        self.seconds, self.clock = seconds, clock

    def request(self, method, url, **kwargs):
        self.clock[0] += self.seconds
        return super().request(method, url, **kwargs)


@pytest.mark.parametrize("answer, seconds, attempts, error", [
    (Raw(504, {"kind": "Status", "reason": "Timeout", "message": "request did not complete within requested timeout"}),
     34.0, 1, "did not complete the request in time (after 1 attempt(s)): Timeout: request did not complete"),
    (urllib3.exceptions.ReadTimeoutError(None, "/api", "read timed out"), 60.0, 1,
     "cannot reach the API server https://127.0.0.1:6443 after 1 attempt(s): ReadTimeoutError"),
    (Raw(504, {"kind": "Status", "reason": "Timeout", "message": "slow"}), 0.1, 6, "after 6 attempt(s)): Timeout: slow"),
    (Raw(503), 12.0, 1, None),
], ids=["slow-504-once", "read-timeout-once", "quick-504s-retried-then-transport-error", "slow-503-once"])
def test_a_slow_failure_is_not_retried(answer, seconds, attempts, error):
    """A server whose storage is down answers 504 after 30-60 s: retrying it six times kept a run waiting for
    six minutes; a quick failure is still a hiccup worth retrying."""
    clock = [0.0]
    pool = SlowPool([answer] * 6, seconds, clock)
    session = ApiSession(FakeApiClient(pool), sleep=lambda _seconds: None, clock=lambda: clock[0])
    with pytest.raises(TransportError if error else ApiError) as err:
        session.get("/api")
    assert len(pool.requests) == attempts
    if error:
        assert error in str(err.value)
    else:
        assert err.value.status == 503


@pytest.mark.parametrize("later, attempts, sent", [
    (1.0, 1, False),
    (1.0, None, True),
    (session.UNANSWERED_GRACE + 1, 1, True),
], ids=["best-effort-right-after-skipped", "patient-request-sent", "best-effort-after-the-grace-sent"])
def test_a_server_that_did_not_answer_gets_no_best_effort_request_for_a_while(later, attempts, sent):
    """A server whose etcd is gone holds each request 60 s: the run records written after the phase failed would
    keep the run waiting minutes more; requests the run needs are still sent."""
    clock = [0.0]
    timeout = Raw(504, {"kind": "Status", "reason": "Timeout", "message": "request did not complete"})
    pool = SlowPool([timeout, Raw(200, {"ok": 1})], 40.0, clock)
    api = ApiSession(FakeApiClient(pool), sleep=lambda _seconds: None, clock=lambda: clock[0])
    with pytest.raises(TransportError):
        api.get("/api")
    pool.seconds, clock[0] = 0.0, clock[0] + later
    if sent:
        assert api.request("GET", "/api/v1/x", attempts=attempts).body == {"ok": 1}
    else:
        with pytest.raises(TransportError, match="GET /api/v1/x not sent: the API server https://127.0.0.1:6443 "
                                                 "did not complete the request in time"):
            api.request("GET", "/api/v1/x", attempts=attempts)
    assert len(pool.requests) == (2 if sent else 1)


def test_api_errors_are_not_retried_and_keep_the_status():
    session, pool, _rest = session_with(Raw(403, STATUS_403))
    with pytest.raises(ApiError) as err:
        session.apply("/api/v1/namespaces/default/configmaps/a", {"kind": "ConfigMap"}, field_manager="phasekit")
    assert err.value.status == 403 and len(pool.requests) == 1
    method, url, kwargs = pool.requests[0]
    assert method == "PATCH"
    assert "fieldManager=phasekit" in url and "fieldValidation=Strict" in url
    assert kwargs["headers"]["Content-Type"] == "application/apply-patch+yaml"
    assert kwargs["headers"]["authorization"] == "Bearer t0ken"


def test_warnings_are_collected_once():
    header = '299 - "v1 ComponentStatus is deprecated", 299 - "unknown field \\"spec.foo\\""'
    session, _pool, _rest = session_with(Raw(200, {}, {"Warning": header}), Raw(200, {}, {"Warning": header}))
    session.get("/a")
    session.get("/b")
    assert session.warnings == ["v1 ComponentStatus is deprecated", 'unknown field "spec.foo"']


def test_list_follows_continue_tokens():
    session, pool, _rest = session_with(Raw(200, {"items": [1, 2], "metadata": {"continue": "t"}}),
                                        Raw(200, {"items": [3], "metadata": {}}))
    assert session.list("/api/v1/configmaps", label_selector="a=b") == [1, 2, 3]
    assert "continue=t" in pool.requests[1][1] and "labelSelector=a%3Db" in pool.requests[0][1]


def test_transport_error_is_a_phasekit_error():
    assert issubclass(TransportError, PhasekitError)


@pytest.mark.parametrize("error, force_hint, expected", [
    (ApiError(409, "Conflict", "Apply failed with 1 conflict", {"causes": [
        {"reason": "FieldManagerConflict", "message": 'conflict with "kubectl-edit" using v1', "field": ".data.k"}]}),
     True, 'conflict with another field manager: .data.k (owned by "kubectl-edit" using v1); '
           "set force_conflicts: true to take these fields over"),
    (ApiError(403, "Forbidden", STATUS_403["message"]), False, "forbidden: " + STATUS_403["message"]),
    (ApiError(401, "Unauthorized", "Unauthorized"), False, "unauthorized: the API server did not accept"),
    (ApiError(422, "Invalid", 'ConfigMap "a" is invalid: data: bad'), False, 'invalid: ConfigMap "a" is invalid'),
    (ApiError(404, "NotFound", 'namespaces "x" not found'), False, 'not found: namespaces "x" not found'),
    (ApiError(418, "Teapot", "short and stout"), False, "418 Teapot: short and stout"),
], ids=["conflict-names-fields-and-managers", "forbidden-names-verb-resource-user", "unauthorized", "invalid",
        "not-found", "other"])
def test_describe_api_error(error, force_hint, expected):
    assert describe_api_error(error, force_hint=force_hint).startswith(expected)


@pytest.mark.parametrize("resource, namespace, name, path", [
    (ResourceType("", "v1", "ConfigMap", "configmaps", True), "ns", "a", "/api/v1/namespaces/ns/configmaps/a"),
    (ResourceType("apps", "v1", "Deployment", "deployments", True), "ns", None, "/apis/apps/v1/namespaces/ns/deployments"),
    (ResourceType("", "v1", "Namespace", "namespaces", False), None, "ns", "/api/v1/namespaces/ns"),
], ids=["core-object", "group-collection", "cluster-scoped"])
def test_object_path(resource, namespace, name, path):
    assert object_path(resource, namespace, name) == path


# ---------------------------------------------------------------- impersonation (client-go's as, as-groups, ...)

def user_config(**user):
    return {"users": [{"name": "u", "user": {"token": "t", **user}}]}


@pytest.mark.parametrize("user, expected", [
    ({}, []),
    ({"as": "nobody"}, [("Impersonate-User", "nobody")]),
    ({"as": "jane", "as-uid": "42", "as-groups": ["dev", "ops"]},
     [("Impersonate-User", "jane"), ("Impersonate-Uid", "42"), ("Impersonate-Group", "dev"),
      ("Impersonate-Group", "ops")]),
    ({"as": "jane", "as-user-extra": {"scopes": ["a", "b"], "acme.com/project": ["x"]}},
     [("Impersonate-User", "jane"), ("Impersonate-Extra-acme.com%2Fproject", "x"),
      ("Impersonate-Extra-scopes", "a"), ("Impersonate-Extra-scopes", "b")]),
], ids=["none", "as", "uid-and-one-header-per-group", "one-header-per-extra-value-key-escaped"])
def test_impersonation_headers(user, expected):
    from ansible_collections.phasekit.kube.plugins.module_utils.kube.client import impersonation_headers
    assert impersonation_headers(user_config(**user)) == expected


@pytest.mark.parametrize("user", [{"as-groups": ["dev"]}, {"as-uid": "1"}, {"as-user-extra": {"k": ["v"]}}],
                         ids=["groups", "uid", "extra"])
def test_impersonation_without_a_user_is_refused_like_kubectl(user):
    from ansible_collections.phasekit.kube.plugins.module_utils.kube.client import impersonation_headers
    with pytest.raises(PhasekitError, match="without impersonating a user"):
        impersonation_headers(user_config(**user))


def test_every_request_sends_the_impersonation_headers_one_line_each():
    pool = FakePool([Raw(200, {"kind": "ConfigMap"})])
    client = FakeApiClient(pool)
    client.phasekit_impersonation = [("Impersonate-User", "jane"), ("Impersonate-Group", "dev"),
                                     ("Impersonate-Group", "ops")]
    ApiSession(client).get("/api/v1/namespaces/default/configmaps/a")
    headers = pool.requests[0][2]["headers"]
    assert headers["Impersonate-User"] == "jane"
    assert headers.getlist("Impersonate-Group") == ["dev", "ops"]
    assert headers["authorization"] == "Bearer t0ken"


@pytest.mark.parametrize("status, causes, fields", [
    (409, [{"reason": "FieldManagerConflict", "message": 'conflict with "kubectl-patch" using v1',
            "field": ".data.replicas"},
           {"reason": "FieldManagerConflict", "message": 'conflict with "helm"', "field": ".spec.replicas"}],
     ['data.replicas (changed by "kubectl-patch")', 'spec.replicas (changed by "helm")']),
    (409, [{"reason": "FieldManagerConflict", "field": ".spec.replicas",
            "message": 'conflict with "kubectl" with subresource "scale" using apps/v1'}],
     ['spec.replicas (changed by "kubectl" with subresource "scale")']),
    (409, [{"reason": "AlreadyExists"}], []),
    (422, [{"reason": "FieldValueInvalid", "field": "spec"}], []),
], ids=["field-manager-conflicts", "subresource-manager", "other-conflict", "not-a-conflict"])
def test_conflicting_fields_name_field_and_manager(status, causes, fields):
    err = ApiError(status, "Conflict", "Apply failed", {"causes": causes})
    assert conflicting_fields(err) == fields


@pytest.mark.parametrize("value", ["plain", "Grüße", "😀 outside the BMP", "漢字"],
                         ids=["ascii", "latin", "emoji", "cjk"])
def test_a_request_body_keeps_characters_as_utf8(value):
    """kube-apiserver reads an apply patch as YAML, which refuses JSON's surrogate-pair escapes of an emoji."""
    body = session.request_body({"data": {"k": value}})
    assert b"\\u" not in body and json.loads(body.decode("utf-8")) == {"data": {"k": value}}


def _failure(url):
    try:
        urllib3.PoolManager().request("GET", url, retries=False, timeout=5)
    except urllib3.exceptions.HTTPError as exc:
        return exc
    raise AssertionError(f"{url} answered")


@pytest.mark.parametrize("url, expected", [
    ("https://no-such-host.invalid/", "NameResolutionError: failed to resolve the host name ("),
    ("https://127.0.0.1:1/", "NewConnectionError: Failed to establish a new connection: Connection refused"),
], ids=["unresolvable-host", "connection-refused"])
def test_unreachable_server_reason_without_host_echo_or_errno(url, expected):
    session, _pool, _sleeps = session_with(_failure(url))
    session.max_attempts = 1
    with pytest.raises(TransportError) as err:
        session.get("/api")
    message = str(err.value)
    assert message.startswith("cannot reach the API server https://127.0.0.1:6443 after 1 attempt(s): " + expected)
    assert "[Errno" not in message and "host=" not in message and "no-such-host" not in message
