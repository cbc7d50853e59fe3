#!/usr/bin/env python3
"""Real local Kubernetes control planes on loopback, for tests, the demo and benchmarks.

Each cluster is etcd + kube-apiserver + kube-controller-manager + kube-scheduler
+ KWOK (fake nodes that run pods), all bound to 127.0.0.1, each with its own
state directory. Usage:

    clusters.py up   [NAME[@VERSION] ...]   start (idempotent) and wait for /readyz
    clusters.py down [NAME ...]             stop every process started and remove state
    clusters.py env                         print shell exports for the merged kubeconfig
    clusters.py status                      each running cluster's version and live components

A cluster runs the Kubernetes VERSION it is given (NAME@v1.30.14), else $K8S_VERSION,
with the binaries hack/build-tools.sh built for it in $PHASEKIT_CACHE/bin/k8s-VERSION
($PHASEKIT_BIN when no version is set). The version is kept in its state directory:
asking a running cluster for another version is an error (take it down first).
Ports come from $PHASEKIT_PORT_BASE and a slot per cluster, unique across this
directory and its siblings named after it (e.g. clusters-v1.30.14 beside clusters),
so that sets of clusters of different versions run side by side.

Per cluster NAME, in $PHASEKIT_CLUSTERS_DIR (default ~/.cache/phasekit/clusters):
    NAME/admin.kubeconfig    context NAME, user NAME-admin (client certificate)
    NAME/limited.kubeconfig  context NAME-limited, user NAME-limited (bearer token,
                             RBAC: view everywhere, edit in namespace phasekit-limited)
and kubeconfig (every context of every cluster, merged).
"""

from __future__ import annotations

import argparse
import datetime
import fcntl
import ipaddress
import json
import os
import re
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CACHE = Path(os.environ.get("PHASEKIT_CACHE", Path.home() / ".cache/phasekit"))
ROOT = Path(os.environ.get("PHASEKIT_CLUSTERS_DIR", CACHE / "clusters"))
BIN = Path(os.environ.get("PHASEKIT_BIN", ""))
DEFAULT_VERSION = os.environ.get("K8S_VERSION", "")
DEFAULT_NAMES = os.environ.get("CLUSTERS", "ephemeral target").split()
# Below the kernel's ephemeral range (32768-60999 by default): a port in it can be the local end of any outgoing
# connection, and then etcd or an API server cannot bind it (seen in CI: a cluster's etcd never came up).
PORT_BASE = int(os.environ.get("PHASEKIT_PORT_BASE", "22000"))
SLOTS = 100
FAKE_NODES = 2
LIMITED_NAMESPACE = "phasekit-limited"
COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")


def cluster_index(name: str) -> int:
    """The cluster's slot, kept in its state directory: ports stay the same whatever else runs. Slots are unique
    across ROOT and its siblings that start with its name less a version suffix (the clusters of another
    Kubernetes version, ROOT-v1.30.14, and ROOT itself seen from there)."""
    slot_file = ROOT / name / "slot"
    if slot_file.exists():
        return int(slot_file.read_text())
    # the clusters of another version live in a sibling named ROOT-vX.Y.Z: ROOT's name without the suffix
    family = re.sub(r"-v\d+\.\d+\.\d+$", "", ROOT.name)
    taken = {int(p.read_text()) for p in ROOT.parent.glob(f"{glob_escape(family)}*/*/slot")}
    slot = next(i for i in range(SLOTS) if i not in taken)
    slot_file.parent.mkdir(parents=True, exist_ok=True)
    slot_file.write_text(str(slot))
    return slot


