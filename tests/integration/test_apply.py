# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""phasekit.kube.apply against the real local clusters: every behaviour the apply engine promises.

Each test works in its own namespace(s), so tests never see each other's objects.
"""

from __future__ import annotations

import base64
import json
import time
import uuid

import pytest
import yaml

pytestmark = [pytest.mark.k8s_matrix]

CLUSTER = "target"


# ---------------------------------------------------------------- helpers (also used by test_wait.py)

def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture()
def namespace(clusters):
    """A fresh namespace name, deleted (without waiting) after the test."""
    name = unique("pk-apply")
    yield name
    clusters[CLUSTER].kubectl("delete", "namespace", name, "--wait=false", "--ignore-not-found", check=False)


def task(module: str, cluster, limited: bool = False, **args) -> dict:
    """One task of this collection's ``module`` against ``cluster`` with an explicit kubeconfig and context."""
    kubeconfig = cluster.limited_kubeconfig if limited else cluster.admin_kubeconfig
    context = cluster.limited_context if limited else cluster.context
    return {f"phasekit.kube.{module}": {"kubeconfig": str(kubeconfig), "context": context, **args}}


def run_tasks(run_playbook, tmp_path, tasks: list, *args, files: dict | None = None, verbosity: int = 0) -> list:
    """Run the tasks in one play (errors ignored) and return each task's registered result."""
    for name, content in (files or {}).items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content if isinstance(content, str) else yaml.safe_dump_all(content))
    results_file = tmp_path / "results.json"
    registered = []
    for number, one in enumerate(tasks):
        registered.append(f"result_{number}")
        one.update(register=f"result_{number}", ignore_errors=True)
    play = [{"name": "apply engine test", "hosts": "localhost", "gather_facts": False, "tasks": tasks + [
        {"ansible.builtin.copy": {"content": "{{ [" + ", ".join(registered) + "] | to_json }}",
                                  "dest": str(results_file)},
         "check_mode": False, "diff": False}]}]
    result = run_playbook(play, None, *args, verbosity=verbosity)
    assert results_file.exists(), result
    return json.loads(results_file.read_text()) + [result]


def config_map(name: str, namespace: str | None = None, **data) -> dict:
    metadata = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data}


def ns_object(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def actions(result: dict) -> dict:
    return {f"{o['kind']}/{o['name']}": o["action"] for o in result["objects"]}


def deployment(name: str, replicas: int = 1, **pod_spec) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "app", "image": "registry.example/app:1"}],
                                           **pod_spec}}}}


# ---------------------------------------------------------------- tests

