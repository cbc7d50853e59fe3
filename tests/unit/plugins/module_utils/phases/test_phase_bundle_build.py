# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""A phases directory with a kustomization is built with kubectl kustomize, as airshipctl builds its phase bundle;
one without is read file by file. One rule per test."""

from __future__ import annotations

import shutil

import pytest
import yaml

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.planning.documents import read_paths
from ansible_collections.phasekit.kube.plugins.module_utils.planning.executors import executor_registry
from ansible_collections.phasekit.kube.plugins.module_utils.planning.inventory import Inventory
from ansible_collections.phasekit.kube.plugins.module_utils.planning.planner import build_plan
from ansible_collections.phasekit.kube.plugins.plugin_utils.plan import executors

from phase_helpers import inventory, phase, run_list

API = "airshipit.org/v1alpha1"
E, T = "ephemeral-cluster", "target-cluster"
ECHO = {"argv": ["true"]}
PATCHES = """
patches:
  - target: {kind: Phase, name: apps}
    patch: |-
      apiVersion: airshipit.org/v1alpha1
      kind: Phase
      metadata:
        name: apps
        clusterName: target-cluster
  - target: {kind: Phase, name: shared}
    patch: |-
      - op: replace
        path: /config/documentEntryPoint
        value: extra
"""


@pytest.fixture(autouse=True)
def kustomize_on_path():
    if not (shutil.which("kubectl") or shutil.which("kustomize")):
        raise AssertionError("kubectl or kustomize must be on PATH for these tests")


def write(path, *documents):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump_all(documents, sort_keys=False))


def airship_phase(name, entry="apps", executor="kubernetes-apply"):
    return {"apiVersion": API, "kind": "Phase", "metadata": {"name": name, "clusterName": E},
            "config": {"executorRef": {"apiVersion": API, "kind": "KubernetesApply", "name": executor},
                       "documentEntryPoint": entry}}


def airship_inventory():
    return Inventory(groups={"all": [E, T], "ungrouped": [E, T]}, parent_of=lambda host: None,
                     has_kubeconfig=lambda host: True)


def airship_site(root, kustomization="", shared=None):
    """site/phases: a kustomization over two files, a plan, and ../shared (a kustomization of its own)."""
    site = root / "site"
    for entry in ("apps", "extra"):
        (site / entry).mkdir(parents=True)
    write(site / "phases" / "phases.yaml", airship_phase("apps"), airship_phase("later"))
    write(site / "phases" / "executors.yaml", {"apiVersion": API, "kind": "KubernetesApply",
                                               "metadata": {"name": "kubernetes-apply"}, "config": {}})
    write(site / "phases" / "plan.yaml", {"apiVersion": API, "kind": "PhasePlan", "metadata": {"name": "deploy"},
                                          "phases": [{"name": "apps"}, {"name": "shared"}, {"name": "later"}]})
    write(site / "shared" / "phase.yaml", shared or airship_phase("shared"))
    (site / "shared" / "kustomization.yaml").write_text("resources: [phase.yaml]\n")
    (site / "phases" / "kustomization.yaml").write_text(
        "resources: [phases.yaml, executors.yaml, plan.yaml, ../shared]\n" + kustomization)
    return site


def airship_plan(root):
    return build_plan(read_paths(["site/phases"], str(root)), executors=executors(),
                      inventory=airship_inventory(), name="deploy")


def test_documents_from_another_directory_and_patches_are_read_as_built(tmp_path):
    site = airship_site(tmp_path, PATCHES)
    plan = airship_plan(tmp_path)
    assert [(item.phase.full_name, item.phase.cluster, item.phase.source) for item in plan.phases] == [
        ("apps", T, "apps"),            # strategic merge patch: clusterName
        ("shared", E, "extra"),         # from ../shared, JSON 6902 patch: documentEntryPoint
        ("later", E, "apps")]
    # entry points start at the parent of the built directory, whichever file a document came from
    assert plan.phases[1].phase.source_path == str(site / "extra")


def test_a_built_document_is_named_after_the_file_the_kustomization_lists_else_after_the_build(tmp_path):
    airship_site(tmp_path, PATCHES)
    origins = {item.phase.full_name: item.phase.origin.label() for item in airship_plan(tmp_path).phases}
    assert origins == {"apps": "site/phases/phases.yaml document 1 (Phase apps)",     # patched, still its file
                       "later": "site/phases/phases.yaml document 2 (Phase later)",
                       "shared": "site/phases (kubectl kustomize) document 5 (Phase shared)"}


@pytest.mark.parametrize("kustomization, shared, message", [
    ("", airship_phase("shared", executor="kubernetes-aply"),
     "site/phases (kubectl kustomize) document 5 (Phase shared) field config.executorRef: no KubernetesApply "
     "document named 'kubernetes-aply'"),
    ("namePrefix: x-\n", None,
     "site/phases (kubectl kustomize) document 4 (PhasePlan x-deploy) field phases[0].name: plan x-deploy names "
     "phase 'apps', which is not defined (did you mean 'x-apps'?)"),
], ids=["document-from-another-directory", "renamed-by-the-kustomization"])
def test_a_problem_in_a_document_not_from_a_listed_file_names_the_build(tmp_path, kustomization, shared, message):
    airship_site(tmp_path, kustomization, shared)
    with pytest.raises(PhasekitError) as error:
        build_plan(read_paths(["site/phases"], str(tmp_path)), executors=executors(), inventory=airship_inventory())
    assert message in str(error.value)


@pytest.mark.parametrize("kustomization, reason", [
    ("resources: [phases.yaml, missing.yaml]\n", "missing.yaml"),
    ("resources: [phases.yaml\n", "invalid Kustomization"),
    ("resources: [phases.yaml]\npatches:\n  - target: {kind: Phase, name: apps}\n    path: nowhere.yaml\n",
     "trouble configuring builtin PatchTransformer"),   # what it quotes withheld: it can hold Secret values
], ids=["missing-resource", "invalid-yaml", "missing-patch-file"])
def test_a_failed_build_names_the_directory_and_kustomizes_reason(tmp_path, kustomization, reason):
    write(tmp_path / "phases" / "phases.yaml", airship_phase("apps"))
    (tmp_path / "phases" / "kustomization.yaml").write_text(kustomization)
    with pytest.raises(PhasekitError) as error:
        read_paths(["phases"], str(tmp_path))
    message = str(error.value)
    assert message.startswith("kustomization phases: kubectl kustomize failed: ") or \
        message.startswith("kustomization phases: kustomize build failed: "), message
    assert reason in message and "phasekit-kustomize-" not in message     # not the private wrapper's path


def test_without_kubectl_or_kustomize_a_kustomization_is_refused_naming_it(tmp_path, monkeypatch):
    write(tmp_path / "phases" / "phases.yaml", airship_phase("apps"))
    (tmp_path / "phases" / "kustomization.yaml").write_text("resources: [phases.yaml]\n")
    monkeypatch.setenv("PATH", str(tmp_path / "no-tools"))
    with pytest.raises(PhasekitError, match=r"^kustomization phases: neither 'kubectl' nor 'kustomize' is on PATH"):
        read_paths(["phases"], str(tmp_path))


@pytest.mark.parametrize("name", ["kustomization.yaml", "kustomization.yml", "Kustomization"])
def test_phasekit_documents_are_built_too_in_the_order_the_kustomization_lists_them(tmp_path, name):
    """Phases without a plan run in document order: the build keeps the listed order, not kustomize's kind and
    name order."""
    write(tmp_path / "phases" / "zeta.yaml", phase("zeta", cluster="target", executor="command", options=ECHO))
    write(tmp_path / "phases" / "alpha.yaml", phase("alpha", cluster="target", executor="command", options=ECHO))
    write(tmp_path / "common" / "tasks.yaml", phase("mid", cluster="target", executor="tasks", source="t.yml"))
    (tmp_path / "common" / "kustomization.yaml").write_text("resources: [tasks.yaml]\n")
    (tmp_path / "phases" / "t.yml").write_text("[]\n")
    (tmp_path / "phases" / name).write_text("resources: [zeta.yaml, ../common, alpha.yaml]\n")
    plan = build_plan(read_paths(["phases"], str(tmp_path)), executors=executor_registry(), inventory=inventory())
    assert run_list(plan) == ["zeta", "mid", "alpha"]
    # a relative source starts at the built directory, whichever directory the document came from
    assert plan.phases[1].to_dict()["source"] == str(tmp_path / "phases" / "t.yml")


def test_the_kustomizations_own_sort_options_are_kept(tmp_path):
    write(tmp_path / "phases" / "zeta.yaml", phase("zeta", cluster="target", executor="command", options=ECHO))
    write(tmp_path / "phases" / "alpha.yaml", phase("alpha", cluster="target", executor="command", options=ECHO))
    (tmp_path / "phases" / "kustomization.yaml").write_text(
        "resources: [zeta.yaml, alpha.yaml]\nsortOptions:\n  order: legacy\n")
    plan = build_plan(read_paths(["phases"], str(tmp_path)), executors=executor_registry(), inventory=inventory())
    assert run_list(plan) == ["alpha", "zeta"]


def test_a_directory_without_kustomization_is_read_file_by_file_without_kustomize(tmp_path, monkeypatch):
    write(tmp_path / "phases" / "b.yaml", phase("b", cluster="target", executor="command", options=ECHO))
    write(tmp_path / "phases" / "a.yaml", phase("a", cluster="target", executor="command", options=ECHO))
    write(tmp_path / "phases" / "sub" / "kustomization.yaml", {"resources": ["missing.yaml"]})  # not read
    monkeypatch.setenv("PATH", str(tmp_path / "no-tools"))
    documents = read_paths(["phases"], str(tmp_path))
    assert [document.origin.label() for document in documents] == ["phases/a.yaml document 1",
                                                                   "phases/b.yaml document 1"]
    assert documents[0].base_dir == str(tmp_path / "phases")


def test_a_kustomization_file_given_as_a_file_is_not_built(tmp_path, monkeypatch):
    """Only a directory is built: files named in plan_src are read as they are, as before."""
    write(tmp_path / "phases" / "phases.yaml", airship_phase("apps"))
    (tmp_path / "phases" / "kustomization.yaml").write_text("resources: [phases.yaml]\n")
    monkeypatch.setenv("PATH", str(tmp_path / "no-tools"))
    documents = read_paths(["phases/phases.yaml", "phases/kustomization.yaml"], str(tmp_path))
    assert [document.origin.source for document in documents] == ["phases/phases.yaml", "phases/kustomization.yaml"]
