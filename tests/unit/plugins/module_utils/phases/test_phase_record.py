"""Run records: what an entry holds, how a cluster's record is read once and written per phase, resume's rule,
and the views of status and history (a session stand-in that keeps one ConfigMap per path)."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
from phase_helpers import run_entry
import yaml

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kube.session import ApiError, Response, TransportError
from ansible_collections.phasekit.kube.plugins.module_utils.running.builtin import BuiltinExecutors
from ansible_collections.phasekit.kube.plugins.module_utils.records.vocabulary import MAX_RECORD_MESSAGE, bundle_digest
from ansible_collections.phasekit.kube.plugins.module_utils.running.record import (
    KEEP, RunInfo, RunRecords, entry_for, phase_key, phase_recorder, record_name, resumable, run_history)
from ansible_collections.phasekit.kube.plugins.module_utils.running.runner import Outcome, PhaseRecord, run_phases
from ansible_collections.phasekit.kube.plugins.module_utils.planning.views import history_lines, last_run_label, summary_lines
from ansible_collections.phasekit.kube.plugins.module_utils.version import COLLECTION_VERSION

RUN = RunInfo(run="20261124T144501Z-3fa2", plan="site", version="0.1.0", by="ci@runner")


class Store:
    """An API session that keeps ConfigMaps by path, as the API server would for these verbs."""

    def __init__(self, down=False, forbidden=False, read_only=False, no_secrets=False):
        self.objects: dict[str, dict] = {}
        self.calls: list[tuple] = []
        self.down = down
        self.forbidden = forbidden
        self.read_only = read_only
        self.no_secrets = no_secrets   # a user who may write ConfigMaps, not read Secrets (RBAC view + configmaps)

    def request(self, method, path, *, body=None, content_type="application/json", attempts=None, **_):
        self.calls.append((method, path, attempts))
        if self.down:
            raise TransportError("cannot reach the API server https://10.0.0.1:6443")
        if self.no_secrets and "/secrets" in path:
            raise ApiError(403, "Forbidden", 'secrets "phasekit-run-key" is forbidden: User "dev" cannot get resource')
        if method == "DELETE":
            self.objects.pop(path, None)
            return Response(200, {})
        if self.forbidden:
            raise ApiError(403, "Forbidden", 'configmaps is forbidden: User "dev" cannot get resource "configmaps"')
        if self.read_only and method != "GET":
            raise ApiError(403, "Forbidden", 'configmaps is forbidden: User "dev" cannot create resource')
        if method == "GET":
            if path not in self.objects:
                raise ApiError(404, "NotFound", "not found")
            return Response(200, json.loads(json.dumps(self.objects[path])))
        if method == "POST":
            where = f"{path}/{body['metadata']['name']}"
            if where in self.objects:
                raise ApiError(409, "AlreadyExists", "exists")
            self.objects[where] = body
            return Response(201, body)
        assert method == "PATCH" and content_type == "application/merge-patch+json"
        if path not in self.objects:
            raise ApiError(404, "NotFound", "not found")
        self.objects[path]["data"].update(body["data"])
        return Response(200, self.objects[path])


def records(store, namespace="ns", keep=KEEP, run=RUN):
    return RunRecords(run, session_for=lambda host: store, namespace_for=lambda host: namespace, keep=keep)


def entry(result="changed", digest="sha256:aa", run=RUN):
    return entry_for(run, result=result, started=1764000000.0, duration=1.23456, digest=digest)


def test_an_entry_names_the_run_who_and_when():
    assert entry() == {"run": RUN.run, "action": "run", "result": "changed", "started": "2025-11-24T16:00:00Z",
                       "duration": 1.235, "digest": "sha256:aa", "plan": "site", "version": "0.1.0",
                       "by": "ci@runner"}
    failed = entry_for(RUN, result="failed", started=0, duration=0, digest=None, msg="x" * 1000)
    assert len(failed["msg"]) == MAX_RECORD_MESSAGE + 3


@pytest.mark.parametrize("plan, host, name", [
    ("site", "c1", "phasekit-run-site.c1"),
    ("", "c1", "phasekit-run-all.c1"),
    ("col.a", "c1", "phasekit-run-col-a--392f9a7211.c1"),
    ("Col_A", "c1", "phasekit-run-col-a--56e8b65676.c1"),
    ("site", "prod.eu1", "phasekit-run-site.prod-eu1--65189fbd8e"),
], ids=["a-dns-label-is-kept-as-it-was", "no-plan-is-all", "a-dotted-name-gets-its-hash",
        "a-name-that-slugs-alike-gets-another-hash", "a-host-name-too"])
def test_record_name_is_a_dns_subdomain_per_plan_and_host(plan, host, name):
    assert record_name(plan, host) == name
    assert re.fullmatch(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?", name)


@pytest.mark.parametrize("names", [
    [("col.a", "h"), ("Col_A", "h"), ("col-a", "h"), ("col_a", "h"), ("COL-A", "h")],
    [("p", "c.1"), ("p", "c-1"), ("p", "C_1")],
    [("a.b", "c"), ("a", "b.c"), ("a-b", "c"), ("a", "b-c")],
    [("x" * 400, "h"), ("x" * 399 + "y", "h"), ("x" * 400, "h2")],
], ids=["plans-that-slug-alike", "hosts-that-slug-alike", "plan-and-host-boundary", "names-too-long"])
def test_two_plans_or_hosts_never_share_a_record(names):
    made = [record_name(plan, host) for plan, host in names]
    assert len(set(made)) == len(made), made
    assert all(len(name) <= 253 for name in made)


def test_phase_keys_are_configmap_keys():
    assert phase_key("apps/hello") == "apps.hello"
    assert phase_key("weird name:1") == "weird_name_1"


@pytest.mark.parametrize("names, keys", [
    (["check#1", "check#2", "check_2"], ["check_1_", "check_2_", "check_2"]),
    (["a/b#2", "a.b"], ["a.b_2_", "a.b"]),
], ids=["each-run-of-a-repeated-phase-has-its-key", "repeated-child"])
def test_each_entry_of_a_repeated_phase_keeps_a_record_key_of_its_own(names, keys):
    """A phase name cannot end in '_': no phase's key is the key of another phase's k-th run."""
    assert [phase_key(name) for name in names] == keys


def test_digest_ignores_key_order_and_sees_values():
    assert bundle_digest({"a": 1, "b": [1, 2]}) == bundle_digest({"b": [1, 2], "a": 1})
    assert bundle_digest({"a": 1}) != bundle_digest({"a": 2})
    assert bundle_digest({}).startswith("sha256:")


def test_first_write_creates_the_configmap_then_merge_patches_its_key_only():
    store = Store()
    kept = records(store)
    assert kept.write("c1", "apps/one", entry()) is None
    assert kept.write("c1", "apps/two", entry()) is None
    assert [call[0] for call in store.calls] == ["GET", "POST", "PATCH"]   # read once, then one write per phase
    stored = store.objects["/api/v1/namespaces/ns/configmaps/phasekit-run-site.c1"]
    assert stored["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "phasekit.kube"
    assert stored["metadata"]["annotations"] == {"phasekit.kube/plan": "site", "phasekit.kube/host": "c1"}
    assert sorted(stored["data"]) == ["apps.one", "apps.two"]
    assert json.loads(stored["data"]["apps.one"])[0]["result"] == "changed"
    assert kept.flush() == [] and len(store.calls) == 3          # nothing waits


def test_unchanged_phases_wait_for_the_clusters_next_write_or_the_steps_end():
    store = Store()
    kept = records(store)
    assert kept.write("c1", "one", entry("ok"), wait=True) is None
    assert kept.write("c1", "two", entry("ok"), wait=True) is None
    assert kept.write("c2", "one", entry("ok"), wait=True) is None
    assert [call[0] for call in store.calls] == ["GET", "GET"]   # read once per cluster, nothing written yet
    assert kept.last("c1", "two")["result"] == "ok"              # this run sees its own entries
    kept.write("c1", "three", entry("changed"))                  # a phase that changed something: all of c1 now
    assert [call[0] for call in store.calls] == ["GET", "GET", "POST"]
    c1 = store.objects["/api/v1/namespaces/ns/configmaps/phasekit-run-site.c1"]
    assert sorted(c1["data"]) == ["one", "three", "two"]
    assert kept.flush() == []                                    # the step ends: c2's waiting entry
    assert store.calls[-1][0] == "POST" and "/api/v1/namespaces/ns/configmaps/phasekit-run-site.c2" in store.objects
    assert kept.flush() == [] and len(store.calls) == 4          # nothing left to write


def test_a_waiting_entry_is_written_once_the_oldest_waited_long_enough_or_a_phase_failed():
    store, now = Store(), [0.0]
    kept = RunRecords(RUN, session_for=lambda host: store, namespace_for=lambda host: "ns", flush_after=10,
                      clock=lambda: now[0])
    kept.write("c1", "one", entry("ok"), wait=True)
    now[0] = 9.9
    kept.write("c1", "two", entry("ok"), wait=True)
    assert [call[0] for call in store.calls] == ["GET"]
    now[0] = 10.0
    kept.write("c1", "three", entry("ok"), wait=True)            # "one" has waited 10 s: all three go now
    assert [call[0] for call in store.calls] == ["GET", "POST"]
    kept.write("c1", "four", entry("ok"), wait=True)
    kept.write("c1", "five", entry("failed"), patient=False)
    assert store.calls[-1] == ("PATCH", "/api/v1/namespaces/ns/configmaps/phasekit-run-site.c1", 1)
    stored = store.objects["/api/v1/namespaces/ns/configmaps/phasekit-run-site.c1"]
    assert sorted(stored["data"]) == ["five", "four", "one", "three", "two"]


def test_a_record_keeps_the_last_entries_newest_first_and_later_runs_read_them():
    store = Store()
    for number in range(5):
        run = RunInfo(run=f"r{number}", plan="site", version="0.1.0", by="me@here")
        records(store, keep=3, run=run).write("c1", "p", entry(run=run))
    later = records(store, keep=3)
    assert [one["run"] for one in later.entries("c1", "p")] == ["r4", "r3", "r2"]
    assert later.last("c1", "p")["run"] == "r4" and later.last("c1", "other") is None


def test_an_unreachable_or_forbidden_record_is_a_warning_never_an_error():
    for store, said in ((Store(down=True), "cannot reach"), (Store(forbidden=True), "403 Forbidden")):
        kept = records(store)
        problem = kept.write("c1", "p", entry())
        assert said in problem and "ConfigMap ns/phasekit-run-site.c1" in problem
        assert kept.write("c1", "q", entry()) is None       # one warning per cluster and run
        assert kept.last("c1", "p") is None
        with pytest.raises(PhasekitError, match=said):
            kept.entries("c1", "p")
        assert len(store.calls) == 1          # one failed read: nothing is tried again this run


def test_a_write_refused_when_the_step_ends_is_one_warning_per_cluster_and_is_tried_again():
    store = Store(read_only=True)
    kept = records(store)
    kept.write("c1", "one", entry("ok"), wait=True)
    kept.write("c1", "two", entry("ok"), wait=True)
    problems = kept.flush()
    assert len(problems) == 1 and "phase(s) one, two not written to ConfigMap ns/phasekit-run-site.c1" in problems[0]
    store.read_only = False
    assert kept.flush() == [] and store.calls[-1][0] == "POST"   # still pending: written by the next flush


def test_a_host_without_kubeconfig_has_no_record():
    def namespace_for(host):
        raise PhasekitError(f"host {host}: no kubeconfig")

    kept = RunRecords(RUN, session_for=lambda host: Store(), namespace_for=namespace_for)
    assert "no kubeconfig" in kept.write("c1", "p", entry())


def test_hand_edited_garbage_counts_as_no_record():
    store = Store()
    store.objects["/api/v1/namespaces/ns/configmaps/phasekit-run-site.c1"] = {"data": {"p": "{not json", "q": "[1]"}}
    kept = records(store)
    assert kept.last("c1", "p") is None and kept.last("c1", "q") is None
    assert kept.write("c1", "p", entry()) is None


D = "hmac-sha256:d"


@pytest.mark.parametrize("last, digest, expected", [
    ({"result": "changed", "digest": D}, D, True),
    ({"result": "ok", "digest": D, "action": "run"}, D, True),
    ({"result": "failed", "digest": D}, D, False),
    ({"result": "ok", "digest": "hmac-sha256:old"}, D, False),
    ({"result": "ok", "digest": D, "action": "destroy"}, D, False),
    (None, D, False),
    ({"result": "ok", "digest": None}, None, False),
    ({"result": "ok", "digest": "sha256:d"}, "sha256:d", False),
], ids=["changed", "ok", "failed", "other-digest", "destroyed", "no-entry", "no-digest", "unkeyed-digest"])
def test_resume_skips_only_a_success_with_the_same_digest(last, digest, expected):
    assert resumable(last, digest) is expected


def test_the_recorder_writes_finished_phases_and_leaves_skips_tasks_and_resumed_alone():
    store = Store()
    write = phase_recorder(records(store))

    def record(result, executor="apply", **details):
        return PhaseRecord(phase="p", host="c1", executor=executor, result=result, duration=0.5,
                           details={"digest": "sha256:d", **details}, started=1764000000.0)

    for one in (record("skipped"), record("ok", "tasks"), record("skipped", resumed=True)):
        write(run_entry("p"), one)
    assert store.calls == []
    write(run_entry("q"), record("ok"))
    assert [call[0] for call in store.calls] == ["GET"]    # unchanged: waits for the next write
    write(run_entry("p"), record("changed"))
    assert [call[0] for call in store.calls] == ["GET", "POST"]
    failed = record("failed")
    failed.msg = "apply failed"
    write(run_entry("p"), failed)
    assert store.calls[-1][2] == 1            # a failed phase's record gets one try, no backoff
    assert [one["result"] for one in records(store).entries("c1", "p")] == ["failed", "changed"]


def test_a_write_that_fails_after_a_success_warns_on_the_record():
    write = phase_recorder(records(Store(forbidden=True)))
    done = PhaseRecord(phase="p", host="c1", executor="apply", result="ok", duration=0.1, details={"digest": "d"})
    write(run_entry("p"), done)
    assert "403 Forbidden" in done.details["warnings"][0]


def test_run_phases_records_each_phase_before_the_next_starts():
    order = []

    def work(planned, context):
        order.append(("work", planned.name, context.host))
        return Outcome(changed=True, details={"digest": "d"})

    def recorded(planned, record):
        order.append(("record", planned.name, record.host))

    run_phases([run_entry("one", "apply", ["a"]), run_entry("two", "apply", ["a"])], work, hosts_in_play=["a"],
               recorded=recorded)
    assert order == [("work", "one", "a"), ("record", "one", "a"), ("work", "two", "a"), ("record", "two", "a")]


# ---------------------------------------------------------------- resume, in the executors


class Access:
    """ClusterAccess without clusters: a namespace per host, nothing to render."""

    def resolution(self, host):
        raise AssertionError("no cluster in this test")

    def session(self, host, connections):
        raise AssertionError("no cluster in this test")

    def secrets(self, host):
        return frozenset()


class Recorded(BuiltinExecutors):
    """Executors whose apply only counts, with a bundle from the phase's inline objects."""

    def __init__(self, store, **kwargs):
        super().__init__(Access(), records=records(store), render=lambda planned: [], **kwargs)
        self.applied = []

    def run_phase(self, entry, context):
        self.applied.append((entry.name, context.host))
        return Outcome(changed=True)


