"""airshipctl's own phase documents (airshipit.org/v1alpha1) read as phases and plans: one rule per row."""

from __future__ import annotations

import copy
import functools
from pathlib import Path

import pytest
import yaml

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.planning import views
from ansible_collections.phasekit.kube.plugins.module_utils.planning.documents import inline_documents, read_paths
from ansible_collections.phasekit.kube.plugins.module_utils.planning.inventory import Inventory
from ansible_collections.phasekit.kube.plugins.module_utils.planning.planner import build_plan, read_catalog
from ansible_collections.phasekit.kube.plugins.module_utils.planning.problems import Problems
from ansible_collections.phasekit.kube.plugins.plugin_utils.plan import executors

FIXTURE = Path(__file__).resolve().parents[4] / "fixtures" / "airshipctl"
SITE = FIXTURE / "site"
E, T = "ephemeral-cluster", "target-cluster"
CLUSTERS = {"all": [E, T], "ungrouped": [E, T]}
API = "airshipit.org/v1alpha1"

# deploy-gating, as plan.yaml lists it: (phase, cluster, executor)
GATING = [
    ("remotedirect-ephemeral", None, "airship:BaremetalManager"),
    ("iso-cloud-init-data", None, "airship:GenericContainer"),
    ("iso-build-image", None, "airship:IsoConfiguration"),
    ("initinfra-networking-ephemeral", E, "apply"),
    ("kubectl-wait-tigera-ephemeral", E, "airship:GenericContainer"),
    ("initinfra-ephemeral", E, "apply"),
    ("kubectl-wait-deploy-ephemeral", E, "airship:GenericContainer"),
    ("clusterctl-init-ephemeral", E, "command"),
    ("kubectl-wait-pods-ephemeral", E, "airship:GenericContainer"),
    ("kubectl-pause-bmh", E, "airship:GenericContainer"),
    ("controlplane-ephemeral", E, "apply"),
    ("kubectl-wait-cluster-ephemeral", E, "airship:GenericContainer"),
    ("initinfra-networking-target", T, "apply"),
    ("kubectl-wait-tigera-target", T, "airship:GenericContainer"),
    ("initinfra-target", T, "apply"),
    ("kubectl-wait-pods-target", T, "airship:GenericContainer"),
    ("clusterctl-init-target", T, "command"),
    ("clusterctl-move", T, "command"),
    ("kubectl-get-node-target", T, "airship:GenericContainer"),
    ("workers-classification", T, "apply"),
    ("workers-target", T, "apply"),
    ("kubectl-wait-node-target", T, "airship:GenericContainer"),
    ("storage-cluster-target", T, "apply"),
    ("workload-target", T, "apply"),
    ("workload-config-target", T, "apply"),
    ("lma-infra-target", T, "apply"),
    ("lma-stack-target", T, "apply"),
    ("lma-config-target", T, "apply"),
    ("kubectl-get-pods-target", T, "airship:GenericContainer"),
    ("virsh-eject-cdrom-images", None, "airship:GenericContainer"),
    ("virsh-destroy-vms", None, "airship:GenericContainer"),
]


def inventory():
    return Inventory(groups=CLUSTERS, parent_of=lambda host: None, has_kubeconfig=lambda host: True)


@functools.cache
def site_documents():
    """The fixture's documents, built once: the phases directory has a kustomization (kubectl kustomize)."""
    return read_paths(["site/phases"], str(FIXTURE))


def site_plan(name, **kwargs):
    return build_plan(copy.deepcopy(site_documents()), executors=executors(),
                      inventory=inventory(), name=name, **kwargs)


