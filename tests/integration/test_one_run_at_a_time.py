# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""One run at a time on a cluster host's plan, on the local clusters (issue #35 points 4 and 5).

Two ``ansible-playbook`` runs of one plan started together end with exactly one run's objects and values, the
other failed naming the first (or, with plan_lock_timeout, waited for it and then applied its own); a run killed
outright (SIGKILL to every process of it) loses its lock when its lease runs out, and the next run takes it over
saying from whom, and plan_resume finishes the rest; a lock held on one host of a fleet fails that host only; the
API server restarted while a run holds the lock; a controller whose clock is off; many hosts with a lock each."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import yaml
from fleet_site import kill_outright

API = "phasekit.dev/v1alpha1"
CLUSTER = "target"
PLAN = "race"
VENV_BIN = Path(sys.executable).parent
LOCK_HOLDER = "phasekit.kube/lock-holder"


def words(output: str) -> str:
    """The output with Ansible's wrapping of warnings and messages undone (ansible-core 2.16 also breaks lines after
    a hyphen inside a word: ``phasekit-`` / ``lock-8b94b8``)."""
    return " ".join(re.sub(r"-\n\s*", "-", output).replace("[WARNING]:", " ").split())


def configmaps(prefixes: str, count: int, value: str, namespace: str) -> list:
    return [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{prefix}{number}", "namespace": namespace},
             "data": {"v": value}} for prefix in prefixes for number in range(count)]


def write_site(root: Path, documents: list, hosts: dict, namespace: str, extra_vars: dict | None = None) -> Path:
    (root / "phases").mkdir(parents=True, exist_ok=True)
    (root / "phases" / "site.yaml").write_text(yaml.safe_dump_all(documents))
    (root / "inventory.yml").write_text(yaml.safe_dump({"all": {
        "vars": {"ansible_connection": "local", "plan_record_namespace": namespace, **(extra_vars or {})},
        "hosts": hosts}}))
    return root


def phase(name: str, executor: str, cluster: str = CLUSTER, **spec) -> dict:
    return {"apiVersion": API, "kind": "Phase", "metadata": {"name": name},
            "spec": {"cluster": cluster, "executor": executor, **spec}}


def plan(name: str, *phases: str) -> dict:
    return {"apiVersion": API, "kind": "PhasePlan", "metadata": {"name": name}, "spec": {"phases": list(phases)}}


def run_id(tag: str) -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + f"-{tag}"


def start(root: Path, collections_path: Path, *extra: str, env: dict | None = None,
          prefix: tuple = ()) -> subprocess.Popen:
    """ansible-playbook phasekit.kube.run in ``root`` (``prefix``: a command it runs under, such as faketime)."""
    full_env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(collections_path), "ANSIBLE_NOCOLOR": "1",
                "ANSIBLE_PYTHON_INTERPRETER": sys.executable, **(env or {})}
    full_env.pop("KUBECONFIG", None)
    return subprocess.Popen([*prefix, str(VENV_BIN / "ansible-playbook"), "phasekit.kube.run", "-i", "inventory.yml",
                             "-e", f"plan_name={PLAN}", *extra], cwd=root, env=full_env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True, preexec_fn=hangup_acts)


def hangup_acts() -> None:
    """SIGHUP acts on the run as a closed terminal's does, also when the tests run under nohup (which leaves it
    ignored, and an ignored signal rightly stays ignored)."""
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def finish(proc: subprocess.Popen, timeout: float = 300) -> tuple[int, str]:
    output = proc.communicate(timeout=timeout)[0]
    assert "Traceback" not in output, output
    return proc.returncode, output


def run(root: Path, collections_path: Path, *extra: str, env: dict | None = None, prefix: tuple = ()) -> tuple[int, str]:
    return finish(start(root, collections_path, *extra, env=env, prefix=prefix))


def record(cluster, namespace: str, host: str = CLUSTER, plan_name: str = PLAN) -> dict:
    return cluster.get_json("configmap", "-n", namespace, f"phasekit-run-{plan_name}.{host}")


def newest_runs(found: dict, key: str) -> list[str]:
    return [entry["run"] for entry in json.loads(found["data"][key])]


def state(cluster, namespace: str) -> dict:
    """The namespace's bundle ConfigMaps: name -> value."""
    items = cluster.get_json("configmaps", "-n", namespace)["items"]
    return {item["metadata"]["name"]: item["data"]["v"] for item in items
            if re.fullmatch(r"[abcd]\d+", item["metadata"]["name"])}


