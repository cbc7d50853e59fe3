# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Plans as graphs (issue #41), run on the local clusters: edges per cluster and across clusters, independent
phases at the same time, failures and ``plan_keep_going``, the summary naming what never started.

Four cluster hosts (a context each, with a namespace of its own, over ``ephemeral`` and ``target``): ``m1`` in group
``management``, ``w1``, ``w2`` and ``w3`` in ``workload``. Every phase is a ``command`` that sleeps; when each phase
started and ended on each cluster is read from the clusters' run records (``started``, at second resolution, and
``duration``), and, to the millisecond, from a log the commands append to.

```
 base (workload; w3 slow) ──same-cluster──► storage ──same-cluster──► addons ──all-clusters──► report (m1)
 mgmt (m1) ─────────────────────────────────────────all-clusters──────┘
```
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from datetime import datetime, timezone
from pathlib import Path

import pytest
import yaml
from conftest import summary_text
from fleet_site import fleet_kubeconfig

API = "phasekit.dev/v1alpha1"
RUN_ID = uuid.uuid4().hex[:6]
MANAGEMENT = ["m1"]
WORKLOAD = ["w1", "w2", "w3"]
HOSTS = MANAGEMENT + WORKLOAD
RECORD = "phasekit-run-graph."
# seconds each phase sleeps, per host ("*": every host); long enough that the run records' second resolution
# tells a line from a graph
SLEEPS = {"base": {"w3": 6, "*": 1}, "mgmt": {"*": 3}, "storage": {"*": 1}, "addons": {"*": 1}, "report": {"*": 0}}


def namespace_of(host: str) -> str:
    return f"pk-graph-{RUN_ID}-{host}"


def cluster_of(host: str, clusters) -> str:
    names = sorted(clusters)
    return names[HOSTS.index(host) % len(names)]


def command(name: str, log: Path) -> dict:
    """A phase that logs its start and end (epoch seconds) and sleeps its time; it fails where a file
    ``fail-<phase>@<host>`` is beside the log. Both are found through $GRAPH_DIR: a command's digest covers the
    files it names, and a run's own log must not make the next run's digests differ (``plan_resume``)."""
    sleeps = SLEEPS[name]
    pause = " ".join(f'{host}) s={seconds};;' for host, seconds in sleeps.items() if host != "*")
    script = (f'case "$PHASEKIT_HOST" in {pause} *) s={sleeps["*"]};; esac; '
              f'echo "$PHASEKIT_PHASE $PHASEKIT_HOST start $(date +%s.%N)" >> "$GRAPH_DIR/times.log"; '
              f'test ! -e "$GRAPH_DIR/fail-$PHASEKIT_PHASE@$PHASEKIT_HOST" || '
              f'{{ echo "told to fail" >&2; exit 3; }}; '
              f'sleep "$s"; echo "$PHASEKIT_PHASE $PHASEKIT_HOST end $(date +%s.%N)" >> "$GRAPH_DIR/times.log"')
    return {"executor": "command", "options": {"cmd": script, "shell": True}}


def phase(name: str, cluster: str, log: Path, needs=None) -> dict:
    spec = {"cluster": cluster, **command(name, log)}
    if needs is not None:
        spec["needs"] = needs
    return {"apiVersion": API, "kind": "Phase", "metadata": {"name": name}, "spec": spec}


def documents(log: Path) -> list[dict]:
    return [
        phase("base", "workload", log),
        phase("mgmt", "management", log),
        phase("storage", "workload", log, needs=[{"phase": "base", "wait": "same-cluster"}]),
        phase("addons", "workload", log, needs=[{"phase": "storage", "wait": "same-cluster"}, "mgmt"]),
        phase("report", "management", log, needs=["addons"]),
        {"apiVersion": API, "kind": "PhasePlan", "metadata": {"name": "graph"},
         "spec": {"phases": ["base", "mgmt", "storage", "addons", "report"]}},
        {"apiVersion": API, "kind": "Phase", "metadata": {"name": "look"},
         "spec": {"cluster": "workload", "executor": "tasks", "source": "../tasks/look.yml", "needs": ["base"]}},
        {"apiVersion": API, "kind": "PhasePlan", "metadata": {"name": "with-tasks"}, "spec": {"phases": ["base", "look"]}},
    ]


