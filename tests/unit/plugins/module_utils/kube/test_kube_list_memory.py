"""ListMemory: a collection listed during a fleet step answers a later LIST of the same session while it is young
and nothing that may have changed it was written; every write through any session of the memory forgets the
collections it may change (on its server: the object's collection, its all-namespaces list, a namespace's
collections); lists are not shared between sessions; a list asked for before a write is not kept."""

from __future__ import annotations

from test_kube_session import Raw  # pylint: disable=import-error

from ansible_collections.phasekit.kube.plugins.module_utils.kube.session import ApiSession, ListMemory

CONFIGMAPS = "/api/v1/namespaces/apps/configmaps"


class CountingPool:
    """Answers every LIST with its collection's items (one page), every other request with an empty object."""

    def __init__(self, items=None):
        self.items = items or {}
        self.requests = []

    def request(self, method, url, **_kwargs):
        path = url.split("://", 1)[1].split("/", 1)[1].split("?", 1)[0]
        self.requests.append((method, "/" + path))
        if method == "GET" and "/" + path in self.items:
            return Raw(200, {"items": [dict(item) for item in self.items["/" + path]], "metadata": {}})
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


def lists(pool):
    return sum(1 for method, path in pool.requests if method == "GET" and path == CONFIGMAPS)


def test_a_young_list_answers_again_and_an_old_one_is_asked_for():
    (session,), pool, _memory, clock = sessions()
    first = session.list(CONFIGMAPS, reuse=True)
    assert session.list(CONFIGMAPS, reuse=True) is first and lists(pool) == 1
    clock.now += 10.5
    session.list(CONFIGMAPS, reuse=True)
    assert lists(pool) == 2


def test_without_reuse_or_with_a_selector_the_server_is_asked():
    (session,), pool, _memory, _clock = sessions()
    session.list(CONFIGMAPS, reuse=True)
    session.list(CONFIGMAPS)
    session.list(CONFIGMAPS, reuse=True, label_selector="app=x")
    assert lists(pool) == 3


def test_a_write_forgets_what_it_may_change_and_nothing_else():
    (session,), pool, memory, _clock = sessions(items={
        CONFIGMAPS: [{"metadata": {"name": "a"}}], "/api/v1/configmaps": [{"metadata": {"name": "a"}}],
        "/api/v1/namespaces/apps/secrets": [], "/api/v1/namespaces/apps2/configmaps": [],
        "/apis/rbac.authorization.k8s.io/v1/clusterroles": []})
    every = list(pool.items)
    for path in every:
        session.list(path, reuse=True)
    session.request("PATCH", f"{CONFIGMAPS}/a", body={})
    before = len(pool.requests)
    for path in every:
        session.list(path, reuse=True)
    asked_again = [path for _method, path in pool.requests[before:]]
    # the object's collection and the all-namespaces list of its kind; not its namespace's other kinds, not the
    # same kind in a namespace whose name only starts alike, not cluster-scoped kinds
    assert asked_again == [CONFIGMAPS, "/api/v1/configmaps"]
    session.request("DELETE", "/api/v1/namespaces/apps")
    before = len(pool.requests)
    for path in every:
        session.list(path, reuse=True)
    asked_again = [path for _method, path in pool.requests[before:]]
    assert asked_again == [CONFIGMAPS, "/api/v1/namespaces/apps/secrets"]
    assert memory.recall(0, "https://127.0.0.1:6443", "/apis/rbac.authorization.k8s.io/v1/clusterroles") is not None


def test_a_write_through_another_session_forgets_but_lists_are_not_shared():
    (mine, other), pool, _memory, _clock = sessions(count=2)
    mine.list(CONFIGMAPS, reuse=True)
    other.list(CONFIGMAPS, reuse=True)          # its own list: another user may not read what this one did
    assert lists(pool) == 2
    other.request("POST", CONFIGMAPS, body={})  # another inventory host on the same cluster writes there
    mine.list(CONFIGMAPS, reuse=True)
    assert lists(pool) == 3


def test_writes_to_another_server_forget_nothing():
    (mine,), pool, memory, clock = sessions()
    elsewhere = ApiSession(FakeApiClient(pool, "https://10.0.0.9:6443"), memory=memory, clock=clock)
    mine.list(CONFIGMAPS, reuse=True)
    elsewhere.request("PATCH", f"{CONFIGMAPS}/a", body={})
    mine.list(CONFIGMAPS, reuse=True)
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
    session.list(CONFIGMAPS, reuse=True)
    session.list(CONFIGMAPS, reuse=True)
    assert lists(racing) == 2


def test_clear_forgets_everything_and_the_oldest_lists_make_room():
    (session,), pool, memory, _clock = sessions(max_items=3, items={
        CONFIGMAPS: [{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}],
        "/api/v1/namespaces/apps/secrets": [{"metadata": {"name": "s"}}, {"metadata": {"name": "t"}}],
        "/api/v1/namespaces/apps/services": [{"metadata": {"name": n}} for n in "wxyz"]})
    session.list(CONFIGMAPS, reuse=True)
    session.list("/api/v1/namespaces/apps/secrets", reuse=True)   # 4 > 3: the configmaps go
    session.list("/api/v1/namespaces/apps/services", reuse=True)  # larger than the memory: not kept
    session.list("/api/v1/namespaces/apps/secrets", reuse=True)
    session.list(CONFIGMAPS, reuse=True)
    assert [path for _method, path in pool.requests] == [
        CONFIGMAPS, "/api/v1/namespaces/apps/secrets", "/api/v1/namespaces/apps/services", CONFIGMAPS]
    memory.clear()
    session.list(CONFIGMAPS, reuse=True)
    assert lists(pool) == 3


def test_a_session_without_memory_always_asks():
    pool = CountingPool({CONFIGMAPS: []})
    session = ApiSession(FakeApiClient(pool))
    session.list(CONFIGMAPS, reuse=True)
    session.list(CONFIGMAPS, reuse=True)
    assert lists(pool) == 2
