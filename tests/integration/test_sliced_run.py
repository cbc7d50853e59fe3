# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""A plan whose phases span clusters run as three slices at once (issue #42), as AWX runs a sliced job: three
``ansible-playbook`` processes, each with the inventory AWX deals to its slice (hosts sorted by name, round-robin:
``slices.slice_hosts``), the same ``plan_run_id`` and ``plan_coordination`` (the ``ephemeral`` cluster), 24 cluster
hosts over the local clusters.

Proved from the clusters' run records: no phase started on any slice before the phase before it ended on every slice
(a slow phase on one slice holds the next phase back on all); a phase that failed on one slice stops every slice at
that phase, no later phase touching any cluster; a slice killed outright is named by the others within its lease; a
slice started late is waited for, one never started fails the others after the arrival timeout, named; the meeting
leaves nothing in the coordination namespace after a run that ended."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import yaml
from fake_awx import FakeAwx, job_of
from fleet_site import fleet_kubeconfig, kill_outright

from ansible_collections.phasekit.kube.plugins.module_utils.awx.jobs import awx_run_id
from ansible_collections.phasekit.kube.plugins.module_utils.coordination.slices import slice_hosts

API = "phasekit.dev/v1alpha1"
PLAN = "sliced"
COORDINATION = "ephemeral"
HOSTS = [f"s{number:02d}" for number in range(1, 25)]
SLICES = 3
LEASE = 3
VENV_BIN = Path(sys.executable).parent
FLEET_ID = uuid.uuid4().hex[:6]


def host_namespace(host: str) -> str:
    return f"pk-slice-{FLEET_ID}-{host}"


def host_cluster(host: str, clusters) -> str:
    names = sorted(clusters)
    return names[int(host[1:]) % len(names)]


@pytest.fixture(scope="module")
def fleet(clusters, tmp_path_factory):
    """24 cluster hosts over the local clusters (a context and a namespace each), and the coordination namespace."""
    root = tmp_path_factory.mktemp("sliced")
    kubeconfig = fleet_kubeconfig(clusters, HOSTS, host_cluster, host_namespace)
    (root / "fleet.kubeconfig").write_text(yaml.safe_dump(kubeconfig))
    (root / "fleet.kubeconfig").chmod(0o600)
    meeting = f"pk-meet-{FLEET_ID}"
    clusters[COORDINATION].kubectl("create", "namespace", meeting)
    yield root, meeting
    for host in HOSTS:
        clusters[host_cluster(host, clusters)].kubectl("delete", "namespace", host_namespace(host), "--wait=false",
                                                       "--ignore-not-found")
    clusters[COORDINATION].kubectl("delete", "namespace", meeting, "--wait=false")


def documents(slow: dict, broken: tuple = ()) -> list:
    """first (every host), hold (``slow``: host -> seconds of sleep), breaks (``broken`` hosts: exit 1), second."""
    phases = [phase("first", "apply", "fleet", source=[configmap("first")])]
    names = ["first"]
    for host, seconds in slow.items():
        phases.append(phase(f"hold-{host}", "command", host, options={"cmd": f"sleep {seconds}", "shell": True}))
        names.append(f"hold-{host}")
    for host in broken:
        phases.append(phase(f"breaks-{host}", "command", host, options={"cmd": "exit 3", "shell": True}))
        names.append(f"breaks-{host}")
    phases.append(phase("second", "apply", "fleet", source=[configmap("second")]))
    return phases + [{"apiVersion": API, "kind": "PhasePlan", "metadata": {"name": PLAN},
                      "spec": {"phases": names + ["second"]}}]


def phase(name: str, executor: str, cluster: str, **spec) -> dict:
    return {"apiVersion": API, "kind": "Phase", "metadata": {"name": name},
            "spec": {"cluster": cluster, "executor": executor, **spec}}


def configmap(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"v": name}}


def slice_root(root: Path, number: int, run: str, docs: list, host_vars: dict | None = None) -> Path:
    """Slice ``number``'s project: the plan, and the inventory AWX gives that slice (its share of the hosts, with
    ``host_vars`` of those it has)."""
    here = root / f"{run}-slice-{number}"
    (here / "phases").mkdir(parents=True)
    (here / "phases" / "site.yaml").write_text(yaml.safe_dump_all(docs))
    mine = slice_hosts(HOSTS, number, SLICES)
    (here / "inventory.yml").write_text(yaml.safe_dump({"all": {
        "vars": {"ansible_connection": "local", "kube_kubeconfig": str(root / "fleet.kubeconfig"),
                 "kube_context": "{{ inventory_hostname }}"},
        "children": {"fleet": {"hosts": {host: (host_vars or {}).get(host, {}) for host in mine}}}}}))
    return here


