# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Outputs passed between phases: declared (spec.outputs), used (phase_outputs in later templates, checked when the
plan is read), read (the apply's answer or one GET), seen by templates per host, kept in run records."""

from __future__ import annotations

import base64

import pytest

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kube.discovery import ResourceType
from ansible_collections.phasekit.kube.plugins.module_utils.kube.objects import PlannedObject
from ansible_collections.phasekit.kube.plugins.module_utils.planning.outputs import (
    KNOWN_AFTER_RUN, SECRET_NAMES, OutputUse, OutputValues, PhaseOutput, declared_outputs, known_after_run,
    output_uses, read_output, read_stdout_output, read_values_output)
from ansible_collections.phasekit.kube.plugins.module_utils.running.record import (
    RunInfo, entry_for, recorded_outputs)

from phase_helpers import build, phase, plan, run_entry

ENDPOINT = {"kind": "ConfigMap", "name": "db", "namespace": "apps", "jsonpath": "{.data.endpoint}"}
ECHO = {"argv": ["true"]}
CONFIGMAPS = ResourceType("", "v1", "ConfigMap", "configmaps", True)
SECRETS = ResourceType("", "v1", "Secret", "secrets", True)


def producer(name="db", cluster="ephemeral", **outputs):
    return phase(name, cluster=cluster, executor="command", options=ECHO, outputs=outputs or {"endpoint": ENDPOINT})


def consumer(name="app", cluster="target", use="{{ phase_outputs.db.endpoint }}"):
    return phase(name, cluster=cluster, executor="command", options={"argv": ["echo", use]})


# ------------------------------------------------------------ declaring

@pytest.mark.parametrize("outputs, expected", [
    ({"endpoint": ENDPOINT}, None),
    ("endpoint", "spec.outputs: expected a mapping of output names to {kind, name, jsonpath}, got a string"),
    ({"end-point": ENDPOINT}, "spec.outputs.end-point: invalid output name 'end-point'"),
    ({"endpoint": {**ENDPOINT, "jsonpath": None}},
     "spec.outputs.endpoint.jsonpath: missing: expected a non-empty string"),
    ({"endpoint": {**ENDPOINT, "zzz": "x"}},
     "spec.outputs.endpoint.zzz: unknown field; expected one of from, kind, name, namespace, apiVersion, jsonpath, "
     "secret"),
    ({"endpoint": {**ENDPOINT, "secret": "yes"}}, "spec.outputs.endpoint.secret: expected true or false"),
    ({"endpoint": {**ENDPOINT, "jsonpath": "{.data[}"}},
     "spec.outputs.endpoint.jsonpath: not a kubectl JSONPath template"),
    ({"endpoint": {**ENDPOINT, "namespace": 3}}, "spec.outputs.endpoint.namespace: expected a non-empty string"),
], ids=["valid", "not-a-mapping", "name-not-an-identifier", "jsonpath-required", "unknown-field",
        "secret-is-a-boolean", "jsonpath-parsed-as-kubectl-does", "namespace-is-a-string"])
def test_declaring_outputs(tmp_path, outputs, expected):
    documents = [phase("db", cluster="ephemeral", executor="command", options=ECHO, outputs=outputs)]
    if expected is None:
        declared = build(documents, tmp_path).phases[0].phase.outputs
        assert declared == (PhaseOutput(name="endpoint", kind="ConfigMap", object_name="db",
                                        jsonpath="{.data.endpoint}", namespace="apps"),)
        return
    with pytest.raises(PhasekitError) as raised:
        build(documents, tmp_path)
    assert "plan document 1 (Phase db) field " + expected in str(raised.value)


@pytest.mark.parametrize("documents, expected", [
    ([phase("g", cluster="target", outputs={"endpoint": ENDPOINT},
            phases=[{"name": "c", "executor": "command", "options": ECHO}])],
     "(Phase g) field spec.outputs: a group phase (no executor) takes no outputs"),
    ([phase("t", cluster="target", executor="tasks", source="tasks.yml", outputs={"endpoint": ENDPOINT})],
     "(Phase t) field spec.outputs: executor tasks runs a task file on each host: its outputs cannot be read"),
], ids=["a-group-phase-has-none", "a-tasks-phase-has-none"])
def test_phases_that_cannot_have_outputs(tmp_path, documents, expected):
    (tmp_path / "tasks.yml").write_text("- ansible.builtin.debug: {}\n")
    with pytest.raises(PhasekitError, match=None) as raised:
        build(documents, tmp_path)
    assert expected in str(raised.value)


# ------------------------------------------------------------ using them

@pytest.mark.parametrize("text, expected", [
    ("{{ phase_outputs.db.endpoint }}", [OutputUse("db", ("endpoint",))]),
    ("{{ phase_outputs['db']['endpoint'] }}", [OutputUse("db", ("endpoint",))]),
    ('{{ phase_outputs["apps/db"].endpoint }}', [OutputUse("apps/db", ("endpoint",))]),
    ("{{ phase_outputs.db['ephemeral'].endpoint }}", [OutputUse("db", ("ephemeral", "endpoint"))]),
    ("{{ phase_outputs.db }}", [OutputUse("db", ())]),
    ("{{ phase_outputs.a.x }} {{ phase_outputs.b.y }}", [OutputUse("a", ("x",)), OutputUse("b", ("y",))]),
    ("{{ other_outputs.db.endpoint }}", []),
], ids=["attributes", "brackets", "a-nested-phase-by-full-name", "by-host", "the-whole-phase", "several",
        "another-variable"])
def test_uses_found_in_a_template(text, expected):
    assert output_uses(text) == expected


@pytest.mark.parametrize("documents, use, expected", [
    ([producer(), consumer()], "{{ phase_outputs.db.endpoint }}", None),
    ([producer(), consumer()], "{{ phase_outputs['db']['ephemeral']['endpoint'] }}", None),
    ([producer(), consumer()], "{{ phase_outputs.db.port }}",
     "(Phase app) field spec.options: phase app uses phase_outputs['db']['port']: phase db declares no output "
     "'port' (its outputs: endpoint)"),
    ([producer(), consumer()], "{{ phase_outputs.dbx.endpoint }}",
     "phase app uses phase_outputs['dbx']['endpoint'], but no phase 'dbx' is in the plan (did you mean 'db'?)"),
    ([consumer(), producer(), plan("p", "app", "db")], "{{ phase_outputs.db.endpoint }}",
     "phase app uses phase_outputs['db']['endpoint'], an output of phase db, which runs after it"),
    ([producer(), consumer("db2")], "{{ phase_outputs.db2.endpoint }}",
     "phase db2 uses phase_outputs['db2']['endpoint'], an output of phase db2, which runs as this one"),
], ids=["declared-by-an-earlier-phase", "by-host", "undeclared-output", "unknown-phase", "a-later-phase-in-a-line",
        "its-own-output"])
def test_uses_checked_when_the_plan_is_read(tmp_path, documents, use, expected):
    documents = [dict(document, spec={**document["spec"], "options": {"argv": ["echo", use]}})
                 if document["metadata"]["name"] in ("app", "db2") else document for document in documents]
    if expected is None:
        assert [planned.name for planned in build(documents, tmp_path).phases] == ["db", "app"]
        return
    with pytest.raises(PhasekitError) as raised:
        build(documents, tmp_path)
    assert expected in str(raised.value)


def test_a_use_in_a_j2_manifest_names_the_file(tmp_path):
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "cm.yaml.j2").write_text("data: {v: '{{ phase_outputs.db.nope }}'}\n")
    documents = [producer(), phase("app", cluster="target", executor="command", options=ECHO, source="app")]
    with pytest.raises(PhasekitError) as raised:
        build(documents, tmp_path)
    assert f"field spec.source ({tmp_path / 'app' / 'cm.yaml.j2'}): phase app uses phase_outputs['db']['nope']" \
        in str(raised.value)


