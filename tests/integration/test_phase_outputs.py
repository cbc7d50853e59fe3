# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Outputs on the real local clusters, run as a user runs a plan (``ansible-playbook phasekit.kube.run``).

Phase ``mgmt`` applies a ConfigMap and a Secret on ``ephemeral`` and declares two outputs: the ConfigMap's
``.data.endpoint`` and the Secret's password (``secret: true``). Phase ``app`` on ``target`` renders a ``.j2``
manifest with ``phase_outputs.mgmt.endpoint`` and the password: the value lands in target's objects, the secret is
never in the run's output at -vvv nor in any ConfigMap (the run records included). A use of an output that no
phase declares, or of a later phase's, is refused before anything runs, naming the document, the phase and the
output.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import uuid
from pathlib import Path

import pytest
import yaml

from conftest import one_cluster_site

API = "phasekit.dev/v1alpha1"
REPO = Path(__file__).resolve().parents[2]
ENDPOINT = "db.mgmt.example:5432"
PASSWORD = "outputs-s3cr3t-pa55word"
KNOWN = "(known after the run)"

APP_TEMPLATE = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: app
  namespace: {namespace}
data:
  endpoint: "{{{{ phase_outputs.mgmt.endpoint }}}}"
  by_host: "{{{{ phase_outputs['mgmt']['ephemeral']['endpoint'] }}}}"
---
apiVersion: v1
kind: Secret
metadata:
  name: app-db
  namespace: {namespace}
stringData:
  password: "{{{{ phase_outputs.mgmt.password | b64decode }}}}"