def plan(*names):
    return [run_entry(name, "apply", ["a", "b"], source=None, options={}) for name in names]


def test_resume_continues_each_cluster_from_its_first_phase_without_a_matching_success():
    store = Store()
    first = Recorded(store)
    run_phases(plan("one", "two", "three"), first, hosts_in_play=["a", "b"], recorded=phase_recorder(first.records))
    # b's two failed last time; everything else succeeded
    failed = entry_for(RUN, result="failed", started=0, duration=0, digest=first.digest(plan("two")[0], "b"))
    first.records.write("b", "two", failed, patient=False)
    again = Recorded(store, resume=True)
    report = run_phases(plan("one", "two", "three"), again, hosts_in_play=["a", "b"],
                        recorded=phase_recorder(again.records))
    assert again.applied == [("two", "b"), ("three", "b")]
    skipped = [(record.phase, record.host) for record in report.records if record.details.get("resumed")]
    assert skipped == [("one", "a"), ("one", "b"), ("two", "a"), ("three", "a")]
    assert "with the same bundle, not run again" in report.records[0].msg
    assert again.resumed_hosts() == ["b"]
    # a later step of the same run: b runs everything, a still resumes
    step = Recorded(store, resume=True, resumed_hosts=again.resumed_hosts())
    run_phases(plan("four"), step, hosts_in_play=["a", "b"])
    assert step.applied == [("four", "a"), ("four", "b")]       # four was never recorded anywhere


