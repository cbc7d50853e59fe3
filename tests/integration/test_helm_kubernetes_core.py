# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""kubernetes.core.helm's contract, tested from its own documentation and integration tests, with helm 3 and 4.

The first tests are kubernetes.core's own helm target (``tests/integration/targets/helm``): its task files and
files/ charts, the same tasks and the same asserts with only the module name changed to ``phasekit.kube.helm``, the
helm binary and the namespaces (its ``test_namespace`` list) those of this run. ``KUBERNETES_CORE_HELM_TARGET`` (at
the end) is the inventory: every task file, its assert conditions, how many are on its helm module's results and run
offline (all ported: 59 of 59, counted by ``test_kubernetes_cores_offline_helm_asserts_are_n_of_n``), and what the
others need (kubernetes.core.helm_info, helm_template, k8s, or the internet). kubernetes.core's k8s/k8s_info steps
run with kubectl; the two asserts on the k8s module's own result shape are kubectl's, named ``phasekit:``, not
counted. Five files that need the internet only for their chart (bitnami's redis: reuse_values,
reset_then_reuse_values, insecure, take_ownership, skip_schema_validation) run on a stand-in served on 127.0.0.1,
their 31 asserts on the helm module counted apart.

The others go through every option and return key kubernetes.core.helm documents, including failures (stderr,
command, changed: false), one release per test, on the real local cluster.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from conftest import VENV_BIN
from test_apply import CLUSTER
# fixtures: a chart repository on 127.0.0.1
from test_helm import QuietHandler, chart_repo, packaged_charts, serve  # noqa: F401 pylint: disable=unused-import

pytestmark = [pytest.mark.k8s_matrix]


def helm_path(bin_dir: Path, binary: str) -> str:
    """A helm of the tools: the oldest Kubernetes version's tools have no helm of their own (make integration-oldest
    puts the newest's after them on PATH)."""
    own = bin_dir / binary
    return str(own) if own.exists() else (shutil.which(binary) or str(own))


BINARIES = ["helm-v3.22.0", "helm-v4.3.1"]
SECRET = "s3cr3t-" + uuid.uuid4().hex[:10]   # a release value that must never be shown
VAULTED = "vault3d-" + uuid.uuid4().hex[:10]  # a vault-encrypted release value: never shown either

CONFIGMAP = ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: test-chart-configmap\n"
             "data:\n  myValue: {{ default \"test\" .Values.myValue }}\n")
CONFIGMAP_V2 = CONFIGMAP + "  myOtherValue: {{ default \"foo\" .Values.myOtherValue }}\n"
TEST_CHART_YAML = ("apiVersion: v2\nname: test-chart\ndescription: A chart used in molecule tests\n"
                   "type: application\nversion: 0.1.0\nappVersion: \"default\"\n")
APPVERSIONLESS_CHART_YAML = ("apiVersion: v2\nname: appversionless-chart\ndescription: A chart used in molecule tests\n"
                             "type: application\nversion: 0.1.0\n")
# the files/ directory of kubernetes.core's helm target, as they are
KUBERNETES_CORE_FILES = {
    "test-chart/Chart.yaml": TEST_CHART_YAML,
    "test-chart/templates/configmap.yaml": CONFIGMAP,
    "test-chart-v2/Chart.yaml": TEST_CHART_YAML.replace("version: 0.1.0", "version: 0.2.0"),
    "test-chart-v2/templates/configmap.yaml": CONFIGMAP_V2,
    "appversionless-chart/Chart.yaml": APPVERSIONLESS_CHART_YAML,
    "appversionless-chart/templates/configmap.yaml": CONFIGMAP,
    "appversionless-chart-v2/Chart.yaml": APPVERSIONLESS_CHART_YAML.replace("version: 0.1.0", "version: 0.2.0"),
    "appversionless-chart-v2/templates/configmap.yaml": CONFIGMAP_V2,
    "dep-up/Chart.yaml": "apiVersion: v2\nname: dep_up\ndescription: A Helm chart for molecule test\n"
                         "type: application\nversion: 0.1.0\nappVersion: \"default\"\ndependencies:\n"
                         "  - name: test-chart\n    repository: file://../test-chart\n    version: \"0.1.0\"\n",
    "dep-up/values.yaml": "chart-test:\n  myValue: helm update dependency test\n",
    "test-crds/Chart.yaml": "apiVersion: v2\nname: test-crds\ndescription: A chart with CRDs\ntype: application\n"
                            "version: 0.1.0\n",
    "test-crds/crds/crd.yaml": """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: foos.ansible.com
spec:
  group: ansible.com
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            foobar:
              type: string
  scope: Namespaced
  names:
    plural: foos
    singular: foo
    kind: Foo
""",
    "values.yaml": "---\nrevisionHistoryLimit: 0\n",
}
# its defaults/main.yml: the values tests_chart.yml sets
CHART_TEST_VALUES = {"revisionHistoryLimit": 0, "myValue": "changed"}

# tests_chart.yml, its helm tasks and every assert on them as they are (the module name changed); its helm_info,
# helm_template and tempfile steps left out (other modules), its k8s namespace removal done with kubectl
KUBERNETES_CORE_TESTS_CHART = """
- name: Chart tests
  vars:
    chart_release_name: "test-{{ chart_name | default(source) }}"
    chart_release_replaced_name: "test-{{ chart_name | default(source) }}-001"
  block:
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
  always:
    - name: Remove helm namespace (kubectl in place of kubernetes.core.k8s)
      ansible.builtin.command: kubectl delete namespace {{ helm_namespace }} --ignore-not-found --wait=false
      changed_when: false
"""

# from_local_path.yml's runs of tests_chart.yml, as they are: local-path-002 (test-chart and test-chart-v2 packaged
# with appVersion v1 and v2) and local-path-003 (appversionless-chart, then appversionless-chart-v2 packaged); the
# copies made under work_dir instead of /tmp. Its local-path-001 clones nginx-ingress from github.com/helm/charts.git
# (the internet): files/test-chart and test-chart-v2 stand in for it.
KUBERNETES_CORE_FROM_LOCAL_PATH = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: Install Chart from local path (files/test-chart in place of the nginx-ingress git clone)
      include_tasks: "tasks/tests_chart.yml"
      vars:
        source: local_path
        chart_test: test-chart
        chart_source: "{{ playbook_dir }}/files/test-chart/"
        chart_source_upgrade: "{{ playbook_dir }}/files/test-chart-v2/"
        chart_test_version: "0.1.0"
        chart_test_version_upgrade: "0.2.0"
        chart_name: "local-path-001"
        helm_namespace: "{{ test_namespace[4] }}"

    - name: Test appVersion idempotence
      vars:
        chart_test: "test-chart"
        chart_test_upgrade: "test-chart-v2"
        chart_test_version: "0.1.0"
        chart_test_version_upgrade: "0.2.0"
        chart_test_app_version: "v1"
        chart_test_upgrade_app_version: "v2"
      block:
        - name: Copy test chart
          copy:
            src: "{{ chart_test }}"
            dest: "{{ work_dir }}/helm_test_appversion/test-chart/"

        - name: Copy test chart v2
          copy:
            src: "{{ chart_test_upgrade }}"
            dest: "{{ work_dir }}/helm_test_appversion/test-chart/"

        # create package with appVersion v1
        - name: "Package chart into archive with appVersion {{ chart_test_app_version }}"
          command: "{{ helm_binary }} package --app-version {{ chart_test_app_version }} {{ work_dir }}/helm_test_appversion/test-chart/{{ chart_test }}"
        - name: "Move appVersion {{ chart_test_app_version }} chart archive"
          copy:
            remote_src: true
            src: "test-chart-{{ chart_test_version }}.tgz"
            dest: "{{ work_dir }}/helm_test_appversion/test-chart/{{ chart_test }}-{{ chart_test_app_version }}-{{ chart_test_version }}.tgz"

        # create package with appVersion v2
        - name: "Package chart into archive with appVersion {{ chart_test_upgrade_app_version }}"
          command: "{{ helm_binary }} package --app-version {{ chart_test_upgrade_app_version }}
            {{ work_dir }}/helm_test_appversion/test-chart/{{ chart_test_upgrade }}"
        - name: "Move appVersion {{ chart_test_upgrade_app_version }} chart archive"
          copy:
            remote_src: true
            src: "test-chart-{{ chart_test_version_upgrade }}.tgz"
            dest: "{{ work_dir }}/helm_test_appversion/test-chart/{{ chart_test }}-{{ chart_test_upgrade_app_version }}-{{ chart_test_version_upgrade }}.tgz"

        - name: Install Chart from local path
          include_tasks: "tasks/tests_chart.yml"
          vars:
            source: local_path
            chart_source: "{{ work_dir }}/helm_test_appversion/test-chart/{{ chart_test }}-{{ chart_test_app_version }}-{{ chart_test_version }}.tgz"
            chart_source_upgrade: "{{ work_dir }}/helm_test_appversion/test-chart/\\
              {{ chart_test }}-{{ chart_test_upgrade_app_version }}-{{ chart_test_version_upgrade }}.tgz"
            chart_name: "local-path-002"
            helm_namespace: "{{ test_namespace[5] }}"

    - name: Test appVersion handling when null
      vars:
        chart_test: "appversionless-chart"
        chart_test_upgrade: "appversionless-chart-v2"
        chart_test_version: "0.1.0"
        chart_test_version_upgrade: "0.2.0"
      block:
        - name: Copy test chart
          copy:
            src: "{{ chart_test }}"
            dest: "{{ work_dir }}/helm_test_appversion/test-null/"

        - name: Copy test chart v2
          copy:
            src: "{{ chart_test_upgrade }}"
            dest: "{{ work_dir }}/helm_test_appversion/test-null/"

        # create package with appVersion v1
        - name: "Package chart into archive with appVersion v1"
          command: "{{ helm_binary }} package --app-version v1 {{ work_dir }}/helm_test_appversion/test-null/{{ chart_test_upgrade }}"

        - name: Install Chart from local path
          include_tasks: "tasks/tests_chart.yml"
          vars:
            source: local_path
            chart_source: "{{ work_dir }}/helm_test_appversion/test-null/{{ chart_test }}/"
            chart_source_upgrade: "{{ chart_test }}-{{ chart_test_version_upgrade }}.tgz"
            chart_name: "local-path-003"
            helm_namespace: "{{ test_namespace[6] }}"