"""


def mgmt_phase(namespace: str, **outputs) -> dict:
    declared = {"endpoint": {"kind": "ConfigMap", "name": "db", "namespace": namespace, "jsonpath": "{.data.endpoint}"},
                "password": {"kind": "Secret", "apiVersion": "v1", "name": "db", "namespace": namespace,
                             "jsonpath": "{.data.password}", "secret": True}}
    return {"apiVersion": API, "kind": "Phase", "metadata": {"name": "mgmt"},
            "spec": {"cluster": "ephemeral", "executor": "apply", "options": {"namespace": namespace},
                     "outputs": {**declared, **outputs},
                     "source": [
                         {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "db", "namespace": namespace},
                          "data": {"endpoint": ENDPOINT}},
                         {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db", "namespace": namespace},
                          "stringData": {"password": PASSWORD}}]}}


def app_phase(namespace: str) -> dict:
    return {"apiVersion": API, "kind": "Phase", "metadata": {"name": "app"},
            "spec": {"cluster": "target", "executor": "apply", "source": "app.yaml.j2",
                     "options": {"namespace": namespace}}}


def plan(*names) -> dict:
    return {"apiVersion": API, "kind": "PhasePlan", "metadata": {"name": "outputs"}, "spec": {"phases": list(names)}}


@pytest.fixture()
def site(clusters, tmp_path, collections_path):
    """Two cluster hosts (ephemeral, target), the same fresh namespace on both (objects and run records)."""
    namespace = f"pk-outputs-{uuid.uuid4().hex[:6]}"
    for name in ("ephemeral", "target"):
        clusters[name].kubectl("create", "namespace", namespace)
    root = tmp_path / "site"
    run, write = one_cluster_site(clusters["target"], root, namespace, collections_path)
    (root / "inventory.yml").write_text(yaml.safe_dump({"all": {
        "vars": {"ansible_connection": "local", "plan_record_namespace": namespace},
        "hosts": {name: {"kube_kubeconfig": str(clusters[name].admin_kubeconfig), "kube_context": clusters[name].context}
                  for name in ("ephemeral", "target")}}}))
    (root / "phases" / "app.yaml.j2").write_text(APP_TEMPLATE.format(namespace=namespace))
    run.namespace, run.write, run.root = namespace, write, root
    yield run
    for name in ("ephemeral", "target"):
        clusters[name].kubectl("delete", "namespace", namespace, "--wait=false", check=False)


def configmaps_of(cluster, namespace: str) -> str:
    return cluster.kubectl("get", "configmaps", "-n", namespace, "-o", "json").stdout


def test_an_output_of_ephemeral_lands_in_targets_objects_and_a_secret_one_is_never_shown(clusters, site):
    site.write([mgmt_phase(site.namespace), app_phase(site.namespace), plan("mgmt", "app")])
    rc, output = site("-vvv")
    assert rc == 0, output
    app = json.loads(clusters["target"].kubectl("get", "configmap", "app", "-n", site.namespace, "-o", "json").stdout)
    assert app["data"] == {"endpoint": ENDPOINT, "by_host": ENDPOINT}
    secret = json.loads(clusters["target"].kubectl("get", "secret", "app-db", "-n", site.namespace, "-o", "json").stdout)
    assert base64.b64decode(secret["data"]["password"]).decode() == PASSWORD
    encoded = base64.b64encode(PASSWORD.encode()).decode()
    assert PASSWORD not in output and encoded not in output
    assert ENDPOINT in output  # a non-secret output is shown with its phase's outcome
    for name in ("ephemeral", "target"):  # the run records (and any other ConfigMap) hold neither form
        stored = configmaps_of(clusters[name], site.namespace)
        assert PASSWORD not in stored and encoded not in stored


@pytest.mark.parametrize("use, expected", [
    ("phase_outputs.mgmt.nope", "phase app uses phase_outputs['mgmt']['nope']: phase mgmt declares no output 'nope'"),
    ("phase_outputs['dbx'].endpoint", "phase app uses phase_outputs['dbx']['endpoint'], but no phase 'dbx' is in "
                                      "the plan"),
], ids=["undeclared-output", "unknown-phase"])
def test_a_use_no_earlier_phase_declares_is_refused_before_anything_runs(clusters, site, use, expected):
    site.write([mgmt_phase(site.namespace), app_phase(site.namespace), plan("mgmt", "app")])
    template = site.root / "phases" / "app.yaml.j2"
    template.write_text(template.read_text().replace("phase_outputs.mgmt.endpoint", use))
    rc, output = site()
    assert rc != 0
    flat = " ".join(output.split())
    assert expected in flat, output
    assert "app.yaml.j2" in flat and "Phase app" in flat, output  # the document and the file
    assert "db" not in configmaps_names(clusters["ephemeral"], site.namespace)  # nothing ran


def test_an_output_of_a_later_phase_is_refused(clusters, site):
    site.write([mgmt_phase(site.namespace), app_phase(site.namespace), plan("app", "mgmt")])
    rc, output = site()
    assert rc != 0
    flat = " ".join(output.split())
    assert "an output of phase mgmt, which runs after it" in flat, output
    assert "app" not in configmaps_names(clusters["target"], site.namespace)


def configmaps_names(cluster, namespace: str) -> list[str]:
    listed = json.loads(configmaps_of(cluster, namespace))
    return [item["metadata"]["name"] for item in listed["items"]]


@pytest.mark.parametrize("action, expected", [
    (("-e", "plan_action=status"), r"app +target +in sync"),
    (("-e", "plan_action=status", "-e", "plan_fail_on_drift=true"), r"app +target +in sync"),
    (("-e", "plan_action=validate"), r"app +target +ok"),
    (("-e", "plan_action=render"), re.escape(f"endpoint: {KNOWN}")),
    (("-e", "plan_resume=true"), "resumed"),
    (("--check",), r"app +target +ok"),
], ids=["status", "drift-gate", "validate", "render", "resume", "check-mode"])
def test_the_other_actions_resolve_the_outputs_without_running_the_producer_or_extra_variables(
        clusters, site, action, expected):
    site.write([mgmt_phase(site.namespace), app_phase(site.namespace), plan("mgmt", "app")])
    rc, output = site()
    assert rc == 0, output
    rc, output = site("-vvv", *action)
    assert rc == 0, output
    assert re.search(expected, output), output
    encoded = base64.b64encode(PASSWORD.encode()).decode()
    assert PASSWORD not in output and encoded not in output
    if action != ("-e", "plan_action=render"):  # offline: render asks no cluster
        assert "known after the run" not in output, output  # the recorded (and re-read secret) values


def test_destroy_resolves_the_outputs_without_extra_variables(clusters, site):
    site.write([mgmt_phase(site.namespace), app_phase(site.namespace), plan("mgmt", "app")])
    assert site()[0] == 0
    rc, output = site("-e", "plan_action=destroy")
    assert rc == 0, output
    assert "app" not in configmaps_names(clusters["target"], site.namespace)
    assert "db" not in configmaps_names(clusters["ephemeral"], site.namespace)


def test_a_preview_on_a_clean_namespace_says_known_after_the_run(clusters, site):
    site.write([mgmt_phase(site.namespace), app_phase(site.namespace), plan("mgmt", "app")])
    rc, output = site("--check")
    assert rc == 0, output
    for field in ("data.endpoint", "data.by_host"):
        assert f"target: known after the run: ConfigMap {site.namespace}/app: {field}" in output, output
    assert "db" not in configmaps_names(clusters["ephemeral"], site.namespace)  # a preview writes nothing


DB_TEMPLATE = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: db
  namespace: {namespace}
data:
  endpoint: "db.{{{{ inventory_hostname }}}}.example"
"""
USE_TEMPLATE = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: app
  namespace: {namespace}
