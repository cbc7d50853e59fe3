"""Each host is its own cluster: hosts of one phase on one cluster and namespace are refused before anything runs."""

from __future__ import annotations

import dataclasses

import pytest
from phase_helpers import run_entry

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kube.identity import ClusterIdentity
from ansible_collections.phasekit.kube.plugins.module_utils.running.builtin import BuiltinExecutors
from ansible_collections.phasekit.kube.plugins.module_utils.running.runner import FAILED, Outcome, run_phases
from ansible_collections.phasekit.kube.plugins.module_utils.planning.rollout import Rollout, RolloutOf
from ansible_collections.phasekit.kube.plugins.module_utils.running.shared_cluster import (
    HostTarget, shared_cluster_refusal, shared_clusters)

LOOPBACK = frozenset({"https://127.0.0.1:6443"})
EPHEMERAL = ClusterIdentity("127.0.0.1:6443", "uid-ephemeral", LOOPBACK)
BY_LOCALHOST = ClusterIdentity("localhost:6443", "uid-ephemeral", frozenset({"https://127.0.0.1:6443",
                                                                             "https://[::1]:6443"}))
TARGET = ClusterIdentity("127.0.0.1:6444", "uid-target", frozenset({"https://127.0.0.1:6444"}))
FORBIDDEN = ClusterIdentity("localhost:6443", None, frozenset({"https://127.0.0.1:6443", "https://[::1]:6443"}),
                            "kube-system could not be read (403 Forbidden)")
FORBIDDEN_ELSEWHERE = dataclasses.replace(FORBIDDEN, server="127.0.0.1:7443",
                                          addresses=frozenset({"https://127.0.0.1:7443"}))


def target(host, identity=EPHEMERAL, namespace="default", context="ephemeral", context_from="current-context"):
    return HostTarget(host, identity, namespace, context, context_from)


@pytest.mark.parametrize("targets, allow, groups", [
    ([target("a"), target("b")], False, [["a", "b"]]),
    ([target("a", namespace="team-a"), target("b", namespace="team-b")], False, []),
    ([target("a"), target("b", TARGET)], False, []),
    ([target("a"), target("b", BY_LOCALHOST)], False, [["a", "b"]]),
    ([target("a", FORBIDDEN), target("b", EPHEMERAL)], False, [["a", "b"]]),
    ([target("a", FORBIDDEN), target("b", FORBIDDEN_ELSEWHERE)], False, []),
    ([target("a"), target("b")], True, []),
    ([target("a"), target("b", TARGET), target("c"), target("d", TARGET), target("e", TARGET, "other")], False,
     [["a", "c"], ["b", "d"]]),
    ([target("only")], False, []),
], ids=["same-uid-same-namespace-refused", "same-uid-other-namespace-allowed", "other-uid-same-namespace-allowed",
        "one-server-two-names-refused", "unknown-uid-falls-back-to-resolved-address",
        "unknown-uid-other-address-allowed", "opt-in-allows", "each-shared-cluster-a-group", "one-host-alone"])
def test_grouping_rules(targets, allow, groups):
    refusal = shared_cluster_refusal("apps", targets, allow_shared=allow)
    assert [group.hosts for group in shared_clusters(targets) if not allow] == groups
    assert (refusal is None) is (not groups)


def test_the_refusal_names_hosts_cluster_namespace_provenance_and_the_opt_in():
    message = shared_cluster_refusal("apps", [
        target("ephemeral", context_from="host var kube_context"), target("cluster-b"), target("cluster-c")])
    assert message.startswith("phase apps refused before anything was written: hosts ephemeral (context ephemeral "
                              "from host var kube_context), cluster-b (context ephemeral from current-context), "
                              "cluster-c (context ephemeral from current-context) are one cluster (127.0.0.1:6443, "
                              "kube-system uid uid-ephemeral) and one namespace (default)")
    assert "plan_allow_shared_cluster: true" in message and "overwrite and prune each other" in message