def test_apply_reapply_modify(clusters, run_playbook, tmp_path, namespace):
    """Created, then unchanged (no change reported), then only the modified object is configured."""
    target = clusters[CLUSTER]
    manifests = [ns_object(namespace), config_map("a", k="1"), config_map("b", k="1"),
                 {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
                  "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}},
                 deployment("web")]
    modified = manifests[:1] + [config_map("a", k="2")] + manifests[2:]
    first, second, third, _rest = run_tasks(run_playbook, tmp_path, [
        task("apply", target, src="bundle/v1.yaml", namespace=namespace),
        task("apply", target, src="bundle/v1.yaml", namespace=namespace),
        task("apply", target, src="bundle/v2.yaml", namespace=namespace),
    ], files={"bundle/v1.yaml": manifests, "bundle/v2.yaml": modified})
    assert first["changed"] and first["counts"]["created"] == 5, first
    assert second["changed"] is False and second["counts"] == {
        "created": 0, "configured": 0, "unchanged": 5, "pruned": 0, "failed": 0}, second
    assert second["api_requests"] <= 6, second  # live state in bulk, no PATCH for unchanged objects
    assert third["changed"] and actions(third) == {
        f"Namespace/{namespace}": "unchanged", "ConfigMap/a": "configured", "ConfigMap/b": "unchanged",
        "Service/web": "unchanged", "Deployment/web": "unchanged"}, third
    live = target.get_json("configmap", "a", "-n", namespace, "--show-managed-fields")
    assert live["data"] == {"k": "2"}
    assert [m["manager"] for m in live["metadata"]["managedFields"] if m["operation"] == "Apply"] == ["phasekit"]


def test_prune_follows_applyset_and_kubectl_sees_the_same_set(clusters, run_playbook, tmp_path, namespace,
                                                              monkeypatch):
    """Members dropped from the bundle are pruned; objects outside the set stay; kubectl agrees on the set."""
    target = clusters[CLUSTER]
    other = unique("pk-apply-other")
    target.kubectl("create", "namespace", namespace)
    target.kubectl("create", "configmap", "outsider", "-n", namespace, "--from-literal=k=v")
    bundle = [config_map("keep", k="1"), config_map("drop", k="1"), config_map("elsewhere", other, k="1"),
              ns_object(other)]
    set_args = {"namespace": namespace, "applyset": "site", "prune": True, "applyset_tooling": "kubectl/v1.34.4"}
    try:
        first, dry, second, _rest = run_tasks(run_playbook, tmp_path, [
            task("apply", target, definition=bundle, **set_args),
            {**task("apply", target, definition=[bundle[0], bundle[3]], **set_args), "check_mode": True},
            task("apply", target, definition=[bundle[0], bundle[3]], **set_args),
        ])
        set_id = first["applyset"]["id"]
        assert dry["changed"] and dry["counts"]["pruned"] == 2, dry  # predicted, not done: the next run prunes
        assert first["counts"]["created"] == 4, first
        parent = target.get_json("secret", "site", "-n", namespace)["metadata"]
        assert parent["labels"] == {"applyset.kubernetes.io/id": set_id}
        assert parent["annotations"]["applyset.kubernetes.io/contains-group-kinds"] == "ConfigMap,Namespace"
        assert parent["annotations"]["applyset.kubernetes.io/tooling"] == "kubectl/v1.34.4"
        assert second["counts"]["pruned"] == 2 and actions(second)["ConfigMap/drop"] == "pruned", second
        assert {o["name"] for o in second["objects"] if o["action"] == "pruned"} == {"drop", "elsewhere"}

        members = target.kubectl("get", "configmaps,namespaces", "-A", "-l",
                                 f"applyset.kubernetes.io/part-of={set_id}", "-o", "name").stdout.split()
        assert sorted(members) == ["configmap/keep", f"namespace/{other}"]
        assert target.kubectl("get", "configmap", "outsider", "-n", namespace).returncode == 0
        assert target.kubectl("get", "configmap", "drop", "-n", namespace, check=False).returncode != 0

        # kubectl's own ApplySet prune recognises our parent and members: given only the Namespace, it would
        # prune exactly the one ConfigMap left in the set, and nothing outside it.
        (tmp_path / "only-namespace.yaml").write_text(yaml.safe_dump(ns_object(other)))
        monkeypatch.setenv("KUBECTL_APPLYSET", "true")  # still alpha in kubectl v1.34
        dry = target.kubectl("apply", "--server-side", "--field-manager", "phasekit", "--applyset=site", "-n",
                             namespace, "--prune", "--dry-run=server", "-f", str(tmp_path / "only-namespace.yaml"),
                             check=False)
        assert dry.returncode == 0, dry.stderr
        assert "configmap/keep pruned" in dry.stdout, dry.stdout
        assert "outsider" not in dry.stdout
    finally:
        target.kubectl("delete", "namespace", other, "--wait=false", "--ignore-not-found", check=False)


def test_applyset_of_another_tool_is_refused(clusters, run_playbook, tmp_path, namespace):
    target = clusters[CLUSTER]
    first, second, _rest = run_tasks(run_playbook, tmp_path, [
        task("apply", target, definition=[ns_object(namespace), config_map("a", k="1")], namespace=namespace,
             applyset="shared"),
        task("apply", target, definition=[config_map("a", k="1")], namespace=namespace, applyset="shared",
             prune=True, applyset_tooling="kubectl/v1.34.4"),
    ])
    assert first["changed"], first
    assert second["failed"] and "is managed by tooling 'phasekit.kube', not 'kubectl'" in second["msg"], second


def test_crd_then_custom_resources_in_one_bundle(clusters, run_playbook, tmp_path, namespace):
    """The CRD is applied and Established before its custom resources, in the same run."""
    target = clusters[CLUSTER]
    group = f"{namespace}.phasekit.dev"
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": f"widgets.{group}"},
           "spec": {"group": group, "scope": "Namespaced",
                    "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
                    "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                        "type": "object", "properties": {"spec": {"type": "object", "properties": {
                            "size": {"type": "integer"}}}}}}}]}}
    widgets = [{"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": f"w{i}"}, "spec": {"size": i}}
               for i in range(3)]
    try:
        first, again, _rest = run_tasks(run_playbook, tmp_path, [
            task("apply", target, src="crd", namespace=namespace, wait=True),
            task("apply", target, src="crd", namespace=namespace),
        ], files={"crd/1-widgets.yaml": widgets, "crd/0-crd.yaml": [ns_object(namespace), crd]})
        assert not first.get("failed"), first
        assert first["counts"]["created"] == 5
        assert {o["name"]: o["status"] for o in first["objects"]}[f"widgets.{group}"] == "Current"
        assert again["changed"] is False, again
        assert target.get_json(f"widgets.{group}", "w2", "-n", namespace)["spec"] == {"size": 2}
    finally:
        target.kubectl("delete", "crd", f"widgets.{group}", "--wait=false", "--ignore-not-found", check=False)