def test_the_sites_clusterctl_init_is_a_command_phase_building_its_provider_versions():
    found = site_plan("deploy-gating", only=["clusterctl-init-ephemeral"]).selected[0].phase
    assert (found.executor, found.not_runnable) == ("command", None)
    files = found.options["env_dirs"]["PHASEKIT_CLUSTERCTL_REPOSITORY"]
    assert {path: spec["kustomize"] for path, spec in files.items()} == {
        f"infrastructure-metal3/v0.3.2/{name}": str(SITE / "airshipctl/manifests/function/capm3/v0.3.2")
        for name in ("infrastructure-components.yaml", "metadata.yaml")}


def inline_plan(documents, base_dir, **kwargs):
    return build_plan(inline_documents(documents, str(base_dir)), executors=executors(), inventory=inventory(),
                      **kwargs)


def planned(plan, name):
    return next(item for item in plan.phases if item.phase.full_name == name)


def test_phases_layout_lists_every_phase_in_plan_order_on_its_cluster():
    plan = site_plan("deploy-gating")
    assert len(plan.phases) > 30
    assert [(item.phase.full_name, item.phase.cluster, item.phase.executor) for item in plan.phases] == GATING
    assert all(item.selected for item in plan.phases)
    assert plan.description == "Phase plan for test-site deployment"
    hosts = {item.phase.full_name: item.placement.hosts for item in plan.phases}
    assert hosts["initinfra-ephemeral"] == [E] and hosts["workers-target"] == [T]
    assert hosts["virsh-destroy-vms"] == []          # no clusterName: it runs on no cluster host


def test_the_kustomized_phases_directory_keeps_the_phases_in_file_order_and_names_their_files():
    """The fixture's phases directory has a kustomization: built, its phases come in the order phases.yaml has
    them (not kustomize's kind and name order), and each document is named after the file it is in."""
    written = [document["metadata"]["name"]
               for document in yaml.safe_load_all((SITE / "phases" / "phases.yaml").read_text())]
    problems = Problems()
    catalog = read_catalog(copy.deepcopy(site_documents()), problems)
    assert not problems and len(written) > 30
    assert [phase.name for phase in catalog.phases] == written
    assert [phase.origin.label() for phase in catalog.phases][:2] == [
        "site/phases/phases.yaml document 1 (Phase remotedirect-ephemeral)",
        "site/phases/phases.yaml document 2 (Phase iso-cloud-init-data)"]
    assert all("kubectl kustomize" not in document.origin.source for document in site_documents())


def test_phase_groups_layout_runs_the_groups_phases_one_after_the_other():
    plan = site_plan("phasePlan", runnable=True)
    assert [item.phase.full_name for item in plan.phases] == [
        "initinfra-networking-ephemeral", "initinfra-ephemeral", "controlplane-ephemeral",
        "initinfra-networking-target", "initinfra-target", "workers-classification", "workers-target",
        "workload-target", "workload-config-target"]


def test_list_and_tree_show_the_airship_executor_kind():
    plan = site_plan("deploy-gating")
    table = "\n".join(views.list_lines(plan))
    assert "airship:GenericContainer" in table
    assert any("iso-cloud-init-data" in line and "airship:GenericContainer" in line for line in views.tree_lines(plan))
    # its provider versions are built into a clusterctl repository: a command phase
    assert any("clusterctl-init-target" in line and "command" in line for line in views.tree_lines(plan))


# every KubernetesApply phase: airshipctl's selector of the documents it applies, its inventory (an ApplySet
# named after the phase) and its inventory policy (strict unless the executor says otherwise)
DEPLOYED = "airshipit.org/deploy-k8s notin (False, false)"


@pytest.mark.parametrize("phase, options", [
    ("initinfra-ephemeral", {"wait": {"timeout": 2000}}),
    ("controlplane-ephemeral", {"wait": {"timeout": 3600}}),
    ("initinfra-networking-target", {}),
    ("workload-config-target", {"wait": {"timeout": 600, "poll_interval": 5.0}, "prune": True}),
    ("workers-classification", {"applyset_adopt": "unowned", "wait": {"timeout": 1200, "conditions": [
        {"kind": "BareMetalHost.metal3.io", "jsonpath": "{.status.provisioning.state}", "value": "provisioned"}]}}),
], ids=["wait-timeout", "longer-timeout", "timeout-0-does-not-wait", "prune-and-poll-interval",
        "adopt-and-jsonpath-condition"])