def stamp(text: str) -> float:
    return time.mktime(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ")) - time.timezone


@pytest.fixture()
def namespace(clusters):
    target = clusters[CLUSTER]
    name = f"phasekit-lock-{uuid.uuid4().hex[:6]}"
    target.kubectl("create", "namespace", name)
    yield name
    target.kubectl("delete", "namespace", name, "--wait=false")


def target_host(cluster) -> dict:
    return {CLUSTER: {"kube_kubeconfig": str(cluster.admin_kubeconfig), "kube_context": cluster.context}}


# ---------------------------------------------------------------- two runs at once

COUNT = 30  # ConfigMaps per prefix


def racing_sites(tmp_path: Path, cluster, namespace: str, round_number: int) -> dict:
    """Run A applies a*, b*, c*, run B a*, b*, d*, as one pruned ApplySet, values naming the run and round."""
    sites = {}
    for run_name, prefixes in (("A", "abc"), ("B", "abd")):
        documents = [phase("apps", "apply", options={"namespace": namespace, "prune": True, "applyset": "race"},
                           source=configmaps(prefixes, COUNT, f"{run_name}-{round_number}", namespace)),
                     plan(PLAN, "apps")]
        sites[run_name] = write_site(tmp_path / f"round{round_number}" / run_name, documents, target_host(cluster),
                                     namespace)
    return sites


def expected_state(run_name: str, round_number: int) -> dict:
    prefixes = "abc" if run_name == "A" else "abd"
    return {f"{prefix}{number}": f"{run_name}-{round_number}" for prefix in prefixes for number in range(COUNT)}


def race_round(tmp_path, collections_path, cluster, namespace, round_number: int, *extra: str) -> dict:
    """Both runs started together (in a random order); returns each run's (rc, output)."""
    sites = racing_sites(tmp_path, cluster, namespace, round_number)
    order = random.sample(sorted(sites), 2)
    procs = {name: start(sites[name], collections_path, *extra) for name in order}
    return {name: finish(proc) for name, proc in procs.items()}


def check_round(cluster, namespace: str, round_number: int, done: dict, waited: bool = False) -> str:
    """Exactly one run's objects and values; that run succeeded, and the other failed naming it (the run of the
    record's newest entry), or ran before it (waiting for it, with plan_lock_timeout). Returns how it ended."""
    found = state(cluster, namespace)
    winners = [name for name in done if found == expected_state(name, round_number)]
    assert winners, (f"round {round_number}: the namespace holds neither run's state exactly: "
                     f"{sorted(set(found.values()))}, {len(found)} objects\n{done['A'][1][-3000:]}\n"
                     f"{done['B'][1][-3000:]}")
    winner = winners[0]
    loser = "B" if winner == "A" else "A"
    assert done[winner][0] == 0, done[winner][1]
    entries = json.loads(record(cluster, namespace)["data"]["apps"])
    runs = [entry["run"] for entry in entries]
    rc, output = done[loser]
    if rc == 0:   # it ran first, or waited for the other: one after the other, never at the same time
        newer, older = entries[0], entries[1]
        older_ended = stamp(older["started"]) + older["duration"]
        # a phase's entry starts before it waits for the lock: the run that waited names the run it waited for
        waited_for_older = re.search(rf"waited \d+s for run {re.escape(older['run'])} .*?then took the lock",
                                     " ".join(words(text) for _rc, text in done.values()))
        assert waited_for_older or older_ended <= stamp(newer["started"]) + 1, \
            f"round {round_number}: both runs applied at once: {entries}"
        return "one after the other"
    said = words(output)
    assert not waited, output
    assert f"run {runs[0]} " in said, (runs, output)   # the winner, by the run id it recorded
    assert "plan locked by another run" in said or "another run acted on this cluster" in said, output
    assert "nothing was written to this cluster" in said, output
    return "one failed naming the other"


@pytest.mark.smoke
def test_two_runs_at_once_smoke(clusters, collections_path, tmp_path, namespace):
    """One round: without the lock, both exit 0 and the namespace may hold a mix of both (issue #35)."""
    target = clusters[CLUSTER]
    done = race_round(tmp_path, collections_path, target, namespace, 0)
    check_round(target, namespace, 0, done)
    assert LOCK_HOLDER not in (record(target, namespace)["metadata"].get("annotations") or {})


@pytest.mark.first_full_line
def test_two_runs_at_once_ten_rounds(clusters, collections_path, tmp_path, namespace):
    target = clusters[CLUSTER]
    endings = []
    for number in range(1, 11):
        done = race_round(tmp_path, collections_path, target, namespace, number)
        endings.append(check_round(target, namespace, number, done))
    assert "one failed naming the other" in endings, endings   # they did run at once
    assert LOCK_HOLDER not in (record(target, namespace)["metadata"].get("annotations") or {})


def held_sites(tmp_path: Path, cluster, namespace: str, round_number: int, held: Path, go: Path) -> dict:
    """The racing sites, run A holding its lock in a first phase until ``go`` exists (it says so in ``held``)."""
    sites = racing_sites(tmp_path, cluster, namespace, round_number)
    hold = f"touch {held}; for i in $(seq 600); do [ -e {go} ] && exit 0; sleep 0.2; done; exit 1"
    documents = yaml.safe_load_all((sites["A"] / "phases" / "site.yaml").read_text())
    documents = [document for document in documents if document["kind"] == "Phase"]
    (sites["A"] / "phases" / "site.yaml").write_text(yaml.safe_dump_all(
        [phase("hold", "command", options={"shell": True, "cmd": hold}), *documents, plan(PLAN, "hold", "apps")]))
    return sites


def lines_until(proc: subprocess.Popen, text: str, timeout: float = 120) -> str:
    """What the run printed up to the first line holding ``text`` (the rest is left for ``finish``)."""
    deadline, seen = time.monotonic() + timeout, []
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line)
        if text in line:
            return "".join(seen)
    raise AssertionError(f"the run never printed {text!r}:\n{''.join(seen)}")


