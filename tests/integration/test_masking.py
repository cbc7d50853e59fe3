# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Every credential the collection hands out, and every vault value a template used, is masked: a failing
``set -x`` command that prints its kubeconfig's token, its parent's client key and multi-line and non-ASCII vault
values; a ``--diff`` of a ConfigMap holding those values; a helm phase's ``--diff``. Neither the playbook output
(at -v and -vvv) nor the cluster's run record (a ConfigMap that ``view`` users read) holds any of them."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import yaml

from test_apply import run_tasks, task
from test_helm import revision, write_chart

API = "phasekit.dev/v1alpha1"
VAULT_PASS = "phasekit-test-vault-pass"
SUFFIX = uuid.uuid4().hex[:8]
# long enough that YAML folds it in a diff; non-ASCII so that YAML escapes it
MULTI_LINE = (f"first line of the multi-line secret {SUFFIX} with some words to fold\n"
              f"second line {SUFFIX} of the vaulted value, also quite long to fold it\nthird {SUFFIX}")
NON_ASCII = f"Grüße-aus-München-{SUFFIX}"
NAMESPACE = f"phasekit-mask-{SUFFIX}"  # the objects and the run record
CHILD, PARENT = f"mask-{SUFFIX}", f"mask-parent-{SUFFIX}"

# The command (a script file: its command line stays short in the record's 300 characters) traces itself, reads
# its own kubeconfig's client key (as written and as PEM) and its parent's token, prints them with the vault
# values, and fails; what it saw is kept aside to prove the secrets reached it.
SCRIPT = """\
set -x
KEY=$(sed -n 's/^ *client-key-data: //p' "$KUBECONFIG")
cat "$PARENT_KUBECONFIG" >&2
TOKEN=$(sed -n 's/^ *token: //p' "$PARENT_KUBECONFIG")
PEM=$(echo "$KEY" | base64 -d | sed -n 2p)
echo "token $TOKEN umlaut $DB_UMLAUT pem $PEM key $KEY" >&2
set +x
printf '%s\\n' "$TOKEN" "$KEY" "$PEM" "$DB_UMLAUT" "$DB_MULTI" > "$SEEN"
printf '%s\\n' "$DB_MULTI" >&2
exit 3
"""
SETTINGS = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: masked-settings
data:
  multi: |-
    {{ db_multi | indent(4) }}
  umlaut: "{{ db_umlaut }}"
  plain: visible-setting
"""


def vaulted(tmp_path: Path, name: str, value: str) -> str:
    """``name: !vault |`` as ansible-vault encrypt_string writes it."""
    done = subprocess.run([str(Path(sys.executable).parent / "ansible-vault"), "encrypt_string",
                           "--vault-password-file", str(tmp_path / "vault-pass"), "--stdin-name", name],
                          input=value, capture_output=True, text=True, check=True)
    return done.stdout


def phase(name, **spec):
    return {"apiVersion": API, "kind": "Phase", "metadata": {"name": name}, "spec": spec}


def secret_material(clusters) -> dict:
    """What the phase was handed: its own client key and certificate, its parent's token; the vault values in the
    forms a diff or a failure message used to show them."""
    limited = yaml.safe_load(clusters["ephemeral"].limited_kubeconfig.read_text())
    admin = yaml.safe_load(clusters["target"].admin_kubeconfig.read_text())["users"][0]["user"]
    key = Path(admin["client-key"]).read_bytes()
    cert = Path(admin["client-certificate"]).read_bytes()
    material = {"token": limited["users"][0]["user"]["token"], "client-key-data": base64.b64encode(key).decode(),
                "client-certificate-data": base64.b64encode(cert).decode(), "umlaut": NON_ASCII,
                "umlaut-yaml-escaped": "Gr\\xFC\\xDFe", "umlaut-json-escaped": "Gr\\u00fc\\u00dfe",
                "multi-line": MULTI_LINE, "multi-line-json": json.dumps(MULTI_LINE)[1:-1]}
    for number, line in enumerate(key.decode().splitlines()[1:-1]):
        material[f"client-key PEM line {number + 1}"] = line
    for number, line in enumerate(MULTI_LINE.splitlines()):
        material[f"multi-line line {number + 1}"] = line
        material[f"multi-line line {number + 1} start"] = line[:24]
    return material


def leaked(material: dict, text: str) -> list[str]:
    return [name for name, value in material.items() if value in text]


@pytest.fixture(scope="module")
def masked_site(clusters, tmp_path_factory):
    """An inventory of two hosts: the child on target with the admin's client key, its parent on ephemeral with
    the limited user's token; vault-encrypted multi-line and non-ASCII values; a namespace for the objects and the
    child's run record."""
    root = tmp_path_factory.mktemp("masked")
    (root / "vault-pass").write_text(VAULT_PASS)
    (root / "bundles" / "settings").mkdir(parents=True)
    (root / "bundles" / "settings" / "settings.yaml.j2").write_text(SETTINGS)
    (root / "phases").mkdir()
    (root / "group_vars").mkdir()
    (root / "group_vars" / "all.yml").write_text("ansible_connection: local\n" + vaulted(root, "db_multi", MULTI_LINE)
                                                 + vaulted(root, "db_umlaut", NON_ASCII))
    target, ephemeral = clusters["target"], clusters["ephemeral"]
    (root / "inventory.yml").write_text(yaml.safe_dump({"all": {"hosts": {
        CHILD: {"kube_kubeconfig": str(target.admin_kubeconfig), "kube_context": target.context,
                "kube_parent": PARENT},
        PARENT: {"kube_kubeconfig": str(ephemeral.limited_kubeconfig), "kube_context": ephemeral.limited_context}}}}))
    target.kubectl("create", "namespace", NAMESPACE)
    yield root
    target.kubectl("delete", "namespace", NAMESPACE, "--ignore-not-found", "--wait=false")


