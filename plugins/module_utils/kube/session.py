# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Raw JSON requests to the API server over the client's one pooled connection.

The engine needs a handful of REST calls (GET, LIST, server-side apply PATCH,
DELETE) and does them thousands of times, so it skips the generated models and
speaks JSON over the ``kubernetes.client.ApiClient``'s urllib3 pool (the client
still does authentication: TLS material, bearer tokens, exec plugins). Transient
failures are retried with backoff; API warnings are collected for Ansible.
"""

from __future__ import annotations

import itertools
import json
import random
import re
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from urllib.parse import quote, urlencode

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kube.client import is_header_value

try:
    import urllib3
    from urllib3._collections import HTTPHeaderDict
except ImportError:  # pragma: no cover - comes with the kubernetes client
    urllib3 = HTTPHeaderDict = None

RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})
MAX_ATTEMPTS = 6
BACKOFF_BASE = 0.2
BACKOFF_CAP = 5.0
RETRY_AFTER_CAP = 10.0
CONNECT_TIMEOUT = 10.0
READ_TIMEOUT = 60.0
# An attempt that failed after this long is the server's state, not a hiccup (etcd down: the API server answers
# 504 after 30-60 s): it is not retried, so a dead cluster fails a run in about a minute, not after six.
SLOW_FAILURE = 10.0
# seconds after the API server failed to answer during which a best-effort request (attempts=1: run records, their
# key) is not sent to it: a server whose etcd is gone holds each request for its whole request timeout (60 s)
UNANSWERED_GRACE = 30.0
TYPED_PATCH_REFUSAL = "failed to create typed patch object"
APPLY_PATCH = "application/apply-patch+yaml"  # JSON is YAML: the body is sent as JSON
# A collection listed during a fleet step may answer the same LIST of a later phase for this long (``ListMemory``):
# no longer than the LIST a large phase decides its last objects from is already old by then.
LIST_REUSE_SECONDS = 10.0
LIST_REUSE_MAX_ITEMS = 20000  # objects a step's memory holds at most (over all clusters; the oldest lists go first)
_NAMESPACED = re.compile(r"/namespaces/[^/]+(?=/)")
_WARNING_HEADER = re.compile(r'^\s*\d{3}\s+\S+\s+"(?P<text>(?:[^"\\]|\\.)*)"')


@dataclass
class Response:
    status: int
    body: dict | None
    headers: dict = field(default_factory=dict)


def request_body(body) -> bytes:
    """``body`` as the request's bytes: JSON in UTF-8. Characters stay themselves: an apply patch is read as YAML,
    whose parser refuses the surrogate pairs JSON would escape a character outside the BMP (an emoji) into."""
    return json.dumps(body, separators=(",", ":"), default=str, ensure_ascii=False).encode("utf-8")


class ApiError(Exception):
    """A non-2xx answer from the API server, with the parts of its Status that matter."""

    def __init__(self, status: int, reason: str, message: str, details: dict | None = None, method: str = "",
                 path: str = ""):
        self.status = status
        self.reason = reason
        self.message = message
        self.details = details or {}
        self.method = method
        self.path = path
        super().__init__(f"{status} {reason}: {message}")

    @property
    def causes(self) -> list:
        return self.details.get("causes") or []


class TransportError(PhasekitError):
    """The API server could not be reached (after retries)."""


class ListMemory:
    """Whole collections listed during a fleet step, so that a later phase on the same cluster need not list one
    again (``ApiSession.list`` with ``reuse``).

    A LIST made at most ``seconds`` before answers while no write through any session sharing this memory may have
    changed the collection: a write (any request but GET) forgets, on its server, every collection its path falls in
    and every one that falls in its path (a namespace). Lists are kept per session: another cluster user may not
    read what this one did. Only single-page lists are kept, and at most ``max_items`` objects in all (the oldest
    lists go first). Changes made by anything else (another client, a controller, a phase's command) are not seen
    until the entry is older than ``seconds`` or ``clear`` is called: the fleet calls it around every phase that is
    not an apply.
    """

    def __init__(self, seconds: float = LIST_REUSE_SECONDS, max_items: int = LIST_REUSE_MAX_ITEMS,
                 clock=time.monotonic):
        self.seconds = seconds
        self.max_items = max_items
        self._clock = clock
        self._lists: OrderedDict = OrderedDict()  # (session id, server, path) -> (when it was asked for, items)
        self._held = 0
        self._writes = 0  # writes so far: a list asked for before the last one is not kept
        self._ids = itertools.count()
        self._lock = threading.Lock()

    def session_id(self) -> int:
        return next(self._ids)

    def recall(self, owner: int, server: str, path: str) -> list | None:
        """The items of the collection at ``path``, if this session listed it recently and nothing wrote to it."""
        with self._lock:
            kept = self._lists.get((owner, server, path))
            if kept is None or self._clock() - kept[0] > self.seconds:
                return None
            return kept[1]

    def ticket(self) -> tuple:
        """Taken before a LIST is sent: when, and how many writes there had been (``keep`` needs it)."""
        with self._lock:
            return self._clock(), self._writes

    def keep(self, owner: int, server: str, path: str, ticket: tuple, items: list) -> None:
        """Remember a collection listed since ``ticket``, unless a write happened meanwhile (the list may predate
        it) or it is larger than the memory."""
        asked, writes = ticket
        if len(items) > self.max_items:
            return
        with self._lock:
            if writes != self._writes:
                return
            self._drop((owner, server, path))
            while self._lists and self._held + len(items) > self.max_items:
                self._drop(next(iter(self._lists)))
            self._lists[(owner, server, path)] = (asked, items)
            self._held += len(items)

    def forget(self, server: str, written: str) -> None:
        """A write to ``written`` (a path of ``server``): every collection it may have changed is listed again."""
        paths = {written, _NAMESPACED.sub("", written, count=1)}  # an object also changes its all-namespaces list
        with self._lock:
            self._writes += 1
            for key in [key for key in self._lists if key[1] == server and any(_overlap(key[2], p) for p in paths)]:
                self._drop(key)

    def clear(self) -> None:
        """Forget every list (the cluster may have been changed by something else than these sessions)."""
        with self._lock:
            self._writes += 1
            self._lists.clear()
            self._held = 0

    def _drop(self, key) -> None:
        kept = self._lists.pop(key, None)
        if kept is not None:
            self._held -= len(kept[1])


def _overlap(collection: str, written: str) -> bool:
    """Whether a write to ``written`` may change the collection at ``collection`` (by whole path segments)."""
    return collection == written or written.startswith(collection + "/") or collection.startswith(written + "/")


class ApiSession:
    """JSON requests with retries and warning collection, safe to share between threads.

    ``memory``: a fleet step's ``ListMemory``, shared by its clusters' sessions (None: every LIST is sent)."""

    def __init__(self, api_client, *, max_attempts: int = MAX_ATTEMPTS, sleep=time.sleep,
                 read_timeout: float = READ_TIMEOUT, clock=time.monotonic, memory: ListMemory | None = None):
        self.api_client = api_client
        self.configuration = api_client.configuration
        self.impersonation = list(getattr(api_client, "phasekit_impersonation", None) or [])
        self.read_timeout = read_timeout
        self.server = self.configuration.host.rstrip("/")
        self.max_attempts = max_attempts
        self._sleep = sleep
        self._clock = clock
        self._pool = api_client.rest_client.pool_manager
        self._lock = threading.Lock()
        self.memory = memory
        self._memory_id = memory.session_id() if memory is not None else None
        self.warnings: list[str] = []
        self.requests = 0
        self._unanswered: tuple[float, str] | None = None  # (when, why) the server last failed to answer
        # called before every write (any request but GET) with its method and path: a run's lock is taken there
        self.before_write = None
        self._server_date: tuple[float, float] | None = None  # (the Date of the last answer, our clock then)

    # ------------------------------------------------------------- verbs

    def get(self, path: str, query: dict | None = None, accept: str | None = None) -> dict:
        return self.request("GET", path, query=query, accept=accept).body

    def apply(self, path: str, obj: dict, *, field_manager: str, force: bool = False, dry_run: bool = False,
              validation: str = "Strict") -> Response:
        """Server-side apply ``obj`` at ``path`` (the object's own URL)."""
        query = {"fieldManager": field_manager, "fieldValidation": validation}
        if force:
            query["force"] = "true"
        if dry_run:
            query["dryRun"] = "All"
        return self.request("PATCH", path, query=query, body=obj, content_type=APPLY_PATCH)

    def delete(self, path: str, *, dry_run: bool = False, propagation: str = "Background") -> Response:
        body = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": propagation}
        if dry_run:
            body["dryRun"] = ["All"]
        return self.request("DELETE", path, body=body)

    def list(self, path: str, *, label_selector: str | None = None, field_selector: str | None = None,
             page_size: int = 500, reuse: bool = False) -> list:
        """Every item of a collection, page by page. ``reuse``: the session's ``memory`` of this collection may
        answer instead (a whole collection, without selectors). Its items are shared with later phases: callers change
        them no more than ``fetch_live`` does (it fills in the apiVersion and kind a list leaves out)."""
        remembered = self.memory is not None and not label_selector and not field_selector
        if remembered and reuse:
            found = self.memory.recall(self._memory_id, self.server, path)
            if found is not None:
                return found
        ticket = self.memory.ticket() if remembered else None
        items, token, pages = [], None, 0
        while True:
            pages += 1
            query = {"limit": page_size}
            if label_selector:
                query["labelSelector"] = label_selector
            if field_selector:
                query["fieldSelector"] = field_selector
            if token:
                query["continue"] = token
            body = self.request("GET", path, query=query).body or {}
            items.extend(body.get("items") or [])
            token = (body.get("metadata") or {}).get("continue")
            if not token:
                if remembered and pages == 1:
                    self.memory.keep(self._memory_id, self.server, path, ticket, items)
                return items

    # ------------------------------------------------------------- transport

    def request(self, method: str, path: str, *, query: dict | None = None, body=None,
                content_type: str = "application/json", accept: str | None = None,
                attempts: int | None = None) -> Response:
        """One request with retries on connection errors, 429 and 5xx; raise ApiError otherwise.

        ``attempts``: at most that many tries instead of the session's ``max_attempts`` (1: a best-effort request
        that must not wait out a gone server's backoff)."""
        most = attempts or self.max_attempts
        if most == 1:
            self._refuse_if_unanswered(method, path)
        if method != "GET" and self.before_write is not None:
            self.before_write(method, path)  # may raise: then nothing is sent
        if method != "GET" and self.memory is not None:
            self.memory.forget(self.server, path)  # before it is sent: a write that fails may still have changed it
        url = self.server + path + (("?" + urlencode(query)) if query else "")
        payload = None if body is None else request_body(body)
        attempt = 0
        while True:
            attempt += 1
            headers = self._headers(content_type if payload is not None else None, accept)
            began = self._clock()
            try:
                raw = self._pool.request(method, url, body=payload, headers=headers, preload_content=True,
                                         retries=False,
                                         timeout=urllib3.Timeout(connect=CONNECT_TIMEOUT, read=self.read_timeout))
            except urllib3.exceptions.SSLError as exc:
                raise TransportError(f"TLS error talking to {self.server}: {exc}") from None
            except (urllib3.exceptions.HTTPError, OSError) as exc:
                if attempt < most and not self._slow(began):
                    self._sleep(self._backoff(attempt))
                    continue
                raise self._unanswered_error(f"cannot reach the API server {self.server} after {attempt} attempt(s): "
                                             f"{type(exc).__name__}: {unreachable_reason(exc)}") from None
            with self._lock:
                self.requests += 1
            self._note_date(raw.headers)
            self._collect_warnings(raw.headers)
            decoded = _decode(raw.data)
            if raw.status in RETRYABLE_STATUS and attempt < min(most, self._attempts_for(raw.status, decoded)) \
                    and not self._slow(began):
                self._sleep(self._retry_delay(raw, attempt))
                continue
            if 200 <= raw.status < 300:
                self._unanswered = None
                return Response(raw.status, decoded, dict(raw.headers))
            error = _api_error(raw.status, raw.reason, decoded, raw.data, method, path)
            if raw.status == 504:
                # the server could not finish in time (its storage is down or overloaded): like an unreachable
                # server, the next requests would wait as long, so callers stop sending
                raise self._unanswered_error(f"the API server {self.server} did not complete the request in time "
                                             f"(after {attempt} attempt(s)): {error.reason}: {error.message}") from None
            raise error

    def server_time(self) -> float | None:
        """The API server's time now (epoch seconds): the ``Date`` of its last answer, plus the time elapsed on
        this controller's monotonic clock since; None before any answer with a ``Date``. A controller whose wall
        clock is off reads the server's time all the same."""
        noted = self._server_date
        return None if noted is None else noted[0] + (self._clock() - noted[1])

    def _note_date(self, headers) -> None:
        value = headers.get("Date") if hasattr(headers, "get") else None
        if not value:
            return
        try:
            self._server_date = (parsedate_to_datetime(value).timestamp(), self._clock())
        except (TypeError, ValueError, IndexError):
            pass  # a malformed Date: the last good one stays

    def _unanswered_error(self, message: str) -> TransportError:
        self._unanswered = (self._clock(), message)
        return TransportError(message)

    def _refuse_if_unanswered(self, method: str, path: str) -> None:
        """A best-effort request is not sent to a server that failed to answer a moment ago: it would wait as long."""
        unanswered = self._unanswered
        if unanswered is not None and self._clock() - unanswered[0] < UNANSWERED_GRACE:
            raise TransportError(f"{method} {path} not sent: {unanswered[1]}")

    def _slow(self, began: float) -> bool:
        return self._clock() - began >= SLOW_FAILURE

    def _attempts_for(self, status: int, decoded) -> int:
        if status == 500 and _is_schema_refusal(decoded):
            return 1  # the same body will be refused again
        # other 500s are as often deterministic as hiccups: retry once
        return min(2, self.max_attempts) if status == 500 else self.max_attempts

    def _headers(self, content_type: str | None, accept: str | None):
        headers = HTTPHeaderDict({"Accept": accept or "application/json", "User-Agent": "phasekit.kube"})
        if content_type:
            headers["Content-Type"] = content_type
        # auth_settings() runs the client's token refresh hook (exec plugins, OIDC) when one is set
        for setting in self.configuration.auth_settings().values():
            if setting.get("in") == "header" and setting.get("value"):
                headers[setting["key"]] = setting["value"]
        for name, value in self.impersonation:
            headers.add(name, value)  # one header line per group and extra value, as client-go sends them
        for name, value in headers.items():  # every value of a repeated header
            if not is_header_value(value):
                # http.client would refuse it with a message holding the value (a token an exec plugin returned)
                raise TransportError(f"cannot send the {name} header to {self.server}: its value holds a line "
                                     "break or a character an HTTP header cannot carry (the value is not shown)")
        return headers

    def _collect_warnings(self, headers):
        values = headers.get_all("Warning") if hasattr(headers, "get_all") else None
        if values is None:
            value = headers.get("Warning")
            values = [value] if value else []
        for value in values:
            for text in _split_warnings(value):
                with self._lock:
                    if text not in self.warnings:
                        self.warnings.append(text)

    @staticmethod
    def _backoff(attempt: int) -> float:
        return min(BACKOFF_CAP, BACKOFF_BASE * 2 ** (attempt - 1)) * (0.5 + random.random() / 2)  # nosec B311

    def _retry_delay(self, raw, attempt: int) -> float:
        retry_after = raw.headers.get("Retry-After")
        if retry_after and retry_after.isdigit():
            return min(RETRY_AFTER_CAP, max(float(retry_after), 0.1))
        return self._backoff(attempt)


_CONNECTION_PREFIX = re.compile(r"^\w*Connection\w*\(host='[^']*', port=[^)]*\): ")
_RESOLVE_FAILURE = re.compile(r"Failed to resolve '[^']*'")
_ERRNO = re.compile(r"\[Errno -?\d+\] ")


def unreachable_reason(exc: Exception) -> str:
    """Why a connection failed, for people: without the host again (the message names the server once) and
    without the OS error number ('Connection refused', not '[Errno 111] Connection refused')."""
    text = _CONNECTION_PREFIX.sub("", str(exc))
    text = _RESOLVE_FAILURE.sub("failed to resolve the host name", text)
    return _ERRNO.sub("", text)


def _split_warnings(value: str) -> list:
    """RFC 7234 warning values: 299 - "text", possibly several comma-separated."""
    texts = []
    for part in re.split(r',(?=\s*\d{3}\s)', value):
        match = _WARNING_HEADER.match(part)
        if match:
            texts.append(match.group("text").replace('\\"', '"').replace("\\\\", "\\"))
    return texts


def _is_schema_refusal(decoded) -> bool:
    """Server-side apply answers 500 when the object has fields its schema does not declare."""
    return isinstance(decoded, dict) and TYPED_PATCH_REFUSAL in (decoded.get("message") or "")


def _decode(data: bytes):
    if not data:
        return None
    try:
        return json.loads(data)
    except ValueError:
        return None


def _api_error(status: int, reason: str, decoded, data: bytes, method: str, path: str) -> ApiError:
    if isinstance(decoded, dict) and decoded.get("kind") == "Status":
        return ApiError(status, decoded.get("reason") or reason, decoded.get("message") or reason,
                        decoded.get("details"), method, path)
    text = (data or b"").decode("utf-8", "replace").strip()[:500]
    return ApiError(status, reason or "", text or reason or f"HTTP {status}", None, method, path)


def conflicting_fields(err: ApiError) -> list[str]:
    """A server-side apply conflict's fields, each with the manager that changed it: ``data.x (changed by
    kubectl-patch)``; empty for any other error."""
    if err.status != 409:
        return []
    return [f"{(cause.get('field') or '').lstrip('.')} (changed by "
            f"{(cause.get('message') or '').removeprefix('conflict with ').split(' using ')[0].strip(chr(34))})"
            for cause in err.causes if cause.get("reason") == "FieldManagerConflict"]


def describe_api_error(err: ApiError, force_hint: bool = False) -> str:
    """A message for people: conflicts name fields and managers, 403 names verb, resource and user."""
    if err.status == 409 and any(c.get("reason") == "FieldManagerConflict" for c in err.causes):
        parts = [f"{c.get('field')} ({c.get('message', '').replace('conflict with ', 'owned by ')})"
                 for c in err.causes if c.get("reason") == "FieldManagerConflict"]
        hint = "; set force_conflicts: true to take these fields over" if force_hint else ""
        return f"conflict with another field manager: {', '.join(parts)}{hint}"
    if err.status == 403:
        return f"forbidden: {err.message}"
    if err.status == 500 and TYPED_PATCH_REFUSAL in err.message:
        # "failed to create typed patch object (ns/name; apps/v1, Kind=Deployment): .spec.replica: field not ..."
        return "invalid: " + err.message.split("): ", 1)[-1]
    if err.status == 401:
        return "unauthorized: the API server did not accept the credentials of this kubeconfig user"
    labels = {404: "not found", 422: "invalid", 400: "rejected", 409: "conflict", 410: "gone"}
    return f"{labels.get(err.status, f'{err.status} {err.reason}'.strip())}: {err.message}"


def object_path(resource, namespace: str | None, name: str | None = None) -> str:
    """The REST path of a collection (name None) or of one object."""
    base = f"/api/{resource.version}" if not resource.group else f"/apis/{resource.group}/{resource.version}"
    if resource.namespaced and namespace:
        base += f"/namespaces/{quote(namespace, safe='')}"
    base += f"/{resource.plural}"
    if name is not None:
        base += f"/{quote(name, safe='')}"
    return base