@pytest.mark.first_full_line
def test_two_runs_at_once_the_second_waits_with_plan_lock_timeout(clusters, collections_path, tmp_path, namespace):
    """Run A holds the plan's lock (its first phase waits for a file); run B, started then with plan_lock_timeout,
    waits for A, says whom it waited for, and applies its own objects after A's: A's objects are B's, none lost."""
    target = clusters[CLUSTER]
    for number in range(1, 3):
        held, go = tmp_path / f"held{number}", tmp_path / f"go{number}"
        sites = held_sites(tmp_path, target, namespace, number, held, go)
        first = start(sites["A"], collections_path)
        for _tick in range(600):
            if held.exists() or first.poll() is not None:
                break
            time.sleep(0.2)
        assert held.exists(), finish(first)[1]
        second = start(sites["B"], collections_path, "-e", "plan_lock_timeout=120")
        seen = lines_until(second, "Plan race: run")   # B's run task began: it reads the record, finds A's lock
        time.sleep(3)
        go.write_text("")
        done = {"A": finish(first), "B": finish(second)}
        done["B"] = (done["B"][0], seen + done["B"][1])
        assert [rc for rc, _output in done.values()] == [0, 0], done
        assert state(target, namespace) == expected_state("B", number), done["B"][1]
        said = words(done["B"][1])
        entries = json.loads(record(target, namespace)["data"]["apps"])
        assert re.search(rf"cluster target: waited \d+s for run {re.escape(entries[1]['run'])} by \S+@\S+ "
                         rf".*?then took the lock", said), said
        assert entries[0]["run"] != entries[1]["run"]


# ---------------------------------------------------------------- a run killed outright


def resumable_site(root: Path, cluster, namespace: str, marker: Path, done: Path) -> Path:
    """first (apply) -> hold (a command that holds the run, the first time only) -> last (apply)."""
    hold = (f"if [ ! -e {done} ]; then touch {done}; echo holding > {marker}; sleep 120; fi")
    documents = [phase("first", "apply", options={"namespace": namespace, "prune": True, "applyset": "first"},
                       source=configmaps("a", 5, "first", namespace)),
                 phase("hold", "command", options={"shell": True, "cmd": hold}),
                 phase("last", "apply", options={"namespace": namespace}, source=configmaps("b", 5, "last", namespace)),
                 plan(PLAN, "first", "hold", "last")]
    return write_site(root, documents, target_host(cluster), namespace)


def wait_for(path: Path, proc: subprocess.Popen, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert proc.poll() is None, proc.communicate()[0]
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.2)


