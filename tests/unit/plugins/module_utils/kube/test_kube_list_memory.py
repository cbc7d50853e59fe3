"""ListMemory: a collection listed during a fleet step answers a later LIST of the same session while it is young
and nothing that may have changed it was written; every write through any session of the memory forgets the
collections it may change (on its server: the object's collection, its all-namespaces list, a namespace's
collections); lists are not shared between sessions; a list asked for before a write is not kept; a kept list answers
only while the watch from its resourceVersion on (its ``ListGuard``) has heard nothing, a watch opened once the apply
that listed is done, only for the lists its writes left kept."""

from __future__ import annotations

import socket

import pytest
from test_kube_session import Raw  # pylint: disable=import-error

from ansible_collections.phasekit.kube.plugins.module_utils.kube.session import ApiSession, ListGuard, ListMemory

CONFIGMAPS = "/api/v1/namespaces/apps/configmaps"


class WatchAnswer:
    """An open watch: its socket is one end of a pair; ``event`` sends bytes from the other (the API server)."""

    def __init__(self, status=200):
        self.status = status
        self.server_end, mine = socket.socketpair()
        self.connection = type("Connection", (), {"sock": mine})()
        self.closed = False
        self.released = False
        self.drained = False

    def event(self, data=b'{"type":"MODIFIED"}\n'):
        self.server_end.sendall(data)

    def close(self):
        self.closed = True
        self.connection.sock.close()
        self.server_end.close()

    def release_conn(self):
        self.released = True   # handed back to the pool (closed, unless drained first)

    def drain_conn(self):
        self.drained = True    # a refused watch's answer read to its end: its connection stays open


class CountingPool:
    """Answers every LIST with its collection's items (one page), every watch with a ``WatchAnswer`` (kept in
    ``watches``), every other request with an empty object."""

    def __init__(self, items=None, watch_status=200):
        self.items = items or {}
        self.requests = []
        self.watches = []
        self.watch_status = watch_status

    def request(self, method, url, **_kwargs):
        path = url.split("://", 1)[1].split("/", 1)[1].split("?", 1)[0]
        if "watch=1" in url:
            self.watches.append(("/" + path, WatchAnswer(self.watch_status)))
            return self.watches[-1][1]
        self.requests.append((method, "/" + path))
        if method == "GET" and "/" + path in self.items:
            return Raw(200, {"items": [dict(item) for item in self.items["/" + path]],
                             "metadata": {"resourceVersion": "42"}})
        return Raw(200, {})


class FakeApiClient:
    def __init__(self, pool, host="https://127.0.0.1:6443"):
        self.configuration = type("Configuration", (), {"host": host, "auth_settings": staticmethod(dict)})()
        self.rest_client = type("Rest", (), {"pool_manager": pool})()


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def sessions(count=1, items=None, seconds=10.0, max_items=1000, host="https://127.0.0.1:6443"):
    clock = Clock()
    memory = ListMemory(seconds=seconds, max_items=max_items, clock=clock)
    pool = CountingPool(items or {CONFIGMAPS: [{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}]})
    made = [ApiSession(FakeApiClient(pool, host), memory=memory, clock=clock) for _session in range(count)]
    return made, pool, memory, clock


def listed(session, path, **kwargs):
    """A LIST as an apply asks for it: the memory may answer; once the apply is done, its kept lists are guarded."""
    items = session.list(path, reuse=True, **kwargs)
    session.guard_kept()
    return items


def lists(pool):
    return sum(1 for method, path in pool.requests if method == "GET" and path == CONFIGMAPS)


def test_a_young_list_answers_again_and_an_old_one_is_asked_for():
    (session,), pool, _memory, clock = sessions()
    first = listed(session, CONFIGMAPS)
    assert listed(session, CONFIGMAPS) is first and lists(pool) == 1
    clock.now += 10.5
    listed(session, CONFIGMAPS)
    assert lists(pool) == 2


def test_without_reuse_or_with_a_selector_the_server_is_asked():
    (session,), pool, _memory, _clock = sessions()
    listed(session, CONFIGMAPS)
    session.list(CONFIGMAPS)
    listed(session, CONFIGMAPS, label_selector="app=x")
    assert lists(pool) == 3