def test_the_refusal_says_when_a_host_was_compared_by_address():
    message = shared_cluster_refusal("apps", [target("a", EPHEMERAL), target("b", FORBIDDEN)])
    assert "(127.0.0.1:6443, kube-system uid uid-ephemeral; b compared by address localhost:6443: kube-system " \
           "could not be read (403 Forbidden))" in message
    only = shared_cluster_refusal("apps", [target("a", FORBIDDEN), target("b", FORBIDDEN)])
    assert "(localhost:6443, compared by address (https://127.0.0.1:6443, https://[::1]:6443): kube-system could " \
           "not be read (403 Forbidden))" in only


def test_a_fleet_on_one_namespace_is_named_in_a_bounded_message():
    message = shared_cluster_refusal("apps", [target(f"c{index:03}") for index in range(500)])
    assert "c009 (context" in message and "c010 (context" not in message and "and 490 more" in message
    assert len(message) < 2000


# ---------------------------------------------------------------- the runner: a guard before the phase starts


class Work:
    def __init__(self):
        self.calls = []

    def __call__(self, phase, context):
        self.calls.append((phase.name, context.host))
        return Outcome(changed=True)


def phase(name, hosts, executor="apply", **extra):
    return run_entry(name, executor, hosts, options={}, **extra)


def refuse_shared(refused_phase):
    def guard(phase_, hosts):
        return f"refused on {', '.join(hosts)}" if phase_.name == refused_phase else None
    return guard


def test_a_refused_phase_fails_on_all_its_hosts_runs_nowhere_records_nothing_and_stops_the_plan():
    work, recorded, progress = Work(), [], []
    report = run_phases([phase("ns", "ab"), phase("apps", "abc"), phase("later", "abc")], work,
                        hosts_in_play=list("abc"), guard=refuse_shared("apps"),
                        recorded=lambda _phase, record: recorded.append((record.phase, record.host)),
                        progress=lambda planned, _barrier, records, _seconds: progress.append((planned.name, len(records))))
    assert work.calls == [("ns", "a"), ("ns", "b")] or work.calls == [("ns", "b"), ("ns", "a")]
    assert [(record.phase, record.host, record.result) for record in report.records[2:]] == [
        ("apps", "a", FAILED), ("apps", "b", FAILED), ("apps", "c", FAILED)]
    assert {record.msg for record in report.records[2:]} == {"refused on a, b, c"}
    assert sorted(recorded) == [("ns", "a"), ("ns", "b")]        # the refused phase wrote no run record entry
    assert progress == [("ns", 2), ("apps", 3)]
    assert report.stopped_by == "apps"


def test_a_tasks_phase_is_guarded_too():
    work = Work()
    report = run_phases([phase("user", "ab", executor="tasks")], work, hosts_in_play=list("ab"),
                        guard=refuse_shared("user"))
    assert not work.calls and [record.result for record in report.records] == [FAILED, FAILED]
    assert report.stopped_by == "user"


def test_a_rollout_batch_is_guarded_with_the_earlier_batches_and_no_later_cluster_is_looked_at():
    hosts = [f"h{index}" for index in range(8)]
    rollout = RolloutOf("cni", Rollout((1, 2, "100%"), 0.0, 0.0), hosts).to_dict()
    phases = [run_entry("cni", None, (), rollout=rollout),
              phase("cni/apply", hosts, rollout=rollout), phase("cni/ready", hosts, executor="wait", rollout=rollout)]
    seen = []

    def guard(phase_, guarded):   # h2 reaches h0's cluster and namespace
        seen.append((phase_.name, list(guarded)))
        return "h0 and h2 are one cluster" if {"h0", "h2"} <= set(guarded) else None

    work = Work()
    report = run_phases(phases, work, hosts_in_play=hosts, guard=guard)
    assert seen == [("cni/apply", ["h0"]), ("cni/ready", ["h0"]), ("cni/apply", ["h0", "h1", "h2"])]
    assert sorted(work.calls) == [("cni/apply", "h0"), ("cni/ready", "h0")]   # batch 2 wrote nothing
    refused = [(record.phase, record.host, record.details["rollout"]["batch"]) for record in report.records
               if record.result == FAILED]
    assert refused == [("cni/apply", "h1", 2), ("cni/apply", "h2", 2)]
    assert report.stopped_by == "cni" and report.stop["batch"] == 2 and report.stop["untouched"] == hosts[3:]


