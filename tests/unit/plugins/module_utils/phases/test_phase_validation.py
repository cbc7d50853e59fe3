"""Validation: every rule fails with a message naming the document, the field and what was expected."""

from __future__ import annotations

import pytest
from phase_helpers import build, phase, plan

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.planning.model import API_VERSION

ECHO = {"argv": ["true"]}
OK = phase("ok", cluster="target", executor="command", options=ECHO)


def doc(**fields):
    return {"apiVersion": API_VERSION, "kind": "Phase", "metadata": {"name": "p"},
            "spec": {"cluster": "target", "executor": "command", "options": ECHO}, **fields}


def cmd(**spec):
    return phase("p", **{"cluster": "target", "executor": "command", "options": ECHO, **spec})


@pytest.mark.parametrize("documents, expected", [
    ([doc(kind="Phasse")],
     "plan document 1 field kind: unknown kind 'Phasse' (did you mean 'Phase'?); expected Phase or PhasePlan"),
    ([{"apiVersion": API_VERSION, "metadata": {"name": "p"}, "spec": {}}],
     "plan document 1 field kind: missing; expected Phase or PhasePlan"),
    ([doc(apiVersion="phasekit.dev/v1")],
     "plan document 1 (Phase p) field apiVersion: unsupported apiVersion 'phasekit.dev/v1'; "
     "expected phasekit.dev/v1alpha1"),
    ([doc(status={})],
     "plan document 1 (Phase p) field status: unknown field; expected one of apiVersion, kind, metadata, spec"),
    ([cmd(clustr="target")],
     "plan document 1 (Phase p) field spec.clustr: unknown field (did you mean 'cluster'?)"),
    ([phase("p", cluster="target", phases=[{"name": "c", "executor": "command", "options": ECHO, "src": "x"}])],
     "plan document 1 (Phase p) field spec.phases[0].src: unknown field"),
    ([doc(metadata={"name": "p", "namespace": "x"})],
     "plan document 1 (Phase p) field metadata.namespace: unknown field"),
    ([["not", "a", "mapping"]],
     "plan document 1: expected a mapping (a Phase or PhasePlan document), got a list"),
    ([doc(spec=[1])],
     "plan document 1 (Phase p) field spec: expected a mapping, got a list"),
    ([doc(metadata={})],
     "plan document 1 field metadata.name: expected a non-empty string, got nothing"),
    ([doc(metadata={"name": "a/b"})],
     "plan document 1 (Phase a/b) field metadata.name: invalid name 'a/b'"),
    ([OK, phase("ok", cluster="target", executor="command", options=ECHO)],
     "plan document 2 (Phase ok) field metadata.name: duplicate phase name 'ok' (also defined in "
     "plan document 1 (Phase ok))"),
    ([phase("p", cluster="target", phases=[{"name": "c", "executor": "command", "options": ECHO},
                                           {"name": "c", "executor": "command", "options": ECHO}])],
     "plan document 1 (Phase p) field spec.phases[1].name: duplicate phase name p/c (also at spec.phases[0])"),
    ([OK, plan("deploy", "ok"), plan("deploy", "ok")],
     "plan document 3 (PhasePlan deploy) field metadata.name: duplicate plan name 'deploy'"),
    ([OK, plan("deploy", "ok", "okk")],
     "plan document 2 (PhasePlan deploy) field spec.phases[1]: plan deploy names phase 'okk', which is not defined "
     "(did you mean 'ok'?)"),
    ([OK, plan("deploy")],
     "plan document 2 (PhasePlan deploy) field spec.phases: expected a non-empty list of phase names, got a list"),
    ([OK, plan("deploy", {"name": "ok"})],
     "plan document 2 (PhasePlan deploy) field spec.phases[0]: expected a phase name (a string), got a mapping"),
    ([cmd(executor="aply")],
     "plan document 1 (Phase p) field spec.executor: unknown executor 'aply' (did you mean 'apply'?); "
     "expected one of apply, command, container, helm, kubeconfig, tasks, wait"),
    ([phase("p", cluster="target")],
     "plan document 1 (Phase p) field spec.executor: missing: a phase without child phases needs an executor"),
    ([phase("p", cluster="target", executor="apply")],
     "plan document 1 (Phase p) field spec.source: missing: executor apply needs a source (a kustomization "
     "directory, a manifest file or directory, or inline objects)"),
    ([phase("p", cluster="target", executor="tasks")],
     "plan document 1 (Phase p) field spec.source: missing: executor tasks needs a source (a task file)"),
    ([phase("p", cluster="target", executor="apply", source="manifests/nowhere")],
     "plan document 1 (Phase p) field spec.source: manifests/nowhere not found (looked for "),
    ([phase("p", cluster="target", executor="tasks", source=".")],
     "plan document 1 (Phase p) field spec.source: . is not a task file"),
    ([phase("p", cluster="ephemeral", executor="kubeconfig", source=".", options={"host": "child-a"})],
     "plan document 1 (Phase p) field spec.source: executor kubeconfig takes no source"),
    ([cmd(source=[{"kind": "Namespace"}])],
     "plan document 1 (Phase p) field spec.source: executor command needs a path, got a list"),
    ([phase("p", cluster="target", source=".", phases=[{"name": "c", "executor": "command", "options": ECHO}])],
     "plan document 1 (Phase p) field spec.source: a group phase (no executor) takes no source"),
    ([cmd(options={"argv": ["true"], "colour": "red"})],
     "plan document 1 (Phase p) field spec.options: unsupported options: colour; supported options are: argv, "
     "changed_when, chdir, cmd, env, env_dirs, env_files, kubeconfigs, run_in_check_mode, shell, stdin, timeout (executor command)"),
    ([cmd(options={"argv": ["true"], "timeout": "soon"})],
     "plan document 1 (Phase p) field spec.options: argument 'timeout' is of type str and we were unable to "
     "convert to int"),
    ([cmd(options={})],
     "plan document 1 (Phase p) field spec.options: one of the following is required: argv, cmd (executor command)"),
    ([cmd(options={"argv": ["true"], "cmd": "true"})],
     "plan document 1 (Phase p) field spec.options: parameters are mutually exclusive: argv|cmd (executor command)"),
    ([phase("p", cluster="target", executor="apply", source=".", options={"prunee": True})],
     "plan document 1 (Phase p) field spec.options: unsupported options: prunee; supported options are: field_manager, prune, timeout"),
    ([phase("p", cluster="target", executor="apply", source=".", options={"context": "other"})],
     "plan document 1 (Phase p) field spec.options: unsupported options: context;"),
    ([cmd(options=["argv"])],
     "plan document 1 (Phase p) field spec.options: expected a mapping, got a list"),
    ([cmd(phases={"name": "c"})],
     "plan document 1 (Phase p) field spec.phases: expected a list of phases, got a mapping"),
    ([cmd(cluster="targett")],
     "plan document 1 (Phase p) field spec.cluster: 'targett' is neither a host nor a group in the inventory "
     "(did you mean 'target'?)"),
    ([cmd(cluster="empty")],
     "plan document 1 (Phase p) field spec.cluster: inventory group 'empty' has no hosts"),
    ([cmd(cluster=None)],
     "plan document 1 (Phase p) field spec.cluster: missing: name the inventory host or group this phase runs on"),
    ([cmd(cluster=["target"])],
     "plan document 1 (Phase p) field spec.cluster: expected an inventory host or group name, got a list"),
    ([phase("p", phases=[{"name": "c", "executor": "command", "options": ECHO, "cluster": "nowhere"}])],
     "plan document 1 (Phase p) field spec.phases[0].cluster: 'nowhere' is neither a host nor a group"),
    ([phase("p", cluster="nowhere", phases=[{"name": "c", "executor": "command", "options": ECHO}])],
     "plan document 1 (Phase p) field spec.cluster: 'nowhere' is neither a host nor a group"),
    ([phase("p", cluster="ephemeral", executor="kubeconfig", options={"host": "child-z"})],
     "plan document 1 (Phase p) field spec.options.host: 'child-z' is neither a host nor a group"),
    ([phase("p", cluster="target", executor="kubeconfig", options={"host": "child-a"})],
     "plan document 1 (Phase p) field spec.options.host: host child-a has kube_parent ephemeral, which is not in "
     "this phase's cluster target (target)"),
    ([phase("p", cluster="management", executor="kubeconfig", options={"host": "lonely"})],
     "plan document 1 (Phase p) field spec.options.host: host lonely has no kube_parent and cluster management has "
     "several hosts; set kube_parent for lonely"),
    ([phase("p", cluster="ephemeral", executor="kubeconfig", options={})],
     "plan document 1 (Phase p) field spec.options: missing required arguments: host (executor kubeconfig)"),
    ([phase("p", cluster="target", executor="wait")],
     "plan document 1 (Phase p) field spec.source: missing: executor wait needs a source"),
    ([phase("p", cluster="ephemeral", executor="kubeconfig", options={"host": "workload"})],
     "plan document 1 (Phase p) field spec.options.host: host child-b has no kube_kubeconfig; set it to the Secret "
     "this phase waits for, for example {secret: {name: child-b-kubeconfig}} with kube_parent"),
    ([doc(metadata={"name": "p", "labels": ["x"]})],
     "plan document 1 (Phase p) field metadata.labels: expected a mapping, got a list"),
    ([cmd(description=3)],
     "plan document 1 (Phase p) field spec.description: expected a string, got a number"),
    ([cmd(retries=-1)],
     "plan document 1 (Phase p) field spec.retries: expected a whole number from 0 to 100, got -1"),
    ([cmd(retries="3")],
     "plan document 1 (Phase p) field spec.retries: expected a whole number from 0 to 100, got '3'"),
    ([cmd(retries=True)],
     "plan document 1 (Phase p) field spec.retries: expected a whole number from 0 to 100, got True"),
    ([cmd(delay=-0.5)],
     "plan document 1 (Phase p) field spec.delay: expected a number of seconds, 0 or more, got -0.5"),
    ([cmd(timeout=0)],
     "plan document 1 (Phase p) field spec.timeout: expected a number of seconds, more than 0, got 0"),
    ([cmd(timeout=["1m"])],
     "plan document 1 (Phase p) field spec.timeout: expected a number of seconds, more than 0, got a list"),
    ([phase("p", cluster="target", retries=2, phases=[{"name": "c", "executor": "command", "options": ECHO}])],
     "plan document 1 (Phase p) field spec.retries: a group phase (no executor) takes no retries"),
    ([phase("p", cluster="target", executor="tasks", source="tasks.yml", timeout=60)],
     "plan document 1 (Phase p) field spec.timeout: executor tasks runs a task file on each host: retry its tasks "
     "with Ansible's retries/until and bound them with the task keyword timeout instead"),
], ids=[
    "unknown-kind", "missing-kind", "unsupported-api-version", "unknown-document-field", "unknown-spec-field",
    "unknown-child-field", "unknown-metadata-field", "document-not-a-mapping", "spec-not-a-mapping",
    "missing-name", "name-with-separator", "duplicate-phase-name", "duplicate-child-name", "duplicate-plan-name",
    "plan-names-missing-phase", "plan-without-phases", "plan-entry-not-a-name",
    "unknown-executor", "missing-executor", "missing-source-apply", "missing-source-tasks", "source-not-found",
    "tasks-source-not-a-file", "source-for-sourceless-executor", "inline-source-for-path-executor",
    "group-phase-with-source", "unknown-option", "option-of-wrong-type", "missing-required-option",
    "mutually-exclusive-options", "unknown-apply-option", "cluster-is-not-an-option", "options-not-a-mapping",
    "children-not-a-list", "cluster-neither-host-nor-group", "cluster-group-without-hosts", "missing-cluster",
    "cluster-not-a-name", "child-cluster-unknown", "inherited-cluster-reported-where-set",
    "kubeconfig-child-unknown", "kubeconfig-parent-outside-cluster", "kubeconfig-parent-ambiguous",
    "kubeconfig-host-required", "missing-source-wait", "kubeconfig-child-without-kube-kubeconfig",
    "labels-not-a-mapping", "description-not-a-string", "retries-negative", "retries-a-string", "retries-a-bool",
    "delay-negative", "timeout-zero", "timeout-not-a-number", "group-phase-with-retries", "tasks-phase-with-timeout",
])
def test_invalid_documents(tmp_path, documents, expected):
    with pytest.raises(PhasekitError) as error:
        build(documents, tmp_path, with_kubeconfig={"ephemeral", "target", "child-a", "lonely"})
    assert expected in str(error.value)


