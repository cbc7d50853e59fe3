# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Run entries (planner.RunEntry) and the runner's per-host context (runner.HostContext)."""

from __future__ import annotations

import dataclasses

import pytest
from phase_helpers import build, phase, plan, run_entry

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.running.builtin import BuiltinExecutors, SharedRequests
from ansible_collections.phasekit.kube.plugins.module_utils.planning.planner import RunEntry
from ansible_collections.phasekit.kube.plugins.module_utils.planning.rollout import RolloutOf
from ansible_collections.phasekit.kube.plugins.module_utils.running.runner import (
    Barrier, Batch, HostContext, Outcome, RolloutRun, run_phases)

ECHO = {"argv": ["true"]}


def site(tmp_path):
    documents = [phase("cni", cluster="workload", rollout={"batches": [1]},
                       phases=[{"name": "apply", "executor": "command", "options": ECHO}]),
                 phase("check", cluster="workload", executor="command", options=ECHO, timeout=30),
                 plan("site", "cni", "check")]
    return build(documents, tmp_path, name="site")


def test_an_entry_gives_the_same_json_as_the_planned_phase_and_reads_it_back(tmp_path):
    for planned in site(tmp_path).phases:
        entry = planned.run_entry()
        assert entry.to_dict() == planned.to_dict()
        assert RunEntry.from_dict(entry.to_dict()) == entry


def test_the_rollout_stays_typed_in_the_entry(tmp_path):
    entries = [planned.run_entry() for planned in site(tmp_path).phases]
    assert isinstance(entries[0].rollout, RolloutOf) and entries[0].rollout is entries[1].rollout
    assert entries[2].rollout is None


def test_an_entry_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        run_entry("one").name = "two"


@pytest.mark.parametrize("value, message", [
    ("one", "phase: expected a mapping (a run entry), got str"),
    ({"executor": "apply"}, "phase: field name is missing (expected a string)"),
    ({"name": 3}, "phase: field name must be a string, got int"),
    ({"name": "one", "hosts": "a"}, "phase one: field hosts must be a list of hosts, got str"),
    ({"name": "one", "retries": "3"}, "phase one: field retries must be a whole number or null, got str"),
    ({"name": "one", "timeout": "30s"}, "phase one: field timeout must be a number or null, got str"),
    ({"name": "one", "selected": "yes"}, "phase one: field selected must be true or false, got str"),
    ({"name": "one", "options": []}, "phase one: field options must be a mapping, got list"),
    ({"name": "one", "rollout": [1]}, "phase one: field rollout must be a mapping (the rollout) or null, got list"),
    ({"name": "one", "rollout": {"phase": "cni"}}, "phase one: field rollout must be a rollout (phase, batches"),
    ({"name": "one", "deadline": 3.0}, "phase: unknown field(s) deadline; expected some of "),
], ids=["not-a-mapping", "name-missing", "name-not-a-string", "hosts-not-a-list", "retries-not-a-number",
        "timeout-not-a-number", "selected-not-a-bool", "options-not-a-mapping", "rollout-not-a-mapping",
        "rollout-incomplete", "unknown-field"])
def test_a_malformed_entry_from_ansible_is_refused_naming_the_field(value, message):
    with pytest.raises(PhasekitError) as raised:
        RunEntry.from_dict(value)
    assert message in str(raised.value)


def test_an_entry_is_read_by_its_attributes_not_as_a_mapping():
    entry = run_entry("one", "wait", ["a"], options={"timeout": 5})
    assert (entry.name, entry.options, entry.hosts) == ("one", {"timeout": 5}, ("a",))
    with pytest.raises(TypeError):
        entry["name"]  # pylint: disable=pointless-statement
    assert not hasattr(entry, "get") and not hasattr(entry, "keys")   # the host's facts are its context's


class Seen(BuiltinExecutors):
    """Executors whose apply says what the runner told it about the host."""

    def __init__(self, **kwargs):
        super().__init__(None, **kwargs)
        self.seen = []

    def _work(self, entry, context):
        self.seen.append((entry.name, context.host, context.running, context.batch, context.deadline is not None))
        return Outcome(changed=True)


def test_the_executors_see_each_hosts_barrier_batch_and_deadline():
    rollout = RolloutOf.from_dict({"phase": "cni", "batches": [1, "100%"], "max_fail_percentage": 0.0, "pause": 0.0,
                                   "order": "inventory", "clusters": ["a", "b", "c"]}).to_dict()
    entries = [run_entry("cni", None, (), rollout=rollout), run_entry("cni/apply", "apply", "abc", rollout=rollout),
               run_entry("apps", "apply", "abc", timeout=30)]
    work = Seen()
    run_phases(entries, work, hosts_in_play=list("abc"), concurrency=1, rollouts=RolloutRun(pause=False))
    assert work.seen == [("cni/apply", "a", 1, Batch("cni", 1, 2), False),
                         ("cni/apply", "b", 2, Batch("cni", 2, 2), False),
                         ("cni/apply", "c", 2, Batch("cni", 2, 2), False),
                         ("apps", "a", 3, None, True), ("apps", "b", 3, None, True), ("apps", "c", 3, None, True)]


@pytest.mark.parametrize("running, hosts_in_play, per_cluster", [
    (None, "ab", 50), (4, "ab", 25), (0, "ab", 100),
], ids=["outside-a-barrier-the-phase-hosts-in-play", "a-barrier-its-clusters", "an-empty-barrier-one"])
def test_a_clusters_share_of_requests_follows_its_barrier(running, hosts_in_play, per_cluster):
    shared = SharedRequests(None, clusters_at_once=16, hosts_in_play=frozenset(hosts_in_play), budget=100)
    assert shared.per_cluster(run_entry("one", "apply", "abc"), running) == per_cluster


def test_a_batch_is_written_as_records_have_always_shown_it():
    assert HostContext("a", Barrier(2, Batch("cni", 1, 3))).batch.to_dict() == {"phase": "cni", "batch": 1, "of": 3}
