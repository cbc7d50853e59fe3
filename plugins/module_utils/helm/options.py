# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The options of a Helm release, named as kubernetes.core's ``helm`` module names them, and the values they make.

One spec for the ``phasekit.kube.helm`` action and for ``helm`` phases. Values
come from ``values_files`` (in order; a file whose name ends in ``.j2`` is a
template, rendered with the cluster host's variables by the caller) and then
``release_values``, merged as helm merges several ``-f`` files: mappings key by
key, anything else replaced by the later value.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field

from ansible_collections.phasekit.kube.plugins.module_utils import yaml_io
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.helm.chart import ChartSource

PRESENT, ABSENT = "present", "absent"
SET_VALUE_TYPES = {"raw": "--set", "string": "--set-string", "json": "--set-json", "file": "--set-file"}
MODE_RELEASE, MODE_APPLY = "release", "apply"
TEMPLATE_SUFFIX = ".j2"
DEFAULT_BINARY = "helm"

HELM_OPTIONS_SPEC = {
    "name": {"type": "str", "aliases": ["release_name"]},
    "chart_ref": {"type": "str"},
    "chart_repo_url": {"type": "str"},
    "chart_version": {"type": "str"},
    "release_namespace": {"type": "str", "aliases": ["namespace"]},
    "create_namespace": {"type": "bool", "default": False},
    "release_values": {"type": "dict", "default": {}, "aliases": ["values"]},
    "values_files": {"type": "list", "elements": "path", "default": []},
    "release_state": {"type": "str", "choices": [PRESENT, ABSENT], "default": PRESENT, "aliases": ["state"]},
    "wait": {"type": "bool", "default": False},
    "wait_timeout": {"type": "str"},
    "timeout": {"type": "str"},
    "atomic": {"type": "bool", "default": False},
    "history_max": {"type": "int"},
    "skip_crds": {"type": "bool", "default": False},
    "plain_http": {"type": "bool", "default": False},
    # kubernetes.core.helm's other options, same names, aliases, types and defaults
    "dependency_update": {"type": "bool", "default": False, "aliases": ["dep_up"]},
    "update_repo_cache": {"type": "bool", "default": False},
    "set_values": {"type": "list", "elements": "dict", "options": {
        "value": {"type": "str", "required": True},
        "value_type": {"type": "str", "default": "raw", "choices": list(SET_VALUE_TYPES)}}},
    "reuse_values": {"type": "bool"},
    "reset_values": {"type": "bool", "default": True},
    "reset_then_reuse_values": {"type": "bool", "default": False},
    "disable_hook": {"type": "bool", "default": False},
    "force": {"type": "bool", "default": False},
    "purge": {"type": "bool", "default": True},
    "server_side": {"type": "str", "choices": ["auto", "true", "false"]},
    "force_conflicts": {"type": "bool", "default": False},
    "post_renderer": {"type": "str"},
    "replace": {"type": "bool", "default": False},
    "insecure_skip_tls_verify": {"type": "bool", "default": False, "aliases": ["skip_tls_certs_check"]},
    "take_ownership": {"type": "bool", "default": False},
    "skip_schema_validation": {"type": "bool", "default": False},
    "helm_mode": {"type": "str", "choices": [MODE_RELEASE, MODE_APPLY], "default": MODE_RELEASE},
    "binary_path": {"type": "path"},
}
# kubernetes.core.helm's exclusions (its connection options' own are in the auth spec)
HELM_MUTUALLY_EXCLUSIVE = [["replace", "history_max"], ["wait_timeout", "timeout"], ["force", "server_side"],
                           ["force", "force_conflicts"]]
SECRET_OPTIONS = ("release_values", "values", "set_values")  # shown as *** wherever a plan shows options


@dataclass(frozen=True)
class HelmRequest:
    """One release as asked for, on one cluster: values already merged (they may hold secrets: never shown)."""

    name: str
    namespace: str
    chart: ChartSource | None                 # None: state absent needs no chart
    values: dict = field(default_factory=dict)
    state: str = PRESENT
    create_namespace: bool = False
    wait: bool = False
    wait_timeout: str | None = None
    atomic: bool = False
    history_max: int | None = None
    skip_crds: bool = False
    mode: str = MODE_RELEASE
    binary: str = DEFAULT_BINARY
    timeout: str | None = None
    set_values: tuple = ()                    # (value, value_type) pairs, helm's --set family, in order
    dependency_update: bool = False
    update_repo_cache: bool = False
    reuse_values: bool | None = None
    reset_values: bool = True
    reset_then_reuse_values: bool = False
    disable_hook: bool = False
    force: bool = False
    purge: bool = True
    server_side: str | None = None
    force_conflicts: bool = False
    post_renderer: str | None = None
    replace: bool = False
    insecure_skip_tls_verify: bool = False
    plain_http: bool = False
    take_ownership: bool = False
    skip_schema_validation: bool = False
    hide_every_value: bool = False            # a plan phase: its output goes to run records others read

    @property
    def values_digest(self) -> str:
        """A digest of what the release's values are made of: the merged values, and the --set values (with the
        content of --set-file files) when there are any."""
        if not self.set_values:
            return hashlib.sha256(canonical_json(self.values).encode("utf-8")).hexdigest()
        made_of = {"values": self.values, "set": [[value, kind, _file_digest(value) if kind == "file" else None]
                                                  for value, kind in self.set_values]}
        return hashlib.sha256(canonical_json(made_of).encode("utf-8")).hexdigest()

    @property
    def set_pairs(self) -> list:
        """(key, value) of each --set value, split at its first ``=`` as helm splits it."""
        return [(key, value) for key, _equals, value in (one.partition("=") for one, _kind in self.set_values)]

    @property
    def set_secrets(self) -> list:
        """What the --set values set (after ``key=``): they may be secrets, hidden as release values are."""
        return [value for _key, value in self.set_pairs]


def _file_digest(value: str) -> str | None:
    """The digest of the file a ``--set-file key=path`` names (a changed file changes the release)."""
    path = os.path.expanduser(value.partition("=")[2])
    try:
        with open(path, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest()
    except OSError:
        return None


def check_helm_options(values: dict) -> None:
    """What the spec cannot say: a chart is needed to install; a timeout must be a helm duration."""
    if values.get("release_state", PRESENT) == PRESENT and values.get("chart_ref") is None:
        raise PhasekitError("chart_ref is required to install a release (or give the chart as the phase's source)")
    for option in ("wait_timeout", "timeout"):
        timeout = values.get(option)
        if timeout is not None and duration_seconds(str(timeout)) is None:
            raise PhasekitError(f"{option} {timeout!r}: expected a duration such as 300s, 5m or 1h30m")
    if values.get("force_conflicts") and values.get("server_side") == "false":
        raise PhasekitError("force_conflicts requires server-side apply to be enabled and cannot be used with "
                            "server_side=false")
    if values.get("replace") and values.get("release_state") == ABSENT:
        raise PhasekitError("replace is not applicable when state is absent")
    history = values.get("history_max")
    if history is not None and history < 0:
        raise PhasekitError(f"history_max must be 0 (no limit) or more, got {history}")


def check_values_files(values: dict) -> None:
    """Each values file (paths absolute) is a file that exists, a template too: found when the documents are read,
    not when the release is installed. Paths that are templates themselves are known only then."""
    if values.get("release_state") == ABSENT:
        return  # an uninstall reads no values
    for index, path in enumerate(values.get("values_files") or []):
        if not isinstance(path, str) or "{{" in path:
            continue
        where = f"values_files[{index}] {path}"
        if not os.path.exists(path):
            raise PhasekitError(f"{where}: no such file (relative paths are relative to the phase's document)")
        if not os.path.isfile(path):
            got = "a directory" if os.path.isdir(path) else "not a regular file"
            raise PhasekitError(f"{where}: expected a YAML file of values, got {got}")


def helm_request(values: dict, *, namespace: str, read_values_file, where: str = "helm") -> HelmRequest:
    """The request ``values`` (validated options, defaults filled) describe.

    ``read_values_file(path) -> str`` reads one values file (rendering ``.j2`` templates); ``namespace`` is the
    release namespace when the options give none (the context's namespace, as helm would use).
    """
    check_helm_options(values)
    name = values.get("name")
    if not name:
        raise PhasekitError(f"{where}: name (the release name) is required")
    merged: dict = {}
    if values.get("release_state") != ABSENT:  # an uninstall needs no values (nor their templates rendered)
        for path in values.get("values_files") or []:
            merge_values(merged, _values_file(path, read_values_file))
        merge_values(merged, yaml_io.copy_data(values.get("release_values") or {}))
    chart = None
    if values.get("chart_ref") is not None:
        chart = ChartSource(ref=str(values["chart_ref"]), repo_url=values.get("chart_repo_url"),
                            version=values.get("chart_version"), plain_http=bool(values.get("plain_http")),
                            insecure_skip_tls_verify=bool(values.get("insecure_skip_tls_verify")))
    flags = {option: bool(HELM_OPTIONS_SPEC[option].get("default") if values.get(option) is None else values[option])
             for option in BOOL_FLAGS}
    return HelmRequest(
        name=str(name), namespace=values.get("release_namespace") or namespace, chart=chart, values=merged,
        state=values.get("release_state") or PRESENT, wait_timeout=values.get("wait_timeout"),
        history_max=values.get("history_max"), mode=values.get("helm_mode") or MODE_RELEASE,
        binary=values.get("binary_path") or DEFAULT_BINARY, timeout=values.get("timeout"),
        set_values=set_value_pairs(values.get("set_values")), reuse_values=values.get("reuse_values"),
        server_side=values.get("server_side"), post_renderer=values.get("post_renderer"), **flags)


# the request's yes/no options, named as the spec names them (None in a phase's options: the spec's default)
BOOL_FLAGS = ("create_namespace", "wait", "atomic", "skip_crds", "dependency_update", "update_repo_cache",
              "reset_values", "reset_then_reuse_values", "disable_hook", "force", "purge", "force_conflicts",
              "replace", "insecure_skip_tls_verify", "plain_http", "take_ownership", "skip_schema_validation")


def set_value_pairs(set_values) -> tuple:
    """``set_values`` as (value, value_type) pairs; each value is ``key=value`` as helm's --set takes it."""
    pairs = []
    for index, entry in enumerate(set_values or []):
        if not isinstance(entry, dict) or not isinstance(entry.get("value"), str):
            raise PhasekitError(f"set_values[{index}]: expected a mapping with value (key=value) and value_type")
        kind = entry.get("value_type") or "raw"
        if kind not in SET_VALUE_TYPES:
            raise PhasekitError(f"set_values[{index}].value_type {kind!r}: expected one of "
                                f"{', '.join(SET_VALUE_TYPES)}")
        pairs.append((entry["value"], kind))
    return tuple(pairs)


def _values_file(path: str, read_values_file) -> dict:
    text = read_values_file(path)
    documents = [document for document in yaml_io.load_all(text, f"values file {path}") if document is not None]
    if not documents:
        return {}
    if len(documents) > 1 or not isinstance(documents[0], dict):
        raise PhasekitError(f"values file {path}: expected one mapping of values, "
                            f"got {yaml_io.kind_of(documents[0]) if len(documents) == 1 else 'several documents'}")
    return documents[0]


def merge_values(base: dict, override: dict) -> dict:
    """``override`` merged into ``base`` in place, as helm merges values files: mappings key by key."""
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            merge_values(base[key], value)
        else:
            base[key] = value
    return base


def canonical_json(data) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)


def is_template(path: str) -> bool:
    return path.endswith(TEMPLATE_SUFFIX)


def plain_values_file(path: str) -> str:
    """A values file read as it is (the reader used where no host variables exist)."""
    if is_template(path):
        raise PhasekitError(f"values file {path}: a template ({TEMPLATE_SUFFIX}) needs a cluster host's variables")
    return yaml_io.read_document_file(path, "values file")


DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}
DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")


def duration_seconds(text: str) -> float | None:
    """Seconds in a Go duration as helm's --timeout takes it (90s, 5m, 1h30m, 1.5h); None if it is not one."""
    text = text.strip()
    if text == "0":
        return 0.0
    parts = DURATION_PART.findall(text)
    if not parts or "".join(number + unit for number, unit in parts) != text:
        return None
    return sum(float(number) * DURATION_UNITS[unit] for number, unit in parts)