@pytest.fixture(scope="module")
def site(clusters, tmp_path_factory):
    root = tmp_path_factory.mktemp("graph")
    kubeconfig = fleet_kubeconfig(clusters, HOSTS, cluster_of, namespace_of)
    (root / "fleet.kubeconfig").write_text(yaml.safe_dump(kubeconfig))
    (root / "fleet.kubeconfig").chmod(0o600)
    (root / "phases").mkdir()
    (root / "phases" / "site.yaml").write_text(yaml.safe_dump_all(documents(root / "times.log"), sort_keys=False))
    (root / "tasks").mkdir()
    (root / "tasks" / "look.yml").write_text("- ansible.builtin.debug: {msg: look}\n")
    inventory = {"all": {
        "vars": {"ansible_connection": "local", "kube_kubeconfig": str(root / "fleet.kubeconfig"),
                 "kube_context": "{{ inventory_hostname }}"},
        "children": {"management": {"hosts": {host: {} for host in MANAGEMENT}},
                     "workload": {"hosts": {host: {} for host in WORKLOAD}}}}}
    (root / "inventory.yml").write_text(yaml.safe_dump(inventory))
    yield root
    for host in HOSTS:
        clusters[cluster_of(host, clusters)].kubectl("delete", "namespace", namespace_of(host), "--wait=false",
                                                     "--ignore-not-found")


def run(root: Path, collections_path: Path, *extra: str, fail: str = "") -> tuple[int, str]:
    """The site's plan graph; ``fail``: the phase@host that fails."""
    (root / "times.log").unlink(missing_ok=True)
    for flag in root.glob("fail-*"):
        flag.unlink()
    if fail:
        (root / f"fail-{fail}").write_text("")
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(collections_path), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_PYTHON_INTERPRETER": sys.executable, "GRAPH_DIR": str(root)}
    env.pop("KUBECONFIG", None)
    done = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "phasekit.kube.run", "-i",
                           "inventory.yml", "-e", "plan_show_plan=false", "-e", "plan_lock_timeout=300",
                           "-e", "plan_name=graph", *extra],
                          cwd=root, env=env, capture_output=True, text=True, timeout=300, check=False)
    output = done.stdout + done.stderr
    assert "Traceback" not in output, output
    return done.returncode, output


def logged(root: Path) -> dict:
    """(phase, host) -> {"start": epoch, "end": epoch} as the commands logged them (no end: it failed)."""
    times: dict = {}
    for line in (root / "times.log").read_text().splitlines():
        name, host, what, when = line.split()
        times.setdefault((name, host), {})[what] = float(when)
    return times


