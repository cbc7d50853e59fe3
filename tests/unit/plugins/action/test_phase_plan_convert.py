# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The phase_plan action with convert_to, run as Ansible runs it (task arguments in, result out): files written,
check mode, diff mode, a refused destination, and bad input as a failed result."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.playbook.play_context import PlayContext

from ansible_collections.phasekit.kube.plugins.action.phase_plan import ActionModule

try:
    from ansible.template import trust_as_template   # ansible-core 2.19+: task arguments are tagged strings
except ImportError:
    def trust_as_template(value):
        return value

SITE = Path(__file__).resolve().parents[3] / "fixtures" / "airshipctl" / "site"
# tagged as Ansible tags a task's arguments: the written YAML must get plain strings
BUNDLE = {trust_as_template("sops"): trust_as_template("secrets/site-kubeconfig.enc.yaml")}
FILES = ["inventory/clusters.yml", "inventory/site.clusters.yml", "phases.yaml", "plans.yaml"]


@pytest.fixture(name="playbook_dir")
def playbook_dir_fixture(tmp_path):
    """A playbook directory holding airshipctl's site as site/."""
    shutil.copytree(SITE, tmp_path / "site")
    return tmp_path


def run(playbook_dir, check_mode=False, diff=False, **args):
    """The action's result for a task with ``args`` (None: not given), as the task executor would get it."""
    given = {"src": ["site/phases"], "convert_to": "converted", "convert_kubeconfig_bundle": BUNDLE, **args}
    task = SimpleNamespace(args={name: value for name, value in given.items() if value is not None},
                           check_mode=check_mode, diff=diff, async_val=0, action="phasekit.kube.phase_plan")
    connection = SimpleNamespace(_shell=SimpleNamespace(tmpdir="/not/used"))
    action = ActionModule(task, connection, PlayContext(), DataLoader(), templar=None, shared_loader_obj=None)
    return action.run(task_vars={"playbook_dir": str(playbook_dir)})


def written(playbook_dir):
    dest = playbook_dir / "converted"
    return sorted(str(path.relative_to(dest)) for path in dest.rglob("*") if path.is_file()) if dest.exists() else []


def test_writes_phases_plans_and_inventory(playbook_dir):
    result = run(playbook_dir)
    assert not result.get("failed"), result.get("msg")
    converted = result["converted"]
    dest = playbook_dir / "converted"
    assert result["changed"] is True
    assert written(playbook_dir) == FILES
    assert converted["files"] == [str(dest / name) for name in FILES]
    assert converted["inventory"] == str(dest / "inventory" / "site.clusters.yml")
    assert converted["hosts"] == ["ephemeral-cluster", "target-cluster"]
    assert result["msg"].startswith("wrote ") and "the inventory of 2 cluster(s)" in result["msg"]
    site_file = yaml.safe_load((dest / "inventory" / "clusters.yml").read_text(encoding="utf-8"))
    # the option is relative to the playbook, the written path to the site file
    assert site_file["clusters"]["target-cluster"]["kubeconfig"][-1] == {"sops": "../../" + BUNDLE["sops"]}
    assert "diff" not in result


def test_check_mode_writes_nothing_and_reports_the_same(playbook_dir):
    checked = run(playbook_dir, check_mode=True)
    assert not checked.get("failed"), checked.get("msg")
    assert written(playbook_dir) == [] and not (playbook_dir / "converted").exists()
    assert checked["changed"] is True and checked["msg"].startswith("would write ")
    done = run(playbook_dir)
    assert checked["converted"] == done["converted"]


def test_diff_mode_shows_every_file(playbook_dir):
    result = run(playbook_dir, check_mode=True, diff=True)
    dest = playbook_dir / "converted"
    assert [item["after_header"] for item in result["diff"]] == [str(dest / name) for name in FILES]
    assert all(item["before"] == "" for item in result["diff"])
    inventory = next(item["after"] for item in result["diff"] if item["after_header"].endswith("site.clusters.yml"))
    assert "plugin: phasekit.kube.clusters" in inventory
    run(playbook_dir, diff=True)
    assert [(dest / name).read_text(encoding="utf-8") for name in FILES] == [item["after"] for item in result["diff"]]


