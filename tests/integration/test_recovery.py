# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Recovery after a rollout that stopped, on the two local clusters through the plan role: a rollout group (apps/web
then apps/smoke, batches [1, "100%"]) whose smoke fails on batch 1, so batch 2 never had the new apps/web.

``plan_start_at=apps/smoke`` then is refused before anything runs, pointing at ``plan_resume``; with
``plan_partial_rollout=true`` it runs as asked and batch 2 keeps the old ConfigMap (what the opt-out is for: the
operator says every batch already had apps/web); ``plan_resume=true`` brings batch 2 the new one.
"""

from __future__ import annotations

import uuid

import pytest
import yaml

API = "phasekit.dev/v1alpha1"


def phase(name, **spec):
    return {"apiVersion": API, "kind": "Phase", "metadata": {"name": name}, "spec": spec}


@pytest.fixture()
def site(clusters, tmp_path, run_playbook):
    """The site (ephemeral is batch 1, target batch 2); ``site.web(version)`` writes apps/web's ConfigMap,
    ``site.break_smoke(host)`` / ``site.fix_smoke(host)`` make apps/smoke fail there or pass, ``site(*args)`` runs
    ``phasekit.kube.run``."""
    suffix = uuid.uuid4().hex[:6]
    namespace, plan = f"pk-recover-{suffix}", f"recover-{suffix}"
    root = tmp_path / "site"
    (root / "phases").mkdir(parents=True)
    (root / "manifests").mkdir()
    smoke = f'test ! -e "{root}/broken-$PHASEKIT_HOST" || {{ echo "smoke failed on $PHASEKIT_HOST" >&2; exit 3; }}'
    (root / "phases" / "site.yaml").write_text(yaml.safe_dump_all([
        phase("apps", cluster="fleet", rollout={"batches": [1, "100%"]}, phases=[
            {"name": "web", "executor": "apply", "source": "../manifests", "options": {"namespace": namespace}},
            {"name": "smoke", "executor": "command", "options": {"cmd": smoke, "shell": True}}]),
        {"apiVersion": API, "kind": "PhasePlan", "metadata": {"name": plan}, "spec": {"phases": ["apps"]}}]))
    hosts = {name: {"kube_kubeconfig": str(cluster.admin_kubeconfig), "kube_context": name}
             for name, cluster in sorted(clusters.items())}      # ephemeral, then target: the batches' order
    (root / "inventory.yml").write_text(yaml.safe_dump({"all": {
        "vars": {"ansible_connection": "local"}, "children": {"fleet": {"hosts": hosts}}}}))

    def web(version):
        (root / "manifests" / "web.yaml").write_text(yaml.safe_dump(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web"}, "data": {"version": version}}))

    def run(*args):
        return run_playbook("- ansible.builtin.import_playbook: phasekit.kube.run\n", root / "inventory.yml",
                            "-e", f"plan={plan}", *args)

    run.web, run.namespace = web, namespace
    run.break_smoke = lambda host: (root / f"broken-{host}").write_text("")
    run.fix_smoke = lambda host: (root / f"broken-{host}").unlink()
    run.version = lambda cluster: cluster.get_json("configmap", "web", "-n", namespace)["data"]["version"]
    for cluster in clusters.values():
        cluster.kubectl("create", "namespace", namespace)
    yield run
    for name, cluster in clusters.items():
        cluster.kubectl("delete", "namespace", namespace, "--ignore-not-found", "--wait=false")
        cluster.kubectl("delete", "configmap", f"phasekit-run-{plan}.{name}", "-n", "default", "--ignore-not-found")


def test_start_at_inside_a_stopped_rollout_is_refused_and_resume_finishes_it(site, clusters):
    ephemeral, target = clusters["ephemeral"], clusters["target"]
    site.web("1")
    assert site().rc == 0
    assert site.version(ephemeral) == "1" and site.version(target) == "1"

    # the new web on batch 1, whose smoke fails: the rollout stops, batch 2 is not run
    site.web("2")
    site.break_smoke("ephemeral")
    failed = site()
    assert failed.rc != 0
    assert "phase apps/smoke failed on cluster ephemeral in batch 1 of 2 of the rollout of apps" in failed.output
    assert site.version(ephemeral) == "2" and site.version(target) == "1"

    # the smoke fixed, start_at (as the docs used to advise) is refused before anything runs
    site.fix_smoke("ephemeral")
    refused = site("-e", "plan_start_at=apps/smoke")
    assert refused.rc != 0
    assert ("plan_start_at=apps/smoke runs only part of the rollout of phase apps: apps/smoke would run batch by "
            "batch without apps/web (before start_at).") in refused.output
    assert "To recover, run with plan_resume=true instead" in refused.output
    assert "set plan_partial_rollout=true" in refused.output
    assert "[apps/smoke]" not in refused.stdout            # no phase ran
    assert site.version(target) == "1"

    # the opt-out runs what it is told: the old state stays on batch 2, which is why it is not the default
    partial = site("-e", "plan_start_at=apps/smoke", "-e", "plan_partial_rollout=true")
    assert partial.rc == 0, partial
    assert site.version(target) == "1"

    resumed = site("-e", "plan_resume=true")
    assert resumed.rc == 0, resumed
    assert site.version(ephemeral) == "2" and site.version(target) == "2"


@pytest.mark.parametrize("selection", [["-e", '{"plan_only": ["apps/smoke"]}'], ["-e", '{"plan_skip": ["apps/web"]}']],
                         ids=["only-inside-a-rollout", "skip-inside-a-rollout"])
def test_only_and_skip_inside_a_rollout_are_refused_status_is_not(site, clusters, selection):
    site.web("1")
    refused = site(*selection)
    assert refused.rc != 0
    assert "runs only part of the rollout of phase apps: apps/smoke would run batch by batch without apps/web" \
        in refused.output
    for cluster in clusters.values():
        assert cluster.kubectl("get", "configmap", "web", "-n", site.namespace, check=False).returncode != 0
    status = site("-e", "plan_action=status", *selection)    # read-only: a part of a rollout may be looked at
    assert status.rc == 0, status
