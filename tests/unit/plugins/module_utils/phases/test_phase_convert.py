# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""airshipctl's documents written as phasekit.dev documents: the round trip and the rules, one per test."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.phases.convert import (
    PHASES_FILE,
    PLANS_FILE,
    check_destination,
    convert_documents,
    write_conversion,
)
from ansible_collections.phasekit.kube.plugins.module_utils.phases.documents import inline_documents, read_paths
from ansible_collections.phasekit.kube.plugins.module_utils.phases.inventory import Inventory
from ansible_collections.phasekit.kube.plugins.module_utils.phases.planner import build_plan
from ansible_collections.phasekit.kube.plugins.plugin_utils.plan import executors

SITE = Path(__file__).resolve().parents[4] / "fixtures" / "airshipctl" / "site"
E, T = "ephemeral-cluster", "target-cluster"
PLANS = ("deploy-gating", "iso")
COMPARED = ("name", "cluster", "executor", "source", "options", "parent", "level", "children")


def inventory():
    groups = {"all": [E, T], "ungrouped": [E, T]}
    return Inventory(groups=groups, parent_of=lambda host: None, has_kubeconfig=lambda host: True)


def site_documents(site=SITE):
    return read_paths(["phases"], str(site))   # named relative to the site, as a playbook names it


@pytest.fixture(name="site")
def site_fixture(tmp_path):
    """A copy of the site beside the written files, so paths in them do not depend on the checkout's path."""
    site = tmp_path / "site"
    shutil.copytree(SITE, site)
    return site


@pytest.fixture(name="written")
def written_fixture(site):
    dest = site.parent / "converted"
    conversion = convert_documents(site_documents(site), executors(), str(dest))
    write_conversion(conversion, str(dest))
    return dest, conversion


def phases_of(documents, name):
    plan = build_plan(documents, executors=executors(), inventory=inventory(), name=name)
    return {planned.phase.full_name: {key: value for key, value in planned.to_dict().items() if key in COMPARED}
            for planned in plan.phases}


def test_writes_one_phases_file_and_one_plans_file(written):
    dest, conversion = written
    assert sorted(path.name for path in dest.iterdir()) == [PHASES_FILE, PLANS_FILE]
    assert len(conversion.phases) + len(conversion.not_converted) == 33
    assert all(item["executor"].startswith("airship:") for item in conversion.not_converted)


def test_round_trip_gives_the_same_converted_phases(site, written):
    dest, conversion = written
    converted = read_paths([str(dest)], str(dest))
    plans = conversion.plans
    assert len(plans) == 2
    for name in plans:
        original = phases_of(site_documents(site), name)
        again = phases_of(converted, name)
        expected = {full: phase for full, phase in original.items() if not phase["executor"].startswith("airship:")}
        assert again == expected
        assert list(again) == list(expected)  # same order


def test_sources_are_relative_to_the_written_files(site, written):
    dest, _conversion = written
    documents = list(yaml.safe_load_all((dest / PHASES_FILE).read_text(encoding="utf-8")))
    sources = [document["spec"]["source"] for document in documents if "source" in document["spec"]]
    assert sources and all(not source.startswith("/") for source in sources)
    assert all((dest / source).resolve().is_relative_to(site) for source in sources)


def test_phases_not_converted_are_comments_with_the_readers_message(written):
    dest, conversion = written
    text = (dest / PHASES_FILE).read_text(encoding="utf-8")
    plans = (dest / PLANS_FILE).read_text(encoding="utf-8")
    planned = {entry for plan in yaml.safe_load_all(plans) for entry in plan["spec"]["phases"]}
    for item in conversion.not_converted:
        assert f"# phase {item['name']} " in text
        assert item["name"] not in planned
    assert "# - clusterctl-init-target  (not converted: executor airship:Clusterctl; see phases.yaml)" in plans
    # The reader's message names the document's path, so where the comment wraps depends on the checkout.
    unwrapped = text.replace("\n# ", " ")
    assert "has no equivalent in phasekit.kube yet" in unwrapped
    assert "field providers[0].versions cannot be honoured by running clusterctl" in unwrapped
    assert "docs/migrating-from-airshipctl.md#clusterctl" in unwrapped


def test_output_is_deterministic_block_style_and_short_lines(site, written):
    dest, _conversion = written
    again = convert_documents(site_documents(site), executors(), str(dest))
    for name, text in again.files.items():
        assert (dest / name).read_text(encoding="utf-8") == text
        assert [line for line in text.splitlines() if len(line) > 120] == []
        # block style (JSONPath braces and the move's parent host template aside)
        assert "{" not in text.replace("{.", "").replace("'{{ kube_parent }}'", "")
    first = next(yaml.safe_load_all(again.files[PHASES_FILE]))
    assert list(first) == ["apiVersion", "kind", "metadata", "spec"]


