"""Helm releases as plain data: values merging, options, charts and digests, the idempotence rule, argv, diffs."""

from __future__ import annotations

import re
import shlex
import tarfile

import pytest

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.helm.chart import ChartCache, ChartSource, local_chart
from ansible_collections.phasekit.kube.plugins.module_utils.helm.cli import HelmCli, HelmCommandError, HelmOutput, helm_environment
from ansible_collections.phasekit.kube.plugins.module_utils.helm.options import (
    HELM_OPTIONS_SPEC, check_helm_options, duration_seconds, helm_request, merge_values, plain_values_file)
from ansible_collections.phasekit.kube.plugins.module_utils.helm.release import (
    HelmReport, check_helm_version, ensure_release, helm_timeout, manifest_diffs, read_status, release_changes,
    release_description, release_masks, remove_release, split_manifest, uninstall_argv, upgrade_argv, values_masks)
from ansible_collections.phasekit.kube.plugins.module_utils.helm.run import (
    _prepare, coalesced, release_apply_arguments, unresolved_kubeconfig_result)

DEFAULTS = {name: rule.get("default") for name, rule in HELM_OPTIONS_SPEC.items()}


def options(**values):
    return {**DEFAULTS, "name": "hello", "chart_ref": "/charts/hello", **values}


def write_chart(root, version="1.0.0", greeting="hello"):
    (root / "templates").mkdir(parents=True, exist_ok=True)
    (root / "Chart.yaml").write_text(f"apiVersion: v2\nname: hello\nversion: {version}\n")
    (root / "templates" / "cm.yaml").write_text(f"kind: ConfigMap\ndata: {{greeting: {greeting}}}\n")
    return root


def test_values_merge_as_helm_merges_files():
    base = {"image": {"tag": "1", "repo": "r"}, "list": [1, 2], "keep": True}
    merge_values(base, {"image": {"tag": "2"}, "list": [3]})
    assert base == {"image": {"tag": "2", "repo": "r"}, "list": [3], "keep": True}


def test_request_merges_files_in_order_then_inline_values(tmp_path):
    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml.j2"
    first.write_text("a: 1\nnested: {x: 1, y: 1}\n")
    read = []

    def reader(path):
        read.append(path)
        return first.read_text() if path == str(first) else "nested: {y: 2}\nb: 2\n"

    request = helm_request(options(values_files=[str(first), str(second)], release_values={"b": 3}),
                           namespace="ctx-ns", read_values_file=reader)
    assert request.values == {"a": 1, "nested": {"x": 1, "y": 2}, "b": 3}
    assert read == [str(first), str(second)]
    assert request.namespace == "ctx-ns" and request.chart == ChartSource("/charts/hello")


@pytest.mark.parametrize("values, message", [
    ({"chart_ref": None}, "chart_ref is required to install a release"),
    ({"wait_timeout": "5"}, "wait_timeout '5': expected a duration such as 300s, 5m or 1h30m"),
    ({"history_max": -1}, "history_max must be 0 (no limit) or more, got -1"),
])
def test_options_the_spec_cannot_judge(values, message):
    with pytest.raises(PhasekitError, match=message.replace("(", r"\(").replace(")", r"\)")):
        check_helm_options(options(**values))


def test_absent_needs_no_chart_but_a_name():
    check_helm_options(options(chart_ref=None, release_state="absent"))
    with pytest.raises(PhasekitError, match="name .the release name. is required"):
        helm_request(options(name=None), namespace="default", read_values_file=str)


@pytest.mark.parametrize("text, seconds", [("90s", 90), ("5m", 300), ("1h30m", 5400), ("1.5h", 5400),
                                           ("5m0s", 300), ("0", 0), ("5", None), ("", None), ("m5", None)])
def test_durations_as_go_parses_them(text, seconds):
    assert duration_seconds(text) == seconds


def test_a_values_file_must_be_one_mapping(tmp_path):
    with pytest.raises(PhasekitError, match="values file v.yaml: expected one mapping of values, got a list"):
        helm_request(options(values_files=["v.yaml"]), namespace="d", read_values_file=lambda _p: "- a\n")
    with pytest.raises(PhasekitError, match="values file v.yaml line 2 column 1: invalid YAML"):
        helm_request(options(values_files=["v.yaml"]), namespace="d", read_values_file=lambda _p: "a: [\n")