def ephemeral_ports() -> range:
    try:
        low, high = (int(v) for v in Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    except (OSError, ValueError):
        low, high = 32768, 60999
    return range(low, high + 1)


def refuse_ephemeral_ports() -> None:
    """Every cluster's ports must lie outside the ephemeral range, or an outgoing connection may hold one."""
    ours = range(PORT_BASE, PORT_BASE + 100 * SLOTS)
    ephemeral = ephemeral_ports()
    if ours.start < ephemeral.stop and ephemeral.start < ours.stop:
        sys.exit(f"clusters: ports {ours.start}-{ours.stop - 1} (PHASEKIT_PORT_BASE={PORT_BASE}) overlap this "
                 f"machine's ephemeral ports {ephemeral.start}-{ephemeral.stop - 1} "
                 f"(/proc/sys/net/ipv4/ip_local_port_range): set PHASEKIT_PORT_BASE outside them")


def port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def glob_escape(text: str) -> str:
    return "".join(f"[{c}]" if c in "*?[" else c for c in text)


def ports_for(index: int) -> dict:
    """Loopback ports of the cluster in this slot."""
    base = PORT_BASE + 100 * index
    return {"etcd": base + 1, "etcd_peer": base + 2, "apiserver": base + 43,
            "cm": base + 57, "scheduler": base + 59, "kwok": base + 80}


# ---------------------------------------------------------------- PKI

def _key():
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _write_pem(path: Path, key=None, cert=None):
    data = b""
    if cert is not None:
        data += cert.public_bytes(serialization.Encoding.PEM)
    if key is not None:
        data += key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                  serialization.NoEncryption())
    path.write_bytes(data)
    path.chmod(0o600)


def _cert(subject_cn, key, issuer_cert=None, issuer_key=None, org=None, ca=False, server_names=(), client=False):
    now = datetime.datetime.now(datetime.timezone.utc)
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, subject_cn)]
    if org:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
    subject = x509.Name(attrs)
    builder = (x509.CertificateBuilder()
               .subject_name(subject)
               .issuer_name(issuer_cert.subject if issuer_cert else subject)
               .public_key(key.public_key())
               .serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5))
               .not_valid_after(now + datetime.timedelta(days=3650))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
               # key identifiers, as kubeadm's certificates have them: Python 3.13's TLS verification
               # (VERIFY_X509_STRICT) refuses a chain without them
               .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
               .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                   (issuer_key or key).public_key()), critical=False))
    if ca:
        builder = builder.add_extension(x509.KeyUsage(True, False, False, False, False, True, True, False, False),
                                        critical=True)
    else:
        usages = [ExtendedKeyUsageOID.CLIENT_AUTH] if client else [ExtendedKeyUsageOID.SERVER_AUTH]
        builder = builder.add_extension(x509.ExtendedKeyUsage(usages), critical=False)
    if server_names:
        alt = []
        for n in server_names:
            try:
                alt.append(x509.IPAddress(ipaddress.ip_address(n)))
            except ValueError:
                alt.append(x509.DNSName(n))
        builder = builder.add_extension(x509.SubjectAlternativeName(alt), critical=False)
    return builder.sign(issuer_key or key, hashes.SHA256())


# The PKI's layout version, kept in pki/done: a cluster whose PKI is older is given a new one (2: certificates
# with key identifiers, which Python 3.13's strict verification requires).
PKI_VERSION = "2"


def pki_current(pki: Path) -> bool:
    done = pki / "done"
    return done.exists() and done.read_text().strip() == PKI_VERSION