@pytest.mark.parametrize("error, message", [
    (PhasekitError("kubeconfig broken"), "kubeconfig broken"),
    (KeyError("uid"), "unexpected error before phase apps started (KeyError): 'uid'"),
], ids=["phasekit-error-as-it-is", "a-bug-named-not-a-traceback"])
def test_a_guard_that_fails_fails_the_phase_naming_why(error, message):
    def guard(_phase, _hosts):
        raise error

    work = Work()
    report = run_phases([phase("apps", "ab")], work, hosts_in_play=list("ab"), guard=guard)
    assert {record.msg for record in report.records} == {message} and not work.calls


# ---------------------------------------------------------------- the built-in executors' guard


@dataclasses.dataclass
class Resolved:
    context: str
    namespace: str | None
    provenance: dict


class Access:
    """Hosts -> (identity, namespace, context, where the context came from); counts identity questions."""

    def __init__(self, hosts, broken=()):
        self.hosts = hosts
        self.broken = set(broken)
        self.asked = []

    def resolution(self, host):
        if host in self.broken:
            raise PhasekitError(f"host {host}: context 'nope' not found")
        _identity, namespace, context, context_from = self.hosts[host]
        return Resolved(context, namespace, {"context_from": context_from})

    def identity(self, host, _connections):
        self.asked.append(host)
        return self.hosts[host][0]

    def secrets(self, _host):
        return frozenset()


FAN_IN = {"ephemeral": (EPHEMERAL, None, "ephemeral", "host var kube_context"),
          "cluster-b": (EPHEMERAL, None, "ephemeral", "current-context"),
          "cluster-c": (EPHEMERAL, None, "ephemeral", "current-context")}
TENANTS = {"team-a": (EPHEMERAL, "team-a", "team-a", "host var kube_context"),
           "team-b": (EPHEMERAL, "team-b", "team-b", "host var kube_context")}


@pytest.mark.parametrize("mode, check_mode, executor, hosts, allow, refused", [
    ("run", False, "apply", FAN_IN, False, True),
    ("run", True, "apply", FAN_IN, False, True),
    ("destroy", False, "apply", FAN_IN, False, True),
    ("destroy", False, "command", FAN_IN, False, False),
    ("run", False, "tasks", FAN_IN, False, True),
    ("run", False, "kubeconfig", FAN_IN, False, False),
    ("status", False, "apply", FAN_IN, False, False),
    ("validate", False, "apply", FAN_IN, False, False),
    ("run", False, "apply", TENANTS, False, False),
    ("run", False, "apply", FAN_IN, True, False),
], ids=["run-refused", "check-mode-previews-the-refusal", "destroy-refused", "destroy-leaves-commands-alone",
        "tasks-phase-refused", "kubeconfig-phase-not-checked", "status-reads-only", "validate-reads-only",
        "namespaces-of-one-cluster-allowed", "opt-in-allows"])
def test_which_phases_are_checked(mode, check_mode, executor, hosts, allow, refused):
    access = Access(hosts)
    executors = BuiltinExecutors(access, mode=mode, check_mode=check_mode, allow_shared_cluster=allow)
    refusal = executors.shared_cluster_refusal(phase("apps", hosts, executor=executor), list(hosts))
    assert (refusal is not None) is refused
    if refused:
        assert "ephemeral (context ephemeral from host var kube_context), cluster-b (context ephemeral from " \
               "current-context)" in refusal and "one namespace (default)" in refusal


def test_a_host_whose_kubeconfig_does_not_resolve_is_left_to_its_phase():
    access = Access(FAN_IN, broken={"cluster-b"})
    refusal = BuiltinExecutors(access).shared_cluster_refusal(phase("apps", FAN_IN), list(FAN_IN))
    assert "hosts ephemeral (" in refusal and "cluster-b" not in refusal
    assert sorted(access.asked) == ["cluster-c", "ephemeral"]