def env_dir_file(path):
    return cmd(options={"argv": ["true"], "env_dirs": {"DIRS": {path: {"kustomize": "kust"}}}})


@pytest.mark.parametrize("path, expected", [
    (".", "field spec.options: env_dirs.DIRS..: expected a relative file path inside the directory"),
    ("a\0b", "field spec.options: env_dirs.DIRS.'a\\x00b': expected a relative file path inside the directory"),
    ("x" * 300, "the path is too long for a file system: expected names of at most 255 bytes and a path of at most "
                "1024, got a name of 300 bytes in 300"),
    ("/".join(["d" * 200] * 6) + "/f", "got a name of 200 bytes in 1207"),
    ("a/../../b", "expected a relative file path inside the directory"),
    ("", "env_dirs.DIRS.'': expected a relative file path"),
], ids=["dot-is-the-directory-itself", "nul-character", "name-over-255-bytes", "path-over-1024-bytes",
        "dot-dot-escapes", "empty-path"])
def test_env_dirs_paths_refused_at_validation(tmp_path, path, expected):
    """What the file system would refuse when the command runs is refused when the documents are read."""
    (tmp_path / "kust").mkdir()
    with pytest.raises(PhasekitError) as error:
        build([env_dir_file(path)], tmp_path, with_kubeconfig={"target"})
    assert expected in str(error.value)