def make_pki(pki: Path):
    """CA, apiserver serving cert, admin and component client certs, service-account key."""
    if pki_current(pki):
        return
    shutil.rmtree(pki, ignore_errors=True)
    pki.mkdir(parents=True, exist_ok=True)
    ca_key = _key()
    ca = _cert("phasekit-local-ca", ca_key, ca=True)
    _write_pem(pki / "ca.crt", cert=ca)
    _write_pem(pki / "ca.key", key=ca_key)
    serving_key = _key()
    names = ["127.0.0.1", "localhost", "10.96.0.1", "kubernetes", "kubernetes.default",
             "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"]
    _write_pem(pki / "apiserver.crt", cert=_cert("kube-apiserver", serving_key, ca, ca_key, server_names=names))
    _write_pem(pki / "apiserver.key", key=serving_key)
    for name, cn, org in (("admin", "phasekit-admin", "system:masters"),
                          ("controller-manager", "system:kube-controller-manager", None),
                          ("scheduler", "system:kube-scheduler", None)):
        k = _key()
        _write_pem(pki / f"{name}.crt", cert=_cert(cn, k, ca, ca_key, org=org, client=True))
        _write_pem(pki / f"{name}.key", key=k)
    sa = _key()
    _write_pem(pki / "sa.key", key=sa)
    (pki / "sa.pub").write_bytes(sa.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    (pki / "limited.token").write_text(secrets.token_hex(24))
    (pki / "tokens.csv").write_text(f"{(pki / 'limited.token').read_text()},limited-user,limited-user-uid\n")
    (pki / "tokens.csv").chmod(0o600)
    (pki / "done").write_text(PKI_VERSION)


def kubeconfig(name, server, pki: Path, user: str, auth: dict, context: str) -> dict:
    return {
        "apiVersion": "v1", "kind": "Config", "preferences": {},
        "clusters": [{"name": name, "cluster": {"server": server, "certificate-authority": str(pki / "ca.crt")}}],
        "users": [{"name": user, "user": auth}],
        "contexts": [{"name": context, "context": {"cluster": name, "user": user}}],
        "current-context": context,
    }


def write_yaml(path: Path, data):
    tmp = path.with_suffix(".tmp")
    tmp.write_text(yaml.safe_dump(data, sort_keys=False))
    tmp.chmod(0o600)
    tmp.replace(path)


# ---------------------------------------------------------------- processes

def _alive(pidfile: Path) -> bool:
    """The component named by the pid file runs, for this cluster. Its command line is checked, not only the pid:
    a cache kept across machines or reboots holds pid files whose numbers now belong to other processes, even to
    the same component of another cluster (every component's arguments name a file in its cluster's directory)."""
    try:
        argv = [os.fsdecode(arg) for arg in
                Path(f"/proc/{int(pidfile.read_text())}/cmdline").read_bytes().split(b"\0")]
    except (OSError, ValueError):
        return False
    state = str(pidfile.parent) + os.sep
    return Path(argv[0]).name == pidfile.stem and any(state in arg for arg in argv[1:])


def log_tail(state: Path, component: str, lines: int = 15) -> str:
    log = state / f"{component}.log"
    if not log.exists():
        return f"(no {log})"
    tail = log.read_bytes().decode(errors="replace").splitlines()[-lines:]
    return f"last lines of {log}:\n" + "\n".join(tail)


def start(state: Path, component: str, argv: list, env: dict | None = None, ports: tuple = ()):
    """Start a component unless it runs (then None); the loopback ports it will listen on must be free."""
    pidfile = state / f"{component}.pid"
    if pidfile.exists() and _alive(pidfile):
        return None
    taken = [port for port in ports if not port_free(port)]
    if taken:
        sys.exit(f"clusters: {state.name} {component} cannot listen on 127.0.0.1:{', '.join(map(str, taken))}: "
                 f"in use by another process (see 'ss -tanp sport = :{taken[0]}')")
    log = open(state / f"{component}.log", "ab")
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True, env={**os.environ, **(env or {})})
    pidfile.write_text(str(proc.pid))
    return proc


def stop(*states: Path, grace: float = 5.0):
    """Stop every component of the clusters at ``states``: all signalled at once, then waited for together.
    Waiting is on the pid file's process (``_alive``), not ``kill(pid, 0)``: a component whose parent has gone
    is a zombie until its new parent reaps it, and where nothing does (a container's init) it never looked dead."""
    running = []
    for state in states:
        for component in reversed(COMPONENTS):
            pidfile = state / f"{component}.pid"
            if not _alive(pidfile):  # never signal a pid that is now someone else's
                pidfile.unlink(missing_ok=True)
                continue
            try:
                os.killpg(int(pidfile.read_text()), signal.SIGTERM)
                running.append(pidfile)
            except (OSError, ValueError):
                pidfile.unlink(missing_ok=True)
    deadline = time.monotonic() + grace
    while running and time.monotonic() < deadline:
        running = [pidfile for pidfile in running if _alive(pidfile)]
        time.sleep(0.1)
    for pidfile in running:
        if _alive(pidfile):
            try:
                os.killpg(int(pidfile.read_text()), signal.SIGKILL)
            except (OSError, ValueError):
                pass
    for state in states:
        for component in COMPONENTS:
            (state / f"{component}.pid").unlink(missing_ok=True)