def test_without_the_bundle_option_the_inventory_reads_the_kubeconfig_document(playbook_dir):
    result = run(playbook_dir, convert_kubeconfig_bundle=None)
    assert not result.get("failed"), result.get("msg")
    site_file = yaml.safe_load((playbook_dir / "converted" / "inventory" / "clusters.yml").read_text(encoding="utf-8"))
    assert site_file["clusters"]["target-cluster"]["kubeconfig"][-1] == {"bundle": "../../site/phases"}


def test_without_a_cluster_map_the_result_says_no_inventory(playbook_dir):
    phases = playbook_dir / "site" / "phases"
    (phases / "cluster-map.yaml").unlink()
    (phases / "kustomization.yaml").write_text(
        (phases / "kustomization.yaml").read_text(encoding="utf-8").replace("  - cluster-map.yaml\n", ""),
        encoding="utf-8")
    result = run(playbook_dir, convert_kubeconfig_bundle=None)
    assert not result.get("failed"), result.get("msg")
    assert written(playbook_dir) == ["phases.yaml", "plans.yaml"]
    assert result["converted"]["inventory"] is None and result["converted"]["hosts"] == []
    assert "no inventory (no ClusterMap among the documents)" in result["msg"]


def test_a_destination_holding_documents_is_refused(playbook_dir):
    (playbook_dir / "converted").mkdir()
    (playbook_dir / "converted" / "old.yaml").write_text("{}\n", encoding="utf-8")
    for check_mode in (True, False):
        result = run(playbook_dir, check_mode=check_mode)
        assert result["failed"] is True and result["changed"] is False
        assert "already holds old.yaml; choose a new or empty directory" in result["msg"]
    assert written(playbook_dir) == ["old.yaml"]


@pytest.mark.parametrize("change, args, message", [
    (("executorRef:", "executorRefs:"), {}, r"phases.yaml document \d+ \(Phase [\w-]+\) field config.executorRefs"),
    (None, {"convert_kubeconfig_bundle": {"content": "apiVersion: v1"}},
     "option convert_kubeconfig_bundle, source 1: inline kubeconfig content does not belong in an inventory"),
    (None, {"only": ["initinfra-target"]}, "convert_to writes every phase and plan of the documents: remove only"),
    (None, {"convert_to": None}, "convert_kubeconfig_bundle is for the inventory convert_to writes"),
], ids=["bad-phase-document", "inline-kubeconfig-refused",
        "selection-refused", "bundle-option-without-convert-to"])
def test_bad_input_is_a_failed_result_and_writes_nothing(playbook_dir, change, args, message):
    if change:
        phases = playbook_dir / "site" / "phases" / "phases.yaml"
        phases.write_text(phases.read_text(encoding="utf-8").replace(*change, 1), encoding="utf-8")
    result = run(playbook_dir, **args)
    assert result["failed"] is True and result["changed"] is False
    assert "Traceback" not in result["msg"]
    assert re.search(message, result["msg"]), result["msg"]
    assert written(playbook_dir) == []


def test_inline_documents_with_tagged_strings_are_written_as_plain_yaml(playbook_dir):
    """Documents given in the task (``plan``) arrive as Ansible's tagged strings, which YAML cannot dump as such."""
    api, apply = trust_as_template("airshipit.org/v1alpha1"), trust_as_template("KubernetesApply")
    documents = [
        {"apiVersion": api, "kind": trust_as_template("Phase"),
         "metadata": {"name": trust_as_template("initinfra-target"), "clusterName": trust_as_template("target")},
         "config": {"executorRef": {"apiVersion": api, "kind": apply, "name": trust_as_template("apply")},
                    "documentEntryPoint": trust_as_template("target/initinfra")}},
        {"apiVersion": api, "kind": apply, "metadata": {"name": trust_as_template("apply")},
         "config": {"waitOptions": {"timeout": 10}}},
    ]
    result = run(playbook_dir, src=None, plan=documents, target_path="site", convert_kubeconfig_bundle=None)
    assert not result.get("failed"), result.get("msg")
    phase = yaml.safe_load((playbook_dir / "converted" / "phases.yaml").read_text(encoding="utf-8"))
    assert phase["spec"] == {"cluster": "target", "executor": "apply", "source": "../site/target/initinfra",
                             "options": {"selector": "airshipit.org/deploy-k8s notin (False, false)",
                                         "applyset_adopt": "none", "wait": {"timeout": 10},
                                         "applyset": "initinfra-target"}}
