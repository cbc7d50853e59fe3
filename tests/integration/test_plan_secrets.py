# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""No plan action prints Secret data or command secrets from phase documents, at any verbosity."""

from __future__ import annotations

import uuid

import pytest
import yaml

API = "phasekit.dev/v1alpha1"
SECRET_VALUE = f"s3cret-{uuid.uuid4().hex}"
NAMESPACE = f"phasekit-secrets-{uuid.uuid4().hex[:6]}"


def documents():
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "app", "namespace": NAMESPACE},
              "stringData": {"password": SECRET_VALUE}}
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
    return [
        {"apiVersion": API, "kind": "Phase", "metadata": {"name": "secret"},
         "spec": {"cluster": "target", "executor": "apply", "source": [namespace, secret]}},
        {"apiVersion": API, "kind": "Phase", "metadata": {"name": "use"},
         "spec": {"cluster": "target", "executor": "command",
                  "options": {"cmd": 'test "$APP_TOKEN" = "$EXPECTED"', "shell": True,
                              "env": {"APP_TOKEN": SECRET_VALUE, "EXPECTED": SECRET_VALUE},
                              "stdin": SECRET_VALUE}}},
    ]


@pytest.fixture(scope="module", autouse=True)
def namespace_removed_afterwards(clusters):
    yield
    clusters["target"].kubectl("delete", "namespace", NAMESPACE, "--wait=false", "--ignore-not-found")


@pytest.mark.parametrize("action", ["list", "tree", "render", "validate", "run", "status"])
def test_no_plan_action_shows_secrets_from_phase_documents(clusters, run_playbook, tmp_path, action):
    inventory = {"all": {"vars": {"ansible_connection": "local"}, "hosts": {
        "target": {"kube_kubeconfig": str(clusters["target"].admin_kubeconfig), "kube_context": "target"}}}}
    (tmp_path / "phases").mkdir()
    (tmp_path / "phases" / "site.yaml").write_text(yaml.safe_dump_all(documents()))
    playbook = tmp_path / "site.yml"
    playbook.write_text(yaml.safe_dump([{"hosts": "all", "gather_facts": False,
                                         "roles": [{"role": "phasekit.kube.plan", "plan_src": ["phases"],
                                                    "plan_action": action}]}]))
    result = run_playbook(playbook, inventory, "--diff", verbosity=4)
    assert result.rc == 0, result
    assert SECRET_VALUE not in result.output
    if action == "run":
        assert clusters["target"].get_json("secret", "app", "-n", NAMESPACE)["data"]["password"]
