# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""A plan inside a task: the documents (files or inline), the inventory, the selection; one spec for both actions.

``phasekit.kube.phase_plan`` shows the plan (Secret data and command secrets
hidden); ``phasekit.kube.run_phases`` builds the same plan from the same
arguments and runs it, so the phases' real sources and options never pass
through a displayed result.
"""

from __future__ import annotations

import os

from ansible_collections.phasekit.kube.plugins.module_utils.kube.apply import APPLY_OPTIONS_SPEC, apply_options
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kube.wait import WAIT_OPTIONS_SPEC, wait_rules
from ansible_collections.phasekit.kube.plugins.module_utils.running.builtin import option_values
from ansible_collections.phasekit.kube.plugins.module_utils.planning.documents import (
    RawDocument,
    inline_documents,
    read_paths,
)
from ansible_collections.phasekit.kube.plugins.module_utils.planning.executors import executor_registry
from ansible_collections.phasekit.kube.plugins.module_utils.planning.inventory import Inventory
from ansible_collections.phasekit.kube.plugins.module_utils.planning.planner import Plan, build_plan
from ansible_collections.phasekit.kube.plugins.module_utils.awx.jobs import asked_slice_of_job
from ansible_collections.phasekit.kube.plugins.module_utils.coordination.slices import is_sliced

# Documented by the doc fragment phasekit.kube.plan_source.
PLAN_SOURCE_SPEC = {
    "src": {"type": "list", "elements": "path"},
    "plan": {"type": "raw"},
    "name": {"type": "str"},
    "only": {"type": "list", "elements": "str", "default": []},
    "skip": {"type": "list", "elements": "str", "default": []},
    "start_at": {"type": "str"},
    "target_path": {"type": "path"},
    "rollout": {"type": "dict"},
    "partial_rollout": {"type": "bool", "default": False},
    "slice": {"type": "str", "default": ""},
}
# Option source: the plan-source options in one mapping, so that the role writes its plan's documents and selection
# once (plan_source in vars/main.yml) and each task passes them whole.
SOURCE_OPTIONS = ("src", "plan", "name", "only", "skip", "start_at", "target_path", "rollout", "slice")
PLAN_SOURCE_SPEC["source"] = {"type": "dict", "options": {
    name: {key: value for key, value in PLAN_SOURCE_SPEC[name].items() if key != "default"} for name in SOURCE_OPTIONS}}
PLAN_SOURCE_MUTUALLY_EXCLUSIVE = [["src", "plan", "source"]]
PLAN_SOURCE_REQUIRED_ONE_OF = [["src", "plan", "source"]]
UNSET = (None, "", [], {})  # in source: an option left empty (the role's defaults) is not set


def spread_source(args: dict) -> dict:
    """``args`` with option ``source`` spread into the plan-source options it holds. An empty value there is unset,
    as the role's variables have it: inline documents (``plan``) win over ``src`` when there are any."""
    source = args.get("source")
    if source is None:
        return args
    given = {name: value for name, value in source.items() if value not in UNSET}
    if "plan" in given:
        given.pop("src", None)
    if "src" not in given and "plan" not in given:
        raise PhasekitError("source: src (files or directories of phase documents) or plan (the documents "
                            "themselves) is required")
    spread = {**args, **{name: None for name in SOURCE_OPTIONS}, "only": [], "skip": [], "slice": "", **given}
    spread.pop("source")
    return spread


def with_job_slice(args: dict, task_vars: dict, environ) -> dict:
    """``args`` with ``slice: awx`` replaced by this AWX job's ``k/N`` from AWX's API ("": not a slice), once per
    task, before the plan is read: the inventory of a slice lacks the other slices' hosts."""
    given = args.get("slice")
    asked = asked_slice_of_job(given, task_vars, environ)
    return args if asked == given else {**args, "slice": asked}


def executors():
    """Every executor, with the apply and wait actions' option specs for checking phase options.

    Taken from the module_utils the actions build their specs from: importing the actions would import
    the kubernetes client, which planning neither needs nor should wait for.
    """
    return executor_registry(apply_spec=dict(APPLY_OPTIONS_SPEC),
                             wait_spec={"namespace": {"type": "str"}, **WAIT_OPTIONS_SPEC},
                             apply_check=check_apply_options, wait_check=check_wait_options)


def check_apply_options(values: dict) -> None:
    """What apply would refuse at run time, refused when the plan is read: wait rules, concurrency."""
    apply_options({**option_values(APPLY_OPTIONS_SPEC, {}), **values}, namespace="default")


def check_wait_options(values: dict) -> None:
    wait_rules(option_values(WAIT_OPTIONS_SPEC, values), where="wait")


def plan_for_task(action_plugin, args: dict, task_vars: dict, runnable: bool = True, check_all: bool = False,
                  reads_only: bool = False) -> Plan:
    """The plan ``args`` (see PLAN_SOURCE_SPEC) describe, placed on the task's inventory.

    ``runnable``: the plan is to be validated or run, so a selected phase that cannot run here fails it, and so
    does a selection that runs only part of a rollout (unless ``partial_rollout``, or ``reads_only``: status).
    ``check_all``: every phase and plan of the documents is checked; the problems of those outside the plan are
    the plan's ``warnings``.
    """
    documents, target_path = task_documents(action_plugin, args, task_vars)
    inventory = Inventory.from_task_vars(task_vars, sliced=is_sliced(args.get("slice")))
    return build_plan(documents, executors=executors(), inventory=inventory,
                      name=args["name"], only=args["only"], skip=args["skip"], start_at=args["start_at"],
                      target_path=target_path, runnable=runnable, check_all=check_all,
                      rollout=args.get("rollout"),
                      whole_rollouts=runnable and not reads_only and not args.get("partial_rollout"))


def task_base_dir(action_plugin, task_vars: dict) -> str:
    """Where the task's relative paths start: the playbook's directory, whichever role or include asks."""
    return task_vars.get("playbook_dir") or action_plugin._loader.get_basedir()  # pylint: disable=protected-access


def task_documents(action_plugin, args: dict, task_vars: dict) -> tuple[list[RawDocument], str | None]:
    """The phase documents ``args`` give (files or inline) and the airshipctl target path, made absolute."""
    base_dir = task_base_dir(action_plugin, task_vars)
    if args["plan"] is not None:
        documents = inline_documents(args["plan"], base_dir)
    else:
        documents = read_paths(args["src"], base_dir)
    target_path = args.get("target_path")
    if target_path and not os.path.isabs(target_path):
        target_path = os.path.normpath(os.path.join(base_dir, target_path))
    return documents, target_path
