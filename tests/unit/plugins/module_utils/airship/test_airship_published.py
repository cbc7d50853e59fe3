"""airshipctl's own published documents (tests/fixtures/airshipctl/published): its shared phases and executors
(manifests/phases, unchanged), its gating plan (manifests/type/gating/phases/plan.yaml, unchanged) and the test
site's metadata.yaml, read as airshipctl reads them: the site's ManifestMetadata names the phase bundle, which
kustomize builds from the type's phases, the shared phases and the phase helpers, with patches on the plan."""

from __future__ import annotations

import copy
import functools
import os
from pathlib import Path

import pytest
import yaml

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.planning import views
from ansible_collections.phasekit.kube.plugins.module_utils.planning.documents import inline_documents, read_paths
from ansible_collections.phasekit.kube.plugins.module_utils.planning.inventory import Inventory
from ansible_collections.phasekit.kube.plugins.module_utils.planning.planner import build_plan
from ansible_collections.phasekit.kube.plugins.plugin_utils.plan import executors

ROOT = Path(__file__).resolve().parents[4] / "fixtures" / "airshipctl" / "published"
MANIFESTS = ROOT / "airshipctl" / "manifests"
METADATA = "airshipctl/manifests/site/test-site/metadata.yaml"
SITE = MANIFESTS / "site" / "test-site"
E, T = "ephemeral-cluster", "target-cluster"
PINNED = os.path.expanduser("~/.cache/phasekit/bin/k8s-v1.34.4")


@pytest.fixture(autouse=True)
def kustomize_on_path(monkeypatch):
    if os.path.isdir(PINNED):
        monkeypatch.setenv("PATH", f"{PINNED}{os.pathsep}{os.environ.get('PATH', '')}")


@functools.cache
def documents():
    return read_paths([METADATA], str(ROOT))


def gating(**selection):
    inventory = Inventory(groups={"all": [E, T], "ungrouped": [E, T]}, parent_of={T: E}.get,
                          has_kubeconfig=lambda host: True)
    return build_plan(copy.deepcopy(documents()), executors=executors(), inventory=inventory,
                      name=selection.pop("name", "deploy-gating"), **selection)


def published_plan_entries() -> list[str]:
    plans = yaml.safe_load_all((MANIFESTS / "type" / "gating" / "phases" / "plan.yaml").read_text())
    return [step["name"] for step in next(plan for plan in plans if plan["metadata"]["name"] == "deploy-gating")[
        "phases"]]


def test_the_gating_plan_lists_every_entry_in_order_with_its_position_when_a_name_repeats():
    plan = gating()
    wanted = [*published_plan_entries(), "kubectl-get-pods-target"]   # the site's patch adds one at the end
    assert len(wanted) == 33 and len(set(wanted)) == 26               # four phases run several times
    assert [item.phase.full_name for item in plan.phases] == wanted
    names = [item.name for item in plan.phases]
    assert [name for name in names if name.startswith("kubectl-get-pods-target")] == [
        f"kubectl-get-pods-target#{k}" for k in range(1, 6)]
    assert "kubectl-get-pods-ephemeral#2" in names and "kubectl-wait-pods-ready-target#2" in names
    assert plan.description == "Phase plan for test-site deployment (patched by the site)"
    table = views.list_lines(plan)
    assert len(table) == 34 and table[0].split() == ["PHASE", "CLUSTER", "HOSTS", "EXECUTOR", "SOURCE", "RUN"]


def test_a_plan_needs_only_its_phases_and_validate_warns_about_the_others():
    """The shared phases hold phases this site has no entry point for (workers-ephemeral): they do not stop the
    views of the plan, and validate reports them."""
    assert gating().warnings == []
    warnings = gating(check_all=True).warnings
    assert len(warnings) == 1 and "(Phase workers-ephemeral) field config.documentEntryPoint: ephemeral/workers " \
                                  "not found" in warnings[0] and warnings[0].endswith("(not in plan deploy-gating)")
    with pytest.raises(PhasekitError, match="ephemeral/workers not found"):
        plan_of("workers-ephemeral")


def plan_of(*phases):
    """A plan of the given shared phases, added to the site's documents."""
    plan = {"apiVersion": "airshipit.org/v1alpha1", "kind": "PhasePlan", "metadata": {"name": "other"},
            "phases": [{"name": name} for name in phases]}
    inventory = Inventory(groups={"all": [E, T], "ungrouped": [E, T]}, parent_of=lambda host: None,
                          has_kubeconfig=lambda host: True)
    return build_plan(copy.deepcopy(documents()) + inline_documents([plan], str(ROOT)), executors=executors(),
                      inventory=inventory, name="other")


@pytest.mark.parametrize("phase, options", [
    ("initinfra-networking-ephemeral", {"wait": {"timeout": 1000, "conditions": [
        {"kind": "Installation.operator.tigera.io", "jsonpath": "{.status.computed}"},
        {"kind": "TigeraStatus.operator.tigera.io",
         "jsonpath": "{.status.conditions[?(@.type=='Available')].status}", "value": "True"}]},
        "applyset_adopt": "none"}),
    ("initinfra-target", {"wait": {"timeout": 2500, "poll_interval": 10.0, "conditions": [
        {"kind": "BareMetalHost.metal3.io", "jsonpath": "{.status.provisioning.state}", "value": "provisioned"}]},
        "applyset_adopt": "none"}),
    ("controlplane-ephemeral", {"wait": {"timeout": 3500, "poll_interval": 20.0, "conditions": [
        {"kind": "BareMetalHost.metal3.io", "jsonpath": "{.status.provisioning.state}", "value": "provisioned"}]},
        "applyset_adopt": "all"}),
], ids=["networking-conditions-with-a-filter", "poll-interval-and-strict-by-default", "force-adopt"])
def test_the_published_kubernetes_apply_executors_become_apply_options(phase, options):
    found = next(item for item in gating().phases if item.name == phase).phase
    assert found.options == {"selector": "airshipit.org/deploy-k8s notin (False, false)", "applyset": phase,
                             **options}


