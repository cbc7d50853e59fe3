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
import math
import random
import re
import select
import ssl
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
# A list of objects' metadata only (no Secret data read); aggregated APIs that do not serve it answer in full.
METADATA_LIST = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json"
# A collection listed during a fleet step may answer the same LIST of a later phase for this long (``ListMemory``),
# and only while a watch from that LIST on has received nothing (``ListGuard``).
LIST_REUSE_SECONDS = 10.0
GUARD_SLACK_SECONDS = 2  # the guard's watch outlives its entry: its end is never mistaken for a change in time
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


class ListGuard:
    """A watch of a kept collection from its LIST's resourceVersion, as a client-go informer keeps its cache: the API
    server sends on it every change to the collection made after that LIST (by anyone: this run, another client, a
    controller, a command), milliseconds after the change. While nothing has arrived, nothing changed.

    Nothing reads the stream: ``quiet`` asks the operating system, without waiting, whether any byte (an event, or
    the end of the watch) has arrived. The first byte ends the guard's trust for good."""

    def __init__(self, response, sock, buffered: bool = False):
        self._response = response
        self._sock = sock
        self._heard = buffered  # bytes that came with the answer's headers
        self._lock = threading.Lock()

    @classmethod
    def of(cls, response) -> ListGuard | None:
        """The guard over an open watch ``response`` (urllib3, not preloaded); None when its socket cannot be
        watched (the response is then closed)."""
        connection = getattr(response, "connection", None) or getattr(response, "_connection", None)
        sock = getattr(connection, "sock", None)
        if sock is None or not hasattr(sock, "fileno"):
            _close_response(response)
            return None
        return cls(response, sock, _buffered(response, sock))

    def quiet(self) -> bool:
        """Whether nothing at all has arrived on the watch (no change to the collection since its LIST)."""
        with self._lock:
            if self._heard or self._sock is None:
                return False
            try:
                if isinstance(self._sock, ssl.SSLSocket) and self._sock.pending():
                    self._heard = True
                elif _readable(self._sock):
                    self._heard = True
            except (OSError, ValueError):  # closed under us
                self._heard = True
            return not self._heard

    def close(self) -> None:
        """End the watch (its connection is dropped: a stream cannot be handed back half read)."""
        with self._lock:
            response, self._response, self._sock, self._heard = self._response, None, None, True
        if response is not None:
            _close_response(response)


def _readable(sock) -> bool:
    """Whether bytes (or the end of the stream) wait on ``sock``, without waiting (poll: no limit on descriptors)."""
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(sock, select.POLLIN | select.POLLPRI | select.POLLERR | select.POLLHUP)
        return bool(poller.poll(0))
    readable, _writable, errors = select.select([sock], [], [sock], 0)  # pragma: no cover - controllers without poll
    return bool(readable or errors)


def _buffered(response, sock) -> bool:
    """Whether the reader that parsed the answer's headers already holds bytes of its body (a server or proxy that
    sent the first event with the headers): the socket would not show them."""
    reader = getattr(getattr(response, "_fp", None), "fp", None)
    if reader is None or not hasattr(reader, "peek"):
        return False
    timeout = sock.gettimeout()
    try:
        sock.settimeout(0.0)
        return bool(reader.peek(1))
    except (OSError, ValueError):  # nothing buffered and nothing on the socket (would block)
        return False
    finally:
        try:
            sock.settimeout(timeout)
        except OSError:
            pass


def _drained(response) -> None:
    """A refused watch's short answer (403, 410) read to its end, so that its connection goes back to the pool open."""
    try:
        response.drain_conn()
        response.release_conn()
    except Exception:  # pylint: disable=broad-exception-caught  # pragma: no cover - a connection gone meanwhile
        _close_response(response)


def _close_response(response) -> None:
    """End a watch: its connection is closed (a stream cannot be handed back half read) and not handed back to the
    pool: on top of the pool, the closed connection would be the session's next one and cost a new TLS handshake
    while an open connection waits under it (the pool does not block: a place it lacks is a connection made when
    needed, as an empty one is)."""
    try:
        response.close()
    except Exception:  # pylint: disable=broad-exception-caught  # pragma: no cover - closing what is gone
        pass