def test_kubernetes_apply_options_become_apply_options(phase, options):
    expected = {"selector": DEPLOYED, "applyset_adopt": "none", "applyset": phase, **options}
    assert planned(site_plan("deploy-gating"), phase).phase.options == expected


def test_entry_points_are_relative_to_the_parent_of_the_phases_directory():
    phase = planned(site_plan("phasePlan"), "workers-target").phase
    assert phase.source == "target/workers"
    assert phase.source_path == str(SITE / "target" / "workers")


def test_entry_points_are_relative_to_target_path_when_given(tmp_path):
    for item in site_plan("deploy-gating").phases:
        if item.phase.executor == "apply":
            (tmp_path / item.phase.source).mkdir(parents=True)
    plan = site_plan("deploy-gating", target_path=str(tmp_path), only=["workers-target"], runnable=True)
    assert planned(plan, "workers-target").phase.source_path == str(tmp_path / "target" / "workers")


def test_missing_entry_point_names_the_field(tmp_path):
    with pytest.raises(PhasekitError) as error:
        site_plan("phasePlan", target_path=str(tmp_path))
    assert ("site/phases/phases.yaml document 21 (Phase workers-target) field config.documentEntryPoint: "
            f"target/workers not found (looked for {tmp_path / 'target' / 'workers'})") in str(error.value)


@pytest.mark.parametrize("phase, kind, section, why", [
    ("kubectl-wait-pods-target", "GenericContainer", "genericcontainer",
     "field configRef names no ConfigMap 'kubectl-wait-pods' among the phase documents"),
    ("remotedirect-ephemeral", "BaremetalManager", "baremetalmanager-bootconfiguration-isoconfiguration",
     "has no equivalent in phasekit.kube"),
    ("iso-build-image", "IsoConfiguration", "baremetalmanager-bootconfiguration-isoconfiguration",
     "has no equivalent in phasekit.kube"),
], ids=["generic-container-without-its-config", "baremetal-manager", "iso-configuration"])
def test_executor_that_cannot_run_here_is_listed_and_refused_when_validated(phase, kind, section, why):
    listed = planned(site_plan("deploy-gating", only=[phase]), phase)
    assert listed.selected and listed.phase.executor == f"airship:{kind}"
    with pytest.raises(PhasekitError) as error:
        site_plan("deploy-gating", only=[phase], runnable=True)
    message = str(error.value)
    assert message.startswith("site/phases/phases.yaml document ")
    assert f"(Phase {phase}) field config.executorRef: executor {kind} " in message
    assert why in message
    assert f"docs/migrating-from-airshipctl.md#{section}" in message


def test_executor_without_equivalent_does_not_stop_the_phases_around_it():
    applies = [name for name, _cluster, executor in GATING if executor == "apply"]
    plan = site_plan("deploy-gating", only=applies, runnable=True)
    assert [item.phase.full_name for item in plan.selected] == applies


def test_skipped_phase_without_equivalent_is_not_refused():
    skipped = [name for name, _cluster, executor in GATING if executor != "apply"]
    plan = site_plan("deploy-gating", skip=skipped, runnable=True)
    assert len(plan.selected) == len(GATING) - len(skipped)


def airship_phase(name, executor="kubernetes-apply", entry="apps", cluster=E, kind="KubernetesApply", **config):
    metadata = {"name": name, **({"clusterName": cluster} if cluster else {})}
    return {"apiVersion": API, "kind": "Phase", "metadata": metadata,
            "config": {"executorRef": {"apiVersion": API, "kind": kind, "name": executor},
                       **({"documentEntryPoint": entry} if entry else {}), **config}}