def start(here: Path, collections_path: Path, number: int, run: str, coordination: dict,
          extra_vars: dict | None = None, environ: dict | None = None) -> subprocess.Popen:
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(collections_path), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_PYTHON_INTERPRETER": sys.executable, **(environ or {})}
    env.pop("KUBECONFIG", None)
    extra = {"plan_name": PLAN, "plan_slice": f"{number}/{SLICES}", "plan_run_id": run,
             "plan_coordination": coordination, **(extra_vars or {})}
    return subprocess.Popen([str(VENV_BIN / "ansible-playbook"), "phasekit.kube.run", "-i", "inventory.yml",
                             "-f", "8", "-e", json.dumps(extra)], cwd=here, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)


def finish(proc: subprocess.Popen, timeout: float = 300) -> tuple[int, str]:
    output = proc.communicate(timeout=timeout)[0]
    assert "Traceback" not in output, output
    return proc.returncode, output


def run_slices(fleet, collections_path, docs: list, numbers=(1, 2, 3), late: dict | None = None,
               extra: dict | None = None, host_vars: dict | None = None, **coordination) -> tuple[str, dict]:
    """The slices ``numbers`` of one run, at once (``late``: slice -> seconds it starts after the others); its ID
    and each slice's (exit code, output)."""
    root, meeting = fleet
    run = f"t{uuid.uuid4().hex[:10]}"
    settings = {"kubeconfig": "", "namespace": meeting, "lease_seconds": LEASE, "poll": 0.1, **coordination}
    procs = {}
    for number in sorted(numbers, key=lambda number: (late or {}).get(number, 0)):
        wait = (late or {}).get(number, 0) - max((late or {}).get(n, 0) for n in procs) if procs else 0
        time.sleep(max(0, wait))
        here = slice_root(root, number, run, docs, host_vars)
        procs[number] = start(here, collections_path, number, run, settings, extra)
    return run, {number: finish(proc) for number, proc in procs.items()}


def records(clusters) -> dict:
    """Every host's run record of the plan: host -> phase -> its entries (one LIST per cluster)."""
    found = {}
    for cluster in clusters.values():
        for item in cluster.get_json("configmaps", "-A")["items"]:
            name = item["metadata"]["name"]
            host = name.removeprefix(f"phasekit-run-{PLAN}.")
            if host in HOSTS and item["metadata"]["namespace"] == host_namespace(host):
                found[host] = {key: json.loads(value) for key, value in (item.get("data") or {}).items()
                               if not key.startswith("_")}
    return found


