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

import base64
import binascii
import hashlib
import ipaddress
import os
import re
import shutil
import ssl
import string
import sys
import threading
import weakref
from collections.abc import Mapping
from contextlib import contextmanager
from urllib.parse import quote, urlsplit

from ansible_collections.phasekit.kube.plugins.module_utils.environ import environment_proxies, sets_proxies
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.private_files import private_directory

try:
    import urllib3
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


# What an HTTP header value may hold (Go's httpguts.ValidHeaderFieldValue, ASCII only as Python's http.client
# sends latin-1): tab and visible ASCII; a line break would end the header, and Python's refusal echoes the value.
_HEADER_VALUE = re.compile(r"[\t\x20-\x7e]*")
# user fields the client sends as HTTP header values (the token as "Authorization: Bearer ...")
_HEADER_FIELDS = ("token", "as", "as-uid", "as-groups", "as-user-extra")


def is_header_value(value) -> bool:
    """Whether ``value`` can be sent as an HTTP header value as it is."""
    return isinstance(value, str) and _HEADER_VALUE.fullmatch(value) is not None


def check_header_fields(kubeconfig: dict) -> None:
    """Refuse a user whose token or impersonation fields cannot be sent as HTTP header values (a PEM key pasted as a
    token); the message names the user and the field, never the value."""
    for entry in kubeconfig.get("users") or []:
        user = entry.get("user") if isinstance(entry, dict) else None
        if not isinstance(user, dict):
            continue
        for key in _HEADER_FIELDS:
            if user.get(key) not in (None, "") and not all(is_header_value(item) for item in _items(user[key])):
                raise PhasekitError(f"cannot use kubeconfig: users[{entry.get('name')}].user.{key} holds a line "
                                    "break or a character an HTTP header cannot carry (expected one line of printable "
                                    "ASCII; the value is not shown)")


# a host name's labels (RFC 1123, and "_" that internal names use); at most 253 characters in all
_HOST_LABEL = re.compile(r"[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?")
_SHOWN_PREFIX = 16  # what an unusable server URL shows of itself: it may be a credential pasted in the wrong field


def check_servers(kubeconfig: dict) -> None:
    """Refuse a cluster whose server is not an http(s) URL with a valid host name or IP address; the message names
    the cluster and the field, and shows only the start of the value."""
    for entry in kubeconfig.get("clusters") or []:
        cluster = entry.get("cluster") if isinstance(entry, dict) else None
        server = cluster.get("server") if isinstance(cluster, dict) else None
        if not isinstance(server, str) or not server or is_server_url(server):
            continue
        shown = server if len(server) <= _SHOWN_PREFIX else server[:_SHOWN_PREFIX] + "..."
        raise PhasekitError(f"cannot use kubeconfig: clusters[{entry.get('name')}].cluster.server: expected an "
                            f"https:// URL with a host name or IP address, got {shown!r} ({len(server)} characters)")


def is_server_url(server: str) -> bool:
    """Whether ``server`` is an http or https URL (or a bare host[:port]) whose host is a valid name or address."""
    try:
        parts = urlsplit(server if "://" in server else f"https://{server}")
        host, _port = parts.hostname, parts.port  # port: ValueError when it is not a number from 0 to 65535
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or not host or not server.isprintable():
        return False
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return len(host) <= 253 and all(_HOST_LABEL.fullmatch(label) for label in host.rstrip(".").split("."))


def _items(value) -> list:
    """The single values of a field: itself, a list's items, or a mapping's lists' items (as-user-extra)."""
    if isinstance(value, dict):
        return [item for items in value.values() for item in _items(items)]
    return list(value) if isinstance(value, list) else [value]


