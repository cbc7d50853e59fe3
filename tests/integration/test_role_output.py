# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""What the role, used as the README shows it (a user's site.yml), tells about a run, on the two local clusters.

- ``--check --diff`` of a changed ConfigMap and Deployment shows exactly the changed lines, as ``kubectl diff``
  does on the same objects (one key order, no server-set fields);
- a phase held open longer than 15 s prints progress lines while it runs (plain lines, at most every 10 s),
  a short phase none;
- ``plan_report_json`` and ``plan_report_junit`` write the summary for CI: one entry per phase and cluster,
  a failed cluster's message masked (the kubeconfig token it printed never appears).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import time
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

VENV_BIN = Path(sys.executable).parent
NAMESPACE = f"phasekit-output-{uuid.uuid4().hex[:8]}"
API = "phasekit.dev/v1alpha1"
SITE_YML = """\
- name: The site
  hosts: all
  gather_facts: false
  roles:
    - role: phasekit.kube.plan
      vars:
        plan_src: [phases]
"""
SLOW_SECONDS = 16   # the phase held open on ephemeral: progress at about 5 s and 15 s
# target, as the report run sees it: its token kubeconfig; the failing phase prints the token on stderr
PRINT_TOKEN = "kubectl config view --raw -o jsonpath='{.users[0].user.token}' >&2; echo; exit 3"


def phase(name, **spec):
    return {"apiVersion": API, "kind": "Phase", "metadata": {"name": name}, "spec": spec}


def plan(name, *phases):
    return {"apiVersion": API, "kind": "PhasePlan", "metadata": {"name": name}, "spec": {"phases": list(phases)}}


def command(script):
    return {"cmd": script, "shell": True}


def manifests(greeting: str, replicas: int) -> list[dict]:
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": NAMESPACE},
         "data": {"greeting": greeting, "color": "blue", "size": "10"}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": NAMESPACE},
         "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                  "template": {"metadata": {"labels": {"app": "web"}},
                               "spec": {"containers": [{"name": "web", "image": "registry.k8s.io/pause:3.10"}]}}}},
    ]


DOCUMENTS = [
    phase("app", cluster="management", executor="apply", source="../manifests/app"),
    phase("slow", cluster="management", executor="command",
          options=command(f'if [ "$PHASEKIT_HOST" = ephemeral ]; then sleep {SLOW_SECONDS}; else sleep 1; fi')),
    phase("quick", cluster="management", executor="command", options=command("true")),
    phase("boom", cluster="management", executor="command",
          options=command(f'if [ "$PHASEKIT_HOST" = target ]; then {PRINT_TOKEN}; fi')),
    phase("after", cluster="management", executor="command", options=command("true")),
    phase("look", cluster="management", executor="tasks", source="../tasks/look.yml"),
    plan("diffs", "app"),
    plan("long", "slow", "quick", "boom", "after"),
    plan("stepped", "quick", "look", "boom", "after"),   # a tasks phase: the role runs the plan in steps
]
LOOK_TASKS = [{"name": "Look", "ansible.builtin.debug": {"msg": "looking at {{ inventory_hostname }}"}}]


@pytest.fixture(scope="module")
def site(clusters, tmp_path_factory):
    root = tmp_path_factory.mktemp("site")
    (root / "phases").mkdir()
    (root / "phases" / "site.yaml").write_text(yaml.safe_dump_all(DOCUMENTS, sort_keys=False))
    (root / "manifests" / "app").mkdir(parents=True)
    (root / "site.yml").write_text(SITE_YML)
    (root / "tasks").mkdir()
    (root / "tasks" / "look.yml").write_text(yaml.safe_dump(LOOK_TASKS, sort_keys=False))
    yield root
    for cluster in clusters.values():
        cluster.kubectl("delete", "namespace", NAMESPACE, "--ignore-not-found", "--wait=false")