"""

# test_up_dep.yml's helm half, as it is (its helm_template half is another module's), the charts copied under work_dir
# instead of /tmp, its k8s namespace removal done with kubectl
KUBERNETES_CORE_TEST_UP_DEP = """
- name: "Test dependency update for helm module"
  vars:
    helm_namespace: "{{ test_namespace[3] }}"
  block:
    - name: copy chart
      copy:
        src: "{{ item }}"
        dest: "{{ work_dir }}"
      loop:
        - test-chart
        - dep-up

    - name: "Test chart with dependency_update false"
      phasekit.kube.helm:
        binary_path: "{{ helm_binary }}"
        name: test
        chart_ref: "{{ work_dir }}/test-chart"
        chart_version: "{{ chart_source_version | default(omit) }}"
        namespace: "{{ helm_namespace }}"
        dependency_update: false
        create_namespace: yes
      register: release

    - name: "Get stats of the subchart"
      stat:
        path: "{{ work_dir }}/test-chart/Chart.lock"
      register: stat_result

    - name: "Check if the subchart not exist in chart"
      assert:
        that:
          - not stat_result.stat.exists
        success_msg: "subchart not exist in the chart directory"
        fail_msg: "subchart exist in the charts directory"

    - name: "Test chart without dependencies block and dependency_update true"
      phasekit.kube.helm:
        binary_path: "{{ helm_binary }}"
        name: test
        chart_ref: "{{ work_dir }}/test-chart"
        chart_version: "{{ chart_source_version | default(omit) }}"
        namespace: "{{ helm_namespace }}"
        create_namespace: yes
        dependency_update: true
      ignore_errors: true
      register: release

    - assert:
        that:
          - release.warnings[0] == "There is no dependencies block defined in Chart.yaml. Dependency update will not be performed.
            Please consider add dependencies block or disable dependency_update to remove this warning."
        success_msg: "warning when there is no dependencies block with dependency_update enabled"

    - name: "Test chart with dependencies block and dependency_update true"
      phasekit.kube.helm:
        binary_path: "{{ helm_binary }}"
        name: test
        chart_ref: "{{ work_dir }}/dep-up"
        chart_version: "{{ chart_source_version | default(omit) }}"
        namespace: "{{ helm_namespace }}"
        dependency_update: true
        create_namespace: yes
      register: release

    - name: "Get stats of the subchart"
      stat:
        path: "{{ work_dir }}/dep-up/Chart.lock"
      register: stat_result

    - name: "Check if the subchart exists in chart"
      assert:
        that:
          - stat_result.stat.exists
        success_msg: "subchart exist in the chart directory"
        fail_msg: "subchart not exist in the charts directory"
  always:
    - name: Remove helm namespace (kubectl in place of kubernetes.core.k8s)
      ansible.builtin.command: kubectl delete namespace {{ helm_namespace }} --ignore-not-found --wait=false
      changed_when: false

    - name: "Remove charts"
      file:
        state: absent
        path: "{{ work_dir }}/{{ item }}"
      loop:
        - test-chart
        - dep-up
"""

# test_helm_with_space_into_chart_name.yml as it is, its helm_info step and assert left out (another module), its k8s
# namespace removal done with kubectl
KUBERNETES_CORE_TEST_WITH_SPACE_INTO_CHART_NAME = """
- name: Create test directory
  ansible.builtin.tempfile:
    state: directory
    suffix: .helm
  register: test_dir

- name: Test helm using directory with space
  vars:
    helm_dir: "{{ test_dir.path }}/Deploy Chart"
    helm_namespace: "{{ test_namespace[10] }}"
    chart_release_name: "deploy-chart-with-space-into-name"
    helm_local_src: "test-chart"
  block:
    - name: Copy helm file into destination
      ansible.builtin.copy:
        src: "{{ helm_local_src }}"
        dest: "{{ helm_dir }}"

    - name: Install chart from local source with Space into name
      phasekit.kube.helm:
        binary_path: "{{ helm_binary }}"
        name: "{{ chart_release_name }}"
        chart_ref: "{{ helm_dir }}/{{ helm_local_src | basename }}"
        namespace: "{{ helm_namespace }}"
        create_namespace: true
      register: install_chart

    - name: Assert that chart is installed
      assert:
        that:
          - install_chart is changed
          - install_chart.status.status | lower == 'deployed'

  always:
    - name: Delete temporary directory
      ansible.builtin.file:
        state: absent
        name: "{{ test_dir.path }}"

    - name: Remove helm namespace (kubectl in place of kubernetes.core.k8s)
      ansible.builtin.command: kubectl delete namespace {{ helm_namespace }} --ignore-not-found --wait=false
      changed_when: false
