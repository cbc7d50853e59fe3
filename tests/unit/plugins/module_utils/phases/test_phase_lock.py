"""One run at a time: the lock's rules (expiry by the server's clock, renewal, who holds it, what a second run reads)
and how the run record takes, keeps and releases it (a session stand-in with resourceVersions and preconditions)."""

from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from ansible_collections.phasekit.kube.plugins.module_utils.kube.session import ApiError, Response
from ansible_collections.phasekit.kube.plugins.module_utils.running.lock import (
    ACQUIRED, BY, DURATION, EXPIRED, FREE, HOLDER, LIVE, OURS, RENEWED, LockHolder, LockSettings, break_command,
    by_text, due_for_renewal, held_message, holder_by, holder_gone, holder_of, lock_state, parse_stamp, run_started)
from ansible_collections.phasekit.kube.plugins.module_utils.running.record import (
    LockRefused, RunInfo, RunRecords, entry_for, record_name)

NOW = parse_stamp("2026-11-27T12:00:00Z")
RUN = RunInfo(run="20261127T115900Z-aaaa", plan="site", version="0.1.0", by="ci@runner")
OTHER = "20261127T115800Z-bbbb"
BY_JSON = json.dumps({"user": "alice", "host": "ctl", "pid": 4242, "started": "2026-11-27T11:58:00Z",
                      "job": "AWX job 12"})


def holder(run=OTHER, renewed_ago=10.0, duration=120.0):
    return LockHolder(run=run, by=BY_JSON, acquired=NOW - 60, renewed=NOW - renewed_ago, duration=duration)


# ---------------------------------------------------------------- the rules


@pytest.mark.parametrize("found, expected", [
    (None, FREE),
    (holder(run=RUN.run), OURS),
    (holder(renewed_ago=10), LIVE),
    (holder(renewed_ago=120), LIVE),
    (holder(renewed_ago=121), EXPIRED),
    (LockHolder(run=OTHER, by="", acquired=None, renewed=None, duration=120), EXPIRED),
    (LockHolder(run=OTHER, by="", acquired=NOW - 5, renewed=None, duration=120), LIVE),
], ids=["no-holder-is-free", "this-run-holds-it", "renewed-within-its-duration-is-live",
        "renewed-exactly-its-duration-ago-is-still-live", "renewed-longer-ago-is-expired",
        "a-holder-without-readable-times-is-expired", "never-renewed-counts-from-acquired"])
def test_lock_state_by_the_servers_clock(found, expected):
    assert lock_state(found, RUN.run, NOW) == expected


@pytest.mark.parametrize("found, due", [
    (holder(run=RUN.run, renewed_ago=10), False),
    (holder(run=RUN.run, renewed_ago=40), True),
    (None, True),
], ids=["renewed-recently-is-not-due", "a-third-of-the-duration-is-due", "nothing-known-is-due"])
def test_renewal_is_due_after_a_third_of_the_duration(found, due):
    assert due_for_renewal(found, NOW) is due


@pytest.mark.parametrize("annotations, expected", [
    ({}, None),
    ({HOLDER: ""}, None),
    ({HOLDER: OTHER, BY: BY_JSON, ACQUIRED: "2026-11-27T11:59:00Z", RENEWED: "2026-11-27T11:59:50Z", DURATION: "30"},
     LockHolder(run=OTHER, by=BY_JSON, acquired=NOW - 60, renewed=NOW - 10, duration=30.0)),
    ({HOLDER: OTHER, RENEWED: "yesterday", DURATION: "long"},
     LockHolder(run=OTHER, by="", acquired=None, renewed=None, duration=120.0)),
], ids=["no-annotations-no-holder", "an-empty-holder-is-none", "every-annotation-read",
        "times-written-badly-read-as-unknown"])
def test_holder_from_annotations(annotations, expected):
    assert holder_of(annotations) == expected


def test_holder_annotations_read_back_as_written():
    written = holder(run=RUN.run)
    assert holder_of(written.annotations()) == written