@pytest.mark.parametrize("name, message", [
    ("missing.yaml", "cannot read: No such file or directory"),
    ("directory", "cannot read: Is a directory"),
], ids=["missing-file", "directory"])
def test_a_values_file_that_cannot_be_read_is_named(tmp_path, name, message):
    """As the helm action reads it: the file named, not a raw [Errno 2] or IsADirectoryError."""
    (tmp_path / "directory").mkdir()
    with pytest.raises(PhasekitError) as error:
        helm_request(options(values_files=[str(tmp_path / name)]), namespace="d", read_values_file=plain_values_file)
    assert str(error.value) == f"{tmp_path / name}: {message}"


def test_chart_digest_covers_content_and_is_the_same_packaged(tmp_path):
    chart = local_chart(str(write_chart(tmp_path / "hello")))
    assert (chart.name, chart.version) == ("hello", "1.0.0")
    with tarfile.open(tmp_path / "hello-1.0.0.tgz", "w:gz") as archive:
        archive.add(tmp_path / "hello", arcname="hello")
    assert local_chart(str(tmp_path / "hello-1.0.0.tgz")).digest == chart.digest
    changed = local_chart(str(write_chart(tmp_path / "other", greeting="hi")))
    assert changed.version == chart.version and changed.digest != chart.digest


def test_chart_errors_name_the_chart(tmp_path):
    with pytest.raises(PhasekitError, match="chart ./missing: no such chart directory or archive"):
        ChartCache().chart(ChartSource("./missing"), pull=None)
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "Chart.yaml").write_text("name: bad\n")
    with pytest.raises(PhasekitError, match="Chart.yaml must give name and version"):
        local_chart(str(tmp_path / "bad"))


def test_chart_version_of_a_chart_on_disk_is_ignored_as_helm_ignores_it(tmp_path):
    """kubernetes.core passes --version to helm, which ignores it for a chart on disk: that chart is installed."""
    write_chart(tmp_path / "v1")
    assert ChartCache().chart(ChartSource(str(tmp_path / "v1"), version="2.0.0"), pull=None).version == "1.0.0"


def test_a_remote_chart_is_pulled_once_for_all_clusters(tmp_path):
    pulls = []

    def pull(source, into):
        pulls.append(source)
        return str(write_chart(tmp_path / f"pulled{len(pulls)}"))

    source = ChartSource("hello", repo_url="http://127.0.0.1:1", version="1.0.0")
    with ChartCache() as charts:
        assert charts.chart(source, pull) == charts.chart(source, pull)
    assert pulls == [source]


def request_for(values=None):
    return helm_request(options(release_values=values or {"a": 1}), namespace="ns", read_values_file=str)


def live_revision(chart, request, **changes):
    return {"revision": 3, "status": "deployed", "chart": f"{chart.name}-{chart.version}",
            "description": release_description(chart, request), **changes}


def test_a_release_as_asked_needs_nothing(tmp_path):
    chart, request = local_chart(str(write_chart(tmp_path / "c"))), request_for()
    assert release_changes(live_revision(chart, request), chart, request) == []
    assert release_changes(None, chart, request) == ["not installed"]


def test_why_a_release_is_upgraded(tmp_path):
    chart, request = local_chart(str(write_chart(tmp_path / "c"))), request_for()
    live = live_revision(chart, request)
    assert release_changes(live, chart, request_for({"a": 2})) == ["values changed"]
    other = local_chart(str(write_chart(tmp_path / "d", greeting="hi")))
    assert release_changes(live, other, request) == ["chart hello-1.0.0 content changed"]
    newer = local_chart(str(write_chart(tmp_path / "e", version="1.1.0")))
    assert release_changes(live, newer, request) == ["chart hello-1.0.0 -> hello-1.1.0"]
    assert release_changes(dict(live, status="failed"), chart, request) == ["status is failed"]
    assert release_changes(dict(live, description="Upgrade complete"), chart, request) == [
        "last changed by another tool (no phasekit.kube digests in its description)"]


