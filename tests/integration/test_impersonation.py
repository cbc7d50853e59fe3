# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Impersonation (``as``, ``as-uid``, ``as-groups``, ``as-user-extra``) on every API call, against a real cluster.

The kubeconfig user underneath is the cluster admin (a client certificate);
with ``as`` set, the API server must see the impersonated user, exactly as for
kubectl: what that user may not do is refused.
"""

from __future__ import annotations

import base64
import uuid

import pytest
import yaml

from ansible_collections.phasekit.kube.plugins.module_utils.kube.client import api_client
from ansible_collections.phasekit.kube.plugins.module_utils.kube.session import ApiSession

pytestmark = [pytest.mark.k8s_matrix]

LIMITED_NAMESPACE = "phasekit-limited"  # the limited user may edit here only (hack/clusters.py)


def flattened(cluster) -> dict:
    return yaml.safe_load(cluster.kubectl("config", "view", "--raw", "--flatten", "--minify").stdout)


def impersonating(cluster, **impersonation) -> dict:
    config = flattened(cluster)
    config["users"][0]["user"].update(impersonation)
    return config


@pytest.fixture()
def kubeconfig_file(clusters, tmp_path):
    def write(**impersonation):
        path = tmp_path / f"as-{uuid.uuid4().hex[:6]}.kubeconfig"
        path.write_text(yaml.safe_dump(impersonating(clusters["target"], **impersonation)))
        path.chmod(0o600)
        return str(path)
    return write


def test_the_server_sees_the_impersonated_user_groups_uid_and_extra(clusters):
    config = impersonating(clusters["target"], **{"as": "jane", "as-uid": "jane-uid", "as-groups": ["dev", "ops"],
                                                  "as-user-extra": {"scopes": ["read", "write"],
                                                                    "acme.com/project": ["p1"]}})
    with api_client(config) as api:
        review = ApiSession(api).request("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                                         body={"apiVersion": "authentication.k8s.io/v1",
                                               "kind": "SelfSubjectReview"}).body
    user = review["status"]["userInfo"]
    assert user["username"] == "jane"
    assert user["uid"] == "jane-uid"
    assert {"dev", "ops"} <= set(user["groups"])
    assert user["extra"] == {"scopes": ["read", "write"], "acme.com/project": ["p1"]}


PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: apply as the kubeconfig says
      phasekit.kube.apply:
        kubeconfig: {kubeconfig}
        namespace: {namespace}
        definition:
          apiVersion: v1
          kind: ConfigMap
          metadata: {{name: impersonated-{tag}}}
          data: {{who: impersonated}}
"""


def test_apply_is_refused_for_an_impersonated_user_without_rights(run_playbook, kubeconfig_file, clusters):
    tag = uuid.uuid4().hex[:6]
    result = run_playbook(PLAYBOOK.format(kubeconfig=kubeconfig_file(**{"as": "nobody-at-all"}),
                                          namespace="default", tag=tag))
    assert result.rc != 0
    assert 'User \\"nobody-at-all\\" cannot' in result.output or 'User "nobody-at-all" cannot' in result.output, result
    assert clusters["target"].kubectl("get", "configmap", f"impersonated-{tag}", "-n", "default",
                                      check=False).returncode != 0


def test_apply_runs_with_exactly_the_impersonated_users_rights(run_playbook, kubeconfig_file, clusters):
    tag = uuid.uuid4().hex[:6]
    kubeconfig = kubeconfig_file(**{"as": "limited-user"})
    allowed = run_playbook(PLAYBOOK.format(kubeconfig=kubeconfig, namespace=LIMITED_NAMESPACE, tag=tag))
    assert allowed.rc == 0, allowed
    created = clusters["target"].get_json("configmap", f"impersonated-{tag}", "-n", LIMITED_NAMESPACE,
                                          "--show-managed-fields")
    assert any(entry["manager"] == "phasekit" for entry in created["metadata"]["managedFields"])
    refused = run_playbook(PLAYBOOK.format(kubeconfig=kubeconfig, namespace="default", tag=tag))
    assert refused.rc != 0 and "limited-user" in refused.output
    clusters["target"].kubectl("delete", "configmap", f"impersonated-{tag}", "-n", LIMITED_NAMESPACE)


def test_secret_sources_read_as_the_impersonated_user(run_playbook, kubeconfig_file, clusters, tmp_path):
    """The parent's kubeconfig impersonates a user who may not read Secrets: the child cannot be resolved."""
    target = clusters["target"]
    name = f"child-{uuid.uuid4().hex[:6]}"
    payload = base64.b64encode(target.kubectl("config", "view", "--raw", "--flatten", "--minify").stdout.encode())
    target.kubectl("create", "secret", "generic", name, "-n", LIMITED_NAMESPACE,
                   f"--from-literal=value={base64.b64decode(payload).decode()}")
    inventory = {"all": {"vars": {"ansible_connection": "local"}, "hosts": {
        "parent": {"kube_kubeconfig": kubeconfig_file(**{"as": "nobody-at-all"})},
        "child": {"kube_parent": "parent", "kube_kubeconfig": {"secret": {
            "name": name, "namespace": LIMITED_NAMESPACE, "timeout": 1}}}}}}
    playbook = "- hosts: child\n  gather_facts: false\n  tasks:\n    - phasekit.kube.kubeconfig: {}\n"
    result = run_playbook(playbook, inventory)
    assert result.rc != 0
    assert f"not allowed to read Secret {LIMITED_NAMESPACE}/{name} (HTTP 403" in result.output, result
    target.kubectl("delete", "secret", name, "-n", LIMITED_NAMESPACE)
