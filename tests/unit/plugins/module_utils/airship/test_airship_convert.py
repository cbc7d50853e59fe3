# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""airshipctl's documents written as phasekit.dev documents: the round trip and the rules, one per test."""

from __future__ import annotations

import os
import shutil
import textwrap
from pathlib import Path

import pytest
import yaml
from ansible.inventory.data import InventoryData
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import inventory_loader

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.inventory.source_refs import check_source_refs
from ansible_collections.phasekit.kube.plugins.module_utils.airship.convert import (
    INVENTORY_FILE,
    PHASES_FILE,
    PLANS_FILE,
    SITE_FILE,
    Conversion,
    check_destination,
    convert_documents,
    write_conversion,
)
from ansible_collections.phasekit.kube.plugins.module_utils.planning.documents import inline_documents, read_paths
from ansible_collections.phasekit.kube.plugins.module_utils.planning.inventory import Inventory
from ansible_collections.phasekit.kube.plugins.module_utils.planning.planner import build_plan
from ansible_collections.phasekit.kube.plugins.plugin_utils.plan import executors

SITE = Path(__file__).resolve().parents[4] / "fixtures" / "airshipctl" / "site"
E, T = "ephemeral-cluster", "target-cluster"
PLANS = ("deploy-gating", "iso")
COMPARED = ("name", "cluster", "executor", "source", "options", "parent", "level", "children")
BUNDLE = {"sops": "secrets/site-kubeconfig.enc.yaml"}   # the KubeConfig document's config, relative to the site


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


def convert(site, dest, documents=None) -> Conversion:
    """The site converted as the action does it: the bundle option anchored at the playbook (here the site)."""
    bundle = check_source_refs(BUNDLE, base_dir=str(site), where="option convert_kubeconfig_bundle")
    return convert_documents(site_documents(site) if documents is None else documents, executors(), str(dest),
                             kubeconfig_bundle=bundle)


@pytest.fixture(name="written")
def written_fixture(site):
    dest = site.parent / "converted"
    conversion = convert(site, dest)
    write_conversion(conversion, str(dest))
    return dest, conversion


def phases_of(documents, name):
    plan = build_plan(documents, executors=executors(), inventory=inventory(), name=name)
    return {planned.phase.full_name: {key: value for key, value in planned.to_dict().items() if key in COMPARED}
            for planned in plan.phases}


def test_writes_phases_plans_and_the_inventory_beneath(written):
    dest, conversion = written
    assert sorted(str(path.relative_to(dest)) for path in dest.rglob("*")) == [
        "inventory", SITE_FILE, INVENTORY_FILE, PHASES_FILE, PLANS_FILE]
    assert conversion.summary(str(dest))["files"] == [str(dest / name) for name in
                                                      (SITE_FILE, INVENTORY_FILE, PHASES_FILE, PLANS_FILE)]
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
    assert "# - iso-cloud-init-data  (not converted: executor airship:GenericContainer; see phases.yaml)" in plans
    # The reader's message names the document's path, so where the comment wraps depends on the checkout.
    unwrapped = text.replace("\n# ", " ")
    assert "has no equivalent in phasekit.kube yet" in unwrapped


def test_output_is_deterministic_block_style_and_short_lines(site, written):
    dest, _conversion = written
    again = convert(site, dest)
    for name, text in again.files.items():
        assert (dest / name).read_text(encoding="utf-8") == text
        assert [line for line in text.splitlines() if len(line) > 120] == []
        # block style (JSONPath braces and the move's parent host template aside)
        assert "{" not in text.replace("{.", "").replace("'{{ kube_parent }}'", "").replace(
            "${PHASEKIT_CLUSTERCTL_REPOSITORY}", "")
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


def clusters_inventory(config):
    """What ansible-inventory --list shows for a configuration of the clusters plugin: host vars and groups."""
    data = InventoryData()
    inventory_loader.get("phasekit.kube.clusters").parse(data, DataLoader(), str(config), cache=False)
    hidden = ("inventory_file", "inventory_dir")
    hosts = {name: {key: value for key, value in host.get_vars().items() if key not in hidden}
             for name, host in data.hosts.items()}
    groups = {name: sorted(host.name for host in group.get_hosts()) for name, group in data.groups.items()}
    return hosts, groups


def test_written_inventory_gives_the_hosts_of_the_cluster_map(site, written):
    """The plugin reading the written inventory and reading the ClusterMap itself give the same inventory."""
    dest, conversion = written
    config = site / "airship.clusters.yml"
    config.write_text(f"plugin: phasekit.kube.clusters\nairship_cluster_map:\n  - path: phases\n"
                      f"    bundle: {{sops: {BUNDLE['sops']}}}\n", encoding="utf-8")
    expected = clusters_inventory(config)
    assert clusters_inventory(dest / INVENTORY_FILE) == expected
    assert conversion.hosts == list(expected[0]) == [E, T]
    assert expected[0][T]["kube_parent"] == E
    assert expected[0][T]["kube_kubeconfig"][-1] == {"sops": str(site / BUNDLE["sops"])}
    site_file = yaml.safe_load((dest / SITE_FILE).read_text(encoding="utf-8"))
    assert site_file["clusters"][E]["kubeconfig"][-1] == {"sops": "../../site/secrets/site-kubeconfig.enc.yaml"}


