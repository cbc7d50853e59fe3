# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Kubeconfig source references as an inventory keeps them in ``kube_kubeconfig``.

An inventory names where a kubeconfig comes from, never what it contains:
``ansible-inventory --list`` prints every host variable, so inline kubeconfig
content and literal request headers (bearer tokens) are refused here. Relative
file paths are anchored to the file that wrote them, so a play finds them from
any working directory. Everything else about sources is checked by the
kubeconfig module (``normalize_sources``), the same checks a play applies.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.sources import normalize_sources

_KEPT_OUT = ("a file (path, sops, vault or bundle source), an environment variable (env source) "
             "or a Secret on the parent cluster (secret source)")


def anchor_path(path: str, base_dir: str) -> str:
    """A relative path made absolute against ``base_dir``; ``~``, absolute and templated paths kept."""
    if not path or path.startswith("~") or os.path.isabs(path) or "{{" in path:
        return path
    return os.path.normpath(os.path.join(base_dir, path))


def anchor_path_list(paths: str, base_dir: str) -> str:
    """A ``KUBECONFIG``-style list (``a:b``) with every entry anchored; a templated list is kept."""
    if "{{" in paths:
        return paths
    return os.pathsep.join(anchor_path(part, base_dir) for part in paths.split(os.pathsep))


def _refuse_inline_secrets(spec, where: str):
    here = f"{where}, source {spec.index}"
    if spec.kind == "content":
        raise PhasekitError(f"{here}: inline kubeconfig content does not belong in an inventory (host variables "
                            f"are shown by ansible-inventory --list); keep it in {_KEPT_OUT}")
    if spec.kind == "url" and "{{" not in str(spec.value):
        parts = urlsplit(str(spec.value))
        if parts.username or parts.password or parts.query:
            raise PhasekitError(f"{here}: the url carries credentials (user:password@ or a query string such as "
                                "?token=), which ansible-inventory --list would show; put the token in a header with "
                                "a template, e.g. headers: {Authorization: \"Bearer {{ lookup('ansible.builtin.env', "
                                "'KUBECONFIG_TOKEN') }}\"}")
    headers = spec.options.get("headers") or {} if spec.kind == "url" else {}
    literal = sorted(str(name) for name, text in headers.items() if "{{" not in str(text))
    if literal:
        raise PhasekitError(f"{here}: url source header(s) {', '.join(literal)} hold a literal value, which "
                            "ansible-inventory --list would show; use a template such as "
                            "\"{{ lookup('ansible.builtin.env', 'KUBECONFIG_TOKEN') }}\"")


def _anchored(source, base_dir: str):
    if isinstance(source, str):
        return anchor_path_list(source, base_dir)
    source = dict(source)
    if isinstance(source.get("path"), str):
        source["path"] = anchor_path_list(source["path"], base_dir)
    for key in ("sops", "vault", "bundle", "ca_path"):
        if isinstance(source.get(key), str):
            source[key] = anchor_path(source[key], base_dir)
    return source


def check_source_refs(value, *, base_dir: str, where: str):
    """Validate a ``kube_kubeconfig`` value and anchor its relative paths; the shape is kept.

    Accepts a path string (``KUBECONFIG``-style list), one source mapping, or a list of them.
    """
    if value in ("", [], {}):
        raise PhasekitError(f"{where}: kubeconfig sources must not be empty")
    for spec in normalize_sources(value, where):
        _refuse_inline_secrets(spec, where)
    if isinstance(value, list):
        return [_anchored(item, base_dir) for item in value]
    return _anchored(value, base_dir)
