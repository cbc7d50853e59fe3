# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The plan role and the phasekit.kube.run playbook on the two local clusters.

One site (inventory, phase documents, manifests) serves every test. Command
phases append ``start``/``end`` lines with timestamps and the kubectl context
they see to a log file, which proves order, parallelism and which cluster
each phase talked to. The inventory also holds a host whose kubeconfig source
cannot be decrypted and that no phase uses: resolving it would fail the run.
"""

from __future__ import annotations

import base64
import datetime
import http.server
import ipaddress
import os
import shutil
import ssl
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
import yaml

VENV_BIN = Path(sys.executable).parent
# Unique per run: several runs of this suite may share the clusters.
NAMESPACE = f"phasekit-plan-{uuid.uuid4().hex[:8]}"
API = "phasekit.dev/v1alpha1"
UNDECRYPTABLE = {"sops": "/nonexistent.enc.yaml"}

STAMP = {
    "shell": True,
    "cmd": 'echo "start $PHASEKIT_PHASE $PHASEKIT_HOST $(date +%s.%N) $(kubectl config current-context)" '
           '>> "$STAMP_LOG"; sleep "${STAMP_SLEEP:-0}"; '
           'echo "end $PHASEKIT_PHASE $PHASEKIT_HOST $(date +%s.%N)" >> "$STAMP_LOG"',
}


def phase(name, **spec):
    return {"apiVersion": API, "kind": "Phase", "metadata": {"name": name}, "spec": spec}


def plan(name, *phases):
    return {"apiVersion": API, "kind": "PhasePlan", "metadata": {"name": name}, "spec": {"phases": list(phases)}}


def stamp(name, cluster, **spec):
    return phase(name, cluster=cluster, executor="command", options=STAMP, **spec)


DOCUMENTS = {
    "10-commands.yaml": [
        stamp("e1", "ephemeral"),
        stamp("t1", "target"),
        stamp("both", "management"),
        phase("pair", cluster="ephemeral", description="a group phase: children only", phases=[
            {"name": "e", "executor": "command", "options": STAMP},
            {"name": "t", "executor": "command", "options": STAMP, "cluster": "target"},
        ]),
        phase("boom", cluster="target", executor="command",
              options={"cmd": "echo 'no such chart' >&2; exit 3", "shell": True}),
        stamp("after", "ephemeral"),
        phase("look", cluster="management", executor="tasks", source="../tasks/look.yml"),
    ],
    "20-apps.yaml": [
        phase("apps-e", cluster="ephemeral", executor="apply", source="../manifests/apps"),
        phase("apps-t", cluster="target", executor="apply", source="../manifests/apps"),
        phase("apps-ready", cluster="management", executor="wait", source="../manifests/apps",
              options={"timeout": 60}),
    ],
    "30-capi.yaml": [
        phase("child-kubeconfig", cluster="ephemeral", executor="kubeconfig", options={"host": "child"}),
        stamp("on-child", "child"),
    ],
    "40-every-executor.yaml": [
        # a command phase building directories (as converted Clusterctl phases with versions do)
        phase("built", cluster="target", executor="command", options={
            "argv": ["ls", "-R"], "kubeconfigs": {"OTHER_KUBECONFIG": "ephemeral"},
            "env_dirs": {"BUILT": {"apps/components.yaml": {"kustomize": "../manifests/apps-kustomized"}}}}),
        phase("chart", cluster="target", executor="helm", source="../charts/hello",
              options={"name": f"hello-{NAMESPACE}", "release_namespace": "default",
                       "values_files": ["../charts/values.yaml"]}),
    ],
    "90-plans.yaml": [
        plan("alternate", "e1", "t1", "both", "pair"),
        plan("failing", "e1", "boom", "after"),
        plan("apps", "apps-e", "apps-t", "apps-ready", "look"),
        plan("capi", "child-kubeconfig", "on-child"),
        plan("once", "t1", "look", "both"),
        plan("every-executor", "apps-e", "apps-ready", "built", "chart", "look"),
        plan("every-executor-offline", "apps-e", "apps-ready", "built", "chart", "look", "child-kubeconfig"),
    ],
}

MANIFESTS = [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "plan-app", "namespace": NAMESPACE},
     "data": {"greeting": "hello"}},
    {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "plan-secret", "namespace": NAMESPACE},
     "stringData": {"password": "do-not-show-me"}},
]

# A user task file: it sees the phase and the cluster's resolved kubeconfig, and phasekit.kube actions
# in it reuse that resolution.
LOOK_TASKS = [
    {"name": "The phase and the kubeconfig of this cluster are handed over",
     "ansible.builtin.assert": {"that": [
         "plan_phase.name == 'look'",
         "plan_kubeconfig['current-context'] == inventory_hostname",
         "plan_kubeconfig.contexts | length == 1"]}},
    {"name": "Stamp from a user task",
     "phasekit.kube.kube_command": {"argv": ["sh", "-c", 'echo "task look $PHASEKIT_HOST $(kubectl config current-context)" >> "$STAMP_LOG"'],
                                    "env": {"PHASEKIT_HOST": "{{ inventory_hostname }}"}}},
]


@pytest.fixture(scope="module")
def site(clusters, tmp_path_factory):
    """The site directory: phases/, manifests/, tasks/ (the inventory is written per test)."""
    root = tmp_path_factory.mktemp("site")
    (root / "phases").mkdir()
    for name, documents in DOCUMENTS.items():
        (root / "phases" / name).write_text(yaml.safe_dump_all(documents, sort_keys=False))
    (root / "manifests" / "apps").mkdir(parents=True)
    (root / "manifests" / "apps" / "app.yaml").write_text(yaml.safe_dump_all(MANIFESTS, sort_keys=False))
    (root / "manifests" / "apps-kustomized").mkdir(parents=True)
    (root / "manifests" / "apps-kustomized" / "kustomization.yaml").write_text("resources: [app.yaml]\n")
    (root / "manifests" / "apps-kustomized" / "app.yaml").write_text(yaml.safe_dump_all(MANIFESTS[1:2]))
    (root / "tasks").mkdir()
    (root / "tasks" / "look.yml").write_text(yaml.safe_dump(LOOK_TASKS, sort_keys=False))
    (root / "charts" / "hello" / "templates").mkdir(parents=True)
    (root / "charts" / "hello" / "Chart.yaml").write_text("apiVersion: v2\nname: hello\nversion: 0.1.0\n")
    (root / "charts" / "hello" / "templates" / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: '{{ .Release.Name }}'}\n"
        "data: {greeting: '{{ .Values.greeting }}'}\n")
    (root / "charts" / "values.yaml").write_text("greeting: hello\n")
    yield root
    for cluster in clusters.values():
        cluster.kubectl("delete", "namespace", NAMESPACE, "--ignore-not-found", "--wait=false")


def inventory_text(clusters, **overrides) -> str:
    hosts = {
        "ephemeral": {"kube_kubeconfig": str(clusters["ephemeral"].admin_kubeconfig), "kube_context": "ephemeral"},
        "target": {"kube_kubeconfig": str(clusters["target"].admin_kubeconfig), "kube_context": "target"},
        "child": {"kube_parent": "ephemeral",
                  "kube_kubeconfig": {"secret": {"name": "child-kubeconfig", "namespace": NAMESPACE, "timeout": 60}}},
        # No phase runs here: its kubeconfig is never resolved (it could not be).
        "idle": {"kube_kubeconfig": UNDECRYPTABLE},
    }
    for host, host_vars in overrides.items():
        hosts[host] = host_vars
    return yaml.safe_dump({"all": {"vars": {"ansible_connection": "local"}, "hosts": hosts,
                                   "children": {"management": {"hosts": {"ephemeral": {}, "target": {}}}}}})


@pytest.fixture()
def run_plan(site, clusters, run_playbook, tmp_path):
    """Run the collection playbook phasekit.kube.run on the site; returns (result, stamps)."""
    log = tmp_path / "stamps.log"

    def run(*extra, inventory: str | None = None, env: dict | None = None, verbosity: int = 0):
        (site / "inventory.yml").write_text(inventory or inventory_text(clusters))
        log.unlink(missing_ok=True)
        result = run_playbook("- ansible.builtin.import_playbook: phasekit.kube.run\n", site / "inventory.yml",
                              *extra, env={"STAMP_LOG": str(log), **(env or {})}, verbosity=verbosity)
        return result, read_stamps(log)

    return run


def why(result) -> str:
    """The failures and the summary of a run, for assertion messages."""
    lines = result.output.splitlines()
    keep = [line for line in lines if line.startswith(("fatal:", "failed:", "[ERROR]")) or "Summary of plan" in line]
    return "\n".join(keep) + "\n" + result.output[-3000:]


def read_stamps(log: Path) -> list[list[str]]:
    return [line.split() for line in log.read_text().splitlines()] if log.exists() else []


def started(stamps) -> list[tuple[str, str]]:
    return [(line[1], line[2]) for line in stamps if line[0] == "start"]


def times(stamps, event: str, name: str) -> list[float]:
    return [float(line[3]) for line in stamps if line[0] == event and line[1] == name]


def test_plan_alternates_between_clusters_in_order(run_plan):
    result, stamps = run_plan("-e", "plan=alternate", env={"STAMP_SLEEP": "1"})
    assert result.rc == 0, why(result)
    assert started(stamps) in (
        [("e1", "ephemeral"), ("t1", "target"), ("both", "ephemeral"), ("both", "target"), ("pair/e", "ephemeral"),
         ("pair/t", "target")],
        [("e1", "ephemeral"), ("t1", "target"), ("both", "target"), ("both", "ephemeral"), ("pair/e", "ephemeral"),
         ("pair/t", "target")])
    # Each command saw its own cluster's context.
    assert all(line[4] == line[2] for line in stamps if line[0] == "start")
    # Barrier: every phase ends on all its hosts before the next phase starts, whichever cluster it targets.
    order = ["e1", "t1", "both", "pair/e", "pair/t"]
    for before, after in zip(order, order[1:]):
        assert max(times(stamps, "end", before)) <= min(times(stamps, "start", after)), (before, after, stamps)
    # A phase on a group runs its hosts in parallel.
    assert max(times(stamps, "start", "both")) < min(times(stamps, "end", "both")), stamps
    assert "[t1] command on 1 cluster(s): 1 changed" in result.stdout
    summary = result.stdout[result.stdout.index("Summary of plan alternate"):]
    for row in (["e1", "ephemeral", "changed"], ["both", "target", "changed"], ["pair/t", "target", "changed"]):
        assert any(line.split()[:3] == row for line in summary.splitlines()), summary


@pytest.mark.parametrize("extra, expected", [
    (["-e", "only=pair"], [("pair/e", "ephemeral"), ("pair/t", "target")]),
    (["-e", "skip=both,pair/e"], [("e1", "ephemeral"), ("t1", "target"), ("pair/t", "target")]),
    (["-e", "start_at=pair/e"], [("pair/e", "ephemeral"), ("pair/t", "target")]),
    (["-e", "only=pair,e1", "-e", "skip=pair/t"], [("e1", "ephemeral"), ("pair/e", "ephemeral")]),
], ids=["only-brings-descendants", "skip-removes-phases", "start-at-resumes", "skip-after-only"])
def test_selection(run_plan, extra, expected):
    result, stamps = run_plan("-e", "plan=alternate", *extra)
    assert result.rc == 0, why(result)
    assert started(stamps) == expected


def test_unknown_phase_name_fails_before_anything_runs(run_plan):
    result, stamps = run_plan("-e", "plan=alternate", "-e", "only=pair/x")
    assert result.rc != 0
    assert "invalid phase name: pair/x (did you mean 'pair/t'?)" in result.stdout
    assert stamps == []


def test_failing_phase_stops_the_plan(run_plan):
    result, stamps = run_plan("-e", "plan=failing")
    assert result.rc != 0
    assert started(stamps) == [("e1", "ephemeral")]
    assert "phase boom failed on cluster target: command /bin/sh -c" in result.stdout
    assert "exited with rc 3: no such chart" in result.stdout
    # the failed cluster names the phase's document, and ansible-core 2.19+ quotes no file of the role
    assert "; phase boom is defined in " in result.stdout and "10-commands.yaml document 5" in result.stdout
    assert "Origin:" not in result.output and "cluster_failed.yml:" not in result.output, why(result)
    summary = result.stdout[result.stdout.index("Summary of plan failing"):]
    assert [line.split()[:3] for line in summary.splitlines() if line.startswith("after ")] == \
        [["after", "ephemeral", "not"]]


@pytest.mark.parametrize("action, expected", [
    ("list", ["apps-e      ephemeral   ephemeral         apply     ../manifests/apps  yes"]),
    ("tree", ["plan apps", "flowchart TD", "p0 --> p1"]),
    ("render", ["kind: ConfigMap", "password: '***'"]),
    ("validate", ["4 phases valid (4 selected); 3 bundles render to 9 objects"]),
], ids=["list", "tree", "render", "validate-offline"])
def test_offline_actions_resolve_no_kubeconfig(run_plan, clusters, action, expected):
    undecryptable = inventory_text(clusters, ephemeral={"kube_kubeconfig": UNDECRYPTABLE},
                                   target={"kube_kubeconfig": UNDECRYPTABLE})
    result = run_plan("-e", "plan=apps", "-e", f"plan_action={action}", "-e", "plan_offline=true",
                      inventory=undecryptable)[0]
    assert result.rc == 0, why(result)
    for text in expected:
        assert text in result.stdout, result
    assert "do-not-show-me" not in result.output


@pytest.mark.parametrize("offline, name, valid", [
    (True, "every-executor-offline", "6 phases valid (6 selected); 3 bundles render to 6 objects"),
    (False, "every-executor", "5 phases valid (5 selected); 3 bundles render to 6 objects"),
], ids=["offline", "against-the-clusters"])
def test_validate_takes_every_executor(run_plan, offline, name, valid):
    """apply, wait, command with env_dirs (as converted Clusterctl phases), helm, tasks and kubeconfig phases in
    one plan: validate checks each as far as it can without changing anything (container phases: see
    test_container.py, which validates without a container engine). Against the clusters, a kubeconfig phase
    would wait for its child's Secret, which an earlier phase of a real run makes: left out there."""
    result = run_plan("-e", f"plan={name}", "-e", "plan_action=validate",
                      *(["-e", "plan_offline=true"] if offline else []))[0]
    assert result.rc == 0, why(result)
    assert valid in result.stdout, why(result)
    assert "Traceback" not in result.output and "has no attribute" not in result.output
    if not offline:
        summary = result.stdout[result.stdout.index(f"Summary of plan {name}"):]
        for row in (["apps-e", "ephemeral", "changed"], ["built", "target", "skipped"], ["chart", "target", "changed"],
                    ["look", "ephemeral", "skipped"]):
            assert any(line.split()[:len(row)] == row for line in summary.splitlines()), summary


