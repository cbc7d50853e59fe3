# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Reading single sources: files, https URLs (loopback server with a CA made here), sops failures."""

from __future__ import annotations

import http.server
import socket
import ssl
import threading
import time

import pytest
from vaulted import vaulted
from pki import make_pki

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.readers import SourceHooks
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.readers import decrypt_sops
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.readers import explain_sops_failure
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.readers import fetch_https
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.readers import read_kubeconfig_file
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.readers import read_unit
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.sources import expand_source
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.sources import normalize_sources

KUBECONFIG = b"contexts: [{name: remote, context: {cluster: c}}]\n"


def test_read_file_missing_is_none(tmp_path):
    assert read_kubeconfig_file(str(tmp_path / "absent.yaml")) is None


def test_read_file_directory_is_an_error(tmp_path):
    with pytest.raises(PhasekitError, match="is a directory, not a kubeconfig file"):
        read_kubeconfig_file(str(tmp_path))


def test_read_file_below_a_file_is_an_error(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(PhasekitError, match="cannot read the file: Not a directory"):
        read_kubeconfig_file(str(tmp_path / "file" / "config"))


@pytest.mark.parametrize("source", [{"vault": "x.yaml"}, {"secret": "name"}], ids=["vault", "secret"])
def test_ansible_only_sources_need_the_ansible_hooks(source):
    unit = expand_source(normalize_sources(source, "test")[0], {})[0]
    with pytest.raises(PhasekitError, match="read through Ansible"):
        read_unit(unit, SourceHooks({}))


@pytest.mark.parametrize("stderr, explanation", [
    (b"Failed to get the data key required to decrypt the SOPS file.\n\nGroup 0: FAILED\n  age1xyz: FAILED\n"
     b"    - | failed to load age identities\n", "no age identity matches the file's recipients; set SOPS_AGE_KEY_FILE"),
    (b"Failed to get the data key required to decrypt the SOPS file.\n  arn:aws:kms: FAILED\n",
     "no available key can decrypt the file's data key"),
    (b"Error unmarshalling file: sops metadata not found\n", "the file is not SOPS-encrypted"),
    (b"Error decrypting tree: MAC mismatch\n", "modified after encryption"),
    (b"\nsomething else entirely\nsecond line\n", "something else entirely"),
    (b"", "sops failed without a message"),
], ids=["age-key-missing", "other-key-missing", "not-encrypted", "tampered", "first-line", "silent"])
def test_sops_failures_explained(stderr, explanation):
    assert explanation in explain_sops_failure(stderr)


def test_sops_missing_binary(tmp_path):
    (tmp_path / "s.enc.yaml").write_text("x: 1")
    with pytest.raises(PhasekitError, match="the sops binary is not on PATH"):
        decrypt_sops(str(tmp_path / "s.enc.yaml"), None, {"PATH": str(tmp_path)})


def test_sops_missing_file(tmp_path):
    with pytest.raises(PhasekitError, match="no such file"):
        decrypt_sops(str(tmp_path / "absent.enc.yaml"), None, {"PATH": ""})


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    """A CA and a server certificate for 127.0.0.1, made for this test run."""
    return make_pki(tmp_path_factory.mktemp("pki"))


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - http.server's naming
        if self.path == "/kubeconfig":
            if self.headers.get("Authorization") != "Bearer let-me-in":
                self.send_error(401, "Unauthorized")
                return
            self.send_response(200)
            self.end_headers()
            self.wfile.write(KUBECONFIG)
        elif self.path == "/plain-redirect":
            self.send_response(302)
            self.send_header("Location", "http://127.0.0.1:1/kubeconfig")
            self.end_headers()
        else:
            self.send_error(404, "Not Found")

    def log_message(self, *args):  # keep test output quiet
        pass


@pytest.fixture(scope="module")
def server(pki):
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki / "server.crt", pki / "server.key")
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"https://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def test_fetch_with_ca_bundle_and_headers(server, pki):
    body = fetch_https(f"{server}/kubeconfig", ca_path=str(pki / "ca.crt"),
                       headers={"Authorization": "Bearer let-me-in"}, timeout=5)
    assert body == KUBECONFIG