@pytest.mark.first_full_line
def test_a_run_killed_outright_loses_its_lock_after_its_lease_and_the_next_takes_over(
        clusters, collections_path, tmp_path, namespace):
    """Killed on another controller: its lock holds until its lease runs out; killed on this one: the next run here
    sees its process is gone and takes the lock over at once. Both say from whom; plan_resume finishes the rest."""
    target = clusters[CLUSTER]
    marker, done = tmp_path / "holding", tmp_path / "held-once"
    root = resumable_site(tmp_path / "site", target, namespace, marker, done)
    name = f"phasekit-run-{PLAN}.{CLUSTER}"
    killed = start(root, collections_path, "-e", "plan_lock_duration=10")
    wait_for(marker, killed)
    kill_outright(killed)
    annotations = record(target, namespace)["metadata"]["annotations"]
    holder = annotations[LOCK_HOLDER]
    by = json.loads(annotations["phasekit.kube/lock-by"])
    assert by["pid"] == killed.pid
    # as if it had run on another controller: nothing here can tell it is gone
    target.kubectl("annotate", "--overwrite", "configmap", name, "-n", namespace,
                   "phasekit.kube/lock-by=" + json.dumps({**by, "host": "elsewhere"}))
    # at once: the lease is live, the next run fails naming the holder, and writes nothing
    rc, output = run(root, collections_path, "-e", "plan_resume=true")
    assert rc != 0, output
    said = words(output)
    assert f"plan locked by another run in ConfigMap {namespace}/{name}: run {holder} " in said, output
    assert f"@elsewhere (pid {killed.pid}, started " in said and "lease 10s" in said, output
    assert f"kubectl annotate configmap {name} -n {namespace} phasekit.kube/lock-holder-" in said
    assert "b0" not in state(target, namespace)
    # waiting: it takes the lock over once the lease ran out, says from whom, and resume finishes the rest
    began = time.monotonic()
    rc, output = run(root, collections_path, "-e", "plan_resume=true", "-e", "plan_lock_timeout=60")
    assert rc == 0, output
    said = words(output)
    assert re.search(rf"cluster {CLUSTER}: took over an expired lock on ConfigMap {namespace}/{name} from run "
                     rf"{holder} by \S+@elsewhere \(pid {killed.pid}, started \S+\), since \S+, last renewed \S+ "
                     rf"\(\d+s ago\), lease 10s", said), said
    assert time.monotonic() - began < 60
    assert "[first] apply on 1 cluster(s): 1 skipped: resumed" in output, output
    assert set(state(target, namespace)) == {f"a{n}" for n in range(5)} | {f"b{n}" for n in range(5)}
    assert LOCK_HOLDER not in (record(target, namespace)["metadata"].get("annotations") or {})

    # killed on this controller (default lease, 120s): the next run here takes it over at once
    done.unlink()
    marker.unlink()
    killed = start(root, collections_path)
    wait_for(marker, killed)
    kill_outright(killed)
    holder = record(target, namespace)["metadata"]["annotations"][LOCK_HOLDER]
    rc, output = run(root, collections_path, "-e", "plan_resume=true")
    assert rc == 0, output
    assert re.search(rf"cluster {CLUSTER}: took over the lock on ConfigMap {namespace}/{name} of a run whose process "
                     rf"is gone from this controller: run {holder} by \S+ \(pid {killed.pid}, ", words(output)), output


@pytest.mark.parametrize("signum, target", [
    pytest.param(signal.SIGTERM, "process", marks=pytest.mark.smoke),
    (signal.SIGINT, "process"), (signal.SIGTERM, "group"), (signal.SIGHUP, "process")],
    ids=["sigterm-to-process", "sigint-to-process", "sigterm-to-group", "sighup-to-process"])
def test_an_interrupted_run_releases_its_lock(clusters, collections_path, tmp_path, namespace, signum, target):
    """An AWX cancel (SIGTERM), a Ctrl-C (SIGINT), a closed terminal (SIGHUP): the step's end releases the lock at
    once (not when the command it runs ends), and the next run goes on."""
    cluster = clusters[CLUSTER]
    marker, done = tmp_path / "holding", tmp_path / "held-once"
    root = resumable_site(tmp_path / "site", cluster, namespace, marker, done)
    proc = start(root, collections_path)
    try:
        wait_for(marker, proc)
        assert record(cluster, namespace)["metadata"]["annotations"].get(LOCK_HOLDER)
        if target == "group":
            os.killpg(proc.pid, signum)
        else:
            proc.send_signal(signum)
        proc.communicate(timeout=60)
        assert proc.returncode != 0
        released = time.monotonic() + 20
        while LOCK_HOLDER in record(cluster, namespace)["metadata"]["annotations"]:
            assert time.monotonic() < released, record(cluster, namespace)["metadata"]["annotations"]
            time.sleep(0.5)
    finally:
        kill_outright(proc)
    rc, output = run(root, collections_path, "-e", "plan_resume=true")
    assert rc == 0, output


# ---------------------------------------------------------------- a fleet: a lock per host

FLEET_ID = uuid.uuid4().hex[:5]
FLEET = [f"lk{number:02d}" for number in range(40)]
TWENTY = FLEET[:20]


def fleet_namespace(host: str) -> str:
    return f"pk-lock-{FLEET_ID}-{host}"


def fleet_cluster(host: str, clusters) -> str:
    names = sorted(clusters)
    return names[int(host[-2:]) % len(names)]