def test_running_with_undecryptable_sources_fails_loudly(run_plan, clusters):
    """The counterpart of the offline test: the sources above really cannot be resolved."""
    undecryptable = inventory_text(clusters, target={"kube_kubeconfig": UNDECRYPTABLE})
    result, stamps = run_plan("-e", "plan=alternate", inventory=undecryptable)
    assert result.rc != 0
    assert started(stamps) == [("e1", "ephemeral")]
    assert "phase t1 failed on cluster target: kubeconfig source 1 (sops: /nonexistent.enc.yaml)" in result.stdout


@pytest.mark.smoke
def test_apply_status_check_and_diff(run_plan, clusters):
    target = clusters["target"]
    result, stamps = run_plan("-e", "plan=apps")
    assert result.rc == 0, why(result)
    for cluster in clusters.values():
        assert cluster.get_json("configmap", "plan-app", "-n", NAMESPACE)["data"] == {"greeting": "hello"}
    assert sorted(line[2] for line in stamps if line[:2] == ["task", "look"]) == ["ephemeral", "target"]

    result = run_plan("-e", "plan=apps", "-e", "plan_action=status")[0]
    assert result.rc == 0, why(result)
    summary = result.stdout[result.stdout.index("Summary of plan apps"):]
    for row in ("apps-t      target     in sync", "look        target     skipped"):
        assert row in summary, summary

    # validate: documents, bundles, then a server-side dry run of every apply phase
    result = run_plan("-e", "plan=apps", "-e", "plan_action=validate")[0]
    assert result.rc == 0, why(result)
    summary = result.stdout[result.stdout.index("Summary of plan apps"):]
    for row in ("apps-e      ephemeral  ok", "apps-ready  target     skipped", "look        ephemeral  skipped"):
        assert row in summary, summary

    target.kubectl("delete", "configmap", "plan-app", "-n", NAMESPACE)
    result, stamps = run_plan("-e", "plan=apps", "--check", "--diff")
    assert result.rc == 0, why(result)
    assert target.kubectl("get", "configmap", "plan-app", "-n", NAMESPACE, check=False).returncode != 0
    assert "greeting: hello" in result.stdout            # the diff of the ConfigMap that would be created
    assert stamps == []                                   # the user task file ran in check mode: no command

    result = run_plan("-e", "plan=apps", "-e", "plan_action=status")[0]
    assert result.rc == 0, why(result)
    summary = result.stdout[result.stdout.index("Summary of plan apps"):]
    for row in ("apps-e      ephemeral  in sync", "apps-t      target     differs",
                "apps-ready  ephemeral  in sync", "apps-ready  target     not ready"):
        assert row in summary, summary

    result = run_plan("-e", "plan=apps")[0]
    assert result.rc == 0, why(result)
    assert target.get_json("configmap", "plan-app", "-n", NAMESPACE)["data"] == {"greeting": "hello"}
    assert "do-not-show-me" not in result.output