# ------------------------------------------------------------ reading them

class FakeSession:
    def __init__(self, objects):
        self.objects, self.gets = objects, []

    def get(self, path, query=None, accept=None):
        self.gets.append(path)
        return self.objects[path]


class FakeDiscovery:
    def resolve(self, api_version, kind):
        return {"v1": {"ConfigMap": CONFIGMAPS, "Secret": SECRETS}}.get(api_version, {}).get(kind)

    def resolve_group_kind(self, group, kind):
        return self.resolve("v1", kind) if group == "" else None

    def resources(self):
        return type("Map", (), {"by_gvk": {("", "v1", "ConfigMap"): CONFIGMAPS, ("", "v1", "Secret"): SECRETS}})()


def applied_configmap(value):
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "db", "namespace": "apps"}}
    return PlannedObject(source=None, resource=CONFIGMAPS, body=body, wave=0,
                         result={**body, "data": {"endpoint": value}})


@pytest.mark.parametrize("applied, expected, gets", [
    ([applied_configmap("from-apply")], "from-apply", []),
    ([], "from-get", ["/api/v1/namespaces/apps/configmaps/db"]),
], ids=["the-applys-answer-costs-no-request", "otherwise-one-get"])
def test_reading_an_output(applied, expected, gets):
    session = FakeSession({"/api/v1/namespaces/apps/configmaps/db": {"data": {"endpoint": "from-get"}}})
    output = PhaseOutput.from_dict("endpoint", ENDPOINT)
    assert read_output(output, session, FakeDiscovery(), "default", applied) == expected
    assert session.gets == gets


