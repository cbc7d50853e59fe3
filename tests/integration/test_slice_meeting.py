"""Slices of one run meet through the real API server of the ``ephemeral`` cluster (``coordination.meeting``): three
slices, each with its own client and session (threads; the killed one a process of its own), in a namespace of the
test's own, Leases of a few seconds. No slice passes a barrier before every slice arrived (timestamps); a slice killed
is named by the others within about its lease; a slice started late is waited for; a slice never started fails the
others after the arrival timeout, named; a stop verdict reaches every slice at the same barrier; the last slice out
leaves nothing behind."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path

import ansible_collections
import pytest
import yaml

from ansible_collections.phasekit.kube.plugins.module_utils.coordination.meeting import (
    Meeting, MeetingFailed, MeetingSettings, Stopped, Verdict)
from ansible_collections.phasekit.kube.plugins.module_utils.coordination.slices import SliceId
from ansible_collections.phasekit.kube.plugins.module_utils.kube.client import api_client
from ansible_collections.phasekit.kube.plugins.module_utils.kube.session import ApiSession

CLUSTER = "ephemeral"
LEASE = 3          # seconds: renewed every second
POLL = 0.1


@pytest.fixture()
def namespace(clusters):
    name = f"phasekit-slices-{uuid.uuid4().hex[:6]}"
    clusters[CLUSTER].kubectl("create", "namespace", name)
    yield name
    clusters[CLUSTER].kubectl("delete", "namespace", name, "--wait=false")


@pytest.fixture()
def kubeconfig(clusters) -> dict:
    return yaml.safe_load(clusters[CLUSTER].admin_kubeconfig.read_text())


def settings(namespace: str, run_id: str, **values) -> MeetingSettings:
    return MeetingSettings(**{"namespace": namespace, "run_id": run_id, "plan": "site", "lease_duration": LEASE,
                              "arrival_timeout": 30.0, "poll": POLL, **values})


def run_slices(kubeconfig: dict, chosen: MeetingSettings, work: dict, count: int = 3, delays: dict | None = None,
               finish: bool = True) -> dict:
    """Run ``work[k](meeting)`` for each slice k in a thread of its own, each with its own client and session, after
    ``delays[k]`` seconds; the slice's result or the exception it raised, by slice."""
    results = {}

    def slice_thread(number):
        time.sleep((delays or {}).get(number, 0))
        try:
            with api_client(kubeconfig) as api:
                meeting = Meeting(ApiSession(api), SliceId(number, count), chosen)
                meeting.join()
                try:
                    results[number] = work[number](meeting)
                finally:
                    if finish:
                        meeting.finish()
        except Exception as err:  # pylint: disable=broad-exception-caught  # the test reads it
            results[number] = err

    threads = [threading.Thread(target=slice_thread, args=(number,)) for number in work]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return results


def run_objects(cluster, namespace: str, run_id: str) -> list[str]:
    found = cluster.get_json("leases,configmaps", "-n", namespace, "-l", f"phasekit.kube/run={run_id}")
    return sorted(f"{item['kind']}/{item['metadata']['name']}" for item in found["items"])


def test_no_slice_passes_a_barrier_before_every_slice_arrived(clusters, namespace, kubeconfig):
    run_id = f"t-{uuid.uuid4().hex[:8]}"
    barriers = ("phase-1", "phase-2", "phase-3")
    arrived, passed, seen_objects = {}, {}, []

    def work(meeting):
        for barrier in barriers:
            time.sleep(random.uniform(0, 0.6))     # the slice's phase on its hosts
            arrived[(barrier, meeting.slice.number)] = time.monotonic()
            meeting.wait(barrier)
            passed[(barrier, meeting.slice.number)] = time.monotonic()
        if meeting.slice.number == 1:
            seen_objects.extend(run_objects(clusters[CLUSTER], namespace, run_id))
        meeting.wait("end")   # nobody finishes while slice 1 looks

    results = run_slices(kubeconfig, settings(namespace, run_id), {1: work, 2: work, 3: work})
    assert results == {1: None, 2: None, 3: None}, results
    for barrier in barriers:
        last_arrival = max(arrived[(barrier, number)] for number in (1, 2, 3))
        first_pass = min(passed[(barrier, number)] for number in (1, 2, 3))
        assert first_pass >= last_arrival, f"a slice passed {barrier} before every slice arrived"
    # any Kubernetes user sees the run's meeting: a Lease per slice, a ConfigMap per barrier
    assert [name.split("/")[0] for name in seen_objects].count("Lease") == 3
    assert [name.split("/")[0] for name in seen_objects].count("ConfigMap") == 4
    assert run_objects(clusters[CLUSTER], namespace, run_id) == []   # the last slice out removed them


