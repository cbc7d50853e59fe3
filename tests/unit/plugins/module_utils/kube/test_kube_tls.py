"""TLS of an API client: one context per client whose further connections resume the first one's session."""

from __future__ import annotations

import socket
import ssl
import threading

import pytest

from ansible_collections.phasekit.kube.plugins.module_utils.kube.client import session_reusing_context

from pki import make_pki


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture
def tls_server(pki):
    """A TLS 1.3 server on 127.0.0.1 that asks for a client certificate and answers each connection with one line."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki / "server.crt", pki / "server.key")
    context.load_verify_locations(pki / "ca.crt")
    context.verify_mode = ssl.CERT_REQUIRED
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.1)  # so that the loop sees stop soon
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                raw, _address = listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            raw.settimeout(10)
            try:
                with context.wrap_socket(raw, server_side=True) as conn:
                    conn.recv(64)
                    conn.sendall(b"hello\n")
            except (OSError, ssl.SSLError):
                continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    stop.set()
    listener.close()
    thread.join(timeout=5)


def talk(context, port):
    """One exchange on a new connection, left open as a connection pool keeps it; the caller closes it."""
    raw = socket.create_connection(("127.0.0.1", port), timeout=10)
    conn = context.wrap_socket(raw, server_hostname="127.0.0.1")
    conn.sendall(b"hi\n")
    assert conn.recv(64) == b"hello\n"   # reading the answer also reads the session ticket
    return conn


def client_context(pki):
    context = session_reusing_context()
    context.load_verify_locations(pki / "ca.crt")
    context.load_cert_chain(pki / "client.crt", pki / "client.key")
    return context


def test_further_connections_offer_the_first_session(pki, tls_server, monkeypatch):
    """Whether a server resumes is its choice (the API server does: tests/integration/test_fleet.py); the client
    offers the latest session of its own context, never another client's."""
    offered = []
    wrap = ssl.SSLContext.wrap_socket

    def spy(self, sock, *args, **kwargs):
        if not kwargs.get("server_side"):
            offered.append((id(self), kwargs.get("session")))
        return wrap(self, sock, *args, **kwargs)

    monkeypatch.setattr(ssl.SSLContext, "wrap_socket", spy)
    first, second = client_context(pki), client_context(pki)
    connections = [talk(context, tls_server) for context in (first, first, second, first)]
    for conn in connections:
        conn.close()
    assert [(owner == id(first), session is not None) for owner, session in offered] == [
        (True, False), (True, True), (False, False), (True, True)]


@pytest.mark.parametrize("cert_reqs, verify_mode, check_hostname", [
    (None, ssl.CERT_REQUIRED, True),
    (ssl.CERT_REQUIRED, ssl.CERT_REQUIRED, True),
    (ssl.CERT_NONE, ssl.CERT_NONE, False),
], ids=["default-verifies", "verifies", "insecure-skip-tls-verify"])
def test_verification_follows_the_kubeconfig(cert_reqs, verify_mode, check_hostname):
    context = session_reusing_context(cert_reqs)
    assert (context.verify_mode, context.check_hostname) == (verify_mode, check_hostname)
    assert context.minimum_version == ssl.TLSVersion.TLSv1_2


def test_a_server_the_ca_does_not_vouch_for_is_refused(pki, tls_server, tmp_path):
    other = make_pki(tmp_path)
    context = session_reusing_context()
    context.load_verify_locations(other / "ca.crt")
    with pytest.raises(ssl.SSLCertVerificationError):
        talk(context, tls_server).close()


def test_a_session_the_ssl_module_cannot_copy_is_dropped(pki, tls_server, monkeypatch):
    """Python refuses to offer a session it cannot copy (a connection cut off mid-handshake: ValueError "i2d()
    failed"); the context forgets it and says the connection failed, so that the client connects again, afresh."""
    context = client_context(pki)
    first = talk(context, tls_server)   # open, as a pool keeps it: its session is the one offered next
    wrap = ssl.SSLContext.wrap_socket

    def refuse_sessions(self, sock, *args, **kwargs):
        if kwargs.get("session") is not None:
            sock.close()
            raise ValueError("i2d() failed")
        return wrap(self, sock, *args, **kwargs)

    monkeypatch.setattr(ssl.SSLContext, "wrap_socket", refuse_sessions)
    with pytest.raises(ConnectionAbortedError, match="unusable"):
        talk(context, tls_server)
    first.close()
    talk(context, tls_server).close()   # the next connection offers no session and succeeds
