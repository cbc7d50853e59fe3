# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Run records on a real cluster: plan_resume runs again what changed (a command's script, a chart's template at the
same chart version) and skips what did not; digests are keyed with a Secret a ``view`` user cannot read; a user who
may write ConfigMaps but not Secrets records without digests and is told once; two plans whose names slug alike keep
records of their own; a record deleted between phases is made again; history names a hand-edited entry."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import yaml
from conftest import summary_text

API = "phasekit.dev/v1alpha1"
CLUSTER = "target"
SECRET = "vault-value-3b1f"     # a value the chart gets from the plan, never in a record


def configmap(name: str, namespace: str, value: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace},
            "data": {"v": value}}


def script_text(namespace: str, value: str) -> str:
    text = yaml.safe_dump(configmap("scripted", namespace, value))
    return f"#!/bin/sh\nset -e\nkubectl apply --server-side -f - <<'EOF'\n{text}EOF\n"


def chart_template(value: str) -> str:
    return ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: charted\n  namespace: {{ .Release.Namespace }}\n"
            f"data:\n  v: \"{value}\"\n  password: {{{{ .Values.password | quote }}}}\n")


@pytest.fixture()
def site(clusters, tmp_path):
    """A site over the target cluster: plan ``records`` (static apply, a command running a script, a local chart),
    plans ``col.a`` and ``Col_A`` (one apply each), plan ``deleting`` (a command deletes the plan's record)."""
    target = clusters[CLUSTER]
    namespace = f"phasekit-records-{uuid.uuid4().hex[:6]}"
    target.kubectl("create", "namespace", namespace)
    root = tmp_path / "site"
    (root / "phases").mkdir(parents=True)
    (root / "scripts").mkdir()
    (root / "scripts" / "step.sh").write_text(script_text(namespace, "1"))
    chart = root / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: demo\nversion: 1.0.0\n")
    (chart / "templates" / "cm.yaml").write_text(chart_template("1"))
    (root / "values.yaml.j2").write_text("password: \"{{ vault_password }}\"\n")

    def phase(name, executor, **spec):
        return {"apiVersion": API, "kind": "Phase", "metadata": {"name": name},
                "spec": {"cluster": CLUSTER, "executor": executor, **spec}}

    def plan(name, *phases):
        return {"apiVersion": API, "kind": "PhasePlan", "metadata": {"name": name}, "spec": {"phases": list(phases)}}

    documents = [
        phase("static", "apply", options={"namespace": namespace}, source=[configmap("static", namespace, "1")]),
        phase("script", "command", options={"argv": ["sh", "scripts/step.sh"]}),
        phase("chart", "helm", source="../chart",
              options={"helm_mode": "apply", "name": "demo", "release_namespace": namespace,
                       "values_files": [str(root / "values.yaml.j2")]}),
        phase("deleter", "command", options={"argv": ["kubectl", "delete", "configmap", "-n", namespace,
                                                      "phasekit-run-deleting.target"]}),
        plan("records", "static", "script", "chart"),
        plan("col.a", "static"),
        plan("Col_A", "static"),
        plan("deleting", "static", "deleter", "script"),
    ]
    (root / "phases" / "site.yaml").write_text(yaml.safe_dump_all(documents))
    write_inventory(root, target, namespace)
    yield root, target, namespace
    target.kubectl("delete", "namespace", namespace, "--wait=false")


def write_inventory(root: Path, cluster, namespace: str, limited: bool = False) -> None:
    host = {"kube_kubeconfig": str(cluster.limited_kubeconfig if limited else cluster.admin_kubeconfig),
            "kube_context": cluster.limited_context if limited else cluster.context}
    (root / "inventory.yml").write_text(yaml.safe_dump({"all": {
        "vars": {"ansible_connection": "local", "plan_record_namespace": namespace, "vault_password": SECRET},
        "hosts": {CLUSTER: host}}}))


def grant_configmaps(cluster, namespace: str, *verbs: str) -> None:
    """The limited user may do ``verbs`` on the namespace's ConfigMaps, and nothing on its Secrets (as ``view`` gives,
    spelled out: the aggregated ClusterRole is filled by a controller the test does not rely on)."""
    rbac = [{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
             "metadata": {"name": "records-configmaps", "namespace": namespace},
             "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": list(verbs)}]},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
             "metadata": {"name": "records-configmaps", "namespace": namespace},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "records-configmaps"},
             "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "limited-user"}]}]
    cluster.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(rbac))


def run(root: Path, collections_path: Path, plan: str, *extra: str) -> tuple[int, str]:
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(collections_path), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_PYTHON_INTERPRETER": sys.executable}
    env.pop("KUBECONFIG", None)
    done = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "phasekit.kube.run", "-i",
                           "inventory.yml", "-e", f"plan_name={plan}", *extra], cwd=root, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    output = done.stdout + done.stderr
    assert "Traceback" not in output and "not supported between" not in output, output
    assert SECRET not in output, output
    return done.returncode, output


def words(output: str) -> str:
    """The output with Ansible's wrapping of warnings undone."""
    return " ".join(output.replace("[WARNING]:", " ").split())


def results(output: str, phases=("static", "script", "chart", "deleter")) -> dict:
    """phase -> its result on the target cluster, from the summary table."""
    found = {}
    for line in summary_text(output).splitlines():
        parts = line.strip().strip('",').split()
        if len(parts) >= 3 and parts[0] in phases and parts[1] == CLUSTER:
            found[parts[0]] = " ".join(parts[2:4]) if parts[2] == "skipped" else parts[2]
    return found


