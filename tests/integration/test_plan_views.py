# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""What the plan role prints and writes for people (issue 36, problem 9): every table as plain lines in the default
callback and in ansible-runner's events (what AWX shows), the lines in the result under a JSON stdout callback, the
Mermaid graph written to a file, and ``render`` as YAML with the helm phases' objects, printed or written.

The site is test_plan.py's (its fixtures are imported): a kustomization with a Secret, a helm chart, a command phase
building directories, a tasks phase.
"""

from __future__ import annotations

import json
import os
import re
import sys
import textwrap
from pathlib import Path

import ansible_runner
import pytest
import yaml

from test_plan import NAMESPACE, inventory_text, run_plan, site, why  # noqa: F401  # pylint: disable=unused-import

VENV_BIN = Path(sys.executable).parent
QUOTED_LIST = '"msg": ['
TASK_BANNER = re.compile(r"^TASK \[(?P<name>.*)\] \*+$")
OUTCOME = re.compile(r"^(ok|changed|fatal|failed|skipping): \[")

# A stdout callback that prints JSON, as ansible.posix.json does: one document of every task's results, at the end.
JSON_CALLBACK = '''\
from __future__ import annotations
import json
from ansible.plugins.callback import CallbackBase
DOCUMENTATION = """
name: json
type: stdout
short_description: every task's result as one JSON document
description: [the shape of ansible.posix.json, for tests]
"""
class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "stdout"
    CALLBACK_NAME = "json"
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.tasks = []
    def v2_runner_on_ok(self, result, **kwargs):
        self.tasks.append({"task": result._task.get_name(), "result": self._convert_host_to_name(result._result)})
    v2_runner_on_failed = v2_runner_on_ok
    def _convert_host_to_name(self, value):
        return json.loads(json.dumps(value, default=str))
    def v2_playbook_on_stats(self, stats):
        self._display.display(json.dumps({"tasks": self.tasks}, indent=2))
'''


def task_output(stdout: str, banner: str) -> list[str]:
    """The lines a task printed between its banner (name starting with ``banner``, role prefix allowed) and its
    first outcome line."""
    lines, inside = [], False
    for line in stdout.splitlines():
        found = TASK_BANNER.match(line)
        if found:
            inside = banner in found.group("name")
            continue
        if inside and OUTCOME.match(line):
            return lines
        if inside:
            lines.append(line)
    return lines


@pytest.mark.parametrize("args, banner, rows", [
    (["-e", "plan=apps", "-e", "plan_action=list"], "Phases of plan apps",
     [["PHASE", "CLUSTER", "HOSTS", "EXECUTOR", "SOURCE", "RUN"],
      ["apps-e", "ephemeral", "ephemeral", "apply", "../manifests/apps", "yes"]]),
    (["-e", "plan=alternate", "-e", "plan_action=tree"], "Tree of plan alternate",
     [["plan", "alternate"], ["e1", "command", "@ephemeral"], ["flowchart", "TD"]]),
    (["-e", "plan=alternate"], "Summary of plan alternate",
     [["PHASE", "CLUSTER", "RESULT", "DURATION", "CHANGED", "SERVER"], ["e1", "ephemeral", "changed"],
      ["pair/t", "target", "changed"]]),
    (["-e", "plan=alternate", "-e", "plan_action=history"], "Recent runs of plan alternate",
     [["CLUSTER", "STARTED", "RUN", "ACTION", "BY", "VERSION", "PHASES"]]),
], ids=["list", "tree", "run-summary", "history"])
def test_tables_print_as_plain_lines(run_plan, args, banner, rows):
    """Each table's rows are lines of their own under the task's banner: no debug message list, no quotes."""
    result = run_plan(*args)[0]
    assert result.rc == 0, why(result)
    shown = task_output(result.stdout, banner)
    for row in rows:
        assert any(line.split()[:len(row)] == row for line in shown), (row, shown, result)
    assert shown and not any(line.lstrip().startswith('"') for line in shown), shown
    assert QUOTED_LIST not in result.stdout, result


def outcome_line(stdout: str, banner: str) -> str:
    """The first outcome line (``ok: [host] ...``) of the task whose banner holds ``banner``."""
    lines = stdout.splitlines()
    start = next(number for number, line in enumerate(lines) if line.startswith("TASK [") and banner in line)
    return next(line for line in lines[start:] if OUTCOME.match(line))


@pytest.mark.parametrize("banner", ["Phases of plan alternate", "Summary of plan alternate"],
                         ids=["plan-table", "summary"])
def test_tables_are_not_repeated_in_the_result_at_verbosity(run_plan, banner):
    """At -v a table task's result is short: the table is shown once, as lines, not again as a quoted list (the
    data stays in the registered results of the plan and of the run)."""
    result = run_plan("-e", "plan=alternate", verbosity=1)[0]
    assert result.rc == 0, why(result)
    assert task_output(result.stdout, banner)[0].split()[:2] == ["PHASE", "CLUSTER"], result
    said = outcome_line(result.stdout, banner)
    assert "PHASE" not in said and len(said) < 200, said


@pytest.mark.parametrize("name, fenced", [("plan.mmd", False), ("plan.md", True)], ids=["mermaid", "markdown"])
def test_graph_file_holds_the_mermaid_graph(run_plan, tmp_path, name, fenced):
    graph = tmp_path / "out" / name
    graph.parent.mkdir()
    result = run_plan("-e", "plan=alternate", "-e", "plan_action=tree", "-e", f"plan_graph_file={graph}")[0]
    assert result.rc == 0, why(result)
    text = graph.read_text()
    if fenced:
        assert text.startswith("```mermaid\n") and text.endswith("```\n"), text
        text = text[len("```mermaid\n"):-len("```\n")]
    lines = text.splitlines()
    assert lines[0] == "flowchart TD", text
    nodes = dict(re.findall(r'^\s*(p\d+)\["([^"<]+)<br/>', text, flags=re.MULTILINE))
    arrows = re.findall(r"^\s*(p\d+) --> (p\d+)$", text, flags=re.MULTILINE)
    edges = [(nodes[before], nodes[after]) for before, after in arrows]
    # a plan is a line: each phase needs the one before it, one edge per need
    assert edges == [("e1", "t1"), ("t1", "both"), ("both", "pair/e"), ("pair/e", "pair/t")], text
    assert f"Mermaid graph written to {graph}" in task_output(result.stdout, "Tree of plan alternate"), result
    assert "flowchart TD" not in result.stdout and not list(graph.parent.glob(".*.tmp")), result


def test_graph_file_in_a_missing_directory_is_refused(run_plan, tmp_path):
    result = run_plan("-e", "plan=alternate", "-e", "plan_action=tree",
                      "-e", f"plan_graph_file={tmp_path}/nowhere/plan.mmd")[0]
    assert result.rc != 0
    assert (f"graph_file (plan_graph_file): cannot write the graph {tmp_path}/nowhere/plan.mmd: its directory "
            f"{tmp_path}/nowhere does not exist (create it first)") in result.stdout, result
    assert "Traceback" not in result.output


def rendered_objects(text: str) -> list[dict]:
    return [document for document in yaml.safe_load_all(text) if document is not None]


def check_rendered(objects: list[dict]) -> None:
    """The site's bundles: the kustomization's objects, its Secret masked, and the helm phase's release."""
    by_name = {(one["kind"], one["metadata"]["name"]): one for one in objects}
    assert by_name[("ConfigMap", "plan-app")]["data"] == {"greeting": "hello"}
    assert by_name[("Secret", "plan-secret")]["stringData"] == {"password": "***"}
    assert by_name[("ConfigMap", f"hello-{NAMESPACE}")]["data"] == {"greeting": "hello"}   # helm template