def test_a_changed_option_changes_the_digest_and_the_phase_runs_again():
    store = Store()
    first = Recorded(store)
    run_phases(plan("one"), first, hosts_in_play=["a"], recorded=phase_recorder(first.records))
    changed = [dataclasses.replace(plan("one")[0], options={"namespace": "elsewhere"})]
    again = Recorded(store, resume=True)
    run_phases(changed, again, hosts_in_play=["a"])
    assert again.applied == [("one", "a")]


def test_status_shows_the_last_run_and_whether_the_bundle_changed_since():
    store = Store()
    first = Recorded(store)
    run_phases(plan("one"), first, hosts_in_play=["a"], recorded=phase_recorder(first.records))

    class Status(Recorded):
        def run_phase(self, entry, context):
            return Outcome()

    status = Status(store, mode="status")
    report = run_phases(plan("one"), status, hosts_in_play=["a"], dry_run=True, status_mode=True)
    last = report.records[0].details["last_run"]
    assert last["result"] == "changed" and last["same_bundle"] and last["by"] == "ci@runner"
    assert last_run_label(last).startswith("changed 20") and last_run_label(last).endswith(" by ci@runner")
    lines = summary_lines([entry.to_dict() for entry in plan("one")], [record.to_dict() for record in report.records], ["a"], mode="status")
    assert lines[0].split()[-2:] == ["LAST", "RUN"] and "in sync" in lines[1] and "ci@runner" in lines[1]
    assert last_run_label({**last, "same_bundle": False}).endswith("(bundle changed since)")
    assert last_run_label(None) == "none recorded"


