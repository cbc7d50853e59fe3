# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""What kube/client.py takes from the kubernetes Python client (its config loader's private temp-file table, the
proxy it reads from a kubeconfig) works on every major requirements.txt allows: CI runs the oldest allowed major on
one line (the Makefile's KUBERNETES_OLDEST_LINE) and the newest on the others."""

from __future__ import annotations

import base64
import json
import os
import sys
from pathlib import Path

import kubernetes
import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kube.client import (
    SUPPORTED_CLIENT, api_client, check_loader_members)

from pki import make_pki

ROOT = Path(__file__).resolve().parents[5]


def kubernetes_requirement() -> Requirement:
    lines = (ROOT / "requirements.txt").read_text().splitlines()
    return next(Requirement(line) for line in lines if line.startswith("kubernetes"))


def test_the_client_is_bounded_to_the_majors_ci_runs():
    """An upper bound below the next major (kube/client.py uses private members), the installed client inside."""
    requirement = kubernetes_requirement()
    upper = [spec for spec in requirement.specifier if spec.operator == "<"]
    assert len(upper) == 1 and Version(upper[0].version).release[1:] in ((), (0,), (0, 0)), requirement
    assert requirement.specifier.contains(kubernetes.__version__), (kubernetes.__version__, str(requirement))


def test_a_client_without_the_loaders_private_members_is_refused_naming_its_version():
    """A future client that drops them fails with a clear message, not an AttributeError; the range it names is
    requirements.txt's."""
    assert Requirement(SUPPORTED_CLIENT).specifier == kubernetes_requirement().specifier
    check_loader_members()  # the installed client has them
    with pytest.raises(PhasekitError) as refused:
        check_loader_members(object())
    assert str(refused.value) == (f"the kubernetes Python client {kubernetes.__version__} is not supported: its "
                                  f"config loader has no _create_temp_file_with_content, _temp_files; install "
                                  f"'{SUPPORTED_CLIENT}' (requirements.txt)")


def test_the_execution_environment_installs_the_same_requirements():
    """meta/execution-environment.yml names requirements.txt: the bound holds in the EE too."""
    import yaml

    definition = yaml.safe_load((ROOT / "meta" / "execution-environment.yml").read_text())
    assert definition["dependencies"]["python"] == "requirements.txt"


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("pki"))


def exec_kubeconfig(pki, credential: dict) -> dict:
    """A kubeconfig whose user is an exec plugin (this Python) printing ``credential`` as its ExecCredential."""
    output = json.dumps({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                         "status": credential})
    ca = base64.b64encode((pki / "ca.crt").read_bytes()).decode()
    return {"apiVersion": "v1", "kind": "Config", "current-context": "c",
            "clusters": [{"name": "k", "cluster": {"server": "https://127.0.0.1:6443",
                                                   "certificate-authority-data": ca}}],
            "users": [{"name": "u", "user": {"exec": {
                "apiVersion": "client.authentication.k8s.io/v1", "command": sys.executable,
                "args": ["-c", f"print({output!r})"], "interactiveMode": "Never"}}}],
            "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}]}


def test_an_exec_plugin_s_client_certificate_reaches_the_client(pki):
    """The certificate and key an exec plugin returns are written to files of this client's own (through the
    loader's temp-file table, which kube/client.py wraps) and gone when the client closes."""
    certificate, key = (pki / "client.crt").read_text(), (pki / "client.key").read_text()
    config = exec_kubeconfig(pki, {"clientCertificateData": certificate, "clientKeyData": key})
    with api_client(config) as api:
        cert_file, key_file = api.configuration.cert_file, api.configuration.key_file
        assert cert_file and key_file, "the loader dropped the exec plugin's certificate"
        assert (Path(cert_file).read_text(), Path(key_file).read_text()) == (certificate, key)
        assert oct(os.stat(key_file).st_mode & 0o777) == "0o600"
    assert not os.path.exists(cert_file) and not os.path.exists(key_file)


def test_two_clients_with_one_exec_certificate_each_get_their_own_file(pki):
    """The loader's table would hand the second client the first one's file (removed when the first closes)."""
    config = exec_kubeconfig(pki, {"clientCertificateData": (pki / "client.crt").read_text(),
                                   "clientKeyData": (pki / "client.key").read_text()})
    with api_client(config) as first:
        with api_client(config) as second:
            assert first.configuration.cert_file != second.configuration.cert_file
        assert Path(first.configuration.cert_file).is_file()
