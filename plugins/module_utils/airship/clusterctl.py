# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""airshipctl's ``Clusterctl`` executor documents as ``command`` phases that run ``clusterctl``.

What airshipctl did (``pkg/phase/executors/clusterctl.go``), and what the phase does here:

- ``action: init``: ``clusterctl init`` against the phase's cluster, with ``--core``, ``--bootstrap``,
  ``--control-plane`` and ``--infrastructure`` from ``init-options`` (lists, or the later comma-separated strings).
  ``KUBECONFIG`` is the phase's cluster, as for every command phase.
- ``action: move``: ``clusterctl move`` from the parent of the phase's cluster (airshipctl's ClusterMap parent,
  here the host's ``kube_parent``) to the phase's cluster; ``move-options.namespace`` is ``--namespace``. The
  parent's kubeconfig is a second private file (the command option ``kubeconfigs``).
- ``providers`` with a ``url`` clusterctl can read (http, https, file or an absolute path), ``images`` and
  ``additional-vars`` go into a clusterctl configuration file made for the command (``--config``; the command
  option ``env_files``, hidden like ``env``), as airshipctl's own configuration held them.
- ``providers`` with ``versions`` (``{v0.3.2: <kustomize entry point>}``, relative to the target path): airshipctl
  served each version's build as a clusterctl repository (``pkg/clusterctl/implementations/repository.go``):
  ``metadata.yaml`` the build's one ``clusterctl.cluster.x-k8s.io`` ``Metadata`` document (none is an error, as
  there), the components every other document not labelled ``airshipit.org/deploy-k8s: "false"`` (nor
  ``config.kubernetes.io/local-config: "true"``, its later selector). Here the command option ``env_dirs`` builds
  them into a private clusterctl local repository, ``<provider label>/<version>/<type>-components.yaml`` and
  ``metadata.yaml``, and the configuration file's ``url`` names the highest version's components file in it.