def stamp(text: str) -> float:
    return time.mktime(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ")) - time.timezone


def phase_times(clusters, run: str) -> dict:
    """phase -> [(host, started, ended)] of run ``run``, from every host's record (starts are whole seconds)."""
    times: dict = {}
    for host, phases in records(clusters).items():
        for name, listed in phases.items():
            for entry in listed if isinstance(listed, list) else ():
                if isinstance(entry, dict) and entry.get("run") == run:
                    started = stamp(entry["started"])
                    times.setdefault(name, []).append((host, started, started + entry["duration"]))
    return times


def meeting_objects(clusters, meeting: str, run: str) -> str:
    return clusters[COORDINATION].kubectl("get", "leases,configmaps", "-n", meeting, "-l", f"phasekit.kube/run={run}",
                                          "-o", "name").stdout.strip()


@pytest.fixture()
def coordination_kubeconfig(clusters) -> str:
    return str(clusters[COORDINATION].admin_kubeconfig)


def test_three_slices_keep_the_plan_order_a_late_slice_waited_for(
        clusters, collections_path, fleet, coordination_kubeconfig):
    # s01 is in slice 1: its 5 s hold must end before "second" starts on any host of slices 2 and 3
    run, results = run_slices(fleet, collections_path, documents({"s01": 5}), late={3: 3},
                              kubeconfig=coordination_kubeconfig)
    for number, (code, output) in results.items():
        assert code == 0, output
    times = phase_times(clusters, run)
    assert sorted(host for host, _s, _e in times["first"]) == HOSTS
    assert sorted(host for host, _s, _e in times["second"]) == HOSTS
    order = ["first", "hold-s01", "second"]
    for before, after in zip(order, order[1:]):
        ended = max(end for _host, _start, end in times[before])
        # a start is written in whole seconds: it is never before the whole second the earlier phase ended in
        late_starts = [(host, start) for host, start, _end in times[after] if start < int(ended)]
        assert not late_starts, (before, after, ended, late_starts)
    # without the barrier, slices 2 and 3 would run "second" while s01 sleeps: their starts prove the wait
    hold_end = max(end for _h, _s, end in times["hold-s01"])
    assert min(start for _h, start, _e in times["second"]) >= int(hold_end)
    assert meeting_objects(clusters, fleet[1], run) == ""


def test_awx_job_slicing_alone_says_how_many_slices(clusters, collections_path, fleet, coordination_kubeconfig):
    # plan_slice: awx: each slice reads its k/N from AWX's job API (on loopback: what AWX's JobSerializer gives),
    # with the variables AWX's controller credential injects; the run ID from the workflow job every slice shares
    root, meeting = fleet
    workflow = int(uuid.uuid4().int % 10**6)
    awx = FakeAwx({str(workflow + number): job_of(number, SLICES) for number in (1, 2, 3)})
    run = awx_run_id(str(workflow), awx.url)
    token = f"awx-token-{uuid.uuid4().hex}"
    settings = {"kubeconfig": coordination_kubeconfig, "namespace": meeting, "lease_seconds": LEASE, "poll": 0.1}
    try:
        procs = {number: start(slice_root(root, number, run, documents({"s01": 3})), collections_path, number, "",
                               settings, {"plan_slice": "awx", "awx_job_id": workflow + number,
                                          "awx_workflow_job_id": workflow},
                               {"JOB_ID": str(workflow + number), "AWX_HOST": awx.url, "CONTROLLER_HOST": awx.url,
                                "CONTROLLER_OAUTH_TOKEN": token, "CONTROLLER_VERIFY_SSL": "False"})
                 for number in (1, 2, 3)}
        results = {number: finish(proc) for number, proc in procs.items()}
    finally:
        awx.server.shutdown()
    for number, (code, output) in results.items():
        assert code == 0, output
        assert f"slice {number}/3 of run {run}" in output, output
        assert token not in output
    assert {path for path, _auth in awx.seen} == {f"/api/v2/jobs/{workflow + n}/" for n in (1, 2, 3)}
    assert {auth for _path, auth in awx.seen} == {f"Bearer {token}"}
    times = phase_times(clusters, run)
    assert sorted(host for host, _s, _e in times["second"]) == HOSTS
    hold_end = max(end for _h, _s, end in times["hold-s01"])
    assert min(start for _h, start, _e in times["second"]) >= int(hold_end)


def test_a_failure_on_one_slice_stops_every_slice_at_that_phase(
        clusters, collections_path, fleet, coordination_kubeconfig):
    # s05 is in slice 2; its phase fails: no slice starts "second"
    run, results = run_slices(fleet, collections_path, documents({}, broken=("s05",)),
                              kubeconfig=coordination_kubeconfig)
    assert all(code != 0 for code, _output in results.values()), results
    for number in (1, 3):
        said = " ".join(results[number][1].split())
        assert "stopped at barrier 'run breaks-s05' by slice 2/3: phase breaks-s05 failed on 1 cluster(s): s05" \
               in said, said
        assert f"this slice ({number}/3) stops there too" in said, said
        assert "RESULT DURATION CHANGED" in said, said       # its summary table, though its task failed
    assert "breaks-s05" in results[2][1] and "s05" in results[2][1]
    times = phase_times(clusters, run)
    assert sorted(host for host, _s, _e in times["first"]) == HOSTS      # every slice ran the phase before
    assert "second" not in times                                         # no slice started the phase after


def test_a_killed_slice_is_named_by_the_others_within_its_lease(
        clusters, collections_path, fleet, coordination_kubeconfig):
    root, meeting = fleet
    run = f"t{uuid.uuid4().hex[:10]}"
    docs = documents({"s03": 120})   # s03 is in slice 3
    settings = {"kubeconfig": coordination_kubeconfig, "namespace": meeting, "lease_seconds": LEASE, "poll": 0.1}
    procs = {number: start(slice_root(root, number, run, docs), collections_path, number, run, settings)
             for number in (1, 2, 3)}
    deadline = time.monotonic() + 120
    while "hold-s03" not in meeting_objects_annotated(clusters, meeting, run) and time.monotonic() < deadline:
        time.sleep(0.5)
    time.sleep(2)   # slices 1 and 2 wait at hold-s03's barrier; slice 3 sleeps in it
    killed_at = time.monotonic()
    kill_outright(procs[3])      # every process of it: nothing of it removes its Lease
    for number in (1, 2):
        code, output = finish(procs[number])
        named_after = time.monotonic() - killed_at
        said = " ".join(output.split())
        assert code != 0, said
        assert "slice 3/3 stopped renewing its presence" in said, said
        assert "hold-s03" in said, said
        assert named_after < 4 * LEASE + 20, named_after   # a lease, a look, and the play's end
    assert "second" not in phase_times(clusters, run)


def meeting_objects_annotated(clusters, meeting: str, run: str) -> str:
    """The barriers' names of the run so far (their annotation), in one string."""
    found = clusters[COORDINATION].get_json("configmaps", "-n", meeting, "-l", f"phasekit.kube/run={run}")
    return " ".join((item["metadata"].get("annotations") or {}).get("phasekit.kube/barrier", "")
                    for item in found["items"])


def test_a_slice_never_started_is_named_after_the_arrival_timeout(
        clusters, collections_path, fleet, coordination_kubeconfig):
    run, results = run_slices(fleet, collections_path, documents({}), numbers=(1, 2),
                              kubeconfig=coordination_kubeconfig, arrival_timeout=6)
    for number, (code, output) in results.items():
        said = " ".join(output.split())
        assert code != 0, said
        assert "slice(s) 3/3 never started" in said and "arrival_timeout (6s)" in said, said
        assert "capacity for 3 jobs at once" in said, said
    assert phase_times(clusters, run) == {}      # refused at the start: no cluster touched


def test_bad_slicing_settings_are_refused_before_any_cluster_is_touched(
        clusters, collections_path, fleet, coordination_kubeconfig):
    root, meeting = fleet
    cases = [
        ({"plan_slice": "4/3"}, "plan_slice: '4/3': the slice k must be from 1 to N (3)"),
        ({"plan_run_id": "Not An ID"}, "plan_run_id: 'Not An ID' is not a run ID"),
        ({"plan_coordination": {"namespace": meeting}}, "plan_coordination.kubeconfig is required"),
        ({"plan_coordination": {"kubeconfig": coordination_kubeconfig, "namespace": meeting, "lease": 3}},
         "plan_coordination.lease. Supported parameters include: arrival_timeout"),
    ]
    for number, (changed, expected) in enumerate(cases):
        run = f"bad{number}-{FLEET_ID}"
        here = slice_root(root, 1, run, documents({}))
        extra = {"plan_name": PLAN, "plan_slice": "1/3", "plan_run_id": run,
                 "plan_coordination": {"kubeconfig": coordination_kubeconfig, "namespace": meeting}, **changed}
        env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(collections_path), "ANSIBLE_NOCOLOR": "1",
               "ANSIBLE_PYTHON_INTERPRETER": sys.executable}
        done = subprocess.run([str(VENV_BIN / "ansible-playbook"), "phasekit.kube.run", "-i", "inventory.yml",
                               "-e", json.dumps(extra)], cwd=here, env=env, capture_output=True, text=True,
                              check=False, timeout=300)
        said = " ".join((done.stdout + done.stderr).split())
        assert done.returncode != 0 and expected in said and "Traceback" not in said, said
        assert phase_times(clusters, run) == {}


