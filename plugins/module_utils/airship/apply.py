# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""airshipctl's ``KubernetesApply`` executor documents as the options of ``apply`` phases.

What airshipctl's applier did (``pkg/phase/executors/k8s_applier.go`` and its applier function, cli-utils with
the settings of ``config``), and what the phase does here:

- the entry point's documents, without those labelled ``airshipit.org/deploy-k8s: "false"`` (airshipctl's
  ``DeployToK8sSelector``): the apply option ``selector``;
- an inventory per phase, its id the phase's name: an ApplySet named after the phase (``applyset``);
  ``pruneOptions.prune``: ``prune``;
- ``inventoryPolicy`` (cli-utils' policy; airshipctl's default, for an empty or unknown value, is ``strict``):
  ``applyset_adopt`` (``strict`` none, ``adopt`` unowned, ``force-adopt`` all; see ``kube.ownership``);
- ``waitOptions``: ``wait`` with the timeout (0: no wait, as airshipctl's status events are then off),
  ``pollInterval`` as ``poll_interval``, and each condition as a ``jsonpath`` condition of kubectl's JSONPath on
  the objects of its apiVersion's group and kind, met when the template finds one value (equal to ``value``);
- ``druRun``, ``debug``, ``phaseName`` and ``context`` (without ``kubeconfig``): airshipctl overwrote them with
  its run's ``--dry-run``, its log level, the phase's name and the cluster map's context, so the document's
  values never took effect: accepted, and nothing to do;
- ``kubeconfig``: refused, the inventory gives each cluster's kubeconfig.
"""

from __future__ import annotations

from ansible_collections.phasekit.kube.plugins.module_utils.airship.header import check_header
from ansible_collections.phasekit.kube.plugins.module_utils.jsonpath import JSONPath, JSONPathError
from ansible_collections.phasekit.kube.plugins.module_utils.kube.ownership import INVENTORY_POLICIES
from ansible_collections.phasekit.kube.plugins.module_utils.planning.documents import RawDocument
from ansible_collections.phasekit.kube.plugins.module_utils.planning.model import unknown_fields
from ansible_collections.phasekit.kube.plugins.module_utils.planning.problems import DocumentOrigin, Problems, type_name

APPLY_KIND = "KubernetesApply"
APPLY_FIELDS = ("apiVersion", "kind", "metadata", "config")
CONFIG_FIELDS = ("waitOptions", "pruneOptions", "kubeconfig", "context", "druRun", "debug", "phaseName",
                 "inventoryPolicy")
WAIT_FIELDS = ("timeout", "pollInterval", "conditions")
CONDITION_FIELDS = ("apiVersion", "kind", "jsonPath", "value")
# airshipctl applies the entry point's documents but these (document.DeployToK8sSelector)
DEPLOY_SELECTOR = "airshipit.org/deploy-k8s notin (False, false)"
DEFAULT_POLICY = "strict"
# airshipctl matches a condition by its apiVersion's group and kind; without an apiVersion the group is the core
# group (""), whose kinds these are: a condition naming another kind without apiVersion applies to nothing.
CORE_KINDS = frozenset({
    "Binding", "ComponentStatus", "ConfigMap", "Endpoints", "Event", "LimitRange", "Namespace", "Node",
    "PersistentVolume", "PersistentVolumeClaim", "Pod", "PodTemplate", "ReplicationController", "ResourceQuota",
    "Secret", "Service", "ServiceAccount"})
# Settings airshipctl's applier replaced with its own values before use: the document's value has no effect.
OVERWRITTEN = {
    "druRun": "airshipctl used its run's --dry-run instead (here: --check, or plan_action=validate)",
    "debug": "airshipctl used its log level instead (here: ansible-playbook -v)",
    "phaseName": "airshipctl used the phase's name instead (it names the phase's ApplySet here)",
}


def apply_phase_options(document: RawDocument, problems: Problems) -> dict | None:
    """The ``apply`` options a KubernetesApply document stands for (without the phase's ApplySet name); ``None``
    when it has problems (each added to ``problems``)."""
    content, origin = document.content, document.origin
    count = len(problems.messages)
    check_header(content, APPLY_FIELDS, origin, problems)
    config = _mapping(content, "config", origin, problems)
    if config is None:
        return None
    unknown_fields(config, CONFIG_FIELDS, origin.at, problems, prefix="config.")
    _refuse_kubeconfig(config, origin, problems)
    for key in OVERWRITTEN:
        _typed(config, key, (bool,) if key != "phaseName" else (str,), origin, problems)
    options = {"selector": DEPLOY_SELECTOR, "applyset_adopt": _adopt(config, origin, problems)}
    wait = _wait_option(config, origin, problems)
    if wait:
        options["wait"] = wait
    prune_options = _mapping(config, "pruneOptions", origin, problems)
    if prune_options:
        unknown_fields(prune_options, ("prune",), origin.at, problems, prefix="config.pruneOptions.")
        if _typed(prune_options, "prune", (bool,), origin, problems, "config.pruneOptions."):
            options["prune"] = True
    return options if len(problems.messages) == count else None


def _mapping(content: dict, key: str, origin: DocumentOrigin, problems: Problems, prefix: str = ""):
    """``content[key]`` when it is a mapping; ``{}`` when absent; ``None`` (a problem) when not a mapping."""
    value = content.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        problems.add(origin.at(f"{prefix}{key}"), f"expected a mapping, got {type_name(value)}")
        return None
    return value


def _typed(config: dict, key: str, types: tuple, origin: DocumentOrigin, problems: Problems, prefix: str = "config."):
    """``config[key]`` when of one of ``types`` (a problem when given otherwise)."""
    value = config.get(key)
    if value is None:
        return None
    if not isinstance(value, types) or (bool not in types and isinstance(value, bool)):
        wanted = "true or false" if bool in types else "a string"
        problems.add(origin.at(f"{prefix}{key}"), f"expected {wanted}, got {type_name(value)}")
        return None
    return value


def _refuse_kubeconfig(config: dict, origin: DocumentOrigin, problems: Problems):
    """airshipctl used ``kubeconfig`` (with ``context``) instead of the cluster map's: the inventory decides here."""
    if config.get("kubeconfig"):
        problems.add(origin.at("config.kubeconfig"), "the cluster's kubeconfig comes from the inventory: set "
                                                     "kube_kubeconfig (and kube_context) on the host the phase's "
                                                     "metadata.clusterName names, and remove kubeconfig and context "
                                                     "here")


def _adopt(config: dict, origin: DocumentOrigin, problems: Problems) -> str:
    """``applyset_adopt`` from cli-utils' inventory policy; none given is airshipctl's default, strict."""
    policy = config.get("inventoryPolicy")
    if policy in (None, ""):
        return INVENTORY_POLICIES[DEFAULT_POLICY]
    if policy not in INVENTORY_POLICIES:
        problems.add(origin.at("config.inventoryPolicy"),
                     f"expected one of {', '.join(INVENTORY_POLICIES)} (cli-utils' inventory policies), got "
                     f"{policy!r}; airshipctl used strict for any other value: remove it or write strict")
        return INVENTORY_POLICIES[DEFAULT_POLICY]
    return INVENTORY_POLICIES[policy]


def _wait_option(config: dict, origin: DocumentOrigin, problems: Problems) -> dict | None:
    """apply's ``wait`` from ``waitOptions``: a timeout of 0 (or none) does not wait, as in airshipctl."""
    wait_options = _mapping(config, "waitOptions", origin, problems, prefix="config.")
    if not wait_options:
        return None
    unknown_fields(wait_options, WAIT_FIELDS, origin.at, problems, prefix="config.waitOptions.")
    for key in ("timeout", "pollInterval"):
        value = wait_options.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            problems.add(origin.at(f"config.waitOptions.{key}"), f"expected a whole number of seconds, 0 or more, "
                                                                 f"got {type_name(value)}")
            return None
    conditions = _conditions(wait_options.get("conditions"), origin, problems)
    timeout = wait_options.get("timeout") or 0
    if not timeout:
        return None
    wait: dict = {"timeout": timeout}
    if wait_options.get("pollInterval"):
        wait["poll_interval"] = float(wait_options["pollInterval"])
    if conditions:
        wait["conditions"] = conditions
    return wait


def _conditions(value, origin: DocumentOrigin, problems: Problems) -> list[dict]:
    """apply's wait conditions from airshipctl's: kubectl's JSONPath on the objects of one group and kind."""
    if value is None:
        return []
    if not isinstance(value, list):
        problems.add(origin.at("config.waitOptions.conditions"), f"expected a list, got {type_name(value)}")
        return []
    conditions, seen = [], {}
    for position, condition in enumerate(value):
        at = f"config.waitOptions.conditions[{position}]"
        if not isinstance(condition, dict):
            problems.add(origin.at(at), f"expected a mapping (apiVersion, kind, jsonPath, value), "
                                        f"got {type_name(condition)}")
            continue
        unknown_fields(condition, CONDITION_FIELDS, origin.at, problems, prefix=f"{at}.")
        converted = _condition(condition, at, origin, problems)
        if converted is None:
            continue
        if converted["kind"] in seen:
            problems.add(origin.at(f"{at}.kind"), f"a second condition for {converted['kind']} (the first is "
                                                  f"conditions[{seen[converted['kind']]}]): airshipctl keeps one "
                                                  "condition per group and kind and ignores the others; keep one")
            continue
        seen[converted["kind"]] = position
        conditions.append(converted)
    return conditions


def _condition(condition: dict, at: str, origin: DocumentOrigin, problems: Problems) -> dict | None:
    kind, api_version = condition.get("kind"), condition.get("apiVersion")
    if not isinstance(kind, str) or not kind:
        problems.add(origin.at(f"{at}.kind"), f"expected the kind of the objects the condition applies to, got "
                                              f"{type_name(kind)} (airshipctl applies a condition without a kind "
                                              "to no object)")
        return None
    if api_version is not None and not (isinstance(api_version, str) and api_version):
        problems.add(origin.at(f"{at}.apiVersion"), f"expected an apiVersion such as apps/v1, got "
                                                    f"{type_name(api_version)}")
        return None
    group = (api_version or "").rpartition("/")[0]
    if not group and kind not in CORE_KINDS:
        given = f"apiVersion {api_version}" if api_version else "no apiVersion"
        problems.add(origin.at(f"{at}.apiVersion"), f"with {given} airshipctl applies the condition to {kind} "
                                                    f"objects of the core group, which has no {kind}, so it never "
                                                    f"applied; give the apiVersion of {kind} (group/version)")
        return None
    template = condition.get("jsonPath")
    if not isinstance(template, str) or not template.strip():
        problems.add(origin.at(f"{at}.jsonPath"), f"expected a JSONPath template such as "
                                                  f"{{.status.phase}}, got {type_name(template)}")
        return None
    try:
        JSONPath(template)
    except JSONPathError as err:
        problems.add(origin.at(f"{at}.jsonPath"), f"{template!r} is not kubectl JSONPath: {err}")
        return None
    converted = {"kind": f"{kind}.{group}" if group else kind, "jsonpath": template}
    expected = condition.get("value")
    if expected is not None and not isinstance(expected, str):
        problems.add(origin.at(f"{at}.value"), f"expected a string (the text the JSONPath must find), got "
                                               f"{type_name(expected)}; quote it")
        return None
    if expected:
        converted["value"] = expected
    return converted