def test_upgrade_argv_for_helm_3_and_4(tmp_path):
    chart = local_chart(str(write_chart(tmp_path / "c")))
    request = helm_request(options(chart_ref=str(tmp_path / "c"), atomic=True, wait=True, wait_timeout="2m",
                                   history_max=5, create_namespace=True), namespace="ns", read_values_file=str)
    helm4 = upgrade_argv(request, chart, "/private/values.yaml", 4)
    assert helm4[:5] == ["upgrade", "hello", str(tmp_path / "c"), "--install", "--reset-values"]
    for flag in ("--create-namespace", "--wait", "--rollback-on-failure", "--timeout"):
        assert flag in helm4
    assert helm4[helm4.index("--description") + 1] == release_description(chart, request)
    assert "--atomic" in upgrade_argv(request, chart, "/v", 3)
    dry = upgrade_argv(request, chart, "/v", 4, dry_run=True)
    assert "--dry-run=client" in dry and "--wait" not in dry and "--rollback-on-failure" not in dry
    assert helm_timeout(request) == 180


def test_manifest_diffs_show_changed_objects_with_secret_values_hidden():
    before = ("---\n# Source: hello/templates/cm.yaml\nkind: ConfigMap\napiVersion: v1\nmetadata: {name: a}\n"
              "data: {k: '1'}\n---\n# Source: hello/templates/secret.yaml\napiVersion: v1\nkind: Secret\n"
              "metadata: {name: s}\nstringData: {password: old-secret, user: admin}\n")
    after = before.replace("k: '1'", "k: '2'").replace("old-secret", "new-secret")
    assert [source for source, _doc in split_manifest(before)] == ["templates/cm.yaml", "templates/secret.yaml"]
    diffs = manifest_diffs(before, after, "ns/hello")
    assert [d["after_header"] for d in diffs] == ["ns/hello: ConfigMap a (rendered)", "ns/hello: Secret s (rendered)"]
    text = repr(diffs)
    assert "old-secret" not in text and "new-secret" not in text and "admin" not in text
    assert "password: '*** (after)'" in diffs[1]["after"]
    assert manifest_diffs(before, before, "ns/hello") == []


def test_values_and_set_values_are_scrubbed_from_helm_errors():
    request = helm_request(options(release_values={"db": {"password": "p4ssw0rd-123"}, "n": 1},
                                   set_values=[{"value": "image.tag=t4g-from-set", "value_type": "string"}]),
                           namespace="ns", read_values_file=str)
    text = ("Error: Secret in version v1 cannot be handled: illegal base64 data 'p4ssw0rd-123' at input byte 4; "
            "image t4g-from-set")
    scrubbed = values_masks(request).scrub(text)
    assert "p4ssw0rd" not in scrubbed and "t4g-from-set" not in scrubbed and "input byte 4" in scrubbed


def test_apply_mode_is_a_pruned_applyset_named_after_the_release():
    request = helm_request(options(wait=True, wait_timeout="90s", release_namespace="apps"), namespace="default",
                           read_values_file=str)
    args = release_apply_arguments(request)
    wanted = ("hello", True, "apps", {"timeout": 90})
    assert (args["applyset"], args["prune"], args["namespace"], args["wait"]) == wanted


class RefusingHelm:
    """A helm whose upgrade fails: at template time (no new revision) or after making one (a --wait timeout)."""

    version = (4, 0, 0)

    def __init__(self, live, after_failure):
        self.revisions = [live, after_failure]

    def latest_revision(self, name, namespace):
        return self.revisions.pop(0)

    def values_file(self, values):
        return "/private/values.yaml"

    def manifest(self, name, namespace):
        return ""

    def command(self, argv):
        return shlex.join(["helm", *argv])

    def release_status(self, name, namespace):
        return None

    def call(self, argv, what, timeout=None):
        stderr = ("Error: execution error at (hello/templates/cm.yaml:6:17): postgres://app:p4ssw0rd-123@db is not "
                  "allowed\n")
        raise HelmCommandError(f"{what} failed: {stderr.strip()}", HelmOutput(self.command(argv), "", stderr), 1)

    run = call


@pytest.mark.parametrize("live, after_failure, action", [
    (None, None, "failed"),
    (None, {"revision": 1, "status": "failed"}, "installed"),
    ({"revision": 3, "status": "deployed"}, {"revision": 3, "status": "deployed"}, "failed"),
    ({"revision": 3, "status": "deployed"}, {"revision": 4, "status": "failed"}, "upgraded"),
], ids=["install-refused-at-template-time", "install-that-left-a-failed-revision",
        "upgrade-refused-at-template-time", "upgrade-that-left-a-failed-revision"])
