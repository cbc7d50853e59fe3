# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Action phasekit.kube.phase_plan: phase and plan documents -> the ordered run list.

Reads no kubeconfig and contacts no cluster: the inventory is read from the
task's variables (host and group names, and ``kube_parent`` of hosts that a
``kubeconfig`` phase names), nothing else.
"""

from __future__ import annotations

import os

from ansible_collections.phasekit.kube.plugins.module_utils.bundle import has_templates, render_bundle
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.executors.registry import kind_of
from ansible_collections.phasekit.kube.plugins.module_utils.helm.chart import ChartCache
from ansible_collections.phasekit.kube.plugins.module_utils.helm.options import (
    ABSENT, HELM_OPTIONS_SPEC, helm_request, is_template, plain_values_file)
from ansible_collections.phasekit.kube.plugins.module_utils.helm.release import release_masks
from ansible_collections.phasekit.kube.plugins.module_utils.helm.run import template_release
from ansible_collections.phasekit.kube.plugins.module_utils.inventory.source_refs import check_source_refs
from ansible_collections.phasekit.kube.plugins.module_utils.kube.diff import redact
from ansible_collections.phasekit.kube.plugins.module_utils.planning import views
from ansible_collections.phasekit.kube.plugins.module_utils.planning.built_dirs import OPTION as ENV_DIRS
from ansible_collections.phasekit.kube.plugins.module_utils.planning.built_dirs import env_dirs_layout
from ansible_collections.phasekit.kube.plugins.module_utils.running.builtin import option_values
from ansible_collections.phasekit.kube.plugins.module_utils.planning.formats import CONVERT_BUNDLE_OPTION as BUNDLE_OPTION
from ansible_collections.phasekit.kube.plugins.module_utils.planning.formats import document_converter
from ansible_collections.phasekit.kube.plugins.module_utils.planning.outputs import VARIABLE as OUTPUTS_VARIABLE
from ansible_collections.phasekit.kube.plugins.module_utils.planning.outputs import OutputValues, declared_outputs
from ansible_collections.phasekit.kube.plugins.module_utils.planning.planner import Plan, PlannedPhase
from ansible_collections.phasekit.kube.plugins.module_utils.running.report import (
    check_render_dest, check_report_path, role_named, write_graph, write_rendered)
from ansible_collections.phasekit.kube.plugins.module_utils.running.runner import plan_steps
from ansible_collections.phasekit.kube.plugins.plugin_utils.action import PhasekitAction
from ansible_collections.phasekit.kube.plugins.plugin_utils.kubeconfig import AUTH_ARGUMENT_SPEC
from ansible_collections.phasekit.kube.plugins.plugin_utils.role_flow import (
    FLOW_OPTIONS,
    RoleChoices,
    plan_reading,
    role_flow,
)
from ansible_collections.phasekit.kube.plugins.module_utils.masking import scrub_secrets
from ansible_collections.phasekit.kube.plugins.plugin_utils.templates import (
    host_variables, render_template_file, vault_values)
from ansible_collections.phasekit.kube.plugins.plugin_utils.plan import (
    PLAN_SOURCE_MUTUALLY_EXCLUSIVE, PLAN_SOURCE_REQUIRED_ONE_OF, PLAN_SOURCE_SPEC, executors, plan_for_task,
    spread_source, task_base_dir, task_documents, with_job_slice)

ARGUMENT_SPEC = {**PLAN_SOURCE_SPEC, "render": {"type": "bool", "default": False},
                 "per_cluster": {"type": "bool", "default": False},
                 "runnable": {"type": "bool", "default": False},
                 "check_all": {"type": "bool", "default": False},
                 "render_helm": {"type": "bool", "default": False},
                 "render_dest": {"type": "path", "default": ""},
                 "graph_file": {"type": "path", "default": ""},
                 "convert_to": {"type": "path"},
                 "flow": {"type": "dict", "options": FLOW_OPTIONS},
                 BUNDLE_OPTION: {"type": "raw"}}
# convert_to writes every phase and plan: options that choose or show part of a plan do not apply.
NOT_WITH_CONVERT = ("name", "only", "skip", "start_at", "partial_rollout", "render", "per_cluster", "runnable",
                    "check_all", "render_helm", "render_dest", "graph_file", "flow")
ACTION_GROUP = "group/phasekit.kube.kube"
TEMPLATE_NOTE = "has templates (.j2): rendered with each cluster host's variables when the phase runs"
ABSENT_NOTE = "release_state absent: the phase uninstalls the release, nothing to render"


def connection_defaults_warning(module_defaults) -> list[str]:
    """Said once per plan (this action starts every run of the role): ``module_defaults`` that choose a cluster for the
    action group reach its single tasks, never a plan's phases, whose hosts each act on the cluster they name."""
    names = set()
    for entry in module_defaults or []:
        defaults = entry.get(ACTION_GROUP) if isinstance(entry, dict) else None
        if isinstance(defaults, dict):
            names.update(name for name in defaults if name in AUTH_ARGUMENT_SPEC)
    if not names:
        return []
    return [f"module_defaults for {ACTION_GROUP} set {', '.join(sorted(names))}: they apply to the group's single "
            "tasks (apply, wait, kube_command, kubeconfig, helm), not to a plan's phases, where each cluster host acts "
            "on its own kube_kubeconfig, kube_context, kube_host... (docs/migrating-from-kubernetes-core.md, "
            "module_defaults)"]