def apply_executor(name="kubernetes-apply", **config):
    return {"apiVersion": API, "kind": "KubernetesApply", "metadata": {"name": name}, "config": config}


def airship_plan(name="deploy", **fields):
    return {"apiVersion": API, "kind": "PhasePlan", "metadata": {"name": name}, **fields}


STEPS = {"phases": [{"name": "apps"}]}


@pytest.mark.parametrize("documents, where, message", [
    ([airship_phase("apps", executor="kubernetes-aply"), apply_executor()],
     "document 1 (Phase apps) field config.executorRef",
     "no KubernetesApply document named 'kubernetes-aply' among the documents (did you mean 'kubernetes-apply'?)"),
    ([airship_phase("apps", documentEntrypoint="x"), apply_executor()],
     "document 1 (Phase apps) field config.documentEntrypoint", "unknown field (did you mean 'documentEntryPoint'?)"),
    ([airship_phase("apps", entry=None), apply_executor()],
     "document 1 (Phase apps) field config.documentEntryPoint", "missing: executor apply needs a source"),
    ([airship_phase("apps", cluster="nowhere"), apply_executor()],
     "document 1 (Phase apps) field metadata.clusterName", "'nowhere' is neither a host nor a group"),
    ([airship_phase("apps", cluster=None), apply_executor()],
     "document 1 (Phase apps) field metadata.clusterName", "missing: name the inventory host or group"),
    ([airship_phase("apps"), apply_executor(waitOptions={"timeout": "10m"})],
     "document 2 (KubernetesApply kubernetes-apply) field config.waitOptions.timeout",
     "expected a whole number of seconds, 0 or more, got a string"),
    ([airship_phase("apps"), apply_executor(pruneOptions={"prune": "yes"})],
     "document 2 (KubernetesApply kubernetes-apply) field config.pruneOptions.prune",
     "expected true or false, got a string"),
    ([airship_phase("apps"), apply_executor(waitOptions={"timeout": 60, "conditions": [
        {"kind": "Pod", "jsonPath": "{.status.conditions[?(@.type=='Ready')].status"}]})],
     "document 2 (KubernetesApply kubernetes-apply) field config.waitOptions.conditions[0].jsonPath",
     "\"{.status.conditions[?(@.type=='Ready')].status\" is not kubectl JSONPath: unclosed action"),
    ([airship_phase("apps"), apply_executor(waitOptions={"timeout": 60, "conditions": [{"jsonPath": "{.x}"}]})],
     "document 2 (KubernetesApply kubernetes-apply) field config.waitOptions.conditions[0].kind",
     "expected the kind of the objects the condition applies to, got nothing (airshipctl applies a condition "
     "without a kind to no object)"),
    ([airship_phase("apps"), apply_executor(waitOptions={"timeout": 60, "conditions": [
        {"kind": "Deployment", "jsonPath": "{.x}"}]})],
     "document 2 (KubernetesApply kubernetes-apply) field config.waitOptions.conditions[0].apiVersion",
     "with no apiVersion airshipctl applies the condition to Deployment objects of the core group, which has no "
     "Deployment, so it never applied"),
    ([airship_phase("apps"), apply_executor(waitOptions={"timeout": 60, "conditions": [
        {"apiVersion": "apps/v1", "kind": "Deployment", "jsonPath": "{.x}"},
        {"apiVersion": "apps/v1beta1", "kind": "Deployment", "jsonPath": "{.y}"}]})],
     "document 2 (KubernetesApply kubernetes-apply) field config.waitOptions.conditions[1].kind",
     "a second condition for Deployment.apps (the first is conditions[0])"),
    ([airship_phase("apps"), apply_executor(waitOptions={"timeout": 60, "conditions": [
        {"kind": "Pod", "jsonPath": "{.x}", "value": 3}]})],
     "document 2 (KubernetesApply kubernetes-apply) field config.waitOptions.conditions[0].value",
     "expected a string (the text the JSONPath must find), got a number; quote it"),
    ([airship_phase("apps"), apply_executor(kubeconfig="/tmp/kubeconfig")],
     "document 2 (KubernetesApply kubernetes-apply) field config.kubeconfig",
     "the cluster's kubeconfig comes from the inventory: set kube_kubeconfig"),
    ([airship_phase("apps"), apply_executor(inventoryPolicy="steal")],
     "document 2 (KubernetesApply kubernetes-apply) field config.inventoryPolicy",
     "expected one of strict, adopt, force-adopt (cli-utils' inventory policies), got 'steal'"),
    ([airship_phase("apps"), apply_executor(druRun="yes")],
     "document 2 (KubernetesApply kubernetes-apply) field config.druRun", "expected true or false, got a string"),
    ([airship_phase("apps", siteWideKubeconfig="yes"), apply_executor()],
     "document 1 (Phase apps) field config.siteWideKubeconfig", "expected true or false, got a string"),
    ([airship_phase("apps", validation={"kindsToSkip": "Secret"}), apply_executor()],
     "document 1 (Phase apps) field config.validation.kindsToSkip", "expected a list of strings, got a string"),
    ([airship_phase("apps", validation={"strictness": True}), apply_executor()],
     "document 1 (Phase apps) field config.validation.strictness", "unknown field (did you mean 'strict'?)"),
    ([{**airship_phase("apps"), "config": {**airship_phase("apps")["config"], "executorRef": {
        "apiVersion": API, "kind": "KubernetesApply", "name": "kubernetes-apply", "namespace": "elsewhere"}}},
      apply_executor()],
     "document 1 (Phase apps) field config.executorRef.namespace",
     "the KubernetesApply document named 'kubernetes-apply' is in namespace none, not 'elsewhere'"),
    ([{**airship_phase("apps"), "apiVersion": "airshipit.org/v1beta1"}, apply_executor()],
     "document 1 (Phase apps) field apiVersion", "unsupported apiVersion 'airshipit.org/v1beta1'"),
    ([airship_phase("apps"), apply_executor(), airship_plan(**STEPS, phaseGroups=[{"name": "g", **STEPS}])],
     "document 3 (PhasePlan deploy) field phaseGroups", "give the phases either as phases or as phaseGroups"),
    ([airship_phase("apps"), apply_executor(), airship_plan(phases=[{"name": "apps"}, {"name": "ap"}])],
     "document 3 (PhasePlan deploy) field phases[1].name", "plan deploy names phase 'ap', which is not defined"),
    ([airship_phase("apps"), apply_executor(), airship_plan(phaseGroups=[{"name": "g", "phases": [{"nam": "apps"}]}])],
     "document 3 (PhasePlan deploy) field phaseGroups[0].phases[0].name", "expected the name of a phase, got nothing"),
    ([airship_phase("apps"), apply_executor(), airship_plan(phases="apps")],
     "document 3 (PhasePlan deploy) field phases",
     "expected a non-empty list of phases ([{name: <phase>}]), got a string"),
    ([airship_phase("apps"), apply_executor(), apply_executor()],
     "document 3 (KubernetesApply kubernetes-apply) field metadata.name", "duplicate KubernetesApply name"),
], ids=["executor-not-found", "unknown-config-field", "apply-without-entry-point", "cluster-not-in-inventory",
        "apply-without-cluster", "timeout-not-seconds", "prune-not-boolean", "jsonpath-not-kubectls",
        "condition-without-kind", "condition-kind-not-in-core-without-api-version", "two-conditions-for-one-kind",
        "condition-value-not-a-string", "kubeconfig-in-executor", "inventory-policy-unknown", "dry-run-not-boolean",
        "site-wide-kubeconfig-not-boolean", "validation-kinds-not-a-list", "validation-unknown-field",
        "executor-in-another-namespace", "api-version", "plan-both-layouts",
        "plan-names-missing-phase", "group-step-without-name", "plan-phases-not-a-list", "duplicate-executor"])