@pytest.mark.parametrize("environ, job", [
    ({}, None),
    ({"AWX_JOB_ID": "12"}, "AWX job 12"),
    ({"JOB_ID": "7"}, "AWX job 7"),
    ({"CI_PIPELINE_ID": "991"}, "CI pipeline 991"),
    ({"GITHUB_RUN_ID": "55"}, "GitHub run 55"),
], ids=["no-job", "awx-job-id", "job-id", "gitlab-pipeline", "github-run"])
def test_holder_by_names_the_job_the_environment_names(environ, job):
    by = json.loads(holder_by(RUN.run, environ))
    assert by.get("job") == job
    assert by["started"] == "2026-11-27T11:59:00Z"
    assert set(by) >= {"user", "host", "pid", "started"}


@pytest.mark.parametrize("by, text", [
    (BY_JSON, "alice@ctl (pid 4242, started 2026-11-27T11:58:00Z, AWX job 12)"),
    ("someone by hand", "someone by hand"),
    ("", "unknown"),
], ids=["json-as-written", "a-string-a-person-wrote", "nothing"])
def test_by_text_for_people(by, text):
    assert by_text(by) == text


def test_run_started_is_the_run_ids_time():
    assert run_started("20261124T144501Z-3fa2") == "2026-11-24T14:45:01Z"
    assert run_started("my-run") == ""


def test_a_second_run_reads_who_holds_it_since_when_and_how_to_wait_or_break_it():
    message = held_message("c1", "ns", "phasekit-run-site.c1", holder(renewed_ago=12), NOW)
    for part in (f"run {OTHER}", "alice@ctl (pid 4242", "AWX job 12", "since 2026-11-27T11:59:00Z",
                 "last renewed 2026-11-27T11:59:48Z (12s ago)", "lease 120s", "plan_lock_timeout",
                 "nothing was written", break_command("ns", "phasekit-run-site.c1")):
        assert part in message
    assert break_command("ns", "rec") == (
        "kubectl annotate configmap rec -n ns phasekit.kube/lock-holder- phasekit.kube/lock-by- "
        "phasekit.kube/lock-acquired- phasekit.kube/lock-renewed- phasekit.kube/lock-duration-")


# ---------------------------------------------------------------- the record holds it


class Server:
    """ConfigMaps with resourceVersions, merge patches with a resourceVersion precondition, a Date (``now``)."""

    def __init__(self):
        self.objects: dict[str, dict] = {}
        self.version = 100
        self.now = NOW
        self.forbidden = False
        self.read_only = False     # get, no create or patch (a view user)
        self.no_namespace = False  # the record's namespace does not exist (yet)

    def session(self):
        return Session(self)

    def put(self, path, obj):
        self.version += 1
        obj = copy.deepcopy(obj)
        obj.setdefault("metadata", {})["resourceVersion"] = str(self.version)
        self.objects[path] = obj
        return copy.deepcopy(obj)


class Session:
    def __init__(self, server):
        self.server = server
        self.calls: list[tuple] = []
        self.before_write = None

    def server_time(self):
        return self.server.now

    def request(self, method, path, *, body=None, content_type="application/json", attempts=None, **_):
        self.calls.append((method, path, copy.deepcopy(body)))
        if method != "GET" and self.before_write is not None:
            self.before_write(method, path)
        server = self.server
        if server.forbidden:
            raise ApiError(403, "Forbidden", 'configmaps is forbidden: User "dev" cannot get resource "configmaps"')
        if server.read_only and method != "GET" and "/configmaps/phasekit-run-" in path + "/" + str(
                (body or {}).get("metadata", {}).get("name", "")):
            raise ApiError(403, "Forbidden", 'configmaps is forbidden: User "dev" cannot patch resource "configmaps"')
        if "/secrets" in path:
            raise ApiError(404, "NotFound", "not found")
        if method == "GET":
            if path not in server.objects:
                raise ApiError(404, "NotFound", "not found")
            return Response(200, copy.deepcopy(server.objects[path]))
        if method == "POST" and server.no_namespace:
            raise ApiError(404, "NotFound", 'namespaces "ns" not found')
        if method == "POST":
            where = f"{path}/{body['metadata']['name']}"
            if where in server.objects:
                raise ApiError(409, "AlreadyExists", "exists")
            return Response(201, server.put(where, body))
        if method == "PATCH" and "/configmaps/phasekit-run-" not in path:
            return Response(200, {})   # an object of the phase
        current = server.objects.get(path)
        if current is None:
            raise ApiError(404, "NotFound", "not found")
        wanted = (body.get("metadata") or {}).get("resourceVersion")
        if wanted is not None and wanted != current["metadata"]["resourceVersion"]:
            raise ApiError(409, "Conflict", "the object has been modified")
        merged = copy.deepcopy(current)
        merged.setdefault("data", {}).update(body.get("data") or {})
        annotations = merged["metadata"].setdefault("annotations", {})
        for key, value in ((body.get("metadata") or {}).get("annotations") or {}).items():
            if value is None:
                annotations.pop(key, None)
            else:
                annotations[key] = value
        return Response(200, server.put(path, merged))