def test_a_failed_request_is_unchanged_with_helms_output_and_says_what_helm_left(tmp_path, live, after_failure,
                                                                                 action):
    """kubernetes.core's rule: a failed request is changed: false, with stderr and command; phasekit's action says
    whether helm left a revision behind."""
    chart = local_chart(str(write_chart(tmp_path / "c")))
    request = request_for({"db": {"password": "postgres://app:p4ssw0rd-123@db"}})
    report = ensure_release(RefusingHelm(live, after_failure), request, chart, check_mode=False, diff=False)
    assert (report.changed, report.action) == (False, action)
    assert "templates/cm.yaml:6:17" in report.failure and "p4ssw0rd" not in report.failure
    result = report.result()
    assert result["command"].startswith("helm upgrade hello ") and "templates/cm.yaml:6:17" in result["stderr"]
    assert "p4ssw0rd" not in repr(result)
    assert "status" not in result  # kubernetes.core's failures have no status


def test_values_never_appear_in_diffs():
    before = "---\n# Source: hello/templates/cm.yaml\nkind: ConfigMap\napiVersion: v1\nmetadata: {name: a}\n"
    after = before + "data: {dsn: 'postgres://app:p4ssw0rd-123@db', mode: fast}\n"
    hidden = values_masks(request_for({"db": {"dsn": "postgres://app:p4ssw0rd-123@db"}}))
    diffs = hidden.scrub(manifest_diffs("", after, "ns/hello"))
    assert "p4ssw0rd" not in repr(diffs) and "dsn: ***" in diffs[0]["after"] and "mode: fast" in diffs[0]["after"]


# kubernetes.core.helm's options as helm 3 and helm 4 flags: (options, major, flags present, flags absent)
K8S_CORE_FLAGS = [
    ({}, 3, ["--reset-values"], ["--reuse-values=True", "--force", "--no-hooks"]),
    ({"reset_values": False, "reuse_values": True}, 4, ["--reuse-values=True"], ["--reset-values"]),
    ({"reuse_values": False}, 3, ["--reset-values", "--reuse-values=False"], []),
    ({"reset_then_reuse_values": True, "reset_values": False}, 4, ["--reset-then-reuse-values"], ["--reset-values"]),
    ({"set_values": [{"value": "a=1"}, {"value": "b=x", "value_type": "string"},
                     {"value": 'c={"d": 1}', "value_type": "json"}, {"value": "e=/f", "value_type": "file"}]}, 4,
     ["--set a=1", "--set-string b=x", '--set-json c={"d": 1}', "--set-file e=/f"], []),
    ({"disable_hook": True}, 3, ["--no-hooks"], []),
    ({"force": True}, 3, ["--force"], ["--force-replace"]),
    ({"force": True}, 4, ["--server-side=false", "--force-replace"], ["--force "]),
    ({"atomic": True}, 3, ["--atomic"], ["--rollback-on-failure"]),
    ({"atomic": True}, 4, ["--rollback-on-failure"], ["--atomic"]),
    ({"wait": True, "wait_timeout": "90s"}, 4, ["--wait", "--timeout 90s"], []),
    ({"timeout": "3m"}, 3, ["--timeout 3m"], ["--wait"]),
    ({"wait_timeout": "90s"}, 4, [], ["--timeout", "--wait"]),
    ({"server_side": "auto", "force_conflicts": True}, 4, ["--server-side=auto", "--force-conflicts"], []),
    ({"post_renderer": "/bin/renderer"}, 3, ["--post-renderer=/bin/renderer"], []),
    ({"replace": True, "dependency_update": True}, 3, ["install hello", "--replace", "--dependency-update"],
     ["--install", "--reset-values"]),
    ({"take_ownership": True}, 4, ["--take-ownership"], []),
    ({"skip_schema_validation": True, "skip_crds": True}, 3, ["--skip-schema-validation", "--skip-crds"], []),
    ({"insecure_skip_tls_verify": True, "plain_http": True}, 4, ["--insecure-skip-tls-verify", "--plain-http"], []),
    ({"history_max": 3, "create_namespace": True}, 3, ["--history-max=3", "--create-namespace"], []),
]