@contextmanager
def api_client(kubeconfig: dict, context: str | None = None, *, pool_maxsize: int | None = None,
               environ: Mapping | None = None):
    """Yield a ``kubernetes.client.ApiClient`` for the kubeconfig dict and context.

    Certificate files the TLS stack needs live only for the duration of the block; a client whose TLS material an
    open client already holds (``live_tls_context``) takes that client's context and writes none. Requests go
    through ``session.ApiSession`` (the one transport: it sends the impersonation headers of ``as``/``as-groups``/
    ``as-uid``/``as-user-extra``, which the generated API classes would not).
    ``pool_maxsize`` sizes the one HTTP connection pool shared by every thread
    that uses the client (default: the client's own, 5 per CPU). ``environ``: the task's environment, whose proxy
    variables are taken as the client takes the controller's (see ``use_proxies``).
    """
    require_kubernetes()
    shared = live_tls_context(kubeconfig)
    if shared is not None:
        yield from _client_in(None, kubeconfig, context, pool_maxsize, shared, environ=environ)
        return
    with private_directory("phasekit-tls-") as material_dir:
        try:
            yield from _client_in(material_dir, kubeconfig, context, pool_maxsize, environ=environ)
        finally:
            _forget_material(material_dir)


def _client_in(material_dir: str | None, kubeconfig: dict, context: str | None, pool_maxsize: int | None,
               shared: SessionReusingContext | None = None, *, environ: Mapping | None = None):
    """``shared``: the TLS context to use as it is; the loader then sees the kubeconfig without its TLS material
    (nothing to write). Otherwise the material is written to ``material_dir`` and read into a context."""
    # An unverified connection is what insecure-skip-tls-verify (or validate_certs=false) asked for: kubectl does not
    # warn, kubernetes.core silences urllib3. Printed from a fleet thread, the warning also blocked for good on
    # ansible-core 2.16, whose stderr lock a forked worker can inherit held. Set here, not at import: Ansible
    # imports plugins inside warnings.catch_warnings(), which drops a filter set then.
    urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
    check_servers(kubeconfig)
    check_header_fields(kubeconfig)
    configuration = k8s_client.Configuration()
    _install_private_temp_files()
    try:
        loader = kube_config.KubeConfigLoader(
            config_dict=without_tls_material(kubeconfig) if shared else with_material_files(kubeconfig, material_dir),
            active_context=context, temp_file_path=material_dir)
        loader.load_and_set(configuration)
    except ConfigException as exc:
        raise PhasekitError(f"cannot use kubeconfig: {exc}") from None
    if pool_maxsize:
        configuration.connection_pool_maxsize = pool_maxsize
    use_proxies(configuration, kubeconfig, context, environ)
    impersonation = impersonation_headers(kubeconfig)
    api = k8s_client.ApiClient(configuration=configuration)
    pool_kw = api.rest_client.pool_manager.connection_pool_kw
    if shared is None:
        share_tls_context(pool_kw)
    else:
        pool_kw.update(ssl_context=shared, ca_certs=None, ca_cert_data=None, cert_file=None, key_file=None)
    api.phasekit_impersonation = impersonation  # read by ApiSession, the one transport that sends them
    try:
        yield api
    finally:
        api.close()


def use_proxies(configuration, kubeconfig: dict, context: str | None, environ: Mapping | None) -> None:
    """The cluster's own ``proxy-url`` (which wins, as in kubectl), else the proxy variables a task's
    ``environment:`` sets (``HTTPS_PROXY``, ``NO_PROXY``, ...), taken as the kubernetes client takes the
    controller's (the scheme's proxy, else ``all_proxy``; ``no_proxy``)."""
    proxy_url = _cluster_of(kubeconfig, context).get("proxy-url")
    if proxy_url:
        # set here for every client major: the client's loader reads proxy-url itself only from its major 37
        configuration.proxy = proxy_url
        return
    if not sets_proxies(environ):
        return
    proxies = environment_proxies(environ)
    configuration.proxy = proxies.get(urlsplit(configuration.host).scheme) or proxies.get("all")
    configuration.no_proxy = proxies.get("no")