def bin_dir(version: str) -> Path:
    """Where the binaries of ``version`` are (hack/build-tools.sh builds them there); PHASEKIT_BIN without one."""
    return CACHE / "bin" / f"k8s-{version}" if version else BIN


def tool(name: str, version: str = "") -> str:
    where = bin_dir(version)
    candidates = [where / name]
    if not (version and name.startswith("kube")):  # a version's own control plane and kubectl, nothing else
        candidates.append(Path(shutil.which(name) or "/nonexistent"))
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    sys.exit(f"clusters: {name} not found in {where}{'' if len(candidates) == 1 else ' or PATH'}; "
             f"run K8S_VERSION={version or '<version>'} hack/build-tools.sh first")


def parse_name(spec: str) -> tuple[str, str]:
    """NAME or NAME@VERSION -> (name, version); the version defaults to $K8S_VERSION."""
    name, _, version = spec.partition("@")
    if not name or (version and not version.startswith("v1.")):
        sys.exit(f"clusters: {spec!r}: expected NAME or NAME@v1.MINOR.PATCH")
    return name, version or DEFAULT_VERSION


def claim_version(state: Path, name: str, version: str):
    """Record the cluster's version; a running cluster keeps the one it was started with."""
    recorded = state / "version"
    if recorded.exists() and (state / "kube-apiserver.pid").exists() and _alive(state / "kube-apiserver.pid"):
        running = recorded.read_text().strip()
        if running != version:
            sys.exit(f"clusters: {name} runs Kubernetes {running or '(PHASEKIT_BIN)'}, asked for "
                     f"{version or '(PHASEKIT_BIN)'}: run 'clusters.py down {name}' first")
    recorded.write_text(version)


def poll_ok(url: str, timeout: float, interval: float, context=None, gone=lambda: False) -> str | None:
    """GET url until it answers 200 (None) or timeout passes or gone() (the last error, or 'exited')."""
    deadline = time.time() + timeout
    last = "no answer"
    while time.time() < deadline:
        if gone():
            return "exited"
        try:
            with urllib.request.urlopen(url, context=context, timeout=5) as resp:
                if resp.status == 200:
                    return None
        except Exception as exc:  # noqa: BLE001 - any failure means: not ready yet
            last = str(exc)
        time.sleep(interval)
    return f"not ready after {timeout}s ({last})"


def wait_ready(url: str, pki: Path, what: str, state: Path, timeout=120):
    ctx = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    ctx.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
    failed = poll_ok(url, timeout, 0.5, context=ctx)
    if failed:
        sys.exit(f"clusters: {what} at {url}: {failed}\n{log_tail(state, 'etcd')}\n{log_tail(state, 'kube-apiserver')}")


def wait_etcd(state: Path, port: int, proc: subprocess.Popen | None, timeout=60):
    """etcd answers its health check before the API server starts: an API server that cannot reach its storage
    gives up after a while, and the reason is then only in etcd's log."""
    failed = poll_ok(f"http://127.0.0.1:{port}/health", timeout, 0.2,
                     gone=lambda: proc is not None and proc.poll() is not None)
    if failed:
        sys.exit(f"clusters: {state.name} etcd at 127.0.0.1:{port}: {failed}\n{log_tail(state, 'etcd')}")


def kubectl(admin_kc: Path, *args, stdin: str | None = None, check=True):
    version = (admin_kc.parent / "version").read_text().strip() if (admin_kc.parent / "version").exists() else ""
    return subprocess.run([tool("kubectl", version), "--kubeconfig", str(admin_kc), *args], input=stdin, text=True,
                          capture_output=True, check=check)