PATH = f"/api/v1/namespaces/ns/configmaps/{record_name('site', 'c1')}"


def run_records(server, run=RUN, timeout=0.0, duration=120.0, release_after=None, sleeps=None):
    session = server.session()

    def sleep(seconds):
        if sleeps is not None:
            sleeps.append(seconds)
        server.now += seconds

    records = RunRecords(run, session_for=lambda host: session, namespace_for=lambda host: "ns",
                         lock=LockSettings(timeout=timeout, duration=duration, by=BY_JSON),
                         release_after=release_after, sleep=sleep, clock=lambda: server.now)
    return records, session


def a_record(server, annotations=None, entries=None):
    server.put(PATH, {"apiVersion": "v1", "kind": "ConfigMap",
                      "metadata": {"name": record_name("site", "c1"), "namespace": "ns",
                                   "annotations": {"phasekit.kube/plan": "site", "phasekit.kube/host": "c1",
                                                   **(annotations or {})}},
                      "data": {key: json.dumps(value) for key, value in (entries or {}).items()}})


def entry(run=RUN, result="changed"):
    return entry_for(run, result=result, started=NOW, duration=1.0, digest=None)


def writes(session):
    return [call for call in session.calls if call[0] != "GET"]


def test_the_first_write_takes_the_lock_with_the_version_the_run_read():
    server = Server()
    a_record(server)
    records, session = run_records(server)
    records.begin("c1")
    read = server.objects[PATH]["metadata"]["resourceVersion"]
    session.request("PATCH", "/api/v1/namespaces/app/configmaps/a1", body={})
    method, path, body = writes(session)[1]   # (the session lists a request before its hook runs)
    assert (method, path) == ("PATCH", PATH)
    assert body["metadata"]["resourceVersion"] == read
    assert body["metadata"]["annotations"][HOLDER] == RUN.run
    assert holder_of(server.objects[PATH]["metadata"]["annotations"]).run == RUN.run
    session.request("PATCH", "/api/v1/namespaces/app/configmaps/a2", body={})
    assert len([call for call in writes(session) if call[1] == PATH]) == 1   # taken once


def test_a_live_foreign_holder_fails_the_first_writing_phase_at_once_naming_it():
    server = Server()
    a_record(server, holder().annotations())
    records, session = run_records(server)
    with pytest.raises(LockRefused, match=f"run {OTHER} by alice@ctl"):
        records.begin("c1")
    assert writes(session) == []
    with pytest.raises(LockRefused):   # and nothing else is written there by this run
        session.request("PATCH", "/api/v1/namespaces/app/configmaps/a1", body={})
    assert writes(session) == [("PATCH", "/api/v1/namespaces/app/configmaps/a1", {})]   # the attempt, refused
    assert "not written" in records.write("c1", "one", entry())
    assert holder_of(server.objects[PATH]["metadata"]["annotations"]).run == OTHER


def test_a_run_that_took_the_lock_between_the_read_and_the_first_write_is_named():
    server = Server()
    a_record(server)
    records, session = run_records(server)
    records.begin("c1")
    rival, rival_session = run_records(server, run=RunInfo(run=OTHER, plan="site", version="0.1.0", by="b@x"))
    rival.begin("c1", acquire=True)
    with pytest.raises(LockRefused, match=f"plan locked by another run .*run {OTHER}"):
        session.request("PATCH", "/api/v1/namespaces/app/configmaps/a1", body={})
    assert holder_of(server.objects[PATH]["metadata"]["annotations"]).run == OTHER