"""

# test_crds.yml as it is, its k8s and k8s_info steps done with kubectl (their two asserts on the k8s module's own
# message and result shape made kubectl's, named phasekit:), the chart copied under work_dir instead of /tmp; its
# block's helm_binary: helm (the helm on PATH) left out, the binary under test is used
KUBERNETES_CORE_TEST_CRDS = """
- name: Test CRDs
  vars:
    test_chart: "test-crds"
    helm_namespace: "{{ test_namespace[0] }}"
    custom_resource:
      apiVersion: ansible.com/v1
      kind: Foo
      metadata:
        namespace: "{{ helm_namespace }}"
        name: test-foo
      foobar: footest
  block:
    - name: Create namespace (kubectl in place of kubernetes.core.k8s)
      ansible.builtin.command: kubectl create namespace {{ helm_namespace }}

    - name: Check if CRD resource is already present (kubectl in place of kubernetes.core.k8s_info)
      ansible.builtin.command: kubectl get foos.v1.ansible.com -n default
      ignore_errors: true
      register: crd_check

    - when: crd_check is failed
      block:
        - name: Copy test chart
          copy:
            src: "{{ test_chart }}"
            dest: "{{ work_dir }}/helm_test_crds/"

        - name: Install chart while skipping CRDs
          phasekit.kube.helm:
            binary_path: "{{ helm_binary }}"
            chart_ref: "{{ work_dir }}/helm_test_crds/{{ test_chart }}"
            namespace: "{{ helm_namespace }}"
            name: test-crds
            skip_crds: true
          register: install

        - assert:
            that:
              - install is changed
              - install.status.name == "test-crds"

        - name: Fail to create custom resource (kubectl in place of kubernetes.core.k8s)
          ansible.builtin.command: kubectl create -f -
          args:
            stdin: "{{ custom_resource | to_json }}"
          ignore_errors: true
          register: result

        - name: "phasekit: kubernetes.core.k8s's failure, as kubectl words it"
          assert:
            that:
              - result is failed
              - "'no matches for kind \\"Foo\\" in version \\"ansible.com/v1\\"' in result.stderr"

        # Helm won't install CRDs into an existing release, so we need to delete this, first
        - name: Uninstall chart
          phasekit.kube.helm:
            binary_path: "{{ helm_binary }}"
            namespace: "{{ helm_namespace }}"
            name: test-crds
            state: absent

        - name: Install chart with CRDs
          phasekit.kube.helm:
            binary_path: "{{ helm_binary }}"
            chart_ref: "{{ work_dir }}/helm_test_crds/{{ test_chart }}"
            namespace: "{{ helm_namespace }}"
            name: test-crds

        - name: Create custom resource (kubectl in place of kubernetes.core.k8s)
          ansible.builtin.command: kubectl create -f - -o json
          args:
            stdin: "{{ custom_resource | to_json }}"
          register: result

        - name: "phasekit: kubernetes.core.k8s's result, as kubectl gives it"
          assert:
            that:
              - result is changed
              - (result.stdout | from_json).foobar == "footest"

  always:
    - name: Remove chart
      file:
        path: "{{ work_dir }}/helm_test_crds"
        state: absent
      ignore_errors: true

    - name: Remove namespace (kubectl in place of kubernetes.core.k8s)
      ansible.builtin.command: kubectl delete namespace {{ helm_namespace }} --ignore-not-found --wait=false
      ignore_errors: true

    # CRDs aren't deleted with a namespace, so we need to manually delete it
    - name: Remove CRD (kubectl in place of kubernetes.core.k8s)
      ansible.builtin.command: kubectl delete customresourcedefinition foos.ansible.com --ignore-not-found
      ignore_errors: true
"""

# test_helm_reuse_values.yml, test_helm_reset_then_reuse_values.yml and test_helm_take_ownership.yml as they are, but
# for their chart (bitnami's redis from oci://registry-1.docker.io: the stand-in on 127.0.0.1, chart_test_oci), their
# k8s_info step (kubectl, its object given as k8s_info's resources) and their helm_info steps, another module's, left
# out with the condition of each assert on them (release_value). Their k8s namespace removal is done with kubectl.
KUBERNETES_CORE_TEST_HELM_REUSE_VALUES = """
- name: Test helm reuse_values
  vars:
    helm_namespace: "{{ test_namespace[9] }}"
    chart_release_values:
      replica:
        replicaCount: 3
      master:
        count: 1
        kind: Deployment
    chart_reuse_values:
      replica:
        replicaCount: 1
      master:
        count: 3
  block:
    - name: Initial chart installation
      phasekit.kube.helm:
        binary_path: "{{ helm_binary }}"
        chart_ref: "{{ chart_test_oci }}"
        release_name: test-redis
        release_namespace: "{{ helm_namespace }}"
        create_namespace: true
        release_values: "{{ chart_release_values }}"
      register: install

    - name: Validate that chart values are as expected
      assert:
        that:
          - install is changed
          - '"--reuse-values=True" not in install.command'

    - name: Retrieve release password (kubectl in place of kubernetes.core.k8s_info)
      ansible.builtin.command: kubectl get secret test-redis -n {{ helm_namespace }} -o json
      register: redis_secret_object
      changed_when: false

    - name: "phasekit: kubernetes.core.k8s_info's result, from kubectl's"
      ansible.builtin.set_fact:
        redis_secret:
          resources: "{{ [redis_secret_object.stdout | from_json] }}"

    - ansible.builtin.set_fact:
        chart_reuse_values: "{{ chart_reuse_values | combine(redis_global_password) }}"
      vars:
        redis_global_password:
          global:
            redis:
              password: "{{ redis_secret.resources.0.data['redis-password'] | b64decode }}"

    - name: Upgrade chart using reuse_values=true
      phasekit.kube.helm:
        binary_path: "{{ helm_binary }}"
        chart_ref: "{{ chart_test_oci }}"
        release_name: test-redis
        release_namespace: "{{ helm_namespace }}"
        reuse_values: true
        reset_values: false
        release_values: "{{ chart_reuse_values }}"
      register: upgrade

    - name: Validate that chart values are as expected
      assert:
        that:
          - upgrade is changed
          - '"--reuse-values=True" in upgrade.command'
          - '"--reset-values" not in upgrade.command'

  always:
    - name: Remove helm namespace (kubectl in place of kubernetes.core.k8s)
      ansible.builtin.command: kubectl delete namespace {{ helm_namespace }} --ignore-not-found --wait=false
      changed_when: false
"""

KUBERNETES_CORE_TEST_HELM_RESET_THEN_REUSE_VALUES = """
- name: Test helm reset_then_reuse_values
  vars:
    helm_namespace: "{{ test_namespace[11] }}"
    chart_release_values:
      replica:
        replicaCount: 3
      master:
        count: 1
        kind: Deployment
    chart_reset_then_reuse_values:
      replica:
        replicaCount: 1
      master:
        count: 3
  block:
    - name: Initial chart installation
      phasekit.kube.helm:
        binary_path: "{{ helm_binary }}"
        chart_ref: "{{ chart_test_oci }}"
        release_name: test-redis
        release_namespace: "{{ helm_namespace }}"
        create_namespace: true
        release_values: "{{ chart_release_values }}"
      register: install

    - name: Validate that chart values are as expected
      assert:
        that:
          - install is changed
          - '"--reset-then-reuse-values" not in install.command'

    - name: Retrieve release password (kubectl in place of kubernetes.core.k8s_info)
      ansible.builtin.command: kubectl get secret test-redis -n {{ helm_namespace }} -o json
      register: redis_secret_object
      changed_when: false

    - name: "phasekit: kubernetes.core.k8s_info's result, from kubectl's"
      ansible.builtin.set_fact:
        redis_secret:
          resources: "{{ [redis_secret_object.stdout | from_json] }}"

    - ansible.builtin.set_fact:
        chart_reset_then_reuse_values: "{{ chart_reset_then_reuse_values | combine(redis_global_password) }}"
      vars:
        redis_global_password:
          global:
            redis:
              password: "{{ redis_secret.resources.0.data['redis-password'] | b64decode }}"

    - name: Upgrade chart using reset_then_reuse_values=true
      phasekit.kube.helm:
        binary_path: "{{ helm_binary }}"
        chart_ref: "{{ chart_test_oci }}"
        release_name: test-redis
        release_namespace: "{{ helm_namespace }}"
        reuse_values: false
        reset_values: false
        reset_then_reuse_values: true
        release_values: "{{ chart_reset_then_reuse_values }}"
      register: upgrade

    - name: Validate that chart values are as expected
      assert:
        that:
          - upgrade is changed
          - '"--reset-then-reuse-values" in upgrade.command'
          - '"--reuse-values " not in upgrade.command'
          - '"--reset-values" not in upgrade.command'

  always:
    - name: Remove helm namespace (kubectl in place of kubernetes.core.k8s)
      ansible.builtin.command: kubectl delete namespace {{ helm_namespace }} --ignore-not-found --wait=false
      changed_when: false