def test_a_cluster_name_no_slice_has_is_refused_by_every_slice_before_any_cluster_is_touched(
        clusters, collections_path, fleet, coordination_kubeconfig):
    docs = documents({})
    docs[0]["spec"]["cluster"] = "flet"
    run, results = run_slices(fleet, collections_path, docs, kubeconfig=coordination_kubeconfig)
    for number, (code, output) in results.items():
        said = " ".join(output.split())
        assert code != 0 and "no slice has a host or group named 'flet'" in said, said
    assert phase_times(clusters, run) == {}


def rollout_documents(marker_dir: Path) -> list:
    """roll (a rollout over the fleet: batches of 3, 6, the rest; no failure allowed) fails on a host while a file
    named after it is in ``marker_dir``; then second (its own object: a resume goes by what each cluster's record says
    of this bundle, and earlier tests ran another "second" there)."""
    check = f'test ! -e "{marker_dir}/broken-$PHASEKIT_HOST"'
    return [phase("roll", "command", "fleet", options={"cmd": check, "shell": True},
                  rollout={"batches": [3, 6, "100%"], "max_fail_percentage": 0}),
            phase("second", "apply", "fleet", source=[configmap(f"after-{uuid.uuid4().hex[:8]}")]),
            {"apiVersion": API, "kind": "PhasePlan", "metadata": {"name": PLAN}, "spec": {"phases": ["roll", "second"]}}]