def test_render_prints_yaml_with_the_helm_phases(run_plan):
    result = run_plan("-e", "plan=every-executor-offline", "-e", "plan_action=render")[0]
    assert result.rc == 0, why(result)
    shown = task_output(result.stdout, "Rendered bundles of plan every-executor-offline")
    assert "# phase apps-e on cluster ephemeral" in shown and "# phase chart on cluster target" in shown, shown
    assert any(line.startswith("# helm template of release hello-") for line in shown), shown
    check_rendered(rendered_objects("\n".join(shown)))
    assert "do-not-show-me" not in result.output and QUOTED_LIST not in result.stdout, result


@pytest.mark.parametrize("dest", ["rendered", "rendered.yaml"], ids=["directory", "one-file"])
def test_render_writes_yaml_files(run_plan, tmp_path, dest):
    target = tmp_path / dest
    result = run_plan("-e", "plan=every-executor-offline", "-e", "plan_action=render",
                      "-e", f"plan_render_dest={target}")[0]
    assert result.rc == 0, why(result)
    if dest.endswith(".yaml"):
        texts = {"": target.read_text()}
    else:
        texts = {str(path.relative_to(target)): path.read_text() for path in sorted(target.rglob("*.yaml"))}
        # one file per phase and cluster
        assert set(texts) == {"apps-e/ephemeral.yaml", "apps-ready/management.yaml", "built/target.yaml",
                              "chart/target.yaml"}, texts
        assert texts["chart/target.yaml"].startswith("# phase chart on cluster target\n"), texts
    check_rendered([one for text in texts.values() for one in rendered_objects(text)])
    assert not any("do-not-show-me" in text for text in texts.values())
    assert "do-not-show-me" not in result.output and "apiVersion" not in result.stdout, result