def test_a_missing_field_names_the_output_and_the_object():
    session = FakeSession({"/api/v1/namespaces/apps/configmaps/db": {"data": {}}})
    with pytest.raises(PhasekitError, match=r"output endpoint: \{\.data\.endpoint\} on ConfigMap apps/db: "):
        read_output(PhaseOutput.from_dict("endpoint", ENDPOINT), session, FakeDiscovery(), "default")


# ------------------------------------------------------------ what templates see

@pytest.mark.parametrize("kept, host, expected", [
    ({"ephemeral": {"endpoint": "e"}}, "target", {"db": {"ephemeral": {"endpoint": "e"}, "endpoint": "e"}}),
    ({"a": {"endpoint": "1"}, "b": {"endpoint": "2"}}, "b",
     {"db": {"a": {"endpoint": "1"}, "b": {"endpoint": "2"}, "endpoint": "2"}}),
    ({"a": {"endpoint": "1"}, "b": {"endpoint": "2"}}, "c", {"db": {"a": {"endpoint": "1"}, "b": {"endpoint": "2"}}}),
], ids=["one-producing-host-by-name-alone", "the-same-host-by-name-alone", "several-others-by-host-only"])
def test_what_a_host_sees(kept, host, expected):
    values = OutputValues()
    for producing, found in kept.items():
        values.keep("db", producing, found)
    assert values.for_host(host) == expected


def test_a_phase_on_several_hosts_of_which_one_ran_is_not_seen_by_name_alone():
    # a rollout's first batch ran the producer on a; b's values come with b's own batch
    declared = declared_outputs([run_entry("db", hosts=["a", "b"], outputs={"endpoint": ENDPOINT})])
    values = OutputValues().expect(declared, now=["db"])
    values.keep("db", "a", {"endpoint": "1"})
    assert values.for_host("b") == {"db": {"a": {"endpoint": "1"}}}
    assert values.for_host("a") == {"db": {"a": {"endpoint": "1"}, "endpoint": "1"}}


def test_a_value_no_run_read_is_a_placeholder_in_a_preview_and_absent_in_a_run():
    declared = declared_outputs([run_entry("db", hosts=["ephemeral"],
                                           outputs={"endpoint": ENDPOINT, "password": {
                                               "kind": "Secret", "name": "db", "jsonpath": "{.data.password}"}})])
    preview = OutputValues().expect(declared, fill=lambda _phase, _host: None, placeholder=True)
    seen = preview.for_host("target")["db"]
    assert seen["endpoint"] == KNOWN_AFTER_RUN
    assert base64.b64decode(seen["password"]).decode() == KNOWN_AFTER_RUN  # a Secret's .data is base64
    assert OutputValues().expect(declared, fill=lambda _phase, _host: None).for_host("target") == {}


def test_a_recorded_value_is_used_and_a_secret_one_masked_in_every_form():
    declared = declared_outputs([run_entry("db", hosts=["ephemeral"],
                                           outputs={"endpoint": ENDPOINT})])
    encoded = base64.b64encode(b"s3cr3t-value").decode()
    asked = []

    def fill(phase_name, host):
        asked.append((phase_name, host))
        return {"endpoint": "recorded", "token": encoded, SECRET_NAMES: ["token"]}

    values = OutputValues().expect(declared, fill=fill)
    assert values.for_host("target")["db"]["endpoint"] == "recorded"
    values.for_host("target")
    assert asked == [("db", "ephemeral")]  # once per run
    assert values.secret_values() == {encoded, "s3cr3t-value"}


