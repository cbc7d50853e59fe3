"""A phase's digest covers everything its outcome depends on: each input changed in turn changes it (one row per
input kind), so ``plan_resume`` runs the phase again; what the phase does not depend on leaves it as it was."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import yaml

from ansible_collections.phasekit.kube.plugins.module_utils.running.builtin import BuiltinExecutors
from ansible_collections.phasekit.kube.plugins.module_utils.running.record import RunInfo, RunRecords
from phase_helpers import run_entry

RUN = RunInfo(run="20261124T144501Z-3fa2", plan="site", version="0.1.0", by="ci@runner")


class Access:
    """ClusterAccess without clusters: templates rendered by replacing ``{{ greeting }}`` with a host variable."""

    def __init__(self):
        self.greeting = "hello"

    def resolution(self, host):
        raise AssertionError("a digest reaches no cluster")

    def session(self, host, connections):
        raise AssertionError("a digest reaches no cluster")

    def render_template(self, host, path):
        return Path(path).read_text(encoding="utf-8").replace("{{ greeting }}", self.greeting)

    def secrets(self, host):
        return frozenset()


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def configmap(name: str, value: str) -> str:
    return yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"v": value}})


@pytest.fixture()
def site(tmp_path, monkeypatch):
    """Every kind of input a phase may depend on, on disk; the working directory is the site's (as a playbook's)."""
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "scripts/deploy.sh", "#!/bin/sh\necho one\n").chmod(0o755)
    write(tmp_path / "scripts/lib.sh", "echo lib\n")
    write(tmp_path / "config/site.yaml", "replicas: 1\n")
    write(tmp_path / "manifests/dir/a.yaml", "a: 1\n")
    write(tmp_path / "work/tool.conf", "mode: fast\n")
    write(tmp_path / "kust/kustomization.yaml", "resources: [cm.yaml]\n")
    write(tmp_path / "kust/cm.yaml", configmap("built", "one"))
    write(tmp_path / "bundle/cm.yaml", configmap("applied", "one"))
    write(tmp_path / "templated/cm.yaml.j2", configmap("templated", "{{ greeting }}"))
    write(tmp_path / "chart/Chart.yaml", "apiVersion: v2\nname: demo\nversion: 1.0.0\n")
    write(tmp_path / "chart/values.yaml", "replicas: 1\n")
    write(tmp_path / "chart/templates/cm.yaml", "kind: ConfigMap\n")
    write(tmp_path / "chart/charts/dep/Chart.yaml", "apiVersion: v2\nname: dep\nversion: 0.1.0\n")
    write(tmp_path / "chart/charts/dep/templates/cm.yaml", "kind: ConfigMap\n")
    write(tmp_path / "values/site.yaml", "image: one\n")
    write(tmp_path / "values/host.yaml.j2", "greeting: {{ greeting }}\n")
    write(tmp_path / "mounted/fn.yaml", "x: 1\n")
    return tmp_path


def command(**options):
    return run_entry("deploy", "command", options=options)


def helm(**options):
    return run_entry("demo", "helm", options={"chart_ref": "./chart", **options})


def append(relative: str, text: str = "changed: true\n"):
    def change(root: Path, access: Access):
        with open(root / relative, "a", encoding="utf-8") as handle:
            handle.write(text)
    return change


def greet(root: Path, access: Access):
    access.greeting = "bonjour"


# (phase, change): the change must change the phase's digest
CHANGES = [
    (command(argv=["./scripts/deploy.sh"]), append("scripts/deploy.sh")),
    (command(cmd="sh scripts/deploy.sh --fast"), append("scripts/deploy.sh")),
    (command(cmd="scripts/deploy.sh && sh scripts/lib.sh", shell=True), append("scripts/lib.sh")),
    (command(argv=["kubectl", "apply", "-f", "manifests/dir"]), append("manifests/dir/a.yaml")),
    (command(argv=["tool", "--config=config/site.yaml"]), append("config/site.yaml")),
    (command(argv=["tool", "tool.conf"], chdir="work"), append("work/tool.conf")),
    (command(argv=["tool"], env={"TOOL_CONFIG": "config/site.yaml"}), append("config/site.yaml")),
    (command(argv=["tool"], env_dirs={"REPO": {"cm.yaml": {"kustomize": "kust"}}}),
     lambda root, access: write(root / "kust/cm.yaml", configmap("built", "two"))),
    (run_entry("apply", "apply", source="bundle", options={}),
     lambda root, access: write(root / "bundle/cm.yaml", configmap("applied", "two"))),
    (run_entry("templated", "apply", source="templated", options={}), greet),
    (helm(), append("chart/templates/cm.yaml")),
    (helm(), append("chart/charts/dep/templates/cm.yaml")),
    (helm(), append("chart/values.yaml")),
    (helm(values_files=["values/site.yaml"]), append("values/site.yaml")),
    (helm(values_files=["values/host.yaml.j2"]), greet),
    (run_entry("fn", "container", options={"image": "fn:1", "mounts": [{"src": "mounted", "dst": "/m"}]}),
     append("mounted/fn.yaml")),
]
IDS = ["command-script-run-directly", "command-script-given-to-an-interpreter", "shell-command-names-a-script",
       "command-names-a-directory", "command-option-names-a-file", "command-file-relative-to-chdir",
       "command-env-names-a-file", "command-env-dirs-build", "apply-bundle", "apply-j2-template-rendered",
       "helm-chart-template-same-version", "helm-chart-dependency", "helm-chart-default-values",
       "helm-values-file", "helm-values-file-j2-rendered", "container-read-only-mount"]


@pytest.mark.parametrize("phase, change", CHANGES, ids=IDS)
def test_each_input_a_phase_depends_on_changes_its_digest(site, phase, change):
    access = Access()
    if isinstance(phase.source, str):  # phase_plan makes a source path absolute
        phase = dataclasses.replace(phase, source=str(site / phase.source))
    before = BuiltinExecutors(access).content_digest(phase, "c1")
    assert before == BuiltinExecutors(access).content_digest(phase, "c1")   # stable while nothing changes
    change(site, access)
    assert BuiltinExecutors(access).content_digest(phase, "c1") != before


@pytest.mark.parametrize("phase, change", [
    (command(argv=["./scripts/deploy.sh"]), append("scripts/lib.sh")),
    (helm(), append("values/site.yaml")),
    (command(argv=["python3", "-c", "print(open('config/site.yaml').read())"]), append("config/site.yaml")),
], ids=["a-file-the-command-does-not-name", "a-values-file-the-release-does-not-use",
        "an-interpreters-code-is-not-a-command-line"])
def test_what_a_phase_does_not_depend_on_leaves_its_digest(site, phase, change):
    access = Access()
    before = BuiltinExecutors(access).content_digest(phase, "c1")
    change(site, access)
    assert BuiltinExecutors(access).content_digest(phase, "c1") == before


def test_a_directory_too_large_to_compare_is_never_resumable(site, monkeypatch):
    from ansible_collections.phasekit.kube.plugins.module_utils.records import fingerprint
    monkeypatch.setattr(fingerprint, "MAX_FILES", 0)
    phase = command(argv=["kubectl", "apply", "-f", "manifests/dir"])
    assert BuiltinExecutors(Access()).content_digest(phase, "c1") != \
        BuiltinExecutors(Access()).content_digest(phase, "c1")


class SecretStore:
    """ConfigMaps and Secrets by path, as the API server keeps them."""

    def __init__(self):
        self.objects: dict[str, dict] = {}
        self.calls: list[tuple] = []

    def request(self, method, path, *, body=None, **_):
        from ansible_collections.phasekit.kube.plugins.module_utils.kube.session import ApiError, Response
        self.calls.append((method, path))
        if method == "GET":
            if path not in self.objects:
                raise ApiError(404, "NotFound", "not found")
            return Response(200, json.loads(json.dumps(self.objects[path])))
        if method == "POST":
            self.objects[f"{path}/{body['metadata']['name']}"] = body
            return Response(201, body)
        self.objects[path]["data"].update(body["data"])
        return Response(200, self.objects[path])


def test_the_recorded_digest_is_keyed_per_cluster(site):
    """The digest a record keeps is not the plain digest of what the phase used, nor the same on two clusters."""
    phase = helm(release_values={"password": "hunter2"})
    stores = {"c1": SecretStore(), "c2": SecretStore()}
    kept = RunRecords(RUN, session_for=lambda host: stores[host], namespace_for=lambda host: "ns")
    executors = BuiltinExecutors(Access(), records=kept)
    plain = executors.content_digest(phase, "c1")
    first, second = executors.digest(phase, "c1"), executors.digest(phase, "c2")
    assert plain.startswith("sha256:") and first.startswith("hmac-sha256:") and second.startswith("hmac-sha256:")
    assert first != second and plain[len("sha256:"):] not in (first, second)
    assert executors.digest(phase, "c1") == first
    assert sum(1 for method, path in stores["c1"].calls if "/secrets" in path and method == "GET") == 1
