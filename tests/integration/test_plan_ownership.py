# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Two plans on one cluster, run as a user runs them (``ansible-playbook phasekit.kube.run``), three rounds each way.

Their prune phases name the same ApplySet in one namespace: the second plan is refused naming the first, before
anything is applied or pruned; with ``applyset_adopt: all`` it takes the set over (the first's members are pruned),
and then the first is refused. Both apply one ConfigMap without a set: the second says it is shared, and the
ConfigMap's owner marker stays the first's. Marking owners costs a re-run no request. Before this, each run pruned the other plan's objects, took the set and
flipped the marker, and both exited 0. A plan of the same documents that runs alpha's own phase shares alpha's set."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import yaml

from ansible_collections.phasekit.kube.plugins.module_utils.bundle import render_bundle
from ansible_collections.phasekit.kube.plugins.module_utils.kube.apply import (
    APPLY_OPTIONS_SPEC, UNCHANGED, apply_bundle, apply_options)
from ansible_collections.phasekit.kube.plugins.module_utils.kube.client import api_client
from ansible_collections.phasekit.kube.plugins.module_utils.kube.discovery import Discovery
from ansible_collections.phasekit.kube.plugins.module_utils.kube.ownership import PlanOwner
from ansible_collections.phasekit.kube.plugins.module_utils.kube.session import ApiSession

API = "phasekit.dev/v1alpha1"
CLUSTER = "target"
PLAN = "phasekit.kube/plan"

pytestmark = [pytest.mark.smoke]


def configmap(name: str, namespace: str, value: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace},
            "data": {"v": value}}


def write_site(root: Path, namespace: str, beta_adopt: str = "unowned") -> None:
    """Plans alpha and beta: each applies ``common`` (no set), then its own ConfigMaps into the set ``shared``."""
    def phase(name, source, **options):
        return {"apiVersion": API, "kind": "Phase", "metadata": {"name": name},
                "spec": {"cluster": CLUSTER, "executor": "apply", "source": source,
                         "options": {"namespace": namespace, **options}}}

    def plan(name, *phases):
        return {"apiVersion": API, "kind": "PhasePlan", "metadata": {"name": name}, "spec": {"phases": list(phases)}}

    documents = [
        phase("alpha-common", [configmap("common", namespace, "alpha")]),
        phase("alpha-apps", [configmap(f"alpha-{n}", namespace, "1") for n in (1, 2)], prune=True, applyset="shared"),
        phase("beta-common", [configmap("common", namespace, "beta")]),
        phase("beta-apps", [configmap(f"beta-{n}", namespace, "1") for n in (1, 2)], prune=True, applyset="shared",
              applyset_adopt=beta_adopt),
        plan("alpha", "alpha-common", "alpha-apps"),
        plan("beta", "beta-common", "beta-apps"),
        plan("alpha-apps-only", "alpha-apps"),     # runs alpha's own phase: shares its set
    ]
    (root / "phases").mkdir(parents=True, exist_ok=True)
    (root / "phases" / "site.yaml").write_text(yaml.safe_dump_all(documents))


@pytest.fixture()
def site(clusters, tmp_path):
    target = clusters[CLUSTER]
    namespace = f"phasekit-owner-{uuid.uuid4().hex[:6]}"
    target.kubectl("create", "namespace", namespace)
    root = tmp_path / "site"
    write_site(root, namespace)
    (root / "inventory.yml").write_text(yaml.safe_dump({"all": {
        "vars": {"ansible_connection": "local", "plan_record_namespace": namespace},
        "hosts": {CLUSTER: {"kube_kubeconfig": str(target.admin_kubeconfig), "kube_context": target.context}}}}))
    yield root, target, namespace
    target.kubectl("delete", "namespace", namespace, "--wait=false")


def run(root: Path, collections_path: Path, plan: str) -> tuple[int, str]:
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(collections_path), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_PYTHON_INTERPRETER": sys.executable}
    env.pop("KUBECONFIG", None)
    done = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "phasekit.kube.run", "-i",
                           "inventory.yml", "-e", f"plan_name={plan}"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    output = done.stdout + done.stderr
    assert "Traceback" not in output, output
    return done.returncode, " ".join(output.replace("[WARNING]:", " ").split())   # warnings unwrapped


def configmaps(cluster, namespace: str) -> dict:
    """name -> (its value, the plan its marker names) of the namespace's ConfigMaps but the run records."""
    items = cluster.get_json("configmaps", "-n", namespace)["items"]
    return {item["metadata"]["name"]: ((item.get("data") or {}).get("v"),
                                       (item["metadata"].get("annotations") or {}).get(PLAN))
            for item in items if item["metadata"]["name"].startswith(("alpha-", "beta-", "common"))}