def test_unknown_kind_fails_before_anything_is_written(clusters, run_playbook, tmp_path, namespace):
    target = clusters[CLUSTER]
    result, _rest = run_tasks(run_playbook, tmp_path, [
        task("apply", target, src="bad.yaml", namespace=namespace)],
        files={"bad.yaml": [ns_object(namespace), {"apiVersion": "nope.example.com/v1", "kind": "Gadget",
                                                   "metadata": {"name": "g"}}]})
    assert result["failed"]
    assert "bad.yaml document 2: kind 'Gadget' of apiVersion 'nope.example.com/v1' is not served" in result["msg"]
    assert target.kubectl("get", "namespace", namespace, check=False).returncode != 0


def test_deployment_becomes_ready_on_kwok_nodes(clusters, run_playbook, tmp_path, namespace):
    target = clusters[CLUSTER]
    result, _rest = run_tasks(run_playbook, tmp_path, [task(
        "apply", target, namespace=namespace, definition=[ns_object(namespace), deployment("web", replicas=2)],
        wait={"timeout": 120, "conditions": [{"kind": "Deployment", "path": "status.availableReplicas", "value": 2}]})])
    assert not result.get("failed"), result
    status = {o["kind"]: (o["status"], o["message"]) for o in result["objects"]}
    assert status["Deployment"] == ("Current", "Deployment is available. Replicas: 2")


def test_wait_timeout_names_what_is_not_ready_and_why(clusters, run_playbook, tmp_path, namespace):
    target = clusters[CLUSTER]
    stuck = deployment("stuck", nodeSelector={"no-such-label": "anywhere"})
    result, _rest = run_tasks(run_playbook, tmp_path, [task(
        "apply", target, namespace=namespace, definition=[ns_object(namespace), config_map("ok"), stuck],
        wait={"timeout": 8})])
    assert result["failed"]
    assert result["msg"].startswith("timed out after 8s: 1 of 3 objects not ready: ")
    assert f"Deployment {namespace}/stuck: InProgress: " in result["msg"]
    # why, in the cluster's words: the scheduler's event on the Deployment's pod
    assert "[events: FailedScheduling (Pod stuck-" in result["msg"]
    assert "didn't match Pod's node affinity/selector" in result["msg"]
    assert "ConfigMap" not in result["msg"]
    assert result["counts"]["created"] == 3  # applied, just not ready