"""

KUBERNETES_CORE_TEST_HELM_TAKE_OWNERSHIP = """
- name: Test helm take ownership
  vars:
    helm_namespace: "{{ test_namespace[13] }}"
  block:

    - name: Initial chart installation (no flag set)
      phasekit.kube.helm:
        binary_path: "{{ helm_binary }}"
        chart_ref: "{{ chart_test_oci }}"
        release_name: test-take-ownership
        release_namespace: "{{ helm_namespace }}"
        create_namespace: true
      register: install

    - name: Validate that take-ownership flag is not set
      assert:
        that:
          - install is changed
          - '"--take-ownership" not in install.command'

    - name: Retrieve release password (kubectl in place of kubernetes.core.k8s_info)
      ansible.builtin.command: kubectl get secret test-take-ownership-redis -n {{ helm_namespace }} -o json
      register: redis_secret_object
      changed_when: false

    - name: "phasekit: kubernetes.core.k8s_info's result, from kubectl's"
      ansible.builtin.set_fact:
        redis_secret:
          resources: "{{ [redis_secret_object.stdout | from_json] }}"

    - name: Upgrade chart (take-onwership flag set)
      phasekit.kube.helm:
        binary_path: "{{ helm_binary }}"
        chart_ref: "{{ chart_test_oci }}"
        release_name: test-take-ownership
        release_namespace: "{{ helm_namespace }}"
        take_ownership: true
        values:
          commonLabels:
            take-onwership: "set"
          global:
            redis:
              password: "{{ redis_secret.resources.0.data['redis-password'] | b64decode }}"
      register: upgrade
      ignore_errors: true

    - name: Validate that take-ownership flag IS set if helm version is >= 3.17.0
      assert:
        that:
          - upgrade is changed
          - '"--take-ownership" in upgrade.command'
      when: '"v3.17.0" <= helm_version'

    - name: Validate that feature fails for helm < 3.17.0
      assert:
        that:
          - upgrade is failed
          - '"take_ownership requires helm >= 3.17.0" in upgrade.msg'
      when: 'helm_version < "v3.17.0"'

    - name: Upgrade chart (take-onwership flag not set)
      phasekit.kube.helm:
        binary_path: "{{ helm_binary }}"
        chart_ref: "{{ chart_test_oci }}"
        release_name: test-take-ownership
        release_namespace: "{{ helm_namespace }}"
        values:
          commonLabels:
            take-onwership: "not-set"
          global:
            redis:
              password: "{{ redis_secret.resources.0.data['redis-password'] | b64decode }}"
      register: upgrade
      ignore_errors: true

    - name: Validate that take-ownership flag IS set if helm version is >= 3.17.0
      assert:
        that:
          - upgrade is changed
          - '"--take-ownership" not in upgrade.command'
      when: '"v3.17.0" <= helm_version'

    - name: Validate that feature fails for helm < 3.17.0
      assert:
        that:
          - upgrade is changed
          - upgrade.msg is not defined
      when: 'helm_version < "v3.17.0"'

  always:
    - name: Remove helm namespace (kubectl in place of kubernetes.core.k8s)
      ansible.builtin.command: kubectl delete namespace {{ helm_namespace }} --ignore-not-found --wait=false
      changed_when: false
"""

# test_helm_insecure.yml and test_skip_schema_validation.yml as they are, but for their chart: both install bitnami's
# redis from oci://registry-1.docker.io (the internet); a chart from a URL on 127.0.0.1 (chart_test_oci), its object
# named after the release as redis's are (two releases share a namespace), is installed instead. Their asserts are
# on the option's flag and changed, whatever the chart. Their k8s namespace removal is done with kubectl.
KUBERNETES_CORE_TEST_HELM_INSECURE = """
- name: Test helm insecure
  vars:
    helm_namespace: "{{ test_namespace[12] }}"
  block:

    - name: Initial chart installation (no flag set)
      phasekit.kube.helm:
        binary_path: "{{ helm_binary }}"
        chart_ref: "{{ chart_test_oci }}"
        release_name: test-secure
        release_namespace: "{{ helm_namespace }}"
        create_namespace: true
      register: install

    - name: Validate that insecure flag is not set
      assert:
        that:
          - install is changed
          - '"--insecure-skip-tls-verify" not in install.command'

    - name: Initial chart installation (insecure flag set)
      phasekit.kube.helm:
        binary_path: "{{ helm_binary }}"
        chart_ref: "{{ chart_test_oci }}"
        release_name: test-insecure
        release_namespace: "{{ helm_namespace }}"
        insecure_skip_tls_verify: true
      register: install
      ignore_errors: true

    - name: Validate that insecure flag IS set if helm version is >= 3.16.0
      assert:
        that:
          - install is changed
          - '"--insecure-skip-tls-verify" in install.command'
      when: '"v3.16.0" <= helm_version'

    - name: Validate that feature fails for helm < 3.16.0
      assert:
        that:
          - install is failed
          - '"insecure_skip_tls_verify requires helm >= 3.16.0" in install.msg'
      when: 'helm_version < "v3.16.0"'

  always:
    - name: Remove helm namespace (kubectl in place of kubernetes.core.k8s)
      ansible.builtin.command: kubectl delete namespace {{ helm_namespace }} --ignore-not-found --wait=false
      changed_when: false
"""

KUBERNETES_CORE_TEST_SKIP_SCHEMA_VALIDATION = """
- name: Test helm skip_schema_validation
  vars:
    helm_namespace: "{{ test_namespace[14] }}"
    chart_release_values:
      replica:
        replicaCount: 3
      master:
        count: 1
        kind: Deployment
  block:
    - name: Chart installation
      phasekit.kube.helm:
        binary_path: "{{ helm_binary }}"
        chart_ref: "{{ chart_test_oci }}"
        release_name: test-redis
        release_namespace: "{{ helm_namespace }}"
        create_namespace: true
        release_values: "{{ chart_release_values }}"
        skip_schema_validation: true
      register: install
      ignore_errors: true

    - name: Debug install result
      debug:
        var: install

    - name: Validate skip_schema_validation with helm >= 3.16.0 works
      assert:
        that:
          - install is changed
          - "'--skip-schema-validation' in install.command"
      when: "helm_version is ansible.builtin.version('v3.16.0', '>=')"

    - name: Validate skip_schema_validation with helm < 3.16.0 fails
      assert:
        that:
          - install is failed
          - "'skip_schema_validation requires helm >= 3.16.0' in install.msg"
      when: "helm_version is ansible.builtin.version('v3.16.0', '<')"

  always:
    - name: Remove helm namespace (kubectl in place of kubernetes.core.k8s)
      ansible.builtin.command: kubectl delete namespace {{ helm_namespace }} --ignore-not-found --wait=false
      changed_when: false
"""

# run_test.yml's order, the files above (its helm-diff plugin install is another module's and the internet's)
KUBERNETES_CORE_RUN_TEST = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: test helm upgrade with reuse_values
      include_tasks: tasks/test_helm_reuse_values.yml

    - name: test helm upgrade with reset_then_reuse_values
      include_tasks: tasks/test_helm_reset_then_reuse_values.yml

    - name: test helm dependency update
      include_tasks: tasks/test_up_dep.yml

    - name: Test helm install with chart name containing space
      include_tasks: tasks/test_helm_with_space_into_chart_name.yml

    - name: Test Skip CRDS feature in helm chart install
      include_tasks: tasks/test_crds.yml

    - name: Test insecure registry flag feature
      include_tasks: tasks/test_helm_insecure.yml

    - name: Test take ownership flag feature
      include_tasks: tasks/test_helm_take_ownership.yml

    - name: Test helm skip_schema_validation
      include_tasks: tasks/test_skip_schema_validation.yml
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


def delete_namespace(cluster, *namespaces: str) -> None:
    cluster.kubectl("delete", "namespace", *namespaces, "--ignore-not-found", "--wait=false")


def kubernetes_core_target(root: Path, helm_binary: str, tag: str) -> dict:
    """kubernetes.core's helm target laid out under ``root`` (the playbook's directory): its files/, the ported
    task files under tasks/; returns the variables its defaults and the install_helm role give (test_namespace:
    names of this run alone)."""
    write_files(root / "files", KUBERNETES_CORE_FILES)
    write_files(root / "tasks", {name: text for name, text in PORTED.items() if not text.lstrip().startswith("- hosts")})
    (root / "work").mkdir()
    return {"helm_binary": helm_binary, "role_path": str(root), "work_dir": str(root / "work"),
            "chart_test_values": CHART_TEST_VALUES,
            # what kubernetes.core's install_helm role sets: the version of the helm under test
            "helm_version": "v" + helm_binary.rsplit("-v", 1)[-1],
            "test_namespace": [f"pk-k8score-{tag}-{index}" for index in range(len(TEST_NAMESPACE_ROLES))]}


# kubernetes.core's defaults/main.yml test_namespace list: what each index is for
TEST_NAMESPACE_ROLES = ("test-crds", "uninstall", "read-envvars", "dep-update", "local-path-001", "local-path-002",
                        "local-path-003", "from-repository", "from-url", "reuse-values", "chart-with-space-into-name",
                        "reset-then-reuse-values", "insecure", "take-ownership", "skip-schema-validation")


# what kubernetes.core's tests use of bitnami's redis: objects named as redis names them (the release's name, with
# -redis unless it has redis in it), its password in a Secret (redis-password), global.redis.password taken
STAND_IN_REDIS = {
    "Chart.yaml": "apiVersion: v2\nname: stand-in\nversion: 0.1.0\n",
    "values.yaml": "global: {}\n",
    "templates/_name.tpl": '{{- define "fullname" -}}\n'
                           '{{- ternary .Release.Name (printf "%s-redis" .Release.Name) (contains "redis" .Release.Name) -}}\n'
                           '{{- end -}}\n',
    "templates/secret.yaml": 'apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ include "fullname" . }}\nstringData:\n'
                             '  redis-password: {{ dig "redis" "password" "stand-in" .Values.global | quote }}\n',
    "templates/configmap.yaml": 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ include "fullname" . }}-configmap\n'
                                "data:\n  release: {{ .Release.Name | quote }}\n",
}


@pytest.fixture(scope="module")
def stand_in_chart_url(bin_dir, tmp_path_factory):
    """The URL on 127.0.0.1 of a packaged chart standing in for bitnami's redis (``STAND_IN_REDIS``)."""
    root = tmp_path_factory.mktemp("stand-in")
    chart = write_files(root / "stand-in", STAND_IN_REDIS)
    subprocess.run([helm_path(bin_dir, BINARIES[0]), "package", str(chart), "-d", str(root / "packaged")], check=True,
                   capture_output=True)
    server, address = serve(functools.partial(QuietHandler, directory=str(root / "packaged")))
    yield f"http://{address}/stand-in-0.1.0.tgz"
    server.shutdown()


