# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Helm releases on the local clusters: helm phases over two clusters, the helm action (helm 4 and helm 3),
and helm_mode apply. The chart is written by the tests and served from a chart repository on 127.0.0.1."""

from __future__ import annotations

import functools
import hashlib
import http.server
import json
import os
import subprocess
import threading
import uuid
from pathlib import Path

import pytest
import yaml

from test_apply import CLUSTER, run_tasks, task

pytestmark = [pytest.mark.k8s_matrix]

API = "phasekit.dev/v1alpha1"
PASSWORD = "hunter2-" + uuid.uuid4().hex[:12]        # a value that must never be shown
NEW_PASSWORD = "swordfish-" + uuid.uuid4().hex[:12]

TEMPLATES = {
    "greeting.yaml": """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-greeting
data:
  greeting: {{ .Values.greeting | quote }}
  chart: {{ .Chart.Version | quote }}
""",
    "secret.yaml": """\
apiVersion: v1
kind: Secret
metadata:
  name: {{ .Release.Name }}-secret
stringData:
  password: {{ required "password is required" .Values.password | quote }}
""",
    "extra.yaml": """\
{{- if .Values.extra }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-extra
data:
  extra: "yes"
{{- end }}
""",
}


def write_chart(root: Path, version: str, templates: dict | None = None) -> Path:
    """The chart ``hello`` at ``version`` in ``root/hello``."""
    chart = root / "hello"
    (chart / "templates").mkdir(parents=True, exist_ok=True)
    (chart / "Chart.yaml").write_text(f"apiVersion: v2\nname: hello\nversion: {version}\n")
    (chart / "values.yaml").write_text("greeting: hello\nextra: false\n")
    for name, text in (templates or TEMPLATES).items():
        (chart / "templates" / name).write_text(text)
    return chart


def helm(cluster, *args, binary: str = "helm", check: bool = True) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if key != "KUBECONFIG"}
    env["KUBECONFIG"] = str(cluster.admin_kubeconfig)
    return subprocess.run([binary, *args], env=env, capture_output=True, text=True, check=check)


def revision(cluster, name: str, namespace: str) -> int | None:
    done = helm(cluster, "history", name, "-n", namespace, "--max", "1", "-o", "json", check=False)
    return json.loads(done.stdout)[-1]["revision"] if done.returncode == 0 else None


@pytest.fixture(scope="module")
def packaged_charts(bin_dir, tmp_path_factory) -> Path:
    """hello 0.1.0 and 0.2.0, packaged (helm package) into one directory."""
    root = tmp_path_factory.mktemp("charts")
    packaged = root / "packaged"
    packaged.mkdir()
    for version in ("0.1.0", "0.2.0"):
        chart = write_chart(root / version, version)
        subprocess.run(["helm", "package", str(chart), "-d", str(packaged)], check=True, capture_output=True)
    return packaged


def serve(handler) -> tuple[http.server.ThreadingHTTPServer, str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"127.0.0.1:{server.server_address[1]}"


@pytest.fixture(scope="module")
def chart_repo(packaged_charts):
    """A chart repository on 127.0.0.1 with hello 0.1.0 and 0.2.0; yields its URL."""
    server, address = serve(functools.partial(QuietHandler, directory=str(packaged_charts)))
    url = f"http://{address}"
    subprocess.run(["helm", "repo", "index", str(packaged_charts), "--url", url], check=True, capture_output=True)
    yield url
    server.shutdown()


@pytest.fixture(scope="module")
def oci_registry(packaged_charts):
    """A read-only OCI registry on 127.0.0.1 (plain http) holding charts/hello 0.1.0 and 0.2.0, as helm push
    stores a chart: a config blob (Chart.yaml as JSON), one layer (the .tgz), a manifest per tag."""
    blobs, manifests = {}, {}

    def blob(data: bytes, media_type: str) -> dict:
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        blobs[digest] = data
        return {"mediaType": media_type, "digest": digest, "size": len(data)}

    for version in ("0.1.0", "0.2.0"):
        manifest = json.dumps({
            "schemaVersion": 2, "mediaType": OCI_MANIFEST,
            "config": blob(json.dumps({"apiVersion": "v2", "name": "hello", "version": version}).encode(),
                           "application/vnd.cncf.helm.config.v1+json"),
            "layers": [blob((packaged_charts / f"hello-{version}.tgz").read_bytes(),
                            "application/vnd.cncf.helm.chart.content.v1.tar+gzip")]}).encode()
        digest = "sha256:" + hashlib.sha256(manifest).hexdigest()
        manifests[version] = manifests[digest] = (digest, manifest)
    handler = functools.partial(RegistryHandler, blobs=blobs, manifests=manifests)
    server, address = serve(handler)
    yield f"oci://{address}/charts/hello"
    server.shutdown()


OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"


class RegistryHandler(http.server.BaseHTTPRequestHandler):
    """GET and HEAD of the OCI distribution API for one repository, charts/hello."""

    def __init__(self, *args, blobs=None, manifests=None, **kwargs):
        self.blobs, self.manifests = blobs, manifests
        super().__init__(*args, **kwargs)

    def do_HEAD(self):  # noqa: N802 - the http.server API
        self._answer(with_body=False)

    def do_GET(self):  # noqa: N802 - the http.server API
        self._answer(with_body=True)

    def _answer(self, with_body: bool):
        path = self.path.split("?", 1)[0]
        prefix = "/v2/charts/hello/"
        if path in ("/v2/", "/v2"):
            return self._send(200, b"{}", "application/json", None, with_body)
        if path == prefix + "tags/list":
            tags = sorted(key for key in self.manifests if not key.startswith("sha256:"))
            return self._send(200, json.dumps({"name": "charts/hello", "tags": tags}).encode(), "application/json",
                              None, with_body)
        if path.startswith(prefix + "manifests/") and path[len(prefix + "manifests/"):] in self.manifests:
            digest, body = self.manifests[path[len(prefix + "manifests/"):]]
            return self._send(200, body, OCI_MANIFEST, digest, with_body)
        if path.startswith(prefix + "blobs/") and path[len(prefix + "blobs/"):] in self.blobs:
            digest = path[len(prefix + "blobs/"):]
            return self._send(200, self.blobs[digest], "application/octet-stream", digest, with_body)
        return self._send(404, b'{"errors":[{"code":"NAME_UNKNOWN"}]}', "application/json", None, with_body)

    def _send(self, status: int, body: bytes, content_type: str, digest: str | None, with_body: bool):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        if digest:
            self.send_header("Docker-Content-Digest", digest)
        self.end_headers()
        if with_body:
            self.wfile.write(body)

    def log_message(self, *args):
        pass


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def helm_phase(name: str, **options) -> dict:
    return {"apiVersion": API, "kind": "Phase", "metadata": {"name": name},
            "spec": {"cluster": "management", "executor": "helm", "options": options}}


@pytest.fixture()
def helm_site(clusters, chart_repo, tmp_path, run_playbook):
    """A site whose one phase, charts/hello, is rewritten per step; run(phase options, *args) runs the plan."""
    namespace = f"phasekit-helm-{uuid.uuid4().hex[:8]}"
    site = tmp_path / "site"
    (site / "phases").mkdir(parents=True)
    (site / "values").mkdir()
    (site / "values" / "hello.yaml.j2").write_text('greeting: "hello from {{ inventory_hostname }}"\n')
    hosts = {name: {"kube_kubeconfig": str(cluster.admin_kubeconfig), "kube_context": name}
             for name, cluster in clusters.items()}
    (site / "inventory.yml").write_text(yaml.safe_dump({"all": {
        "vars": {"ansible_connection": "local", "hello_password": PASSWORD},
        "hosts": hosts, "children": {"management": {"hosts": {name: {} for name in hosts}}}}}))

    def run(options: dict, *args):
        base = {"chart_ref": "hello", "chart_repo_url": chart_repo, "release_namespace": namespace,
                "create_namespace": True, "values_files": ["../values/hello.yaml.j2"]}
        (site / "phases" / "hello.yaml").write_text(yaml.safe_dump(helm_phase("hello", **base, **options)))
        return run_playbook("- ansible.builtin.import_playbook: phasekit.kube.run\n", site / "inventory.yml", *args)

    run.namespace = namespace
    yield run
    for cluster in clusters.values():
        helm(cluster, "uninstall", "hello", "-n", namespace, check=False)
        cluster.kubectl("delete", "namespace", namespace, "--ignore-not-found", "--wait=false")


def summary_rows(result) -> str:
    return result.stdout[result.stdout.index("Summary of plan"):]


@pytest.mark.smoke
def test_a_chart_phase_on_two_clusters(helm_site, clusters):
    """Installed on both clusters with per-cluster values, a no-op re-run, check and diff, upgrade, then
    uninstalled by plan_action=destroy."""
    namespace = helm_site.namespace
    values = {"chart_version": "0.1.0", "release_values": {"password": PASSWORD}}
    result = helm_site(values)
    assert result.rc == 0, result
    for name, cluster in clusters.items():
        greeting = cluster.get_json("configmap", "hello-greeting", "-n", namespace)["data"]
        assert greeting == {"greeting": f"hello from {name}", "chart": "0.1.0"}
        assert revision(cluster, "hello", namespace) == 1
    assert PASSWORD not in result.output

    again = helm_site(values)
    assert again.rc == 0, again
    for name in clusters:
        assert f"hello  {name:<9}  ok" in summary_rows(again), summary_rows(again)
    assert [revision(cluster, "hello", namespace) for cluster in clusters.values()] == [1, 1]

    newer = {"chart_version": "0.2.0", "release_values": {"password": NEW_PASSWORD}}
    checked = helm_site(newer, "--check", "--diff")
    assert checked.rc == 0, checked
    assert '-  chart: 0.1.0\n+  chart: 0.2.0' in checked.stdout
    assert "password: '*** (after)'" in checked.stdout              # which key changed, not its value
    assert PASSWORD not in checked.output and NEW_PASSWORD not in checked.output
    assert [revision(cluster, "hello", namespace) for cluster in clusters.values()] == [1, 1]

    upgraded = helm_site(newer)
    assert upgraded.rc == 0, upgraded
    for cluster in clusters.values():
        assert cluster.get_json("configmap", "hello-greeting", "-n", namespace)["data"]["chart"] == "0.2.0"
        assert revision(cluster, "hello", namespace) == 2
    assert NEW_PASSWORD not in upgraded.output

    removed = helm_site(newer, "-e", "plan_action=destroy")
    assert removed.rc == 0, removed
    for name in clusters:
        assert f"hello  {name:<9}  destroyed" in summary_rows(removed), summary_rows(removed)
    for cluster in clusters.values():
        assert revision(cluster, "hello", namespace) is None
        assert cluster.kubectl("get", "configmap", "hello-greeting", "-n", namespace, check=False).returncode != 0


@pytest.mark.parametrize("binary", ["helm", "helm3"])
def test_the_helm_action_on_a_local_chart(clusters, run_playbook, tmp_path, binary):
    """helm 4 and helm 3: install, no-op, a template change without a version bump, a template error."""
    target = clusters[CLUSTER]
    namespace = f"phasekit-helm-{uuid.uuid4().hex[:8]}"
    chart = write_chart(tmp_path / "charts", "1.0.0")
    release = {"name": "local", "chart_ref": str(chart), "release_namespace": namespace, "create_namespace": True,
               "release_values": {"password": PASSWORD}, "binary_path": binary, "wait": True, "wait_timeout": "2m"}
    try:
        first, again, rest = run_tasks(run_playbook, tmp_path, [task("helm", target, **release),
                                                                task("helm", target, **release)])
        assert not first.get("failed"), first
        assert first["action"] == "installed" and first["release"]["revision"] == 1
        assert again["action"] == "unchanged" and not again["changed"] and again["release"]["revision"] == 1

        (chart / "templates" / "greeting.yaml").write_text(TEMPLATES["greeting.yaml"] + "  added: here\n")
        broken = {**release, "release_values": {}}  # the chart requires a password
        changed, failed, rest = run_tasks(run_playbook, tmp_path, [task("helm", target, **release),
                                                                   task("helm", target, **broken)])
        assert changed["action"] == "upgraded" and changed["release"]["revision"] == 2, changed
        assert changed["reasons"] == ["chart hello-1.0.0 content changed"]
        assert target.get_json("configmap", "local-greeting", "-n", namespace)["data"]["added"] == "here"
        assert failed["failed"] and "password is required" in failed["msg"], failed
        assert "templates/secret.yaml" in failed["msg"]
        assert PASSWORD not in rest.output

        absent = {"name": "local", "release_namespace": namespace, "release_state": "absent", "binary_path": binary}
        removed, nothing, rest = run_tasks(run_playbook, tmp_path, [task("helm", target, **absent),
                                                                    task("helm", target, **absent)])
        assert removed["changed"] and removed["action"] == "uninstalled", removed
        assert not nothing["changed"] and nothing["action"] == "absent", nothing
        assert revision(target, "local", namespace) is None
    finally:
        helm(target, "uninstall", "local", "-n", namespace, binary=binary, check=False)
        target.kubectl("delete", "namespace", namespace, "--ignore-not-found", "--wait=false")


def test_a_chart_from_an_oci_registry(clusters, run_playbook, tmp_path, oci_registry):
    target = clusters[CLUSTER]
    namespace = f"phasekit-helm-{uuid.uuid4().hex[:8]}"
    release = {"name": "oci", "chart_ref": oci_registry, "chart_version": "0.2.0", "plain_http": True,
               "release_namespace": namespace, "create_namespace": True, "release_values": {"password": PASSWORD}}
    try:
        first, again, rest = run_tasks(run_playbook, tmp_path, [task("helm", target, **release),
                                                                task("helm", target, **release)])
        assert first["action"] == "installed" and first["release"]["chart"] == "hello-0.2.0", first
        assert again["action"] == "unchanged", again
        assert target.get_json("configmap", "oci-greeting", "-n", namespace)["data"]["chart"] == "0.2.0"
        assert PASSWORD not in rest.output
    finally:
        helm(target, "uninstall", "oci", "-n", namespace, check=False)
        target.kubectl("delete", "namespace", namespace, "--ignore-not-found", "--wait=false")


def test_helm_talks_to_the_hosts_cluster_whatever_helm_variables_say(clusters, run_playbook, tmp_path, short_tmp):
    """HELM_KUBEAPISERVER and HELM_KUBECONTEXT in the environment would send helm elsewhere; they are removed.
    The private kubeconfig and values files helm was given are gone afterwards."""
    target = clusters[CLUSTER]
    namespace = f"phasekit-helm-{uuid.uuid4().hex[:8]}"
    chart = write_chart(tmp_path / "charts", "1.0.0")
    release = {"name": "env", "chart_ref": str(chart), "release_namespace": namespace, "create_namespace": True,
               "release_values": {"password": PASSWORD}}
    play = [{"hosts": "localhost", "gather_facts": False, "tasks": [task("helm", target, **release)]}]
    private_tmp = short_tmp
    try:
        result = run_playbook(play, None, env={"HELM_KUBEAPISERVER": "https://127.0.0.1:1", "TMPDIR": str(private_tmp),
                                               "HELM_KUBECONTEXT": "nowhere", "HELM_NAMESPACE": "elsewhere"})
        assert result.rc == 0, result
        assert revision(target, "env", namespace) == 1
        # the per-user base directory stays, empty
        ours = [path for path in private_tmp.iterdir() if path.name.startswith("phasekit-")]
        assert [list(path.rglob("*")) for path in ours] in ([], [[]])
    finally:
        helm(target, "uninstall", "env", "-n", namespace, check=False)
        target.kubectl("delete", "namespace", namespace, "--ignore-not-found", "--wait=false")


def test_helm_mode_apply_makes_an_applyset(clusters, run_playbook, tmp_path):
    """The rendered chart is applied as an ApplySet: no helm release, a no-op re-run, a dropped object pruned,
    then release_state absent deletes the set."""
    target = clusters[CLUSTER]
    namespace = f"phasekit-helm-{uuid.uuid4().hex[:8]}"
    chart = write_chart(tmp_path / "charts", "1.0.0")
    release = {"name": "rendered", "chart_ref": str(chart), "release_namespace": namespace,
               "create_namespace": True, "helm_mode": "apply", "release_values": {"password": PASSWORD}}
    with_extra = {**release, "release_values": {"password": PASSWORD, "extra": True}}
    try:
        first, again, fewer, rest = run_tasks(run_playbook, tmp_path, [
            task("helm", target, **with_extra),
            task("helm", target, **with_extra),
            task("helm", target, **release)], "--diff")
        assert not first.get("failed"), first
        assert first["counts"]["created"] == 4, first["counts"]     # namespace, two ConfigMaps, Secret
        assert again["changed"] is False and again["counts"]["unchanged"] == 4
        assert fewer["counts"]["pruned"] == 1, fewer["counts"]
        assert revision(target, "rendered", namespace) is None       # no helm release
        members = target.get_json("configmaps,secrets", "-n", namespace, "-l",
                                  f"applyset.kubernetes.io/part-of={first['applyset']['id']}")["items"]
        assert sorted(item["metadata"]["name"] for item in members) == ["rendered-greeting", "rendered-secret"]
        assert PASSWORD not in rest.output

        gone, rest = run_tasks(run_playbook, tmp_path, [task("helm", target, **{**release, "release_state": "absent"})])
        assert gone["changed"] and gone["counts"]["deleted"] == 3, gone   # two members and the namespace
        assert target.kubectl("get", "namespace", namespace, check=False).returncode != 0
    finally:
        target.kubectl("delete", "namespace", namespace, "--ignore-not-found", "--wait=false")