def test_bad_documents_name_the_document_and_field(tmp_path, documents, where, message):
    (tmp_path / "apps").mkdir()
    with pytest.raises(PhasekitError) as error:
        inline_plan(documents, tmp_path)
    assert f"plan {where}: {message}" in str(error.value)


@pytest.mark.parametrize("entry", ["../../..", "apps/../../elsewhere", "/etc"],
                         ids=["parent-directories", "down-then-up-past-the-target", "absolute-path"])
def test_entry_point_outside_the_target_path_is_refused(tmp_path, entry):
    (tmp_path / "apps").mkdir()
    with pytest.raises(PhasekitError) as error:
        inline_plan([airship_phase("apps", entry=entry), apply_executor()], tmp_path)
    assert (f"plan document 1 (Phase apps) field config.documentEntryPoint: expected a directory inside the target "
            f"path {tmp_path}, got {entry!r}, which leads outside it") in str(error.value)


def test_entry_point_that_stays_inside_the_target_path_is_accepted(tmp_path):
    (tmp_path / "apps").mkdir()
    plan = inline_plan([airship_phase("apps", entry="apps/../apps"), apply_executor()], tmp_path)
    assert planned(plan, "apps").phase.source == "apps/../apps"


def test_bad_document_in_a_file_names_the_file(tmp_path):
    (tmp_path / "phases").mkdir()
    (tmp_path / "phases" / "phases.yaml").write_text(
        f"apiVersion: {API}\nkind: Phase\nmetadata:\n  name: apps\n  clusterName: {E}\n"
        "config:\n  executorRef: {kind: KubernetesApply, name: missing}\n  documentEntryPoint: apps\n")
    with pytest.raises(PhasekitError) as error:
        build_plan(read_paths(["phases"], str(tmp_path)), executors=executors(), inventory=inventory())
    assert str(error.value) == ("phases/phases.yaml document 1 (Phase apps) field config.executorRef: "
                                "no KubernetesApply document named 'missing' among the documents; the documents "
                                "define no KubernetesApply")