def run_kubernetes_core_playbook(run_playbook, cluster, tmp_path: Path, playbook: str, helm_binary: str, **extra):
    variables = {**kubernetes_core_target(tmp_path, helm_binary, uuid.uuid4().hex[:6]), **extra}
    vars_file = tmp_path / "vars.yml"
    vars_file.write_text(yaml.safe_dump(variables))
    try:
        return run_playbook(playbook, None, "-e", f"@{vars_file}", env=helm_env(cluster))
    finally:
        delete_namespace(cluster, *variables["test_namespace"])


@pytest.mark.parametrize("binary", BINARIES)
def test_kubernetes_cores_own_chart_tests_pass_with_only_the_module_name_changed(clusters, run_playbook, tmp_path,
                                                                                 bin_dir, binary):
    """tests_chart.yml of kubernetes.core, run as its from_local_path.yml runs it: on a chart directory, on packaged
    charts whose appVersion changes (v1 to v2) and on a chart without appVersion upgraded to a packaged one: install
    failures, check mode, idempotence, values, upgrade, uninstall, purge: false and replace, values_files, a context
    that does not exist."""
    result = run_kubernetes_core_playbook(run_playbook, clusters[CLUSTER], tmp_path, KUBERNETES_CORE_FROM_LOCAL_PATH,
                                          helm_path(bin_dir, binary))
    assert result.rc == 0, result.stdout[-4000:]
    # each of the three runs ignores two failures (the namespace missing, the context missing) and skips nothing
    assert "failed=0" in result.stdout and "ignored=6" in result.stdout and "skipped=0" in result.stdout, \
        result.stdout[-600:]


@pytest.mark.first_full_line  # CI's time: on the first full line only (the Kubernetes versions share helm's code)
@pytest.mark.parametrize("binary", BINARIES)
def test_kubernetes_cores_other_helm_tests_pass(clusters, run_playbook, tmp_path, bin_dir, binary, stand_in_chart_url):
    """The other files of kubernetes.core's run_test.yml, in its order: reuse_values and reset_then_reuse_values passed
    to helm; no Chart.lock without dependency_update, its warning for a chart without dependencies, the dependency
    updated; a chart in a directory with a space; skip_crds leaving the CRD out, then installed with the chart;
    insecure_skip_tls_verify, take_ownership and skip_schema_validation passed to helm."""
    target = clusters[CLUSTER]
    target.kubectl("delete", "customresourcedefinition", "foos.ansible.com", "--ignore-not-found")
    try:
        result = run_kubernetes_core_playbook(run_playbook, target, tmp_path, KUBERNETES_CORE_RUN_TEST,
                                              helm_path(bin_dir, binary), chart_test_oci=stand_in_chart_url)
    finally:
        target.kubectl("delete", "customresourcedefinition", "foos.ansible.com", "--ignore-not-found")
    assert result.rc == 0, result.stdout[-4000:]
    # the two failures test_crds.yml expects (the CRD absent, then the custom resource refused); skipped: the asserts
    # for a helm older than 3.16.0 or 3.17.0
    assert "failed=0" in result.stdout and "ignored=2" in result.stdout and "skipped=4" in result.stdout, \
        result.stdout[-600:]