def test_a_rollout_over_slices_has_one_budget_stops_at_one_batch_and_resumes(
        clusters, collections_path, fleet, coordination_kubeconfig, tmp_path):
    (tmp_path / "broken-s05").touch()      # s05: slice 2, the fleet's batch 2 (s04..s09), which every slice has
    docs = rollout_documents(tmp_path)
    run, results = run_slices(fleet, collections_path, docs, kubeconfig=coordination_kubeconfig)
    for number, (code, output) in results.items():
        assert code != 0, output
        said = " ".join(output.split())
        assert "rollout of phase roll stopped at batch 2 of 3: 1 of 6 cluster(s) failed" in said, said
        assert "15 cluster(s) never touched: s10, s11" in said, said
    times = phase_times(clusters, run)
    assert sorted(host for host, _s, _e in times["roll"]) == HOSTS[:9]      # batches 1 and 2, on every slice
    assert "second" not in times
    # resume the whole job (every slice, a new run ID): s05 and the batch never reached, then second everywhere
    (tmp_path / "broken-s05").unlink()
    resumed, results = run_slices(fleet, collections_path, docs, kubeconfig=coordination_kubeconfig,
                                  extra={"plan_resume": True})
    for number, (code, output) in results.items():
        assert code == 0, output
    times = phase_times(clusters, resumed)
    assert sorted(host for host, _s, _e in times["roll"]) == ["s05", *HOSTS[9:]]
    assert sorted(host for host, _s, _e in times["second"]) == HOSTS


def test_a_child_reads_its_kubeconfig_from_a_parent_in_another_slice(
        clusters, collections_path, fleet, coordination_kubeconfig):
    """s02 (slice 2) has no kubeconfig of its own: its Secret is published by a phase on s01 (slice 1), and its
    source names s01's cluster by a kubeconfig file and context, since slice 2 has no variables of s01."""
    root, _meeting = fleet
    whole = yaml.safe_load((root / "fleet.kubeconfig").read_text())
    context = next(item for item in whole["contexts"] if item["name"] == "s02")
    child = {"apiVersion": "v1", "kind": "Config", "current-context": "s02", "contexts": [context],
             "clusters": [item for item in whole["clusters"] if item["name"] == context["context"]["cluster"]],
             "users": [item for item in whole["users"] if item["name"] == context["context"]["user"]]}
    name = f"s02-kubeconfig-{uuid.uuid4().hex[:6]}"
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "type": "Opaque",
              "stringData": {"value": yaml.safe_dump(child)}}
    used = configmap(f"used-{uuid.uuid4().hex[:6]}")
    docs = [phase("publish", "apply", "s01", source=[secret]), phase("use", "apply", "s02", source=[used]),
            {"apiVersion": API, "kind": "PhasePlan", "metadata": {"name": PLAN}, "spec": {"phases": ["publish", "use"]}}]
    host_vars = {"s02": {"kube_kubeconfig": {"secret": {
        "name": name, "namespace": host_namespace("s01"), "kubeconfig": str(root / "fleet.kubeconfig"),
        "context": "s01", "timeout": 30}}}}
    run, results = run_slices(fleet, collections_path, docs, kubeconfig=coordination_kubeconfig, host_vars=host_vars)
    for number, (code, output) in results.items():
        assert code == 0, output
        for credential in child["users"][0]["user"].values():   # the child's credentials never shown
            assert str(credential) not in output
    assert sorted(host for host, _s, _e in phase_times(clusters, run)["use"]) == ["s02"]
    assert clusters[host_cluster("s02", clusters)].kubectl(
        "get", "configmap", used["metadata"]["name"], "-n", host_namespace("s02"), check=False).returncode == 0