def _cluster_of(kubeconfig: dict, context: str | None) -> dict:
    """The cluster entry of ``context`` (default the current-context), or {}."""
    def named(field: str, name) -> dict:
        return next((item.get(field[:-1]) or {} for item in kubeconfig.get(field) or []
                     if isinstance(item, dict) and item.get("name") == name), {})

    return named("clusters", named("contexts", context or kubeconfig.get("current-context")).get("cluster"))


def live_tls_context(kubeconfig: dict) -> SessionReusingContext | None:
    """The shared context of an open client with the same TLS material, for a kubeconfig whose material is all
    embedded (one cluster with its CA, at most one user, no files named, no exec plugin or auth provider: what a
    resolved host's kubeconfig is); None otherwise, and the client is built from its own files."""
    clusters, users = kubeconfig.get("clusters") or [], kubeconfig.get("users") or []
    if len(clusters) != 1 or len(users) > 1:
        return None
    cluster = clusters[0].get("cluster") if isinstance(clusters[0], dict) else None
    user = (users[0].get("user") if users and isinstance(users[0], dict) else None) or {}
    if not isinstance(cluster, dict) or not isinstance(user, dict) or not cluster.get("certificate-authority-data"):
        return None
    bodies = {"cluster": cluster, "user": user}
    if user.get("exec") or user.get("auth-provider") or any(
            bodies[inner].get(file_key) for _section, inner, _data_key, file_key in _EMBEDDED_MATERIAL):
        return None
    try:
        key = (ssl.CERT_NONE if cluster.get("insecure-skip-tls-verify") else ssl.CERT_REQUIRED,
               *(_data_digest(bodies[inner].get(data_key)) for _section, inner, data_key, _file in _EMBEDDED_MATERIAL))
    except (binascii.Error, ValueError):
        return None   # the client built from files says what is wrong
    with _SHARED_LOCK:
        return _SHARED_CONTEXTS.get(key)


def _data_digest(encoded) -> bytes | None:
    """The digest ``_tls_material_key`` takes of the file this data would be written to."""
    if not encoded:
        return None
    return hashlib.sha256(decoded_material(encoded)).digest()


def without_tls_material(kubeconfig: dict) -> dict:
    """The kubeconfig without its embedded TLS material (its cluster's CA, its user's certificate and key)."""
    data_keys = {data_key for _section, _inner, data_key, _file in _EMBEDDED_MATERIAL}
    out = dict(kubeconfig)
    for section, inner in (("clusters", "cluster"), ("users", "user")):
        out[section] = [{**entry, inner: {k: v for k, v in entry[inner].items() if k not in data_keys}}
                        if isinstance(entry, dict) and isinstance(entry.get(inner), dict) else entry
                        for entry in kubeconfig.get(section) or []]
    return out


def pooled_sockets(api) -> list:
    """The TLS sockets of a client's idle pooled connections, taken out of its pools (diagnostics: the TLS tests and
    ``bench/tls_stress.py`` read which ones resumed a session; the client opens new connections after)."""
    sockets = []
    pools = api.rest_client.pool_manager.pools
    for key in pools.keys():
        pool = pools[key]
        while not pool.pool.empty():
            conn = pool.pool.get_nowait()
            if conn is not None and conn.sock is not None:
                sockets.append(conn.sock)
    return sockets


