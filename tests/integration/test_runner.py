# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Runs through ansible-runner, the engine AWX uses, with a private data dir like AWX writes.

Every job event (event data, results, stdout) is scanned for kubeconfig
secrets of the local clusters: client keys, client certificates and tokens,
raw and base64-encoded as in ``*-data`` fields. None may appear.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
import uuid
from pathlib import Path

import ansible_runner
import pytest
import yaml
from jinja2.sandbox import SandboxedEnvironment

from test_inventory import leaked, secret_strings

VENV_BIN = Path(sys.executable).parent
REPO = Path(__file__).resolve().parents[2]
CREDENTIAL_TYPE = REPO / "examples/awx/credential-type-kubeconfigs.yml"

# Touches each cluster of the play through the collection's kubeconfig
# resolution, then lists namespaces with kubectl to prove the credentials work.
SITE = """\
- name: Fleet check
  hosts: "{{ fleet_hosts | default('all') }}"
  gather_facts: false
  tasks:
    - name: Resolve this cluster's kubeconfig
      phasekit.kube.kubeconfig:
        dest: "{{ kubeconfig_dir }}/{{ inventory_hostname }}.yaml"
      register: resolved

    - name: List namespaces with the resolved kubeconfig
      ansible.builtin.command:
        argv: [kubectl, --kubeconfig, "{{ kubeconfig_dir }}/{{ inventory_hostname }}.yaml", get, namespaces, -o, name]
      register: namespaces
      changed_when: false

    - name: Show what was used
      ansible.builtin.debug:
        msg: "{{ resolved }}"

    - name: The cluster answered
      ansible.builtin.assert:
        that: "'namespace/kube-system' in namespaces.stdout_lines"
"""

SLICE_PLAY = """\
- name: Mark every cluster of the slice
  hosts: all
  gather_facts: false
  tasks:
    - name: Apply this run's marker ConfigMap
      phasekit.kube.apply:
        namespace: default
        definition:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "{{ marker }}"}
          data: {host: "{{ inventory_hostname }}"}
"""


@pytest.fixture(scope="module")
def secrets(clusters) -> list[str]:
    return secret_strings(clusters["ephemeral"].dir.parent)


@pytest.fixture()
def private_data_dir(tmp_path, collections_path, bin_dir) -> Path:
    """project/, inventory/ and env/envvars as AWX lays them out."""
    root = tmp_path / "runner"
    for name in ("project", "inventory", "env", "kubeconfigs"):
        (root / name).mkdir(parents=True)
    (root / "kubeconfigs").chmod(0o700)
    envvars = {
        "ANSIBLE_COLLECTIONS_PATH": str(collections_path),
        "ANSIBLE_PYTHON_INTERPRETER": sys.executable,
        "ANSIBLE_NOCOLOR": "1",
        "PATH": f"{bin_dir}{os.pathsep}{VENV_BIN}{os.pathsep}{os.environ['PATH']}",
    }
    (root / "env/envvars").write_text(yaml.safe_dump(envvars))
    return root


def run(private_data_dir: Path, playbook: str, inventory: str, *, env: dict | None = None,
        extravars: dict | None = None, **kwargs):
    (private_data_dir / "project/site.yml").write_text(textwrap.dedent(playbook))
    (private_data_dir / "inventory/fleet.clusters.yml").write_text(textwrap.dedent(inventory))
    saved = {key: os.environ.get(key) for key in ("KUBECONFIG", *(env or {}))}
    os.environ.pop("KUBECONFIG", None)
    os.environ.update(env or {})  # the job's environment, as AWX's credential injectors set it
    try:
        return ansible_runner.run(private_data_dir=str(private_data_dir), playbook="site.yml", quiet=True,
                                  extravars={"kubeconfig_dir": str(private_data_dir / "kubeconfigs"),
                                             **(extravars or {})}, **kwargs)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def events_text(runner) -> str:
    """Every job event, as AWX would store it: event data, task results and stdout."""
    return "\n".join(json.dumps(event, default=str) for event in runner.events) + runner.stdout.read()