# ---------------------------------------------------------------- one cluster

def up_one(name: str, index: int, version: str = ""):
    state = ROOT / name
    pki = state / "pki"
    state.mkdir(parents=True, exist_ok=True)
    claim_version(state, name, version)
    if not pki_current(pki):
        stop(state)  # components running on an older PKI start again on the new one
    make_pki(pki)
    p = ports_for(index)
    server = f"https://127.0.0.1:{p['apiserver']}"
    admin_kc = state / "admin.kubeconfig"
    write_yaml(admin_kc, kubeconfig(name, server, pki, f"{name}-admin",
                                    {"client-certificate": str(pki / "admin.crt"),
                                     "client-key": str(pki / "admin.key")}, name))
    write_yaml(state / "limited.kubeconfig", kubeconfig(name, server, pki, f"{name}-limited",
                                                        {"token": (pki / "limited.token").read_text()},
                                                        f"{name}-limited"))
    for comp in ("controller-manager", "scheduler"):
        write_yaml(state / f"{comp}.kubeconfig", kubeconfig(name, server, pki, comp,
                                                            {"client-certificate": str(pki / f"{comp}.crt"),
                                                             "client-key": str(pki / f"{comp}.key")}, name))

    etcd = start(state, "etcd", [tool("etcd"), "--name", name, "--data-dir", str(state / "etcd-data"),
                          "--listen-client-urls", f"http://127.0.0.1:{p['etcd']}",
                          "--advertise-client-urls", f"http://127.0.0.1:{p['etcd']}",
                          "--listen-peer-urls", f"http://127.0.0.1:{p['etcd_peer']}",
                          "--initial-advertise-peer-urls", f"http://127.0.0.1:{p['etcd_peer']}",
                          "--initial-cluster", f"{name}=http://127.0.0.1:{p['etcd_peer']}",
                          "--unsafe-no-fsync", "--quota-backend-bytes", str(4 * 1024 ** 3)],
          ports=(p["etcd"], p["etcd_peer"]))
    wait_etcd(state, p["etcd"], etcd)
    start(state, "kube-apiserver", [
        tool("kube-apiserver", version), "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
        f"--secure-port={p['apiserver']}", f"--etcd-servers=http://127.0.0.1:{p['etcd']}",
        f"--client-ca-file={pki / 'ca.crt'}", f"--tls-cert-file={pki / 'apiserver.crt'}",
        f"--tls-private-key-file={pki / 'apiserver.key'}",
        f"--service-account-key-file={pki / 'sa.pub'}", f"--service-account-signing-key-file={pki / 'sa.key'}",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        f"--token-auth-file={pki / 'tokens.csv'}", "--authorization-mode=Node,RBAC",
        "--service-cluster-ip-range=10.96.0.0/16", "--allow-privileged=true", "--profiling=false",
        # Kubernetes 1.35+ refuses a loopback advertise address for the endpoint reconciler of the
        # 'kubernetes' Service; nothing here reaches the API server through that Service.
        "--endpoint-reconciler-type=none",
        f"--cert-dir={state / 'apiserver-certs'}"], ports=(p["apiserver"],))
    wait_ready(f"{server}/readyz", pki, f"{name} kube-apiserver", state)
    start(state, "kube-controller-manager", [
        tool("kube-controller-manager", version), f"--kubeconfig={state / 'controller-manager.kubeconfig'}",
        f"--authentication-kubeconfig={state / 'controller-manager.kubeconfig'}",
        f"--authorization-kubeconfig={state / 'controller-manager.kubeconfig'}",
        "--bind-address=127.0.0.1", f"--secure-port={p['cm']}", "--leader-elect=false",
        f"--service-account-private-key-file={pki / 'sa.key'}", f"--root-ca-file={pki / 'ca.crt'}",
        "--use-service-account-credentials=true", "--service-cluster-ip-range=10.96.0.0/16",
        f"--controllers={controllers_flag(tool('kube-controller-manager', version))}", "--profiling=false",
        # A loaded 2-core machine may delay KWOK's heartbeats; nodes must not flap to NotReady.
        "--node-monitor-grace-period=5m"], ports=(p["cm"],))
    start(state, "kube-scheduler", [
        tool("kube-scheduler", version), f"--kubeconfig={state / 'scheduler.kubeconfig'}",
        f"--authentication-kubeconfig={state / 'scheduler.kubeconfig'}",
        f"--authorization-kubeconfig={state / 'scheduler.kubeconfig'}",
        "--bind-address=127.0.0.1", f"--secure-port={p['scheduler']}", "--leader-elect=false",
        "--profiling=false"], ports=(p["scheduler"],))
    start(state, "kwok", [
        tool("kwok", version), f"--kubeconfig={admin_kc}", "--manage-all-nodes=false",
        "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
        "--disregard-status-with-annotation-selector=kwok.x-k8s.io/status=custom",
        "--cidr=10.0.0.1/24", "--node-ip=10.0.0.1", "--node-lease-duration-seconds=40", f"--node-port={p['kwok']}", "--server-address=127.0.0.1:0"],
          # KWOK's client asks for watch-list streams, which need etcd's watch progress
          # requests; Debian's etcd 3.4 has none, so plain list+watch it is.
          env={"KUBE_FEATURE_WatchListClient": "false"}, ports=(p["kwok"],))
    seed(name, admin_kc)


