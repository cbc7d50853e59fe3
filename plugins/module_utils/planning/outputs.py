# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Outputs: values a phase reads from its cluster after it ran, for later phases' templates.

A phase declares them (``spec.outputs``); each is one object's field, read with kubectl's JSONPath
(``module_utils.jsonpath``) on the cluster the phase ran on: from the apply's own answer when the phase
applied that object (no extra request), otherwise with one GET. Later phases' ``.j2`` manifests and
templated options see them as ``phase_outputs[PHASE][NAME]`` (the producing phase ran on the same host,
or on exactly one host) or ``phase_outputs[PHASE][HOST][NAME]``. A use that no earlier phase declares is
refused when the plan is read (``check_output_uses``), before anything runs.
"""

from __future__ import annotations

import base64
import json
import os
import re
import threading
from dataclasses import dataclass

from ansible_collections.phasekit.kube.plugins.module_utils.bundle import TEMPLATE_SUFFIX
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.jsonpath import JSONPath, JSONPathError
from ansible_collections.phasekit.kube.plugins.module_utils.masking import leaf_strings
from ansible_collections.phasekit.kube.plugins.module_utils.planning.problems import (
    Problems,
    did_you_mean,
    given_as,
    type_name,
)

VARIABLE = "phase_outputs"
OUTPUT_FIELDS = ("from", "kind", "name", "namespace", "apiVersion", "jsonpath", "secret")
OBJECT_FIELDS = ("kind", "name", "namespace", "apiVersion")
# an object on the cluster; a command phase's standard output (JSON); a helm phase's release values (computed)
FROM_OBJECT, FROM_STDOUT, FROM_VALUES = "object", "stdout", "values"
REQUIRED_FIELDS = {FROM_OBJECT: ("kind", "name", "jsonpath"), FROM_STDOUT: ("jsonpath",), FROM_VALUES: ("jsonpath",)}
SOURCE_WORDS = {FROM_STDOUT: "standard output", FROM_VALUES: "release values"}
OUTPUT_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")  # a Jinja identifier: phase_outputs.db.endpoint works
# shown instead of a value no run has read yet (a preview of a new cluster), as Terraform's "known after apply"
KNOWN_AFTER_RUN = "(known after the run)"

_KEY = r"""(?:\[\s*(?:'([^']*)'|"([^"]*)")\s*\]|\.([A-Za-z_][A-Za-z0-9_]*))"""
# phase_outputs followed by up to three keys: [PHASE] [NAME] or [PHASE] [HOST] [NAME], each ['x'] or .x
_USE = re.compile(VARIABLE + _KEY + r"(?:\s*" + _KEY + r")?(?:\s*" + _KEY + r")?")


@dataclass(frozen=True)
class PhaseOutput:
    """One declared output: which object's field, and whether its value is a secret."""

    name: str
    kind: str
    object_name: str
    jsonpath: str
    namespace: str | None = None
    api_version: str | None = None
    secret: bool = False
    source: str = FROM_OBJECT

    def to_dict(self) -> dict:
        return {"from": self.source, "kind": self.kind, "name": self.object_name, "namespace": self.namespace,
                "apiVersion": self.api_version, "jsonpath": self.jsonpath, "secret": self.secret}

    @classmethod
    def from_dict(cls, name: str, data: dict) -> PhaseOutput:
        return cls(name=name, kind=data.get("kind") or "", object_name=data.get("name") or "",
                   jsonpath=data["jsonpath"], namespace=data.get("namespace"), api_version=data.get("apiVersion"),
                   secret=bool(data.get("secret")), source=data.get("from") or FROM_OBJECT)


@dataclass(frozen=True)
class OutputUse:
    """A template's ``phase_outputs[...]`` reference: the phase, and the keys after it (host and/or name)."""

    phase: str
    keys: tuple


def parse_outputs(value, at, problems: Problems) -> tuple:
    """``spec.outputs`` of a phase as ``PhaseOutput``s (``at``: field path below outputs -> where it is)."""
    if not given_as(value, dict, at(""), problems, "a mapping of output names to {kind, name, jsonpath}"):
        return ()
    parsed = []
    for name, spec in value.items():
        output = _parse_output(name, spec, at, problems)
        if output is not None:
            parsed.append(output)
    return tuple(parsed)


def _parse_output(name, spec, at, problems: Problems) -> PhaseOutput | None:
    if not isinstance(name, str) or not OUTPUT_NAME.match(name):
        problems.add(at(f".{name}"), f"invalid output name {name!r}: use letters, digits and '_', not starting "
                                     f"with a digit (templates write phase_outputs.PHASE.{name})")
        return None
    if not isinstance(spec, dict):
        problems.add(at(f".{name}"), f"expected a mapping (kind, name, jsonpath), got {type_name(spec)}")
        return None
    found = True
    source = spec.get("from", FROM_OBJECT)
    if source not in REQUIRED_FIELDS:
        problems.add(at(f".{name}.from"), f"expected {FROM_OBJECT} (the default: an object on the cluster), "
                                          f"{FROM_STDOUT} (a command phase's JSON output) or {FROM_VALUES} (a helm "
                                          f"phase's release values), got {source!r}")
        return None
    for key in spec:
        if key not in OUTPUT_FIELDS:
            problems.add(at(f".{name}.{key}"), f"unknown field{did_you_mean(key, OUTPUT_FIELDS)}; expected one of "
                                               f"{', '.join(OUTPUT_FIELDS)}")
            found = False
        elif source != FROM_OBJECT and key in OBJECT_FIELDS:
            problems.add(at(f".{name}.{key}"), f"an output from {source} names no object; remove {key}")
            found = False
    for key in ("kind", "name", "namespace", "apiVersion", "jsonpath"):
        value = spec.get(key)
        if value is None and key not in REQUIRED_FIELDS[source]:
            continue
        if not isinstance(value, str) or not value:
            problems.add(at(f".{name}.{key}"), f"{'missing: ' if value is None else ''}expected a non-empty string, "
                                               f"got {type_name(value)}")
            found = False
    secret = spec.get("secret", False)
    if not isinstance(secret, bool):
        problems.add(at(f".{name}.secret"), f"expected true or false, got {type_name(secret)}")
        found = False
    if found:
        try:
            JSONPath(spec["jsonpath"])
        except JSONPathError as err:
            problems.add(at(f".{name}.jsonpath"), f"not a kubectl JSONPath template: {err}")
            found = False
    if not found:
        return None
    return PhaseOutput(name=name, kind=spec.get("kind") or "", object_name=spec.get("name") or "",
                       jsonpath=spec["jsonpath"], namespace=spec.get("namespace"), api_version=spec.get("apiVersion"),
                       secret=secret, source=source)


# ------------------------------------------------------------ uses, checked before anything runs

def output_uses(text: str) -> list[OutputUse]:
    """Every ``phase_outputs[...]`` / ``phase_outputs.X.Y`` reference in a template's text."""
    uses = []
    for match in _USE.finditer(text):
        groups = match.groups()
        keys = [next((part for part in groups[index:index + 3] if part is not None), None) for index in (0, 3, 6)]
        keys = [key for key in keys if key is not None]
        uses.append(OutputUse(phase=keys[0], keys=tuple(keys[1:])))
    return uses


def template_texts(phase) -> list[tuple[str, str]]:
    """A phase's templates as (where, text): its option strings and the ``.j2`` files of its source."""
    found = [(phase.where("options"), text) for text in leaf_strings(phase.options) if VARIABLE in text]
    source = phase.source_path
    if isinstance(source, str) and os.path.exists(source):
        for path in _template_files(source):
            try:
                with open(path, encoding="utf-8") as handle:
                    text = handle.read()
            except (OSError, UnicodeDecodeError):
                continue  # the render reports it
            if VARIABLE in text:
                found.append((f"{phase.where('source')} ({path})", text))
    return found


def _template_files(source: str) -> list[str]:
    if os.path.isfile(source):
        return [source] if source.endswith(TEMPLATE_SUFFIX) else []
    return sorted(os.path.join(root, name) for root, _dirs, names in os.walk(source)
                  for name in names if name.endswith(TEMPLATE_SUFFIX))


def check_output_uses(phases, hosts_of, problems: Problems) -> None:
    """A problem for each use of an output that no earlier phase of ``phases`` (in run order) declares.

    ``hosts_of``: full name -> the hosts a phase runs on (a use may name one of them before the output)."""
    declared = {}
    for position, phase in enumerate(phases):
        declared.setdefault(phase.full_name, (position, phase))
    seen: set[int] = set()
    for position, phase in enumerate(phases):
        if id(phase) in seen:
            continue
        seen.add(id(phase))
        for where, text in template_texts(phase):
            for use in output_uses(text):
                problem = _use_problem(use, position, phase, declared, hosts_of)
                if problem:
                    problems.add(where, problem)


def _use_problem(use: OutputUse, position: int, phase, declared: dict, hosts_of) -> str | None:
    shown = f"{VARIABLE}[{use.phase!r}]" + "".join(f"[{key!r}]" for key in use.keys)
    producer = declared.get(use.phase)
    if producer is None:
        return (f"phase {phase.full_name} uses {shown}, but no phase {use.phase!r} is in the plan"
                f"{did_you_mean(use.phase, declared)}")
    where, producing = producer
    if where >= position:
        return (f"phase {phase.full_name} uses {shown}, an output of phase {use.phase}, which runs "
                f"{'as this one' if producing is phase else 'after it'}: an output is known only after its phase ran; "
                f"move phase {use.phase} before {phase.full_name}")
    names = [output.name for output in producing.outputs]
    keys = list(use.keys)
    if keys and keys[0] not in names and keys[0] in (hosts_of(producing.full_name) or ()):
        keys = keys[1:]
    if keys and keys[0] not in names:
        declared_names = ", ".join(names) if names else "none"
        return (f"phase {phase.full_name} uses {shown}: phase {use.phase} declares no output {keys[0]!r}"
                f"{did_you_mean(keys[0], names)} (its outputs: {declared_names})")
    return None


# ------------------------------------------------------------ reading them, and the values of a run

def read_output(output: PhaseOutput, session, discovery, namespace: str, applied=()) -> str:
    """The output's value on one cluster: its JSONPath over the object as the apply answered it (``applied``:
    the apply's ``PlannedObject``s), else as one GET returns it."""
    found = _applied_object(output, applied, namespace)
    if found is None:
        found = _get_object(output, session, discovery, namespace)
    try:
        return JSONPath(output.jsonpath, allow_missing_keys=False).text(found)
    except JSONPathError as err:
        raise PhasekitError(f"output {output.name}: {output.jsonpath} on {_describe(output, namespace)}: {err}") \
            from None


def read_stdout_output(output: PhaseOutput, stdout) -> str:
    """The output's value from a command's standard output, parsed as JSON."""
    text = stdout.decode("utf-8", "replace") if isinstance(stdout, bytes) else str(stdout or "")
    try:
        document = json.loads(text)
    except ValueError as err:
        # the output itself is not shown: it may hold what a secret output would have taken from it
        raise PhasekitError(f"output {output.name}: the command's standard output is not JSON ({err.msg} at line "
                            f"{err.lineno} column {err.colno})") from None
    return _read_document(output, document, "the command's standard output")


def read_values_output(output: PhaseOutput, values: dict) -> str:
    """The output's value from a helm release's computed values (``helm get values --all``)."""
    return _read_document(output, values, "the release's values")


def _read_document(output: PhaseOutput, document, what: str) -> str:
    try:
        return JSONPath(output.jsonpath, allow_missing_keys=False).text(document)
    except JSONPathError as err:
        raise PhasekitError(f"output {output.name}: {output.jsonpath} on {what}: {err}") from None


def _applied_object(output: PhaseOutput, applied, namespace: str) -> dict | None:
    for planned in applied:
        if planned.resource.kind != output.kind or planned.name != output.object_name or not planned.result:
            continue
        if output.api_version and planned.body.get("apiVersion") != output.api_version:
            continue
        if planned.resource.namespaced and planned.namespace != (output.namespace or namespace):
            continue
        return planned.result
    return None


def _get_object(output: PhaseOutput, session, discovery, namespace: str) -> dict:
    # pylint: disable-next=import-outside-toplevel  # kube.session needs the kubernetes client, plan checks do not
    from ansible_collections.phasekit.kube.plugins.module_utils.kube.session import ApiError, object_path
    resource = _resource(output, discovery)
    try:
        return session.get(object_path(resource, output.namespace or namespace if resource.namespaced else None,
                                       output.object_name))
    except ApiError as err:
        raise PhasekitError(f"output {output.name}: cannot read {_describe(output, namespace)}: {err.message}") \
            from None


def _resource(output: PhaseOutput, discovery):
    if output.api_version:
        resource = discovery.resolve(output.api_version, output.kind)
    else:
        kinds = [found for found in discovery.resources().by_gvk.values() if found.kind == output.kind]
        groups = sorted({found.group for found in kinds})
        if len(groups) > 1:
            raise PhasekitError(f"output {output.name}: kind {output.kind} is served by several API groups "
                                f"({', '.join(group or 'core' for group in groups)}): set apiVersion")
        resource = discovery.resolve_group_kind(groups[0], output.kind) if groups else None
    if resource is None:
        raise PhasekitError(f"output {output.name}: the cluster serves no kind {output.kind}"
                            f"{' in ' + output.api_version if output.api_version else ''}")
    return resource


def _describe(output: PhaseOutput, namespace: str) -> str:
    return f"{output.kind} {output.namespace or namespace}/{output.object_name}"


class OutputValues:
    """The outputs known in this run, per phase (full name) and host; thread-safe (hosts run in a pool).

    A phase that ran in this run keeps its values here (``keep``). The others' are found when a template first
    needs them (``expect``): ``fill(phase, host)`` gives those of the phase's last run there (the run records; a
    secret one read again from the cluster), or None; with ``placeholder`` (a preview, an offline render) a value
    no run has read yet renders as ``KNOWN_AFTER_RUN``, else it is left out (a real run must not apply it)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._values: dict[str, dict[str, dict]] = {}
        self._secrets: set[str] = set()
        self._declared: dict[str, tuple] = {}   # phase -> (hosts, output names)
        self._fill = None
        self._placeholder = False
        self._tried: set[tuple] = set()

    def expect(self, declared: dict, fill=None, placeholder: bool = False, now=()) -> OutputValues:
        """The plan's phases with outputs (``declared_outputs``); ``now``: those this step runs (their
        values come from their run, not from an earlier one's record)."""
        with self._lock:
            self._declared = dict(declared)
            self._fill, self._placeholder = fill, placeholder
            self._tried.update((phase, host) for phase in now for host in declared.get(phase, ((), ()))[0])
        return self

    @property
    def declared(self) -> bool:
        """Whether the plan declares any output."""
        with self._lock:
            return bool(self._declared)

    def keep(self, phase: str, host: str, values: dict, secret_names=()) -> None:
        with self._lock:
            self._values.setdefault(phase, {})[host] = dict(values)
            for name in secret_names:
                self._secrets.update(_secret_forms(values.get(name)))

    def not_read(self) -> list[str]:
        """``PHASE on HOST`` for each producing phase whose outputs are not known on a host of it (no run read them:
        not in this run, nor in a recorded one): what a template's undefined ``phase_outputs`` use comes from."""
        with self._lock:
            return [f"{phase} on {host}" for phase, (hosts, _names) in self._declared.items() for host in hosts
                    if (phase, host) in self._tried and host not in self._values.get(phase, {})]

    def explained(self, message: str) -> str:
        """A template error, with the outputs not read yet when it says a value is undefined."""
        missing = self.not_read()
        if not missing or not any(word in message for word in ("undefined", "has no attribute")):
            return message
        return (f"{message} (outputs not read yet: {', '.join(missing)}; the phase has not succeeded there in this "
                f"run nor in a recorded one: run it first, or include it in the selection)")

    def secret_values(self) -> frozenset:
        """The values of secret outputs: masked in everything shown (``masking.Masks``)."""
        with self._lock:
            return frozenset(self._secrets)

    def for_host(self, host: str) -> dict:
        """``phase_outputs`` as a template on ``host`` sees it: per phase, every host's values by host name, and
        the names themselves when the phase ran on this host or on exactly one."""
        self._find_missing()
        with self._lock:
            view = {}
            for phase, by_host in self._values.items():
                # by name alone: the phase's own host's, or those of the one host it runs on (not the first of a
                # rollout's batches to have run: another host's values would pass for this one's)
                hosts = self._declared[phase][0] if phase in self._declared else tuple(by_host)
                one = hosts[0] if len(hosts) == 1 else None
                own = by_host.get(host) if host in by_host else by_host.get(one, {})
                view[phase] = {**{name: dict(values) for name, values in by_host.items()}, **own}
            return view

    def _find_missing(self) -> None:
        with self._lock:
            missing = [(phase, host) for phase, (hosts, _names) in self._declared.items() for host in hosts
                       if host not in self._values.get(phase, {}) and (phase, host) not in self._tried]
            self._tried.update(missing)
            fill, placeholder = self._fill, self._placeholder
        for phase, host in missing:  # outside the lock: a record is read, a secret output asked of its cluster
            found = fill(phase, host) if fill is not None else None
            placeholders = self._declared[phase][1]
            if placeholder:
                found = {**placeholders, **(found or {})}
            if found is not None:
                secret = found.pop(SECRET_NAMES, ())
                self.keep(phase, host, found, secret)

    @classmethod
    def previewed(cls, declared: dict) -> OutputValues:
        """Every declared output as ``KNOWN_AFTER_RUN`` (an offline render: no cluster is asked)."""
        return cls().expect(declared, placeholder=True)


def known_after_run(objects) -> list[str]:
    """The fields of rendered objects that hold an output no run has read yet: ``Kind ns/name: data.endpoint``."""
    found = []
    for obj in objects:
        metadata = obj.get("metadata") or {}
        shown = "/".join(part for part in (metadata.get("namespace"), metadata.get("name")) if part)
        found.extend(f"{obj.get('kind')} {shown}: {path}" for path in _placeholder_paths(obj, ""))
    return found


def _placeholder_paths(value, path: str):
    if isinstance(value, str):
        if KNOWN_AFTER_RUN in value:
            yield path
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _placeholder_paths(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _placeholder_paths(item, f"{path}[{index}]")


SECRET_NAMES = "__secret__"  # in what ``fill`` returns: the names of the secret outputs among the values


def _secret_forms(value) -> set[str]:
    """A secret output's value, and its decoded text when it is base64 (a Secret's ``.data``: a template decodes
    it with ``b64decode`` and the plain text lands in objects)."""
    if not value:
        return set()
    forms = {str(value)}
    try:
        decoded = base64.b64decode(str(value), validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return forms
    if decoded.isprintable():
        forms.add(decoded)
    return forms


def declared_outputs(entries: list) -> dict:
    """Full name -> (hosts, {output name: its placeholder}) of the run list's entries that declare outputs
    (``planner.RunEntry``)."""
    declared = {}
    for entry in entries:
        if entry.outputs:
            hosts, placeholders = declared.get(entry.full_name, ((), {}))
            declared[entry.full_name] = (tuple(dict.fromkeys((*hosts, *entry.hosts))),
                                         {**placeholders, **{name: placeholder_of(spec)
                                                             for name, spec in entry.outputs.items()}})
    return declared


def placeholder_of(spec: dict) -> str:
    """What an output no run has read yet renders as: ``KNOWN_AFTER_RUN``, base64-encoded for a Secret's
    ``.data`` (always base64: a template decodes it with ``b64decode`` and shows the placeholder)."""
    if spec.get("kind") == "Secret" and str(spec.get("jsonpath", "")).replace(" ", "").startswith("{.data."):
        return base64.b64encode(KNOWN_AFTER_RUN.encode()).decode()
    return KNOWN_AFTER_RUN
