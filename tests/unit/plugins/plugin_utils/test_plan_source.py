"""A plan inside a task: relative paths start at the playbook, and validate and run refuse what cannot run."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.plugin_utils.plan import PLAN_SOURCE_SPEC, plan_for_task, spread_source

FIXTURE_PHASES = Path(__file__).resolve().parents[3] / "fixtures" / "airshipctl" / "site" / "phases"
CLUSTERS = ["ephemeral-cluster", "target-cluster"]
TASK_VARS = {"groups": {"all": CLUSTERS, "ungrouped": CLUSTERS}, "hostvars": {}}


def args(**given):
    defaults = {name: rule.get("default") for name, rule in PLAN_SOURCE_SPEC.items()}
    return {**defaults, **given}


@pytest.fixture(name="playbook_dir")
def playbook_dir_fixture(tmp_path):
    """A playbook directory holding the airshipctl phases, with entry points under elsewhere/."""
    shutil.copytree(FIXTURE_PHASES, tmp_path / "phases")
    shutil.copytree(FIXTURE_PHASES.parent / "target", tmp_path / "elsewhere" / "target")
    shutil.copytree(FIXTURE_PHASES.parent / "ephemeral", tmp_path / "elsewhere" / "ephemeral")
    return tmp_path


def plan(playbook_dir, runnable, **given):
    action = SimpleNamespace(_loader=SimpleNamespace(get_basedir=lambda: "/not/used"))
    return plan_for_task(action, args(src=["phases"], **given), {**TASK_VARS, "playbook_dir": str(playbook_dir)},
                         runnable=runnable)


def test_target_path_is_relative_to_the_playbook(playbook_dir):
    result = plan(playbook_dir, True, name="phasePlan", target_path="elsewhere")
    sources = {item.phase.full_name: item.phase.source_path for item in result.phases}
    assert sources["workers-target"] == str(playbook_dir / "elsewhere" / "target" / "workers")


# a container phase that runs on no cluster: listed, not runnable
UNSUPPORTED = {"name": "deploy-gating", "target_path": "elsewhere", "only": ["iso-cloud-init-data"]}


def test_list_and_tree_show_a_phase_that_cannot_run(playbook_dir):
    assert plan(playbook_dir, False, **UNSUPPORTED).selected[0].phase.executor == "airship:GenericContainer"


def test_validate_and_run_refuse_a_phase_that_cannot_run(playbook_dir):
    refused = (r"\(Phase iso-cloud-init-data\) field config.executorRef: "
               r"executor GenericContainer iso-cloud-init-data .* runs on no cluster")
    with pytest.raises(PhasekitError, match=refused):
        plan(playbook_dir, True, **UNSUPPORTED)


def test_clusterctl_provider_versions_are_built_from_the_target_path(playbook_dir):
    selected = plan(playbook_dir, False, name="deploy-gating", target_path="elsewhere",
                    only=["clusterctl-init-ephemeral"]).selected[0].phase
    files = selected.options["env_dirs"]["PHASEKIT_CLUSTERCTL_REPOSITORY"]
    built = files["infrastructure-metal3/v0.3.2/infrastructure-components.yaml"]
    assert built["kustomize"] == str(playbook_dir / "elsewhere" / "airshipctl/manifests/function/capm3/v0.3.2")


ROLE_DEFAULTS = {"src": ["phases"], "plan": [], "name": "", "only": [], "skip": [], "start_at": "", "target_path": "",
                 "rollout": {}}
SPREAD_DEFAULTS = {"src": ["phases"], "plan": None, "name": None, "only": [], "skip": [], "start_at": None,
                   "target_path": None, "rollout": None}


@pytest.mark.parametrize("source, spread", [
    (ROLE_DEFAULTS, SPREAD_DEFAULTS),
    ({**ROLE_DEFAULTS, "plan": [{"kind": "Phase"}]}, {**SPREAD_DEFAULTS, "src": None, "plan": [{"kind": "Phase"}]}),
    ({**ROLE_DEFAULTS, "name": "site", "only": ["a"], "skip": ["b"], "start_at": "c", "target_path": "t",
      "rollout": {"batches": [1]}},
     {**SPREAD_DEFAULTS, "name": "site", "only": ["a"], "skip": ["b"], "start_at": "c", "target_path": "t",
      "rollout": {"batches": [1]}}),
    ({"src": ["phases"], "name": None, "only": None}, SPREAD_DEFAULTS),
], ids=["empty-values-are-unset", "inline-documents-win-over-src", "every-option-given-is-kept",
        "options-left-out-are-unset"])
def test_source_spreads_into_the_plan_source_options(source, spread):
    result = spread_source({**args(), "source": source, "partial_rollout": True, "mode": "run"})
    without_source = {name: value for name, value in args().items() if name != "source"}
    assert result == {**without_source, **spread, "partial_rollout": True, "mode": "run"}


def test_source_without_documents_is_refused():
    with pytest.raises(PhasekitError, match=r"source: src \(files or directories of phase documents\) or plan"):
        spread_source({**args(), "source": {**ROLE_DEFAULTS, "src": []}})


def test_without_source_the_options_are_as_given():
    given = args(src=["phases"], name="site")
    assert spread_source(given) is given