class ListMemory:
    """Whole collections listed during a fleet step, so that a later phase on the same cluster need not list one
    again (``ApiSession.list`` with ``reuse``).

    A LIST answers again only while a watch from its resourceVersion on has received nothing (``ListGuard``): a
    change made since, by anyone, ends it, so no phase decides from a read older than its start that nothing proves
    still true. The watch is opened when the apply that listed is done on its cluster (``ApiSession.guard_kept``),
    for the lists its writes left kept: until then a kept list answers nothing. It also ends after ``seconds``, and
    on a write through any session sharing this memory to a path that may change the collection: a write (any
    request but GET) forgets, on its server, every collection its path falls in and every one that falls in its path
    (a namespace). Lists are kept per session: another cluster user may not read what this one did. Only single-page
    lists are kept, and at most ``max_items`` objects in all (the oldest lists go first). ``clear`` forgets
    everything: the fleet calls it around every phase that is not an apply (its changes may still be on their way to
    the watches) and when its step ends (``close``).
    """

    def __init__(self, seconds: float = LIST_REUSE_SECONDS, max_items: int = LIST_REUSE_MAX_ITEMS,
                 clock=time.monotonic):
        self.seconds = seconds
        self.max_items = max_items
        self._clock = clock
        # (session id, server, path) -> (when it was asked for, items, its ListGuard)
        self._lists: OrderedDict = OrderedDict()
        self._held = 0
        self._writes = 0  # writes so far: a list asked for before the last one is not kept
        self._ids = itertools.count()
        self._lock = threading.Lock()

    def session_id(self) -> int:
        return next(self._ids)

    def recall(self, owner: int, server: str, path: str) -> list | None:
        """The items of the collection at ``path``, if this session listed it recently and nothing wrote to it."""
        with self._lock:
            key = (owner, server, path)
            kept = self._lists.get(key)
            if kept is None:
                return None
            if kept[2] is None:
                return None  # not guarded yet (its phase is still under way): listed again
            if self._clock() - kept[0] > self.seconds or not kept[2].quiet():
                self._drop(key)
                return None
            return kept[1]

    def guard_seconds(self) -> int:
        """How long a guard's watch lasts: longer than its entry."""
        return math.ceil(self.seconds) + GUARD_SLACK_SECONDS

    def ticket(self) -> tuple:
        """Taken before a LIST is sent: when, and how many writes there had been (``keep`` needs it)."""
        with self._lock:
            return self._clock(), self._writes

    def keep(self, owner: int, server: str, path: str, ticket: tuple, items: list, version: str) -> bool:
        """Remember a collection listed since ``ticket`` at resourceVersion ``version``, unless a write happened
        meanwhile (the list may predate it) or it is larger than the memory. It answers no LIST until ``guard``
        gives it its watch."""
        asked, writes = ticket
        with self._lock:
            if len(items) > self.max_items or writes != self._writes:
                return False
            self._drop((owner, server, path))
            while self._lists and self._held + len(items) > self.max_items:
                self._drop(next(iter(self._lists)))
            self._lists[(owner, server, path)] = (asked, items, None, version)
            self._held += len(items)
            return True

    def unguarded(self, owner: int) -> list[tuple]:
        """(server, path, resourceVersion) of the session's kept lists that have no watch yet."""
        with self._lock:
            return [(key[1], key[2], kept[3]) for key, kept in self._lists.items()
                    if key[0] == owner and kept[2] is None]

    def guard(self, owner: int, server: str, path: str, version: str, guard: ListGuard | None) -> bool:
        """Give a kept list the watch from its resourceVersion on (``ListGuard``; None: the server would not
        watch it, and the list is forgotten). A list forgotten or listed again meanwhile ends the watch."""
        key = (owner, server, path)
        with self._lock:
            kept = self._lists.get(key)
            fits = kept is not None and kept[2] is None and kept[3] == version
            if fits and guard is not None:
                self._lists[key] = (*kept[:2], guard, version)
                return True
            if fits:
                self._drop(key)
        if guard is not None:
            guard.close()
        return False

    def forget(self, server: str, written: str) -> None:
        """A write to ``written`` (a path of ``server``): every collection it may have changed is listed again."""
        paths = {written, _NAMESPACED.sub("", written, count=1)}  # an object also changes its all-namespaces list
        with self._lock:
            self._writes += 1
            for key in [key for key in self._lists if key[1] == server and any(_overlap(key[2], p) for p in paths)]:
                self._drop(key)

    def clear(self) -> None:
        """Forget every list (the cluster may have been changed by something else than these sessions), and end
        their watches."""
        with self._lock:
            self._writes += 1
            for key in list(self._lists):
                self._drop(key)

    close = clear  # the step's end

    def _drop(self, key) -> None:
        kept = self._lists.pop(key, None)
        if kept is not None:
            self._held -= len(kept[1])
            if kept[2] is not None:
                kept[2].close()


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
        self.watches = 0  # of the requests: watches guarding kept lists (ListGuard)
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
             page_size: int = 500, reuse: bool = False, accept: str | None = None) -> list:
        """Every item of a collection, page by page. ``reuse``: the session's ``memory`` of this collection may
        answer instead (a whole collection, without selectors). Its items are shared with later phases: callers change
        them no more than ``fetch_live`` does (it fills in the apiVersion and kind a list leaves out).
        ``accept``: another form of the items (``METADATA_LIST``: their metadata only), never remembered."""
        remembered = self.memory is not None and not label_selector and not field_selector and accept is None
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
            body = self.request("GET", path, query=query, accept=accept).body or {}
            items.extend(body.get("items") or [])
            token = (body.get("metadata") or {}).get("continue")
            if not token:
                version = (body.get("metadata") or {}).get("resourceVersion")
                if remembered and pages == 1 and version and urllib3 is not None:
                    self.memory.keep(self._memory_id, self.server, path, ticket, items, version)
                return items

    def guard_kept(self, watch: bool = True) -> None:
        """Open the watch of each list this session kept and has not guarded yet (``ListGuard``), from the LIST's
        resourceVersion on: the apply that listed them calls it once its writes are done, so that a list its own
        writes forgot costs no watch (every list of a first run), and the watch still hears every change made
        since the LIST. ``watch`` False: no later phase will ask for them, and they are forgotten instead."""
        if self.memory is None:
            return
        for server, path, version in self.memory.unguarded(self._memory_id):
            self.memory.guard(self._memory_id, server, path, version, self._guard(path, version) if watch else None)

    def _guard(self, path: str, resource_version) -> ListGuard | None:
        """A watch of the collection at ``path`` from its LIST's ``resource_version`` (``ListGuard``); None when the
        server will not watch it (a user without the watch verb, a resourceVersion too old, an API that does not
        watch): the list is then not kept."""
        if not resource_version or urllib3 is None:
            return None
        query = {"watch": "1", "resourceVersion": resource_version,
                 "timeoutSeconds": self.memory.guard_seconds(), "allowWatchBookmarks": "false"}
        try:
            raw = self._pool.request("GET", f"{self.server}{path}?{urlencode(query)}", headers=self._headers(None, None),
                                     preload_content=False, retries=False,
                                     timeout=urllib3.Timeout(connect=CONNECT_TIMEOUT, read=self.read_timeout))
        except (urllib3.exceptions.HTTPError, OSError):
            return None
        with self._lock:
            self.requests += 1
            self.watches += 1
        if raw.status != 200:
            _drained(raw)
            return None
        return ListGuard.of(raw)

    # ------------------------------------------------------------- transport

    def request(self, method: str, path: str, *, query: dict | None = None, body=None,
                content_type: str = "application/json", accept: str | None = None,
                attempts: int | None = None) -> Response:
        """One request with retries on connection errors, 429 and 5xx; raise ApiError otherwise.

        ``attempts``: at most that many tries instead of the session's ``max_attempts`` (1: a best-effort request
        that must not wait out a gone server's backoff)."""
        most = attempts or self.max_attempts
        self._before_sending(method, path, most)
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

    def _before_sending(self, method: str, path: str, most: int):
        """What a request checks and forgets before its first try (any of these may raise: then nothing is sent)."""
        if most == 1:
            self._refuse_if_unanswered(method, path)
        if method != "GET" and self.before_write is not None:
            self.before_write(method, path)
        if method != "GET" and self.memory is not None:
            self.memory.forget(self.server, path)  # before it is sent: a write that fails may still have changed it

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
    """A server-side apply conflict's fields, each with the manager that changed it, quoted as the API server quotes
    it: ``data.x (changed by "kubectl-patch")``, ``spec.replicas (changed by "kubectl" with subresource "scale")``;
    empty for any other error."""
    if err.status != 409:
        return []
    return [f"{(cause.get('field') or '').lstrip('.')} (changed by {conflicting_manager(cause)})"
            for cause in err.causes if cause.get("reason") == "FieldManagerConflict"]


def conflicting_manager(cause: dict) -> str:
    """The manager of a FieldManagerConflict cause as its message names it (``"kubectl" with subresource "scale"``),
    without the API version it used."""
    message = (cause.get("message") or "").removeprefix("conflict with ")
    return message.rsplit(" using ", 1)[0] if " using " in message else message


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
