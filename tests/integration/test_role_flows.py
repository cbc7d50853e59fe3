# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The role as the README and the example site use it (in the user's own site.yml), on the two local clusters:
every documented flow prints no warning and no task whose only outcome is skipping (issue 25).

One small site (two phases of two ConfigMaps each, both clusters), run once when the module starts; each flow of
the table then runs against it, destroy last.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest
import yaml
from fleet_site import recap

VENV_BIN = Path(sys.executable).parent
API = "phasekit.dev/v1alpha1"
BANNER = re.compile(r"^(TASK|RUNNING HANDLER) \[(?P<name>.*)\] \*+$")
# the lines that say what a task did on a host (the default callback's)
OUTCOME = re.compile(r"^(?P<kind>ok|changed|skipping|fatal|failed|included|unreachable):")
WARNING = re.compile(r"^\[(WARNING|DEPRECATION WARNING)\]")

SITE_YML = """\
- name: Deploy the site
  hosts: all
  gather_facts: false
  roles:
    - role: phasekit.kube.plan
      vars:
        plan_src: [phases]
        plan_name: site
"""


def skipped_only_tasks(output: str) -> list[str]:
    """The tasks whose every outcome line is 'skipping' (a banner with no outcome at all is not one)."""
    found, name, kinds = [], None, []
    for line in output.splitlines() + ["TASK [end] ***"]:
        banner = BANNER.match(line)
        if banner or line.startswith(("PLAY [", "PLAY RECAP")):
            if name is not None and kinds and set(kinds) == {"skipping"}:
                found.append(name)
            name, kinds = (banner.group("name") if banner else None), []
            continue
        outcome = OUTCOME.match(line)
        if outcome and name is not None:
            kinds.append(outcome.group("kind"))
    return found


def warnings(output: str) -> list[str]:
    return [line for line in output.splitlines() if WARNING.match(line)]


@pytest.mark.parametrize("output, expected", [
    ("TASK [a] ***\nskipping: [h1]\nskipping: [h2]\n\nTASK [b] ***\nok: [h1]\n", ["a"]),
    ("TASK [a] ***\nskipping: [h1]\nok: [h2]\nTASK [b] ***\n\nPLAY RECAP ***\n", []),
    ("TASK [a] ***\n\nTASK [a] ***\nincluded: x.yml for h1\n", []),
    ("PLAY [p] ***\nTASK [last] ***\nskipping: [h1]\n\nPLAY RECAP ***\nh1 : ok=1\n", ["last"]),
], ids=["skipped-everywhere", "skipped-somewhere", "no-outcome", "last-task"])
def test_skipped_only_tasks_are_found(output, expected):
    """The checker itself: a task counts when all its outcome lines are 'skipping', and only then."""
    assert skipped_only_tasks(output) == expected


@pytest.fixture(scope="module")
def role_site(clusters, collections_path, tmp_path_factory):
    """The site (phases, manifests, inventory, site.yml) and run(*args) -> (rc, output), through the role."""
    namespace = f"pk-role-out-{uuid.uuid4().hex[:6]}"
    root = tmp_path_factory.mktemp("role-site")
    (root / "phases").mkdir()
    (root / "manifests").mkdir()
    phases = []
    for number in range(2):
        objects = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"p{number}-{index}"},
                    "data": {"phase": str(number)}} for index in range(2)]
        (root / "manifests" / f"p{number}.yaml").write_text(yaml.safe_dump_all(objects))
        phases.append({"apiVersion": API, "kind": "Phase", "metadata": {"name": f"p{number}"},
                       "spec": {"cluster": "all", "executor": "apply", "source": f"../manifests/p{number}.yaml",
                                "options": {"namespace": namespace}}})
    phases.append({"apiVersion": API, "kind": "PhasePlan", "metadata": {"name": "site"},
                   "spec": {"phases": ["p0", "p1"]}})
    (root / "phases" / "site.yaml").write_text(yaml.safe_dump_all(phases))
    (root / "inventory.yml").write_text(yaml.safe_dump({"all": {
        "vars": {"ansible_connection": "local", "plan_record_namespace": namespace},
        "hosts": {name: {"kube_kubeconfig": str(cluster.admin_kubeconfig), "kube_context": name}
                  for name, cluster in clusters.items()}}}))
    (root / "site.yml").write_text(SITE_YML)
    tmpdir = Path(tempfile.mkdtemp(prefix="pk-"))  # short: ansible-core 2.21's manager socket lives there
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(collections_path), ANSIBLE_NOCOLOR="1",
               ANSIBLE_FORCE_COLOR="0", ANSIBLE_RETRY_FILES_ENABLED="0", ANSIBLE_LOCALHOST_WARNING="0",
               ANSIBLE_INVENTORY_UNPARSED_WARNING="0", ANSIBLE_PYTHON_INTERPRETER=sys.executable,
               TMPDIR=str(tmpdir))
    env.pop("KUBECONFIG", None)

    def run(*args) -> tuple[int, str]:
        done = subprocess.run([str(VENV_BIN / "ansible-playbook"), "-i", "inventory.yml", "site.yml", *args],
                              cwd=root, env=env, capture_output=True, text=True, check=False)
        return done.returncode, done.stdout + done.stderr

    for cluster in clusters.values():
        cluster.kubectl("create", "namespace", namespace)
    run.first = run()
    run.namespace = namespace
    yield run
    for cluster in clusters.values():
        cluster.kubectl("delete", "namespace", namespace, "--ignore-not-found", "--wait=false")
    shutil.rmtree(tmpdir, ignore_errors=True)


