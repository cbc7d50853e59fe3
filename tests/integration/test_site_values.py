# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Per-cluster values and retries on the two local clusters: one .j2 bundle rendering to different objects per
cluster host, option strings templated per host, a vault-encrypted value that reaches the cluster but never the
output, render per cluster, an undefined variable named with its file and line, a phase that fails twice
then succeeds with retries: 2, and the drift gate."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import yaml

API = "phasekit.dev/v1alpha1"
PASSWORD = "vaulted-" + uuid.uuid4().hex[:12]
VAULT_PASS = "phasekit-test-vault-pass"
TENANTS = {"ephemeral": "alpha", "target": "beta"}
TEMPLATE = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ tenant }}-settings
data:
  cluster: "{{ inventory_hostname }}"
  replicas: "{{ replicas * 2 }}"
  dsn: "postgres://app:{{ db_password }}@db.{{ tenant }}"
"""
# fails on its first two attempts on each cluster, then succeeds (a counter file per cluster host)
FLAKY = 'n=$(cat "$COUNTER.$PHASEKIT_HOST" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$COUNTER.$PHASEKIT_HOST"; ' \
        '[ "$n" -ge 3 ] || { echo "attempt $n: not yet" >&2; exit 1; }'


def phase(name, **spec):
    return {"apiVersion": API, "kind": "Phase", "metadata": {"name": name}, "spec": spec}


def encrypted(tmp_path: Path, value: str) -> str:
    """The !vault block ansible-vault encrypt_string writes for ``value``."""
    done = subprocess.run([str(Path(sys.executable).parent / "ansible-vault"), "encrypt_string", "--vault-password-file",
                           str(tmp_path / "vault-pass"), value, "--name", "db_password"],
                          capture_output=True, text=True, check=True)
    return done.stdout


@pytest.fixture()
def values_site(clusters, tmp_path, run_playbook):
    namespace = f"pk-values-{uuid.uuid4().hex[:6]}"
    root = tmp_path / "site"
    (root / "phases").mkdir(parents=True)
    (root / "bundles" / "settings").mkdir(parents=True)
    (root / "bundles" / "settings" / "settings.yaml.j2").write_text(TEMPLATE)
    (tmp_path / "vault-pass").write_text(VAULT_PASS)
    vaulted = encrypted(tmp_path, PASSWORD)
    hosts = "\n".join(f"    {name}:\n      kube_kubeconfig: {cluster.admin_kubeconfig}\n      kube_context: {name}\n"
                      f"      tenant: {TENANTS[name]}\n" for name, cluster in clusters.items())
    group_vars = root / "group_vars"
    group_vars.mkdir()
    (group_vars / "all.yml").write_text(f"ansible_connection: local\nreplicas: 2\nsettings_namespace: {namespace}\n"
                                        + vaulted)
    (root / "inventory.yml").write_text(f"all:\n  hosts:\n{hosts}  children:\n    management:\n      hosts:\n"
                                        + "".join(f"        {name}: {{}}\n" for name in clusters))

    def run(phases: list, *args):
        (root / "phases" / "site.yaml").write_text(yaml.safe_dump_all(phases))
        return run_playbook("- ansible.builtin.import_playbook: phasekit.kube.run\n", root / "inventory.yml",
                            "--vault-password-file", str(tmp_path / "vault-pass"), *args)

    for cluster in clusters.values():
        cluster.kubectl("create", "namespace", namespace)
    run.namespace, run.root, run.counter = namespace, root, tmp_path / "counter"
    yield run
    for cluster in clusters.values():
        cluster.kubectl("delete", "namespace", namespace, "--ignore-not-found", "--wait=false")


def settings_phase(**options):
    return phase("settings", cluster="management", executor="apply", source="../bundles/settings",
                 options={"namespace": "{{ settings_namespace }}", **options})


def test_one_template_renders_per_cluster_and_the_vaulted_value_stays_hidden(values_site, clusters):
    result = values_site([settings_phase()], "--diff", "-vvv")
    assert result.rc == 0, result
    for name, cluster in clusters.items():
        tenant = TENANTS[name]
        data = cluster.get_json("configmap", f"{tenant}-settings", "-n", values_site.namespace)["data"]
        assert data == {"cluster": name, "replicas": "4", "dsn": f"postgres://app:{PASSWORD}@db.{tenant}"}
        other = TENANTS["target" if name == "ephemeral" else "ephemeral"]
        assert cluster.kubectl("get", "configmap", f"{other}-settings", "-n", values_site.namespace,
                               check=False).returncode != 0           # each cluster got its own object only
    assert "postgres://app:***@db.alpha" in result.stdout                # the diff, scrubbed
    assert PASSWORD not in result.output

    again = values_site([settings_phase()], "--diff")
    assert again.rc == 0, again
    assert "[settings] apply on 2 cluster(s): 2 ok" in again.stdout      # rendered the same: nothing to change

    shown = values_site([settings_phase()], "-e", "plan_action=render")
    assert shown.rc == 0, shown
    for name, tenant in TENANTS.items():
        assert f"{tenant}-settings" in shown.stdout and f"# phase settings on cluster {name}\n" in shown.stdout
    assert "postgres://app:***@db.beta" in shown.stdout
    assert PASSWORD not in shown.output


def test_an_undefined_variable_fails_the_phase_naming_file_line_and_variable(values_site):
    (values_site.root / "bundles" / "settings" / "settings.yaml.j2").write_text(
        TEMPLATE + "  region: \"{{ region }}\"\n")
    result = values_site([settings_phase()])
    assert result.rc != 0
    assert "settings.yaml.j2 line 9: 'region' is undefined" in result.stdout, result
    assert "Traceback" not in result.output and PASSWORD not in result.output


def test_a_phase_that_fails_twice_succeeds_on_its_third_attempt(values_site):
    flaky = phase("flaky", cluster="management", executor="command", retries=2, delay=0.1,
                  options={"shell": True, "cmd": FLAKY, "env": {"COUNTER": str(values_site.counter)}})
    result = values_site([flaky, settings_phase()])
    assert result.rc == 0, result
    assert "[flaky] command on 2 cluster(s): 2 changed" in result.stdout
    for name in TENANTS:
        assert f"  {name}: changed, succeeded on attempt 3 of 3" in result.stdout
        assert Path(f"{values_site.counter}.{name}").read_text().strip() == "3"

    once = phase("flaky", cluster="management", executor="command", retries=1, delay=0.1,
                 options={"shell": True, "cmd": FLAKY, "env": {"COUNTER": str(values_site.counter) + "-b"}})
    failed = values_site([once, settings_phase()])
    assert failed.rc != 0
    assert "attempt 2 of 2: command" in failed.stdout and "attempt 2: not yet" in failed.stdout, failed
    assert "[settings]" not in failed.stdout          # the failed phase stopped the plan


def test_the_drift_gate_fails_status_and_check_runs_when_a_cluster_differs(values_site, clusters):
    assert values_site([settings_phase()]).rc == 0
    gate = ("-e", "plan_fail_on_drift=true")
    in_sync = values_site([settings_phase()], "-e", "plan_action=status", *gate)
    assert in_sync.rc == 0, in_sync
    assert "in sync" in in_sync.stdout and "differ from the clusters" not in in_sync.stdout

    clusters["target"].kubectl("patch", "configmap", "beta-settings", "-n", values_site.namespace, "--type=merge",
                               "-p", '{"data": {"replicas": "99"}}')
    drifted = values_site([settings_phase()], "-e", "plan_action=status", *gate)
    assert drifted.rc != 0
    assert f"settings on target: differs: ConfigMap {values_site.namespace}/beta-settings: data.replicas" \
        in drifted.stdout, drifted
    assert "settings on ephemeral" not in drifted.stdout
    assert "differ from the clusters" in drifted.stdout and PASSWORD not in drifted.output

    assert 'data.replicas (changed by "kubectl-patch")' in drifted.stdout      # who changed it: the field's new manager

    # check mode predicts the run: its apply would meet the other manager's field (a conflict) and fail
    checked = values_site([settings_phase()], "--check", *gate)
    assert checked.rc != 0, checked
    assert "settings on target: could not be checked: " in checked.stdout and ".data.replicas" in checked.stdout
    assert clusters["target"].get_json("configmap", "beta-settings", "-n", values_site.namespace)["data"][
        "replicas"] == "99"                                   # check mode changed nothing

    without_gate = values_site([settings_phase()], "-e", "plan_action=status")
    assert without_gate.rc == 0 and "differs" in without_gate.stdout, without_gate


def test_a_phase_timeout_ends_a_command_and_no_retry_starts_after_it(values_site):
    slow = phase("slow", cluster="management", executor="command", retries=3, delay=1, timeout=2,
                 options={"argv": ["sleep", "30"]})
    # its own run record (so its own lock): another file's run on the same cluster must not hold the lock while
    # this phase's 2 seconds go by
    result = values_site([slow, settings_phase()], "-e", f"plan_record_namespace={values_site.namespace}")
    assert result.rc != 0
    assert "did not finish within 2s" in result.stdout, result                       # ended at the phase's limit
    assert "attempt 1 of 4: " in result.stdout                                        # the only attempt
    assert "no time left for attempt 2: the phase's timeout is 2s" in result.stdout, result
    assert "[settings]" not in result.stdout


def test_the_apply_action_renders_a_template_and_hides_the_vaulted_value(values_site, clusters, run_playbook, tmp_path):
    playbook = f"""
- hosts: target
  gather_facts: false
  tasks:
    - name: A .j2 manifest with the task's variables
      phasekit.kube.apply:
        src: {values_site.root}/bundles/settings/settings.yaml.j2
        namespace: "{{{{ settings_namespace }}}}"
"""
    result = run_playbook(playbook, values_site.root / "inventory.yml", "--vault-password-file",
                          str(tmp_path / "vault-pass"), "--diff", "-vvv")
    assert result.rc == 0, result
    data = clusters["target"].get_json("configmap", "beta-settings", "-n", values_site.namespace)["data"]
    assert data["dsn"] == f"postgres://app:{PASSWORD}@db.beta"
    assert "postgres://app:***@db.beta" in result.stdout
    assert PASSWORD not in result.output