@pytest.mark.parametrize("given, major, present, absent", K8S_CORE_FLAGS, ids=[
    "reset-values-by-default", "reuse-values-without-reset", "reuse-values-false-is-said", "reset-then-reuse",
    "set-values-each-type", "disable-hook-is-no-hooks", "force-helm3", "force-helm4-client-side-replace",
    "atomic-helm3", "atomic-helm4-rollback-on-failure", "wait-with-wait-timeout", "timeout-without-wait",
    "wait-timeout-without-wait-is-not-passed",
    "server-side-and-force-conflicts", "post-renderer", "replace-is-helm-install", "take-ownership",
    "skip-schema-validation-and-crds", "insecure-and-plain-http", "history-max-and-create-namespace"])
def test_kubernetes_core_options_as_helm_flags(tmp_path, given, major, present, absent):
    chart = local_chart(str(write_chart(tmp_path / "c")))
    request = helm_request(options(chart_ref=str(tmp_path / "c"), **given), namespace="ns", read_values_file=str)
    command = " ".join(upgrade_argv(request, chart, "/v", major))
    for flag in present:
        assert flag in command
    for flag in absent:
        assert flag not in command


@pytest.mark.parametrize("given, version, message", [
    ({"server_side": "true"}, (3, 22), "server_side requires helm >= 4.0.0, current version is 3.22"),
    ({"force_conflicts": True}, (3, 22), "force_conflicts requires helm >= 4.0.0"),
    ({"take_ownership": True}, (3, 16), "take_ownership requires helm >= 3.17.0"),
    ({"skip_schema_validation": True}, (3, 15), "skip_schema_validation requires helm >= 3.16.0"),
    ({"insecure_skip_tls_verify": True}, (3, 15), "insecure_skip_tls_verify requires helm >= 3.16.0"),
    ({"reset_then_reuse_values": True}, (3, 13), "reset_then_reuse_values requires helm >= 3.14.0"),
], ids=["server-side-needs-helm4", "force-conflicts-needs-helm4", "take-ownership-needs-3.17",
        "skip-schema-validation-needs-3.16", "insecure-needs-3.16", "reset-then-reuse-needs-3.14"])
def test_options_the_installed_helm_lacks_are_refused_as_kubernetes_core_refuses_them(given, version, message):
    request = helm_request(options(**given), namespace="ns", read_values_file=str)
    with pytest.raises(PhasekitError, match=re.escape(message)):
        check_helm_version(request, version)
    check_helm_version(request, (4, 3))


def test_uninstall_as_kubernetes_core_runs_it():
    request = helm_request(options(release_state="absent", purge=False, disable_hook=True, wait=True,
                                   wait_timeout="1m"), namespace="ns", read_values_file=str)
    assert uninstall_argv(request) == ["uninstall", "hello", "--namespace", "ns", "--keep-history", "--no-hooks",
                                       "--wait", "--timeout", "1m"]
    timeout_only = helm_request(options(release_state="absent", timeout="1m"), namespace="ns", read_values_file=str)
    assert uninstall_argv(timeout_only) == ["uninstall", "hello", "--namespace", "ns"]  # kubernetes.core: no timeout


def test_set_values_change_the_values_digest_and_are_masked(tmp_path):
    plain = helm_request(options(), namespace="ns", read_values_file=str)
    with_set = helm_request(options(set_values=[{"value": "db.password=s3cr3t-value", "value_type": "string"}]),
                            namespace="ns", read_values_file=str)
    assert plain.values_digest != with_set.values_digest
    assert release_masks(with_set).scrub("--set-string db.password=s3cr3t-value") == "--set-string db.password=***"


class RecordingHelm:
    """A helm that records its calls and answers ``helm list`` and ``helm get values`` like helm 3 or 4."""

    def __init__(self, version):
        self.version, self.calls = version, []

    def run(self, argv, what, timeout=None):
        self.calls.append(argv)
        if argv[0] == "list":
            return ('[{"name":"hello","namespace":"ns","revision":"2","updated":"2026-11-27 01:20:36 +0000 UTC",'
                    '"status":"deployed","chart":"hello-1.0.0","app_version":""},{"name":"hello2"}]')
        return '{"password": "p4ssw0rd-123", "replicas": 2}'

    def call(self, argv, what, timeout=None):
        self.calls.append(argv)
        return HelmOutput(shlex.join(argv), "", "")

    values = HelmCli.values
    repo_update = HelmCli.repo_update
    release_status = HelmCli.release_status


@pytest.mark.parametrize("version, listed_with_all", [((3, 22), True), ((4, 3), False)],
                         ids=["helm3-lists-every-status-with-all", "helm4-lists-every-status-by-default"])