def test_a_write_forgets_what_it_may_change_and_nothing_else():
    (session,), pool, memory, _clock = sessions(items={
        CONFIGMAPS: [{"metadata": {"name": "a"}}], "/api/v1/configmaps": [{"metadata": {"name": "a"}}],
        "/api/v1/namespaces/apps/secrets": [], "/api/v1/namespaces/apps2/configmaps": [],
        "/apis/rbac.authorization.k8s.io/v1/clusterroles": []})
    every = list(pool.items)
    for path in every:
        listed(session, path)
    session.request("PATCH", f"{CONFIGMAPS}/a", body={})
    before = len(pool.requests)
    for path in every:
        listed(session, path)
    asked_again = [path for _method, path in pool.requests[before:]]
    # the object's collection and the all-namespaces list of its kind; not its namespace's other kinds, not the
    # same kind in a namespace whose name only starts alike, not cluster-scoped kinds
    assert asked_again == [CONFIGMAPS, "/api/v1/configmaps"]
    session.request("DELETE", "/api/v1/namespaces/apps")
    before = len(pool.requests)
    for path in every:
        listed(session, path)
    asked_again = [path for _method, path in pool.requests[before:]]
    assert asked_again == [CONFIGMAPS, "/api/v1/namespaces/apps/secrets"]
    assert memory.recall(0, "https://127.0.0.1:6443", "/apis/rbac.authorization.k8s.io/v1/clusterroles") is not None


def test_a_write_through_another_session_forgets_but_lists_are_not_shared():
    (mine, other), pool, _memory, _clock = sessions(count=2)
    listed(mine, CONFIGMAPS)
    listed(other, CONFIGMAPS)          # its own list: another user may not read what this one did
    assert lists(pool) == 2
    other.request("POST", CONFIGMAPS, body={})  # another inventory host on the same cluster writes there
    listed(mine, CONFIGMAPS)
    assert lists(pool) == 3


def test_writes_to_another_server_forget_nothing():
    (mine,), pool, memory, clock = sessions()
    elsewhere = ApiSession(FakeApiClient(pool, "https://10.0.0.9:6443"), memory=memory, clock=clock)
    listed(mine, CONFIGMAPS)
    elsewhere.request("PATCH", f"{CONFIGMAPS}/a", body={})
    listed(mine, CONFIGMAPS)
    assert lists(pool) == 1


def test_a_list_asked_for_before_a_write_is_not_kept():
    (session,), pool, memory, _clock = sessions()

    class WriteWhileListing(CountingPool):
        def request(self, method, url, **kwargs):
            if method == "GET" and not self.requests:
                memory.forget("https://127.0.0.1:6443", "/api/v1/namespaces/apps/configmaps/b")  # meanwhile
            return super().request(method, url, **kwargs)

    racing = WriteWhileListing(pool.items)
    session = ApiSession(FakeApiClient(racing), memory=memory)
    listed(session, CONFIGMAPS)
    listed(session, CONFIGMAPS)
    assert lists(racing) == 2


def test_clear_forgets_everything_and_the_oldest_lists_make_room():
    (session,), pool, memory, _clock = sessions(max_items=3, items={
        CONFIGMAPS: [{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}],
        "/api/v1/namespaces/apps/secrets": [{"metadata": {"name": "s"}}, {"metadata": {"name": "t"}}],
        "/api/v1/namespaces/apps/services": [{"metadata": {"name": n}} for n in "wxyz"]})
    listed(session, CONFIGMAPS)
    listed(session, "/api/v1/namespaces/apps/secrets")   # 4 > 3: the configmaps go
    listed(session, "/api/v1/namespaces/apps/services")  # larger than the memory: not kept
    listed(session, "/api/v1/namespaces/apps/secrets")
    listed(session, CONFIGMAPS)
    assert [path for _method, path in pool.requests] == [
        CONFIGMAPS, "/api/v1/namespaces/apps/secrets", "/api/v1/namespaces/apps/services", CONFIGMAPS]
    memory.clear()
    listed(session, CONFIGMAPS)
    assert lists(pool) == 3


def test_a_session_without_memory_always_asks():
    pool = CountingPool({CONFIGMAPS: []})
    session = ApiSession(FakeApiClient(pool))
    listed(session, CONFIGMAPS)
    listed(session, CONFIGMAPS)
    assert lists(pool) == 2


def _event(pool):
    pool.watches[-1][1].event()


def _end(pool):
    pool.watches[-1][1].server_end.close()


def _nothing(_pool):
    pass


@pytest.mark.parametrize("watch_status, meanwhile, answers_again", [
    (200, _nothing, True),
    (200, _event, False),
    (200, _end, False),
    (403, _nothing, False),
    (410, _nothing, False),
], ids=["nothing-heard-on-the-watch-the-list-answers", "a-change-heard-on-the-watch-lists-again",
        "the-watch-ended-lists-again", "a-user-who-may-not-watch-lists-again", "a-resource-version-too-old-lists-again"])
