"""TLS of API clients: one context per TLS material (clients with the same CA, certificate and key share it), whose
new connections to a server resume the newest session a connection to it reported, from its own thread."""

from __future__ import annotations

import socket
import ssl
import threading

import pytest

from ansible_collections.phasekit.kube.plugins.module_utils.kube.client import session_reusing_context, share_tls_context

from pki import make_pki


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture
def tls_server(pki):
    """A TLS 1.3 server on 127.0.0.1 that asks for a client certificate and answers each connection with one line."""
    yield from serving(pki)


def serving(pki):
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
    """Whether a server resumes is its choice (the API server does: tests/integration/test_tls_sessions.py); a
    context offers the latest session it holds for that server, never another context's."""
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


@pytest.mark.parametrize("refusal", [
    ValueError("i2d() failed"),
    ssl.SSLError(1, "[SSL: TLSV1_ALERT_DECRYPT_ERROR] tlsv1 alert decrypt error"),
], ids=["python-cannot-copy-it", "the-server-refuses-it"])
def test_a_session_that_cannot_be_resumed_is_dropped(pki, tls_server, monkeypatch, refusal):
    """Python refuses to offer a session it cannot copy (ValueError "i2d() failed"), or the server refuses the
    resumption (an alert); the context forgets the session and says the connection failed, so that the client
    connects again, afresh (ApiSession retries a failed connection)."""
    context = client_context(pki)
    first = talk(context, tls_server)   # open, as a pool keeps it: its session is the one offered next
    wrap = ssl.SSLContext.wrap_socket

    def refuse_sessions(self, sock, *args, **kwargs):
        if kwargs.get("session") is not None:
            sock.close()
            raise refusal
        return wrap(self, sock, *args, **kwargs)

    monkeypatch.setattr(ssl.SSLContext, "wrap_socket", refuse_sessions)
    with pytest.raises(ConnectionAbortedError, match="unusable"):
        talk(context, tls_server)
    first.close()
    talk(context, tls_server).close()   # the next connection offers no session and succeeds


@pytest.fixture
def other_tls_server(pki):
    """A second server (another port, its own session ticket keys) under the same CA."""
    yield from serving(pki)


def pool_kw(pki, **changes):
    """A client's urllib3 pool arguments as the kubernetes client fills them in (each client writes its own files)."""
    return {"cert_reqs": ssl.CERT_REQUIRED, "ca_certs": str(pki / "ca.crt"), "cert_file": str(pki / "client.crt"),
            "key_file": str(pki / "client.key"), "ca_cert_data": None, "maxsize": 3, **changes}


def test_clients_with_the_same_tls_material_share_one_context(pki, tmp_path):
    """As client-go's transport cache: the same CA, certificate and key (read from any file) give one context; any
    other material, or another verification, its own. The files are consumed: the context no longer names them."""
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in ("ca.crt", "client.crt", "client.key"):
        (copy / name).write_bytes((pki / name).read_bytes())
    (tmp_path / "other").mkdir()
    other = make_pki(tmp_path / "other")
    clients = {"first": pool_kw(pki), "same-material-other-files": pool_kw(copy),
               "other-key": pool_kw(pki, cert_file=str(other / "client.crt"), key_file=str(other / "client.key")),
               "other-ca": pool_kw(pki, ca_certs=str(other / "ca.crt")),
               "insecure": pool_kw(pki, cert_reqs=ssl.CERT_NONE)}
    for kw in clients.values():
        share_tls_context(kw)
    contexts = {name: kw["ssl_context"] for name, kw in clients.items()}
    assert contexts["first"] is contexts["same-material-other-files"]
    assert len({id(context) for context in contexts.values()}) == 4
    assert all(kw["ca_certs"] is kw["cert_file"] is kw["key_file"] is None for kw in clients.values())


def test_sessions_are_offered_only_to_the_server_that_issued_them(pki, tls_server, other_tls_server, monkeypatch):
    """One context shared by several clients reaches several servers: each server is offered its own latest session
    (none on the first connection to it), and a resumed connection proves the shared session works."""
    offered = []
    wrap = ssl.SSLContext.wrap_socket

    def spy(self, sock, *args, **kwargs):
        if not kwargs.get("server_side"):
            offered.append((sock.getpeername()[1], kwargs.get("session")))
        return wrap(self, sock, *args, **kwargs)

    first, second = pool_kw(pki), pool_kw(pki)
    share_tls_context(first)
    share_tls_context(second)
    context = first["ssl_context"]
    assert second["ssl_context"] is context
    monkeypatch.setattr(ssl.SSLContext, "wrap_socket", spy)
    connections = [talk(context, port) for port in (tls_server, other_tls_server, tls_server, other_tls_server)]
    reused = [conn.session_reused for conn in connections]
    issued = [conn.session.id for conn in connections[:2]]
    for conn in connections:
        conn.close()
    sessions = [session for _port, session in offered]
    assert [port for port, _session in offered] == [tls_server, other_tls_server, tls_server, other_tls_server]
    assert sessions[0] is None and sessions[1] is None and None not in sessions[2:], offered
    assert [sessions[2].id, sessions[3].id] == issued
    assert reused == [False, False, True, True]


def test_a_session_is_read_only_by_the_thread_that_reads_its_socket(pki, tls_server, monkeypatch):
    """A connection's session is taken by the thread that reads the connection, after its read: OpenSSL replaces
    the session object when the ticket arrives, and another thread reading it then gets a freed or half-made
    one (Python's "i2d() failed", or a resumption the API server refuses). Other threads' new connections are
    offered the session the context was handed."""
    readers = []
    session_property = ssl.SSLSocket.session

    def recorded(sock):
        readers.append((id(sock), threading.current_thread().name))
        return session_property.fget(sock)

    monkeypatch.setattr(ssl.SSLSocket, "session", property(recorded, session_property.fset))
    context = client_context(pki)
    owners = {}

    def connect_and_read():
        conn = talk(context, tls_server)
        owners[id(conn)] = threading.current_thread().name
        return conn

    connections = []
    for number in range(3):   # named: a thread's ident may be reused by the next one
        thread = threading.Thread(target=lambda: connections.append(connect_and_read()), name=f"connection-{number}")
        thread.start()
        thread.join()
    reused = [conn.session_reused for conn in connections]
    for conn in connections:
        conn.close()
    assert readers and all(owners[sock] == thread for sock, thread in readers), (readers, owners)
    assert reused == [False, True, True]
