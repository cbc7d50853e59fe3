# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Minify, flatten and path resolution, as client-go's clientcmd does them.

Relative file references inside a kubeconfig are relative to the directory of
the file that defines the entry (for a kubeconfig that is not a file: the
current directory). ``kubectl config view`` prints them as written and only
``--flatten`` reads them; connecting resolves them first. Both are here.
"""

from __future__ import annotations

import base64
import os

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.model import SINGULAR
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.model import Kubeconfig
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.model import Origin

# file reference -> the field flatten embeds it into
EMBEDDED_FILES = {
    "clusters": (("certificate-authority", "certificate-authority-data"),),
    "users": (("client-certificate", "client-certificate-data"), ("client-key", "client-key-data")),
}
# every field holding a path that client-go resolves before connecting
PATH_FIELDS = {
    "clusters": ("certificate-authority",),
    "users": ("client-certificate", "client-key", "tokenFile"),
}


def known(names) -> str:
    """A list of names for messages."""
    names = sorted(names)
    return ", ".join(repr(name) for name in names) if names else "none"


def undefined_context(name: str, from_current_context: bool) -> str:
    """How a message names a context no source defines: in full when a setting named it; by its start only when it is
    a kubeconfig's current-context, a field of a file of credentials that may hold one pasted in the wrong place."""
    if not from_current_context:
        return f"context {name!r}"
    start = f"{name[:4]!r}..., " if len(name) > 8 else ""
    return f"the current-context ({start}{len(name)} characters)"


def minify_kubeconfig(config: Kubeconfig, context: str | None) -> Kubeconfig:
    """Keep only ``context`` (default: current-context) with its cluster and user, like ``--minify``."""
    from_current_context = not context
    context = context or config.current_context
    if not context:
        raise PhasekitError("no context selected and the kubeconfig has no current-context; "
                            f"known contexts: {known(config.contexts)}")
    if context not in config.contexts:
        raise PhasekitError(f"{undefined_context(context, from_current_context)} is not defined; "
                            f"known contexts: {known(config.contexts)}")
    entry = config.contexts[context]
    minified = Kubeconfig(
        current_context=context,
        extensions=config.extensions,
        colors=config.colors,
        preference_extensions=config.preference_extensions,
    )
    _keep(config, minified, "contexts", context)
    for section, key in (("clusters", "cluster"), ("users", "user")):
        name = entry[key]
        if not name:
            continue
        if name not in config.section(section):
            raise PhasekitError(
                f"context {context!r} ({defined_by(config, 'contexts', context)}) names {key} {name!r}, "
                f"which no kubeconfig source defines; known {section}: {known(config.section(section))}")
        _keep(config, minified, section, name)
    return minified.copy()


def _keep(source: Kubeconfig, target: Kubeconfig, section: str, name: str) -> None:
    target.section(section)[name] = source.section(section)[name]
    target.origins[(section, name)] = source.origin_of(section, name)


def defined_by(config: Kubeconfig, section: str, name: str) -> str:
    """``from kubeconfig source 2 (path: a.yaml)`` for messages."""
    origin = config.origin_of(section, name)
    return f"from {origin.label()}" if origin else "inline"


def anchor_directory(origin: Origin | None) -> str:
    """The absolute directory relative paths of an entry are resolved against."""
    directory = os.path.dirname(origin.path) if origin and origin.path else ""
    return os.path.normpath(os.path.join(os.getcwd(), directory or "."))


def resolve_path(path: str, base: str) -> str:
    """client-go's ResolvePath: absolute paths are kept as written, relative ones joined and cleaned."""
    if not path or os.path.isabs(path):
        return path
    return os.path.normpath(os.path.join(base, path))


def resolve_local_paths(config: Kubeconfig) -> None:
    """Make every file reference absolute, against the directory of the file that defined it."""
    for section, fields in PATH_FIELDS.items():
        for name, entry in config.section(section).items():
            base = anchor_directory(config.origin_of(section, name))
            for field_name in fields:
                if entry.get(field_name):
                    entry[field_name] = resolve_path(entry[field_name], base)
            command = (entry.get("exec") or {}).get("command", "")
            if os.sep in command:  # a bare command name is looked up on PATH, not resolved
                entry["exec"]["command"] = resolve_path(command, base)


def flatten_kubeconfig(config: Kubeconfig) -> None:
    """Embed certificate-authority, client-certificate and client-key files as data, like ``--flatten``."""
    for section, pairs in EMBEDDED_FILES.items():
        for name, entry in config.section(section).items():
            origin = config.origin_of(section, name)
            base = anchor_directory(origin)
            for path_field, data_field in pairs:
                if not entry.get(path_field):
                    continue
                where = f"{SINGULAR[section]} {name!r}"
                if origin:
                    where = f"{origin.label()}: {where}"
                if entry.get(data_field):
                    raise PhasekitError(f"{where}: both {path_field} and {data_field} are set; keep one")
                path = resolve_path(entry.pop(path_field), base)
                try:
                    with open(path, "rb") as handle:
                        content = handle.read()
                except OSError as exc:
                    raise PhasekitError(f"{where}: {path_field} {path}: cannot read: {exc.strerror}") from None
                if content:
                    entry[data_field] = base64.b64encode(content).decode("ascii")
