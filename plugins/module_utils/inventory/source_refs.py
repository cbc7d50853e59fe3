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
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.sources import (
    decrypted_path,
    file_kinds,
    normalize_sources,
)

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


def _with_paths(source, one_path, path_list, *, is_path=lambda value: isinstance(value, str)):
    """A source (string or mapping) with its file paths (the values ``is_path`` accepts, by default strings)
    passed through ``one_path`` / ``path_list``; anything else (a ``!vault`` value) is kept."""
    if is_path(source):
        return path_list(source)
    if not isinstance(source, dict):
        return source
    source = dict(source)
    if is_path(source.get("path")):
        source["path"] = path_list(source["path"])
    for key in file_kinds() + ("ca_path",):  # one file each (a url source's ca_path too)
        if is_path(source.get(key)):
            source[key] = one_path(source[key])
    return source


def _decrypted_paths(source, base_dir: str, where: str):
    """A source with its ``!vault`` paths decrypted for the checks, each checked to need no anchoring: the host
    keeps the encrypted value (``ansible-inventory --list`` shows it encrypted), so its path cannot be rewritten."""
    def decrypt(anchor):
        def checked(value):
            plain = decrypted_path(value, where)
            if anchor(plain, base_dir) != plain:
                raise PhasekitError(f"{where}: a vault-encrypted path must be absolute (or start with ~ or be a "
                                    "template): a relative one cannot be made relative to this file without "
                                    "storing it in clear")
            return plain
        return checked

    return _with_paths(source, decrypt(anchor_path), decrypt(anchor_path_list), is_path=is_vault_object)


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
    if not is_vault_object(value) and value in ("", [], {}):  # comparing a !vault value would decrypt it
        raise PhasekitError(f"{where}: kubeconfig sources must not be empty")
    if isinstance(value, list):
        checked = [_decrypted_paths(item, base_dir, where) for item in value]
    else:
        checked = _decrypted_paths(value, base_dir, where)
    for spec in normalize_sources(checked, where):
        _refuse_inline_secrets(spec, where)
    if isinstance(value, list):
        return [_anchored(item, base_dir) for item in value]
    return _anchored(value, base_dir)