data:
  endpoint: "{{{{ phase_outputs['site/db'].endpoint }}}}"
"""


def test_outputs_inside_a_rollout_are_per_cluster_and_seen_by_the_next_phase_of_the_batch(clusters, site):
    (site.root / "phases" / "db.yaml.j2").write_text(DB_TEMPLATE.format(namespace=site.namespace))
    (site.root / "phases" / "use.yaml.j2").write_text(USE_TEMPLATE.format(namespace=site.namespace))
    (site.root / "inventory.yml").write_text((site.root / "inventory.yml").read_text().replace(
        "  vars:", "  children:\n    fleet:\n      hosts:\n        ephemeral: {}\n        target: {}\n  vars:", 1))
    endpoint = {"kind": "ConfigMap", "name": "db", "namespace": site.namespace, "jsonpath": "{.data.endpoint}"}
    site.write([{"apiVersion": API, "kind": "Phase", "metadata": {"name": "site"},
                 "spec": {"cluster": "fleet", "rollout": {"batches": [1]}, "phases": [
                     {"name": "db", "executor": "apply", "source": "db.yaml.j2", "outputs": {"endpoint": endpoint}},
                     {"name": "app", "executor": "apply", "source": "use.yaml.j2"}]}}])
    rc, output = site()
    assert rc == 0, output
    for name in ("ephemeral", "target"):
        app = json.loads(clusters[name].kubectl("get", "configmap", "app", "-n", site.namespace, "-o", "json").stdout)
        assert app["data"] == {"endpoint": f"db.{name}.example"}, output


TOKEN = "cmd-t0ken-s3cr3t-value"


def test_a_command_phases_json_output_feeds_a_later_phase_and_a_secret_one_is_masked(clusters, site):
    printed = json.dumps({"status": {"region": "eu-west", "token": TOKEN}})
    command = {"apiVersion": API, "kind": "Phase", "metadata": {"name": "mint"},
               # the command mints the token: the plan's own documents (shown at -vvv) do not hold it as such
               "spec": {"cluster": "ephemeral", "executor": "command",
                        "options": {"argv": ["sh", "-c", f"echo '{printed[::-1]}' | rev"]},
                        "outputs": {"region": {"from": "stdout", "jsonpath": "{.status.region}"},
                                    "token": {"from": "stdout", "jsonpath": "{.status.token}", "secret": True}}}}
    (site.root / "phases" / "use.yaml.j2").write_text(
        f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: minted, namespace: {site.namespace}}}\n"
        "data: {region: '{{ phase_outputs.mint.region }}', token: '{{ phase_outputs.mint.token }}'}\n")
    use = {"apiVersion": API, "kind": "Phase", "metadata": {"name": "use"},
           "spec": {"cluster": "target", "executor": "apply", "source": "use.yaml.j2"}}
    site.write([command, use, plan("mint", "use")])
    rc, output = site("-vvv")
    assert rc == 0, output
    minted = json.loads(clusters["target"].kubectl("get", "configmap", "minted", "-n", site.namespace, "-o",
                                                   "json").stdout)
    assert minted["data"] == {"region": "eu-west", "token": TOKEN}
    assert TOKEN not in output and "region=eu-west, token=***" in output, output
    record = configmaps_of(clusters["ephemeral"], site.namespace)  # ephemeral's run record: the region only
    assert "eu-west" in record and TOKEN not in record
    rc, output = site("-e", "plan_action=status")   # a command does not run in a dry run: its record answers
    assert rc == 0, output


def test_a_run_that_leaves_out_a_producer_that_never_ran_says_so_and_applies_no_placeholder(clusters, site):
    site.write([mgmt_phase(site.namespace), app_phase(site.namespace), plan("mgmt", "app")])
    rc, output = site("-e", "plan_only=app")
    assert rc != 0
    assert ("(outputs not read yet: mgmt on ephemeral; the phase has not succeeded there in this run nor in a "
            "recorded one: run it first, or include it in the selection)") in output, output
    assert "app" not in configmaps_names(clusters["target"], site.namespace)


API_KEY = "helm-api-k3y-s3cr3t-value"


@pytest.mark.parametrize("helm_mode", ["release", "apply"])
def test_a_helm_phases_release_values_feed_a_later_phase_and_a_secret_one_is_masked(clusters, site, helm_mode):
    shutil.copytree(REPO / "examples" / "site" / "charts" / "settings", site.root / "charts" / "settings")
    (site.root / "values").mkdir()
    (site.root / "values" / "settings.yaml.j2").write_text(f"apiKey: \"{{{{ '{API_KEY[::-1]}' | reverse }}}}\"\n")
    release = {"apiVersion": API, "kind": "Phase", "metadata": {"name": "settings"},
               "spec": {"cluster": "ephemeral", "executor": "helm", "source": "../charts/settings",
                        "options": {"release_namespace": site.namespace, "helm_mode": helm_mode,
                                    # the key is made when the values file renders: the plan's own documents
                                    # (shown at -vvv) do not hold it as such
                                    "values_files": ["../values/settings.yaml.j2"], "release_values": {"tier": "gold"}},
                        # cluster is the chart's default: the release's computed values, not only the given ones
                        "outputs": {"cluster": {"from": "values", "jsonpath": "{.cluster}"},
                                    "tier": {"from": "values", "jsonpath": "{.tier}"},
                                    "key": {"from": "values", "jsonpath": "{.apiKey}", "secret": True}}}}
    (site.root / "phases" / "use.yaml.j2").write_text(
        f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: released, namespace: {site.namespace}}}\n"
        "data: {cluster: '{{ phase_outputs.settings.cluster }}', tier: '{{ phase_outputs.settings.tier }}', "
        "key: '{{ phase_outputs.settings.key }}'}\n")
    use = {"apiVersion": API, "kind": "Phase", "metadata": {"name": "use"},
           "spec": {"cluster": "target", "executor": "apply", "source": "use.yaml.j2"}}
    site.write([release, use, plan("settings", "use")])
    rc, output = site("-vvv")
    assert rc == 0, output
    released = json.loads(clusters["target"].kubectl("get", "configmap", "released", "-n", site.namespace, "-o",
                                                     "json").stdout)
    assert released["data"] == {"cluster": "unknown", "tier": "gold", "key": API_KEY}
    assert API_KEY not in output and "cluster=unknown, key=***, tier=gold" in output, output
    record = configmaps_of(clusters["ephemeral"], site.namespace)  # ephemeral's run record: the non-secret ones only
    assert r'\"outputs\":{\"cluster\":\"unknown\",\"tier\":\"gold\"}' in record and API_KEY not in record, record
    rc, output = site("-e", "plan_action=status")   # the record and the release answer: no extra variable
    assert rc == 0, output