def test_status_is_helm_lists_entry_with_its_values(version, listed_with_all):
    helm = RecordingHelm(version)
    status = helm.release_status("hello", "ns")
    assert status["chart"] == "hello-1.0.0" and status["revision"] == "2" and status["appversion"] == ""
    assert status["release_values"] == status["values"] == {"password": "p4ssw0rd-123", "replicas": 2}
    assert ("--all" in helm.calls[0]) is listed_with_all and helm.calls[1][:2] == ["get", "values"]
    assert helm.calls[0][helm.calls[0].index("--filter") + 1] == "^hello$"


def test_status_values_are_hidden_in_the_result():
    report = HelmReport("hello", "ns")
    read_status(RecordingHelm((4, 3)), report)
    result = report.result()
    assert result["status"]["release_values"] == {"password": "***", "replicas": 2}
    assert "p4ssw0rd" not in repr(result)


@pytest.mark.parametrize("given, failure, warning", [
    ({"chart_ref": "repo/hello", "dependency_update": True}, "Please use 'helm install' instead by adding 'replace'",
     "This is a not stable feature with 'chart_repo_url'"),
    ({"chart_ref": "repo/hello", "dependency_update": True, "replace": True}, None,
     "This is a not stable feature with 'chart_repo_url'"),
], ids=["repository-chart-needs-replace", "repository-chart-with-replace-installs-with-dependency-update"])
def test_dependency_update_of_a_repository_chart_as_kubernetes_core(given, failure, warning):
    request = helm_request(options(**given), namespace="ns", read_values_file=str)
    report = HelmReport("hello", "ns")
    done = _prepare(RecordingHelm((4, 3)), request, report)
    if failure is None:
        assert done is None
    else:
        assert failure in done.failure and done.changed is False
    assert any(warning in text for text in report.warnings)


def test_dependency_update_of_a_chart_directory_runs_helm_dependency_update(tmp_path):
    chart = write_chart(tmp_path / "c")
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: hello\nversion: 1.0.0\ndependencies:\n"
                                      "  - {name: sub, version: 0.1.0, repository: file://../sub}\n")
    helm = RecordingHelm((3, 22))
    request = helm_request(options(chart_ref=str(chart), dependency_update=True, update_repo_cache=True),
                           namespace="ns", read_values_file=str)
    assert _prepare(helm, request, HelmReport("hello", "ns")) is None
    assert helm.calls == [["repo", "update"], ["dependency", "update", str(chart)]]


def fake_helm(tmp_path, version: str):
    """A helm that says its version and fails every other call as helm fails for a context that does not exist,
    printing its arguments first."""
    script = tmp_path / f"helm-{version}"
    script.write_text(f"#!/bin/sh\nif [ \"$1\" = version ]; then echo {version}; exit 0; fi\necho \"$@\"\n"
                      "echo 'Error: Kubernetes cluster unreachable: context \"nowhere\" does not exist' >&2\n"
                      "exit 1\n")
    script.chmod(0o755)
    return str(script)


@pytest.mark.parametrize("version, state, flag", [
    ("v3.22.0", "present", "--deployed"), ("v4.3.1", "present", "--deployed"), ("v3.22.0", "absent", "--all"),
    ("v4.3.1", "absent", ""),
], ids=["helm3-present-lists-deployed", "helm4-present-lists-deployed", "helm3-absent-lists-all",
        "helm4-absent-lists-every-status-by-default"])
def test_a_context_that_does_not_exist_is_helms_own_failure(tmp_path, version, state, flag):
    """kubernetes.core asks helm (helm list, in the context) and fails with helm's output; phasekit does the same
    once it knows no source defines the context, and adds its own message (the contexts that exist)."""
    err = PhasekitError("context 'nowhere' is not defined by any kubeconfig source; known contexts: target")
    binary = fake_helm(tmp_path, version)
    result = unresolved_kubeconfig_result(err, {"context": "nowhere", "name": "hello", "binary_path": binary,
                                                "release_state": state})
    assert (result["failed"], result["changed"], "status" in result) == (True, False, False)
    assert result["stderr"] == 'Error: Kubernetes cluster unreachable: context "nowhere" does not exist\n'
    assert result["command"].startswith(f"{binary} list --output=yaml --filter hello --kube-context nowhere")
    assert result["command"].endswith(flag) and result["stdout"].startswith("list --output=yaml")
    assert result["msg"].startswith("Failure when executing Helm command. Exited 1.\nstdout: list ")
    assert result["msg"].endswith("\n" + str(err)) and "stderr: Error: Kubernetes cluster unreachable" in result["msg"]


