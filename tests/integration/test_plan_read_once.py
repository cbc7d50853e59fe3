# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The plan is read once per run (issue 38): each step of the role runs the plan its plan task read, unless the
documents changed in between, on the two local clusters.

The plan: p0 (apply), edit (a tasks phase whose task file appends a comment to the plan's documents), p1 (apply).
At -vvv each controller task that reuses the plan says so; the step after the edit reads the documents again.
"""

from __future__ import annotations

import re
import uuid

import pytest
import yaml
from test_role_flows import SITE_YML as PLAYBOOK  # the role in the user's site.yml

API = "phasekit.dev/v1alpha1"
REUSED = "the plan an earlier task of this run read"
BANNER = re.compile(r"^TASK \[(?P<name>.*)\] \*+$", re.MULTILINE)
EDIT_TASKS = """
- name: Change the plan's documents (a comment) while the run goes on
  ansible.builtin.lineinfile:
    path: "{{ playbook_dir }}/phases/site.yaml"
    line: "# edited by the tasks phase"
  run_once: true
"""


def task_outputs(output: str) -> dict[str, str]:
    """Each task's output by its banner's name (a name met again keeps its last output)."""
    parts = BANNER.split(output)
    return {parts[index]: parts[index + 1] for index in range(1, len(parts) - 1, 2)}


@pytest.fixture(name="site")
def site_fixture(clusters, tmp_path):
    namespace = f"pk-read-once-{uuid.uuid4().hex[:6]}"
    (tmp_path / "phases").mkdir()
    (tmp_path / "manifests").mkdir()
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "edit.yml").write_text(EDIT_TASKS)
    documents = []
    for number in range(2):
        (tmp_path / "manifests" / f"p{number}.yaml").write_text(yaml.safe_dump(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"p{number}"}}))
        documents.append({"apiVersion": API, "kind": "Phase", "metadata": {"name": f"p{number}"},
                          "spec": {"cluster": "all", "executor": "apply", "source": f"../manifests/p{number}.yaml",
                                   "options": {"namespace": namespace}}})
    documents.append({"apiVersion": API, "kind": "Phase", "metadata": {"name": "edit"},
                      "spec": {"cluster": "all", "executor": "tasks", "source": "../tasks/edit.yml"}})
    documents.append({"apiVersion": API, "kind": "PhasePlan", "metadata": {"name": "site"},
                      "spec": {"phases": ["p0", "edit", "p1"]}})
    (tmp_path / "phases" / "site.yaml").write_text(yaml.safe_dump_all(documents))
    inventory = {"all": {"vars": {"ansible_connection": "local", "plan_record_namespace": namespace},
                         "hosts": {name: {"kube_kubeconfig": str(cluster.admin_kubeconfig), "kube_context": name}
                                   for name, cluster in clusters.items()}}}
    for cluster in clusters.values():
        cluster.kubectl("create", "namespace", namespace)
    yield namespace, inventory
    for cluster in clusters.values():
        cluster.kubectl("delete", "namespace", namespace, "--ignore-not-found", "--wait=false")


def test_each_step_runs_the_plan_read_once_unless_its_documents_changed(
        site, clusters, run_playbook, short_tmp, tmp_path):
    namespace, inventory = site
    result = run_playbook(PLAYBOOK, inventory, env={"TMPDIR": str(short_tmp)}, verbosity=3)
    assert result.rc == 0, result.output[-6000:]
    tasks = task_outputs(result.output)
    reused = {name: REUSED in text for name, text in tasks.items() if "phasekit.kube.plan" in name}
    expected = {"phasekit.kube.plan : Plan site": False,               # the documents read, once
                "phasekit.kube.plan : [p0] on the controller": True,
                "phasekit.kube.plan : [edit] on the controller": True,
                "phasekit.kube.plan : [p1] on the controller": False,  # read again: the tasks phase changed them
                "phasekit.kube.plan : Release the locks held for the task files": True}
    assert {name: reused.get(name) for name in expected} == expected, result.output[-8000:]
    assert "# edited by the tasks phase" in (tmp_path / "phases" / "site.yaml").read_text()
    for name, cluster in clusters.items():
        found = {item["metadata"]["name"] for item in cluster.get_json("configmaps", "-n", namespace)["items"]}
        assert {"p0", "p1"} <= found, (name, found)

    # the store: private files of the ansible-playbook process, swept by the next run once that process is gone
    stores = list(short_tmp.glob("phasekit-*/*/plans"))
    assert len(stores) == 1 and stores[0].stat().st_mode & 0o077 == 0, stores
    assert all(path.stat().st_mode & 0o077 == 0 for path in stores[0].iterdir())
    assert len(list(stores[0].iterdir())) >= 2   # before and after the edit
    again = run_playbook(PLAYBOOK, inventory, env={"TMPDIR": str(short_tmp)})
    assert again.rc == 0, again.output[-4000:]
    assert not stores[0].exists()