def parent_owner(cluster, namespace: str) -> str:
    parent = cluster.get_json("secret", "shared", "-n", namespace)
    return parent["metadata"]["annotations"].get(PLAN)


def test_two_plans_never_fight_over_one_set_or_one_object_without_knowing_it(site, collections_path):
    root, target, namespace = site
    for round_ in range(1, 4):
        code, output = run(root, collections_path, "alpha")
        assert code == 0, (round_, output)
        code, output = run(root, collections_path, "beta")
        assert code != 0, (round_, output)
        assert (f"ApplySet secrets/shared in namespace {namespace} belongs to plan alpha (host target, since "
                in output), (round_, output)
        assert "not to plan beta (host target); nothing was applied or pruned" in output, output
        assert (f"target: ConfigMap {namespace}/common is also applied by plan alpha (host target); it stays that "
                "plan's" in output), output
        code, output = run(root, collections_path, "alpha-apps-only")
        assert code == 0 and "belongs to" not in output and "also applied" not in output, (round_, output)
        found = configmaps(target, namespace)
        # nothing of alpha's set was pruned, nothing of beta's applied; common keeps alpha's marker (beta's values:
        # both plans apply it with the same field manager, the last one's fields win)
        assert found == {"alpha-1": ("1", "alpha"), "alpha-2": ("1", "alpha"), "common": ("beta", "alpha")}, found
        assert parent_owner(target, namespace) == "alpha"

    # beta takes the set over when told to: alpha's members are pruned, and alpha is refused from then on
    write_site(root, namespace, beta_adopt="all")
    code, output = run(root, collections_path, "beta")
    assert code == 0, output
    assert f"ApplySet secrets/shared in namespace {namespace} taken over from plan alpha (host target" in output
    assert parent_owner(target, namespace) == "beta"
    for round_ in range(1, 4):
        code, output = run(root, collections_path, "alpha")
        assert code != 0 and "belongs to plan beta (host target, since " in output, (round_, output)
        assert "not to plan alpha (host target); nothing was applied or pruned" in output, output
        found = configmaps(target, namespace)
        assert found == {"beta-1": ("1", "beta"), "beta-2": ("1", "beta"), "common": ("alpha", "alpha")}, found
        code, output = run(root, collections_path, "beta")
        assert code == 0, (round_, output)
        assert configmaps(target, namespace)["common"] == ("beta", "alpha")
        assert parent_owner(target, namespace) == "beta"


def test_marking_owners_costs_an_unchanged_rerun_no_request(clusters, site):
    """The apply engine as a plan's phase calls it: the re-run of a pruned set reads the parent and one list, as a
    task outside a plan does; a plan that shares one object costs nothing more either."""
    _root, target, namespace = site
    config = yaml.safe_load(target.admin_kubeconfig.read_text())
    values = {name: spec.get("default") for name, spec in APPLY_OPTIONS_SPEC.items()}

    def applied(owner, names, **overrides) -> tuple[int, int]:
        """(objects unchanged, requests sent) of one apply."""
        options = dataclasses.replace(apply_options({**values, "concurrency": 4, "applyset": "counted", "prune": True,
                                                     **overrides}, namespace=namespace), owner=owner)
        with api_client(config) as api:
            session = ApiSession(api)
            discovery = Discovery(session)
            discovery.resolve_resource("", "configmaps")          # discovery is cached for a run, not counted
            before = session.requests
            report = apply_bundle(session, render_bundle(definition=[configmap(name, namespace, "1")
                                                                     for name in names]), options, discovery=discovery)
            assert report.failure is None, report.failure
            return report.counts()[UNCHANGED], session.requests - before

    names = [f"counted-{i}" for i in range(5)]
    applied(None, names)                                         # a set made by a task outside a plan
    assert applied(None, names) == (5, 2)                        # the parent, one LIST
    alpha = PlanOwner("alpha", CLUSTER, "2026-11-27T20:00:00Z")
    applied(alpha, names)                                        # the plan takes the set, marks its objects
    assert applied(alpha, names) == (5, 2)
    applied(alpha, ["loose"], applyset=None, prune=False)
    beta = PlanOwner("beta", CLUSTER, "2026-11-27T21:00:00Z")
    assert applied(beta, ["loose"], applyset=None, prune=False) == (1, 1)   # shared: one GET, nothing sent