# Each documented flow of the role, with a line its output must hold; destroy comes last (it undoes the site).
FLOWS = [
    ("run-first", None, "Summary of plan site"),
    ("run", (), "Summary of plan site"),
    ("check", ("--check",), "Summary of plan site"),
    ("check-diff", ("--check", "--diff"), "Summary of plan site"),
    ("status", ("-e", "plan_action=status"), "in sync"),
    ("status-drift-gate", ("-e", "plan_action=status", "-e", "plan_fail_on_drift=true"), "in sync"),
    ("list", ("-e", "plan_action=list"), "Phases of plan site"),
    ("tree", ("-e", "plan_action=tree"), "flowchart TD"),
    ("render", ("-e", "plan_action=render"), "Rendered bundles of plan site"),
    ("validate", ("-e", "plan_action=validate"), "Summary of plan site"),
    ("validate-offline", ("-e", "plan_action=validate", "-e", "plan_offline=true"), "phases valid"),
    ("history", ("-e", "plan_action=history"), "Recent runs of plan site"),
    ("destroy", ("-e", "plan_action=destroy"), "Summary of plan site"),
]


READ_ONLY = ("plan_action=status", "plan_action=list", "plan_action=tree", "plan_action=render",
             "plan_action=validate", "plan_action=history")


@pytest.mark.smoke
@pytest.mark.parametrize("args, expected", [flow[1:] for flow in FLOWS], ids=[flow[0] for flow in FLOWS])
def test_documented_flow_prints_no_warning_and_no_skipped_task(role_site, args, expected):
    rc, output = role_site.first if args is None else role_site(*args)
    assert rc == 0, output[-6000:]
    assert expected in output, output[-6000:]
    if args and set(args) & set(READ_ONLY):   # a read-only action changes nothing, and says so in PLAY RECAP
        assert all(row["changed"] == 0 for row in recap(output).values()), output[-3000:]
    assert warnings(output) == [], output[-6000:]
    assert skipped_only_tasks(output) == [], output[-6000:]


@pytest.mark.parametrize("action", ["status", "validate"])
def test_read_only_action_reports_no_change_on_a_drifted_site(role_site, clusters, action):
    """status and validate read the clusters: a site that drifted is reported, and PLAY RECAP says nothing changed."""
    rc, output = role_site()
    assert rc == 0, output[-4000:]
    cluster = next(iter(clusters.values()))
    drifted = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "p0-0", "namespace": role_site.namespace},
               "data": {"phase": "drifted"}}   # by the plan's own field manager: a change, not a conflict
    cluster.kubectl("apply", "--server-side", "--field-manager", "phasekit", "-f", "-", stdin=json.dumps(drifted))
    rc, output = role_site("-e", f"plan_action={action}")
    assert rc == 0, output[-4000:]
    assert all(row["changed"] == 0 for row in recap(output).values()), output[-4000:]