def test_filesystem_paths_are_relative_to_the_site_file(tmp_path):
    """A filesystem source relative to the ClusterMap's file is written relative to the site file."""
    (tmp_path / "site" / "phases").mkdir(parents=True)
    (tmp_path / "site" / "phases" / "all.yaml").write_text(
        (SITE / "phases" / "phases.yaml").read_text(encoding="utf-8") + "---\n" + textwrap.dedent("""\
            apiVersion: airshipit.org/v1alpha1
            kind: ClusterMap
            metadata: {name: local}
            map:
              ephemeral-cluster:
                kubeconfigSources:
                  - {type: filesystem, filesystem: {path: ../kubeconfigs/ephemeral.yaml, contextName: eph}}
            """) + "---\n" + (SITE / "phases" / "executors.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    dest = tmp_path / "out"
    conversion = convert_documents(read_paths(["site/phases"], str(tmp_path)), executors(), str(dest),
                                   target_path=str(SITE))
    site_file = yaml.safe_load(conversion.files[SITE_FILE])
    expected = {"kubeconfig": {"path": "../../site/kubeconfigs/ephemeral.yaml"}, "context": "eph"}
    assert site_file == {"clusters": {E: expected}}
    assert conversion.files[INVENTORY_FILE].endswith("plugin: phasekit.kube.clusters\nsite:\n- clusters.yml\n")


def remove_cluster_map(phases: Path) -> None:
    """The site without its ClusterMap file (and without it in the phases' kustomization)."""
    (phases / "cluster-map.yaml").unlink()
    kustomization = phases / "kustomization.yaml"
    kustomization.write_text(kustomization.read_text(encoding="utf-8").replace("  - cluster-map.yaml\n", ""),
                             encoding="utf-8")


def test_without_a_cluster_map_no_inventory_is_written(site, tmp_path):
    remove_cluster_map(site / "phases")
    dest = tmp_path / "out"
    conversion = convert_documents(site_documents(site), executors(), str(dest))
    assert sorted(conversion.files) == [PHASES_FILE, PLANS_FILE]
    assert conversion.hosts is None
    summary = conversion.summary(str(dest))
    assert summary["inventory"] is None and summary["hosts"] == []


def test_bundle_sources_without_the_option_read_the_kubeconfig_document_beside_the_cluster_map(site, tmp_path):
    """As the inventory plugin reads them: a bundle source over the ClusterMap's directory, written relative."""
    conversion = convert_documents(site_documents(site), executors(), str(tmp_path / "out"))
    site_file = yaml.safe_load(conversion.files[SITE_FILE])
    assert site_file["clusters"][T]["kubeconfig"][-1] == {"bundle": os.path.relpath(site / "phases",
                                                                                    tmp_path / "out" / "inventory")}


def test_the_bundle_option_without_a_cluster_map_is_refused_and_writes_nothing(site, tmp_path):
    remove_cluster_map(site / "phases")
    with pytest.raises(PhasekitError, match="convert_kubeconfig_bundle: the documents hold no ClusterMap"):
        convert_documents(site_documents(site), executors(), str(tmp_path / "out"),
                          kubeconfig_bundle={"sops": "/site/kc.enc.yaml"})
    assert not (tmp_path / "out").exists()


def test_a_parent_outside_the_cluster_map_is_a_warning(site, tmp_path):
    """As the plugin warns (the parent may come from another inventory source); odd metadata is no crash."""
    (site / "phases" / "kustomization.yaml").unlink()  # kustomize itself refuses the odd metadata
    cluster_map = site / "phases" / "cluster-map.yaml"
    cluster_map.write_text(cluster_map.read_text(encoding="utf-8").replace(
        "  ephemeral-cluster:\n", "  ephemeral-cluster:\n    parent: bootstrap\n").replace(
        "metadata:\n", "metadata: [not, a, mapping]\nx:\n", 1), encoding="utf-8")
    conversion = convert(site, tmp_path / "out")
    assert len(conversion.warnings) == 1
    assert "parent 'bootstrap' is not a cluster of this inventory source" in conversion.warnings[0]
    assert "cluster-map.yaml document 1 field map.ephemeral-cluster" in conversion.warnings[0]


def test_a_parent_cycle_in_the_cluster_map_is_refused(site, tmp_path):
    cluster_map = site / "phases" / "cluster-map.yaml"
    cluster_map.write_text(cluster_map.read_text(encoding="utf-8").replace(
        "  ephemeral-cluster:\n", "  ephemeral-cluster:\n    parent: target-cluster\n"), encoding="utf-8")
    with pytest.raises(PhasekitError, match="parent cycle"):
        convert(site, tmp_path / "out")


@pytest.mark.parametrize("layout, message", [
    ({"inventory/hosts.yml": "all: {}\n"}, "already holds inventory/hosts.yml"),
    ({"inventory": "a file\n"}, "inventory exists and is not a directory"),
], ids=["inventory-directory-holding-yaml", "inventory-is-a-file"])
def test_the_inventory_directory_is_held_to_the_same_rule(tmp_path, layout, message):
    for name, text in layout.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    with pytest.raises(PhasekitError, match=message):
        check_destination(str(tmp_path), [SITE_FILE, INVENTORY_FILE, PHASES_FILE])


def test_a_failed_write_leaves_nothing(tmp_path):
    conversion = Conversion(files={"phases.yaml": "a\n", "phases.yaml/inventory.yml": "b\n"})
    with pytest.raises(PhasekitError, match="cannot write .*nothing written"):
        write_conversion(conversion, str(tmp_path / "out"))
    assert list(tmp_path.iterdir()) == []


def test_an_existing_empty_directory_gets_the_files(tmp_path, site):
    dest = tmp_path / "out"
    dest.mkdir()
    (dest / "README.md").write_text("kept\n", encoding="utf-8")
    write_conversion(convert(site, dest), str(dest))
    assert sorted(path.name for path in dest.iterdir()) == ["README.md", "inventory", PHASES_FILE, PLANS_FILE]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["out", "site"]   # no staging directory left