def test_a_run_that_acted_and_released_meanwhile_fails_this_run_asking_to_run_again():
    server = Server()
    a_record(server)
    records, session = run_records(server)
    records.begin("c1")
    other = RunInfo(run=OTHER, plan="site", version="0.1.0", by="b@x")
    rival = run_records(server, run=other, release_after={"c1": "one"})[0]
    rival.begin("c1", acquire=True)
    assert rival.write("c1", "one", entry(run=other)) is None
    assert holder_of(server.objects[PATH]["metadata"]["annotations"]) is None   # released
    with pytest.raises(LockRefused, match=f"another run acted on this cluster .*run {OTHER} by b@x.*run again"):
        session.request("PATCH", "/api/v1/namespaces/app/configmaps/a1", body={})


def test_an_expired_lock_is_taken_over_saying_from_whom():
    server = Server()
    a_record(server, holder(renewed_ago=500).annotations())
    records, session = run_records(server)
    records.begin("c1", acquire=True)
    assert holder_of(server.objects[PATH]["metadata"]["annotations"]).run == RUN.run
    notice = records.notice("c1")
    assert f"took over an expired lock on ConfigMap ns/{record_name('site', 'c1')} from run {OTHER}" in notice
    assert "last renewed 2026-11-27T11:51:40Z (500s ago)" in notice
    assert records.notice("c1") is None   # said once


def test_a_no_op_run_writes_once_its_flush_with_the_precondition_and_no_holder_left():
    server = Server()
    a_record(server, entries={"one": [entry(run=RunInfo(run=OTHER, plan="site", version="0.1.0", by="b@x"))]})
    read = server.objects[PATH]["metadata"]["resourceVersion"]
    records, session = run_records(server, release_after={"c1": "two"})
    records.begin("c1")
    assert records.write("c1", "one", entry(result="ok"), wait=True) is None
    assert writes(session) == []
    assert records.flush(release=lambda host: True) == []
    (method, path, body), = writes(session)
    assert (method, path, body["metadata"]["resourceVersion"]) == ("PATCH", PATH, read)
    assert HOLDER not in server.objects[PATH]["metadata"]["annotations"]
    assert [call[0] for call in session.calls] == ["GET", "PATCH"]


def test_the_last_phases_entry_releases_the_lock_in_the_same_write():
    server = Server()
    a_record(server)
    records, session = run_records(server, release_after={"c1": "two"})
    records.begin("c1", acquire=True)
    records.write("c1", "one", entry())
    assert HOLDER in server.objects[PATH]["metadata"]["annotations"]
    records.write("c1", "two", entry(result="ok"), wait=True)
    assert HOLDER not in server.objects[PATH]["metadata"]["annotations"]
    assert len(writes(session)) == 3   # taken, first entry, last entry with the release
    assert records.flush(release=lambda host: True) == []
    assert len(writes(session)) == 3


def test_a_step_that_is_not_the_hosts_last_keeps_the_lock_renewed_at_its_end():
    server = Server()
    a_record(server)
    records, session = run_records(server)
    records.begin("c1", acquire=True)
    server.now += 30
    records.flush(release=lambda host: False)
    kept = holder_of(server.objects[PATH]["metadata"]["annotations"])
    assert kept.run == RUN.run and kept.renewed == NOW + 30 and kept.acquired == NOW


def test_a_missing_record_is_created_as_the_acquisition_and_a_rival_create_is_named():
    server = Server()
    records, session = run_records(server)
    rival = run_records(server, run=RunInfo(run=OTHER, plan="site", version="0.1.0", by="b@x"))[0]
    records.begin("c1")
    rival.begin("c1", acquire=True)
    assert holder_of(server.objects[PATH]["metadata"]["annotations"]).run == OTHER
    with pytest.raises(LockRefused, match=f"run {OTHER}"):
        session.request("PATCH", "/api/v1/namespaces/app/configmaps/a1", body={})