def test_cluster_map_kubeconfig_and_the_bundles_kustomization_are_accepted(tmp_path):
    (tmp_path / "apps").mkdir()
    documents = [airship_phase("apps"), apply_executor(),
                 {"apiVersion": API, "kind": "ClusterMap", "metadata": {"name": "main-map"}, "map": {}},
                 {"apiVersion": API, "kind": "KubeConfig", "metadata": {"name": "default"}, "config": {}},
                 {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "resources": []}]
    assert [item.phase.full_name for item in inline_plan(documents, tmp_path).phases] == ["apps"]


def test_plan_validation_settings_are_accepted(tmp_path):
    (tmp_path / "apps").mkdir()
    documents = [airship_phase("apps"), apply_executor(),
                 airship_plan(**STEPS, validation={"kubernetesVersion": "v1.21.2", "crdList": []})]
    assert inline_plan(documents, tmp_path, name="deploy").name == "deploy"


# airshipctl's gating plan runs its check phases again after several steps: each entry runs, in plan order.
REPEATING_PLAN = airship_plan(phases=[{"name": "check"}, {"name": "apps"}, {"name": "check"}, {"name": "apps"},
                                      {"name": "check"}])


def repeating_site(tmp_path, *extra):
    (tmp_path / "apps").mkdir(exist_ok=True)
    return [airship_phase("apps"), airship_phase("check"), apply_executor(), REPEATING_PLAN, *extra]


def test_a_phase_named_again_in_a_plan_runs_at_each_position(tmp_path):
    plan = inline_plan(repeating_site(tmp_path), tmp_path, name="deploy")
    assert [(item.name, item.phase.full_name, item.entry, item.occurrence) for item in plan.phases] == [
        ("check#1", "check", 1, 1), ("apps#1", "apps", 2, 1), ("check#2", "check", 3, 2), ("apps#2", "apps", 4, 2),
        ("check#3", "check", 5, 3)]
    assert [item.to_dict()["name"] for item in plan.selected] == ["check#1", "apps#1", "check#2", "apps#2", "check#3"]
    assert {item.to_dict()["full_name"] for item in plan.selected} == {"check", "apps"}