def awx_inject(credential_type: Path, inputs: dict, directory: Path, shown_as: str | None = None) -> dict:
    """What AWX does with a custom credential: render each file template to a private file, then the env.

    ``shown_as`` is the directory as the job sees it (in an execution environment: /runner/env)."""
    injectors = yaml.safe_load(credential_type.read_text())["injectors"]
    jinja = SandboxedEnvironment()
    fields = {field["id"]: "" for field in yaml.safe_load(credential_type.read_text())["inputs"]["fields"]}
    fields.update(inputs)
    filenames = {}
    for key, template in injectors.get("file", {}).items():
        path = directory / f"awx_{key.removeprefix('template.')}"
        path.write_text(jinja.from_string(template).render(**fields))
        path.chmod(0o600)
        filenames[key.removeprefix("template.")] = f"{shown_as}/{path.name}" if shown_as else str(path)
    context = {**fields, "tower": {"filename": filenames}}
    return {name: jinja.from_string(template).render(**context) for name, template in injectors.get("env", {}).items()}


def flattened(cluster, path: Path, context: str | None = None, limited: bool = False) -> Path:
    """A self-contained kubeconfig (embedded cert and key data), like the files an AWX credential injects."""
    args = ["config", "view", "--raw", "--flatten", "--minify"] + (["--context", context] if context else [])
    path.write_text(cluster.kubectl(*args, limited=limited).stdout)
    path.chmod(0o600)
    return path


def test_scan_recognizes_kubeconfig_secrets(clusters, secrets, tmp_path):
    """The scan is not vacuous: embedded client keys and tokens, as a kubeconfig holds them, are found."""
    admin = flattened(clusters["target"], tmp_path / "admin.yaml").read_text()
    limited = flattened(clusters["target"], tmp_path / "limited.yaml", limited=True).read_text()
    assert len(leaked(admin, secrets)) >= 2  # client certificate and key data
    assert len(leaked(limited, secrets)) == 1  # the bearer token


def test_site_run_succeeds_without_leaking_secrets(clusters, private_data_dir, secrets):
    runner = run(private_data_dir, SITE, f"""\
        plugin: phasekit.kube.clusters
        kubeconfigs:
          - {clusters['ephemeral'].admin_kubeconfig}
          - {clusters['target'].limited_kubeconfig}
        """, verbosity=3)
    text = events_text(runner)
    assert runner.status == "successful", text[-4000:]
    assert {e["event_data"].get("host") for e in runner.events if e["event"] == "runner_on_ok"} >= {
        "ephemeral", "target-limited"}
    assert leaked(text, secrets) == []