def record(cluster, namespace: str, name: str, limited: bool = False) -> dict:
    """A run record as a ``view`` user reads it: data key -> entries."""
    done = cluster.kubectl("get", "configmap", name, "-n", namespace, "-o", "json", limited=limited)
    return {key: json.loads(text) for key, text in json.loads(done.stdout)["data"].items()}


def test_resume_runs_again_what_changed_and_records_hold_only_keyed_digests(site, collections_path):
    root, target, namespace = site
    code, output = run(root, collections_path, "records")
    assert code == 0, output
    assert results(output) == {"static": "changed", "script": "changed", "chart": "changed"}, output

    # what a user who reads ConfigMaps, not Secrets, reads: keyed digests only, and not the key
    grant_configmaps(target, namespace, "get", "list")
    kept = record(target, namespace, "phasekit-run-records.target", limited=True)
    digests = [entry["digest"] for entries in kept.values() for entry in entries]
    assert len(digests) == 3 and all(digest.startswith("hmac-sha256:") for digest in digests), kept
    assert SECRET not in json.dumps(kept)
    denied = target.kubectl("get", "secret", "phasekit-run-key", "-n", namespace, limited=True, check=False)
    assert denied.returncode != 0 and "forbidden" in denied.stderr.lower(), denied.stderr
    secret = target.get_json("secret", "phasekit-run-key", "-n", namespace)
    assert secret["immutable"] is True and list(secret["data"]) == ["hmac-sha256"]

    code, output = run(root, collections_path, "records", "-e", "plan_resume=true")
    assert code == 0, output
    assert set(results(output).values()) == {"skipped (resumed)"}, output

    # the chart's template changes, its version does not: the chart runs again, the phases before it do not
    (root / "chart" / "templates" / "cm.yaml").write_text(chart_template("2"))
    code, output = run(root, collections_path, "records", "-e", "plan_resume=true")
    assert code == 0, output
    assert results(output) == {"static": "skipped (resumed)", "script": "skipped (resumed)", "chart": "changed"}, output
    assert target.get_json("configmap", "charted", "-n", namespace)["data"]["v"] == "2"

    # the script the command runs changes: it runs again (and the chart after it)
    (root / "scripts" / "step.sh").write_text(script_text(namespace, "2"))
    code, output = run(root, collections_path, "records", "-e", "plan_resume=true")
    assert code == 0, output
    assert results(output)["static"] == "skipped (resumed)" and results(output)["script"] == "changed", output
    assert target.get_json("configmap", "scripted", "-n", namespace)["data"]["v"] == "2"


def test_records_of_plans_apart_a_deleted_record_made_again_and_a_hand_edited_entry(site, collections_path):
    root, target, namespace = site
    # a command deletes the plan's record between two phases: the next phase's entry makes it again, with the
    # entries of this run before it
    code, output = run(root, collections_path, "deleting")
    assert code == 0, output
    assert "not written" not in output, output
    kept = record(target, namespace, "phasekit-run-deleting.target")
    assert sorted(kept) == ["deleter", "script", "static"], kept

    # col.a and Col_A slug alike: each has its record, and neither resumes from the other's run
    code, output = run(root, collections_path, "col.a")
    assert code == 0 and results(output) == {"static": "ok"}, output
    code, output = run(root, collections_path, "Col_A", "-e", "plan_resume=true")
    assert code == 0 and results(output) == {"static": "ok"}, output
    names = target.kubectl("get", "configmaps", "-n", namespace, "-o", "name").stdout.split()
    assert sorted(name for name in names if "phasekit-run-col" in name) == [
        "configmap/phasekit-run-col-a--392f9a7211.target", "configmap/phasekit-run-col-a--56e8b65676.target"], names

    # history on an entry edited by hand: named with cluster, namespace, ConfigMap, key and entry; the rest shown
    entries = kept["static"]
    entries[0]["started"] = 5
    target.kubectl("patch", "configmap", "phasekit-run-deleting.target", "-n", namespace, "--type", "merge",
                   "-p", json.dumps({"data": {"static": json.dumps(entries)}}))
    code, output = run(root, collections_path, "deleting", "-e", "plan_action=history")
    assert code == 0, output
    assert (f"cluster target: run record ConfigMap {namespace}/phasekit-run-deleting.target, key static: entry 1: "
            "field started: expected a UTC time such as 2026-11-24T14:45:01Z, got a number; left out") \
        in words(output), output
    assert "deleter changed, script changed" in output, output


def test_a_user_without_access_to_secrets_records_without_digests_and_is_told_once(site, collections_path):
    root, target, namespace = site
    # the limited user: ConfigMaps (not Secrets) in this namespace
    grant_configmaps(target, namespace, "get", "list", "create", "patch", "update")
    write_inventory(root, target, namespace, limited=True)
    code, output = run(root, collections_path, "col.a")
    assert code == 0 and results(output) == {"static": "changed"}, output
    warning = f"Secret {namespace}/phasekit-run-key cannot be read or made: 403"
    assert words(output).count(warning) == 1 and "plan_resume runs them again" in words(output), output
    kept = record(target, namespace, "phasekit-run-col-a--392f9a7211.target")
    assert kept["static"][0]["digest"] is None
    code, output = run(root, collections_path, "col.a", "-e", "plan_resume=true")
    assert code == 0 and results(output) == {"static": "ok"}, output   # run again: nothing to resume from