def test_a_context_named_by_a_host_var_is_asked_of_helm_too(tmp_path):
    """kube_context (or K8S_AUTH_CONTEXT) named the context, not the task: helm is asked about that context."""
    err = PhasekitError("context 'nowhere' is not defined by any kubeconfig source; known contexts: target")
    result = unresolved_kubeconfig_result(err, {"name": "hello", "binary_path": fake_helm(tmp_path, "v4.3.1")})
    assert "--kube-context nowhere" in result["command"] and "does not exist" in result["stderr"]


@pytest.mark.parametrize("err, args", [
    (PhasekitError("kubeconfig source 1 (path: /nowhere): no such file"), {"context": "nowhere", "name": "hello"}),
    (PhasekitError("context 'nowhere' is not defined by any kubeconfig source"),
     {"context": "nowhere", "name": "hello", "binary_path": "/no/such/helm"}),
], ids=["another-error-runs-no-helm", "no-helm-to-ask"])
def test_a_kubeconfig_that_cannot_be_resolved_fails_with_phasekits_message(err, args):
    result = unresolved_kubeconfig_result(err, args)
    assert result == {"failed": True, "changed": False, "msg": str(err), "stderr": str(err), "stdout": "",
                      "command": ""}


class ListingHelm:
    """A helm with one release (or none): its latest revision, its ``helm list`` entry with the values given."""

    version = (3, 22)

    def __init__(self, live, values=None):
        self.live, self.values = live, values or {}

    def latest_revision(self, name, namespace):
        return self.live

    def release_status(self, name, namespace):
        if self.live is None:
            return None
        return {"name": name, "namespace": namespace, "revision": str(self.live["revision"]),
                "status": self.live["status"], "chart": self.live["chart"], "app_version": "",
                "release_values": self.values, "values": self.values}

    def values_file(self, values):
        return "/private/values.yaml"

    def command(self, argv):
        return shlex.join(["/usr/bin/helm", *argv])


@pytest.mark.parametrize("live_status, asked, changed, listed", [
    ("deployed", {"a": 1}, False, True),
    ("deployed", {"a": 2}, True, True),
    (None, {"a": 1}, True, False),
    ("failed", {"a": 1}, True, False),
], ids=["unchanged-release", "changed-release", "no-release", "failed-release-is-not-listed-for-present"])
def test_check_mode_status_is_kubernetes_cores(tmp_path, live_status, asked, changed, listed):
    """kubernetes.core's check mode: status holds only values and release_values, each {current: the live values,
    declared: the live release's status} (its own choice), both {} when no deployed release is listed."""
    chart = local_chart(str(write_chart(tmp_path / "c")))
    live = live_revision(chart, request_for({"a": 1}), status=live_status) if live_status else None
    helm = ListingHelm(live, {"a": 1})
    report = ensure_release(helm, request_for(asked), chart, check_mode=True, diff=False)
    status = report.result()["status"]
    assert report.changed is changed and set(status) == {"values", "release_values"}
    for key in ("values", "release_values"):
        assert status[key]["current"] == ({"a": 1} if listed else {})
        assert (status[key]["declared"].get("chart"), status[key]["declared"].get("status")) == (
            ("hello-1.0.0", "deployed") if listed else (None, None))


@pytest.mark.parametrize("given, live, command", [
    ({"chart_version": "1.0.0"}, True, "/usr/bin/helm --version=1.0.0"),
    ({}, True, "/usr/bin/helm"),
    ({"release_state": "absent"}, False, "/usr/bin/helm"),
], ids=["unchanged-with-chart-version", "unchanged", "nothing-to-uninstall"])
def test_command_when_helm_has_nothing_to_do_is_kubernetes_cores(tmp_path, given, live, command):
    """kubernetes.core builds no helm command then: ``command`` is helm's path with the chart flags it put first."""
    chart = local_chart(str(write_chart(tmp_path / "c")))
    request = helm_request(options(chart_ref=str(tmp_path / "c"), release_values={"a": 1}, **given), namespace="ns",
                           read_values_file=str)
    helm = ListingHelm(live_revision(chart, request) if live else None, {"a": 1})
    if request.state == "absent":
        report = remove_release(helm, request, check_mode=False, diff=False)
    else:
        report = ensure_release(helm, request, chart, check_mode=False, diff=False)
    assert (report.changed, report.result()["command"]) == (False, command)