class ActionModule(PhasekitAction):
    ARGUMENT_SPEC = ARGUMENT_SPEC
    MUTUALLY_EXCLUSIVE = PLAN_SOURCE_MUTUALLY_EXCLUSIVE
    REQUIRED_ONE_OF = PLAN_SOURCE_REQUIRED_ONE_OF

    def execute(self, args, task_vars):
        args = with_job_slice(spread_source(args), task_vars, self.environ)
        if args["flow"] is not None:   # the role: what the plan is read for follows its plan_action
            args = {**args, **plan_reading(RoleChoices(**args["flow"]), args["partial_rollout"], args["render_dest"])}
        if args["convert_to"]:
            return self.convert(args, task_vars)
        if args[BUNDLE_OPTION] is not None:
            raise PhasekitError(f"{BUNDLE_OPTION} is for the inventory convert_to writes: give convert_to, "
                                f"or remove {BUNDLE_OPTION}")
        # where the files go, checked before the documents are read: a typo costs no rendering
        if args["graph_file"]:
            check_report_path(args["graph_file"], role_named("graph_file"), what="the graph")
        if args["render_dest"]:
            if not args["render"]:
                raise PhasekitError("render_dest (plan_render_dest) is where render writes the rendered bundles: "
                                    "give render=true (plan_action=render), or remove render_dest")
            check_render_dest(args["render_dest"], role_named("render_dest"))
        plan = plan_for_task(self, args, task_vars, runnable=args["runnable"], check_all=args["check_all"])
        result = plan_result(plan, list(task_vars.get("ansible_play_hosts") or []))
        if args["flow"] is not None:
            result["flow"] = role_flow(RoleChoices(**args["flow"]), [phase["executor"] for phase in result["phases"]],
                                       result["steps"]).to_dict()
        warnings = list(plan.warnings) + connection_defaults_warning(self._task.module_defaults)
        if warnings:
            result["warnings"] = warnings
        if args["render"]:
            result.update(self._render(args, task_vars, plan, result))
        if args["graph_file"]:
            write_graph(args["graph_file"], result["mermaid"], role_named("graph_file"))
            result["graph_file"] = args["graph_file"]
        result["tree_view"] = views.tree_view(result["tree"], result["mermaid"], result.get("graph_file"))
        return result

    def _render(self, args: dict, task_vars: dict, plan, result: dict) -> dict:
        """The selected bundles rendered (per cluster with ``per_cluster``; helm releases with ``render_helm``), and
        what the role prints of them."""
        hostvars = task_vars.get("hostvars")
        # offline: no cluster is asked for an output, each renders as known after the run
        previewed = OutputValues.previewed(declared_outputs([planned.run_entry() for planned in plan.phases]))

        def render_for(host: str):
            if hostvars is None or host not in hostvars:
                raise PhasekitError(f"host {host!r}: no variables to render its templates with")
            variables = host_variables(hostvars, host)
            if previewed.declared:
                variables = {**variables, OUTPUTS_VARIABLE: previewed.for_host(host)}
            return (lambda path: render_template_file(self._templar, path, variables, what="template"),
                    vault_values(variables))

        with ChartCache() as charts:
            helm = (lambda request: template_release(request, charts=charts, environ=self.environ)) \
                if args["render_helm"] else None
            rendered = render_bundles(plan, render_for if args["per_cluster"] else None, helm=helm)
        rendered_result = {"rendered": rendered, "rendered_yaml": views.rendered_yaml(rendered)}
        rendered_result["validated"] = views.validated_line(len(result["all_phases"]), len(result["phases"]), rendered)
        if args["render_dest"]:
            rendered_result["render_files"] = write_rendered(args["render_dest"], rendered, role_named("render_dest"))
        rendered_result["render_view"] = views.render_view(rendered_result["rendered_yaml"],
                                                           rendered_result.get("render_files"), args["render_dest"])
        return rendered_result

    def convert(self, args, task_vars):
        """Another format's documents written as phasekit.dev documents (and an inventory) in ``convert_to``.

        Check mode writes nothing and returns the same result; diff mode shows each file's content (phase
        options and kubeconfig references: nothing secret).
        """
        # imported here: only a conversion needs it. Plain data: the written YAML cannot hold Ansible's tagged strings.
        from ansible_collections.phasekit.kube.plugins.plugin_utils.kubeconfig import to_plain
        args = to_plain(args)
        given = [name for name in NOT_WITH_CONVERT if args[name]]
        if given:
            raise PhasekitError(f"convert_to writes every phase and plan of the documents: "
                                f"remove {', '.join(given)}")
        base_dir = task_base_dir(self, task_vars)
        dest = os.path.normpath(os.path.join(base_dir, args["convert_to"]))
        bundle = args[BUNDLE_OPTION]
        if bundle is not None:
            bundle = check_source_refs(bundle, base_dir=base_dir, where=f"option {BUNDLE_OPTION}")
        documents, target_path = task_documents(self, args, task_vars)
        convert = document_converter()
        if convert is None:
            raise PhasekitError("convert_to: no reader of another format's documents is installed")
        conversion = convert(documents, executors(), dest, target_path=target_path, kubeconfig_bundle=bundle)
        conversion.check(dest)
        if not self._task.check_mode:
            conversion.write(dest)
        summary = conversion.summary(dest)
        verb = "would write" if self._task.check_mode else "wrote"
        result = {"changed": True, "converted": summary, "msg": conversion.message(verb, dest)}
        if conversion.warnings:
            result["warnings"] = list(conversion.warnings)
        if self._task.diff:
            result["diff"] = [{"before_header": path, "after_header": path, "before": "",
                               "after": conversion.files[name]}
                              for name, path in zip(sorted(conversion.files), summary["files"])]
        return result