def test_a_phase_this_step_runs_is_not_filled_from_an_earlier_run():
    declared = declared_outputs([run_entry("db", hosts=["ephemeral"],
                                           outputs={"endpoint": ENDPOINT})])
    values = OutputValues().expect(declared, fill=lambda *_: pytest.fail("read a record"), now=["db"])
    assert values.for_host("target") == {}


@pytest.mark.parametrize("message, explained", [
    ("template app.yaml.j2 line 7: object of type 'dict' has no attribute 'db'", True),
    ("template app.yaml.j2 line 7: 'region' is undefined", True),
    ("template app.yaml.j2 line 7: unexpected '}'", False),
], ids=["an-undefined-attribute", "an-undefined-variable", "another-error-as-it-is"])
def test_a_real_run_says_which_outputs_were_not_read(message, explained):
    declared = declared_outputs([run_entry("db", hosts=["ephemeral"],
                                           outputs={"endpoint": ENDPOINT})])
    values = OutputValues().expect(declared, fill=lambda *_: None)
    values.for_host("target")
    hint = " (outputs not read yet: db on ephemeral; the phase has not succeeded there in this run nor in a recorded one"
    assert values.explained(message).startswith(message + hint) if explained else values.explained(message) == message


def test_a_preview_names_the_fields_known_after_the_run():
    objects = [{"kind": "ConfigMap", "metadata": {"name": "app", "namespace": "ns"},
                "data": {"a": KNOWN_AFTER_RUN, "b": "known"}, "list": [f"x {KNOWN_AFTER_RUN}"]}]
    assert known_after_run(objects) == ["ConfigMap ns/app: data.a", "ConfigMap ns/app: list[0]"]


# ------------------------------------------------------------ kept in run records

RUN = RunInfo(run="r1", plan="p", version="1", by="me")


@pytest.mark.parametrize("entries, expected", [
    ([entry_for(RUN, result="ok", started=0, duration=1, digest=None, outputs={"endpoint": "e"})], {"endpoint": "e"}),
    ([entry_for(RUN, result="failed", started=1, duration=1, digest=None, msg="x"),
      entry_for(RUN, result="changed", started=0, duration=1, digest=None, outputs={"endpoint": "old"})],
     {"endpoint": "old"}),
    ([{**entry_for(RUN, result="ok", started=1, duration=1, digest=None), "action": "destroy"}], None),
    ([], None),
], ids=["the-newest-run-that-succeeded", "a-failed-run-keeps-the-earlier-values", "destroy-is-not-a-run",
        "never-ran"])
def test_recorded_outputs(entries, expected):
    assert recorded_outputs(entries) == expected


# ------------------------------------------------------------ a command phase's JSON output

TOKEN = {"from": "stdout", "jsonpath": "{.status.token}"}


@pytest.mark.parametrize("executor, outputs, expected", [
    ("command", {"token": TOKEN}, None),
    ("command", {"token": {**TOKEN, "kind": "ConfigMap"}},
     "spec.outputs.token.kind: an output from stdout names no object; remove kind"),
    ("command", {"token": {**TOKEN, "from": "stderr"}},
     "spec.outputs.token.from: expected object (the default: an object on the cluster), stdout"),
    ("wait", {"token": TOKEN}, "spec.outputs.token.from: executor wait has no standard output to read"),
], ids=["from-stdout-needs-only-a-jsonpath", "names-no-object", "object-or-stdout", "only-command-phases"])
def test_declaring_an_output_from_a_commands_output(tmp_path, executor, outputs, expected):
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
    spec = {"options": ECHO} if executor == "command" else {"source": [configmap]}
    documents = [phase("db", cluster="ephemeral", executor=executor, outputs=outputs, **spec)]
    if expected is None:
        assert build(documents, tmp_path).phases[0].phase.outputs == (
            PhaseOutput(name="token", kind="", object_name="", jsonpath="{.status.token}", source="stdout"),)
        return
    with pytest.raises(PhasekitError) as raised:
        build(documents, tmp_path)
    assert "(Phase db) field " + expected in str(raised.value)


