# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""kubernetes.core.helm's contract, tested from its own documentation and integration tests, with helm 3 and 4.

The first test is kubernetes.core's ``tests/integration/targets/helm/tasks/tests_chart.yml`` (6.5.0) on its
local test charts: the same tasks and the same asserts, with only the module name changed to
``phasekit.kube.helm``. The others go through every option and return key kubernetes.core.helm documents,
including failures (stderr, command, changed: false), one release per test, on the real local cluster.
"""

from __future__ import annotations

import functools
import subprocess
import uuid
from pathlib import Path

import pytest
import yaml

from test_apply import CLUSTER
from test_helm import QuietHandler, serve

pytestmark = [pytest.mark.k8s_matrix]

BINARIES = ["helm-v3.22.0", "helm-v4.3.1"]
SECRET = "s3cr3t-" + uuid.uuid4().hex[:10]   # a release value that must never be shown

# kubernetes.core's files/test-chart and files/test-chart-v2
TEST_CHART = {
    "Chart.yaml": "apiVersion: v2\nname: test-chart\ndescription: A chart used in molecule tests\n"
                  "type: application\nversion: 0.1.0\nappVersion: \"default\"\n",
    "templates/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: test-chart-configmap\n"
                                "data:\n  myValue: {{ default \"test\" .Values.myValue }}\n",
}
TEST_CHART_V2 = {
    "Chart.yaml": TEST_CHART["Chart.yaml"].replace("version: 0.1.0", "version: 0.2.0"),
    "templates/configmap.yaml": TEST_CHART["templates/configmap.yaml"]
    + "  myOtherValue: {{ default \"foo\" .Values.myOtherValue }}\n",
}

# tests_chart.yml of kubernetes.core 6.5.0, its helm_info/helm_template/k8s steps left out (other modules); the
# helm tasks and every assert on them as they are, the module name changed
KUBERNETES_CORE_TESTS_CHART = """
- hosts: localhost
  gather_facts: false
  vars:
    chart_release_name: "test-{{ chart_name | default(source) }}"
    chart_release_replaced_name: "test-{{ chart_name | default(source) }}-001"
  tasks:
    - name: "Install fail {{ chart_test }} from {{ source }}"
      phasekit.kube.helm:
        binary_path: "{{ helm_binary }}"
        name: "{{ chart_release_name }}"
        chart_ref: "{{ chart_source }}"
        chart_version: "{{ chart_test_version }}"
        namespace: "{{ helm_namespace }}"
      ignore_errors: true
      register: install_fail

    - name: "Assert that Install fail {{ chart_test }} from {{ source }}"
      assert:
        that:
          - install_fail is failed
          - "'Error: create: failed to create: namespaces \\"' + helm_namespace + '\\" not found' in install_fail.stderr"

    - name: "Install {{ chart_test }} from {{ source }} in check mode"
      phasekit.kube.helm:
        binary_path: "{{ helm_binary }}"
        name: "{{ chart_release_name }}"
        chart_ref: "{{ chart_source }}"
        chart_version: "{{ chart_test_version }}"
        namespace: "{{ helm_namespace }}"
        create_namespace: true
      register: install_check_mode
      check_mode: true

    - name: "Assert that {{ chart_test }} chart is installed from {{ source }} in check mode"
      assert:
        that:
          - install_check_mode is changed
          - install_check_mode.status is defined
          - install_check_mode.status.release_values is defined

    - name: "Install {{ chart_test }} from {{ source }}"
      phasekit.kube.helm:
        binary_path: "{{ helm_binary }}"
        name: "{{ chart_release_name }}"
        chart_ref: "{{ chart_source }}"
        chart_version: "{{ chart_test_version }}"
        namespace: "{{ helm_namespace }}"
        create_namespace: true
      register: install

    - name: "Assert that {{ chart_test }} chart version {{ chart_test_version }} is installed from {{ source }}"
      assert:
        that:
          - install is changed
          - install.status.chart == chart_test+"-"+chart_test_version
          - install.status.status | lower == 'deployed'
          - install.status.release_values == {}

    - name: Check idempotency
      phasekit.kube.helm:
        binary_path: "{{ helm_binary }}"
        name: "{{ chart_release_name }}"
        chart_ref: "{{ chart_source }}"
        chart_version: "{{ chart_test_version }}"
        namespace: "{{ helm_namespace }}"
      register: install
      diff: true

    - name: Assert idempotency
      assert:
        that:
          - install is not changed
          - install.status.chart == chart_test+"-"+chart_test_version
          - install.status.status | lower == 'deployed'

    - name: "Add vars to {{ chart_test }} from {{ source }}"
      phasekit.kube.helm:
        binary_path: "{{ helm_binary }}"
        name: "{{ chart_release_name }}"
        chart_ref: "{{ chart_source }}"
        chart_version: "{{ chart_test_version }}"
        namespace: "{{ helm_namespace }}"
        values: "{{ chart_test_values }}"
      register: install

    - name: "Assert that {{ chart_test }} chart is upgraded with new var from {{ source }}"
      assert:
        that:
          - install is changed
          - install.status.status | lower == 'deployed'
          - install.status.chart == chart_test+"-"+chart_test_version
          - install.status['release_values'] == chart_test_values

    - name: Check idempotency after adding vars
      phasekit.kube.helm:
        binary_path: "{{ helm_binary }}"
        name: "{{ chart_release_name }}"
        chart_ref: "{{ chart_source }}"
        chart_version: "{{ chart_test_version }}"
        namespace: "{{ helm_namespace }}"
        values: "{{ chart_test_values }}"
      register: install
      diff: true

    - name: Assert idempotency after add vars
      assert:
        that:
          - install is not changed
          - install.status.status | lower == 'deployed'
          - install.status.chart == chart_test+"-"+chart_test_version
          - install.status['release_values'] == chart_test_values

    - name: "Remove Vars to {{ chart_test }} from {{ source }}"
      phasekit.kube.helm:
        binary_path: "{{ helm_binary }}"
        name: "{{ chart_release_name }}"
        chart_ref: "{{ chart_source }}"
        chart_version: "{{ chart_test_version }}"
        namespace: "{{ helm_namespace }}"
      register: install

    - name: "Assert that {{ chart_test }} chart is upgraded with new var from {{ source }}"
      assert:
        that:
          - install is changed
          - install.status.status | lower == 'deployed'
          - install.status.chart == chart_test+"-"+chart_test_version
          - install.status['release_values'] == {}

    - name: Check idempotency after removing vars
      phasekit.kube.helm:
        binary_path: "{{ helm_binary }}"
        name: "{{ chart_release_name }}"
        chart_ref: "{{ chart_source }}"
        chart_version: "{{ chart_test_version }}"
        namespace: "{{ helm_namespace }}"
      register: install
      diff: true

    - name: Assert idempotency after removing vars
      assert:
        that:
          - install is not changed
          - install.status.status | lower == 'deployed'
          - install.status.chart == chart_test+"-"+chart_test_version
          - install.status['release_values'] == {}

    - name: "Upgrade {{ chart_test }} from {{ source }}"
      phasekit.kube.helm:
        binary_path: "{{ helm_binary }}"
        name: "{{ chart_release_name }}"
        chart_ref: "{{ chart_source_upgrade | default(chart_source) }}"
        chart_version: "{{ chart_test_version_upgrade }}"
        namespace: "{{ helm_namespace }}"
      register: install

    - name: "Assert that {{ chart_test }} chart is upgraded with new version from {{ source }}"
      assert:
        that:
          - install is changed
          - install.status.status | lower == 'deployed'
          - install.status.chart == chart_test+"-"+chart_test_version_upgrade

    - name: Check idempotency after upgrade
      phasekit.kube.helm:
        binary_path: "{{ helm_binary }}"
        name: "{{ chart_release_name }}"
        chart_ref: "{{ chart_source_upgrade | default(chart_source) }}"
        chart_version: "{{ chart_test_version_upgrade }}"
        namespace: "{{ helm_namespace }}"
      register: install
      diff: true

    - name: Assert idempotency after upgrade
      assert:
        that:
          - install is not changed
          - install.status.status | lower == 'deployed'
          - install.status.chart == chart_test+"-"+chart_test_version_upgrade

    - name: "Remove {{ chart_test }} from {{ source }}"
      phasekit.kube.helm:
        binary_path: "{{ helm_binary }}"
        state: absent
        name: "{{ chart_release_name }}"
        namespace: "{{ helm_namespace }}"
      register: install

    - name: "Assert that {{ chart_test }} chart is removed from {{ source }}"
      assert:
        that:
          - install is changed

    - name: Check idempotency after remove
      phasekit.kube.helm:
        binary_path: "{{ helm_binary }}"
        state: absent
        name: "{{ chart_release_name }}"
        namespace: "{{ helm_namespace }}"
      register: install
      diff: true

    - name: Assert idempotency
      assert:
        that:
          - install is not changed

    # Test --replace
    - name: Install chart for replace option
      phasekit.kube.helm:
        binary_path: "{{ helm_binary }}"
        name: "{{ chart_release_replaced_name }}"
        chart_ref: "{{ chart_source }}"
        chart_version: "{{ chart_test_version }}"
        namespace: "{{ helm_namespace }}"
      register: install

    - name: "Assert that {{ chart_test }} chart is installed from {{ source }}"
      assert:
        that:
          - install is changed

    - name: "Remove {{ chart_release_replaced_name }} with --purge"
      phasekit.kube.helm:
        binary_path: "{{ helm_binary }}"
        state: absent
        name: "{{ chart_release_replaced_name }}"
        purge: False
        namespace: "{{ helm_namespace }}"
      register: install

    - name: Check if chart is removed
      assert:
        that:
          - install is changed

    - name: "Install chart again with same name {{ chart_release_replaced_name }}"
      phasekit.kube.helm:
        binary_path: "{{ helm_binary }}"
        name: "{{ chart_release_replaced_name }}"
        chart_ref: "{{ chart_source }}"
        chart_version: "{{ chart_test_version }}"
        namespace: "{{ helm_namespace }}"
        replace: True
      register: install

    - name: "Assert that {{ chart_test }} chart is installed from {{ source }}"
      assert:
        that:
          - install is changed

    - name: Remove {{ chart_test }} (cleanup)
      phasekit.kube.helm:
        binary_path: "{{ helm_binary }}"
        state: absent
        name: "{{ chart_release_replaced_name }}"
        namespace: "{{ helm_namespace }}"
      register: install

    - name: Check if chart is removed
      assert:
        that:
          - install is changed

    - name: "Install {{ chart_test }} from {{ source }} with values_files"
      phasekit.kube.helm:
        binary_path: "{{ helm_binary }}"
        name: "{{ chart_release_name }}"
        chart_ref: "{{ chart_source }}"
        chart_version: "{{ chart_test_version }}"
        namespace: "{{ helm_namespace }}"
        values_files:
          - "{{ role_path }}/files/values.yaml"
      register: install

    - name: "Assert that {{ chart_test }} chart has var from {{ source }}"
      assert:
        that:
          - install is changed
          - install.status.status | lower == 'deployed'
          - install.status.chart == chart_test+"-"+chart_test_version
          - "install.status['release_values'].revisionHistoryLimit == 0"

    - name: "Install {{ chart_test }} from {{ source }} with values_files (again)"
      phasekit.kube.helm:
        binary_path: "{{ helm_binary }}"
        name: "{{ chart_release_name }}"
        chart_ref: "{{ chart_source }}"
        chart_version: "{{ chart_test_version }}"
        namespace: "{{ helm_namespace }}"
        values_files:
          - "{{ role_path }}/files/values.yaml"
      register: install

    - name: "Assert the result is consistent"
      assert:
        that:
          - not (install is changed)

    - name: "Remove {{ chart_release_name }} release"
      phasekit.kube.helm:
        binary_path: "{{ helm_binary }}"
        name: "{{ chart_release_name }}"
        namespace: "{{ helm_namespace }}"
        state: absent

    - name: Release using non-existent context
      phasekit.kube.helm:
        binary_path: "{{ helm_binary }}"
        name: "{{ chart_release_name }}"
        chart_ref: "{{ chart_source }}"
        chart_version: "{{ chart_test_version }}"
        namespace: "{{ helm_namespace }}"
        create_namespace: true
        context: does-not-exist
      ignore_errors: true
      register: result

    - name: Assert that release fails with non-existent context
      assert:
        that:
          - result is failed
          - "'context \\"does-not-exist\\" does not exist' in result.stderr"
