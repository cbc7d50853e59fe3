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

from ansible_collections.phasekit.kube.plugins.module_utils.compat import is_vault_object
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.sources import FILE_KINDS, normalize_sources

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
    # a vault-encrypted value (!vault) is shown encrypted by ansible-inventory --list: not a literal secret
    literal = sorted(str(name) for name, text in headers.items() if not is_vault_object(text) and "{{" not in str(text))
    if literal:
        raise PhasekitError(f"{here}: url source header(s) {', '.join(literal)} hold a literal value, which "
                            "ansible-inventory --list would show; use a template such as "
                            "\"{{ lookup('ansible.builtin.env', 'KUBECONFIG_TOKEN') }}\", or encrypt it with "
                            "ansible-vault encrypt_string (a !vault value)")


def relative_path(path: str, base_dir: str) -> str:
    """An absolute path written relative to ``base_dir``, the inverse of ``anchor_path``.

    Kept absolute when it shares only the root with ``base_dir`` (``/etc/kubernetes/admin.conf``): such a path
    does not move with the site, while ``../../etc`` would break when the site does.
    """
    if not os.path.isabs(path) or "{{" in path:
        return path
    if os.path.dirname(os.path.commonpath([path, base_dir])) == os.path.commonpath([path, base_dir]):
        return path  # the common part is the root
    return os.path.relpath(path, base_dir)


def _with_paths(source, one_path, path_list):
    """A source (string or mapping) with its file paths passed through ``one_path`` / ``path_list``."""
    if isinstance(source, str):
        return path_list(source)
    source = dict(source)
    if isinstance(source.get("path"), str):
        source["path"] = path_list(source["path"])
    for key in FILE_KINDS + ("ca_path",):  # one file each (a url source's ca_path too)
        if isinstance(source.get(key), str):
            source[key] = one_path(source[key])
    return source


def _anchored(source, base_dir: str):
    return _with_paths(source, lambda path: anchor_path(path, base_dir),
                       lambda paths: anchor_path_list(paths, base_dir))


def relative_source_refs(value, base_dir: str):
    """Sources as ``check_source_refs`` returns them, with absolute paths made relative to ``base_dir``.

    For writing them into a file in ``base_dir`` that ``check_source_refs`` reads back to the same sources.
    """
    def relative_list(paths: str) -> str:
        if "{{" in paths:
            return paths
        return os.pathsep.join(relative_path(part, base_dir) for part in paths.split(os.pathsep))

    def relative(source):
        return _with_paths(source, lambda path: relative_path(path, base_dir), relative_list)

    return [relative(item) for item in value] if isinstance(value, list) else relative(value)


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