def inventory(clusters, target_kubeconfig: str = "admin") -> str:
    target = clusters["target"]
    hosts = {
        "ephemeral": {"kube_kubeconfig": str(clusters["ephemeral"].admin_kubeconfig), "kube_context": "ephemeral"},
        "target": {"kube_kubeconfig": str(target.admin_kubeconfig), "kube_context": target.context}
        if target_kubeconfig == "admin" else
        {"kube_kubeconfig": str(target.limited_kubeconfig), "kube_context": target.limited_context},
    }
    return yaml.safe_dump({"all": {"vars": {"ansible_connection": "local",
                                            "ansible_python_interpreter": sys.executable},
                                   "hosts": hosts, "children": {"management": {"hosts": {"ephemeral": {}, "target": {}}}}}})


class TimedRun:
    """A finished ansible-playbook run read line by line: when each line of its output arrived."""

    def __init__(self, returncode: int, lines: list[tuple[float, str]]):
        self.returncode, self.lines = returncode, lines
        self.stdout, self.stderr = "".join(line for _at, line in lines), ""

    def arrived(self, pattern: str) -> list[float]:
        """Seconds after the start at which lines matching ``pattern`` arrived."""
        return [at for at, line in self.lines if re.search(pattern, line)]


def run_site(site: Path, collections_path: Path, inventory_text: str, *args: str, timed: bool = False):
    """ansible-playbook on the site; ``timed``: its output (stderr with it) read as it comes (``TimedRun``)."""
    (site / "inventory.yml").write_text(inventory_text)
    full_env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(collections_path), ANSIBLE_NOCOLOR="1",
                    ANSIBLE_FORCE_COLOR="0", ANSIBLE_RETRY_FILES_ENABLED="0")
    full_env.pop("KUBECONFIG", None)
    argv = [str(VENV_BIN / "ansible-playbook"), "-i", "inventory.yml", "site.yml", *args]
    if not timed:
        return subprocess.run(argv, cwd=site, env=full_env, capture_output=True, text=True, check=False, timeout=600)
    started = time.monotonic()
    with subprocess.Popen(argv, cwd=site, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True) as proc:
        lines = [(time.monotonic() - started, line) for line in proc.stdout]
    return TimedRun(proc.returncode, lines)


def write_app(site: Path, greeting: str, replicas: int) -> Path:
    path = site / "manifests" / "app" / "app.yaml"
    path.write_text(yaml.safe_dump_all(manifests(greeting, replicas), sort_keys=False))
    return path


def changed_lines(text: str) -> list[str]:
    """The +/- lines of unified diffs (file headers left out)."""
    return [line.rstrip() for line in text.splitlines()
            if line[:1] in "+-" and not line.startswith(("+++ ", "--- "))]


def diff_blocks(output: str) -> dict[str, list[str]]:
    """Each object diff the run printed, by its header (``host: Kind ns/name (live)``): its changed lines."""
    blocks: dict[str, list[str]] = {}
    current = None
    for line in output.splitlines():
        if line.startswith("--- "):
            current = line[4:].strip()
            blocks[current] = []
        elif line.startswith("+++ ") or current is None:
            continue
        elif line[:1] in "+-":
            blocks[current].append(line.rstrip())
        elif not line.startswith((" ", "@@")):
            current = None
    return blocks


def kubectl_diff(cluster, manifest: Path) -> list[str]:
    """What ``kubectl diff`` shows for the same objects (server side, as phasekit applies), generation left
    out: kubectl shows the server's counter moving, which is no change of the object."""
    proc = cluster.kubectl("diff", "--server-side", "--force-conflicts", "--field-manager", "kubectl-diff-check",
                           "-f", str(manifest), check=False)
    assert proc.returncode in (0, 1), proc.stderr
    return [line for line in changed_lines(proc.stdout) if not re.match(r"^[+-]\s+generation: \d+$", line)]