def test_the_next_step_renews_its_own_lock_and_fails_loudly_when_another_took_it_over():
    server = Server()
    a_record(server)
    first = run_records(server)[0]
    first.begin("c1", acquire=True)
    first.write("c1", "one", entry())
    first.flush(release=lambda host: False)
    server.now += 50
    later, session = run_records(server)
    later.begin("c1")
    assert holder_of(server.objects[PATH]["metadata"]["annotations"]).renewed == NOW + 50
    # killed while a task file ran: another run took the expired lock over
    server.now += 500
    rival = run_records(server, run=RunInfo(run=OTHER, plan="site", version="0.1.0", by="b@x"))[0]
    rival.begin("c1", acquire=True)
    last = run_records(server)[0]
    with pytest.raises(LockRefused, match=f"this run lost its lock .* now held by run {OTHER}"):
        last.begin("c1")


def test_waiting_polls_until_the_holder_is_gone_then_takes_it():
    server = Server()
    a_record(server, holder(renewed_ago=100, duration=120).annotations())
    sleeps = []
    records, session = run_records(server, timeout=60, sleeps=sleeps)
    records.begin("c1")
    assert holder_of(server.objects[PATH]["metadata"]["annotations"]).run == RUN.run
    assert 20 <= sum(sleeps) <= 25 and max(sleeps) <= 2
    assert "took over an expired lock" in records.notice("c1")


def test_waiting_gives_up_after_the_timeout_naming_the_holder_and_how_long():
    server = Server()
    a_record(server, holder(renewed_ago=0, duration=600).annotations())
    records, session = run_records(server, timeout=10, sleeps=[])
    with pytest.raises(LockRefused, match=r"run 20261127T115800Z-bbbb .*waited 10s \(plan_lock_timeout\)"):
        records.begin("c1")
    assert writes(session) == []


def test_a_user_who_may_not_read_the_record_gets_the_verbs_and_namespace_and_no_write():
    server = Server()
    server.forbidden = True
    records, session = run_records(server)
    with pytest.raises(LockRefused, match="needs get, create and patch on ConfigMaps in namespace ns.*nothing was "
                                          "written.*plan_record: false"):
        records.begin("c1")


def test_renewal_keeps_a_held_lock_and_finds_one_taken_over():
    server = Server()
    a_record(server)
    records, session = run_records(server, duration=30)
    records.begin("c1", acquire=True)
    server.now += 5
    records.renew()
    assert len(writes(session)) == 1   # not due yet
    server.now += 10
    records.renew()
    assert holder_of(server.objects[PATH]["metadata"]["annotations"]).renewed == NOW + 15
    annotations = server.objects[PATH]["metadata"]["annotations"]
    server.put(PATH, {**server.objects[PATH], "metadata": {**server.objects[PATH]["metadata"], "annotations": {
        **annotations, HOLDER: OTHER}}})   # broken by hand and taken by another
    server.now += 10
    records.renew()
    with pytest.raises(LockRefused, match=f"lost its lock .*run {OTHER}"):
        session.request("PATCH", "/api/v1/namespaces/app/configmaps/a1", body={})


def test_an_interrupted_step_sends_no_write_after_it_stops_and_releases():
    server = Server()
    a_record(server)
    records, session = run_records(server)
    records.begin("c1", acquire=True)
    records.stop_writes("the step was interrupted")
    with pytest.raises(LockRefused, match="interrupted"):
        session.request("PATCH", "/api/v1/namespaces/app/configmaps/a1", body={})
    assert records.flush(release=lambda host: True) == []
    assert HOLDER not in server.objects[PATH]["metadata"]["annotations"]


def test_a_user_who_may_read_but_not_write_the_record_takes_no_lock_and_writes_nothing():
    server = Server()
    a_record(server)
    server.read_only = True
    records, session = run_records(server)
    records.begin("c1")
    with pytest.raises(LockRefused, match="cannot take its lock in run record ConfigMap ns/phasekit-run-site.c1: 403 "
                                          "Forbidden.*needs get, create and patch on ConfigMaps in namespace ns.*"
                                          "nothing was written"):
        session.request("PATCH", "/api/v1/namespaces/app/configmaps/a1", body={})