def test_kubeconfig_phase_waits_for_the_child_secret(run_plan, clusters):
    """Cluster API's flow: the child's kubeconfig appears as a Secret on the parent, then the child is used."""
    parent, child = clusters["ephemeral"], clusters["target"]
    parent.kubectl("create", "namespace", NAMESPACE, check=False)
    parent.kubectl("delete", "secret", "child-kubeconfig", "-n", NAMESPACE, "--ignore-not-found")
    flat = child.kubectl("config", "view", "--raw", "--flatten", "--minify").stdout
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "child-kubeconfig", "namespace": NAMESPACE},
              "data": {"value": base64.b64encode(flat.encode()).decode()}}
    # The Secret appears while the phase already waits for it.
    writer = threading.Timer(3, parent.kubectl, args=("apply", "-f", "-"), kwargs={"stdin": yaml.safe_dump(secret)})
    writer.start()
    try:
        began = time.monotonic()
        result, stamps = run_plan("-e", "plan=capi")
    finally:
        writer.join()
    assert result.rc == 0, why(result)
    assert time.monotonic() - began > 3
    assert [(line[1], line[2], line[4]) for line in stamps if line[0] == "start"] == [("on-child", "child", "target")]


class CountingHandler(http.server.BaseHTTPRequestHandler):
    body = b""
    requests: list = []

    def do_GET(self):  # noqa: N802 - the http.server API
        type(self).requests.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "application/yaml")
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args):
        pass