def test_history_groups_entries_by_run_newest_first():
    def one(run, started, result):
        return {"run": run, "started": started, "result": result, "by": "me@here", "version": "0.1.0"}

    runs = run_history({"one": [one("r2", "2026-11-24T10:00:05Z", "ok"), one("r1", "2026-11-24T09:00:00Z", "changed")],
                        "two": [one("r1", "2026-11-24T09:00:09Z", "failed")]}, ["one", "two"])
    assert [run["run"] for run in runs] == ["r2", "r1"]
    assert runs[1]["phases"] == {"one": "changed", "two": "failed"} and runs[1]["started"] == "2026-11-24T09:00:00Z"
    lines = history_lines([("c1", runs, ""), ("c2", [], ""), ("c3", [], "run record cannot be read: 403")],
                          ["one", "two"])
    assert lines[0].split() == ["CLUSTER", "STARTED", "RUN", "ACTION", "BY", "VERSION", "PHASES"]
    assert lines[2].endswith("one changed, two failed")
    assert lines[3].endswith("no run recorded") and lines[4].endswith("run record cannot be read: 403")


def test_the_recorded_version_is_the_collections():
    galaxy = yaml.safe_load((Path(__file__).resolve().parents[5] / "galaxy.yml").read_text())
    assert COLLECTION_VERSION == galaxy["version"]