@pytest.mark.parametrize("paths, expected", [
    (["a", "a/b.yaml"], "env_dirs.DIRS: a is a file, but a/b.yaml needs it to be a directory"),
    (["x/y/z.yaml", "x/y"], "env_dirs.DIRS: x/y is a file, but x/y/z.yaml needs it to be a directory"),
], ids=["file-and-its-subpath", "file-and-deeper-subpath"])
def test_env_dirs_file_also_a_directory_refused_at_validation(tmp_path, paths, expected):
    """Two files of one directory, one where the other needs a directory: refused before anything is written."""
    (tmp_path / "kust").mkdir()
    document = cmd(options={"argv": ["true"], "env_dirs": {"DIRS": {path: {"kustomize": "kust"} for path in paths}}})
    with pytest.raises(PhasekitError) as error:
        build([document], tmp_path, with_kubeconfig={"target"})
    assert "plan document 1 (Phase p) field spec.options: " + expected in str(error.value)


def test_env_dirs_sibling_paths_accepted(tmp_path):
    (tmp_path / "kust").mkdir()
    document = cmd(options={"argv": ["true"], "env_dirs": {"DIRS": {path: {"kustomize": "kust"}
                                                                    for path in ("a.yaml", "ab/c.yaml", "a2/c")}}})
    build([document], tmp_path, with_kubeconfig={"target"})


