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

import shutil
import tempfile
from contextlib import contextmanager

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError

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


@contextmanager
def api_client(kubeconfig: dict, context: str | None = None, *, pool_maxsize: int | None = None):
    """Yield a ``kubernetes.client.ApiClient`` for the kubeconfig dict and context.

    Certificate files the TLS stack needs live only for the duration of the block.
    ``pool_maxsize`` sizes the one HTTP connection pool shared by every thread
    that uses the client (default: the client's own, 5 per CPU).
    """
    require_kubernetes()
    material_dir = tempfile.mkdtemp(prefix="phasekit-tls-")
    try:
        configuration = k8s_client.Configuration()
        try:
            loader = kube_config.KubeConfigLoader(
                config_dict=kubeconfig, active_context=context, temp_file_path=material_dir)
            loader.load_and_set(configuration)
        except ConfigException as exc:
            raise PhasekitError(f"cannot use kubeconfig: {exc}") from None
        if pool_maxsize:
            configuration.connection_pool_maxsize = pool_maxsize
        api = k8s_client.ApiClient(configuration=configuration)
        try:
            yield api
        finally:
            api.close()
    finally:
        _forget_material(material_dir)


def _forget_material(material_dir: str):
    """Remove the TLS files and the loader's memory of them (it would hand out stale paths)."""
    shutil.rmtree(material_dir, ignore_errors=True)
    stale = [key for key, path in kube_config._temp_files.items()  # pylint: disable=protected-access
             if path.startswith(material_dir)]
    for key in stale:
        kube_config._temp_files.pop(key, None)  # pylint: disable=protected-access