def test_a_directory_holding_yaml_files_is_refused(tmp_path):
    (tmp_path / "old.yaml").write_text("{}\n", encoding="utf-8")
    with pytest.raises(PhasekitError, match="already holds old.yaml"):
        check_destination(str(tmp_path))


def test_an_empty_directory_is_accepted(tmp_path):
    check_destination(str(tmp_path))
    check_destination(str(tmp_path / "new"))


def test_input_with_problems_writes_nothing(tmp_path, site):
    phases = site / "phases" / "phases.yaml"
    phases.write_text(phases.read_text(encoding="utf-8").replace("executorRef:", "executorRefs:", 1),
                      encoding="utf-8")
    dest = tmp_path / "out"
    with pytest.raises(PhasekitError, match="executorRefs"):
        convert_documents(read_paths([str(site / "phases")], str(site)), executors(), str(dest))
    assert not dest.exists()


def test_a_plan_with_no_phase_converted_is_a_comment():
    api = "airshipit.org/v1alpha1"
    documents = [
        {"apiVersion": api, "kind": "Phase", "metadata": {"name": "iso", "clusterName": E},
         "config": {"executorRef": {"kind": "IsoConfiguration", "name": "isogen"}}},
        {"apiVersion": api, "kind": "Phase", "metadata": {"name": "networking", "clusterName": E},
         "config": {"executorRef": {"kind": "KubernetesApply", "name": "apply"},
                    "documentEntryPoint": "ephemeral/initinfra-networking"}},
        {"apiVersion": api, "kind": "KubernetesApply", "metadata": {"name": "apply"}, "config": {}},
        {"apiVersion": api, "kind": "IsoConfiguration", "metadata": {"name": "isogen"}, "config": {}},
        {"apiVersion": api, "kind": "PhasePlan", "metadata": {"name": "iso-only"}, "phases": [{"name": "iso"}]},
    ]
    conversion = convert_documents(inline_documents(documents, str(SITE)), executors(), "/nowhere",
                                   target_path=str(SITE))
    assert conversion.plans == [] and conversion.plans_not_converted == ["iso-only"]
    assert conversion.phases == ["networking"]
    assert conversion.files[PLANS_FILE].startswith("# plan iso-only is not converted: none of its phases can be")
    assert not list(yaml.safe_load_all(conversion.files["plans.yaml"]))  # comments only: no document


@pytest.mark.parametrize("documents, message", [
    ([{"apiVersion": "phasekit.dev/v1alpha1", "kind": "Phase", "metadata": {"name": "a"},
       "spec": {"executor": "apply"}}], "no airshipctl Phase"),
], ids=["phasekit-documents-only"])
def test_refused_inputs(documents, message):
    with pytest.raises(PhasekitError, match=message):
        convert_documents(inline_documents(documents, "/"), executors(), "/nowhere")


def test_a_phase_pulled_in_and_patched_by_the_kustomization_converts_with_its_source(site):
    """The converter reads the phases directory as built: a phase from another directory, its entry point
    patched, is written with its source relative to the written file."""
    api = "airshipit.org/v1alpha1"
    (site / "shared").mkdir()
    (site / "shared" / "phase.yaml").write_text(yaml.safe_dump(
        {"apiVersion": api, "kind": "Phase", "metadata": {"name": "shared-workers", "clusterName": T},
         "config": {"executorRef": {"apiVersion": api, "kind": "KubernetesApply", "name": "kubernetes-apply"},
                    "documentEntryPoint": "target/initinfra"}}), encoding="utf-8")
    (site / "shared" / "kustomization.yaml").write_text("resources: [phase.yaml]\n", encoding="utf-8")
    kustomization = site / "phases" / "kustomization.yaml"
    kustomization.write_text(kustomization.read_text(encoding="utf-8") + "  - ../shared\npatches:\n"
                             "  - target: {kind: Phase, name: shared-workers}\n"
                             "    patch: '[{\"op\": \"replace\", \"path\": \"/config/documentEntryPoint\", "
                             "\"value\": \"target/workers\"}]'\n",
                             encoding="utf-8")
    dest = site.parent / "converted"
    conversion = convert_documents(site_documents(site), executors(), str(dest))
    assert "shared-workers" in conversion.phases
    written = {document["metadata"]["name"]: document["spec"]
               for document in yaml.safe_load_all(conversion.files[PHASES_FILE])}
    assert written["shared-workers"]["source"] == "../site/target/workers"
    assert written["workers-target"]["source"] == "../site/target/workers"