def share_tls_context(pool_kw: dict) -> None:
    """Give the client the TLS context of every client with the same TLS material, its CA and certificate read once.

    Left to itself urllib3 builds a context and reads the CA, certificate and key files again for each
    new connection: a fleet step opens hundreds, and that parsing was most of a first run's client CPU.
    Clients whose verification, CA, client certificate and key are the same share one context, as client-go's
    transport cache shares one TLS configuration between its clients (several inventory hosts on one cluster, or
    one kubeconfig's contexts): its sessions are kept per server, so a client's first connection to a server
    another client already reached resumes that session instead of repeating the full handshake on both ends.
    ``pool_kw`` is the client's urllib3 ``connection_pool_kw``, as the kubernetes client filled it in.
    """
    try:
        key = _tls_material_key(pool_kw)
        with _SHARED_LOCK:
            context = _SHARED_CONTEXTS.get(key)
            if context is None:
                context = _SHARED_CONTEXTS[key] = _tls_context(pool_kw)
    except (OSError, ssl.SSLError) as exc:
        # the message names the failing step (e.g. "[X509] PEM lib"), never the material
        raise PhasekitError(f"cannot use kubeconfig: its TLS certificate or key: {exc}") from None
    pool_kw.update(ssl_context=context, ca_certs=None, ca_cert_data=None, cert_file=None, key_file=None)


# the live shared contexts by TLS material (``_tls_material_key``): a context goes with its last client
_SHARED_CONTEXTS: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_SHARED_LOCK = threading.Lock()


def _tls_material_key(pool_kw: dict) -> tuple:
    """What makes two clients' TLS contexts the same: verification, and digests of the CA, certificate and key
    (their contents: each client has its files written under its own names)."""
    def digest(path=None, data=None):
        if path:
            with open(path, "rb") as handle:
                data = handle.read()
        elif isinstance(data, str):
            data = data.encode("utf-8")
        return hashlib.sha256(data).digest() if data else None

    return (pool_kw.get("cert_reqs"), digest(pool_kw.get("ca_certs"), pool_kw.get("ca_cert_data")),
            digest(pool_kw.get("cert_file")), digest(pool_kw.get("key_file")))


def _tls_context(pool_kw: dict) -> "SessionReusingContext":
    cert_reqs = pool_kw.get("cert_reqs")
    context = session_reusing_context(cert_reqs)
    if cert_reqs != ssl.CERT_NONE:
        if pool_kw.get("ca_certs") or pool_kw.get("ca_cert_data"):
            context.load_verify_locations(cafile=pool_kw.get("ca_certs"), cadata=pool_kw.get("ca_cert_data"))
        else:
            context.load_default_certs()
    if pool_kw.get("cert_file"):
        context.load_cert_chain(pool_kw["cert_file"], pool_kw.get("key_file"))
    return context


class SessionReportingSocket(ssl.SSLSocket):
    """A client TLS socket that hands its context its session once the server's ticket has come, from the
    thread that reads it.

    The ticket arrives after the handshake, with the first data read. The session is taken here, by the
    socket's own thread between its reads, and never from another thread while this one is inside OpenSSL:
    OpenSSL replaces a connection's session object when a ticket arrives, and a session read at that moment
    from elsewhere is freed or half-made ("i2d() failed", or a resumption the server refuses as an invalid PSK
    binder).
    """

    phasekit_server = None      # (server name, address): the server whose session this is
    _reads_to_watch = 4         # the ticket comes with the first answers, or not at all (a server without tickets)

    def read(self, len=1024, buffer=None):  # pylint: disable=redefined-builtin
        data = super().read(len, buffer)
        if self._reads_to_watch:
            self._reads_to_watch -= 1
            session = self.session
            if session is not None and session.has_ticket:
                self._reads_to_watch = 0
                self.context.remember_session(self.phasekit_server, session)
        return data