def test_status_shows_values_as_kubernetes_core_but_credentials():
    """Ordinary values come back as kubernetes.core returns them; values named as credentials are hidden."""
    values = {"myValue": "changed", "existingSecret": "my-secret", "tolerations": [{"key": "node-role.io/infra"}],
              "db": {"password": "p4ssw0rd-123"}, "auth": {"apiToken": ["t0ken-abcdef"]}}
    report = HelmReport("hello", "ns")
    read_status(ListingHelm({"revision": 1, "status": "deployed", "chart": "hello-1.0.0"}, values), report)
    shown = report.result()["status"]["release_values"]
    assert shown == {**values, "db": {"password": "***"}, "auth": {"apiToken": ["***"]}}


def test_set_values_named_as_credentials_are_hidden(tmp_path):
    request = helm_request(options(set_values=[{"value": "db.adminPassword=s3cr3t-value", "value_type": "string"},
                                               {"value": "greeting=hello-there"}]),
                           namespace="ns", read_values_file=str)
    assert release_masks(request).scrub("db.adminPassword=s3cr3t-value greeting=hello-there") == (
        "db.adminPassword=*** greeting=hello-there")


def test_dependency_update_of_a_packaged_chart_is_asked_of_helm_as_kubernetes_core_asks(tmp_path):
    """A .tgz that declares dependencies: helm dependency update runs (and helm refuses packaged charts)."""
    chart = tmp_path / "c"
    write_chart(chart)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: hello\nversion: 1.0.0\ndependencies:\n"
                                      "  - {name: sub, version: 0.1.0, repository: file://../sub}\n")
    archive = tmp_path / "hello-1.0.0.tgz"
    with tarfile.open(archive, "w:gz") as packed:
        packed.add(chart, arcname="hello")
    helm = RecordingHelm((4, 3))
    request = helm_request(options(chart_ref=str(archive), dependency_update=True), namespace="ns",
                           read_values_file=str)
    report = HelmReport("hello", "ns")
    assert _prepare(helm, request, report) is None and report.warnings == []
    assert helm.calls == [["dependency", "update", str(archive)]]


@pytest.mark.parametrize("environ, kubeconfig_path, expected", [
    (None, None, {"HELM_CACHE_HOME": "/controller-cache"}),
    ({"HELM_CACHE_HOME": "/task-cache", "HELM_KUBECONTEXT": "other", "KUBECONFIG": "/x", "HTTPS_PROXY": "http://p:1"},
     "/private/kubeconfig", {"HELM_CACHE_HOME": "/task-cache", "HTTPS_PROXY": "http://p:1",
                             "KUBECONFIG": "/private/kubeconfig"}),
], ids=["controller-environment", "task-environment-without-what-points-elsewhere"])
def test_helm_runs_with_its_task_s_environment(monkeypatch, environ, kubeconfig_path, expected):
    monkeypatch.setenv("HELM_CACHE_HOME", "/controller-cache")
    monkeypatch.setenv("HELM_KUBECONTEXT", "controller-context")
    environment = helm_environment(kubeconfig_path, environ)
    assert {name: environment.get(name) for name in expected} == expected
    assert "HELM_KUBECONTEXT" not in environment


# ------------------------------------------------------------ computed values (helm_mode apply: an output from values)

@pytest.mark.parametrize("defaults, given, expected", [
    ({"service": {"port": 80, "type": "ClusterIP"}}, {"service": {"port": 8080}},
     {"service": {"port": 8080, "type": "ClusterIP"}}),
    ({"tags": ["a", "b"]}, {"tags": ["c"]}, {"tags": ["c"]}),
    ({"service": {"port": 80}, "ingress": {"enabled": False}}, {"ingress": None}, {"service": {"port": 80}}),
    ({"image": "nginx"}, {"replicas": 2}, {"image": "nginx", "replicas": 2}),
], ids=["mappings-merge-key-by-key", "lists-are-replaced", "null-removes-a-default", "new-keys-are-added"])
def test_coalesced_values(defaults, given, expected):
    assert coalesced(defaults, given) == expected