KILLED_SLICE = textwrap.dedent("""
    import sys, time, yaml
    from ansible.utils.collection_loader._collection_finder import _AnsibleCollectionFinder
    _AnsibleCollectionFinder(paths=sys.argv[5].split(":"))._install()
    from ansible_collections.phasekit.kube.plugins.module_utils.coordination.meeting import Meeting, MeetingSettings
    from ansible_collections.phasekit.kube.plugins.module_utils.coordination.slices import SliceId
    from ansible_collections.phasekit.kube.plugins.module_utils.kube.client import api_client
    from ansible_collections.phasekit.kube.plugins.module_utils.kube.session import ApiSession
    config = yaml.safe_load(open(sys.argv[1]))
    with api_client(config) as api:
        meeting = Meeting(ApiSession(api), SliceId(3, 3), MeetingSettings(namespace=sys.argv[2], run_id=sys.argv[3],
                          lease_duration=int(sys.argv[4]), poll=0.1, plan="site"))
        meeting.join()
        meeting.wait("phase-1")
        print("passed phase-1", flush=True)
        time.sleep(120)
""")


def test_a_killed_slice_is_named_by_the_others_within_its_lease(clusters, namespace, kubeconfig, tmp_path):
    run_id = f"t-{uuid.uuid4().hex[:8]}"
    config_file = tmp_path / "kubeconfig"
    config_file.write_text(yaml.safe_dump(kubeconfig))
    roots = ":".join(str(Path(path).parent) for path in ansible_collections.__path__)
    killed = subprocess.Popen([sys.executable, "-c", KILLED_SLICE, str(config_file), namespace, run_id, str(LEASE),
                               roots], stdout=subprocess.PIPE, text=True)
    kill_time = []

    def work(meeting):
        meeting.wait("phase-1")
        if meeting.slice.number == 1:
            assert killed.stdout.readline().strip() == "passed phase-1"
            killed.send_signal(signal.SIGKILL)   # no clean-up: its Lease stays, unrenewed
            killed.wait()
            kill_time.append(time.monotonic())
        meeting.wait("phase-2")

    try:
        results = run_slices(kubeconfig, settings(namespace, run_id), {1: work, 2: work}, finish=False)
    finally:
        if killed.poll() is None:
            killed.kill()
    named_at = time.monotonic()
    for number in (1, 2):
        failure = results[number]
        assert isinstance(failure, MeetingFailed), failure
        assert failure.slices == ("3/3",)
        assert "slice 3/3 stopped renewing its presence" in str(failure)
        assert "died or was cancelled after barrier 'phase-1', before arriving at 'phase-2'" in str(failure)
    # a Lease is judged gone LEASE after its last renewal was seen (renewals every LEASE/3, looks every LEASE/4)
    assert LEASE < named_at - kill_time[0] + LEASE / 3 + 0.5
    assert named_at - kill_time[0] <= LEASE + LEASE / 3 + LEASE / 4 + 2.0, named_at - kill_time[0]


def test_a_slice_started_late_is_waited_for(namespace, kubeconfig):
    run_id = f"t-{uuid.uuid4().hex[:8]}"
    waited = {}

    def work(meeting):
        waited[meeting.slice.number] = meeting.wait("phase-1")

    results = run_slices(kubeconfig, settings(namespace, run_id, arrival_timeout=20.0), {1: work, 2: work, 3: work},
                         delays={3: 2.5})
    assert results == {1: None, 2: None, 3: None}, results
    assert waited[1] >= 2.0 and waited[2] >= 2.0 and waited[3] < 1.0


def test_a_slice_never_started_fails_the_others_after_the_arrival_timeout(namespace, kubeconfig):
    run_id = f"t-{uuid.uuid4().hex[:8]}"
    began = time.monotonic()

    def work(meeting):
        meeting.wait("phase-1")

    results = run_slices(kubeconfig, settings(namespace, run_id, arrival_timeout=3.0), {1: work, 2: work})
    for number in (1, 2):
        failure = results[number]
        assert isinstance(failure, MeetingFailed), failure
        assert failure.slices == ("3/3",)
        assert f"slice(s) 3/3 never started: no presence Lease in namespace {namespace} within arrival_timeout (3s)" \
            in str(failure)
        assert "its instance group needs capacity for 3 jobs at once" in str(failure)
    assert 3.0 <= time.monotonic() - began < 15.0


def test_a_stop_verdict_reaches_every_slice_at_the_same_barrier(namespace, kubeconfig):
    run_id = f"t-{uuid.uuid4().hex[:8]}"
    reached = []

    def work(meeting):
        meeting.wait("batch-1")
        if meeting.slice.number == 2:
            meeting.stop("failure budget spent: 2 of 6 clusters failed in batch 2 (max_fail_percentage 20)", "batch-2")
        else:
            time.sleep(0.3 * meeting.slice.number)
        meeting.wait("batch-2")
        reached.append(meeting.slice.number)   # never: the verdict stops every slice at batch-2

    results = run_slices(kubeconfig, settings(namespace, run_id), {1: work, 2: work, 3: work})
    assert not reached
    for number in (1, 2, 3):
        stopped = results[number]
        assert isinstance(stopped, Stopped), stopped
        assert stopped.verdict == Verdict("batch-2", "failure budget spent: 2 of 6 clusters failed in batch 2 "
                                                     "(max_fail_percentage 20)", "2/3")