def recorded(clusters, run_output: str) -> dict:
    """(phase, host) -> (started, ended) of this run, from each cluster's run record (epoch seconds; started is
    kept to the second)."""
    found = {}
    for host in HOSTS:
        data = clusters[cluster_of(host, clusters)].get_json(
            "configmap", f"{RECORD}{host}", "-n", namespace_of(host))["data"]
        for name, text in data.items():
            newest = json.loads(text)[0]
            started = datetime.strptime(newest["started"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
            found[(name, host)] = (started.timestamp(), started.timestamp() + newest["duration"], newest["run"],
                                   newest["result"])
    assert found, run_output
    newest_run = max(entry[2] for entry in found.values())
    return {key: entry for key, entry in found.items() if entry[2] == newest_run}


def summary_rows(output: str) -> dict:
    """(phase, host) -> result word, from the summary table."""
    rows = {}
    for line in summary_text(output).splitlines():
        parts = line.strip().strip('",').split()
        if len(parts) >= 3 and parts[1] in HOSTS and parts[0] in SLEEPS:
            rows[(parts[0], parts[1])] = " ".join(parts[2:4]) if parts[2] == "not" else parts[2]
    return rows


def test_a_graph_runs_each_phase_after_what_it_needs_and_nothing_else(site, clusters, collections_path):
    rc, output = run(site, collections_path)
    assert rc == 0, output
    times, records = logged(site), recorded(clusters, output)
    assert set(records) == {(name, host) for name, hosts in
                            (("base", WORKLOAD), ("mgmt", MANAGEMENT), ("storage", WORKLOAD), ("addons", WORKLOAD),
                             ("report", MANAGEMENT)) for host in hosts}, output

    def starts_after(dependent, need, on_host, need_host):
        # the run records: started is kept to the second, so a start may read up to a second early
        assert records[(dependent, on_host)][0] + 1 >= records[(need, need_host)][1], (dependent, on_host, need)
        assert times[(dependent, on_host)]["start"] >= times[(need, need_host)]["end"], (dependent, on_host, need)

    for host in WORKLOAD:   # same-cluster edges: after the need on that cluster
        starts_after("storage", "base", host, host)
        starts_after("addons", "storage", host, host)
        starts_after("addons", "mgmt", host, "m1")       # all-clusters edge on another group's phase
        starts_after("report", "addons", "m1", host)     # all-clusters: after addons on every cluster
    # a pipeline per cluster: w1 goes on while base still runs on the slow w3 (a line would wait for it)
    assert records[("storage", "w1")][0] + 1 < records[("base", "w3")][1], records
    assert times[("addons", "w1")]["end"] < times[("base", "w3")]["end"], times
    # independent phases at the same time: mgmt and base started together
    assert records[("mgmt", "m1")][0] < records[("base", "w1")][1], records
    assert times[("mgmt", "m1")]["start"] < times[("base", "w3")]["end"] - 3, times
    assert all(result in ("ok", "changed") for *_times, _run, result in records.values()), records
    assert "never started" not in output


def test_a_failure_stops_its_dependents_and_without_keep_going_everything_new(site, clusters, collections_path):
    rc, output = run(site, collections_path, fail="base@w1")
    assert rc != 0, output
    times = logged(site)
    # what started finished (base on w2, w3 and mgmt began with the failed one); nothing new started anywhere
    assert {key for key in times if "end" in times[key]} == {("base", "w2"), ("base", "w3"), ("mgmt", "m1")}, times
    rows = summary_rows(output)
    assert rows[("base", "w1")] == "failed", output
    assert rows[("storage", "w2")] == "not run" and rows[("report", "m1")] == "not run", output
    never = output[output.index("Phases that never started:"):]
    flat = " ".join(never.split())
    assert "storage w1 needs base, which failed on w1" in flat, never
    assert "storage w2 stopped after a failure (phase base failed on w1); plan_keep_going is false" in flat, never
    assert "report m1 needs addons, which never started" in flat, never


def test_keep_going_runs_every_branch_that_does_not_need_the_failure(site, clusters, collections_path):
    rc, output = run(site, collections_path, "-e", "plan_keep_going=true", fail="base@w1")
    assert rc != 0, output
    times = logged(site)
    ended = {key for key in times if "end" in times[key]}
    # w2 and w3 take their whole pipelines; w1 stops at its failure; report needs addons on every cluster
    assert ended == {("base", "w2"), ("base", "w3"), ("mgmt", "m1"), ("storage", "w2"), ("storage", "w3"),
                     ("addons", "w2"), ("addons", "w3")}, times
    flat = " ".join(output[output.index("Phases that never started:"):].split())
    assert "storage w1 needs base, which failed on w1" in flat, output
    assert "addons w1 needs storage, which never started on w1" in flat, output
    assert "report m1 needs addons, which never started" in flat, output


def test_resume_of_a_half_finished_graph_runs_only_what_did_not_succeed(site, clusters, collections_path):
    rc, output = run(site, collections_path, "-e", "plan_keep_going=true", fail="base@w1")
    assert rc != 0, output
    rc, output = run(site, collections_path, "-e", "plan_resume=true")
    assert rc == 0, output
    # report on m1 runs unless an earlier test's run left it succeeded there with the same bundle (resume is per
    # cluster: m1's own phases are all it looks at)
    times = logged(site)
    ran = set(times) - {("report", "m1")}
    assert ran == {("base", "w1"), ("storage", "w1"), ("addons", "w1")}, output
    # what re-runs still waits for what it needs there
    assert times[("storage", "w1")]["start"] >= times[("base", "w1")]["end"], times
    assert times[("addons", "w1")]["start"] >= times[("storage", "w1")]["end"], times
    rows = summary_rows(output)
    assert rows[("storage", "w2")] == "skipped" and rows[("addons", "w1")] in ("changed", "ok"), output


def test_phase_concurrency_one_runs_one_phase_at_a_time(site, clusters, collections_path):
    rc, output = run(site, collections_path, "-e", "plan_phase_concurrency=1")
    assert rc == 0, output
    times = logged(site)
    spans = {}
    for (name, _host), seen in times.items():
        began, ended = spans.get(name, (seen["start"], seen["end"]))
        spans[name] = (min(began, seen["start"]), max(ended, seen["end"]))
    ordered = sorted(spans.values())
    assert all(later[0] >= earlier[1] for earlier, later in zip(ordered, ordered[1:])), spans


def test_a_graph_plan_with_a_tasks_phase_is_refused_before_anything_runs(site, clusters, collections_path):
    rc, output = run(site, collections_path, "-e", "plan_name=with-tasks")
    assert rc != 0, output
    flat = " ".join(output.split())
    assert "(Phase look) field spec.executor: phase look: a tasks phase runs per host in a step of its own" in flat, \
        output
    assert not (site / "times.log").exists(), output


BAR = re.compile(r'<g class="bar" data-phase="([^"]+)" data-cluster="([^"]+)" data-result="([^"]+)" '
                 r'data-start="([0-9.]+)" data-end="([0-9.]+)">')


def browser_dom(page: Path, screenshot: Path) -> str:
    """The page as headless Chromium parsed it (its DOM), and a picture of it: what a person opening it sees."""
    chromium = shutil.which("chromium")
    assert chromium, "chromium is not installed: hack/build-tools.sh installs it (Debian's package)"
    flags = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1200,400"]
    shot = subprocess.run([*flags, f"--screenshot={screenshot}", page.as_uri()], capture_output=True, text=True,
                          timeout=120, check=False)
    assert shot.returncode == 0 and screenshot.stat().st_size > 5000, shot.stderr
    dom = subprocess.run([*flags, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120,
                         check=False)
    assert dom.returncode == 0, dom.stderr
    return dom.stdout


def test_the_timeline_picture_shows_each_phase_after_what_it_needs(site, clusters, collections_path, tmp_path):
    page = tmp_path / "timeline.html"
    rc, output = run(site, collections_path, "-e", f"plan_report_timeline={page}")
    assert rc == 0, output
    dom = browser_dom(page, tmp_path / "timeline.png")
    bars = {(phase, cluster): (float(start), float(end), result)
            for phase, cluster, result, start, end in BAR.findall(dom)}
    assert set(bars) == {(name, host) for name, hosts in
                         (("base", WORKLOAD), ("mgmt", MANAGEMENT), ("storage", WORKLOAD), ("addons", WORKLOAD),
                          ("report", MANAGEMENT)) for host in hosts}, dom
    times = logged(site)
    first = min(seen["start"] for seen in times.values())
    for (name, host), (start, end, result) in bars.items():
        assert result in ("ok", "changed"), (name, host, result)
        # the bar is the phase as the command saw it from inside (the runner's times hold the command's)
        assert start - 0.5 <= times[(name, host)]["start"] - first and times[(name, host)]["end"] - first <= end + 0.5
    for host in WORKLOAD:
        assert bars[("storage", host)][0] >= bars[("base", host)][1]
        assert bars[("addons", host)][0] >= max(bars[("storage", host)][1], bars[("mgmt", "m1")][1])
        assert bars[("report", "m1")][0] >= bars[("addons", host)][1]
    assert bars[("addons", "w1")][1] < bars[("base", "w3")][1]   # the pipeline per cluster, drawn
    # the same run drawn afterwards from the clusters' run records (their starts are kept to the second)
    last = tmp_path / "last-run.html"
    rc, output = run(site, collections_path, "-e", "plan_action=history", "-e", f"plan_report_timeline={last}")
    assert rc == 0, output
    drawn = {(phase, cluster): (float(start), float(end), result)
             for phase, cluster, result, start, end in BAR.findall(browser_dom(last, tmp_path / "last-run.png"))}
    assert set(drawn) == set(bars), drawn
    for key, (start, end, result) in drawn.items():
        assert result == bars[key][2] and abs(start - bars[key][0]) <= 1.5 and abs(end - bars[key][1]) <= 1.5, \
            (key, drawn[key], bars[key])


@pytest.mark.parametrize("phases, extra, said", [
    pytest.param({"a": ["c"], "b": ["a"], "c": ["b"]}, (),
                 "the phases' needs make a cycle: a -> b -> c -> a", id="a-cycle-names-its-path"),
    pytest.param({"a": [], "b": ["aa"], "c": []}, (),
                 "phase b needs 'aa', which this plan does not run (did you mean 'a'?)", id="an-unknown-need"),
    pytest.param({"a": [], "b": ["a"], "c": []}, ("-e", '{"plan_skip": ["a"]}'),
                 "phase b needs a, which the selection leaves out (a: skip)", id="a-need-the-selection-removed"),
])
def test_a_bad_graph_is_refused_naming_the_document_before_anything_runs(site, collections_path, tmp_path, phases,
                                                                         extra, said):
    log = tmp_path / "times.log"
    documents = [{"apiVersion": API, "kind": "Phase", "metadata": {"name": name},
                  "spec": {"cluster": "workload", "needs": needs, **command("storage", log)}}
                 for name, needs in phases.items()]
    documents.append({"apiVersion": API, "kind": "PhasePlan", "metadata": {"name": "bad"},
                      "spec": {"phases": list(phases)}})
    (site / "phases" / "bad.yaml").write_text(yaml.safe_dump_all(documents, sort_keys=False))
    try:
        rc, output = run(site, collections_path, "-e", "plan_name=bad", *extra)
    finally:
        (site / "phases" / "bad.yaml").unlink()
    assert rc != 0, output
    flat = " ".join(output.split())
    assert said in flat, output
    assert "phases/bad.yaml" in flat, output
    assert not (site / "times.log").exists() and not log.exists(), output


def test_a_rollout_in_a_graph_releases_each_batch_to_what_needs_it_there(site, clusters, collections_path):
    """roll (base's sleeps) rolls out over the workload clusters in batches [1, 100%]: w1 alone, then w2 and w3 (w3
    slow); after needs roll on the same cluster, so it starts on w1 while batch 2 still runs."""
    log = site / "times.log"
    documents = [
        {"apiVersion": API, "kind": "Phase", "metadata": {"name": "roll"},
         "spec": {"cluster": "workload", "rollout": {"batches": [1, "100%"], "pause": 0}, **command("base", log)}},
        {"apiVersion": API, "kind": "Phase", "metadata": {"name": "after"},
         "spec": {"cluster": "workload", "needs": [{"phase": "roll", "wait": "same-cluster"}],
                  **command("storage", log)}},
        {"apiVersion": API, "kind": "PhasePlan", "metadata": {"name": "rolled"}, "spec": {"phases": ["roll", "after"]}},
    ]
    (site / "phases" / "rolled.yaml").write_text(yaml.safe_dump_all(documents, sort_keys=False))
    try:
        rc, output = run(site, collections_path, "-e", "plan_name=rolled")
    finally:
        (site / "phases" / "rolled.yaml").unlink()
    assert rc == 0, output
    times = logged(site)
    assert times[("roll", "w2")]["start"] >= times[("roll", "w1")]["end"], times     # batch 2 after batch 1
    assert times[("after", "w1")]["start"] < times[("roll", "w3")]["end"] - 2, times   # during batch 2
    for host in WORKLOAD:
        assert times[("after", host)]["start"] >= times[("roll", host)]["end"], (host, times)


def test_destroy_of_a_graph_removes_what_needs_a_phase_before_the_phase(site, clusters, collections_path):
    """Phases apply ConfigMaps in each workload cluster's namespace: app needs base, extra needs app (same cluster);
    destroy goes in reverse graph order, extra, app, base, whatever the plan's list order (base, extra, app)."""
    for host in WORKLOAD:
        clusters[cluster_of(host, clusters)].kubectl("create", "namespace", namespace_of(host), check=False)

    def applies(name: str, needs: list) -> dict:
        source = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"graph-{name}"}, "data": {"v": "1"}}]
        return {"apiVersion": API, "kind": "Phase", "metadata": {"name": f"layer-{name}"},
                "spec": {"cluster": "workload", "executor": "apply", "source": source,
                         **({"needs": needs} if needs else {})}}

    documents = [applies("base", []), applies("extra", [{"phase": "layer-app", "wait": "same-cluster"}]),
                 applies("app", ["layer-base"]),
                 {"apiVersion": API, "kind": "PhasePlan", "metadata": {"name": "layers"},
                  "spec": {"phases": ["layer-base", "layer-extra", "layer-app"]}}]
    (site / "phases" / "layers.yaml").write_text(yaml.safe_dump_all(documents, sort_keys=False))
    try:
        rc, output = run(site, collections_path, "-e", "plan_name=layers")
        assert rc == 0, output
        rc, output = run(site, collections_path, "-e", "plan_name=layers", "-e", "plan_action=destroy")
    finally:
        (site / "phases" / "layers.yaml").unlink()
    assert rc == 0, output
    undone = [line.split()[0] for line in output.splitlines() if line.startswith("[layer-")]
    assert undone == ["[layer-extra]", "[layer-app]", "[layer-base]"], output
    rows = [line.split()[0] for line in summary_text(output).splitlines() if line.startswith("layer-")]
    assert rows == ["layer-extra"] * 3 + ["layer-app"] * 3 + ["layer-base"] * 3, output
    for host in WORKLOAD:
        found = clusters[cluster_of(host, clusters)].kubectl("get", "configmaps", "-n", namespace_of(host), "-o", "name")
        assert "graph-" not in found.stdout, (host, found.stdout)