def test_fetch_with_a_vault_encrypted_header(server, pki):
    """A !vault header value from a site file is decrypted when the request is sent."""
    body = fetch_https(f"{server}/kubeconfig", ca_path=str(pki / "ca.crt"),
                       headers={"Authorization": vaulted("Bearer let-me-in")}, timeout=5)
    assert body == KUBECONFIG


def test_fetch_without_validation(server):
    assert fetch_https(f"{server}/kubeconfig", headers={"Authorization": "Bearer let-me-in"},
                       validate_certs=False, timeout=5) == KUBECONFIG


@pytest.mark.parametrize("path, options, message", [
    ("/kubeconfig", {"headers": {"Authorization": "Bearer let-me-in"}},
     "certificate verification failed .*; set ca_path to the server's CA bundle"),
    ("/kubeconfig", {"ca_path": "CA", "headers": {"Authorization": "Bearer wrong-s3cr3t"}},
     "the server answered HTTP 401 Unauthorized"),
    ("/absent", {"ca_path": "CA"}, "the server answered HTTP 404 Not Found"),
    ("/plain-redirect", {"ca_path": "CA"}, "the server redirected to a non-https URL"),
    ("/kubeconfig", {"ca_path": "/nonexistent/ca.crt"}, "ca_path /nonexistent/ca.crt: cannot load the CA bundle"),
], ids=["unknown-ca", "unauthorized", "not-found", "redirect-to-http", "missing-ca-file"])
def test_fetch_errors(server, pki, path, options, message):
    if options.get("ca_path") == "CA":
        options = {**options, "ca_path": str(pki / "ca.crt")}
    with pytest.raises(PhasekitError, match=message) as caught:
        fetch_https(server + path, timeout=5, **options)
    assert "s3cr3t" not in str(caught.value) and "let-me-in" not in str(caught.value)


def test_fetch_unreachable():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(PhasekitError, match="cannot fetch: Connection refused"):
        fetch_https(f"https://127.0.0.1:{port}/kubeconfig", timeout=5)


def test_fetch_timeout():
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)  # accepts the connection, never answers the TLS handshake
        with pytest.raises(PhasekitError, match="timed out|no answer within"):
            fetch_https(f"https://127.0.0.1:{silent.getsockname()[1]}/kubeconfig", timeout=0.5)


def test_url_source_decodes_the_answer(server, pki):
    spec = normalize_sources({"url": f"{server}/kubeconfig", "ca_path": str(pki / "ca.crt"),
                              "headers": {"Authorization": "Bearer let-me-in"}}, "test")[0]
    unit = expand_source(spec, {})[0]
    config = read_unit(unit, SourceHooks({}))
    assert list(config.contexts) == ["remote"]
    assert unit.origin.location == f"{server}/kubeconfig"


def test_a_kubeconfig_file_read_by_many_threads_at_once_is_parsed_once(tmp_path, monkeypatch):
    """A fleet step resolves its hosts in a pool; the hosts' shared file must not be parsed once per thread."""
    from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig import readers
    from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.model import Origin
    path = tmp_path / "fleet.kubeconfig"
    path.write_text("apiVersion: v1\nkind: Config\ncontexts:\n- name: c1\n  context: {cluster: k}\n")
    origin = Origin(1, "path", str(path), path=str(path))
    parses, real_decode = [], readers.decode_kubeconfig_bytes

    def slow_decode(data, where):
        parses.append(where)
        time.sleep(0.05)  # long enough for every thread to ask while the first parse runs
        return real_decode(data, where)

    monkeypatch.setattr(readers, "decode_kubeconfig_bytes", slow_decode)
    start, results = threading.Barrier(8), []

    def read():
        start.wait()
        results.append(readers.read_decoded_file(origin))

    threads = [threading.Thread(target=read) for _thread in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(parses) == 1
    assert len(results) == 8 and all(found is results[0] for found in results)
    path.write_text("apiVersion: v1\nkind: Config\ncontexts: []\n")  # a changed file is read again
    assert readers.read_decoded_file(origin) is not results[0] and len(parses) == 2