def test_conflict_names_fields_and_managers_unless_forced(clusters, run_playbook, tmp_path, namespace):
    target = clusters[CLUSTER]
    target.kubectl("create", "namespace", namespace)
    target.kubectl("apply", "--server-side", "--field-manager", "team-b", "-f", "-",
                   stdin=yaml.safe_dump(config_map("shared", namespace, owner="team-b", extra="x")))
    ours = config_map("shared", owner="team-a")
    conflict, forced, _rest = run_tasks(run_playbook, tmp_path, [
        task("apply", target, namespace=namespace, definition=ours),
        task("apply", target, namespace=namespace, definition=ours, force_conflicts=True),
    ])
    assert conflict["failed"] and conflict["counts"]["failed"] == 1
    assert f"ConfigMap {namespace}/shared (definition): conflict with another field manager: " \
           '.data.owner (owned by "team-b"' in conflict["msg"]
    assert "set force_conflicts: true" in conflict["msg"]
    assert not forced.get("failed") and actions(forced) == {"ConfigMap/shared": "configured"}
    assert target.get_json("configmap", "shared", "-n", namespace)["data"] == {"owner": "team-a", "extra": "x"}


def test_forbidden_names_verb_resource_and_user(clusters, run_playbook, tmp_path):
    target = clusters[CLUSTER]
    allowed = "phasekit-limited"  # the limited user may edit here only
    name = unique("cm")
    denied, permitted, _rest = run_tasks(run_playbook, tmp_path, [
        task("apply", target, limited=True, namespace="default", definition=config_map(name, k="v")),
        task("apply", target, limited=True, namespace=allowed, definition=config_map(name, k="v")),
    ])
    try:
        assert denied["failed"]
        assert f'forbidden: configmaps "{name}" is forbidden: User "limited-user" cannot patch resource ' \
               '"configmaps" in API group "" in the namespace "default"' in denied["msg"]
        assert not permitted.get("failed") and permitted["counts"]["created"] == 1, permitted
    finally:
        target.kubectl("delete", "configmap", name, "-n", allowed, "--ignore-not-found", check=False)


def test_check_mode_is_a_server_side_dry_run_with_diffs(clusters, run_playbook, tmp_path, namespace):
    """Nothing is persisted; created/configured are predicted by the server; diffs redact Secret data."""
    target = clusters[CLUSTER]
    password, changed_password = "s3cr3t-" + uuid.uuid4().hex, "n3w-" + uuid.uuid4().hex
    bundle = [ns_object(namespace), config_map("a", k="1"),
              {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds"},
               "stringData": {"password": password, "user": "admin"}}]
    (tmp_path / "bundle.yaml").write_text(yaml.safe_dump_all(bundle))
    changed_secret = {**bundle[2], "stringData": {"password": changed_password, "user": "admin"}}
    changed = [bundle[0], config_map("a", k="2"), changed_secret]
    (tmp_path / "changed.yaml").write_text(yaml.safe_dump_all(changed))
    new_ns, _rest = run_tasks(run_playbook, tmp_path, [task("apply", target, src="bundle.yaml", namespace=namespace)],
                              "--check", "--diff")
    assert not new_ns.get("failed"), new_ns
    assert new_ns["changed"] and new_ns["counts"]["created"] == 3
    assert target.kubectl("get", "namespace", namespace, check=False).returncode != 0  # nothing persisted

    run_tasks(run_playbook, tmp_path, [task("apply", target, src="bundle.yaml", namespace=namespace)])
    dry, playbook = run_tasks(run_playbook, tmp_path, [task("apply", target, src="changed.yaml",
                                                            namespace=namespace)], "--check", "--diff", verbosity=3)
    assert actions(dry) == {f"Namespace/{namespace}": "unchanged", "ConfigMap/a": "configured",
                            "Secret/creds": "configured"}, dry
    assert target.get_json("configmap", "a", "-n", namespace)["data"] == {"k": "1"}  # still the old value
    diffs = {d["after_header"]: d for d in dry["diff"]}
    assert "+  k: '2'" in playbook.stdout and f"ConfigMap {namespace}/a (dry run)" in diffs
    secret_diff = diffs[f"Secret {namespace}/creds (dry run)"]
    assert "password: '*** (after)'" in secret_diff["after"] and "user: '***'" in secret_diff["after"]
    for text in (playbook.output, json.dumps(dry)):
        for value in (password, changed_password):
            assert value not in text
            assert base64.b64encode(value.encode()).decode() not in text


