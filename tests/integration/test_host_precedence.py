# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Each host acts on the cluster it names (issue 35, points 1 and 2), on the local clusters, as an operator runs it.

Three cluster hosts over one kubeconfig (contexts ``ephemeral``, ``target`` and ``workload01``, the last a copy of
``target`` with its own namespace), one apply phase through the plan role whose ConfigMap records
``{{ inventory_hostname }}``: with ``K8S_AUTH_CONTEXT=target`` exported (or set in the play's ``environment:``),
every host still writes to its own cluster and namespace, and one warning says so once. A play's, or a task's,
``environment:`` reaches the actions of a host that names no cluster of its own, with provenance naming it.
"""

from __future__ import annotations

import uuid

import pytest
import yaml

from test_kubeconfig_sources import new_age_key, sops_encrypt

API = "phasekit.dev/v1alpha1"
HOSTS = ("ephemeral", "target", "workload01")
WARNING = ("K8S_AUTH_CONTEXT from the {origin} is overridden by 3 hosts' own kube_context: a host's own kube_* "
           "variables win, K8S_AUTH_CONTEXT only fills what a host leaves unset (see docs/kubeconfig.md#precedence)")
MANIFEST = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: whoami
data:
  host: "{{ inventory_hostname }}"
"""


@pytest.fixture()
def site(clusters, tmp_path):
    """One kubeconfig with the three contexts (namespaces of this test), the phase, and where each host must
    write: {host: (cluster, namespace)}."""
    suffix = uuid.uuid4().hex[:6]
    shared, own = f"pk-prec-{suffix}", f"pk-prec-w-{suffix}"
    config = {"apiVersion": "v1", "kind": "Config", "clusters": [], "users": [], "contexts": []}
    for name in ("ephemeral", "target"):
        admin = yaml.safe_load(clusters[name].admin_kubeconfig.read_text())
        config["clusters"] += admin["clusters"]
        config["users"] += admin["users"]
        for context in admin["contexts"]:
            config["contexts"].append({"name": context["name"], "context": {**context["context"], "namespace": shared}})
    target = [item for item in config["contexts"] if item["name"] == "target"][0]
    config["contexts"].append({"name": "workload01", "context": {**target["context"], "namespace": own}})
    config["current-context"] = "ephemeral"
    kubeconfig = tmp_path / "fleet.kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(config))
    (tmp_path / "manifests").mkdir()
    (tmp_path / "manifests" / "whoami.yaml.j2").write_text(MANIFEST)
    (tmp_path / "phases").mkdir()
    (tmp_path / "phases" / "site.yaml").write_text(yaml.safe_dump_all([
        {"apiVersion": API, "kind": "Phase", "metadata": {"name": "whoami"},
         "spec": {"cluster": "all", "executor": "apply", "source": "../manifests/whoami.yaml.j2"}},
        {"apiVersion": API, "kind": "PhasePlan", "metadata": {"name": "site"}, "spec": {"phases": ["whoami"]}}]))
    expected = {"ephemeral": ("ephemeral", shared), "target": ("target", shared), "workload01": ("target", own)}
    everywhere = [(cluster, namespace) for cluster in ("ephemeral", "target") for namespace in (shared, own)]
    for cluster, namespace in everywhere:
        clusters[cluster].kubectl("create", "namespace", namespace)
    yield {"kubeconfig": str(kubeconfig), "expected": expected, "root": tmp_path}
    for cluster, namespace in everywhere:
        clusters[cluster].kubectl("delete", "namespace", namespace, "--ignore-not-found", "--wait=false")


def written(clusters, namespaces) -> dict:
    """{(cluster, namespace): the host its ConfigMap whoami names} over every cluster and namespace of the test."""
    found = {}
    for cluster in ("ephemeral", "target"):
        for namespace in namespaces:
            done = clusters[cluster].kubectl("get", "configmap", "whoami", "-n", namespace, "-o", "json", check=False)
            if done.returncode == 0:
                found[(cluster, namespace)] = yaml.safe_load(done.stdout)["data"]["host"]
    return found


@pytest.mark.smoke   # issue 35: a smoke test of each case on every ansible-core line
@pytest.mark.parametrize("exported, play_environment, origin", [
    ({"K8S_AUTH_CONTEXT": "target"}, None, "controller environment"),
    ({}, {"K8S_AUTH_CONTEXT": "target"}, "play environment"),
], ids=["exported-K8S_AUTH_CONTEXT", "play-environment-K8S_AUTH_CONTEXT"])
def test_every_host_writes_to_the_cluster_it_names(clusters, run_playbook, site, exported, play_environment, origin):
    play = {"name": "Deploy the site", "hosts": "all", "gather_facts": False,
            "roles": [{"role": "phasekit.kube.plan", "vars": {"plan_src": ["phases"], "plan_name": "site"}}]}
    if play_environment:
        play["environment"] = play_environment
    inventory = {"all": {"vars": {"ansible_connection": "local", "kube_kubeconfig": site["kubeconfig"]},
                         "hosts": {host: {"kube_context": host} for host in HOSTS}}}
    result = run_playbook(yaml.safe_dump([play]), yaml.safe_dump(inventory), env=exported)
    assert result.rc == 0, result
    namespaces = {namespace for _cluster, namespace in site["expected"].values()}
    assert written(clusters, namespaces) == {where: host for host, where in site["expected"].items()}
    assert result.output.count("[WARNING]: K8S_AUTH_CONTEXT") == 1, result
    assert WARNING.format(origin=origin) in " ".join(result.output.split()), result


def test_a_task_on_every_host_warns_once(run_playbook, site):
    """A single-host action on three hosts that beat an exported K8S_AUTH_CONTEXT: each resolves its own context,
    and Ansible shows the (identical) warning once."""
    play = [{"hosts": "all", "gather_facts": False,
             "tasks": [{"phasekit.kube.kubeconfig": {}, "register": "resolved"},
                       {"ansible.builtin.debug": {"msg": "{{ resolved.context }} {{ resolved.provenance.context_from }}"}}]}]
    inventory = {"all": {"vars": {"ansible_connection": "local", "kube_kubeconfig": site["kubeconfig"]},
                         "hosts": {host: {"kube_context": host} for host in HOSTS}}}
    result = run_playbook(yaml.safe_dump(play), yaml.safe_dump(inventory), env={"K8S_AUTH_CONTEXT": "target"})
    assert result.rc == 0, result
    for host in HOSTS:
        assert f'"msg": "{host} host var kube_context of {host}"' in result.stdout, result
    assert result.output.count("[WARNING]: K8S_AUTH_CONTEXT") == 1, result
    assert ("K8S_AUTH_CONTEXT from the controller environment is overridden by the hosts' own kube_context"
            in " ".join(result.output.split())), result


def test_a_templated_play_environment_names_each_host_s_own_context(clusters, run_playbook, site):
    """kubernetes.core's way of naming each host's cluster, in a plan run (one task for every host): the play's
    environment: is templated with each host's variables, not only the first host's."""
    play = {"name": "Deploy the site", "hosts": "all", "gather_facts": False,
            "environment": {"K8S_AUTH_KUBECONFIG": site["kubeconfig"], "K8S_AUTH_CONTEXT": "{{ inventory_hostname }}"},
            "roles": [{"role": "phasekit.kube.plan", "vars": {"plan_src": ["phases"], "plan_name": "site"}}]}
    inventory = {"all": {"vars": {"ansible_connection": "local"}, "hosts": {host: {} for host in HOSTS}}}
    result = run_playbook(yaml.safe_dump([play]), yaml.safe_dump(inventory))
    assert result.rc == 0, result
    namespaces = {namespace for _cluster, namespace in site["expected"].values()}
    assert written(clusters, namespaces) == {where: host for host, where in site["expected"].items()}
    assert "[WARNING]" not in result.output, result


ACTIONS_PLAY = """\
- hosts: cluster
  gather_facts: false
  environment:
    K8S_AUTH_KUBECONFIG: {kubeconfig}
    K8S_AUTH_CONTEXT: "{{{{ 'workload01' if inventory_hostname == 'cluster' else 'nowhere' }}}}"
  tasks:
    - name: The play's environment names the cluster
      phasekit.kube.kubeconfig:
      register: from_play
    - name: A task's own environment beats the play's
      phasekit.kube.kubeconfig:
      environment:
        K8S_AUTH_CONTEXT: target
      register: from_task
    - name: Apply where the play's environment says
      phasekit.kube.apply:
        definition:
          apiVersion: v1
          kind: ConfigMap
          metadata:
            name: whoami
          data:
            host: from-the-play-environment
      register: applied
    - name: A command sees the play's environment
      phasekit.kube.kube_command:
        argv: [sh, -c, 'echo "$K8S_AUTH_CONTEXT $PHASEKIT_PLAY_ONLY"']
      environment:
        PHASEKIT_PLAY_ONLY: reached
      register: command
    - name: Show
      ansible.builtin.debug:
        msg: "{{{{ [from_play.context, from_play.provenance.context_from, from_play.provenance.kubeconfig_from,
                   from_task.context, from_task.provenance.context_from,
                   applied.kubeconfig.context, applied.kubeconfig.provenance.context_from,
                   command.stdout | trim] | to_json }}}}"
"""


@pytest.mark.smoke
def test_a_play_environment_reaches_the_actions(clusters, run_playbook, site):
    inventory = {"all": {"hosts": {"cluster": {"ansible_connection": "local"}}}}
    # exported values lose to the play's and the task's environment: keyword
    result = run_playbook(ACTIONS_PLAY.format(kubeconfig=site["kubeconfig"]), yaml.safe_dump(inventory),
                          env={"K8S_AUTH_CONTEXT": "ephemeral", "K8S_AUTH_KUBECONFIG": "/nonexistent"})
    assert result.rc == 0, result
    shown = next(line for line in result.stdout.splitlines() if '"msg": ' in line)
    assert yaml.safe_load(yaml.safe_load("{" + shown.strip() + "}")["msg"]) == [
        "workload01", "play environment K8S_AUTH_CONTEXT", "play environment K8S_AUTH_KUBECONFIG",
        "target", "task environment K8S_AUTH_CONTEXT",
        "workload01", "play environment K8S_AUTH_CONTEXT",
        "workload01 reached"]
    _cluster, namespace = site["expected"]["workload01"]
    assert written(clusters, {namespace}) == {("target", namespace): "from-the-play-environment"}


SOPS_PLAY = """\
- hosts: cluster
  gather_facts: false
  environment:
    SOPS_AGE_KEY_FILE: {key_file}
  tasks:
    - name: A sops source, decrypted with the play's age key
      phasekit.kube.kubeconfig:
      register: single
    - name: The same in a plan run
      ansible.builtin.include_role:
        name: phasekit.kube.plan
      vars:
        plan_src: [phases]
        plan_name: site
        plan_record: false
    - name: Show
      ansible.builtin.debug:
        msg: "{{{{ single.provenance.context.kind }}}}"
"""


def test_sops_runs_with_the_play_environment(clusters, run_playbook, site, bin_dir, tmp_path):
    """SOPS_AGE_KEY_FILE in a play's environment: reaches sops, in a single action and in a plan run; exported
    nowhere (HOME without a keys file), the source could not be decrypted."""
    key_file, recipient = new_age_key(tmp_path, bin_dir)
    config = yaml.safe_load((site["root"] / "fleet.kubeconfig").read_text())
    config["current-context"] = "workload01"
    encrypted = sops_encrypt(yaml.safe_dump(config), tmp_path / "fleet.enc.yaml", recipient)
    inventory = {"all": {"hosts": {"cluster": {"ansible_connection": "local", "kube_kubeconfig": {"sops": str(encrypted)},
                                               "kube_context": "workload01"}}}}
    (site["root"] / "manifests" / "whoami.yaml.j2").write_text(MANIFEST.replace("{{ inventory_hostname }}", "sops"))
    result = run_playbook(SOPS_PLAY.format(key_file=key_file), yaml.safe_dump(inventory),
                          env={"HOME": str(tmp_path), "SOPS_AGE_KEY_FILE": ""})
    assert result.rc == 0, result
    assert '"msg": "sops"' in result.stdout, result
    _cluster, namespace = site["expected"]["workload01"]
    assert written(clusters, {namespace}) == {("target", namespace): "sops"}
