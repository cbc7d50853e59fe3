# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""What command phases and waits say, through the plan role as a user's site.yml runs it, on the local clusters.

- a smoke ``command`` phase with ``changed_when: never`` is ``ok`` on every run (PLAY RECAP ``changed=0``); its
  output, the kubeconfig token it prints masked, is under the cluster's line at ``-v`` and in the JSON and JUnit
  reports; ``validate`` names a bad ``changed_when`` with its document and field;
- a wait on a Deployment whose pod cannot be scheduled (a node selector no KWOK node has) prints progress lines
  naming the Deployment and its kstatus message while it waits, and its timeout names it with its message.
"""

from __future__ import annotations

import json
import re
import shutil
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from test_role_output import SITE_YML, inventory, phase, plan, run_site

NAMESPACE = f"phasekit-waits-{uuid.uuid4().hex[:8]}"
WAIT_SECONDS = 10
# the smoke check: the API server answers (through the phase's KUBECONFIG), and a careless line prints the token
SMOKE = ("kubectl get --raw /readyz; echo; echo \"token: $(kubectl config view --raw -o jsonpath='{.users[0].user.token}')\";"
         " echo checked >&2")


def stuck_objects() -> list[dict]:
    return [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
            {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "stuck", "namespace": NAMESPACE},
             "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "stuck"}},
                      "template": {"metadata": {"labels": {"app": "stuck"}},
                                   "spec": {"nodeSelector": {"phasekit-test": "nowhere"},
                                            "containers": [{"name": "app", "image": "registry.example/app:1"}]}}}}]


DOCUMENTS = [
    phase("smoke", cluster="management", executor="command",
          options={"cmd": SMOKE, "shell": True, "changed_when": "never"}),
    phase("stuck", cluster="ephemeral", executor="apply", source="../manifests/stuck"),
    phase("stuck-wait", cluster="ephemeral", executor="wait", source="../manifests/stuck",
          options={"timeout": WAIT_SECONDS}),
    phase("stuck-apply", cluster="ephemeral", executor="apply", source="../manifests/stuck",
          options={"wait": {"timeout": WAIT_SECONDS}}),
    plan("smoke", "smoke"),
    plan("wait", "stuck", "stuck-wait"),
    plan("apply-wait", "stuck-apply"),
]


def write_site(root: Path, documents: list[dict], files: dict[str, str]) -> Path:
    """A user's site in ``root``: site.yml using the role, ``phases/site.yaml``, and ``files`` (path -> text)."""
    for path, text in {"site.yml": SITE_YML, "phases/site.yaml": yaml.safe_dump_all(documents, sort_keys=False),
                       **files}.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return root


@pytest.fixture(scope="module")
def site(clusters, tmp_path_factory):
    root = write_site(tmp_path_factory.mktemp("site"), DOCUMENTS,
                      {"manifests/stuck/stuck.yaml": yaml.safe_dump_all(stuck_objects(), sort_keys=False)})
    yield root
    clusters["ephemeral"].kubectl("delete", "namespace", NAMESPACE, "--ignore-not-found", "--wait=false")


def recap(output: str) -> dict[str, int]:
    """PLAY RECAP: host -> changed."""
    return {host: int(changed) for host, changed in re.findall(r"^(\S+)\s+:\s+ok=\d+\s+changed=(\d+)", output, re.M)}


def test_a_smoke_command_is_ok_on_every_run_and_shows_its_output_masked(site, clusters, collections_path, tmp_path):
    hosts = inventory(clusters, target_kubeconfig="limited")
    token = yaml.safe_load(clusters["target"].limited_kubeconfig.read_text())["users"][0]["user"]["token"]
    for run in (1, 2):
        proc = run_site(site, collections_path, hosts, "-v", "-e", "plan_name=smoke", "-e", "plan_record=false",
                        "-e", f"plan_report_json={tmp_path}/plan{run}.json",
                        "-e", f"plan_report_junit={tmp_path}/plan{run}.xml")
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
        assert re.search(r"^\[smoke\] command on 2 cluster\(s\): 2 ok ", proc.stdout, re.M), proc.stdout[-4000:]
        # the role's engine runs once, on the play's first host: the only one in PLAY RECAP here
        assert recap(proc.stdout) == {"ephemeral": 0}, proc.stdout[-2000:]
    # -v: each cluster's line, its exit code, then what it printed
    assert re.search(r"^  target: ok, rc 0 \(\d+\.\d\ds\)\n    stdout:\n      ok\n      token: \*\*\*\n"
                     r"    stderr:\n      checked\n", proc.stdout, re.M), proc.stdout[-4000:]
    assert token not in proc.stdout + proc.stderr
    report = json.loads((tmp_path / "plan2.json").read_text())
    entry = {result["cluster"]: result for result in report["results"]}["target"]
    assert (entry["result"], entry["rc"], entry["stdout"], entry["stderr"]) == ("ok", 0, "ok\ntoken: ***\n",
                                                                                "checked\n")
    assert entry["message"] == "rc 0: ok | token: ***"
    raw_xml = (tmp_path / "plan2.xml").read_text()
    assert token not in raw_xml and token not in (tmp_path / "plan2.json").read_text()
    case = ET.fromstring(raw_xml).find("testsuite[@name='smoke']/testcase[@name='target']")
    assert (case.find("system-out").text, case.find("system-err").text) == ("ok\ntoken: ***\n", "checked\n")


