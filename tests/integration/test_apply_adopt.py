# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""applyset_adopt on the real local clusters: cli-utils' inventory policies (airshipctl's inventoryPolicy strict,
adopt, force-adopt) mapped onto ApplySets. An object of another set is taken over only with ``all``; an object in
no set only with ``unowned`` or ``all``; an object a cli-utils inventory of the set's name owns (what airshipctl's
applier left) counts as the set's own; a refusal applies nothing."""

from __future__ import annotations

import json

from test_apply import CLUSTER, namespace, run_tasks, task  # noqa: F401  pylint: disable=unused-import

PART_OF = "applyset.kubernetes.io/part-of"


def config_map(name: str, namespace_: str, **metadata) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace_, **metadata},
            "data": {"owner": "phasekit"}}


def labels_of(cluster, name: str, namespace_: str) -> dict:
    found = cluster.kubectl("get", "configmap", name, "-n", namespace_, "-o", "json", check=False)
    return json.loads(found.stdout)["metadata"].get("labels") or {} if found.returncode == 0 else None


def test_applyset_adopt_takes_over_only_what_its_policy_allows(clusters, run_playbook, tmp_path, namespace):
    cluster = clusters[CLUSTER]
    cluster.kubectl("create", "namespace", namespace)
    # a ConfigMap of another set, one in no set, one airshipctl's applier left for an inventory named "mine"
    other = run_tasks(run_playbook, tmp_path, [task("apply", cluster, namespace=namespace, applyset="other",
                                                    definition=[config_map("theirs", namespace)])])
    assert not other[0].get("failed"), other
    cluster.kubectl("create", "-f", "-", stdin=json.dumps(config_map("loose", namespace)))
    cluster.kubectl("create", "-f", "-", stdin=json.dumps(config_map(
        "airshipped", namespace, annotations={"config.k8s.io/owning-inventory": "mine"})))
    other_set = labels_of(cluster, "theirs", namespace)[PART_OF]

    def apply(policy: str, *names: str) -> dict:
        return run_tasks(run_playbook, tmp_path, [task("apply", cluster, namespace=namespace, applyset="mine",
                                                       applyset_adopt=policy,
                                                       definition=[config_map(name, namespace) for name in names])])[0]

    strict = apply("none", "fresh", "loose", "theirs", "airshipped")
    refusal = "may not take over 2 existing object(s) (applyset_adopt: none); nothing was applied"
    assert strict.get("failed") and refusal in strict["msg"], strict
    assert "ConfigMap " + namespace + "/loose exists and is in no ApplySet" in strict["msg"]
    assert f"ConfigMap {namespace}/theirs belongs to ApplySet {other_set}" in strict["msg"]
    assert labels_of(cluster, "fresh", namespace) is None                        # nothing was applied

    adopt = apply("unowned", "fresh", "loose", "theirs", "airshipped")
    assert adopt.get("failed") and "may not take over 1 existing object(s) (applyset_adopt: unowned)" in adopt["msg"]
    assert labels_of(cluster, "theirs", namespace)[PART_OF] == other_set

    adopted = apply("unowned", "fresh", "loose", "airshipped")
    assert not adopted.get("failed"), adopted
    mine = labels_of(cluster, "fresh", namespace)[PART_OF]
    assert labels_of(cluster, "loose", namespace)[PART_OF] == mine == labels_of(cluster, "airshipped", namespace)[PART_OF]

    again = apply("none", "fresh", "loose", "airshipped")                       # strict: all of them are its own now
    assert not again.get("failed") and not again["changed"], again

    forced = apply("all", "fresh", "loose", "airshipped", "theirs")
    assert not forced.get("failed"), forced
    assert labels_of(cluster, "theirs", namespace)[PART_OF] == mine              # taken over from the other set