def plan_result(plan: Plan, in_play: list[str] | None = None) -> dict:
    """What the action returns: the run list, every phase of the plan, and the views of it; with the hosts in
    play (``--limit``), the batches of each rollout."""
    registry = executors()
    phases = [planned.to_dict(shown=registry) for planned in plan.selected]
    rollouts = views.rollouts_of(phases)
    batches = views.rollout_plan_lines(phases, in_play or []) if in_play is not None else []
    return {
        "changed": False,
        "plan": plan.name,
        "phases": phases,
        "steps": plan_steps(phases),
        "all_phases": [planned.to_dict(shown=registry) for planned in plan.phases],
        "table": views.list_lines(plan) + ([""] + batches if batches else []),
        "tree": views.tree_lines(plan) + batches,
        "mermaid": views.mermaid_lines(plan),
        # each rollout: its rules, its batch sizes as written ("sizes") and the clusters of each batch ("batches")
        "rollouts": [{**rollout.to_dict(), "sizes": list(rollout.rollout.batches),
                      "batches": rollout.batches(in_play or [])} for rollout in rollouts],
        "rollout_lines": batches,
        "rollout_view": views.rollout_view(batches),
    }


def render_bundles(plan: Plan, render_for=None, helm=None) -> list[dict]:
    """Each selected bundle phase's objects, rendered without a cluster, Secret values hidden; each command phase
    that builds directories (``env_dirs``): its command and the files it would build (built when it runs); with
    ``helm`` (a helm request -> its objects, ``helm template``), each helm phase's release (see ``helm_bundles``).

    A bundle with ``.j2`` manifests renders differently per cluster host: with ``render_for`` (host -> a
    function rendering one template file with that host's variables, and the values of its vault-encrypted
    variables, hidden wherever they appear) it is shown once per host of the phase; without, it is listed with
    a note and nothing is templated (no variable is read, nothing decrypted).
    """
    rendered, by_name = [], executors()
    for planned in plan.selected:
        phase = planned.phase
        if kind_of(phase.executor).renders_release and helm is not None:
            rendered.extend(helm_bundles(planned, render_for, helm))
            continue
        if kind_of(phase.executor).builds_env_dirs and phase.options.get(ENV_DIRS):
            rendered.append({"phase": planned.name, "cluster": phase.cluster,
                             "command": phase.options.get("argv") or phase.options.get("cmd"),
                             "directories": env_dirs_layout(phase.options[ENV_DIRS])})
            continue
        if phase.executor not in by_name or not by_name[phase.executor].renders_bundle or phase.source is None:
            continue
        templated = phase.source_path is not None and has_templates(phase.source_path)
        if templated and render_for is None:
            rendered.append({"phase": planned.name, "cluster": phase.cluster,
                             "source": views.source_label(phase.source), "objects": [], "note": TEMPLATE_NOTE})
            continue
        for cluster, (render_template, secrets) in ([(host, render_for(host)) for host in planned.placement.hosts]
                                                    if templated else [(phase.cluster, (None, ()))]):
            try:
                if phase.source_path is not None:
                    objects = render_bundle(src=phase.source_path, render_template=render_template)
                else:
                    objects = render_bundle(definition=phase.source)
            except PhasekitError as err:
                on = f" on cluster {cluster}" if templated else ""
                raise PhasekitError(f"phase {planned.name}{on} ({phase.origin.label()}): {err}") from None
            rendered.append({
                "phase": planned.name,
                "cluster": cluster,
                "source": views.source_label(phase.source),
                "objects": [scrub_secrets(redact(bundle_object.obj), secrets) for bundle_object in objects],
            })
    return rendered