def test_a_record_namespace_that_does_not_exist_yet_defers_the_lock_to_the_records_first_write():
    """A plan that makes its own namespace: the lock is taken with the record, at the phase's end, and said so."""
    server = Server()
    server.no_namespace = True
    records, session = run_records(server, release_after={"c1": "two"})
    records.begin("c1", acquire=True)
    assert "no lock yet: the run record's namespace ns does not exist" in records.notice("c1")
    session.request("PATCH", "/api/v1/namespaces/app/configmaps/a1", body={})   # not refused
    server.no_namespace = False    # the phase made it
    assert records.write("c1", "one", entry()) is None
    assert holder_of(server.objects[PATH]["metadata"]["annotations"]).run == RUN.run


def _dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


@pytest.mark.parametrize("where, gone", [
    ({}, True),
    ({"host": "elsewhere"}, False),
    ({"boot": "another-boot"}, False),
    ({"pidns": 1}, False),
    ({"pid": "alive"}, False),
], ids=["its-process-is-gone-from-this-controller", "another-controller-is-not-known",
        "another-boot-is-not-known", "another-pid-namespace-is-not-known", "a-live-process-holds-it"])
def test_a_holder_whose_process_is_gone_from_this_controller(where, gone):
    by = json.loads(holder_by(RUN.run))
    by["pid"] = os.getpid() if where.get("pid") == "alive" else _dead_pid()
    by.update({key: value for key, value in where.items() if key != "pid"})
    assert holder_gone(LockHolder(run=OTHER, by=json.dumps(by), acquired=NOW, renewed=NOW, duration=120)) is gone


def test_a_run_takes_over_at_once_the_live_lock_of_a_process_gone_from_this_controller():
    server = Server()
    by = json.loads(holder_by(OTHER))
    by["pid"] = _dead_pid()
    gone = LockHolder(run=OTHER, by=json.dumps(by), acquired=NOW - 5, renewed=NOW - 5, duration=120)
    a_record(server, gone.annotations())
    records, _session = run_records(server)
    records.begin("c1", acquire=True)
    assert holder_of(server.objects[PATH]["metadata"]["annotations"]).run == RUN.run
    assert "of a run whose process is gone from this controller" in records.notice("c1")


INTERRUPTED_STEP = textwrap.dedent("""
    import os, signal, subprocess, sys, threading
    from concurrent.futures import ThreadPoolExecutor
    sys.path.insert(0, {tests!r})
    import conftest  # the collection finder
    from ansible_collections.phasekit.kube.plugins.module_utils.running.lock import signals_interrupt

    def command(marker, signum):
        open(marker, "w").write("running")
        # the signal lands in this thread (as the kernel may choose), while the main thread waits for it
        signal.pthread_kill(threading.get_ident(), signum)
        subprocess.run(["sleep", "30"], check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    # as in a terminal: a parent's nohup would leave SIGHUP ignored here, and an ignored signal stays ignored
    signal.signal(int(sys.argv[2]), signal.SIG_DFL)
    pool = ThreadPoolExecutor(1)
    try:
        with signals_interrupt():
            try:
                pool.submit(command, sys.argv[1], int(sys.argv[2])).result()  # no timeout: a lock acquire
            finally:
                open(sys.argv[1], "w").write("released")   # the step's finally: the lock released
    finally:
        pool.shutdown(wait=False)
""")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=["term", "int", "hup"])
def test_a_signal_landing_in_the_commands_thread_ends_the_step_at_once(tmp_path, signum):
    """CI saw a Ctrl-C wait for a command's end: the kernel gave the signal to the command's thread and the main
    thread, blocked without a timeout, ran the handler only later. The step's finally runs at once, then the signal
    acts as before (the process ends by it)."""
    script = tmp_path / "step.py"
    script.write_text(INTERRUPTED_STEP.format(tests=str(Path(__file__).resolve().parents[4])))
    marker = tmp_path / "marker"
    started = time.monotonic()
    process = subprocess.run([sys.executable, str(script), str(marker), str(int(signum))],
                             env={**os.environ, "TMPDIR": str(tmp_path)}, timeout=60, check=False,
                             start_new_session=True, capture_output=True, text=True)
    assert process.returncode == -signum, process.stderr
    assert time.monotonic() - started < 20, process.stderr  # not after the 30 s command
    assert marker.read_text() == "released"