@pytest.mark.parametrize("case", ["fleet", "default-context", "host-sources-win"])
def test_awx_credential_type_is_picked_up(clusters, private_data_dir, secrets, tmp_path, case):
    """The shipped credential type, injected as AWX does, reaches every host through the precedence.

    fleet: KUBECONFIG lists both files, each host names its context (kubectl default tier).
    default-context: K8S_AUTH_CONTEXT gives a context to the host that names none; the other keeps its own.
    host-sources-win: K8S_AUTH_KUBECONFIG does not replace the hosts' own kube_kubeconfig (host variables tier).
    """
    inputs = {"kubeconfig_1": flattened(clusters["ephemeral"], tmp_path / "e.yaml").read_text(),
              "kubeconfig_2": flattened(clusters["target"], tmp_path / "t.yaml", limited=True).read_text()}
    if case == "default-context":
        inputs["context"] = "target-limited"
    if case == "host-sources-win":
        inputs["override_inventory"] = True
    env = awx_inject(CREDENTIAL_TYPE, inputs, private_data_dir / "env")
    assert env["KUBECONFIG"].count(os.pathsep) == 1  # two files; the empty fields are left out
    # AWX sets every injector variable, empty ones included: empty means unset, as for kubectl's KUBECONFIG
    site = {"ephemeral": {"context": "ephemeral"}, "target": {"context": "target-limited"}}
    if case == "default-context":
        del site["target"]["context"]
    if case == "host-sources-win":
        site["ephemeral"]["kubeconfig"] = str(flattened(clusters["ephemeral"], tmp_path / "own-e.yaml"))
        site["target"]["kubeconfig"] = str(flattened(clusters["target"], tmp_path / "own-t.yaml", limited=True))
    (private_data_dir / "inventory/clusters.yml").write_text(yaml.safe_dump({"clusters": site}))
    runner = run(private_data_dir, SITE, "plugin: phasekit.kube.clusters\nsite: [clusters.yml]\n", env=env,
                 verbosity=3)
    text = events_text(runner)
    assert runner.status == "successful", text[-4000:]
    used = {e["event_data"]["host"]: e["event_data"]["res"] for e in runner.events
            if e["event"] == "runner_on_ok" and e["event_data"].get("task_action") == "phasekit.kube.kubeconfig"}
    assert {host: result["context"] for host, result in used.items()} == {"ephemeral": "ephemeral",
                                                                          "target": "target-limited"}
    chosen = {host: (result["provenance"]["kubeconfig_from"], result["provenance"]["context_from"])
              for host, result in used.items()}
    own_context = {host: f"host var kube_context of {host}" for host in site}
    if case == "fleet":
        assert chosen == {host: ("kubectl default ($KUBECONFIG)", own_context[host]) for host in site}
    if case == "default-context":
        assert chosen == {"ephemeral": ("kubectl default ($KUBECONFIG)", own_context["ephemeral"]),
                          "target": ("kubectl default ($KUBECONFIG)", "controller environment K8S_AUTH_CONTEXT")}
    if case == "host-sources-win":
        assert chosen == {host: (f"host var kube_kubeconfig of {host}", own_context[host]) for host in site}
    assert leaked(text, secrets) == []


def awx_bearer_token_env(cluster, directory: Path, verify: bool) -> dict:
    """What AWX's built-in "OpenShift or Kubernetes API Bearer Token" credential injects (awx/main/models/
    credential/injectors.py, kubernetes_bearer_token): the host and token, and either the CA written to a private
    file with K8S_AUTH_VERIFY_SSL=True, or K8S_AUTH_VERIFY_SSL=False."""
    env = {"K8S_AUTH_HOST": cluster.server,
           "K8S_AUTH_API_KEY": (cluster.dir / "pki/limited.token").read_text().strip()}
    if not verify:
        return {**env, "K8S_AUTH_VERIFY_SSL": "False"}
    ca_file = directory / "awx_ssl_ca_cert"
    ca_file.write_text((cluster.dir / "pki/ca.crt").read_text())
    ca_file.chmod(0o600)
    return {**env, "K8S_AUTH_VERIFY_SSL": "True", "K8S_AUTH_SSL_CA_CERT": str(ca_file)}


BEARER_TOKEN_SITE = """\
- name: A plan run
  ansible.builtin.import_playbook: phasekit.kube.run

- name: A direct action
  hosts: all
  gather_facts: false
  tasks:
    - name: Apply a ConfigMap
      phasekit.kube.apply:
        definition:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "{{ marker }}-direct", namespace: phasekit-limited}
"""