def test_the_published_clusterctl_init_builds_its_providers_from_the_repository(tmp_path, monkeypatch):
    fake = tmp_path / "clusterctl"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    found = next(item for item in gating(only=["clusterctl-init-ephemeral"], runnable=True).selected).phase
    built = found.options["env_dirs"]["PHASEKIT_CLUSTERCTL_REPOSITORY"]
    assert sorted(built) == sorted(
        f"{label}/{version}/{name}" for label, version in (("infrastructure-metal3", "v0.5.0"),
                                                           ("bootstrap-kubeadm", "v0.4.2"), ("cluster-api", "v0.4.2"),
                                                           ("control-plane-kubeadm", "v0.4.2"))
        for name in ("metadata.yaml", "bootstrap-components.yaml" if label.startswith("bootstrap")
                     else "control-plane-components.yaml" if label.startswith("control-plane")
                     else "core-components.yaml" if label == "cluster-api" else "infrastructure-components.yaml"))
    # the urls start at airshipctl's manifest target path: the directory the airshipctl repository is in
    assert built["cluster-api/v0.4.2/metadata.yaml"]["kustomize"] == str(
        ROOT / "airshipctl" / "manifests" / "function" / "capi" / "v0.4.2")
    assert "--core cluster-api:v0.4.2" in found.options["cmd"]


def programs(directory, *names):
    """Stand-ins for programs on PATH (validate checks they are there; nothing runs them)."""
    for name in names:
        (directory / name).write_text("#!/bin/sh\n")
        (directory / name).chmod(0o755)


def test_phases_without_an_equivalent_here_are_refused_by_validate_and_the_others_validate(tmp_path, monkeypatch):
    programs(tmp_path, "clusterctl", "podman")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    refused = [item.name for item in gating().phases if item.phase.not_runnable]
    # no hardware or cloud here, and containers without a cluster (virsh on the airshipctl host)
    assert refused == ["remotedirect-ephemeral", "virsh-eject-cdrom-images", "eject-virtual-media-ephemeral",
                       "power-off-ephemeral"]
    runnable = gating(skip=[item.phase.full_name for item in gating().phases if item.phase.not_runnable],
                      runnable=True)
    assert {item.phase.executor for item in runnable.selected} == {"apply", "command", "container"}
    assert len(runnable.selected) == 29
    with pytest.raises(PhasekitError, match=r"Phase remotedirect-ephemeral\) field config.executorRef: executor "
                                            r"BaremetalManager RemoteDirectEphemeral"):
        gating(only=["remotedirect-ephemeral"], runnable=True)


def test_the_site_metadata_must_name_existing_directories(tmp_path):
    site = tmp_path / "repo" / "manifests" / "site" / "s"
    site.mkdir(parents=True)
    (site / "metadata.yaml").write_text(yaml.safe_dump({
        "apiVersion": "airshipit.org/v1alpha1", "kind": "ManifestMetadata", "metadata": {"name": "m"},
        "spec": {"phase": {"path": "manifests/site/s/phases", "docEntryPointPrefix": "manifests/site/s"},
                 "inventory": {"path": "manifests/site/s/host-inventory"}}}))
    with pytest.raises(PhasekitError) as error:
        build_plan(read_paths(["repo/manifests/site/s/metadata.yaml"], str(tmp_path)), executors=executors(),
                   inventory=Inventory(groups={"all": []}, parent_of=lambda host: None,
                                       has_kubeconfig=lambda host: True))
    assert str(error.value).startswith("repo/manifests/site/s/metadata.yaml document 1 (ManifestMetadata m) field "
                                       "spec.phase.path: no directory manifests/site/s/phases above ")


@pytest.mark.parametrize("spec, where, message", [
    ({"phase": {"path": "p"}, "inventory": {"path": "i"}}, "spec.phase.docEntryPointPrefix",
     "expected a path relative to the repository, got nothing (airshipctl requires it)"),
    ({"phase": {"path": "p", "docEntryPointPrefix": "d", "prefix": "x"}, "inventory": {"path": "i"}},
     "spec.phase.prefix", "unknown field"),
], ids=["missing-prefix", "unknown-field"])
def test_a_site_metadata_of_the_wrong_shape_names_the_field(tmp_path, spec, where, message):
    (tmp_path / "metadata.yaml").write_text(yaml.safe_dump({
        "apiVersion": "airshipit.org/v1alpha1", "kind": "ManifestMetadata", "metadata": {"name": "m"}, "spec": spec}))
    with pytest.raises(PhasekitError) as error:
        build_plan(read_paths(["metadata.yaml"], str(tmp_path)), executors=executors(),
                   inventory=Inventory(groups={"all": []}, parent_of=lambda host: None,
                                       has_kubeconfig=lambda host: True))
    assert f"metadata.yaml document 1 (ManifestMetadata m) field {where}: {message}" in str(error.value)
