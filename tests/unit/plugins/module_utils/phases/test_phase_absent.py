"""An apply phase's ``state`` and the options that go with it, checked when the documents are read: each error
names the file, the document, the field and what was expected."""

from __future__ import annotations

import pytest
import yaml
from phase_helpers import inventory, phase

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.planning.documents import read_paths
from ansible_collections.phasekit.kube.plugins.module_utils.planning.planner import build_plan
from ansible_collections.phasekit.kube.plugins.plugin_utils.plan import executors

OLD = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "old", "namespace": "apps"}}]
WHERE = "phases/site.yaml document 2 (Phase cleanup) field spec.options: "


def build(tmp_path, options: dict):
    (tmp_path / "phases").mkdir(exist_ok=True)
    (tmp_path / "phases" / "site.yaml").write_text(yaml.safe_dump_all([
        phase("config", cluster="target", executor="apply", source=OLD),
        phase("cleanup", cluster="target", executor="apply", source=OLD, options=options)]))
    documents = read_paths(["phases/site.yaml"], str(tmp_path))
    return build_plan(documents, executors=executors(), inventory=inventory())


@pytest.mark.parametrize("options, expected", [
    ({"state": "gone"}, "value of state must be one of: present, absent, got: gone"),
    ({"state": "absent", "prune": True}, "prune deletes an ApplySet's members that left the bundle; with state: "
                                         "absent, the bundle names the objects to delete: remove prune"),
    ({"state": "absent", "wait": {"timeout": 30, "conditions": []}},
     "wait: conditions do not apply to state: absent (it waits until each object is gone); expected only timeout"),
    ({"state": "absent", "force_conflicts": True}, "force_conflicts applies to state: present only"),
    ({"cascade": "orphan"}, "cascade applies to state: absent only"),
    ({"state": "absent", "cascade": "later"}, "value of cascade must be one of: background, foreground, orphan"),
], ids=["state-present-or-absent", "absent-without-prune", "absent-waits-for-gone-only",
        "absent-without-force-conflicts", "cascade-only-when-deleting", "cascade-kubectls-values"])
def test_state_options_are_checked_when_the_plan_is_read(tmp_path, options, expected):
    with pytest.raises(PhasekitError) as error:
        build(tmp_path, options)
    assert WHERE + expected in str(error.value)


def test_a_deleting_phase_is_a_phase_like_any_other(tmp_path):
    plan = build(tmp_path, {"state": "absent", "cascade": "foreground", "wait": {"timeout": 30}})
    cleanup = next(one for one in plan.selected if one.phase.name == "cleanup")
    assert cleanup.phase.options == {"state": "absent", "cascade": "foreground", "wait": {"timeout": 30}}