@pytest.fixture(scope="module")
def fleet(clusters, tmp_path_factory):
    """40 cluster hosts over the local clusters (a context and a namespace each); group ``twenty`` holds 20."""
    from fleet_site import fleet_kubeconfig  # pylint: disable=import-outside-toplevel
    root = tmp_path_factory.mktemp("lock-fleet")
    kubeconfig = fleet_kubeconfig(clusters, FLEET, fleet_cluster, fleet_namespace)
    (root / "fleet.kubeconfig").write_text(yaml.safe_dump(kubeconfig))
    (root / "fleet.kubeconfig").chmod(0o600)
    (root / "inventory.yml").write_text(yaml.safe_dump({"all": {
        "vars": {"ansible_connection": "local", "kube_kubeconfig": str(root / "fleet.kubeconfig"),
                 "kube_context": "{{ inventory_hostname }}"},
        "children": {"fleet": {"hosts": {host: {} for host in FLEET},
                               "children": {"twenty": {"hosts": {host: {} for host in TWENTY}}}}}}}))
    yield root
    for host in FLEET:
        clusters[fleet_cluster(host, clusters)].kubectl("delete", "namespace", fleet_namespace(host), "--wait=false",
                                                        "--ignore-not-found")


def fleet_documents(value: str, group: str, rollout: dict | None = None, hold: float = 0) -> list:
    source = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fleet"}, "data": {"v": value}}]
    spec = {"rollout": rollout} if rollout else {}
    documents = [phase("apps", "apply", cluster=group, source=source, **spec)]
    names = ["apps"]
    if hold:
        documents.append(phase("hold", "command", cluster=group, options={"cmd": f"sleep {hold}", "shell": True}))
        names.append("hold")
    return documents + [plan(PLAN, *names)]


def fleet_value(clusters, host: str) -> str | None:
    done = clusters[fleet_cluster(host, clusters)].kubectl("get", "configmap", "fleet", "-n", fleet_namespace(host),
                                                           "-o", "jsonpath={.data.v}", check=False)
    return done.stdout if done.returncode == 0 else None


def fleet_record(clusters, host: str) -> dict:
    return clusters[fleet_cluster(host, clusters)].get_json("configmap", f"phasekit-run-{PLAN}.{host}", "-n",
                                                            fleet_namespace(host))


def run_fleet(fleet: Path, collections_path: Path, documents: list, *extra: str, wait: bool = True):
    (fleet / "phases").mkdir(exist_ok=True)
    (fleet / "phases" / "site.yaml").write_text(yaml.safe_dump_all(documents))
    proc = start(fleet, collections_path, "-f", "20", *extra)
    return finish(proc) if wait else proc