# Controllers a cluster of fake nodes without a cloud has no use for. Kubernetes 1.37 removed the cloud ones
# and refuses to start when told to disable a controller it does not know.
UNWANTED_CONTROLLERS = ("node-ipam-controller", "cloud-node-lifecycle-controller", "service-lb-controller",
                        "node-route-controller", "bootstrap-signer-controller", "token-cleaner-controller")


def controllers_flag(controller_manager: str) -> str:
    """``--controllers``: every default controller but the unwanted ones this binary knows (from its --help)."""
    text = subprocess.run([controller_manager, "--help"], capture_output=True, text=True, check=False).stdout
    known_line = next((line for line in text.splitlines() if "All controllers:" in line), "")
    known = {name.strip(" ,.") for name in known_line.split(":", 1)[-1].split()}
    return ",".join(["*"] + [f"-{name}" for name in UNWANTED_CONTROLLERS if name in known])


def fake_node(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "annotations": {"kwok.x-k8s.io/node": "fake"},
                         "labels": {"type": "kwok", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                    "kubernetes.io/arch": "amd64"}},
            "spec": {}, "status": {"allocatable": {"cpu": "32", "memory": "256Gi", "pods": "250"},
                                   "capacity": {"cpu": "32", "memory": "256Gi", "pods": "250"}}}


def seed(name: str, admin_kc: Path):
    """Fake nodes, the limited user's RBAC; applied server-side so re-runs are no-ops."""
    docs = [fake_node(f"{name}-node-{i}") for i in range(FAKE_NODES)]
    docs += [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": LIMITED_NAMESPACE}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": "phasekit-limited-view"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
         "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "limited-user"}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": "phasekit-limited-edit", "namespace": LIMITED_NAMESPACE},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
         "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "limited-user"}]},
    ]
    text = yaml.safe_dump_all(docs)  # YAML: kubectl 1.30 reads a stream that starts with JSON as JSON only
    for attempt in range(60):  # RBAC bootstrap roles appear shortly after /readyz
        res = kubectl(admin_kc, "apply", "--server-side", "--field-manager=phasekit-clusters", "-f", "-",
                      stdin=text, check=False)
        if res.returncode == 0:
            break
        time.sleep(1)
    else:
        sys.exit(f"clusters: seeding {name} failed: {res.stderr.strip()}")
    # The cluster role edit gets its rules from the controller-manager's aggregation controller, shortly after the
    # binding exists: until then the limited user is refused what the tests expect it may do (seen on fresh clusters)
    for _ in range(60):
        res = kubectl(admin_kc, "auth", "can-i", "patch", "configmaps", "-n", LIMITED_NAMESPACE, "--as",
                      "limited-user", check=False)
        if res.stdout.strip() == "yes":
            return
        time.sleep(1)
    sys.exit(f"clusters: {name}: the limited user may still not edit {LIMITED_NAMESPACE} after 60 s")