def test_render_dest_whose_parent_is_missing_is_refused(run_plan, tmp_path):
    result = run_plan("-e", "plan=apps", "-e", "plan_action=render", "-e", f"plan_render_dest={tmp_path}/a/b")[0]
    assert result.rc != 0
    assert (f"render_dest (plan_render_dest): cannot write the rendered bundles in {tmp_path}/a/b: its parent "
            f"directory {tmp_path}/a does not exist (create it first)") in result.stdout, result
    assert "Traceback" not in result.output


def test_json_stdout_callback_gets_one_document_with_the_lines(run_plan, tmp_path):
    """A stdout callback that prints JSON (ansible.posix.json's shape) keeps stdout one JSON document: the tables
    are in the tasks' results (``lines``), not printed in front of it."""
    plugins = tmp_path / "callbacks"
    plugins.mkdir()
    (plugins / "json.py").write_text(JSON_CALLBACK)
    result = run_plan("-e", "plan=apps", "-e", "plan_action=list",
                      env={"ANSIBLE_STDOUT_CALLBACK": "json", "ANSIBLE_CALLBACK_PLUGINS": str(plugins)})[0]
    assert result.rc == 0, result
    document = json.loads(result.stdout)
    shown = {task["task"]: task["result"] for task in document["tasks"]}
    lines = next(value["lines"] for name, value in shown.items() if name.endswith("Phases of plan apps"))
    assert lines[0].split() == ["PHASE", "CLUSTER", "HOSTS", "EXECUTOR", "SOURCE", "RUN"], lines


SITE_PLAYBOOK = """\
- name: The site's plan table
  hosts: all
  gather_facts: false
  roles:
    - role: phasekit.kube.plan
      vars:
        plan_src: ["{phases}"]
        plan_name: apps
        plan_action: list
"""


def test_ansible_runner_gets_each_line_as_a_verbose_event_of_the_task(site, clusters, collections_path, bin_dir,
                                                                      tmp_path):
    """What AWX shows: each line of the table is an event of its task (``verbose``, the line in ``stdout``), in
    order, before the task's ``runner_on_ok``."""
    root = tmp_path / "runner"
    (root / "project").mkdir(parents=True)
    (root / "env").mkdir()
    (root / "project/site.yml").write_text(textwrap.dedent(SITE_PLAYBOOK.format(phases=site / "phases")))
    (site / "inventory.yml").write_text(inventory_text(clusters))
    (root / "env/envvars").write_text(yaml.safe_dump({
        "ANSIBLE_COLLECTIONS_PATH": str(collections_path), "ANSIBLE_PYTHON_INTERPRETER": sys.executable,
        "ANSIBLE_NOCOLOR": "1", "PATH": f"{bin_dir}{os.pathsep}{VENV_BIN}{os.pathsep}{os.environ['PATH']}"}))
    saved = os.environ.get("PATH")
    os.environ["PATH"] = f"{VENV_BIN}{os.pathsep}{saved}"   # ansible-runner finds ansible-playbook on PATH
    try:
        runner = ansible_runner.run(private_data_dir=str(root), playbook="site.yml", quiet=True,
                                    inventory=str(site / "inventory.yml"))
    finally:
        os.environ["PATH"] = saved
    assert runner.rc == 0, runner.stdout.read()
    events = [event for event in runner.events if event["event_data"].get("task", "").endswith("Phases of plan apps")]
    kinds = [event["event"] for event in events]
    assert kinds[-1] == "runner_on_ok", kinds
    shown = [event["stdout"] for event in events if event["event"] == "verbose"]
    assert shown[0].split() == ["PHASE", "CLUSTER", "HOSTS", "EXECUTOR", "SOURCE", "RUN"], shown
    assert ["apps-e", "ephemeral", "ephemeral", "apply", "../manifests/apps", "yes"] in [line.split() for line in shown]
    assert len(shown) == 5, shown   # the header and the plan's four phases, one event each
    ok = next(event for event in events if event["event"] == "runner_on_ok")
    assert "PHASE" not in json.dumps(ok["event_data"].get("res", {})), ok   # the result is short
