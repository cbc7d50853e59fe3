# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""What the action tests share: an action run as Ansible runs it (task arguments in, result out)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from ansible.parsing.dataloader import DataLoader
from ansible.playbook.play_context import PlayContext

from ansible_collections.phasekit.kube.plugins.module_utils.compat import DATA_TAGGING


def action_result(action_class, name: str, args: dict, task_vars: dict | None = None) -> dict:
    """The result of the action ``action_class`` (its FQCN ``name``) run on ``args``, a failure's too."""
    task = SimpleNamespace(args=args, check_mode=False, diff=False, async_val=0, action=name)
    connection = SimpleNamespace(_shell=SimpleNamespace(tmpdir="/not/used"))
    action = action_class(task, connection, PlayContext(), DataLoader(), templar=None, shared_loader_obj=None)
    try:
        return action.run(task_vars=task_vars or {})
    except Exception as err:  # pylint: disable=broad-exception-caught  # 2.19+: a failure is raised (no Origin)
        if not DATA_TAGGING:
            raise
        return dict(err.result_contribution)


@pytest.fixture(name="run_action")
def run_action_fixture():
    """``action_result``, for tests to run an action as Ansible does."""
    return action_result