def helm_bundles(planned: PlannedPhase, render_for, template) -> list[dict]:
    """A helm phase's release as ``helm template`` renders it (``template``: a request -> its objects), with the
    phase's values: once, or once per host of the phase when a values file is a template (``.j2``, rendered with
    that host's variables through ``render_for``). The release namespace is its ``release_namespace``, else
    ``default`` (a run uses the context's: render reads no kubeconfig). Secret values are hidden, and so are values
    held under a credential's name (``password``, ``token``...) and the host's vault-encrypted values."""
    phase = planned.phase
    values = option_values(HELM_OPTIONS_SPEC, phase.options)
    values["name"] = values["name"] or planned.name.rsplit("/", 1)[-1]
    head = {"phase": planned.name, "cluster": phase.cluster,
            **({"source": views.source_label(phase.source)} if phase.source is not None else {})}
    if values.get("release_state") == ABSENT:
        return [{**head, "objects": [], "note": ABSENT_NOTE}]
    templated = any(isinstance(path, str) and is_template(path) for path in values.get("values_files") or [])
    if templated and render_for is None:
        return [{**head, "objects": [], "note": TEMPLATE_NOTE}]
    bundles = []
    for cluster, (render_template, secrets) in ([(host, render_for(host)) for host in planned.placement.hosts]
                                                if templated else [(phase.cluster, (None, ()))]):
        def read_values_file(path: str, render_template=render_template) -> str:
            return render_template(path) if is_template(path) else plain_values_file(path)

        on = f" on cluster {cluster}" if templated else ""
        try:
            request = helm_request(values, namespace="default", where=f"phase {planned.name}",
                                   read_values_file=read_values_file)
            objects = template(request)
        except PhasekitError as err:
            raise PhasekitError(f"phase {planned.name}{on} ({phase.origin.label()}): {err}") from None
        hidden = release_masks(request).add(*secrets)
        bundles.append({**head, "cluster": cluster, "release": request.name, "namespace": request.namespace,
                        "chart": request.chart.ref if request.chart is not None else "-",
                        "objects": [hidden.scrub(redact(one.obj)) for one in objects]})
    return bundles
