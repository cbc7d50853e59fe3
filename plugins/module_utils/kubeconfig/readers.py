# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Read one source document: a file, inline content, an https URL, a SOPS file, a registered kind's document.

ansible-vault files and Secrets in another cluster need Ansible's runtime (vault
secrets, other inventory hosts); ``SourceHooks`` is the seam where the Ansible
glue plugs them in. Nothing here writes decrypted or fetched data to disk.
"""

from __future__ import annotations

import os
import shutil
import ssl
import subprocess
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ansible_collections.phasekit.kube.plugins.module_utils import yaml_io
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.decode import decode_kubeconfig_bytes
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.decode import decode_kubeconfig_data
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.model import Kubeconfig
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.sources import SourceUnit, registered_kind

MAX_FETCH_BYTES = 8 * 1024 * 1024
SOPS_TIMEOUT = 120


def _vault_needs_ansible(_path: str) -> bytes:
    raise PhasekitError("ansible-vault files are read through Ansible: use the phasekit.kube.kubeconfig "
                        "action or lookup")


def _secret_needs_ansible(_secret: dict) -> bytes:
    raise PhasekitError("Secret sources are read through Ansible: use the phasekit.kube.kubeconfig "
                        "action or lookup")


@dataclass(frozen=True)
class SourceHooks:
    """The outside world as sources see it: the environment, and two readers the Ansible glue supplies
    (an ansible-vault file's plaintext; a Secret's kubeconfig, read from the cluster that holds it).

    Plain functions, called only when a source of that kind is actually read (sources are read lazily)."""

    environ: Mapping | None = None  # None: this process's environment
    read_vault: Callable[[str], bytes] = _vault_needs_ansible
    read_secret: Callable[[dict], bytes] = _secret_needs_ansible

    def __post_init__(self):
        if self.environ is None:
            object.__setattr__(self, "environ", os.environ)


def read_unit(unit: SourceUnit, hooks: SourceHooks) -> Kubeconfig | None:
    """Read and decode one document; None when a listed kubeconfig file does not exist (kubectl skips it)."""
    spec, origin = unit.spec, unit.origin
    if spec.kind in ("path", "env"):
        return read_decoded_file(origin)
    elif spec.kind == "content":
        if isinstance(spec.value, dict):
            return decode_kubeconfig_data(spec.value, origin)
        data = spec.value.encode("utf-8")
    elif spec.kind == "url":
        data = fetch_https(spec.value, **spec.options)
    elif spec.kind == "sops":
        data = decrypt_sops(origin.path, spec.options.get("input_type"), hooks.environ)
    elif spec.kind == "vault":
        data = hooks.read_vault(origin.path)
    elif spec.kind == "secret":
        data = hooks.read_secret(spec.value)
    else:
        return registered_kind(spec.kind).read(unit, hooks)
    return decode_kubeconfig_bytes(data, origin)


# Decoded kubeconfig files, by origin and the file's identity: a fleet step resolves hundreds of hosts whose
# contexts live in one file, which is then parsed once (threads asking for it at once wait for the one
# parse). Callers never change a decoded document in place (minify, flatten and path resolution work on
# copies), so entries can be shared.
_DECODED: dict[tuple, Kubeconfig] = {}
_DECODING: dict[tuple, threading.Lock] = {}
_DECODED_LOCK = threading.Lock()
_DECODED_MAX = 256


def read_decoded_file(origin) -> Kubeconfig | None:
    """The decoded kubeconfig file of ``origin``, or None if it does not exist (kubectl skips it)."""
    try:
        info = os.stat(origin.path)
    except OSError:
        return _decode_file(origin)  # the read below says what is wrong (or None: no such file)
    key = (origin, info.st_ino, info.st_size, info.st_mtime_ns)
    with _DECODED_LOCK:
        if key in _DECODED:
            return _DECODED[key]
        if len(_DECODING) >= _DECODED_MAX:
            _DECODED.clear()
            _DECODING.clear()
        parsing = _DECODING.setdefault(key, threading.Lock())
    with parsing:
        with _DECODED_LOCK:
            if key in _DECODED:
                return _DECODED[key]
        decoded = _decode_file(origin)
        if decoded is not None:
            with _DECODED_LOCK:
                _DECODED[key] = decoded
        return decoded


def _decode_file(origin) -> Kubeconfig | None:
    data = read_kubeconfig_file(origin.path)
    return None if data is None else decode_kubeconfig_bytes(data, origin)


def read_kubeconfig_file(path: str) -> bytes | None:
    """The file's bytes, or None if it does not exist. A directory or unreadable file is an error."""
    try:
        return yaml_io.read_file_bytes(path, "kubeconfig")
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise PhasekitError("is a directory, not a kubeconfig file") from None