def stale_holder(clusters, host: str) -> tuple[str, str]:
    """A foreign holder written by hand, live for 10 minutes by the server's clock (this machine's)."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    by = json.dumps({"user": "someone", "host": "elsewhere", "pid": 1, "started": now, "job": "CI pipeline 77"})
    name = f"phasekit-run-{PLAN}.{host}"
    clusters[fleet_cluster(host, clusters)].kubectl(
        "annotate", "--overwrite", "configmap", name, "-n", fleet_namespace(host),
        f"{LOCK_HOLDER}=20261127T000000Z-dead", f"phasekit.kube/lock-by={by}", f"phasekit.kube/lock-acquired={now}",
        f"phasekit.kube/lock-renewed={now}", "phasekit.kube/lock-duration=600")
    return name, "20261127T000000Z-dead"


def break_lock(clusters, host: str, output: str) -> None:
    """The command the failure shows, run as a person would (after checking its holder is gone)."""
    command = re.search(r"break the lock: (kubectl annotate configmap \S+ -n \S+(?: phasekit\.kube/lock-\w+-)+)",
                        words(output)).group(1)
    assert fleet_namespace(host) in command, command
    clusters[fleet_cluster(host, clusters)].kubectl(*command.split()[1:])


@pytest.mark.smoke
def test_a_lock_held_on_one_of_twenty_clusters_fails_that_cluster_only(clusters, collections_path, fleet):
    rc, output = run_fleet(fleet, collections_path, fleet_documents("one", "twenty"))
    assert rc == 0, output
    locked = TWENTY[7]
    _name, holder = stale_holder(clusters, locked)
    rc, output = run_fleet(fleet, collections_path, fleet_documents("two", "twenty"))
    assert rc != 0, output
    said = words(output)
    assert f"{locked}: failed: cluster {locked}: plan locked by another run in ConfigMap {fleet_namespace(locked)}/" \
           f"phasekit-run-{PLAN}.{locked}: run {holder} by someone@elsewhere (pid 1, started " in said, output
    assert "CI pipeline 77), since" in said, output
    assert "[apps] apply on 20 cluster(s): 19 changed, 1 failed" in output, output
    assert {host: fleet_value(clusters, host) for host in TWENTY} == {
        host: "one" if host == locked else "two" for host in TWENTY}
    for host in TWENTY:
        annotations = fleet_record(clusters, host)["metadata"]["annotations"]
        assert annotations.get(LOCK_HOLDER) == (holder if host == locked else None), (host, annotations)
    # broken by hand with the command the message shows: the next run goes everywhere
    break_lock(clusters, locked, output)
    rc, output = run_fleet(fleet, collections_path, fleet_documents("two", "twenty"))
    assert rc == 0, output
    assert fleet_value(clusters, locked) == "two"


@pytest.mark.first_full_line
def test_a_lock_held_in_the_first_batch_of_a_rollout_stops_it_by_its_budget(clusters, collections_path, fleet):
    rollout = {"batches": [5, "100%"], "max_fail_percentage": 0, "order": "inventory"}
    rc, output = run_fleet(fleet, collections_path, fleet_documents("r1", "twenty", rollout))
    assert rc == 0, output
    locked = TWENTY[2]
    stale_holder(clusters, locked)
    rc, output = run_fleet(fleet, collections_path, fleet_documents("r2", "twenty", rollout))
    assert rc != 0, output
    assert "batch 1/2 on" in output and "4 ok, 1 failed" in output, output
    assert "1 of 5 cluster(s) failed (20% > max_fail_percentage 0%)" in words(output), output
    assert {host: fleet_value(clusters, host) for host in TWENTY} == {
        host: "r2" if host in TWENTY[:5] and host != locked else "r1" for host in TWENTY}
    for host in TWENTY:   # the run stopped: it holds no lock anywhere
        assert fleet_record(clusters, host)["metadata"]["annotations"].get(LOCK_HOLDER) in (None, "20261127T000000Z-dead")
    break_lock(clusters, locked, output)


@pytest.mark.first_full_line
def test_forty_hosts_each_hold_their_own_lock_and_a_second_run_fails_on_each(clusters, collections_path, fleet):
    rc, output = run_fleet(fleet, collections_path, fleet_documents("f1", "fleet"))
    assert rc == 0, output
    holding = run_fleet(fleet, collections_path, fleet_documents("f2", "fleet", hold=20), wait=False)
    deadline = time.monotonic() + 120
    holders = {}
    while time.monotonic() < deadline:
        holders = {host: fleet_record(clusters, host)["metadata"].get("annotations", {}).get(LOCK_HOLDER)
                   for host in FLEET}
        if all(holders.values()) or holding.poll() is not None:
            break
        time.sleep(1)
    assert len(set(holders.values())) == 1 and None not in holders.values(), (holders, holding.poll())
    rc, output = run_fleet(fleet, collections_path, fleet_documents("f3", "fleet"))
    assert rc != 0
    holder = next(iter(holders.values()))
    assert "[apps] apply on 40 cluster(s): 40 failed" in output, output
    assert words(output).count("plan locked by another run") >= 40 and f"run {holder} " in words(output)
    rc, output = finish(holding)
    assert rc == 0, output
    assert {fleet_value(clusters, host) for host in FLEET} == {"f2"}
    assert not [host for host in FLEET if LOCK_HOLDER in fleet_record(clusters, host)["metadata"]["annotations"]]


# ---------------------------------------------------------------- a controller whose clock is off


def hand_holder(cluster, namespace: str, renewed_ago: float, duration: int) -> str:
    """A foreign holder written by hand, renewed ``renewed_ago`` seconds ago by this machine's clock (the API
    server's: it runs here)."""
    renewed = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - renewed_ago))
    holder = "20261127T000000Z-skew"
    cluster.kubectl("annotate", "--overwrite", "configmap", f"phasekit-run-{PLAN}.{CLUSTER}", "-n", namespace,
                    f"{LOCK_HOLDER}={holder}", "phasekit.kube/lock-by=someone@elsewhere",
                    f"phasekit.kube/lock-acquired={renewed}", f"phasekit.kube/lock-renewed={renewed}",
                    f"phasekit.kube/lock-duration={duration}")
    return holder


def certificates_older_than(cluster, seconds: float) -> None:
    """A controller clock set back must still find the API server's certificate valid: wait until it is old enough."""
    done = subprocess.run(["openssl", "x509", "-noout", "-startdate", "-in", str(cluster.dir / "pki" / "apiserver.crt")],
                          capture_output=True, text=True, check=True)
    issued = time.mktime(time.strptime(done.stdout.strip().split("=", 1)[1], "%b %d %H:%M:%S %Y %Z")) - time.timezone
    time.sleep(max(0.0, issued + seconds - time.time()))