def opts_chart(root: Path, crd_group: str) -> Path:
    """A chart that shows each option's effect: a dependency (file://), a values schema, a hook, a CRD, a
    placeholder the post-renderer replaces."""
    write_files(root / "sub", {
        "Chart.yaml": "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
        "templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: sub-cm\ndata:\n  a: b\n"})
    return write_files(root / "opts", {
        "Chart.yaml": "apiVersion: v2\nname: opts\nversion: 0.1.0\nappVersion: \"1.2.3\"\n"
                      "dependencies:\n  - name: sub\n    version: 0.1.0\n    repository: file://../sub\n",
        "values.yaml": "count: 1\n",
        "values.schema.json": '{"properties": {"count": {"type": "integer"}}}',
        "templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: opts-cm\ndata:\n"
                             "  count: {{ .Values.count | quote }}\n  rendered: PLACEHOLDER\n"
                             "  nested: {{ .Values.nested | toJson | quote }}\n",
        "templates/hook.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: opts-hook\n  annotations:\n"
                               "    helm.sh/hook: post-install,post-upgrade\ndata:\n  a: b\n",
        "crds/crd.yaml": yaml.safe_dump({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"widgets.{crd_group}"},
            "spec": {"group": crd_group, "scope": "Namespaced",
                     "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                     "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                         "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}),
    })


def helm_task(name: str, register: str, base: dict, check_mode: bool = False, **options) -> dict:
    one = {"name": name, "phasekit.kube.helm": {**base, **options}, "register": register, "ignore_errors": True}
    if check_mode:
        one.update(check_mode=True, diff=True)
    return one


def asserting(*that: str) -> dict:
    return {"assert": {"that": list(that)}}


def kubectl(register: str, *args: str) -> dict:
    """What the cluster holds, asked with kubectl (on PATH; $KUBECONFIG names the cluster)."""
    return {"ansible.builtin.command": {"argv": ["kubectl", *args]}, "register": register, "failed_when": False,
            "changed_when": False}


@pytest.mark.parametrize("binary", BINARIES)
def test_every_option_and_return_key_of_kubernetes_core_helm(clusters, run_playbook, tmp_path, bin_dir, binary,
                                                            chart_repo):  # noqa: F811 - the fixture imported
    """Each documented option's effect on the release and on ``command``, each return key's shape, and failures
    (ownership refused, a schema violation, a broken template, an option this helm lacks) as kubernetes.core
    reports them: failed, changed: false, stderr and command."""
    target = clusters[CLUSTER]
    helm4 = binary.startswith("helm-v4")
    namespace = f"pk-k8sopts-{uuid.uuid4().hex[:8]}"
    crd_group = f"opts{uuid.uuid4().hex[:8]}.phasekit.dev"
    chart = opts_chart(tmp_path / "charts", crd_group)
    broken = write_files(tmp_path / "charts" / "broken", {
        "Chart.yaml": "apiVersion: v2\nname: broken\nversion: 0.1.0\n",
        "templates/cm.yaml": "data: {{ .Values.x | nosuchfunc }}\n"})
    secret_file = tmp_path / "from-file.txt"
    secret_file.write_text(SECRET + "-file")
    renderer = tmp_path / "renderer.sh"
    renderer.write_text("#!/bin/sh\nexec sed s/PLACEHOLDER/post-rendered/\n")
    renderer.chmod(0o755)
    helm_binary = helm_path(bin_dir, binary)
    packaged = tmp_path / "packaged"
    subprocess.run([helm_binary, "package", str(chart), "--dependency-update", "--destination", str(packaged)],
                   check=True, capture_output=True)
    packaged = packaged / "opts-0.1.0.tgz"
    vault_password = tmp_path / "vault-password"
    vault_password.write_text("phasekit-test-vault\n")
    vaulted = tmp_path / "vaulted.yml"
    vaulted.write_text(subprocess.run([str(VENV_BIN / "ansible-vault"), "encrypt_string", "--vault-password-file",
                                       str(vault_password), "--name", "vaulted_greeting", VAULTED],
                                      check=True, capture_output=True, text=True).stdout)
    target.kubectl("create", "namespace", namespace)
    target.kubectl("create", "configmap", "opts-cm", "-n", namespace, "--from-literal=owner=kubectl")
    base = {"binary_path": helm_binary, "release_name": "opts", "release_namespace": namespace,
            "chart_ref": str(chart), "history_max": 2}
    # credentials by their name (password, dbPassword, apiToken) and a vault-encrypted value are hidden; the others
    # come back as kubernetes.core returns them
    values = {"release_values": {"password": SECRET, "greeting": "{{ vaulted_greeting }}"}, "set_values": [
        {"value": "count=3"}, {"value": "dbPassword=" + SECRET + "-set", "value_type": "string"},
        {"value": "label=plain-label", "value_type": "string"},
        {"value": 'nested={"a": 1}', "value_type": "json"}, {"value": f"apiToken={secret_file}", "value_type": "file"}]}
    if helm4:  # helm 4's --post-renderer names a plugin; kubernetes.core passes the option on, so does phasekit
        rendered_assert = asserting("rendered is failed", "rendered is not changed", "'plugin' in rendered.stderr",
                                    "'--post-renderer=' in rendered.command")
        server_side_assert = asserting("server_side is changed", "'--server-side=true' in server_side.command",
                                       "'--force-conflicts' in server_side.command")
    else:
        rendered_assert = asserting("rendered is changed", "'--post-renderer=' in rendered.command")
        server_side_assert = asserting("server_side is failed", "server_side is not changed",
                                       "'server_side requires helm >= 4.0.0' in server_side.msg",
                                       "server_side.stderr is string")
    rollback = "--rollback-on-failure" if helm4 else "--atomic"
    force = "--force-replace" if helm4 else "--force"
    tasks = [
        helm_task("ownership refused without take_ownership", "refused", base, **values, dependency_update=True,
                  skip_crds=True),
        asserting("refused is failed", "refused is not changed", "'opts-cm' in refused.stderr",
                  "refused.command is search(' upgrade opts ')", "'--take-ownership' not in refused.command"),
        helm_task("install with the lot", "installed", base, **values, dependency_update=True, take_ownership=True,
                  disable_hook=True, skip_crds=True, wait=True, wait_timeout="60s", atomic=True),
        asserting("installed is changed", "installed is not failed",
                  "installed.status.name == 'opts'", f"installed.status.namespace == '{namespace}'",
                  "installed.status.chart == 'opts-0.1.0'", "installed.status.appversion == '1.2.3'",
                  "installed.status.app_version == '1.2.3'", "installed.status.revision == '1'",
                  "installed.status.status == 'deployed'", "installed.status.updated is string",
                  "installed.status.release_values.count == 3", "installed.status.release_values.nested == {'a': 1}",
                  "installed.status.release_values.password == '***'",
                  "installed.status.release_values.dbPassword == '***'",
                  "installed.status.release_values.apiToken == '***'",
                  "installed.status.release_values.greeting == '***'",
                  "installed.status.release_values.label == 'plain-label'",
                  "installed.status['values'] == installed.status.release_values",
                  "'STATUS: deployed' in installed.stdout", "installed.stderr is string",
                  "installed.command is search(' upgrade opts ')",
                  "'--set count=3' in installed.command", "'--set-string' in installed.command",
                  "'--set-json' in installed.command", "'--set-file' in installed.command",
                  "'--take-ownership' in installed.command", "'--no-hooks' in installed.command",
                  "'--skip-crds' in installed.command", "'--history-max=2' in installed.command",
                  "'--wait' in installed.command", "'--timeout 60s' in installed.command",
                  f"'{rollback}' in installed.command", "'--reset-values' in installed.command",
                  "installed.release.revision == 1 and installed.action == 'installed'"),
        # dependency_update brought the subchart; disable_hook, skip_crds: no hook, no CRD
        kubectl("objects", "get", "configmap", "opts-cm", "sub-cm", "opts-hook", "-n", namespace, "-o", "name"),
        kubectl("crd", "get", "crd", f"widgets.{crd_group}"),
        asserting("'configmap/sub-cm' in objects.stdout", "'configmap/opts-cm' in objects.stdout",
                  "'opts-hook' in objects.stderr", "crd.rc != 0"),
        # helm ignores --version for a chart on disk (so does kubernetes.core); nothing to do: command is helm's path
        # and the chart flags kubernetes.core puts first
        helm_task("the same again", "again", base, **values, chart_version="9.9.9"),
        asserting("again is not changed", "again.status.status == 'deployed'", "again.status.revision == '1'",
                  "again.status.chart == 'opts-0.1.0'", "again.stdout == ''",
                  f"again.command == '{helm_binary} --version=9.9.9'"),
        helm_task("force reinstalls", "forced", base, **values, force=True),
        asserting("forced is changed", f"'{force}' in forced.command", "forced.status.revision == '2'"),
        helm_task("reuse_values", "reused", base, release_values={"extra": 1}, reuse_values=True, reset_values=False,
                  wait_timeout="45s"),
        asserting("reused is changed", "'--reuse-values=True' in reused.command",
                  "'--timeout' not in reused.command",  # wait_timeout without wait: not passed, as kubernetes.core
                  "'--reset-values' not in reused.command", "reused.status.release_values.extra == 1",
                  "reused.status.release_values.count == 3", "reused.status.release_values.password == '***'"),
        helm_task("reset_then_reuse_values and timeout", "reset", base, release_values={"other": 2},
                  reset_values=False, reset_then_reuse_values=True, timeout="2m", insecure_skip_tls_verify=True,
                  plain_http=True),
        asserting("reset is changed", "'--reset-then-reuse-values' in reset.command",
                  "'--timeout 2m' in reset.command", "'--insecure-skip-tls-verify' in reset.command",
                  "'--plain-http' in reset.command", "reset.status.release_values.other == 2",
                  "reset.status.release_values.extra == 1"),
        {"ansible.builtin.command": {"argv": [helm_path(bin_dir, binary), "history", "opts", "-n", namespace,
                                              "-o", "json"]},
         "register": "history", "changed_when": False},
        asserting("history.stdout | from_json | length == 2"),  # history_max: 2, after four revisions
        helm_task("update_repo_cache", "repo_update", base, release_name="dummy", state="absent",
                  update_repo_cache=True),
        asserting("repo_update is not failed", "repo_update is not changed", "repo_update.status is none"),
        helm_task("a values schema violated", "invalid", base, set_values=[{"value": "count=abc",
                                                                            "value_type": "string"}]),
        asserting("invalid is failed", "invalid is not changed", "'count' in invalid.stderr",
                  "'--skip-schema-validation' not in invalid.command"),
        helm_task("skip_schema_validation", "unchecked", base, set_values=[{"value": "count=abc",
                                                                            "value_type": "string"}],
                  skip_schema_validation=True),
        asserting("unchecked is changed", "'--skip-schema-validation' in unchecked.command",
                  "unchecked.status.release_values.count == 'abc'"),
        helm_task("post_renderer", "rendered", base, post_renderer=str(renderer)),
        rendered_assert,
        kubectl("rendered_cm", "get", "configmap", "opts-cm", "-n", namespace, "-o", "jsonpath={.data.rendered}"),
        asserting(f"rendered_cm.stdout == '{'PLACEHOLDER' if helm4 else 'post-rendered'}'"),
        helm_task("server_side and force_conflicts", "server_side", base, server_side="true", force_conflicts=True),
        server_side_assert,
        helm_task("check mode", "checked", base, check_mode=True, release_values={"password": SECRET + "-new"},
                  set_values=[{"value": "count=7"}]),
        # kubernetes.core's check mode: status is {values, release_values}, each {current: the live values,
        # declared: the live release's status}; command is the one that would run
        asserting("checked is changed", "checked.status.keys() | list | sort == ['release_values', 'values']",
                  "checked.status.release_values.current == {}",
                  "checked.status.release_values.declared.chart == 'opts-0.1.0'",
                  "checked.status.release_values.declared.status == 'deployed'",
                  "checked.status['values'] == checked.status.release_values",
                  "checked.command is search(' upgrade opts ')", "'--set count=7' in checked.command",
                  "checked.diff | length == 1", "checked.stdout == ''", "checked.stderr == ''"),
        helm_task("check mode, nothing to change", "checked_same", base, check_mode=True),
        asserting("checked_same is not changed", "checked_same.status.release_values.current == {}",
                  "checked_same.status.release_values.declared.name == 'opts'",
                  f"checked_same.command == '{helm_binary}'"),
        helm_task("a namespace that does not exist", "no_namespace",
                  {**base, "release_namespace": namespace + "-missing", "release_name": "nowhere"}),
        asserting("no_namespace is failed", "no_namespace is not changed",
                  f"'namespaces \"{namespace}-missing\" not found' in no_namespace.stderr",
                  "no_namespace.command is search(' upgrade nowhere ')", "no_namespace.status is undefined"),
        # kubernetes.core asks helm first (helm list in that context) and fails with helm's output
        helm_task("a context that does not exist", "no_context", base, context="nowhere"),
        asserting("no_context is failed", "no_context is not changed", "no_context.status is undefined",
                  "'context \"nowhere\" does not exist' in no_context.stderr",
                  f"no_context.command is search('^{helm_binary} list --output=yaml --filter opts ')",
                  "no_context.msg is search('^Failure when executing Helm command. Exited 1.')",
                  "'known contexts' in no_context.msg"),
        # a packaged chart with dependencies: kubernetes.core runs helm dependency update on it, which helm refuses
        helm_task("dependency_update of a packaged chart", "packaged", {**base, "chart_ref": str(packaged)},
                  dependency_update=True),
        asserting("packaged is failed", "packaged is not changed", "packaged.status is undefined",
                  "'only unpacked charts can be updated' in packaged.stderr",
                  f"packaged.command == '{helm_binary} dependency update {packaged}'"),
        helm_task("a broken chart", "broken", {**base, "chart_ref": str(broken), "release_name": "broken"}),
        asserting("broken is failed", "broken is not changed", "'nosuchfunc' in broken.stderr",
                  "broken.command is search(' upgrade broken ')", "broken.stdout is string"),
        helm_task("uninstall keeping history", "removed", base, state="absent", purge=False, disable_hook=True,
                  wait=True),
        asserting("removed is changed", "'--keep-history' in removed.command", "'--no-hooks' in removed.command",
                  "'--wait' in removed.command", "removed.status.status == 'uninstalled'",
                  "'uninstalled' in removed.stdout"),
        helm_task("uninstalled already", "gone", base, state="absent"),
        asserting("gone is not changed", "gone.status.status == 'uninstalled'"),
    ]
    play = [{"hosts": "localhost", "gather_facts": False, "vars_files": [str(vaulted)], "tasks": tasks}]
    repositories = {"HELM_REPOSITORY_CONFIG": str(tmp_path / "repositories.yaml"),
                    "HELM_REPOSITORY_CACHE": str(tmp_path / "repository-cache")}
    subprocess.run([helm_path(bin_dir, binary), "repo", "add", "local", chart_repo], check=True, capture_output=True,
                   env={**os.environ, **repositories})
    index = tmp_path / "repository-cache" / "local-index.yaml"
    os.utime(index, (0, 0))
    try:
        result = run_playbook(play, None, "--vault-password-file", str(vault_password), verbosity=3,
                              env={**helm_env(target), **repositories})
        assert result.rc == 0, result
        assert "failed=0" in result.stdout, result.stdout[-600:]
        assert SECRET not in result.output and VAULTED not in result.output
        assert index.stat().st_mtime > 0  # update_repo_cache ran helm repo update
    finally:
        delete_namespace(target, namespace)
        target.kubectl("delete", "crd", f"widgets.{crd_group}", "--ignore-not-found")


# test_read_envvars.yml of kubernetes.core 6.5.0, the module name changed: a task's environment: reaches the module
KUBERNETES_CORE_TEST_READ_ENVVARS = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: Pass a bogus server through the K8S_AUTH_HOST environment variable and ensure helm fails as expected
      phasekit.kube.helm:
        binary_path: "{{ helm_binary }}"
        state: absent
        name: does-not-exist
        namespace: "{{ helm_namespace }}"
      environment:
        K8S_AUTH_HOST: somewhere
      vars:
        helm_namespace: "{{ test_namespace[2] }}"
      register: _helm_result
      failed_when: '"http://somewhere/version" not in _helm_result.stderr'

    # beyond kubernetes.core's check: the result is kubernetes.core's (helm's own error in stderr, helm's command)
    - name: "phasekit: the failure is helm's, reported as kubernetes.core reports it"
      assert:
        that:
          - >-
            _helm_result.stderr is search('^Error: kubernetes cluster unreachable. Get "http://somewhere/version"', ignorecase=true)
          - _helm_result.command is search('^' + helm_binary + ' ')
          - _helm_result is not changed
          - _helm_result.kubeconfig.server == 'somewhere'
"""


@pytest.mark.parametrize("binary", BINARIES)
def test_kubernetes_cores_read_envvars_test_passes(clusters, run_playbook, bin_dir, binary):
    """A task's environment: K8S_AUTH_HOST is the server helm is pointed at, as kubernetes.core.helm receives it."""
    variables = json.dumps({"helm_binary": helm_path(bin_dir, binary), "test_namespace": ["a", "b", "default"]})
    result = run_playbook(KUBERNETES_CORE_TEST_READ_ENVVARS, None, "-e", variables, env=helm_env(clusters[CLUSTER]))
    assert result.rc == 0, result.stdout[-4000:]
    assert "failed=0" in result.stdout, result.stdout[-600:]


# test_helm_not_installed.yml of kubernetes.core 6.5.0, the module name changed: a helm that is not there fails with
# the words Ansible's run_command uses ("No such file or directory" before ansible-core 2.20, "Error executing
# command" since), each asserted on the lines it names
KUBERNETES_CORE_TEST_HELM_NOT_INSTALLED = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: Failed test when helm is not installed
      phasekit.kube.helm:
        binary_path: "{{ helm_binary}}_fake"
        name: test
        chart_ref: "{{ chart_test }}"
        namespace: "helm-test"
      ignore_errors: true
      register: helm_missing_binary

    - name: Assert that helm is not installed
      assert:
        that:
          - helm_missing_binary is failed
          - "'No such file or directory' in helm_missing_binary.msg"
      when: ansible_version.full is version('2.20', '<')

    - name: Assert that helm is not installed (ansible 2.20+)
      assert:
        that:
          - helm_missing_binary is failed
          - "'Error executing command' in helm_missing_binary.msg"
      when: ansible_version.full is version('2.20', '>=')

    - name: "phasekit: both, on every line (phasekit's message is the same on all of them)"
      assert:
        that:
          - "'No such file or directory' in helm_missing_binary.msg"
          - "'Error executing command' in helm_missing_binary.msg"
          - helm_missing_binary is not changed
"""


def test_kubernetes_cores_helm_not_installed_test_passes(clusters, run_playbook, bin_dir):
    """A binary_path where no helm is: failed, with the words kubernetes.core's test looks for in msg."""
    variables = json.dumps({"helm_binary": helm_path(bin_dir, BINARIES[0]), "chart_test": "test-chart"})
    result = run_playbook(KUBERNETES_CORE_TEST_HELM_NOT_INSTALLED, None, "-e", variables,
                          env=helm_env(clusters[CLUSTER]))
    assert result.rc == 0, result.stdout[-4000:]
    assert "failed=0" in result.stdout and "ignored=1" in result.stdout, result.stdout[-600:]


@dataclass(frozen=True)
class TaskFile:
    """One task file of kubernetes.core's helm target: its assert conditions (each ``that`` item and each
    ``failed_when``); how many of them are on kubernetes.core.helm's results and run offline (``ported``, as they
    are); how many need the internet only for their chart and run here on a local one instead (``local_chart``);
    and what the others need."""
    name: str
    conditions: int
    ported: int
    others: str
    local_chart: int = 0


# kubernetes.core's tests/integration/targets/helm/tasks/ (6.5.0; unchanged on main, 7.0.0-dev0), every file
KUBERNETES_CORE_HELM_TARGET = (
    TaskFile("main.yml", 0, 0, "no assert; installs helm v3.6.0 from https://get.helm.sh (role install_helm): the "
                               "helm 3.22 and 4.3 of the tools are used"),
    TaskFile("run_test.yml", 0, 0, "no assert; installs helm-diff from https://github.com/databus23/helm-diff with "
                                   "kubernetes.core.helm_plugin (the internet, another module)"),
    TaskFile("tests_chart.yml", 61, 47,
             "4 on kubernetes.core.helm_info, 10 on kubernetes.core.helm_template (other modules). Runs offline from "
             "from_local_path.yml (local-path-002, 003; 001 clones http://github.com/helm/charts.git: files/test-chart "
             "stands in); needs the internet from from_repository.yml (https://stenic.github.io/k8status/, with "
             "kubernetes.core.helm_repository) and from_url.yml (https://github.com/stenic/k8status/releases/...)"),
    TaskFile("tests_chart/from_local_path.yml", 0, 0, "no assert; runs tests_chart.yml"),
    TaskFile("tests_chart/from_repository.yml", 0, 0, "no assert; runs tests_chart.yml on the internet"),
    TaskFile("tests_chart/from_url.yml", 0, 0, "no assert; runs tests_chart.yml on the internet"),
    TaskFile("test_read_envvars.yml", 1, 1, ""),
    TaskFile("test_helm_not_installed.yml", 4, 4, "(2 per ansible-core line, by its when:)"),
    TaskFile("test_up_dep.yml", 7, 3, "4 on kubernetes.core.helm_template (another module)"),
    TaskFile("test_helm_with_space_into_chart_name.yml", 3, 2, "1 on kubernetes.core.helm_info (another module)"),
    TaskFile("test_crds.yml", 6, 2, "4 on kubernetes.core.k8s's results (its message, its result.result): its steps "
                                    "run with kubectl, kubectl's failure and object asserted instead (named phasekit:)"),
    TaskFile("test_helm_uninstall.yml", 4, 0,
             "the internet: https://github.com/kubernetes/kube-state-metrics/releases/download/kube-state-metrics-helm-"
             "chart-2.13.3/kube-state-metrics-2.13.3.tgz and helm v4.0.0 from https://get.helm.sh; runs only for a helm "
             "older than 3.7.0 (helm_test_version); 1 on kubernetes.core.helm_info"),
    TaskFile("test_helm_reuse_values.yml", 7, 0, "the internet for its chart: oci://registry-1.docker.io/"
                                                 "bitnamicharts/redis; run on a chart on 127.0.0.1 (k8s_info for redis's "
                                                 "password: kubectl); 2 on kubernetes.core.helm_info", local_chart=5),
    TaskFile("test_helm_reset_then_reuse_values.yml", 8, 0, "the internet for its chart: oci://registry-1.docker.io/"
                                                            "bitnamicharts/redis; run on a chart on 127.0.0.1 (k8s_info: "
                                                            "kubectl); 2 on kubernetes.core.helm_info", local_chart=6),
    TaskFile("test_helm_insecure.yml", 6, 0, "the internet for its chart: oci://registry-1.docker.io/bitnamicharts/"
                                             "redis (chart_test_oci); run on a chart on 127.0.0.1 (2 by its when: "
                                             "for a helm older than 3.16.0)", local_chart=6),
    TaskFile("test_helm_take_ownership.yml", 10, 0, "the internet for its chart: oci://registry-1.docker.io/"
                                                    "bitnamicharts/redis (chart_test_oci); run on a chart on 127.0.0.1 "
                                                    "(k8s_info: kubectl; 4 by its when: for a helm older than 3.17.0)",
             local_chart=10),
    TaskFile("test_skip_schema_validation.yml", 4, 0, "the internet for its chart: oci://registry-1.docker.io/"
                                                      "bitnamicharts/redis; run on a chart on 127.0.0.1 (2 by its "
                                                      "when: for a helm older than 3.16.0)", local_chart=4),
)
# N of N: kubernetes.core's asserts on its helm module that need no network, all ported and run above
OFFLINE_ASSERTS = 59
# and those that need the internet only for their chart, run on a local chart
LOCAL_CHART_ASSERTS = 31

# each ported file: its text here (task files written to tasks/; playbooks run as they are)
PORTED = {
    "tests_chart.yml": KUBERNETES_CORE_TESTS_CHART,
    "test_read_envvars.yml": KUBERNETES_CORE_TEST_READ_ENVVARS,
    "test_helm_not_installed.yml": KUBERNETES_CORE_TEST_HELM_NOT_INSTALLED,
    "test_up_dep.yml": KUBERNETES_CORE_TEST_UP_DEP,
    "test_helm_with_space_into_chart_name.yml": KUBERNETES_CORE_TEST_WITH_SPACE_INTO_CHART_NAME,
    "test_crds.yml": KUBERNETES_CORE_TEST_CRDS,
    "test_helm_reuse_values.yml": KUBERNETES_CORE_TEST_HELM_REUSE_VALUES,
    "test_helm_reset_then_reuse_values.yml": KUBERNETES_CORE_TEST_HELM_RESET_THEN_REUSE_VALUES,
    "test_helm_take_ownership.yml": KUBERNETES_CORE_TEST_HELM_TAKE_OWNERSHIP,
    "test_helm_insecure.yml": KUBERNETES_CORE_TEST_HELM_INSECURE,
    "test_skip_schema_validation.yml": KUBERNETES_CORE_TEST_SKIP_SCHEMA_VALIDATION,
}


def tasks_of(tasks: list) -> list:
    """Every task, those of blocks (and plays) included."""
    found = []
    for task in tasks or []:
        found.append(task)
        for part in ("tasks", "block", "rescue", "always"):
            found += tasks_of(task.get(part))
    return found


def kubernetes_cores_conditions(text: str) -> list:
    """The assert conditions and failed_when of a ported file, those phasekit added (a task named phasekit:) left
    out."""
    conditions = []
    for task in tasks_of(yaml.safe_load(text)):
        if str(task.get("name", "")).startswith("phasekit:"):
            continue
        that = (task.get("assert") or {}).get("that", [])
        conditions += [that] if isinstance(that, str) else that
        if "failed_when" in task:
            conditions.append(task["failed_when"])
    return conditions


@pytest.mark.parametrize("task_file", [one for one in KUBERNETES_CORE_HELM_TARGET if one.ported or one.local_chart],
                         ids=lambda one: one.name)
def test_each_offline_assert_of_kubernetes_core_is_ported(task_file):
    """A file's ported asserts are as many as the table counts for it (each one run by the tests above)."""
    assert len(kubernetes_cores_conditions(PORTED[task_file.name])) == task_file.ported + task_file.local_chart


def test_kubernetes_cores_offline_helm_asserts_are_n_of_n():
    """Every offline assert of kubernetes.core's helm target is ported: N of N, with N the table's count; and the
    asserts that need the internet only for their chart, run on a local chart, apart."""
    local_chart = {one.name for one in KUBERNETES_CORE_HELM_TARGET if one.local_chart}
    offline = sum(len(kubernetes_cores_conditions(text)) for name, text in PORTED.items() if name not in local_chart)
    assert offline == sum(one.ported for one in KUBERNETES_CORE_HELM_TARGET) == OFFLINE_ASSERTS
    assert sum(len(kubernetes_cores_conditions(PORTED[name])) for name in local_chart) == LOCAL_CHART_ASSERTS
    assert set(PORTED) == {one.name for one in KUBERNETES_CORE_HELM_TARGET if one.ported or one.local_chart}
    assert sum(one.conditions for one in KUBERNETES_CORE_HELM_TARGET) == 121
