# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""A task's environment: keyword as its action's environ: Ansible's merge (parents first, the task's own last),
templated, and told apart (play or task) for provenance."""

from __future__ import annotations

import pytest
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar as AnsibleTemplar

from ansible_collections.phasekit.kube.plugins.module_utils.environ import CONTROLLER, PLAY, TASK, origin_of
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.plugin_utils.environment import (
    TaskEnvironment, merged_environment, task_environ)


class Templar:
    """Renders ``{{ name }}`` from ``variables``, as the action's templar renders with the host's variables."""

    def __init__(self, **variables):
        self.variables = variables

    def template(self, value):
        if isinstance(value, dict):
            return {key: self.template(item) for key, item in value.items()}
        if isinstance(value, str) and value.startswith("{{"):
            return self.variables[value.strip("{} ")]
        return value


class Task:
    """A post-validated task: ``environment`` merged (its own last), its parents' values unmerged."""

    def __init__(self, environment, inherited):
        self.environment = environment
        self._inherited = inherited

    def _get_parent_attribute(self, attr, omit=False):
        assert (attr, omit) == ("environment", True)
        return self._inherited


@pytest.mark.parametrize("environment, inherited, expected", [
    ({"K8S_AUTH_CONTEXT": "p"}, [{"K8S_AUTH_CONTEXT": "p"}], {"K8S_AUTH_CONTEXT": ("p", PLAY)}),
    ({"K8S_AUTH_CONTEXT": "t"}, [{"K8S_AUTH_CONTEXT": "p"}], {"K8S_AUTH_CONTEXT": ("t", TASK)}),
    ({"K8S_AUTH_CONTEXT": "t"}, [], {"K8S_AUTH_CONTEXT": ("t", TASK)}),
    ({"K8S_AUTH_CONTEXT": "c1"}, [{"K8S_AUTH_CONTEXT": "{{ inventory_hostname }}"}], {"K8S_AUTH_CONTEXT": ("c1", PLAY)}),
    ({"A": "b1", "B": "1"}, [{"A": "b0"}, {"A": "b1"}], {"A": ("b1", PLAY), "B": ("1", TASK)}),
    ([{"A": "p"}, {"A": "t"}], None, {"A": ("t", TASK)}),
    (None, None, {}),
], ids=["inherited-is-the-play-s", "own-value-is-the-task-s", "no-parents", "templated-with-the-host-s-variables",
        "later-parents-win", "unknown-parents-count-as-the-task-s", "no-environment"])
def test_task_environ(environment, inherited, expected):
    environ = task_environ(Task(environment, inherited), Templar(inventory_hostname="c1"))
    assert {name: (environ[name], origin_of(environ, name)) for name in environ.keyword} == expected


def test_the_controller_environment_fills_the_rest(monkeypatch):
    monkeypatch.setenv("PHASEKIT_TEST_VARIABLE", "controller")
    environ = task_environ(Task({"A": "t"}, []), Templar())
    assert (environ["PHASEKIT_TEST_VARIABLE"], origin_of(environ, "PHASEKIT_TEST_VARIABLE")) == ("controller", CONTROLLER)


def test_values_become_strings_as_a_process_environment_holds_them():
    assert merged_environment([{"PORT": 6443, "DEBUG": True, "UNSET": None}], Templar(), "environment") == {
        "PORT": "6443", "DEBUG": "True"}


def test_an_environment_that_is_no_mapping_is_refused():
    with pytest.raises(PhasekitError, match="environment: expected a mapping of variable names to values, got list"):
        merged_environment([["A=b"]], Templar(), "environment")


@pytest.fixture
def ansible_templar():
    return AnsibleTemplar(loader=DataLoader())


@pytest.mark.parametrize("inherited, own, host, expected", [
    ([{"K8S_AUTH_CONTEXT": "{{ inventory_hostname }}-ctx"}], {}, "c2", {"K8S_AUTH_CONTEXT": ("c2-ctx", PLAY)}),
    ([{"K8S_AUTH_CONTEXT": "{{ inventory_hostname }}"}], {"K8S_AUTH_CONTEXT": "own"}, "c2",
     {"K8S_AUTH_CONTEXT": ("own", TASK)}),
    ([{"A": "{{ region }}"}, {"B": "fixed"}], {}, "c2", {"A": ("eu", PLAY), "B": ("fixed", PLAY)}),
], ids=["inherited-templates-rendered-for-each-host", "the-task-s-own-value-stays", "later-parents-kept"])
def test_a_plan_run_templates_the_play_environment_for_each_host(ansible_templar, inherited, own, host, expected):
    environment = TaskEnvironment(inherited=tuple(inherited), play={"K8S_AUTH_CONTEXT": "c1"}, own=own)
    environ = environment.for_host(ansible_templar, {"inventory_hostname": host, "region": "eu"}, host)
    assert {name: (environ[name], origin_of(environ, name)) for name in environ.keyword} == expected


def test_without_templates_every_host_shares_the_running_host_s_environ(ansible_templar):
    environment = TaskEnvironment(inherited=({"A": "a"},), play={"A": "a"})
    assert not environment.per_host
    assert environment.for_host(ansible_templar, {}, "c2").keyword == {"A": "a"}