def test_check_diff_shows_only_the_changed_lines(site, clusters, collections_path):
    write_app(site, "hello", 1)
    first = run_site(site, collections_path, inventory(clusters), "-e", "plan_name=diffs")
    assert first.returncode == 0, first.stdout[-4000:] + first.stderr[-2000:]
    manifest = write_app(site, "hello again", 2)
    checked = run_site(site, collections_path, inventory(clusters), "-e", "plan_name=diffs", "--check", "--diff")
    assert checked.returncode == 0, checked.stdout[-4000:] + checked.stderr[-2000:]
    blocks = diff_blocks(checked.stdout)
    expected_config_map = ["-  greeting: hello", "+  greeting: hello again"]
    expected_deployment = ["-  replicas: 1", "+  replicas: 2"]
    for host, cluster in clusters.items():
        assert blocks.get(f"{host}: ConfigMap {NAMESPACE}/settings (live)") == expected_config_map, checked.stdout
        assert blocks.get(f"{host}: Deployment {NAMESPACE}/web (live)") == expected_deployment, checked.stdout
        assert f"{host}: Namespace {NAMESPACE} (live)" not in blocks   # unchanged: no diff at all
        assert sorted(kubectl_diff(cluster, manifest)) == sorted(expected_config_map + expected_deployment)
    for cluster in clusters.values():   # check mode changed nothing
        assert cluster.get_json("configmap", "settings", "-n", NAMESPACE)["data"]["greeting"] == "hello"


@pytest.fixture(scope="module")
def long_run(site, clusters, collections_path, tmp_path_factory):
    """The plan ``long`` once, both reports asked for: slow (16 s on ephemeral), quick, boom (fails on
    target, printing its kubeconfig token), after (not run)."""
    reports = tmp_path_factory.mktemp("reports")
    proc = run_site(site, collections_path, inventory(clusters, target_kubeconfig="limited"),
                    "-e", "plan_name=long", "-e", "plan_record=false",
                    "-e", f"plan_report_json={reports}/plan.json", "-e", f"plan_report_junit={reports}/plan.xml",
                    timed=True)
    token = yaml.safe_load(clusters["target"].limited_kubeconfig.read_text())["users"][0]["user"]["token"]
    return proc, reports, token


PROGRESS = re.compile(r"^\[slow\] command on 2 cluster\(s\): 1 done \((?:0|1) changed, 0 failed\), 1 still running; "
                      r"slowest so far: ephemeral \((\d+\.\d)s, running\) \((\d+\.\d\d)s\)$", re.M)


def test_a_long_phase_prints_progress_while_it_runs(long_run):
    proc, _reports, _token = long_run
    lines = PROGRESS.findall(proc.stdout)
    assert 1 <= len(lines) <= 2, proc.stdout[-4000:]
    seconds = [float(elapsed) for _slowest, elapsed in lines]
    assert seconds[0] >= 4.9 and all(later - earlier >= 9.9 for earlier, later in zip(seconds, seconds[1:]))
    assert re.search(r"^\[slow\] command on 2 cluster\(s\): .*\((1[6-9]|[2-9]\d)\.\d\ds\)$", proc.stdout, re.M)
    # live: the first progress line reached the output while the phase still ran, about 11 s before its end
    first_progress, = proc.arrived(r"^\[slow\] .* still running")[:1]
    phase_end, = proc.arrived(r"^\[slow\] command on 2 cluster\(s\): \d+ changed")
    assert phase_end - first_progress >= 8, (first_progress, phase_end)
    # short phases: their line after the barrier only
    assert not re.search(r"^\[(quick|boom)\] .*still running", proc.stdout, re.M), proc.stdout[-4000:]
    assert "\x1b" not in proc.stdout   # plain lines (AWX job output)