def write_merged(names):
    """One kubeconfig holding every context of every running cluster."""
    merged = {"apiVersion": "v1", "kind": "Config", "preferences": {}, "clusters": [], "users": [], "contexts": []}
    for name in names:
        for kind in ("admin", "limited"):
            path = ROOT / name / f"{kind}.kubeconfig"
            if not path.exists():
                continue
            data = yaml.safe_load(path.read_text())
            for key in ("users", "contexts"):
                merged[key] += data[key]
            if kind == "admin":
                merged["clusters"] += data["clusters"]
    merged["current-context"] = names[0] if names else ""
    write_yaml(ROOT / "kubeconfig", merged)


def running_names():
    return sorted(p.name for p in ROOT.iterdir() if (p / "kube-apiserver.pid").exists()) if ROOT.exists() else []


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["up", "down", "env", "status"])
    parser.add_argument("names", nargs="*")
    args = parser.parse_args(argv)
    names = args.names or DEFAULT_NAMES
    if args.command == "up":
        refuse_ephemeral_ports()
        # Test processes start the clusters side by side (xdist workers, several checkouts): one at a time, or
        # two of them write one cluster's PKI at once and its components fail with Unauthorized.
        ROOT.mkdir(parents=True, exist_ok=True)
        lock = open(ROOT / ".up.lock", "w")  # pylint: disable=consider-using-with  # held until the process ends
        fcntl.flock(lock, fcntl.LOCK_EX)
        wanted = [parse_name(spec) for spec in names]
        names = [name for name, _ in wanted]
        for name, version in wanted:
            up_one(name, cluster_index(name), version)
        for name in names:
            wait_nodes_ready(name)
        write_merged(names)
        for name in names:
            print(f"cluster {name}: {ROOT / name / 'admin.kubeconfig'} (context {name}), "
                  f"{ROOT / name / 'limited.kubeconfig'} (context {name}-limited)")
        print(f"merged kubeconfig: {ROOT / 'kubeconfig'}")
    elif args.command == "down":
        stopping = args.names and [parse_name(spec)[0] for spec in args.names] or running_names() or names
        stop(*(ROOT / name for name in stopping))
        for name in stopping:
            shutil.rmtree(ROOT / name, ignore_errors=True)
        if not running_names():
            (ROOT / "kubeconfig").unlink(missing_ok=True)
    elif args.command == "env":
        print(f"export KUBECONFIG={ROOT / 'kubeconfig'}")
    elif args.command == "status":
        for name in running_names():
            alive = [c for c in COMPONENTS if _alive(ROOT / name / f"{c}.pid")]
            version_file = ROOT / name / "version"
            version = version_file.read_text().strip() if version_file.exists() else ""
            print(f"{name} ({version or BIN}): {' '.join(alive) or 'stopped'}")


def wait_nodes_ready(name: str, timeout=120):
    admin_kc = ROOT / name / "admin.kubeconfig"
    deadline = time.time() + timeout
    while time.time() < deadline:
        res = kubectl(admin_kc, "get", "nodes", "-o", "json", check=False)
        if res.returncode == 0:
            nodes = json.loads(res.stdout)["items"]
            ready = [n for n in nodes for c in n.get("status", {}).get("conditions", [])
                     if c["type"] == "Ready" and c["status"] == "True"]
            if len(ready) >= FAKE_NODES:
                return
        time.sleep(0.5)
    sys.exit(f"clusters: {name}: fake nodes not Ready after {timeout}s\n{log_tail(ROOT / name, 'kwok')}")


if __name__ == "__main__":
    main()