def test_a_commands_output_is_not_shown_without_v(site, clusters, collections_path):
    proc = run_site(site, collections_path, inventory(clusters), "-e", "plan_name=smoke", "-e", "plan_record=false")
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert "    stdout:" not in proc.stdout and "checked" not in proc.stdout


def test_validate_names_a_bad_changed_when(clusters, collections_path, tmp_path):
    write_site(tmp_path, [phase("smoke", cluster="management", executor="command",
                                options={"cmd": "true", "changed_when": "sometimes"})], {})
    proc = run_site(tmp_path, collections_path, inventory(clusters), "-e", "plan_action=validate")
    assert proc.returncode != 0
    said = " ".join(proc.stdout.split())
    assert "site.yaml" in said and "options: changed_when: expected always, never, or a mapping of one or more of " \
        "rc, stdout_matches, stderr_matches, got 'sometimes'" in said, proc.stdout[-3000:]
    assert "Traceback" not in proc.stdout + proc.stderr


@pytest.mark.parametrize("plan_name, waiting_phase, executor", [
    ("wait", "stuck-wait", "wait"),
    ("apply-wait", "stuck-apply", "apply"),
], ids=["wait-phase", "apply-with-wait"])
def test_a_wait_names_the_objects_it_waits_for_and_why(site, clusters, collections_path, monkeypatch,
                                                       plan_name, waiting_phase, executor):
    monkeypatch.setenv("PHASEKIT_PROGRESS_AFTER", "3")
    monkeypatch.setenv("PHASEKIT_PROGRESS_EVERY", "3")
    proc = run_site(site, collections_path, inventory(clusters), "-e", f"plan_name={plan_name}",
                    "-e", "plan_record=false")
    assert proc.returncode != 0, proc.stdout[-4000:]
    progress = re.findall(rf"^\[{waiting_phase}\] {executor} on 1 cluster\(s\): 0 done \(0 changed, 0 failed\), "
                          rf"1 still running; slowest so far: ephemeral \(\d+\.\ds, running, waiting for (.*)\) "
                          rf"\(\d+\.\d\ds\)$", proc.stdout, re.M)
    assert progress, proc.stdout[-4000:]
    assert progress[-1] == f"Deployment {NAMESPACE}/stuck: Available: 0/2", progress
    said = " ".join(proc.stdout.split())
    assert f"timed out after {WAIT_SECONDS}s: 1 of " in said, proc.stdout[-4000:]
    assert f"Deployment {NAMESPACE}/stuck: InProgress: Available: 0/2" in said, proc.stdout[-4000:]


STUCK_CHART = {
    "Chart.yaml": "apiVersion: v2\nname: stuck\nversion: 0.1.0\n",
    "templates/web.yaml": """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-web
spec:
  replicas: 1
  selector:
    matchLabels: {app: stuck-web}
  template:
    metadata:
      labels: {app: stuck-web}
    spec:
      nodeSelector: {phasekit-test: nowhere}
      containers:
        - {name: web, image: registry.example/web:1}
""",
    "templates/settings.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-settings\n"
                               "data:\n  ready: \"yes\"\n",
}


@pytest.mark.parametrize("binary", ["helm", "helm3"], ids=["helm-4", "helm-3"])
def test_helm_wait_names_the_objects_of_the_release_it_waits_for(clusters, collections_path, tmp_path, monkeypatch,
                                                                 binary):
    namespace = f"phasekit-helm-waits-{uuid.uuid4().hex[:8]}"
    write_site(tmp_path, [phase("chart", cluster="ephemeral", executor="helm", source="../charts/stuck",
                                options={"name": "rel", "release_namespace": namespace, "create_namespace": True,
                                         "wait": True, "wait_timeout": f"{WAIT_SECONDS}s",
                                         "binary_path": shutil.which(binary)})],
               {f"charts/stuck/{name}": text for name, text in STUCK_CHART.items()})
    monkeypatch.setenv("PHASEKIT_PROGRESS_AFTER", "4")
    monkeypatch.setenv("PHASEKIT_PROGRESS_EVERY", "3")
    try:
        proc = run_site(tmp_path, collections_path, inventory(clusters), "-e", "plan_record=false")
    finally:
        clusters["ephemeral"].kubectl("delete", "namespace", namespace, "--ignore-not-found", "--wait=false")
    assert proc.returncode != 0, proc.stdout[-4000:]
    progress = re.findall(r"^\[chart\] helm on 1 cluster\(s\): .*slowest so far: ephemeral \(\d+\.\ds, running, "
                          r"waiting for (.*)\) \(\d+\.\d\ds\)$", proc.stdout, re.M)
    assert progress and progress[-1] == f"Deployment {namespace}/rel-web: Available: 0/1", proc.stdout[-4000:]
    said = " ".join(proc.stdout.split())
    assert f"now 1 of 2 objects not Current: Deployment {namespace}/rel-web: InProgress: Available: 0/1" in said, \
        proc.stdout[-4000:]