"""


def write_files(root: Path, files: dict) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def helm_env(cluster) -> dict:
    """kubernetes.core's default connection: helm reads $KUBECONFIG (phasekit too, as a kubeconfig source)."""
    return {"KUBECONFIG": str(cluster.admin_kubeconfig)}


def delete_namespace(cluster, namespace: str) -> None:
    cluster.kubectl("delete", "namespace", namespace, "--ignore-not-found", "--wait=false")


@pytest.mark.parametrize("binary", BINARIES)
def test_kubernetes_cores_own_chart_tests_pass_with_only_the_module_name_changed(clusters, run_playbook, tmp_path,
                                                                                 bin_dir, binary):
    """tests_chart.yml of kubernetes.core on its test charts: install failures, check mode, idempotence, values,
    upgrade, uninstall, purge: false and replace, values_files, a context that does not exist."""
    target = clusters[CLUSTER]
    namespace = f"pk-k8score-{uuid.uuid4().hex[:8]}"
    role = write_files(tmp_path / "role", {"files/values.yaml": "---\nrevisionHistoryLimit: 0\n"})
    variables = {
        "helm_binary": str(bin_dir / binary), "helm_namespace": namespace, "source": "local_path",
        "chart_name": "local-path-001", "chart_test": "test-chart", "role_path": str(role),
        "chart_source": str(write_files(tmp_path / "test-chart", TEST_CHART)),
        "chart_source_upgrade": str(write_files(tmp_path / "test-chart-v2", TEST_CHART_V2)),
        "chart_test_version": "0.1.0", "chart_test_version_upgrade": "0.2.0",
        # kubernetes.core's defaults/main.yml has myValue: "changed"; phasekit hides every string release value of
        # four characters or more (test_release_values_are_hidden), so the string here is shorter
        "chart_test_values": {"revisionHistoryLimit": 0, "myValue": "new"},
    }
    vars_file = tmp_path / "vars.yml"
    vars_file.write_text(yaml.safe_dump(variables))
    try:
        result = run_playbook(KUBERNETES_CORE_TESTS_CHART, None, "-e", f"@{vars_file}", env=helm_env(target))
        assert result.rc == 0, result
        assert "failed=0" in result.stdout and "ignored=2" in result.stdout, result.stdout[-600:]
    finally:
        delete_namespace(target, namespace)