class SessionReusingContext(ssl.SSLContext):
    """A TLS context whose new connections to a server resume the newest session a connection to it reported.

    A cluster gets several connections (its lanes); without resumption each one repeats the full handshake,
    certificate signatures and verification on both ends. A resumed TLS 1.3 session keeps the identity the
    first handshake proved (the server checked the client certificate then) and skips that work. Sessions are
    kept per server (name and address): only a server that issued a session is offered it. The context is
    shared only by clients with the same TLS material (``share_tls_context``).
    """

    sslsocket_class = SessionReportingSocket
    _sessions: dict  # (server name, address) -> the newest session with a ticket a connection to it reported

    def remember_session(self, server, session) -> None:
        self._sessions[server] = session

    def wrap_socket(self, sock, *args, **kwargs):  # pylint: disable=arguments-differ
        server = (kwargs.get("server_hostname"), _peer(sock))
        session = self._sessions.get(server)
        offered = session is not None and kwargs.get("session") is None
        if offered:
            kwargs["session"] = session
        try:
            wrapped = super().wrap_socket(sock, *args, **kwargs)
        except (ValueError, ssl.SSLError) as exc:
            if not offered or isinstance(exc, ssl.SSLCertVerificationError):
                raise
            # The ssl module copies an offered session and cannot copy one it finds unusable ("i2d() failed"), or
            # the server refused the resumption outright (TLS 1.3 would fall back to a full handshake otherwise).
            # The session is forgotten and the socket closed, so the caller connects again, with a full handshake.
            self._forget(server, session)
            sock.close()
            raise ConnectionAbortedError(f"the TLS session to resume was unusable ({exc}): connect again") from None
        wrapped.phasekit_server = server
        return wrapped

    def _forget(self, server, session) -> None:
        if self._sessions.get(server) is session:
            self._sessions.pop(server, None)


def _peer(sock):
    try:
        return sock.getpeername()
    except (OSError, AttributeError):
        return None


def session_reusing_context(cert_reqs=None) -> SessionReusingContext:
    """A client TLS context set up as urllib3's ``create_urllib3_context`` sets one up, resuming sessions.

    Unlike urllib3 it accepts session tickets (urllib3 sets OP_NO_TICKET): they are what resumption uses.
    """
    cert_reqs = ssl.CERT_REQUIRED if cert_reqs is None else cert_reqs
    context = SessionReusingContext(ssl.PROTOCOL_TLS_CLIENT)
    context._sessions = {}  # pylint: disable=protected-access
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.options |= ssl.OP_NO_COMPRESSION
    if sys.version_info >= (3, 13):
        context.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN | ssl.VERIFY_X509_STRICT
    context.post_handshake_auth = True
    context.check_hostname = cert_reqs == ssl.CERT_REQUIRED
    context.verify_mode = cert_reqs
    context.hostname_checks_common_name = False
    return context


# (section, *-data key, file key) of the TLS material a kubeconfig may embed
_EMBEDDED_MATERIAL = (("clusters", "cluster", "certificate-authority-data", "certificate-authority"),
                      ("users", "user", "client-certificate-data", "client-certificate"),
                      ("users", "user", "client-key-data", "client-key"))
# what each holds once decoded: PEM blocks of this type (client-go reads PEM only); "PRIVATE KEY" ends the
# type of every key block (RSA, EC, PKCS#8)
_PEM_TYPE = {"certificate-authority-data": ("-----BEGIN CERTIFICATE-----", "a PEM certificate"),
             "client-certificate-data": ("-----BEGIN CERTIFICATE-----", "a PEM certificate"),
             "client-key-data": ("PRIVATE KEY-----", "a PEM private key")}


def with_material_files(kubeconfig: dict, material_dir: str) -> dict:
    """The kubeconfig with its embedded certificates and keys written to files of this client's own (0600, in its
    private directory) and named by path instead, as kubectl's ``--flatten`` does in reverse.

    The loader would otherwise write them through a table shared by the whole process, which hands one client's
    file to the next client with the same content and is not safe for clients built at once in threads (a fleet):
    a file is named before it is written, and removed when its first client closes.
    """
    out = dict(kubeconfig)
    for section, inner, data_key, file_key in _EMBEDDED_MATERIAL:
        entries = []
        for index, entry in enumerate(out.get(section) or []):
            body = (entry or {}).get(inner) if isinstance(entry, dict) else None
            if isinstance(body, dict) and body.get(data_key):
                body = {k: v for k, v in body.items() if k != data_key}
                body[file_key] = _write_material(material_dir, f"{section}-{index}-{file_key}",
                                                 entry[inner][data_key], f"{section[:-1]} {entry.get('name')!r}",
                                                 f"{section}[{entry.get('name')}].{inner}.{data_key}")
                entry = {**entry, inner: body}
            entries.append(entry)
        if section in out:
            out[section] = entries
    return out