# ---------------------------------------------------------------- digests a reader cannot test guesses against

RECORD = "/api/v1/namespaces/ns/configmaps/phasekit-run-site.c1"
KEY = "/api/v1/namespaces/ns/secrets/phasekit-run-key"


def test_digests_are_keyed_with_a_secret_made_once_and_read_once_per_cluster_and_run():
    store = Store()
    first = records(store)
    digest = first.digest("c1", "sha256:plain")
    assert digest.startswith("hmac-sha256:") and "plain" not in digest
    assert first.digest("c1", "sha256:plain") == digest and first.digest("c1", "sha256:other") != digest
    assert [call[:2] for call in store.calls] == [("GET", KEY), ("POST", KEY.rsplit("/", 1)[0])]
    secret = store.objects[KEY]
    assert secret["immutable"] is True and secret["type"] == "Opaque"
    assert secret["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "phasekit.kube"
    later = records(store)   # the next run reads the same key: the same content has the same digest
    assert later.digest("c1", "sha256:plain") == digest
    assert [call[0] for call in store.calls[2:]] == ["GET"]
    assert first.key_problem("c1") is None


def test_a_dry_run_reads_the_key_and_makes_none():
    store = Store()
    kept = RunRecords(RUN, session_for=lambda host: store, namespace_for=lambda host: "ns", create_key=False)
    assert kept.digest("c1", "sha256:plain") is None and kept.key_problem("c1") is None
    assert [call[0] for call in store.calls] == ["GET"] and KEY not in store.objects


def test_a_namespace_a_later_phase_makes_gets_its_key_then_and_the_phases_after_it_their_digests():
    store = Store()
    made = {"namespace": False}
    create = store.request

    def request(method, path, **kwargs):
        if method == "POST" and not made["namespace"]:
            store.calls.append((method, path, kwargs.get("attempts")))
            raise ApiError(404, "NotFound", 'namespaces "ns" not found')
        return create(method, path, **kwargs)

    store.request = request
    kept = records(store)
    assert kept.digest("c1", "sha256:plain") is None and kept.key_problem("c1") is None   # not there yet: no warning
    made["namespace"] = True   # a phase of the run made it
    digest = kept.digest("c1", "sha256:plain")
    assert digest.startswith("hmac-sha256:") and KEY in store.objects
    assert kept.digest("c1", "sha256:plain") == digest
    assert [call[0] for call in store.calls] == ["GET", "POST", "GET", "POST"]   # then read once per run


def test_without_access_to_the_key_phases_are_recorded_without_digest_and_said_once():
    store = Store(no_secrets=True)
    kept = records(store)
    assert kept.digest("c1", "sha256:plain") is None and kept.digest("c1", "sha256:plain") is None
    problem = kept.key_problem("c1")
    assert "cluster c1" in problem and "Secret ns/phasekit-run-key cannot be read or made: 403 Forbidden" in problem
    assert "plan_resume runs them again" in problem and "get and create on Secrets in namespace ns" in problem
    assert kept.key_problem("c1") is None      # once per cluster and run
    assert kept.write("c1", "p", entry(digest=None)) is None
    assert json.loads(store.objects[RECORD]["data"]["p"])[0]["digest"] is None
    assert not resumable(kept.last("c1", "p"), None)


def test_the_executor_warns_once_when_a_clusters_digests_cannot_be_keyed():
    store = Store(no_secrets=True)
    executors = Recorded(store)
    report = run_phases(plan("one", "two"), executors, hosts_in_play=["a"], recorded=phase_recorder(executors.records))
    warnings = [warning for record in report.records for warning in record.details.get("warnings", [])]
    assert len(warnings) == 1 and "no digest key" in warnings[0], warnings
    assert all("digest" not in record.details for record in report.records)


def test_plain_digests_of_a_former_version_are_not_resumable_and_dropped_by_the_next_write():
    store = Store()
    plain = [{"run": "r0", "result": "changed", "started": "2026-11-20T10:00:00Z", "digest": "sha256:" + "a" * 64}]
    store.objects["/api/v1/namespaces/ns/configmaps/phasekit-run-site.a"] = {
        "metadata": {"name": "phasekit-run-site.a"}, "data": {"one": json.dumps(plain), "two": json.dumps(plain)}}
    executors = Recorded(store, resume=True)
    run_phases(plan("one"), executors, hosts_in_play=["a"], recorded=phase_recorder(executors.records))
    assert executors.applied == [("one", "a")]           # not skipped: run again
    executors.records.flush()
    data = store.objects["/api/v1/namespaces/ns/configmaps/phasekit-run-site.a"]["data"]
    assert "sha256:" + "a" * 64 not in json.dumps(data)  # neither the phase run nor the one not run keep it
    assert json.loads(data["two"]) == [{**plain[0], "digest": None}]
    assert json.loads(data["one"])[0]["digest"].startswith("hmac-sha256:")


@pytest.mark.parametrize("annotations, taken_over", [
    ({"phasekit.kube/plan": "col.a", "phasekit.kube/host": "c1"}, True),
    ({"phasekit.kube/plan": "Col_A", "phasekit.kube/host": "c1"}, False),
    ({}, False),
], ids=["its-own-record-is-moved-to-the-new-name", "another-plans-record-is-left-alone", "unannotated-left-alone"])
def test_a_record_named_by_a_former_version_is_taken_over_only_when_it_names_this_plan(annotations, taken_over):
    store = Store()
    legacy = "/api/v1/namespaces/ns/configmaps/phasekit-run-col-a.c1"
    old = [{"run": "r0", "result": "changed", "started": "2026-11-20T10:00:00Z", "digest": None}]
    store.objects[legacy] = {"metadata": {"name": "phasekit-run-col-a.c1", "annotations": annotations},
                             "data": {"p": json.dumps(old)}}
    kept = records(store, run=RunInfo(run="r1", plan="col.a", version="0.1.0", by="me@here"))
    assert [one["run"] for one in kept.entries("c1", "p")] == (["r0"] if taken_over else [])
    kept.write("c1", "q", entry(digest=None))
    moved = store.objects["/api/v1/namespaces/ns/configmaps/phasekit-run-col-a--392f9a7211.c1"]
    assert sorted(moved["data"]) == (["p", "q"] if taken_over else ["q"])
    assert (legacy in store.objects) is not taken_over       # moved: the old name is gone


def test_a_record_deleted_during_the_run_is_made_again_with_this_runs_entries():
    store = Store()
    kept = records(store)
    kept.write("c1", "one", entry())
    del store.objects[RECORD]                 # kubectl delete configmap between two phases
    assert kept.write("c1", "two", entry()) is None
    assert sorted(store.objects[RECORD]["data"]) == ["one", "two"]
    assert store.objects[RECORD]["metadata"]["annotations"]["phasekit.kube/plan"] == "site"


# ---------------------------------------------------------------- entries edited by hand

GOOD = {"run": "r1", "result": "ok", "started": "2026-11-24T10:00:00Z", "action": "run", "by": "me@here",
        "version": "0.1.0", "duration": 1.5, "digest": None}


@pytest.mark.parametrize("text, problem", [
    ("{not json", "key p: expected a JSON list of run entries, got text that is not JSON (line 1 column 2)"),
    (json.dumps({"run": "r9"}), "key p: expected a JSON list of run entries, got an object"),
    (json.dumps([GOOD, 7]), "key p: entry 2: expected an object (a run entry), got a number; left out"),
    (json.dumps([GOOD, {**GOOD, "run": "r2", "started": 5}]),
     "key p: entry 2: field started: expected a UTC time such as 2026-11-24T14:45:01Z, got a number; left out"),
    (json.dumps([GOOD, {"run": "r2"}]), "key p: entry 2: missing field(s) result, started; left out"),
    (json.dumps([GOOD, {**GOOD, "rollout": "cni"}]),
     "key p: entry 2: field rollout: expected an object {phase, batch, of}, got a string; left out"),
    (json.dumps([GOOD, {**GOOD, "duration": True}]),
     "key p: entry 2: field duration: expected seconds, a number, got a boolean; left out"),
], ids=["not-json", "not-a-list", "entry-not-an-object", "wrong-type", "missing-fields", "rollout-not-an-object",
        "boolean-for-a-number"])
def test_history_names_a_hand_edited_entry_and_shows_the_rest(text, problem):
    store = Store()
    store.objects[RECORD] = {"metadata": {"name": "phasekit-run-site.c1"},
                             "data": {"p": text, "q": json.dumps([{**GOOD, "run": "r3", "result": "changed"}])}}
    kept = records(store)
    found = kept.problems("c1")
    assert found == [f"cluster c1: run record ConfigMap ns/phasekit-run-site.c1, {problem}"]
    runs = run_history({name: kept.entries("c1", name) for name in ("p", "q")}, ["p", "q"])
    shown = "\n".join(history_lines([("c1", runs, "; ".join(found))], ["p", "q"]))
    assert "q changed" in shown and "ConfigMap ns/phasekit-run-site.c1" in shown and "Error" not in shown
    assert ("p ok" in shown) is (text.startswith("[") and "r1" in text)


def test_a_run_asks_for_the_key_after_the_phase_and_a_failed_phase_once():
    """A phase may bring its cluster up: a run that compares nothing asks for the key when the phase ended."""
    store = Store()

    class Failing(Recorded):
        def run_phase(self, entry, context):
            store.calls.append(("APPLY", entry.name, None))
            return Outcome(changed=True, failed=entry.name == "bad")

    run_phases(plan("bad"), Failing(store), hosts_in_play=["a"])
    assert store.calls[0][0] == "APPLY" and store.calls[1] == ("GET", KEY, 1)


def test_an_unreachable_cluster_is_no_rbac_problem():
    kept = records(Store(down=True))
    assert kept.digest("c1", "sha256:plain") is None
    problem = kept.key_problem("c1")
    assert "cannot reach the API server" in problem and "needs get and create" not in problem