def test_reports_for_ci_name_every_phase_and_cluster(long_run):
    proc, reports, token = long_run
    assert proc.returncode != 0   # boom failed on target
    assert token not in proc.stdout + proc.stderr
    raw_json, raw_xml = (reports / "plan.json").read_text(), (reports / "plan.xml").read_text()
    assert token not in raw_json and token not in raw_xml
    report = json.loads(raw_json)
    results = {(entry["phase"], entry["cluster"]): entry for entry in report["results"]}
    assert sorted(results) == sorted((phase_name, host) for phase_name in ("slow", "quick", "boom", "after")
                                     for host in ("ephemeral", "target"))
    assert (report["plan"], report["mode"], report["failed"], report["stopped_by"]) == ("long", "run", True, "boom")
    assert results[("slow", "ephemeral")]["duration"] >= SLOW_SECONDS
    assert results[("boom", "target")]["result"] == "failed" and "***" in results[("boom", "target")]["message"]
    assert results[("boom", "ephemeral")]["result"] in ("ok", "changed")
    assert {results[("after", host)]["result"] for host in ("ephemeral", "target")} == {"not run"}
    root = ET.fromstring(raw_xml)
    assert [suite.get("name") for suite in root] == ["slow", "quick", "boom", "after"]
    assert (root.get("tests"), root.get("failures"), root.get("skipped")) == ("8", "1", "2")
    boom = {case.get("name"): case for case in root.find("testsuite[@name='boom']")}
    assert boom["target"].find("failure") is not None and boom["ephemeral"].find("failure") is None
    assert all(case.find("skipped") is not None for case in root.find("testsuite[@name='after']"))
    assert not list(reports.glob(".*"))   # no temporary file left


@pytest.mark.smoke   # the role's steps, its new summary action and the reports: cheap, on every ansible-core line
def test_reports_of_a_run_in_steps_hold_its_tasks_phases(site, clusters, collections_path, tmp_path):
    proc = run_site(site, collections_path, inventory(clusters), "-e", "plan_name=stepped", "-e", "plan_record=false",
                    "-e", f"plan_report_json={tmp_path}/plan.json", "-e", f"plan_report_junit={tmp_path}/plan.xml")
    assert proc.returncode != 0 and "looking at ephemeral" in proc.stdout, proc.stdout[-4000:]
    report = json.loads((tmp_path / "plan.json").read_text())
    results = {(entry["phase"], entry["cluster"]): entry["result"] for entry in report["results"]}
    assert results == {("quick", "ephemeral"): "changed", ("quick", "target"): "changed",
                       ("look", "ephemeral"): "ok", ("look", "target"): "ok",
                       ("boom", "ephemeral"): "changed", ("boom", "target"): "failed",
                       ("after", "ephemeral"): "not run", ("after", "target"): "not run"}
    assert (report["plan"], report["stopped_by"], report["failed"]) == ("stepped", "boom", True)
    root = ET.parse(tmp_path / "plan.xml").getroot()
    assert [suite.get("name") for suite in root] == ["quick", "look", "boom", "after"]
    assert (root.get("tests"), root.get("failures"), root.get("skipped")) == ("8", "1", "2")


@pytest.mark.parametrize("option, plan_name", [
    ("plan_report_json", "long"),
    ("plan_report_junit", "stepped"),
], ids=["json-run-in-one-task", "junit-run-in-steps"])
def test_a_report_in_a_missing_directory_is_refused_before_anything_runs(site, clusters, collections_path,
                                                                         tmp_path, option, plan_name):
    proc = run_site(site, collections_path, inventory(clusters), "-e", f"plan_name={plan_name}",
                    "-e", f"{option}={tmp_path}/missing/report")
    assert proc.returncode != 0
    expected = textwrap.dedent(f"""\
        {option.replace('plan_', '')} ({option}): cannot write the report {tmp_path}/missing/report: its directory
        {tmp_path}/missing does not exist""").replace("\n", " ")
    assert expected in " ".join(proc.stdout.split()), proc.stdout[-3000:]
    assert not re.search(r"^\[(slow|quick)\]", proc.stdout, re.M) and "Traceback" not in proc.stdout + proc.stderr