@pytest.mark.smoke
def test_a_controller_whose_clock_is_off_reads_the_lock_by_the_servers_clock(clusters, collections_path, tmp_path,
                                                                             namespace):
    """Lock times are the API server's (the Date of its answers): a controller an hour ahead still sees a lock renewed
    a moment ago as live, and one two minutes behind sees a lock whose lease ran out as expired."""
    target = clusters[CLUSTER]
    documents = [phase("apps", "apply", options={"namespace": namespace}, source=configmaps("a", 2, "1", namespace)),
                 plan(PLAN, "apps")]
    root = write_site(tmp_path / "site", documents, target_host(target), namespace)
    rc, output = run(root, collections_path)
    assert rc == 0, output
    holder = hand_holder(target, namespace, renewed_ago=0, duration=120)
    ahead = ("faketime", "-f", "+1h")
    rc, output = run(root, collections_path, prefix=ahead)
    assert rc != 0, output
    assert f"plan locked by another run in ConfigMap {namespace}/phasekit-run-{PLAN}.{CLUSTER}: run {holder} " \
           in words(output), output
    holder = hand_holder(target, namespace, renewed_ago=60, duration=20)   # expired 40s ago, by the server's clock
    certificates_older_than(target, 180)
    behind = ("faketime", "-f", "-2m")
    rc, output = run(root, collections_path, prefix=behind)
    assert rc == 0, output
    assert re.search(rf"took over an expired lock on ConfigMap {namespace}/phasekit-run-{PLAN}\.{CLUSTER} from run "
                     rf"{holder} by someone@elsewhere, since \S+, last renewed \S+ \(6\ds ago\), lease 20s",
                     words(output)), output
    assert LOCK_HOLDER not in (record(target, namespace)["metadata"].get("annotations") or {})


# ---------------------------------------------------------------- the API server restarted while a run holds the lock

REPO = Path(__file__).resolve().parents[2]
RESTARTED = "lockrestart"   # a cluster of this test's own: a restarted control plane must not disturb other tests


def clusters_up(*names: str) -> None:
    done = subprocess.run([sys.executable, str(REPO / "hack/clusters.py"), "up", *names], capture_output=True,
                          text=True, timeout=600, check=False)
    assert done.returncode == 0, f"clusters.py up {' '.join(names)}:\n{done.stdout}\n{done.stderr}"


@pytest.fixture(scope="module")
def restarted_cluster(clusters):
    shared = sorted(clusters)
    clusters_up(RESTARTED)
    cluster = type(clusters[shared[0]])(RESTARTED, clusters[shared[0]].dir.parent)
    yield cluster
    subprocess.run([sys.executable, str(REPO / "hack/clusters.py"), "down", RESTARTED], check=True,
                   capture_output=True, text=True, timeout=300)
    clusters_up(*shared)  # the merged kubeconfig names the shared clusters again


@pytest.mark.first_full_line
def test_the_api_server_restarted_while_a_run_holds_the_lock(restarted_cluster, collections_path, tmp_path):
    """The renewals that fail while the API server is down are tried again; the run finishes and releases."""
    cluster = restarted_cluster
    namespace = f"phasekit-lock-{uuid.uuid4().hex[:6]}"
    cluster.kubectl("create", "namespace", namespace)
    marker = tmp_path / "holding"
    hosts = {RESTARTED: {"kube_kubeconfig": str(cluster.admin_kubeconfig), "kube_context": cluster.context}}
    documents = [phase("first", "apply", cluster=RESTARTED, options={"namespace": namespace},
                       source=configmaps("a", 3, "1", namespace)),
                 phase("hold", "command", cluster=RESTARTED,
                       options={"shell": True, "cmd": f"echo holding > {marker}; sleep 40"}),
                 phase("last", "apply", cluster=RESTARTED, options={"namespace": namespace},
                       source=configmaps("b", 3, "1", namespace)),
                 plan(PLAN, "first", "hold", "last")]
    root = write_site(tmp_path / "site", documents, hosts, namespace)
    proc = start(root, collections_path, "-e", "plan_lock_duration=9")
    wait_for(marker, proc)
    name = f"phasekit-run-{PLAN}.{RESTARTED}"
    held = cluster.get_json("configmap", name, "-n", namespace)["metadata"]["annotations"]
    assert held.get(LOCK_HOLDER), held
    os.killpg(int((cluster.dir / "kube-apiserver.pid").read_text()), signal.SIGKILL)
    time.sleep(5)   # a renewal (every 3s) fails meanwhile
    clusters_up(RESTARTED)
    before = cluster.get_json("configmap", name, "-n", namespace)["metadata"]["annotations"]
    renewed_again = False
    for _attempt in range(60):   # the renewals go on once the API server is back (a loaded machine restarts it slowly)
        if proc.poll() is not None:
            break
        time.sleep(0.5)
        now = cluster.get_json("configmap", name, "-n", namespace)["metadata"]["annotations"]
        if now.get(LOCK_HOLDER) == held[LOCK_HOLDER] and now.get("phasekit.kube/lock-renewed") != before.get(
                "phasekit.kube/lock-renewed"):
            renewed_again = True
            break
    rc, output = finish(proc)
    assert rc == 0, output
    assert renewed_again, (before, output)
    found = cluster.get_json("configmap", name, "-n", namespace)
    assert LOCK_HOLDER not in found["metadata"]["annotations"], found["metadata"]
    assert [entry["result"] for entry in json.loads(found["data"]["last"])] == ["changed"]