- ``providers`` with a ``url`` relative to the target path (airshipctl's later layout): built the same way, the
  url's last directory (``.../capm3/v0.5.0``) naming the version, as airshipctl's ``initRepoData`` did.

What cannot be done with the clusterctl program makes the phase not runnable (listed, refused by validate and
run with what to do instead): ``env-vars: false`` and ``variable-substitution: false`` (clusterctl
always reads variables from the environment and substitutes them), ``init-options.kubeConfigRef`` (the
inventory gives the kubeconfig). Documents of the wrong shape are problems, as for every document.
"""

from __future__ import annotations

import os
import posixpath
import re
import shlex
from dataclasses import dataclass
from urllib.parse import urlparse

from ansible_collections.phasekit.kube.plugins.module_utils import yaml_io
from ansible_collections.phasekit.kube.plugins.module_utils.airship.header import check_header
from ansible_collections.phasekit.kube.plugins.module_utils.planning.command import PARENT_HOST
from ansible_collections.phasekit.kube.plugins.module_utils.planning.documents import RawDocument
from ansible_collections.phasekit.kube.plugins.module_utils.planning.model import unknown_fields
from ansible_collections.phasekit.kube.plugins.module_utils.planning.problems import DocumentOrigin, Problems, type_name

CLUSTERCTL_KIND = "Clusterctl"
PROGRAM = "clusterctl"
SECTION = "clusterctl"
INIT, MOVE = "init", "move"
CONFIG_VARIABLE = "PHASEKIT_CLUSTERCTL_CONFIG"
FROM_KUBECONFIG_VARIABLE = "PHASEKIT_CLUSTERCTL_FROM_KUBECONFIG"
REPOSITORY_VARIABLE = "PHASEKIT_CLUSTERCTL_REPOSITORY"

FIELDS = ("apiVersion", "kind", "metadata", "action", "init-options", "move-options", "providers",
          "additional-vars", "env-vars", "images")
MOVE_FIELDS = ("namespace",)
PROVIDER_FIELDS = ("name", "type", "url", "clusterctl-repository", "versions", "variable-substitution")
IMAGE_FIELDS = ("repository", "tag")
# init-options field -> clusterctl init flag; the core provider is one, the others may be several.
INIT_FLAGS = (("core-provider", "--core"), ("bootstrap-providers", "--bootstrap"),
              ("control-plane-providers", "--control-plane"), ("infrastructure-providers", "--infrastructure"))
INIT_FIELDS = tuple(field for field, _flag in INIT_FLAGS) + ("kubeConfigRef",)
PROVIDER_TYPES = ("CoreProvider", "BootstrapProvider", "ControlPlaneProvider", "InfrastructureProvider")
# The configuration file's own keys: additional-vars may not take them.
CONFIG_KEYS = ("providers", "images")
READABLE_URL_SCHEMES = ("http", "https", "file")
# provider type -> (the prefix of its label in a clusterctl repository path, its components file)
REPOSITORY_NAMES = {"CoreProvider": ("", "core-components.yaml"),
                    "BootstrapProvider": ("bootstrap-", "bootstrap-components.yaml"),
                    "ControlPlaneProvider": ("control-plane-", "control-plane-components.yaml"),
                    "InfrastructureProvider": ("infrastructure-", "infrastructure-components.yaml")}
METADATA_KIND = "clusterctl.cluster.x-k8s.io/Metadata"
METADATA_FILE = "metadata.yaml"
# airshipctl's selectors of documents that are not components: airshipit.org/deploy-k8s notin (False, false),
# later config.kubernetes.io/local-config notin (True, true)
NOT_COMPONENTS = {"airshipit.org/deploy-k8s": ["false", "False"], "config.kubernetes.io/local-config": ["true", "True"]}
SEMVER = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$")


@dataclass
class ClusterctlPhase:
    """The command options a Clusterctl document stands for, or why its phases cannot run (``refusal``)."""

    options: dict
    refusal: str | None = None


class _Refused(Exception):
    """A field this collection cannot honour with the clusterctl program: (field, what to do instead)."""

    def __init__(self, field: str, instead: str):
        super().__init__(field)
        self.field = field
        self.instead = instead


def clusterctl_phase(document: RawDocument, problems: Problems, root: str | None = None) -> ClusterctlPhase | None:
    """The command phase of a Clusterctl document; ``None`` when it has problems (each added to ``problems``).

    ``root``: the directory provider entry points are relative to (made absolute); by default they stay relative,
    to the phase's target path."""
    content, origin = document.content, document.origin
    count = len(problems.messages)
    check_header(content, FIELDS, origin, problems)
    reader = _Reader(content, origin, problems, root)
    action = reader.action()
    init = reader.mapping("init-options", INIT_FIELDS)
    move = reader.mapping("move-options", MOVE_FIELDS)
    config, init_args, refusal = {}, [], None
    try:
        config = reader.config()
        if action == INIT and init is not None:
            init_args = reader.init_arguments(init)
        if init and action == MOVE:
            problems.add(origin.at("init-options"), "init-options apply to action init; remove them here")
        if move and action == INIT:
            problems.add(origin.at("move-options"), "move-options apply to action move; remove them here")
    except _Refused as refused:
        refusal = refused
    if len(problems.messages) != count or action is None:
        return None
    if refusal is not None:
        return ClusterctlPhase({}, refusal_message(document, refusal.field, refusal.instead))
    if action == INIT:
        return ClusterctlPhase(_command_options(["init", *init_args], config, reader.repository))
    namespace = reader.text(move or {}, "namespace", "move-options.namespace")
    move_args = ["move", "--kubeconfig", _Variable(FROM_KUBECONFIG_VARIABLE), "--to-kubeconfig",
                 _Variable("KUBECONFIG")]
    if namespace:
        move_args += ["--namespace", namespace]
    options = _command_options(move_args, config, reader.repository)
    options["kubeconfigs"] = {FROM_KUBECONFIG_VARIABLE: PARENT_HOST}
    return ClusterctlPhase(options)


def refusal_message(document: RawDocument, field: str, instead: str) -> str:
    """Why a phase of this Clusterctl document cannot run here, and what to do instead."""
    origin = document.origin
    return (f"executor {CLUSTERCTL_KIND} {origin.name} ({origin.source} document {origin.document}) field {field} "
            f"cannot be honoured by running clusterctl: {instead} (see docs/migrating-from-airshipctl.md#{SECTION}), "
            f"or leave the phase out with plan_skip")


@dataclass(frozen=True)
class _Variable:
    """An argument that is the value of an environment variable (a file the command gets)."""

    name: str


def _command_options(arguments: list, config: dict, repository: dict) -> dict:
    """argv when every argument is plain; else a shell command that reads the file variables' values.

    ``repository``: the files of the clusterctl repository built from ``versions`` (the option ``env_dirs``).
    """
    if config:
        arguments = [*arguments, "--config", _Variable(CONFIG_VARIABLE)]
    if not any(isinstance(argument, _Variable) for argument in arguments):
        return {"argv": [PROGRAM, *arguments]}
    words = [f'"${argument.name}"' if isinstance(argument, _Variable) else shlex.quote(argument)
             for argument in arguments]
    options: dict = {"shell": True, "cmd": " ".join(["exec", PROGRAM, *words])}
    if config:
        options["env_files"] = {CONFIG_VARIABLE: yaml_io.safe_dump(config, sort_keys=False)}
    if repository:
        options["env_dirs"] = {REPOSITORY_VARIABLE: repository}
    return options


def _semver_order(version: str) -> tuple:
    major, minor, patch, prerelease = SEMVER.match(version).groups()
    return int(major), int(minor), int(patch), prerelease is None, prerelease or ""


class _Reader:
    """Reads one Clusterctl document's fields: problems for the wrong shape, ``_Refused`` for what cannot run."""

    def __init__(self, content: dict, origin: DocumentOrigin, problems: Problems, root: str | None = None):
        self.content, self.origin, self.problems, self.root = content, origin, problems, root
        self.repository: dict = {}  # the clusterctl repository's files (env_dirs) for providers with versions

    def action(self) -> str | None:
        action = self.content.get("action")
        if action in (INIT, MOVE):
            return action
        wanted = f"expected {INIT} or {MOVE} (what clusterctl does)"
        self.problems.add(self.origin.at("action"), f"{wanted}, got {action!r}" if action else f"missing: {wanted}")
        return None

    def mapping(self, key: str, fields: tuple) -> dict | None:
        value = self.content.get(key)
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.problems.add(self.origin.at(key), f"expected a mapping, got {type_name(value)}")
            return None
        unknown_fields(value, fields, self.origin.at, self.problems, prefix=f"{key}.")
        return value

    def text(self, mapping: dict, key: str, path: str) -> str:
        value = mapping.get(key)
        if value is None or value == "":
            return ""
        if not isinstance(value, str):
            self.problems.add(self.origin.at(path), f"expected a string, got {type_name(value)}")
            return ""
        return value

    def flag(self, mapping: dict, key: str, path: str) -> bool | None:
        value = mapping.get(key)
        if value is not None and not isinstance(value, bool):
            self.problems.add(self.origin.at(path), f"expected true or false, got {type_name(value)}")
            return None
        return value

    def init_arguments(self, init: dict) -> list[str]:
        """clusterctl init's provider flags, in a fixed order."""
        if init.get("kubeConfigRef"):
            raise _Refused("init-options.kubeConfigRef", "the phase's cluster comes from the inventory; remove "
                                                         "kubeConfigRef and set kube_kubeconfig on the host that "
                                                         "metadata.clusterName names")
        arguments = []
        for key, flag in INIT_FLAGS:
            providers = self._providers_list(init.get(key), f"init-options.{key}", several=key != "core-provider")
            if providers:
                arguments += [flag, ",".join(providers)]
        return arguments

    def _providers_list(self, value, path: str, several: bool) -> list[str]:
        """``name:version`` entries: a list, or one string (the later layout: comma-separated)."""
        if value is None or value == "" or value == []:
            return []
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, list) or not all(isinstance(item, str) and item.strip() for item in items):
            self.problems.add(self.origin.at(path), f"expected provider names with versions (cluster-api:v0.3.7)"
                                                    f"{', a list or comma-separated' if several else ''}, "
                                                    f"got {type_name(value)}")
            return []
        items = [item.strip() for item in items]
        if not several and len(items) > 1:
            self.problems.add(self.origin.at(path), f"expected one core provider, got {len(items)}")
        return items

    def config(self) -> dict:
        """clusterctl's configuration file: providers, images and additional variables ({} when none)."""
        config: dict = {}
        providers = [self._provider(item, f"providers[{position}]")
                     for position, item in enumerate(self._list("providers"))]
        providers = [provider for provider in providers if provider is not None]
        if providers:
            config["providers"] = providers
        images = self._images()
        if images:
            config["images"] = images
        config.update(self._additional_vars())
        env_vars = self.flag(self.content, "env-vars", "env-vars")
        if env_vars is False:
            raise _Refused("env-vars", "clusterctl always reads variables from the environment as well; remove "
                                       "env-vars: false, and unset the variables you do not want it to use")
        return config

    def _list(self, key: str) -> list:
        value = self.content.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            self.problems.add(self.origin.at(key), f"expected a list, got {type_name(value)}")
            return []
        return value

    def _provider(self, item, path: str) -> dict | None:
        if not isinstance(item, dict):
            self.problems.add(self.origin.at(path), f"expected a provider (name, type, url), got {type_name(item)}")
            return None
        unknown_fields(item, PROVIDER_FIELDS, self.origin.at, self.problems, prefix=f"{path}.")
        name, kind = self.text(item, "name", f"{path}.name"), self.text(item, "type", f"{path}.type")
        if not name:
            self.problems.add(self.origin.at(f"{path}.name"), "missing: the provider's name (such as metal3)")
        if kind not in PROVIDER_TYPES:
            self.problems.add(self.origin.at(f"{path}.type"), f"expected one of {', '.join(PROVIDER_TYPES)}, "
                                                              f"got {kind!r}")
        own_repository = self.flag(item, "clusterctl-repository", f"{path}.clusterctl-repository")
        if self.flag(item, "variable-substitution", f"{path}.variable-substitution") is False:
            raise _Refused(f"{path}.variable-substitution", "clusterctl substitutes variables in every provider's "
                                                            "components; remove variable-substitution: false")
        versions = item.get("versions")
        if versions and not own_repository:
            # airshipctl ignored url here (clusterctl's own repository only with clusterctl-repository: true)
            url = self._repository_url(name, kind, versions, f"{path}.versions")
            return {"name": name, "url": url, "type": kind} if url else None
        url = self.text(item, "url", f"{path}.url")
        if not url:
            self.problems.add(self.origin.at(f"{path}.url"), "missing: where clusterctl reads the provider's "
                                                             "components (an https URL or an absolute path)")
            return None
        if not (urlparse(url).scheme in READABLE_URL_SCHEMES or url.startswith("/")):
            # airshipctl builds a url relative to the target path into its clusterctl repository, under the
            # version its last directory names (pkg/phase/executors/clusterctl.go, initRepoData)
            version = posixpath.basename(url.rstrip("/"))
            if not SEMVER.match(version):
                self.problems.add(self.origin.at(f"{path}.url"), f"{url}: its last directory, {version!r}, is the "
                                                                 f"version clusterctl finds it under, as airshipctl "
                                                                 f"built it: expected a semantic version (v0.4.2)")
                return None
            url = self._repository_url(name, kind, {version: url}, f"{path}.url", about=f"{path}.url")
            return {"name": name, "url": url, "type": kind} if url else None
        return {"name": name, "url": url, "type": kind}

    def _repository_url(self, name: str, kind: str, versions, path: str, about: str | None = None) -> str | None:
        """The components URL of a provider whose versions are kustomize entry points; their files are added to
        the repository. ``None`` when the versions have problems (each added)."""
        if not isinstance(versions, dict):
            self.problems.add(self.origin.at(path), f"expected a mapping of versions to kustomize entry points "
                                                    f"(v0.3.7: path/to/kustomization), got {type_name(versions)}")
            return None
        ordered = []
        for version, entry_point in versions.items():
            where = f"{path}.{version}"
            if not isinstance(version, str) or not SEMVER.match(version):
                self.problems.add(self.origin.at(where), f"expected a semantic version (such as v0.3.7) as key, "
                                                         f"got {version!r}")
            elif not isinstance(entry_point, str) or not entry_point:
                self.problems.add(self.origin.at(where), f"expected a kustomize entry point (a directory relative "
                                                         f"to the target path), got {type_name(entry_point)}")
            else:
                ordered.append(version)
        if not ordered or kind not in REPOSITORY_NAMES or not name:
            return None
        prefix, components = REPOSITORY_NAMES[kind]
        label = f"{prefix}{name}"
        for version in ordered:
            where = self.origin.at(about or f"{path}.{version}")
            # like airshipctl, an absolute entry point is still under the target path
            relative = versions[version].lstrip("/")
            entry_point = {"kustomize": os.path.join(self.root, relative) if self.root else relative, "about": where}
            self.repository[f"{label}/{version}/{components}"] = {
                **entry_point, "exclude_kinds": [METADATA_KIND], "exclude_labels": NOT_COMPONENTS}
            self.repository[f"{label}/{version}/{METADATA_FILE}"] = {**entry_point, "kind": METADATA_KIND}
        # the version clusterctl takes when init names none: the highest, as airshipctl's default version
        default = max(ordered, key=_semver_order)
        return f"file://${{{REPOSITORY_VARIABLE}}}/{label}/{default}/{components}"

    def _mapping(self, key: str, expected: str) -> dict:
        """An optional mapping field of the document ({} when absent, or when it is a problem)."""
        value = self.content.get(key)
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.problems.add(self.origin.at(key), f"expected {expected}, got {type_name(value)}")
            return {}
        return value

    def _images(self) -> dict:
        images = self._mapping("images", "a mapping of components to {repository, tag}")
        shown = {}
        for component, meta in images.items():
            path = f"images.{component}"
            if not isinstance(meta, dict):
                self.problems.add(self.origin.at(path), f"expected a mapping (repository, tag), got {type_name(meta)}")
                continue
            unknown_fields(meta, IMAGE_FIELDS, self.origin.at, self.problems, prefix=f"{path}.")
            shown[str(component)] = {key: self.text(meta, key, f"{path}.{key}") for key in IMAGE_FIELDS
                                     if meta.get(key)}
        return shown

    def _additional_vars(self) -> dict:
        variables = self._mapping("additional-vars", "a mapping of variable names to strings")
        found = {}
        for name, value in variables.items():
            path = f"additional-vars.{name}"
            if name in CONFIG_KEYS:
                self.problems.add(self.origin.at(path), f"{name} is a key of clusterctl's configuration, not a "
                                                        f"variable; give it as {name} of this document")
            elif not isinstance(value, str):
                self.problems.add(self.origin.at(path), f"expected a string, got {type_name(value)}")
            else:
                found[str(name)] = value
        return found
