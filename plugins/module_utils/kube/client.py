# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""An API session from a resolved kubeconfig held in memory.

The kubernetes client's config loader does the authentication work (client
certificates, bearer tokens, exec plugins, OIDC). It needs certificate and key
material as files for the TLS stack; those go to a private 0700 directory that
is removed when the session ends, never to a shared location and never left
behind (the loader's own clean-up runs only at interpreter exit, which forked
Ansible workers may skip).
"""

from __future__ import annotations

import os
import shutil
import string
from contextlib import contextmanager
from urllib.parse import quote

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.private_files import private_directory

try:
    from kubernetes import client as k8s_client
    from kubernetes.config import kube_config
    from kubernetes.config.config_exception import ConfigException
except ImportError as exc:  # reported when a session is first needed
    k8s_client = None
    KUBERNETES_IMPORT_ERROR = exc
else:
    KUBERNETES_IMPORT_ERROR = None


def require_kubernetes():
    """Fail clearly when the kubernetes Python client is missing on the controller."""
    if KUBERNETES_IMPORT_ERROR is not None:
        raise PhasekitError(
            "the 'kubernetes' Python package is required on the Ansible controller "
            f"(pip install -r requirements.txt): {KUBERNETES_IMPORT_ERROR}")


IMPERSONATE_USER = "Impersonate-User"
IMPERSONATE_UID = "Impersonate-Uid"
IMPERSONATE_GROUP = "Impersonate-Group"
IMPERSONATE_EXTRA_PREFIX = "Impersonate-Extra-"
# RFC 7230 token characters: kept as they are in an extra's header name, the rest percent-encoded (client-go)
_HEADER_KEY_SAFE = "!#$&'*+-.^_`|~" + string.ascii_letters + string.digits


def impersonation_headers(kubeconfig: dict) -> list[tuple[str, str]]:
    """The impersonation headers client-go sends for the kubeconfig's user: ``as``, ``as-uid``, ``as-groups``
    (one header each) and ``as-user-extra`` (one header per value). The kubernetes client ignores these
    fields; every request of the collection sends them. Raises PhasekitError for groups, uid or extra without a
    user, as kubectl refuses them."""
    users = kubeconfig.get("users") or []
    user = (users[0].get("user") if users else None) or {}
    name = user.get("as") or ""
    groups = list(user.get("as-groups") or [])
    uid = user.get("as-uid") or ""
    extra = user.get("as-user-extra") or {}
    if not name and (groups or uid or extra):
        raise PhasekitError(f"kubeconfig user {users[0].get('name') if users else ''!r}: requesting uid, groups or "
                            "user-extra without impersonating a user: set 'as' too")
    headers = [(IMPERSONATE_USER, name)] if name else []
    if uid:
        headers.append((IMPERSONATE_UID, uid))
    headers += [(IMPERSONATE_GROUP, group) for group in groups]
    for key in sorted(extra):
        headers += [(IMPERSONATE_EXTRA_PREFIX + quote(key, safe=_HEADER_KEY_SAFE), value) for value in extra[key]]
    return headers


@contextmanager
def api_client(kubeconfig: dict, context: str | None = None, *, pool_maxsize: int | None = None):
    """Yield a ``kubernetes.client.ApiClient`` for the kubeconfig dict and context.

    Certificate files the TLS stack needs live only for the duration of the block. Requests go through
    ``session.ApiSession`` (the one transport: it sends the impersonation headers of ``as``/``as-groups``/
    ``as-uid``/``as-user-extra``, which the generated API classes would not).
    ``pool_maxsize`` sizes the one HTTP connection pool shared by every thread
    that uses the client (default: the client's own, 5 per CPU).
    """
    require_kubernetes()
    with private_directory("phasekit-tls-") as material_dir:
        try:
            yield from _client_in(material_dir, kubeconfig, context, pool_maxsize)
        finally:
            _forget_material(material_dir)


def _client_in(material_dir: str, kubeconfig: dict, context: str | None, pool_maxsize: int | None):
    configuration = k8s_client.Configuration()
    try:
        loader = kube_config.KubeConfigLoader(
            config_dict=kubeconfig, active_context=context, temp_file_path=material_dir)
        loader.load_and_set(configuration)
    except ConfigException as exc:
        raise PhasekitError(f"cannot use kubeconfig: {exc}") from None
    _own_material(configuration, material_dir)
    if pool_maxsize:
        configuration.connection_pool_maxsize = pool_maxsize
    impersonation = impersonation_headers(kubeconfig)
    api = k8s_client.ApiClient(configuration=configuration)
    api.phasekit_impersonation = impersonation  # read by ApiSession, the one transport that sends them
    try:
        yield api
    finally:
        api.close()


def _own_material(configuration, material_dir: str) -> None:
    """Give this client its own copies of the TLS files. The loader hands out a file it wrote earlier for the same
    content, possibly into another client's directory, which is removed when that client closes: a long-lived
    client (a fleet step's session) would then fail to open new connections."""
    written = set(kube_config._temp_files.values())  # pylint: disable=protected-access
    for attribute in ("ssl_ca_cert", "cert_file", "key_file"):
        path = getattr(configuration, attribute, None)
        if not path or path.startswith(material_dir + os.sep) or path not in written:
            continue
        copy = os.path.join(material_dir, f"{attribute}-{os.path.basename(path)}")
        descriptor = os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with open(path, "rb") as source, os.fdopen(descriptor, "wb") as target:
            target.write(source.read())
        setattr(configuration, attribute, copy)


def _forget_material(material_dir: str):
    """Remove the TLS files and the loader's memory of them (it would hand out stale paths)."""
    shutil.rmtree(material_dir, ignore_errors=True)
    stale = [key for key, path in kube_config._temp_files.items()  # pylint: disable=protected-access
             if path.startswith(material_dir)]
    for key in stale:
        kube_config._temp_files.pop(key, None)  # pylint: disable=protected-access
