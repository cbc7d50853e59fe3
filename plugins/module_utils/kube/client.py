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
import ipaddress
import os
import re
import shutil
import ssl
import string
import sys
import threading
import weakref
from contextlib import contextmanager
from urllib.parse import quote, urlsplit

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
            config_dict=with_material_files(kubeconfig, material_dir), active_context=context,
            temp_file_path=material_dir)
        loader.load_and_set(configuration)
    except ConfigException as exc:
        raise PhasekitError(f"cannot use kubeconfig: {exc}") from None
    if pool_maxsize:
        configuration.connection_pool_maxsize = pool_maxsize
    impersonation = impersonation_headers(kubeconfig)
    api = k8s_client.ApiClient(configuration=configuration)
    share_tls_context(api.rest_client.pool_manager.connection_pool_kw)
    api.phasekit_impersonation = impersonation  # read by ApiSession, the one transport that sends them
    try:
        yield api
    finally:
        api.close()


def share_tls_context(pool_kw: dict) -> None:
    """Give every connection of a client one TLS context, its CA and client certificate read once.

    Left to itself urllib3 builds a context and reads the CA, certificate and key files again for each
    new connection: a fleet step opens hundreds, and that parsing was most of a first run's client CPU.
    ``pool_kw`` is the client's urllib3 ``connection_pool_kw``, as the kubernetes client filled it in.
    """
    cert_reqs = pool_kw.get("cert_reqs")
    context = session_reusing_context(cert_reqs)
    try:
        if cert_reqs != ssl.CERT_NONE:
            if pool_kw.get("ca_certs") or pool_kw.get("ca_cert_data"):
                context.load_verify_locations(cafile=pool_kw.get("ca_certs"), cadata=pool_kw.get("ca_cert_data"))
            else:
                context.load_default_certs()
        if pool_kw.get("cert_file"):
            context.load_cert_chain(pool_kw["cert_file"], pool_kw.get("key_file"))
    except (OSError, ssl.SSLError) as exc:
        # the message names the failing step (e.g. "[X509] PEM lib"), never the material
        raise PhasekitError(f"cannot use kubeconfig: its TLS certificate or key: {exc}") from None
    pool_kw.update(ssl_context=context, ca_certs=None, ca_cert_data=None, cert_file=None, key_file=None)


class SessionReusingContext(ssl.SSLContext):
    """A client's TLS context whose further connections resume the session of its latest one.

    A cluster gets several connections (its lanes); without resumption each one repeats the full handshake,
    certificate signatures and verification on both ends. A resumed TLS 1.3 session keeps the identity the
    first handshake proved (the server checked the client certificate then) and skips that work. Only this
    client's own connections share sessions: one context per API client, one client per cluster.
    """

    _latest = None   # a weak reference to the last socket this context wrapped
    _session = None  # the newest session with a ticket seen on this context's sockets

    def wrap_socket(self, sock, *args, **kwargs):  # pylint: disable=arguments-differ
        latest = self._latest() if self._latest is not None else None
        session = getattr(latest, "session", None)
        if session is not None and session.has_ticket:
            self._session = session  # the ticket comes after the handshake: taken once the socket has been read
        offered = self._session is not None and kwargs.get("session") is None
        if offered:
            kwargs["session"] = self._session
        try:
            wrapped = super().wrap_socket(sock, *args, **kwargs)
        except ValueError as exc:
            if not offered:
                raise
            # the ssl module copies an offered session and cannot copy one whose connection broke off (a server
            # killed mid-handshake: "i2d() failed"); the socket is closed by then, so the caller connects again,
            # with a full handshake
            self._session = self._latest = None
            raise ConnectionAbortedError(f"the TLS session to resume was unusable ({exc}): connect again") from None
        self._latest = weakref.ref(wrapped)
        return wrapped


def session_reusing_context(cert_reqs=None) -> SessionReusingContext:
    """A client TLS context set up as urllib3's ``create_urllib3_context`` sets one up, resuming sessions.

    Unlike urllib3 it accepts session tickets (urllib3 sets OP_NO_TICKET): they are what resumption uses.
    """
    cert_reqs = ssl.CERT_REQUIRED if cert_reqs is None else cert_reqs
    context = SessionReusingContext(ssl.PROTOCOL_TLS_CLIENT)
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


def _write_material(material_dir: str, name: str, encoded, owner: str, field_path: str) -> str:
    key = field_path.rsplit(".", 1)[-1]
    try:
        content = base64.b64decode("".join(str(encoded).split()), validate=True)  # line breaks allowed, as in Go
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


def _install_private_temp_files():
    """What is left for the loader's shared table (certificates an exec plugin returns): one file per client, in
    that client's directory, written under a lock, instead of a file shared by every client with that content."""
    original = kube_config._create_temp_file_with_content  # pylint: disable=protected-access
    if getattr(original, "phasekit_private", False):
        return

    def private_temp_file(content, temp_file_path=None, force_recreate=False):  # pylint: disable=unused-argument
        with _TEMP_FILES_LOCK:
            return original(content, temp_file_path=temp_file_path, force_recreate=True)

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