@pytest.mark.parametrize("stdout, expected", [
    ('{"status": {"token": "t0k"}}\n', "t0k"),
    (b'{"status": {"token": "t0k"}}', "t0k"),
    ("token: t0k", PhasekitError("output token: the command's standard output is not JSON (Expecting value at line "
                                 "1 column 1)")),
    ('{"status": {}}', PhasekitError("output token: {.status.token} on the command's standard output: ")),
], ids=["json-text", "json-bytes", "not-json-says-where-not-what", "missing-field"])
def test_reading_an_output_from_a_commands_output(stdout, expected):
    output = PhaseOutput.from_dict("token", TOKEN)
    if isinstance(expected, Exception):
        with pytest.raises(PhasekitError) as raised:
            read_stdout_output(output, stdout)
        assert str(raised.value).startswith(str(expected))
        return
    assert read_stdout_output(output, stdout) == expected


# ------------------------------------------------------------ a helm phase's release values

PORT = {"from": "values", "jsonpath": "{.service.port}"}
RELEASE = {"chart_ref": "./chart", "name": "web"}


@pytest.mark.parametrize("executor, outputs, expected", [
    ("helm", {"port": PORT}, None),
    ("helm", {"port": {**PORT, "name": "web"}}, "spec.outputs.port.name: an output from values names no object; remove name"),
    ("helm", {"port": {**PORT, "jsonpath": None}}, "spec.outputs.port.jsonpath: missing: expected a non-empty string"),
    ("helm", {"port": {**PORT, "from": "value"}},
     "spec.outputs.port.from: expected object (the default: an object on the cluster), stdout (a command phase's JSON "
     "output) or values"),
    ("command", {"port": PORT}, "spec.outputs.port.from: executor command has no release values to read; from: values is "
                                "for helm phases"),
    ("helm", {"port": {**PORT, "from": "stdout"}}, "spec.outputs.port.from: executor helm has no standard output to read"),
], ids=["from-values-needs-only-a-jsonpath", "names-no-object", "needs-a-jsonpath", "object-stdout-or-values",
        "only-helm-phases", "stdout-not-on-helm-phases"])
def test_declaring_an_output_from_a_releases_values(tmp_path, executor, outputs, expected):
    options = RELEASE if executor == "helm" else ECHO
    documents = [phase("web", cluster="ephemeral", executor=executor, outputs=outputs, options=options)]
    if expected is None:
        assert build(documents, tmp_path).phases[0].phase.outputs == (
            PhaseOutput(name="port", kind="", object_name="", jsonpath="{.service.port}", source="values"),)
        return
    with pytest.raises(PhasekitError) as raised:
        build(documents, tmp_path)
    assert "(Phase web) field " + expected in str(raised.value)


@pytest.mark.parametrize("values, expected", [
    ({"service": {"port": 8080, "type": "ClusterIP"}}, "8080"),
    ({"service": {"type": "ClusterIP"}}, PhasekitError("output port: {.service.port} on the release's values: ")),
], ids=["a-computed-value", "missing-field-says-where-not-what"])
def test_reading_an_output_from_a_releases_values(values, expected):
    output = PhaseOutput.from_dict("port", PORT)
    if isinstance(expected, Exception):
        with pytest.raises(PhasekitError) as raised:
            read_values_output(output, values)
        assert str(raised.value).startswith(str(expected))
        assert "ClusterIP" not in str(raised.value)
        return
    assert read_values_output(output, values) == expected


@pytest.mark.parametrize("executor, options, outputs", [
    ("helm", {**RELEASE, "release_state": "absent"}, {"port": PORT}),
    ("apply", {"state": "absent"}, {"endpoint": ENDPOINT}),
], ids=["an-uninstalled-release", "deleted-objects"])
def test_a_phase_that_deletes_declares_no_outputs(tmp_path, executor, options, outputs):
    manifest = tmp_path / "cm.yaml"
    manifest.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: db, namespace: apps}\n")
    source = {"source": str(manifest)} if executor == "apply" else {}
    documents = [phase("gone", cluster="ephemeral", executor=executor, outputs=outputs, options=options, **source)]
    with pytest.raises(PhasekitError) as raised:
        build(documents, tmp_path)
    assert "(Phase gone) field spec.outputs: the phase deletes what it names" in str(raised.value)