@pytest.mark.parametrize("verify", [True, False], ids=["ca-certificate", "no-verify-without-ca"])
def test_awx_bearer_token_credential_attached(clusters, private_data_dir, secrets, request, verify):
    """AWX's built-in bearer-token credential, attached as it is (only its K8S_AUTH_* variables in the job's
    environment): a plan run and a direct action act on the K8S_AUTH_HOST cluster as the token's user, although the
    inventory's hosts name the other cluster's kubeconfig; nothing shows the token, at -vvv."""
    target, ephemeral = clusters["target"], clusters["ephemeral"]
    marker = f"phasekit-awx-{uuid.uuid4().hex[:8]}"
    record = "phasekit-run-deploy.target"  # the plan's run record, in the namespace the token may write to
    request.addfinalizer(lambda: target.kubectl("delete", "configmap", "-n", "phasekit-limited", f"{marker}-plan",
                                                f"{marker}-direct", record, "--ignore-not-found", check=False))
    phases = private_data_dir / "project/phases"
    phases.mkdir()
    (phases / "plan.yaml").write_text(yaml.safe_dump_all([
        {"apiVersion": "phasekit.dev/v1alpha1", "kind": "Phase", "metadata": {"name": "app"},
         "spec": {"cluster": "target", "executor": "apply", "source": "../manifests"}},
        {"apiVersion": "phasekit.dev/v1alpha1", "kind": "PhasePlan", "metadata": {"name": "deploy"},
         "spec": {"phases": ["app"]}}]))
    (private_data_dir / "project/manifests").mkdir()
    (private_data_dir / "project/manifests/cm.yaml").write_text(yaml.safe_dump(
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": f"{marker}-plan", "namespace": "phasekit-limited"}}))
    env = awx_bearer_token_env(target, private_data_dir / "env", verify)
    # the inventory's own kubeconfig is the other cluster's: a credential that was ignored would act there
    inventory = f"""\
        plugin: phasekit.kube.clusters
        kubeconfigs:
          - path: {ephemeral.admin_kubeconfig}
            host_names: {{ephemeral: target}}
        """
    runner = run(private_data_dir, BEARER_TOKEN_SITE, inventory, env=env, verbosity=3,
                 extravars={"marker": marker, "plan": "deploy", "phases": str(phases),
                            "plan_record_namespace": "phasekit-limited"})
    text = events_text(runner)
    assert runner.status == "successful", text[-4000:]
    direct = [e["event_data"]["res"]["kubeconfig"] for e in runner.events
              if e["event"] == "runner_on_ok" and e["event_data"].get("task_action") == "phasekit.kube.apply"]
    assert [(summary["server"], summary["provenance"]["cluster"], summary["provenance"]["user"])
            for summary in direct] == [(target.server, {"from": "controller environment K8S_AUTH_HOST"},
                                        {"from": "controller environment K8S_AUTH_API_KEY"})]
    for name in (f"{marker}-plan", f"{marker}-direct"):
        assert target.kubectl("get", "configmap", "-n", "phasekit-limited", name, check=False).returncode == 0, name
        assert ephemeral.kubectl("get", "configmap", "-n", "phasekit-limited", name, check=False).returncode != 0
    assert leaked(text, secrets) == []
    assert env["K8S_AUTH_API_KEY"] not in text
    recorded = target.kubectl("get", "configmap", "-n", "phasekit-limited", record, "-o", "json").stdout
    assert "app" in json.loads(recorded)["data"]
    assert leaked(recorded, secrets) == []


def test_limit_slice_touches_only_its_clusters(clusters, private_data_dir, request):
    """What a job slice (or --limit) runs touches only the clusters in it."""
    marker = f"phasekit-slice-{uuid.uuid4().hex[:8]}"
    request.addfinalizer(lambda: clusters["target"].kubectl("delete", "configmap", marker, "-n", "default",
                                                            "--ignore-not-found", check=False))
    runner = run(private_data_dir, SLICE_PLAY, f"""\
        plugin: phasekit.kube.clusters
        kubeconfigs:
          - {clusters['ephemeral'].admin_kubeconfig}
          - {clusters['target'].admin_kubeconfig}
        """, limit="target", extravars={"marker": marker})
    assert runner.status == "successful", events_text(runner)[-4000:]
    assert clusters["target"].kubectl("get", "configmap", marker, "-n", "default", check=False).returncode == 0
    missing = clusters["ephemeral"].kubectl("get", "configmap", marker, "-n", "default", check=False)
    assert missing.returncode != 0 and "NotFound" in missing.stderr