def test_api_warnings_become_ansible_warnings(clusters, run_playbook, tmp_path, namespace):
    target = clusters[CLUSTER]
    deprecated = deployment("old", replicas=0, nodeSelector={"beta.kubernetes.io/arch": "amd64"})
    result, playbook = run_tasks(run_playbook, tmp_path, [task(
        "apply", target, namespace=namespace, definition=[ns_object(namespace), deprecated])])
    assert not result.get("failed"), result
    expected = 'spec.template.spec.nodeSelector[beta.kubernetes.io/arch]: deprecated since v1.14; ' \
               'use "kubernetes.io/arch" instead'
    assert result["warnings"] == [f"API server: {expected}"]
    assert f"[WARNING]: API server: {expected}" in playbook.output


def admission_policy(name: str, namespace_label: dict) -> list:
    """A ValidatingAdmissionPolicy (CEL, no webhook server needed) refusing ConfigMaps with a data key
    'forbidden', bound to the namespaces with ``namespace_label``."""
    return [
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
         "metadata": {"name": name},
         "spec": {"failurePolicy": "Fail",
                  "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                          "operations": ["CREATE", "UPDATE"],
                                                          "resources": ["configmaps"]}]},
                  "validations": [{"expression": "!has(object.data) || !('forbidden' in object.data)",
                                   "message": "data key 'forbidden' is not allowed here"}]}},
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
         "metadata": {"name": name},
         "spec": {"policyName": name, "validationActions": ["Deny"],
                  "matchResources": {"namespaceSelector": {"matchLabels": namespace_label}}}},
    ]


def test_refusals_by_admission_and_validation_name_object_origin_and_reason(clusters, run_playbook, tmp_path,
                                                                            namespace):
    target = clusters[CLUSTER]
    policy = unique("pk-policy")
    label = {"phasekit-admission": policy}
    target.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(admission_policy(policy, label)))
    try:
        bundle = [dict(ns_object(namespace), metadata={"name": namespace, "labels": label}),
                  config_map("fine", k="v"), config_map("refused", forbidden="x"), config_map("Bad_Name", k="v")]
        deadline = time.monotonic() + 30
        while True:  # the API server takes a moment to enforce a new policy
            result, _rest = run_tasks(run_playbook, tmp_path, [task("apply", target, src="site/app.yaml",
                                                                    namespace=namespace)],
                                      files={"site/app.yaml": bundle})
            if "denied request" in result.get("msg", "") or time.monotonic() > deadline:
                break
            # the next attempt starts from nothing again: "fine" is to be created by the one that is refused
            target.kubectl("delete", "configmap", "refused", "fine", "-n", namespace, "--ignore-not-found")
            time.sleep(1)
        assert result["failed"] and result["msg"].startswith("apply failed for 2 of 4 objects: "), result
        origin = str(tmp_path / "site/app.yaml")
        assert (f"ConfigMap {namespace}/refused ({origin} document 3): invalid: configmaps \"refused\" is forbidden: "
                f"ValidatingAdmissionPolicy '{policy}' with binding '{policy}' denied request: "
                f"data key 'forbidden' is not allowed here") in result["msg"]
        assert (f"ConfigMap {namespace}/Bad_Name ({origin} document 4): invalid: ConfigMap \"Bad_Name\" is invalid: "
                f"metadata.name: Invalid value: \"Bad_Name\"") in result["msg"]
        assert actions(result)["ConfigMap/fine"] == "created"
    finally:
        target.kubectl("delete", "-f", "-", "--ignore-not-found", stdin=yaml.safe_dump_all(admission_policy(policy, label)))
