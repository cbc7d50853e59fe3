# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""airshipctl's ``GenericContainer`` executor documents as ``container`` phases (podman or docker on the controller).

What airshipctl did (``pkg/phase/executors/container.go``, ``pkg/container/api.go``), and what the phase does:

- the phase's entry point documents (none without ``documentEntryPoint``) as a ``ResourceList`` on the
  container's standard input, ``functionConfig`` the ``config`` text, or the document ``configRef`` names among
  the phase bundle's documents (a ConfigMap holding a toolbox script): the options ``config`` and the source;
- with ``metadata.clusterName``, the cluster's kubeconfig mounted read-only at ``/kubeconfig``, ``KUBECONFIG`` and
  ``KCTL_CONTEXT`` set: every container phase here (it runs on its cluster's hosts);
- ``spec.type: krm`` (kustomize's function runner): ``--network host`` with ``hostNetwork`` else ``--network
  none``, the controller's user (``--user uid:gid``), ``spec.timeout``; ``spec.type: airship`` or none (airshipctl's
  own docker driver): the image's network unless ``hostNetwork``, ``airship.cmd`` as the command,
  ``airship.privileged``, no timeout (airshipctl's driver set none);
- ``envVars``: ``NAME=value``, or ``NAME`` for the controller's value; ``mounts``: ``type``, ``src`` (``~`` the
  controller user's home, a relative path under airshipctl's manifest target path), ``dst``, read-only unless
  ``rw``;
- the output: ``sinkOutputDir`` (relative to the site's entry point directory) gets the documents as files, as
  kustomize's package writer wrote them; without it they are returned (airshipctl printed them).

Refused, naming the field: ``airship.containerRuntime`` other than docker (airshipctl had no other driver), a
``configRef`` that names no document of the bundle, and ``siteWideKubeconfig: true`` (the container gets its
cluster's kubeconfig only). A phase without ``metadata.clusterName`` cannot run here (phases run on their
cluster's hosts).
"""

from __future__ import annotations

import os

from ansible_collections.phasekit.kube.plugins.module_utils import yaml_io
from ansible_collections.phasekit.kube.plugins.module_utils.airship.header import check_header
from ansible_collections.phasekit.kube.plugins.module_utils.planning.container import CONTROLLER_USER, ENGINES, MOUNT_TYPES
from ansible_collections.phasekit.kube.plugins.module_utils.planning.documents import RawDocument
from ansible_collections.phasekit.kube.plugins.module_utils.planning.model import unknown_fields
from ansible_collections.phasekit.kube.plugins.module_utils.planning.problems import DocumentOrigin, Problems, type_name

CONTAINER_KIND = "GenericContainer"
FIELDS = ("apiVersion", "kind", "metadata", "spec", "config", "configRef")
SPEC_FIELDS = ("type", "airship", "krm", "sinkOutputDir", "hostNetwork", "image", "envVars", "mounts", "timeout")
AIRSHIP_FIELDS = ("containerRuntime", "cmd", "privileged")
MOUNT_FIELDS = ("type", "src", "dst", "rw")
REFERENCE_FIELDS = ("apiVersion", "kind", "name", "namespace", "uid", "resourceVersion", "fieldPath")
KRM, AIRSHIP = "krm", "airship"
RUNTIMES = ("", "docker")


class ContainerPhase:
    """The container options a GenericContainer document stands for; ``sink``: the output directory, relative to
    the site's entry point directory (made absolute per phase); ``refusal``: why its phases cannot run here."""

    def __init__(self, options: dict, sink: str | None, refusal: str | None = None):
        self.options = options
        self.sink = sink
        self.refusal = refusal


def container_phase(document: RawDocument, bundle: dict, problems: Problems,
                    root: str | None = None) -> ContainerPhase | None:
    """The ``container`` options of a GenericContainer document; ``None`` when it has problems (each added).

    ``bundle``: the phase bundle's documents by (kind, name), where ``configRef`` is looked up; ``root``: where
    relative mount sources start (airshipctl's manifest target path), absolute already when known."""
    content, origin = document.content, document.origin
    count = len(problems.messages)
    check_header(content, FIELDS, origin, problems)
    spec = _mapping(content, "spec", origin, problems)
    unknown_fields(spec, SPEC_FIELDS, origin.at, problems, prefix="spec.")
    kind = spec.get("type") or AIRSHIP
    if kind not in (KRM, AIRSHIP):
        problems.add(origin.at("spec.type"), f"expected {KRM} or {AIRSHIP} (how airshipctl runs the container), "
                                             f"got {kind!r}")
    airship = _mapping(spec, "airship", origin, problems, "spec.")
    unknown_fields(airship, AIRSHIP_FIELDS, origin.at, problems, prefix="spec.airship.")
    if _mapping(spec, "krm", origin, problems, "spec."):
        problems.add(origin.at("spec.krm"), "expected an empty mapping (airshipctl's KRMContainerSpec has no fields)")
    image = spec.get("image")
    if not isinstance(image, str) or not image:
        problems.add(origin.at("spec.image"), f"expected the image to run, got {type_name(image)}")
    options: dict = {"image": image}
    host_network = _flag(spec, "hostNetwork", origin, problems)
    if kind == KRM:
        options.update(_krm_options(spec, host_network, origin, problems))
    else:
        options.update(_airship_options(airship, host_network, origin, problems))
    env = _env(spec.get("envVars"), origin, problems)
    if env:
        options["env"] = env
    mounts = _mounts(spec.get("mounts"), origin, problems, root)
    if mounts:
        options["mounts"] = mounts
    config, refusal = _config(content, bundle, origin, problems)
    if config is not None:
        options["config"] = config
    sink = spec.get("sinkOutputDir")
    if sink is not None and not (isinstance(sink, str) and sink):
        problems.add(origin.at("spec.sinkOutputDir"), f"expected a directory, got {type_name(sink)}")
    if len(problems.messages) != count:
        return None
    return ContainerPhase(options, sink or None, refusal)


def _krm_options(spec: dict, host_network: bool, origin: DocumentOrigin, problems: Problems) -> dict:
    """A krm container's options: no network unless ``hostNetwork``, the controller's user, its ``timeout``."""
    options = {"network": "host" if host_network else "none", "user": CONTROLLER_USER}
    timeout = spec.get("timeout")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int) or timeout < 0):
        problems.add(origin.at("spec.timeout"), f"expected a whole number of seconds, got {type_name(timeout)}")
    elif timeout:
        options["timeout"] = timeout
    return options


def _airship_options(airship: dict, host_network: bool, origin: DocumentOrigin, problems: Problems) -> dict:
    """An airship container's options: ``spec.airship`` (docker only), its ``cmd`` and ``privileged``."""
    options: dict = {}
    if host_network:
        options["network"] = "host"
    runtime = airship.get("containerRuntime") or ""
    if runtime not in RUNTIMES:
        problems.add(origin.at("spec.airship.containerRuntime"),
                     f"airshipctl runs airship containers with docker only, got {runtime!r}; here the first of "
                     f"{' and '.join(ENGINES)} on the controller's PATH runs them: remove it or write docker")
    command = airship.get("cmd")
    if command is not None:
        if isinstance(command, list) and all(isinstance(word, str) for word in command):
            options["command"] = list(command)
        else:
            problems.add(origin.at("spec.airship.cmd"), f"expected a list of strings, got {type_name(command)}")
    if _flag(airship, "privileged", origin, problems, "spec.airship."):
        options["privileged"] = True
    return options


def _mapping(content: dict, key: str, origin: DocumentOrigin, problems: Problems, prefix: str = "") -> dict:
    value = content.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        problems.add(origin.at(f"{prefix}{key}"), f"expected a mapping, got {type_name(value)}")
        return {}
    return value


def _flag(content: dict, key: str, origin: DocumentOrigin, problems: Problems, prefix: str = "spec.") -> bool:
    value = content.get(key)
    if value is not None and not isinstance(value, bool):
        problems.add(origin.at(f"{prefix}{key}"), f"expected true or false, got {type_name(value)}")
        return False
    return bool(value)


def _env(value, origin: DocumentOrigin, problems: Problems) -> dict:
    """``["NAME=value", "NAME"]``: values, and names whose value the controller's environment gives (None)."""
    if value is None:
        return {}
    if not isinstance(value, list):
        problems.add(origin.at("spec.envVars"), f"expected a list of NAME=value or NAME, got {type_name(value)}")
        return {}
    env = {}
    for position, item in enumerate(value):
        name, equals, text = item.partition("=") if isinstance(item, str) else ("", "", "")
        if not name:
            problems.add(origin.at(f"spec.envVars[{position}]"), f"expected NAME=value or NAME, got "
                                                                 f"{type_name(item) if not isinstance(item, str) else repr(item)}")
            continue
        env[name] = text if equals else None
    return env


def _mounts(value, origin: DocumentOrigin, problems: Problems, root: str | None) -> list:
    if value is None:
        return []
    if not isinstance(value, list):
        problems.add(origin.at("spec.mounts"), f"expected a list of mounts, got {type_name(value)}")
        return []
    mounts = []
    for position, mount in enumerate(value):
        at = f"spec.mounts[{position}]"
        if not isinstance(mount, dict):
            problems.add(origin.at(at), f"expected a mount (type, src, dst, rw), got {type_name(mount)}")
            continue
        unknown_fields(mount, MOUNT_FIELDS, origin.at, problems, prefix=f"{at}.")
        kind = mount.get("type") or "bind"
        if kind not in MOUNT_TYPES:
            problems.add(origin.at(f"{at}.type"), f"expected one of {', '.join(MOUNT_TYPES)}, got {kind!r}")
            continue
        source, target = mount.get("src"), mount.get("dst")
        if not isinstance(target, str) or not target:
            problems.add(origin.at(f"{at}.dst"), f"expected the path in the container, got {type_name(target)}")
            continue
        converted = {"type": kind, "dst": target, "rw": _flag(mount, "rw", origin, problems, f"{at}.")}
        if kind != "tmpfs":
            if not isinstance(source, str) or not source:
                problems.add(origin.at(f"{at}.src"), f"expected what to mount, got {type_name(source)}")
                continue
            if kind == "bind" and root and not source.startswith("~") and not os.path.isabs(source):
                source = os.path.normpath(os.path.join(root, source))
            converted["src"] = source
        mounts.append(converted)
    return mounts


def _config(content: dict, bundle: dict, origin: DocumentOrigin, problems: Problems) -> tuple:
    """The function's configuration: the document ``configRef`` names (then ``config`` is ignored, as airshipctl
    did), else the ``config`` text; and why the phases cannot run (a reference to no document: airshipctl found
    that out when the phase ran)."""
    reference = content.get("configRef")
    if reference is None:
        config = content.get("config")
        if config is None or config == "":
            return None, None
        if not isinstance(config, str):
            problems.add(origin.at("config"), f"expected YAML text (the function's configuration), got "
                                              f"{type_name(config)}")
            return None, None
        return config, None
    if not isinstance(reference, dict):
        problems.add(origin.at("configRef"), f"expected a reference (kind, name), got {type_name(reference)}")
        return None, None
    unknown_fields(reference, REFERENCE_FIELDS, origin.at, problems, prefix="configRef.")
    kind, name = reference.get("kind"), reference.get("name")
    found = bundle.get((kind, name))
    namespace = reference.get("namespace")
    if found is None or (namespace and (found.content.get("metadata") or {}).get("namespace") != namespace):
        where = f" in namespace {namespace}" if namespace else ""
        return None, (f"field configRef names no {kind} {name!r}{where} among the phase documents (airshipctl "
                      f"looked for it there when the phase ran): add it to the phase bundle")
    return yaml_io.copy_data(found.content), None