# ---------------------------------------------------------------- a tasks phase: the lock holds while its task file runs


@pytest.mark.smoke
def test_the_lock_is_held_while_a_last_tasks_phase_runs_its_task_file(clusters, collections_path, tmp_path,
                                                                      namespace):
    """A host's last phase is a tasks phase: its task file runs under the run's lock (another run is refused
    meanwhile), and the role's last task releases it."""
    cluster = clusters[CLUSTER]
    seen = tmp_path / "seen-holder"
    root = tmp_path / "site"
    (root / "tasks").mkdir(parents=True)
    (root / "tasks" / "look.yml").write_text(yaml.safe_dump([{
        "name": "The record's lock holder, as the task file runs",
        "ansible.builtin.shell": f"kubectl --kubeconfig {cluster.admin_kubeconfig} get configmap "
                                 f"phasekit-run-{PLAN}.{CLUSTER} -n {namespace} "
                                 f"-o jsonpath='{{.metadata.annotations.phasekit\\.kube/lock-holder}}' > {seen}",
        "changed_when": False}]))
    documents = [phase("apps", "apply", options={"namespace": namespace}, source=configmaps("a", 2, "1", namespace)),
                 phase("look", "tasks", source="../tasks/look.yml"),
                 plan(PLAN, "apps", "look")]
    write_site(root, documents, target_host(cluster), namespace)
    rc, output = run(root, collections_path)
    assert rc == 0, output
    entries = json.loads(record(cluster, namespace)["data"]["apps"])
    assert seen.read_text().strip() == entries[0]["run"], (seen.read_text(), output)
    assert LOCK_HOLDER not in record(cluster, namespace)["metadata"]["annotations"]


# ---------------------------------------------------------------- rights, and no records


@pytest.mark.smoke
def test_a_user_who_may_not_write_the_record_gets_the_verbs_and_nothing_is_written(
        clusters, collections_path, tmp_path, namespace):
    """The limited user edits namespace phasekit-limited and only views the others: its record (kept in this test's
    namespace) cannot be made, so the run fails before it applies anything, naming the verbs and the namespace."""
    cluster = clusters[CLUSTER]
    name = f"lock-{uuid.uuid4().hex[:6]}"
    documents = [phase("apps", "apply", options={"namespace": "phasekit-limited"},
                       source=[{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
                                "data": {"v": "1"}}]),
                 plan(PLAN, "apps")]
    hosts = {CLUSTER: {"kube_kubeconfig": str(cluster.limited_kubeconfig), "kube_context": cluster.limited_context}}
    root = write_site(tmp_path / "site", documents, hosts, namespace)
    rc, output = run(root, collections_path)
    assert rc != 0, output
    said = words(output)
    assert f"cluster {CLUSTER}: this run cannot take its lock in run record ConfigMap {namespace}/phasekit-run-{PLAN}." \
           f"{CLUSTER}: 403 Forbidden" in said, output
    assert f"needs get, create and patch on ConfigMaps in namespace {namespace}" in said, output
    assert "nothing was written to this cluster" in said, output
    assert cluster.kubectl("get", "configmap", name, "-n", "phasekit-limited", check=False).returncode != 0
    # without records there is no lock, and the run says so once
    rc, output = run(root, collections_path, "-e", "plan_record=false")
    assert rc == 0, output
    assert words(output).count("plan_record is false: this run keeps no run record, so it takes no lock") == 1
    cluster.kubectl("delete", "configmap", name, "-n", "phasekit-limited")