def test_a_kept_list_answers_only_while_the_watch_from_it_heard_nothing(watch_status, meanwhile, answers_again):
    (session,), pool, _memory, _clock = sessions()
    pool.watch_status = watch_status
    listed(session, CONFIGMAPS)
    assert [path for path, _answer in pool.watches] == [CONFIGMAPS]
    meanwhile(pool)
    listed(session, CONFIGMAPS)
    assert lists(pool) == (1 if answers_again else 2)
    answer = pool.watches[0][1]
    if watch_status == 200:
        assert answer.closed is not answers_again and not answer.released
    else:   # refused: its connection is drained and goes back to the pool, open
        assert answer.drained and answer.released and not answer.closed


def test_the_guard_asks_for_a_watch_from_the_lists_resource_version_that_outlives_the_entry():
    (session,), _pool, memory, _clock = sessions(seconds=10.0)
    asked = []

    class Recording(CountingPool):
        def request(self, method, url, **kwargs):
            asked.append(url)
            return super().request(method, url, **kwargs)

    recording = Recording({CONFIGMAPS: []})
    session = ApiSession(FakeApiClient(recording), memory=memory)
    listed(session, CONFIGMAPS)
    assert asked[1].endswith(f"{CONFIGMAPS}?watch=1&resourceVersion=42&timeoutSeconds=12&allowWatchBookmarks=false")
    memory.close()
    assert recording.watches[0][1].closed


def test_a_list_without_a_resource_version_is_not_kept():
    pool = CountingPool({CONFIGMAPS: []})
    pool.request = lambda method, url, **kwargs: Raw(200, {"items": [], "metadata": {}})
    session = ApiSession(FakeApiClient(pool), memory=ListMemory())
    listed(session, CONFIGMAPS)
    assert session.memory.recall(session._memory_id, session.server, CONFIGMAPS) is None  # pylint: disable=protected-access


def test_a_change_sent_with_the_watchs_headers_is_heard():
    """A proxy may deliver the first event with the answer's headers: the reader that parsed them holds it, not the
    socket."""
    answer = WatchAnswer()
    answer.event()
    reader = answer.connection.sock.makefile("rb")
    reader.peek(1)  # what parsing the headers leaves in the reader's buffer
    answer._fp = type("HTTPResponse", (), {"fp": reader})()  # pylint: disable=protected-access
    guard = ListGuard.of(answer)
    assert guard is not None and not guard.quiet()
    quiet = WatchAnswer()
    quiet._fp = type("HTTPResponse", (), {"fp": quiet.connection.sock.makefile("rb")})()  # pylint: disable=protected-access
    assert ListGuard.of(quiet).quiet()


def test_a_list_the_memory_does_not_take_ends_its_watch():
    (session,), pool, memory, _clock = sessions()

    class WriteWhileWatching(CountingPool):
        def request(self, method, url, **kwargs):
            if "watch=1" in url:
                memory.forget("https://127.0.0.1:6443", f"{CONFIGMAPS}/b")  # a write while the guard is asked for
            return super().request(method, url, **kwargs)

    racing = WriteWhileWatching(pool.items)
    session = ApiSession(FakeApiClient(racing), memory=memory)
    listed(session, CONFIGMAPS)
    assert racing.watches[0][1].closed
    listed(session, CONFIGMAPS)
    assert lists(racing) == 2


def test_a_kept_list_answers_nothing_before_its_apply_is_done_and_its_watch_opened():
    (session,), pool, _memory, _clock = sessions()
    session.list(CONFIGMAPS, reuse=True)
    session.list(CONFIGMAPS, reuse=True)   # the same apply, still under way: no watch yet, listed again
    assert lists(pool) == 2 and not pool.watches
    session.guard_kept()
    session.list(CONFIGMAPS, reuse=True)
    assert lists(pool) == 2 and [path for path, _answer in pool.watches] == [CONFIGMAPS]
    assert (session.requests, session.watches) == (3, 1)   # what the run counts at -vvv


def test_a_list_its_own_apply_wrote_to_costs_no_watch():
    (session,), pool, _memory, _clock = sessions()
    session.list(CONFIGMAPS, reuse=True)
    session.request("PATCH", f"{CONFIGMAPS}/a", body={})   # a first run: the phase writes what it listed
    session.guard_kept()
    assert not pool.watches
    listed(session, CONFIGMAPS)
    assert lists(pool) == 2


def test_an_ended_watch_does_not_hand_its_closed_connection_back_to_the_pool():
    (session,), pool, memory, _clock = sessions()
    listed(session, CONFIGMAPS)
    memory.close()
    answer = pool.watches[0][1]
    assert answer.closed and not answer.released