@pytest.mark.parametrize("options, expected", [
    ({"env": {"A": {"b": 1}}}, "field spec.options: env.A: expected a string, number or boolean, got dict"),
    ({"env": {"A": [1, 2]}}, "field spec.options: env.A: expected a string, number or boolean, got list"),
    ({"stdin": [1, 2]}, "field spec.options: argument 'stdin' is of type list and we were unable to convert to "
                        "scalar_text: expected a string, got list"),
    ({"stdin": {"a": 1}}, "field spec.options: argument 'stdin' is of type dict"),
], ids=["env-value-mapping", "env-value-list", "stdin-list", "stdin-mapping"])
def test_command_values_that_are_not_scalars_refused(tmp_path, options, expected):
    with pytest.raises(PhasekitError) as error:
        build([cmd(options={"argv": ["true"], **options})], tmp_path, with_kubeconfig={"target"})
    assert "plan document 1 (Phase p) " + expected in str(error.value)


@pytest.mark.parametrize("options", [{"env": {"A": "x", "B": 2, "C": True, "D": None}}, {"stdin": "text"},
                                     {"stdin": 42}], ids=["env-scalars", "stdin-string", "stdin-number"])
def test_command_scalar_values_accepted(tmp_path, options):
    build([cmd(options={"argv": ["true"], **options})], tmp_path, with_kubeconfig={"target"})


def test_every_problem_is_reported_at_once(tmp_path):
    documents = [cmd(executor="aply"), phase("q", cluster="nowhere", executor="command", options={})]
    with pytest.raises(PhasekitError) as error:
        build(documents, tmp_path)
    message = str(error.value)
    assert message.startswith("3 problems in phase documents:\n- ")
    assert "spec.executor: unknown executor 'aply'" in message
    assert "spec.options: one of the following is required: argv, cmd" in message
    assert "spec.cluster: 'nowhere' is neither a host nor a group" in message


@pytest.mark.parametrize("documents, name, expected", [
    ([OK], "deploy", "plan deploy: not found; the documents define no PhasePlan"),
    ([OK, plan("deploy", "ok")], "deplyo", "plan deplyo: not found (did you mean 'deploy'?); plans defined: deploy"),
    ([OK, plan("a", "ok"), plan("b", "ok")], None, "plan: several plans are defined (a, b): choose one by name"),
], ids=["no-plans-defined", "unknown-plan-name", "several-plans-need-a-name"])
def test_choosing_a_plan(tmp_path, documents, name, expected):
    with pytest.raises(PhasekitError) as error:
        build(documents, tmp_path, name=name)
    assert str(error.value) == expected