def decrypt_sops(path: str, input_type: str | None, environ) -> bytes:
    """Decrypt a SOPS file with the ``sops`` binary; the plaintext only ever lives in memory."""
    if not os.path.isfile(path):
        raise PhasekitError("no such file" if not os.path.exists(path) else "is not a file")
    formats = ["--input-type", input_type, "--output-type", input_type] if input_type else []
    return _run_sops(formats + [path], environ)


def decrypt_sops_document(text: str, environ) -> bytes:
    """Decrypt one SOPS-encrypted YAML document given as text: a document of a multi-document file that was
    encrypted on its own (each such document carries its own ``sops`` metadata and MAC)."""
    return _run_sops(["--input-type", "yaml", "--output-type", "yaml", "/dev/stdin"], environ,
                     stdin=text.encode("utf-8"))


def _run_sops(arguments: list[str], environ, stdin: bytes | None = None) -> bytes:
    binary = shutil.which("sops", path=environ.get("PATH", os.defpath))
    if binary is None:
        raise PhasekitError("the sops binary is not on PATH; install sops to read SOPS-encrypted kubeconfigs")
    try:
        command = [binary, "--decrypt"] + arguments
        completed = subprocess.run(command, input=stdin, capture_output=True,  # pylint: disable=ansible-bad-function
                                   env=dict(environ), timeout=SOPS_TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        raise PhasekitError(f"sops did not finish within {SOPS_TIMEOUT} seconds") from None
    except OSError as exc:
        raise PhasekitError(f"cannot run sops: {exc.strerror}") from None
    if completed.returncode != 0:
        raise PhasekitError(f"sops could not decrypt: {explain_sops_failure(completed.stderr)}")
    return completed.stdout


def explain_sops_failure(stderr: bytes) -> str:
    """One line for people from sops' diagnostics (which never include plaintext)."""
    text = stderr.decode("utf-8", errors="replace")
    if "Failed to get the data key" in text or "no identity matched" in text:
        if "age" in text:
            return ("no age identity matches the file's recipients; set SOPS_AGE_KEY_FILE or add the key to "
                    "the keys file (~/.config/sops/age/keys.txt)")
        return "no available key can decrypt the file's data key (check the keys sops is configured with)"
    if "sops metadata not found" in text:
        return "the file is not SOPS-encrypted (no sops metadata)"
    if "MAC mismatch" in text:
        return "the file was modified after encryption (MAC mismatch)"
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0][:300] if lines else "sops failed without a message"


class _HttpsOnlyRedirects(urllib.request.HTTPRedirectHandler):
    """Follow redirects only to https URLs (credentials in headers must not go out in clear text)."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # pylint: disable=too-many-arguments
        if not newurl.lower().startswith("https://"):
            raise PhasekitError("the server redirected to a non-https URL")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def fetch_https(url: str, *, ca_path: str | None = None, headers: dict | None = None,
                timeout: float = 30, validate_certs: bool = True) -> bytes:
    """GET an https URL with an optional CA bundle and headers; at most MAX_FETCH_BYTES."""
    try:
        context = ssl.create_default_context(cafile=ca_path)
    except (OSError, ssl.SSLError) as exc:
        raise PhasekitError(f"ca_path {ca_path}: cannot load the CA bundle: {getattr(exc, 'strerror', None) or exc}"
                            ) from None
    if not validate_certs:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    opener = urllib.request.build_opener(urllib.request.HTTPSHandler(context=context), _HttpsOnlyRedirects())
    # str(): a vault-encrypted header value is decrypted here, when it is sent, not before
    request = urllib.request.Request(url, headers={name: str(value) for name, value in (headers or {}).items()},
                                     method="GET")
    try:
        with opener.open(request, timeout=timeout) as response:
            body = response.read(MAX_FETCH_BYTES + 1)
    except urllib.error.HTTPError as exc:
        raise PhasekitError(f"the server answered HTTP {exc.code} {exc.reason}") from None
    except urllib.error.URLError as exc:
        raise PhasekitError(f"cannot fetch: {_reason(exc.reason)}") from None
    except TimeoutError:
        raise PhasekitError(f"no answer within {timeout} seconds") from None
    except OSError as exc:
        raise PhasekitError(f"cannot fetch: {_reason(exc)}") from None
    if len(body) > MAX_FETCH_BYTES:
        raise PhasekitError(f"the answer is larger than {MAX_FETCH_BYTES} bytes; not a kubeconfig")
    return body


def _reason(reason) -> str:
    if isinstance(reason, ssl.SSLCertVerificationError):
        return f"certificate verification failed ({reason.verify_message}); set ca_path to the server's CA bundle"
    if isinstance(reason, TimeoutError):
        return "timed out"
    if isinstance(reason, OSError) and reason.strerror:
        return reason.strerror
    return str(reason)