@pytest.mark.parametrize("selection, expected", [
    ({"only": ["check"]}, ["check#1", "check#2", "check#3"]),
    ({"skip": ["check#2"]}, ["check#1", "apps#1", "apps#2", "check#3"]),
    ({"start_at": "apps#2"}, ["apps#2", "check#3"]),
    ({"only": ["apps#1", "check#3"]}, ["apps#1", "check#3"]),
], ids=["only-every-entry", "skip-one-entry", "start-at-an-entry", "only-entries"])
def test_repeated_entries_are_selected_by_name_or_by_entry(tmp_path, selection, expected):
    plan = inline_plan(repeating_site(tmp_path), tmp_path, name="deploy", **selection)
    assert [item.name for item in plan.selected] == expected


def test_list_tree_and_graph_show_every_entry_with_its_run(tmp_path):
    plan = inline_plan(repeating_site(tmp_path), tmp_path, name="deploy", skip=["check#2"])
    table = views.list_lines(plan)
    assert [line.split()[0] for line in table[1:]] == ["check#1", "apps#1", "check#2", "apps#2", "check#3"]
    assert "no (skip)" in table[3]
    tree = views.tree_lines(plan)
    assert [line.split()[0] for line in tree[1:]] == ["check#1", "apps#1", "check#2", "apps#2", "check#3"]
    graph = "\n".join(views.mermaid_lines(plan))
    assert graph.count('["check#') == 3 and "p0 --> p1" in graph and "p3 --> p4" in graph


def test_views_of_a_plan_need_only_that_plans_phases(tmp_path):
    """A shared phase the site does not use (its entry point missing, its executor unknown) does not stop the
    views of a plan without it; validate reports it as a warning naming it; a plan that runs it fails."""
    broken = [airship_phase("unused", entry="not-here"), airship_phase("odd", executor="nowhere")]
    documents = [*repeating_site(tmp_path, *broken), airship_plan(name="other", phases=[{"name": "unused"}])]
    plan = inline_plan(copy.deepcopy(documents), tmp_path, name="deploy")
    assert plan.warnings == [] and len(plan.phases) == 5
    checked = inline_plan(copy.deepcopy(documents), tmp_path, name="deploy", check_all=True)
    assert checked.warnings == [
        "plan document 5 (Phase unused) field config.documentEntryPoint: not-here not found (looked for "
        f"{tmp_path / 'not-here'}) (not in plan deploy)",
        "plan document 6 (Phase odd) field config.executorRef: no KubernetesApply document named 'nowhere' among "
        "the documents; KubernetesApply documents defined: kubernetes-apply (not in plan deploy)"]
    with pytest.raises(PhasekitError, match=r"\(Phase unused\) field config.documentEntryPoint: not-here not found"):
        inline_plan(copy.deepcopy(documents), tmp_path, name="other")


def test_a_broken_executor_document_fails_only_the_plans_whose_phases_use_it(tmp_path):
    (tmp_path / "apps").mkdir()
    documents = [airship_phase("apps"), airship_phase("other", executor="broken"), apply_executor(),
                 apply_executor("broken", waitOptions={"timeout": "soon"}), airship_plan(phases=[{"name": "apps"}]),
                 airship_plan(name="uses-broken", phases=[{"name": "other"}])]
    assert [item.name for item in inline_plan(copy.deepcopy(documents), tmp_path, name="deploy").phases] == ["apps"]
    with pytest.raises(PhasekitError, match=r"document 4 \(KubernetesApply broken\) field config.waitOptions.timeout"):
        inline_plan(copy.deepcopy(documents), tmp_path, name="uses-broken")