def graph_documents(run_tag: str) -> list:
    """A plan with needs over the slices: base (every host); mon after base on each cluster (same-cluster); hold-s01
    (slice 1: a 4 s sleep) after base there; spread (every host) after hold-s01 everywhere (all-clusters); breaks-s05
    (slice 2) after base there, failing when ``run_tag`` says so; after (every host) after breaks-s05 everywhere;
    slow-s03 (slice 3: 3 s) and tail (every host) after it everywhere."""
    fails = "exit 3" if run_tag == "fail" else "true"
    docs = [phase("base", "apply", "fleet", source=[configmap(f"base-{uuid.uuid4().hex[:6]}")]),
            phase("mon", "apply", "fleet", source=[configmap(f"mon-{uuid.uuid4().hex[:6]}")],
                  needs=[{"phase": "base", "wait": "same-cluster"}]),
            phase("hold-s01", "command", "s01", options={"cmd": "sleep 4", "shell": True},
                  needs=[{"phase": "base", "wait": "same-cluster"}]),
            phase("spread", "apply", "fleet", source=[configmap(f"spread-{uuid.uuid4().hex[:6]}")],
                  needs=["hold-s01"])]
    if run_tag == "fail":
        docs += [phase("breaks-s05", "command", "s05", options={"cmd": fails, "shell": True},
                       needs=[{"phase": "base", "wait": "same-cluster"}]),
                 phase("after", "apply", "fleet", source=[configmap(f"after-{uuid.uuid4().hex[:6]}")],
                       needs=["breaks-s05"]),
                 phase("slow-s03", "command", "s03", options={"cmd": "sleep 3", "shell": True},
                       needs=[{"phase": "base", "wait": "same-cluster"}]),
                 phase("tail", "apply", "fleet", source=[configmap(f"tail-{uuid.uuid4().hex[:6]}")],
                       needs=["slow-s03"])]
    names = [doc["metadata"]["name"] for doc in docs]
    return docs + [{"apiVersion": API, "kind": "PhasePlan", "metadata": {"name": PLAN}, "spec": {"phases": names}}]


def test_a_graph_over_slices_waits_for_all_clusters_needs_on_every_slice(
        clusters, collections_path, fleet, coordination_kubeconfig):
    run, results = run_slices(fleet, collections_path, graph_documents("ok"), kubeconfig=coordination_kubeconfig)
    for code, output in results.values():
        assert code == 0, output
    times = phase_times(clusters, run)
    for name in ("base", "mon", "spread"):
        assert sorted(host for host, _s, _e in times[name]) == HOSTS, name
    hold_end = max(end for _h, _s, end in times["hold-s01"])
    # spread needs hold-s01 (slice 1) on all clusters: no host of any slice started it before the hold ended
    early = [(host, start) for host, start, _e in times["spread"] if start < int(hold_end)]
    assert not early, (hold_end, early)
    # mon needs base on the same cluster only: it did not wait for the hold (nor for other slices)
    assert min(start for _h, start, _e in times["mon"]) < int(hold_end)
    assert meeting_objects(clusters, fleet[1], run) == ""


def test_a_failure_in_a_graph_on_one_slice_stops_every_slice(
        clusters, collections_path, fleet, coordination_kubeconfig):
    run, results = run_slices(fleet, collections_path, graph_documents("fail"), kubeconfig=coordination_kubeconfig)
    assert all(code != 0 for code, _output in results.values()), results
    for number in (1, 3):
        said = " ".join(results[number][1].split())
        assert "stopped at barrier 'run breaks-s05' by slice 2/3: phase breaks-s05 failed on 1 cluster(s): s05" \
               in said, said
        assert "this slice stops there too" in said, said
    times = phase_times(clusters, run)
    assert sorted(host for host, _s, _e in times["base"]) == HOSTS
    # what needs the failure on all clusters never started; nor, without keep_going, what slow-s03 held back
    assert "after" not in times and "tail" not in times, sorted(times)
    assert meeting_objects(clusters, fleet[1], run) == ""