@pytest.mark.parametrize("documents, name, expected", [
    ([OK, cmd()], None, ["ok", "p"]),
    ([OK, cmd(), plan("only-p", "p")], None, ["p"]),
    ([OK, cmd(), plan("a", "p"), plan("b", "ok", "p")], "b", ["ok", "p"]),
], ids=["no-plan-runs-every-phase", "single-plan-is-the-default", "named-plan"])
def test_plan_choice(tmp_path, documents, name, expected):
    assert [planned.phase.full_name for planned in build(documents, tmp_path, name=name).phases] == expected


def test_clusters_checked_only_for_the_chosen_plan(tmp_path):
    documents = [OK, cmd(cluster="prod-only"), plan("staging", "ok"), plan("prod", "p")]
    assert [planned.phase.full_name for planned in build(documents, tmp_path, name="staging").phases] == ["ok"]
    with pytest.raises(PhasekitError, match="'prod-only' is neither a host nor a group"):
        build(documents, tmp_path, name="prod")


def test_selection_names_are_checked_against_the_plan(tmp_path):
    documents = [OK, cmd(), plan("deploy", "ok")]
    with pytest.raises(PhasekitError, match="^invalid phase name: p$"):
        build(documents, tmp_path, name="deploy", only=["p"])


def test_kubeconfig_executor_runs_on_children_and_knows_their_parent(tmp_path):
    result = build([phase("kc", cluster="ephemeral", executor="kubeconfig", options={"host": "workload"})], tmp_path)
    as_dict = result.phases[0].to_dict()
    assert as_dict["hosts"] == ["child-a", "child-b"]
    assert as_dict["cluster_hosts"] == ["ephemeral"]
    assert as_dict["parents"] == {"child-a": "ephemeral", "child-b": "ephemeral"}


def test_kubeconfig_single_parent_cluster_is_the_parent(tmp_path):
    result = build([phase("kc", cluster="target", executor="kubeconfig", options={"host": "lonely"})], tmp_path,
                   parents={})
    assert result.phases[0].to_dict()["parents"] == {"lonely": "target"}


def test_a_helm_phase_takes_its_chart_as_source_and_kubernetes_core_names(tmp_path):
    (tmp_path / "charts" / "hello").mkdir(parents=True)
    (tmp_path / "v").mkdir()
    (tmp_path / "v" / "hello.yaml").write_text("a: 2\n")
    planned = build([phase("hello", cluster="target", executor="helm", source="charts/hello",
                           options={"namespace": "apps", "values": {"a": 1}, "values_files": ["v/hello.yaml"],
                                    "state": "present"})], tmp_path)
    options = planned.selected[0].phase.options
    assert options == {"chart_ref": str(tmp_path / "charts" / "hello"), "release_namespace": "apps",
                       "release_values": {"a": 1}, "values_files": [str(tmp_path / "v" / "hello.yaml")],
                       "release_state": "present"}


@pytest.mark.parametrize("spec, expected", [
    ({"source": "charts/hello", "options": {"chart_ref": "other"}},
     "field spec.source: give the chart either as source or as options.chart_ref, not both"),
    ({"options": {"name": "x"}},
     "field spec.options: chart_ref is required to install a release (or give the chart as the phase's source) "
     "(executor helm)"),
    ({"options": {"chart_ref": "hello", "wait_timeout": "5"}},
     "field spec.options: wait_timeout '5': expected a duration such as 300s, 5m or 1h30m (executor helm)"),
    ({"source": "charts/hello", "options": {"values_files": ["values.yaml", "missing.yaml"]}},
     "field spec.options: values_files[1] {tmp}/missing.yaml: no such file (relative paths are relative to the "
     "phase's document) (executor helm)"),
    ({"source": "charts/hello", "options": {"values_files": ["charts"]}},
     "field spec.options: values_files[0] {tmp}/charts: expected a YAML file of values, got a directory"),
    ({"source": "charts/hello", "options": {"values_files": ["missing.yaml.j2"]}},
     "field spec.options: values_files[0] {tmp}/missing.yaml.j2: no such file"),
], ids=["chart-twice", "no-chart", "timeout-not-a-duration", "values-file-missing", "values-file-a-directory",
        "values-template-missing"])
def test_helm_phase_problems(tmp_path, spec, expected):
    """Found when the documents are read (validate too), not as an OS error when the release is installed."""
    (tmp_path / "charts" / "hello").mkdir(parents=True)
    (tmp_path / "values.yaml").write_text("a: 1\n")
    expected = expected.format(tmp=tmp_path)
    with pytest.raises(PhasekitError) as caught:
        build([phase("hello", cluster="target", executor="helm", **spec)], tmp_path)
    assert expected in str(caught.value)