def decoded_material(encoded) -> bytes:
    """The bytes of a kubeconfig's ``*-data`` field (base64, line breaks allowed, as in Go)."""
    return base64.b64decode("".join(str(encoded).split()), validate=True)


def _write_material(material_dir: str, name: str, encoded, owner: str, field_path: str) -> str:
    key = field_path.rsplit(".", 1)[-1]
    try:
        content = decoded_material(encoded)
    except (binascii.Error, ValueError):
        raise PhasekitError(f"cannot use kubeconfig: {owner}: {key} is not valid base64") from None
    marker, expected = _PEM_TYPE[key]
    if marker.encode() not in content:
        # said here, by field: the TLS library's "PEM lib" would not say which (a certificate and key swapped)
        raise PhasekitError(f"cannot use kubeconfig: {field_path}: expected the base64 of {expected}, got something "
                            "else (the value is not shown)")
    path = os.path.join(material_dir, name)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as target:
        target.write(content)
    return path


_TEMP_FILES_LOCK = threading.Lock()
LOADER_MEMBERS = ("_create_temp_file_with_content", "_temp_files")  # the config loader's private members used here
SUPPORTED_CLIENT = "kubernetes>=29,<38"  # as requirements.txt says


def check_loader_members(loader_module=None) -> None:
    """Refuse, naming the installed client's version, a ``kubernetes`` client whose config loader lacks the private
    members this module relies on, instead of failing later with an AttributeError."""
    loader_module = loader_module or kube_config
    missing = [name for name in LOADER_MEMBERS if not hasattr(loader_module, name)]
    if missing:
        import kubernetes  # pylint: disable=import-outside-toplevel
        raise PhasekitError(f"the kubernetes Python client {getattr(kubernetes, '__version__', '(unknown version)')} "
                            f"is not supported: its config loader has no {', '.join(missing)}; install "
                            f"'{SUPPORTED_CLIENT}' (requirements.txt)")


def _install_private_temp_files():
    """What is left for the loader's shared table (certificates an exec plugin returns): one file per client, in
    that client's directory, written under a lock, instead of a file shared by every client with that content.

    The loader's private ``_create_temp_file_with_content`` and ``_temp_files`` are used as every client major
    requirements.txt allows has them (29 to 37, the oldest and the newest run in CI); another client without them is
    refused naming its version (``check_loader_members``)."""
    check_loader_members()
    original = kube_config._create_temp_file_with_content  # pylint: disable=protected-access
    if getattr(original, "phasekit_private", False):
        return

    def private_temp_file(content, temp_file_path=None, force_recreate=False):  # pylint: disable=unused-argument
        with _TEMP_FILES_LOCK:
            # forgotten first, so the loader writes a new file: its force_recreate argument exists only from the
            # client's major 35 (an older loader would raise, and log the exec plugin's certificate as missing)
            kube_config._temp_files.pop(str(content), None)  # pylint: disable=protected-access
            return original(content, temp_file_path=temp_file_path)

    private_temp_file.phasekit_private = True
    kube_config._create_temp_file_with_content = private_temp_file  # pylint: disable=protected-access


def _forget_material(material_dir: str):
    """Remove the TLS files and the loader's memory of them (it would hand out stale paths)."""
    shutil.rmtree(material_dir, ignore_errors=True)
    with _TEMP_FILES_LOCK:
        stale = [key for key, path in kube_config._temp_files.items()  # pylint: disable=protected-access
                 if path.startswith(material_dir)]
        for key in stale:
            kube_config._temp_files.pop(key, None)  # pylint: disable=protected-access