@pytest.mark.parametrize("verbosity", [1, 3], ids=["v", "vvv"])
def test_a_failing_command_and_a_diff_show_no_credential_nor_vault_value(masked_site, clusters, run_playbook,
                                                                         tmp_path, verbosity):
    seen = tmp_path / "seen"
    phases = [
        phase("settings", cluster=CHILD, executor="apply", source="../bundles/settings",
              options={"namespace": NAMESPACE}),
        phase("leaky", cluster=CHILD, executor="command",
              options={"cmd": 'sh "$SCRIPT"', "shell": True, "env_files": {"SCRIPT": SCRIPT},
                       "kubeconfigs": {"PARENT_KUBECONFIG": "{{ kube_parent }}"},
                       "env": {"DB_MULTI": "{{ db_multi }}", "DB_UMLAUT": "{{ db_umlaut }}", "SEEN": str(seen)}}),
    ]
    (masked_site / "phases" / "site.yaml").write_text(yaml.safe_dump_all(phases))
    target = clusters["target"]
    target.kubectl("delete", "configmap", "masked-settings", "-n", NAMESPACE, "--ignore-not-found")
    result = run_playbook("- ansible.builtin.import_playbook: phasekit.kube.run\n", masked_site / "inventory.yml",
                          "--vault-password-file", str(masked_site / "vault-pass"), "--diff",
                          "-e", f"plan_record_namespace={NAMESPACE}", verbosity=verbosity)
    material = secret_material(clusters)

    assert result.rc != 0, result
    assert "exited with rc 3" in result.output, result
    assert "visible-setting" in result.output, result            # the diff was shown
    for name in ("token", "client-key-data", "umlaut", "multi-line line 1", "client-key PEM line 1"):
        assert material[name] in seen.read_text(), name   # the command did get them
    data = target.get_json("configmap", "masked-settings", "-n", NAMESPACE)["data"]
    assert data["multi"] == MULTI_LINE and data["umlaut"] == NON_ASCII   # the cluster got the real values
    assert leaked(material, result.output) == [], result

    record = target.get_json("configmap", f"phasekit-run-all.{CHILD}", "-n", NAMESPACE)
    entry = json.loads(record["data"]["leaky"])[0]
    assert entry["result"] == "failed" and "exited with rc 3" in entry["msg"], entry
    assert leaked(material, json.dumps(record, ensure_ascii=False)) == []
    assert leaked(material, json.dumps(record)) == []


HELM_SECRET = f"postgres://app:pw-{SUFFIX}@db"


def test_a_helm_diff_shows_no_value_and_a_template_failure_changes_nothing(clusters, run_playbook, tmp_path):
    target = clusters["target"]
    namespace = f"phasekit-mask-helm-{SUFFIX}"
    chart = write_chart(tmp_path / "charts", "1.0.0")
    site = tmp_path / "site"
    (site / "phases").mkdir(parents=True)
    options = {"chart_ref": str(chart), "release_namespace": namespace, "create_namespace": True,
               "release_values": {"greeting": HELM_SECRET, "password": f"pw-{SUFFIX}"}}
    (site / "phases" / "hello.yaml").write_text(yaml.safe_dump(phase("hello", cluster="target", executor="helm",
                                                                     options=options)))
    (site / "inventory.yml").write_text(yaml.safe_dump({"all": {"vars": {"ansible_connection": "local"}, "hosts": {
        "target": {"kube_kubeconfig": str(target.admin_kubeconfig), "kube_context": target.context}}}}))
    broken = {"name": "broken", "chart_ref": str(chart), "release_namespace": namespace, "create_namespace": True,
              "release_values": {"greeting": HELM_SECRET}}  # no password: the chart's template refuses it
    try:
        result = run_playbook("- ansible.builtin.import_playbook: phasekit.kube.run\n", site / "inventory.yml",
                              "--diff", verbosity=1)
        assert result.rc == 0, result
        assert target.get_json("configmap", "hello-greeting", "-n", namespace)["data"]["greeting"] == HELM_SECRET
        assert "hello-greeting" in result.output and "greeting: ***" in result.output, result  # the diff
        assert HELM_SECRET not in result.output and f"pw-{SUFFIX}" not in result.output

        failed, rest = run_tasks(run_playbook, tmp_path, [task("helm", target, **broken)], "--diff", verbosity=1)
        assert failed["failed"] and "password is required" in failed["msg"], failed
        assert failed["changed"] is False and failed["action"] == "failed", failed
        assert revision(target, "broken", namespace) is None
        assert HELM_SECRET not in rest.output
    finally:
        for release in ("hello", "broken"):
            subprocess.run(["helm", "--kubeconfig", str(target.admin_kubeconfig), "uninstall", release, "-n",
                            namespace], capture_output=True, check=False)
        target.kubectl("delete", "namespace", namespace, "--ignore-not-found", "--wait=false")
