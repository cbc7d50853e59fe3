# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The ``container`` executor: run an image with podman (or docker) on the controller, as a KRM function runs.

The container gets the phase's documents as a KRM ``ResourceList`` on its standard input (``items``: the phase's
bundle, ``functionConfig``: the option ``config``), the phase cluster's kubeconfig as a read-only file at
``/kubeconfig`` with ``KUBECONFIG`` and ``KCTL_CONTEXT`` set (airshipctl's toolbox contract), and prints a
``ResourceList`` (or plain documents) on its standard output: written as files under ``output_dir``, or returned.

The kubeconfig lives in a private 0700 directory as a 0600 file, removed when the container ends; a container
still running at its timeout is removed (``<engine> rm -f``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import dataclass

from ansible_collections.phasekit.kube.plugins.module_utils import yaml_io
from ansible_collections.phasekit.kube.plugins.module_utils.environ import process_environment
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kube.diff import redact
from ansible_collections.phasekit.kube.plugins.module_utils.planning.command import kubeconfig_file, output_tail

ENGINES = ("podman", "docker")
AUTO = "auto"
NETWORKS = ("default", "host", "none")
MOUNT_TYPES = ("bind", "volume", "tmpfs")
CONTROLLER_USER = "controller"         # --user the controller's uid:gid (kyaml runs KRM functions so)
KUBECONFIG_PATH = "/kubeconfig"        # where airshipctl mounts it (v1alpha1.KubeConfigPath)
RESOURCE_LIST = {"apiVersion": "config.kubernetes.io/v1alpha1", "kind": "ResourceList"}
PATH_ANNOTATIONS = ("config.kubernetes.io/path", "internal.config.kubernetes.io/path")
INDEX_ANNOTATIONS = ("config.kubernetes.io/index", "internal.config.kubernetes.io/index")

MOUNT_SPEC = {"type": {"type": "str", "default": "bind", "choices": list(MOUNT_TYPES)},
              "src": {"type": "str"}, "dst": {"type": "str", "required": True},
              "rw": {"type": "bool", "default": False}}
CONTAINER_SPEC = {
    "argument_spec": {
        "image": {"type": "str", "required": True},
        "command": {"type": "list", "elements": "str"},
        "config": {"type": "raw"},
        "env": {"type": "dict", "default": {}},
        "mounts": {"type": "list", "elements": "dict", "default": [], "options": MOUNT_SPEC},
        "network": {"type": "str", "default": "default", "choices": list(NETWORKS)},
        "privileged": {"type": "bool", "default": False},
        "user": {"type": "str"},
        "timeout": {"type": "int"},
        "output_dir": {"type": "path"},
        "engine": {"type": "str", "default": AUTO, "choices": [AUTO, *ENGINES]},
    },
}


def check_container_options(options: dict) -> None:
    """What the spec cannot judge: the function config is a mapping (or YAML text of one), env names, mounts."""
    config = options.get("config")
    if config is not None:
        function_config(config)
    for name in options.get("env") or {}:
        if not isinstance(name, str) or not name or "=" in name:
            raise PhasekitError(f"env: {name!r} is not an environment variable name")
    for number, mount in enumerate(options.get("mounts") or [], start=1):
        if mount.get("type", "bind") != "tmpfs" and not mount.get("src"):
            raise PhasekitError(f"mounts[{number}]: a {mount.get('type', 'bind')} mount needs src")
    if options.get("timeout") is not None and options["timeout"] <= 0:
        raise PhasekitError(f"timeout must be a number of seconds > 0, got {options['timeout']}")


def container_mount_paths(options: dict, base_dir: str) -> dict:
    """The options with relative bind mount sources made absolute, relative to ``base_dir`` (``~`` is expanded
    when the container runs, on the controller)."""
    mounts = options.get("mounts")
    if not mounts:
        return options
    absolute = []
    for mount in mounts:
        source = mount.get("src") if isinstance(mount, dict) else None
        if (mount.get("type") or "bind") == "bind" and isinstance(source, str) and source \
                and not source.startswith("~") and not os.path.isabs(source):
            mount = {**mount, "src": os.path.normpath(os.path.join(base_dir, source))}
        absolute.append(mount)
    return {**options, "mounts": absolute}


def function_config(config) -> dict | None:
    """The ResourceList's functionConfig: a mapping, or the YAML text of one (airshipctl's ``config``)."""
    if config is None or isinstance(config, dict):
        return config
    if isinstance(config, str):
        parsed = yaml_io.load_all(config, "config")
        if len(parsed) == 1 and (parsed[0] is None or isinstance(parsed[0], dict)):
            return parsed[0]
    raise PhasekitError(f"config: expected a mapping (the function's configuration), got {type(config).__name__}")


def container_engine(choice: str = AUTO, which=shutil.which) -> str:
    """The engine's program: the one named, or podman, else docker, whichever is on PATH."""
    for engine in ENGINES if choice == AUTO else (choice,):
        path = which(engine)
        if path:
            return path
    wanted = " or ".join(ENGINES) if choice == AUTO else choice
    raise PhasekitError(f"no container engine: {wanted} is not on the controller's PATH")


@dataclass
class ContainerResult:
    rc: int
    items: list
    stderr: str
    argv: list


def resource_list(items: list[dict], config: dict | None) -> str:
    """The KRM ResourceList a function reads (as JSON): the documents, each with its index annotation, and its
    config."""
    annotated = []
    for index, item in enumerate(items):
        item = yaml_io.copy_data(item)
        annotations = item.setdefault("metadata", {}).setdefault("annotations", {}) if isinstance(item, dict) else {}
        for key in INDEX_ANNOTATIONS:
            annotations.setdefault(key, str(index))
        annotated.append(item)
    body = {**RESOURCE_LIST, "items": annotated}
    if config is not None:
        body["functionConfig"] = config
    # JSON is YAML: every KRM function reads it, and a function needs no YAML library to read it
    return json.dumps(body, default=str)


def container_argv(engine: str, options: dict, *, name: str, kubeconfig: str | None, context: str | None,
                   mounts_base: str, environ: dict | None = None) -> list[str]:
    """``<engine> run`` for the options; ``kubeconfig``: the private file mounted at /kubeconfig."""
    environ = os.environ if environ is None else environ
    argv = [engine, "run", "--rm", "-i", "--name", name]
    if options.get("network", "default") != "default":
        argv += ["--network", options["network"]]
    if options.get("privileged"):
        argv.append("--privileged")
    user = options.get("user")
    if user == CONTROLLER_USER:
        user = f"{os.getuid()}:{os.getgid()}"
    if user:
        argv += ["--user", user]
    env = {}
    for key, value in (options.get("env") or {}).items():
        env[key] = environ.get(key, "") if value is None else str(value)
    if kubeconfig is not None:
        env["KUBECONFIG"] = KUBECONFIG_PATH
        if context:
            env["KCTL_CONTEXT"] = context
        argv += ["--mount", f"type=bind,source={kubeconfig},target={KUBECONFIG_PATH},readonly"]
    for mount in options.get("mounts") or []:
        argv += ["--mount", mount_argument(mount, mounts_base)]
    for key, value in env.items():
        argv += ["-e", f"{key}={value}"]
    return [*argv, options["image"], *(options.get("command") or [])]


def mount_argument(mount: dict, base: str) -> str:
    """``--mount`` of one mount: a relative source is under ``base``, ``~`` the controller user's home (as airshipctl
    expanded them); read-only unless ``rw``."""
    kind = mount.get("type") or "bind"
    parts = [f"type={kind}"]
    if kind != "tmpfs":
        source = os.path.expanduser(str(mount["src"]))
        if kind == "bind" and not os.path.isabs(source):
            source = os.path.normpath(os.path.join(base, source))
        parts.append(f"source={source}")
    parts.append(f"target={mount['dst']}")
    if not mount.get("rw") and kind != "tmpfs":
        parts.append("readonly")
    return ",".join(parts)


def run_container(options: dict, items: list[dict], *, kubeconfig: dict | None, context: str | None,
                  mounts_base: str, timeout: int | None, environ: Mapping | None = None) -> ContainerResult:
    """Run the container once; never raises for a non-zero exit. A timeout removes the container.
    ``environ``: the task's environment (default: the controller's), the engine's and the variables ``env`` names."""
    engine = container_engine(options.get("engine") or AUTO)
    name = f"phasekit-{uuid.uuid4().hex[:12]}"
    stdin = resource_list(items, function_config(options.get("config")))
    with ExitStack() as stack:
        path = stack.enter_context(kubeconfig_file(kubeconfig)) if kubeconfig is not None else None
        argv = container_argv(engine, options, name=name, kubeconfig=path, context=context, mounts_base=mounts_base,
                              environ=environ)
        try:
            done = subprocess.run(argv, input=stdin, capture_output=True, timeout=timeout,  # pylint: disable=ansible-bad-function
                                  env=process_environment(environ),
                                  encoding="utf-8", errors="replace",
                                  check=False)
        except subprocess.TimeoutExpired as exc:
            subprocess.run([engine, "rm", "-f", name], capture_output=True, check=False)  # pylint: disable=ansible-bad-function
            raise PhasekitError(f"container {options['image']} did not finish within {timeout}s and was removed "
                                f"(output so far: {output_tail(exc.stderr) or 'none'})") from None
    return ContainerResult(rc=done.returncode, items=output_items(done.stdout) if done.returncode == 0 else [],
                           stderr=done.stderr, argv=argv)


def output_items(stdout: str) -> list:
    """The documents a container printed: a ResourceList's items, or the documents themselves."""
    documents = [document for document in yaml_io.load_all(stdout or "", "the container's output")
                 if document is not None]
    if len(documents) == 1 and isinstance(documents[0], dict) and documents[0].get("kind") == "ResourceList":
        return list(documents[0].get("items") or [])
    return documents


def write_output(items: list, directory: str) -> list[str]:
    """Each document as a file under ``directory``: where its path annotation says, else ``<kind>_<name>.yaml``;
    the function's bookkeeping annotations are left out. Returns the files written."""
    by_file: dict[str, list] = {}
    for item in items:
        if not isinstance(item, dict):
            raise PhasekitError(f"the container's output holds a {type(item).__name__}, not an object")
        item = yaml_io.copy_data(item)
        annotations = (item.get("metadata") or {}).get("annotations") or {}
        relative = next((annotations[key] for key in PATH_ANNOTATIONS if annotations.get(key)), None)
        for key in (*PATH_ANNOTATIONS, *INDEX_ANNOTATIONS):
            annotations.pop(key, None)
        if not annotations and isinstance(item.get("metadata"), dict):
            item["metadata"].pop("annotations", None)
        if relative is None:
            relative = f"{str(item.get('kind', 'object')).lower()}_{(item.get('metadata') or {}).get('name', 'x')}.yaml"
        target = os.path.normpath(os.path.join(directory, relative))
        if os.path.relpath(target, directory).startswith(".."):
            raise PhasekitError(f"the container's output names a path outside {directory}: {relative}")
        by_file.setdefault(target, []).append(item)
    for target, documents in by_file.items():
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w", encoding="utf-8") as handle:
            handle.write("---\n".join(yaml_io.safe_dump(document, sort_keys=False) for document in documents))
    return sorted(by_file)


def shown_items(items: list) -> list:
    """The output as a result shows it: Secret values hidden."""
    return [redact(item) if isinstance(item, dict) else item for item in items]


def container_failure_message(result: ContainerResult, image: str) -> str:
    detail = output_tail(result.stderr)
    message = f"container {image} exited with rc {result.rc}"
    return f"{message}: {detail}" if detail else message