@pytest.fixture()
def kubeconfig_server(clusters, tmp_path):
    """An https server handing out target's flattened kubeconfig, counting requests."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = tmp_path / "server.crt", tmp_path / "server.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    handler = type("Handler", (CountingHandler,), {
        "body": clusters["target"].kubectl("config", "view", "--raw", "--flatten", "--minify").stdout.encode(),
        "requests": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_path, key_path)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"https://127.0.0.1:{server.server_address[1]}/target", cert_path, handler.requests
    server.shutdown()


def secret_pieces(clusters) -> list[str]:
    """Distinctive slices of every client key and token of the local clusters, raw and base64."""
    pieces = []
    for cluster in clusters.values():
        pki = cluster.dir / "pki"
        pieces.append((pki / "limited.token").read_text().strip())
        for path in pki.glob("*.key"):
            text = path.read_text()
            body = "".join(line for line in text.splitlines() if not line.startswith("-----"))
            encoded = base64.b64encode(text.encode()).decode()
            pieces += [body[len(body) // 2:len(body) // 2 + 40], encoded[len(encoded) // 2:len(encoded) // 2 + 40]]
    return pieces


def test_kubeconfig_resolved_once_per_host_and_never_shown(run_plan, clusters, kubeconfig_server):
    url, ca_path, requests = kubeconfig_server
    inventory = inventory_text(clusters, target={"kube_kubeconfig": {"url": url, "ca_path": str(ca_path)}})
    result, stamps = run_plan("-e", "plan=once", inventory=inventory, verbosity=3)
    assert result.rc == 0, why(result)
    # t1, look (its task file runs phasekit.kube.kube_command too) and both ran on target: one fetch.
    assert requests == ["/target"]
    assert [line[2] for line in stamps if line[0] == "start"].count("target") == 2
    leaked = [piece[:8] for piece in secret_pieces(clusters) if piece in result.output]
    assert leaked == []


@pytest.mark.parametrize("layout, args", [
    ("inventory-directory", ["-i", "inventory"]),
    ("inventory-file", ["-i", "inventory.yml"]),
    ("phases-from-the-current-directory", ["-i", "elsewhere/inventory.yml", "-e", "phases=site-phases"]),
], ids=lambda value: value if isinstance(value, str) else None)
def test_playbook_finds_the_phases_where_the_docs_say(site, clusters, collections_path, tmp_path, layout, args):
    """The example site's layout (inventory/ and phases/ side by side), an inventory file beside phases/, and
    -e phases=DIR relative to the directory ansible-playbook runs in."""
    phases = tmp_path / ("site-phases" if layout.startswith("phases") else "phases")
    shutil.copytree(site / "phases", phases)
    for name in ("manifests", "tasks", "charts"):
        (tmp_path / name).symlink_to(site / name)
    inventory = tmp_path / {"inventory-directory": "inventory/clusters.yml", "inventory-file": "inventory.yml",
                            "phases-from-the-current-directory": "elsewhere/inventory.yml"}[layout]
    inventory.parent.mkdir(exist_ok=True)
    inventory.write_text(inventory_text(clusters))
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(collections_path), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_PYTHON_INTERPRETER": sys.executable, "STAMP_LOG": str(tmp_path / "log"), "PWD": "/"}
    env.pop("KUBECONFIG", None)
    proc = subprocess.run([str(VENV_BIN / "ansible-playbook"), "phasekit.kube.run", *args,
                           "-e", "plan=alternate", "-e", "only=t1"], env=env, capture_output=True, text=True,
                          cwd=tmp_path, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert read_stamps(tmp_path / "log")[0][:3] == ["start", "t1", "target"]


def test_playbook_runs_from_the_installed_collection(site, clusters, collections_path, tmp_path):
    (site / "inventory.yml").write_text(inventory_text(clusters))
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(collections_path), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_PYTHON_INTERPRETER": sys.executable, "STAMP_LOG": str(tmp_path / "log")}
    env.pop("KUBECONFIG", None)
    proc = subprocess.run([str(VENV_BIN / "ansible-playbook"), "phasekit.kube.run", "-i", str(site / "inventory.yml"),
                           "-e", "plan=alternate", "-e", "only=t1"], env=env, capture_output=True, text=True,
                          cwd=tmp_path, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert read_stamps(tmp_path / "log")[0][:3] == ["start", "t1", "target"]
