# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The hostile set (issue 23): over 150 hostile or careless inputs through the real entry points, each at -v
and -vvv, against the local clusters.

Entry points: the role phasekit.kube.plan (its engine, then its per-host part for the clusters that failed,
as the playbook phasekit.kube.run runs them), the action plugins' tasks (helm, kube_command, apply, kubeconfig,
phase_plan with convert_to), the lookup phasekit.kube.kubeconfig, and the inventory plugin through
ansible-inventory.

For every input and verbosity: (a) no Python traceback, (b) none of the canary secrets (the clusters' own
client keys, certificates and tokens, vault-encrypted values, one multi-line and one non-ASCII, the age key of
the sops sources) in the output or in the clusters' run records, in any form, (c) bad input fails with a
message naming the file, document or field, (d) no phasekit-* file left in the run's private TMPDIR,
(e) what the input should do otherwise.

Cost: one ansible-playbook per verbosity runs every playbook input (each in a block; its rescue and an
always-task mark its end), both verbosities at once, beside the ansible-inventory runs; each input is then a
test row (``v1-<input>``, ``v3-<input>``) reading the shared result. The result is computed once per test run,
under a file lock, whichever xdist worker gets there first.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import re
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from conftest import Cluster, VENV_BIN

pytestmark = [pytest.mark.first_full_line]

API = "phasekit.dev/v1alpha1"
AIRSHIP = "airshipit.org/v1alpha1"
VAULT_PASS = "phasekit-hostile-vault-pass"
# -v and -vvv; PHASEKIT_HOSTILE_VERBOSITIES="3" halves the cost (the outputs differed nowhere in the baseline)
VERBOSITIES = tuple(int(v) for v in os.environ.get("PHASEKIT_HOSTILE_VERBOSITIES", "1 3").split())
TRACEBACK_MARKS = ("traceback (most recent call last)", "unexpected error", "unexpected exception", "[errno")


# ------------------------------------------------------------------------------------------------- the inputs

@dataclass
class Hostile:
    """One hostile or careless input.

    kind: ``plan`` (the role over documents in ``phases.yaml``), ``task`` (one task), ``inventory``
    (ansible-inventory over ``config``). ``fails``: True (must fail), False (must succeed), None (either, but a
    failure must name ``expect``). ``expect``: fragments the failure text must hold (case-insensitive);
    ``shows``: fragments the output must hold; ``hides``: fragments it must not hold.
    """
    id: str
    category: str
    kind: str
    body: object = None
    files: dict = field(default_factory=dict)
    fails: bool | None = True
    expect: tuple = ()
    shows: tuple = ()
    hides: tuple = ()
    role_vars: dict = field(default_factory=dict)
    steps: list = field(default_factory=list)  # plan: further role runs (their role vars), in order
    block: dict = field(default_factory=dict)  # block keywords: diff, check_mode
    records: dict = field(default_factory=dict)  # plan: run record data to create first, per host
    with_plan: bool = True  # plan: add the PhasePlan hostile-<id> naming every top-level Phase


def cm(name: str, data: dict | None = None) -> dict:
    """A ConfigMap in the run's namespace."""
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "@NS@"},
            "data": data or {"a": "b"}}


def phase(name: str, executor: str | None, cluster: str = "ephemeral", source=None, options=None,
          **spec) -> dict:
    """A phasekit Phase document."""
    content = {"cluster": cluster, **spec}
    if executor:
        content["executor"] = executor
    if source is not None:
        content["source"] = source
    if options is not None:
        content["options"] = options
    return {"apiVersion": API, "kind": "Phase", "metadata": {"name": name}, "spec": content}


def command(script: str, cluster: str = "ephemeral", **options) -> dict:
    """A command phase running ``script`` with /bin/sh."""
    return phase("cmd", "command", cluster, options={"shell": True, "cmd": script, **options})


def plan(id_: str, category: str, *documents, **kwargs) -> Hostile:
    """An input run through the role over ``documents``."""
    return Hostile(id_, category, "plan", list(documents), **kwargs)


def task(id_: str, category: str, body: dict, **kwargs) -> Hostile:
    """An input that is one task."""
    return Hostile(id_, category, "task", body, **kwargs)


def inventory(id_: str, config, **kwargs) -> Hostile:
    """An input that is an inventory configuration, read by ansible-inventory."""
    return Hostile(id_, "inventory", "inventory", config, **kwargs)


# the non-ASCII vault value as a YAML scalar (ASCII JSON escapes its emoji as a surrogate pair, which YAML refuses)
UNICODE_JSON = "{{ hostile_unicode | to_json(ensure_ascii=False) }}"
LEAK_SCRIPT = 'set -x; cat "$KUBECONFIG"; K=$(cat "$KUBECONFIG"); echo "$K" >&2; exit 3'
DECODE_KEY = ('set -x; grep client-key-data "$KUBECONFIG" | sed "s/.*: //" | base64 -d; '
              'grep client-certificate-data "$KUBECONFIG" | sed "s/.*: //" | base64 -d >&2; exit 4')
KUSTOMIZATION = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
                 "resources": ["objects.yaml"]}
BUILD_DIR = {"build/kustomization.yaml": yaml.safe_dump(KUSTOMIZATION),
             "build/objects.yaml": yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap",
                                                   "metadata": {"name": "built"}})}


def env_dirs(entries: dict, **extra) -> Hostile:
    """A command phase whose env_dirs variable R holds ``entries``."""
    return command('ls -R "$R"', env_dirs={"R": entries}, **extra)


def command_inputs() -> list[Hostile]:
    c = "command"
    return [
        plan("cmd-setx-cat-kubeconfig", c, command(LEAK_SCRIPT), expect=("rc 3",)),
        plan("cmd-decode-client-key", c, command(DECODE_KEY), expect=("rc 4",)),
        plan("cmd-kubectl-view-raw-json", c, command("kubectl config view --raw -o json; exit 5"), expect=("rc 5",)),
        plan("cmd-kubectl-view-raw-yaml-ok", c, command("kubectl config view --raw"), fails=False),
        # without records (so without a lock): the limited user may not write them, and the command must run
        plan("cmd-setx-limited-token", c, command(LEAK_SCRIPT, cluster="kc-limited"), expect=("rc 3",),
             role_vars={"plan_record": False}),
        plan("cmd-grep-token-limited", c, command('grep token "$KUBECONFIG"; exit 6', cluster="kc-limited"),
             expect=("rc 6",), role_vars={"plan_record": False}),
        plan("cmd-env-vault-password", c, command('echo "pw=$PW"; exit 7', env={"PW": "{{ hostile_password }}"}),
             expect=("rc 7",)),
        plan("cmd-env-vault-multiline", c, command('printf "%s\\n" "$PW"; exit 7',
                                                   env={"PW": "{{ hostile_multiline }}"}), expect=("rc 7",)),
        plan("cmd-env-vault-unicode", c, command('printf "%s\\n" "$PW" >&2; exit 7',
                                                 env={"PW": "{{ hostile_unicode }}"}), expect=("rc 7",)),
        plan("cmd-env-vault-json", c, command('printf \'{"pw": "%s"}\' "$PW"; exit 7',
                                              env={"PW": "{{ hostile_unicode }}"}), expect=("rc 7",)),
        plan("cmd-stdin-vault", c, command("cat; exit 8", stdin="{{ hostile_multiline }}"), expect=("rc 8",)),
        plan("cmd-argv-vault", c, phase("cmd", "command", options={
            "argv": ["sh", "-c", "exit 9", "{{ hostile_password }}"]}), expect=("rc 9",)),
        plan("cmd-cmd-vault", c, phase("cmd", "command", options={
            "cmd": "sh -c 'exit 9' {{ hostile_password }}"}), expect=("rc 9",)),
        plan("cmd-env-files-vault", c, command('cat "$F"; exit 10', env_files={"F": "{{ hostile_multiline }}"}),
             expect=("rc 10",)),
        plan("cmd-kubeconfigs-other-setx", c, command('set -x; cat "$OTHER"; exit 11',
                                                      kubeconfigs={"OTHER": "target"}), expect=("rc 11",)),
        plan("cmd-kubeconfigs-unknown-host", c, command("true", kubeconfigs={"OTHER": "nohost"}),
             expect=("nohost",)),
        plan("cmd-kubeconfigs-bad-variable", c, command("true", kubeconfigs={"1 BAD": "target"}),
             expect=("1 BAD",)),
        plan("cmd-kubeconfigs-list", c, command("true", kubeconfigs=["target"]), expect=("kubeconfigs",)),
        plan("cmd-kubeconfigs-broken-host", c, command("true", kubeconfigs={"OTHER": "kc-broken-yaml"}),
             expect=("broken.yaml",)),
        plan("cmd-env-files-empty-name", c, command("true", env_files={"": "x"}), expect=("env_files",)),
        plan("cmd-env-files-mapping", c, command("true", env_files={"F": {"a": 1}}), expect=("env_files",)),
        plan("cmd-env-dirs-dot", c, env_dirs({".": {"kustomize": "build"}}), files=BUILD_DIR,
             expect=("env_dirs",)),
        plan("cmd-env-dirs-dotdot", c, env_dirs({"../escape.yaml": {"kustomize": "build"}}), files=BUILD_DIR,
             expect=("env_dirs", "escape.yaml")),
        plan("cmd-env-dirs-inner-dotdot", c, env_dirs({"a/../../b.yaml": {"kustomize": "build"}}), files=BUILD_DIR,
             expect=("env_dirs",)),
        plan("cmd-env-dirs-nul", c, env_dirs({"a\0b.yaml": {"kustomize": "build"}}), files=BUILD_DIR,
             expect=("env_dirs",)),
        plan("cmd-env-dirs-300-chars", c, env_dirs({"a" * 300 + ".yaml": {"kustomize": "build"}}), files=BUILD_DIR,
             expect=("env_dirs",)),
        plan("cmd-env-dirs-absolute", c, env_dirs({"/tmp/phasekit-hostile.yaml": {"kustomize": "build"}}),
             files=BUILD_DIR, expect=("env_dirs",)),
        plan("cmd-env-dirs-empty-path", c, env_dirs({"": {"kustomize": "build"}}), files=BUILD_DIR,
             expect=("env_dirs",)),
        plan("cmd-env-dirs-symlink-escape", c, env_dirs({"x.yaml": {"kustomize": "escape"}}),
             files={"escape": ("symlink", "/etc")}, expect=("escape",)),
        plan("cmd-env-dirs-kustomize-missing", c, env_dirs({"x.yaml": {"kustomize": "nowhere"}}),
             expect=("nowhere",)),
        plan("cmd-env-dirs-unknown-field", c, env_dirs({"x.yaml": {"kustomize": "build", "colour": "red"}}),
             files=BUILD_DIR, expect=("colour",)),
        plan("cmd-env-dirs-bad-kind", c, env_dirs({"x.yaml": {"kustomize": "build", "kind": "NoGroup"}}),
             files=BUILD_DIR, expect=("kind",)),
        plan("cmd-env-dirs-file-and-dir", c, env_dirs({"a": {"kustomize": "build"}, "a/b.yaml": {
            "kustomize": "build"}}), files=BUILD_DIR, expect=("env_dirs",)),
        plan("cmd-env-dirs-ok", c, env_dirs({"sub/x.yaml": {"kustomize": "build"}}), files=BUILD_DIR, fails=False),
        plan("cmd-timeout-kill", c, command("sleep 30", timeout=1), expect=("timeout", "1")),
        plan("cmd-huge-output", c, command("yes x | head -c 3000000; exit 12"), expect=("rc 12",)),
        plan("cmd-binary-output", c, command("head -c 4000 /dev/urandom; exit 13"), expect=("rc 13",)),
        plan("cmd-missing-program", c, phase("cmd", "command", options={"argv": ["/nonexistent/tool"]}),
             expect=("/nonexistent/tool",)),
        plan("cmd-not-executable", c, phase("cmd", "command", options={"argv": ["./script.txt"]}),
             files={"script.txt": "echo hi\n"}, expect=("script.txt",)),
        plan("cmd-env-mapping-value", c, command("true", env={"A": {"b": 1}}), expect=("env",)),
        plan("cmd-stdin-list", c, command("true", stdin=[1, 2]), expect=("stdin",)),
        plan("cmd-killed-by-signal", c, command("kill -9 $$"), expect=("cmd",)),
        plan("cmd-chdir-missing", c, command("true", chdir="no/such/dir"), expect=("no/such/dir",)),
        plan("cmd-exec-kubeconfig-host", c, command(LEAK_SCRIPT, cluster="kc-exec-fail"), expect=("rc 3",),
             role_vars={"plan_record": False}),   # its user reads no record: without one, the command runs
    ]


CHART = {
    "chart/Chart.yaml": "apiVersion: v2\nname: hello\nversion: 0.1.0\n",
    "chart/values.yaml": "greeting: hello\n",
    "chart/templates/cm.yaml": ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-greeting\n"
                                "data:\n  greeting: {{ .Values.greeting | quote }}\n"),
    "chart/templates/secret.yaml": ("apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ .Release.Name }}-pw\n"
                                    "stringData:\n  password: {{ .Values.password | default \"none\" | quote }}\n"),
}


def helm_phase(name: str = "rel", source="chart", cluster: str = "ephemeral", **options) -> dict:
    """A helm phase installing into the run's namespace."""
    return phase(name, "helm", cluster, source=source, options={"release_namespace": "@NS@", **options})


def helm_inputs() -> list[Hostile]:
    h = "helm"
    bad_template = {**CHART, "chart/templates/fail.yaml":
                    '{{ fail (printf "refusing password %s" .Values.password) }}\n'}
    return [
        plan("helm-values-missing", h, helm_phase(values_files=["missing.yaml"]), files=CHART,
             expect=("missing.yaml",)),
        plan("helm-values-directory", h, helm_phase(values_files=["adir"]), files={**CHART, "adir": ("dir",)},
             expect=("adir",)),
        plan("helm-values-invalid-yaml", h, helm_phase(values_files=["v.yaml"]),
             files={**CHART, "v.yaml": "a: [\n"}, expect=("v.yaml",)),
        plan("helm-values-list", h, helm_phase(values_files=["v.yaml"]), files={**CHART, "v.yaml": "- a\n"},
             expect=("v.yaml",)),
        plan("helm-values-binary", h, helm_phase(values_files=["v.yaml"]),
             files={**CHART, "v.yaml": bytes(range(256))}, expect=("v.yaml",)),
        plan("helm-values-j2-syntax-line", h, helm_phase(values_files=["v.yaml.j2"]),
             files={**CHART, "v.yaml.j2": "a: 1\nb: 2\nc: {% if %}\n"}, expect=("v.yaml.j2", "line 3")),
        plan("helm-values-j2-undefined", h, helm_phase(values_files=["v.yaml.j2"]),
             files={**CHART, "v.yaml.j2": "region: {{ hostile_no_such_var }}\n"},
             expect=("v.yaml.j2", "hostile_no_such_var")),
        plan("helm-values-j2-vault-multiline", h, helm_phase("relml", values_files=["v.yaml.j2"]),
             files={**CHART, "v.yaml.j2": "password: {{ hostile_multiline | to_json }}\n"}, fails=False,
             block={"diff": True}),
        plan("helm-values-j2-vault-unicode", h, helm_phase("reluni", values_files=["v.yaml.j2"]),
             files={**CHART, "v.yaml.j2": "password: " + UNICODE_JSON + "\n"}, fails=False,
             block={"diff": True}),
        plan("helm-release-values-vault-check-diff", h, helm_phase(
            "relck", release_values={"password": "{{ hostile_password }}"}), files=CHART, fails=False,
            block={"diff": True, "check_mode": True}),
        plan("helm-template-fail-echoes-vault", h, helm_phase(release_values={"password": "{{ hostile_password }}"}),
             files=bad_template, expect=("fail.yaml",)),
        plan("helm-template-fail-echoes-vault-multiline", h, helm_phase(
            release_values={"password": "{{ hostile_multiline }}"}), files=bad_template, expect=("fail.yaml",)),
        plan("helm-chart-missing", h, helm_phase(source="nochart"), expect=("nochart",)),
        plan("helm-chart-no-chart-yaml", h, helm_phase(source="empty"), files={"empty": ("dir",)},
             expect=("empty",)),
        plan("helm-chart-bad-chart-yaml", h, helm_phase(), files={**CHART, "chart/Chart.yaml": "name: [\n"},
             expect=("Chart.yaml",)),
        plan("helm-chart-bad-tgz", h, helm_phase(source="bad.tgz"), files={"bad.tgz": os.urandom(512)},
             expect=("bad.tgz",)),
        plan("helm-chart-invalid-object", h, helm_phase(), files={**CHART, "chart/templates/bad.yaml":
                                                                  "kind: [\n"}, expect=("bad.yaml",)),
        plan("helm-unknown-option", h, helm_phase(colour="red"), files=CHART, expect=("colour",)),
        plan("helm-wait-timeout-number", h, helm_phase(wait_timeout="5"), files=CHART, expect=("wait_timeout",)),
        plan("helm-release-name-invalid", h, helm_phase(name="Not_A!Name"), files=CHART, expect=("Not_A!Name",)),
        plan("helm-binary-missing", h, helm_phase(binary_path="/nonexistent/helm"), files=CHART,
             expect=("/nonexistent/helm",)),
        plan("helm-repo-url-vault-password", h, helm_phase(source=None, chart_ref="hello", chart_repo_url=(
            "https://user:{{ hostile_password }}@127.0.0.1:9/charts")), expect=("chart",)),
        plan("helm-namespace-invalid", h, helm_phase(release_namespace="Bad_NS!"), files=CHART,
             expect=("Bad_NS!",)),
        plan("helm-exec-kubeconfig-host", h, helm_phase(cluster="kc-exec-fail"), files=CHART,
             expect=("kc-exec-fail",)),
        task("helm-action-values-missing", h, {"phasekit.kube.helm": {
            "name": "act", "chart_ref": "@DIR@/chart", "release_namespace": "@NS@",
            "values_files": ["@DIR@/missing.yaml"]}}, files=CHART, expect=("missing.yaml",)),
        task("helm-action-values-vault-diff", h, {"phasekit.kube.helm": {
            "name": "actv", "chart_ref": "@DIR@/chart", "release_namespace": "@NS@",
            "release_values": {"password": "{{ hostile_multiline }}"}}}, files=CHART, fails=False,
            block={"diff": True}),
    ]


def records_inputs() -> list[Hostile]:
    r = "records"
    ok = phase("p", "command", options={"cmd": "true"})
    hist = {"plan_action": "history"}
    return [
        plan("rec-hand-edited-not-json", r, ok, records={"ephemeral": {"p": "not json {"}}, fails=False,
             role_vars={"plan_resume": True}),
        plan("rec-hand-edited-object", r, ok, records={"ephemeral": {"p": '{"result": "ok"}'}}, fails=False,
             role_vars={"plan_resume": True}),
        plan("rec-hand-edited-wrong-types", r, ok, records={"ephemeral": {
            "p": '[{"result": 5, "digest": [], "started": null, "run": {}}]'}}, fails=False,
            role_vars={"plan_resume": True}),
        plan("rec-hand-edited-forged-success", r, ok, records={"ephemeral": {
            "p": '[{"run": "x", "action": "run", "result": "ok", "digest": "sha256:00", "plan": "x"}]'}},
            fails=False, role_vars={"plan_resume": True}, shows=("1 changed",)),
        plan("rec-hand-edited-huge", r, ok, records={"ephemeral": {
            "p": json.dumps([{"run": str(i), "result": "ok", "msg": "x" * 200} for i in range(2000)])}},
            fails=False, role_vars={"plan_resume": True}),
        plan("rec-hand-edited-history", r, ok, records={"ephemeral": {
            "p": '[{"result": 5}, "text", null, {"run": ["x"]}]'}}, fails=False, role_vars=hist),
        plan("rec-hand-edited-bad-key", r, ok, records={"ephemeral": {"no.such.phase": "[]", "p": "[]"}},
             fails=False, role_vars=hist),
        plan("rec-deleted-history", r, ok, fails=False, role_vars=hist),
        plan("rec-deleted-resume", r, ok, fails=False, role_vars={"plan_resume": True}, shows=("1 changed",)),
        plan("rec-names-normalise-alike", r, ok, phase("q", "command", options={"cmd": "true"}),
             {"apiVersion": API, "kind": "PhasePlan", "metadata": {"name": "hostile-rec-alike_x"},
              "spec": {"phases": ["p"]}},
             {"apiVersion": API, "kind": "PhasePlan", "metadata": {"name": "hostile-rec-alike-x"},
              "spec": {"phases": ["q"]}}, with_plan=False, fails=None,
             role_vars={"plan_name": "hostile-rec-alike_x"},
             steps=[{"plan_name": "hostile-rec-alike-x"}, {"plan_name": "hostile-rec-alike_x", **hist}],
             hides=("q changed",)),
        plan("rec-phase-names-collide", r, phase("a.b", "command", options={"cmd": "true"}),
             phase("a", None, phases=[{"name": "b", "executor": "command", "options": {"cmd": "exit 1"}}]),
             expect=("a/b",)),
        plan("rec-plan-name-upper", r, ok, {"apiVersion": API, "kind": "PhasePlan",
                                            "metadata": {"name": "Hostile-UPPER"}, "spec": {"phases": ["p"]}},
             with_plan=False, role_vars={"plan_name": "Hostile-UPPER"}, fails=None, expect=("Hostile-UPPER",)),
        plan("rec-plan-name-long", r, ok, {"apiVersion": API, "kind": "PhasePlan",
                                           "metadata": {"name": "hostile-" + "l" * 290}, "spec": {"phases": ["p"]}},
             with_plan=False, role_vars={"plan_name": "hostile-" + "l" * 290}, fails=None, expect=("name",)),
        plan("rec-namespace-missing", r, ok, role_vars={"plan_record_namespace": "pk-hostile-no-such-ns"},
             fails=False, shows=("pk-hostile-no-such-ns",)),
        plan("rec-namespace-invalid", r, ok, role_vars={"plan_record_namespace": "Bad_NS!"}, fails=None,
             expect=("Bad_NS!",)),
        # the record holds the run's lock: a user who may not write it is refused before the phase runs
        plan("rec-limited-user-no-rbac", r, phase("p", "command", cluster="kc-limited", options={"cmd": "true"}),
             expect=("kc-limited", "get, create and patch on ConfigMaps", "nothing was written")),
        plan("rec-failure-msg-with-key", r, command(DECODE_KEY), expect=("rc 4",)),
    ]


def template_inputs() -> list[Hostile]:
    t = "j2"

    def j2(text: str) -> dict:
        return {"m/obj.yaml.j2": text}

    apply_dir = phase("m", "apply", source="m", options={"namespace": "@NS@"})
    head = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n"
    return [
        plan("j2-syntax-error-line", t, apply_dir, files=j2(head.format(name="x") + "data:\n  a: {% if %}\n"),
             expect=("obj.yaml.j2", "line 6")),
        plan("j2-unclosed-block", t, apply_dir, files=j2(head.format(name="x") + "{% for i in [1] %}\n"),
             expect=("obj.yaml.j2",)),
        plan("j2-undefined-variable", t, apply_dir, files=j2(head.format(name="{{ region_nope }}")),
             expect=("obj.yaml.j2", "region_nope")),
        plan("j2-undefined-attribute", t, apply_dir, files=j2(head.format(name="{{ hostvars['nohost'].x }}")),
             expect=("obj.yaml.j2",)),
        plan("j2-unknown-filter", t, apply_dir, files=j2(head.format(name="{{ 'x' | hostile_nofilter }}")),
             expect=("obj.yaml.j2", "hostile_nofilter")),
        plan("j2-vault-multiline-ok", t, apply_dir, files=j2(head.format(name="j2-ml") + "data:\n"
                                                             "  pw: {{ hostile_multiline | to_json }}\n"),
             fails=False, block={"diff": True}),
        plan("j2-vault-unicode-ok", t, apply_dir, files=j2(head.format(name="j2-uni") + "data:\n"
                                                           "  pw: " + UNICODE_JSON + "\n"),
             fails=False, block={"diff": True}),
        plan("j2-vault-changed-diff", t, apply_dir, files={
            **j2(head.format(name="j2-diff") + "data:\n  pw: {{ hostile_password | to_json }}\n"),
            "m2/obj.yaml.j2": head.format(name="j2-diff") + "data:\n  pw: " + UNICODE_JSON + "\n",
            "phases2.yaml": yaml.safe_dump_all([
                phase("m", "apply", source="m2", options={"namespace": "@NS@"}),
                {"apiVersion": API, "kind": "PhasePlan", "metadata": {"name": "hostile-j2-vault-changed-diff"},
                 "spec": {"phases": ["m"]}}])},
             fails=False, block={"diff": True}, steps=[{"plan_src": "@DIR@/phases2.yaml"}]),
        plan("j2-vault-then-undefined", t, apply_dir, files=j2(head.format(
            name="x") + "data:\n  a: {{ hostile_password ~ hostile_undefined_after }}\n"),
            expect=("obj.yaml.j2", "hostile_undefined_after")),
        plan("j2-vault-breaks-yaml", t, apply_dir, files=j2(head.format(name="x") + "data:\n"
                                                            "  a: {{ hostile_multiline }}\n"),
             expect=("obj.yaml.j2",)),
        plan("j2-vault-unicode-breaks-yaml", t, apply_dir, files=j2(head.format(name="x") + "data:\n"
                                                                    "  a: [{{ hostile_unicode }}\n"),
             expect=("obj.yaml.j2",)),
        plan("j2-vault-as-object-name", t, apply_dir, files=j2(head.format(name="'{{ hostile_password }}_Not!Valid'")),
             expect=("ConfigMap",)),
        plan("j2-vault-as-kind", t, apply_dir, files=j2("apiVersion: v1\nkind: '{{ hostile_password }}'\n"
                                                        "metadata:\n  name: x\n"), expect=("obj.yaml.j2",)),
        plan("j2-vault-as-label", t, apply_dir, files=j2(head.format(name="x") + "  labels:\n"
                                                         "    a: " + UNICODE_JSON + "\n"),
             expect=("ConfigMap",)),
        plan("j2-render-action-vault", t, apply_dir, files=j2(head.format(name="j2-render") + "data:\n"
                                                              "  pw: {{ hostile_multiline | to_json }}\n"),
             fails=False, role_vars={"plan_action": "render"}, shows=("***",)),
        plan("j2-non-utf8", t, apply_dir, files={"m/obj.yaml.j2": b"kind: \xff\xfe\n"}, expect=("obj.yaml.j2",)),
        plan("j2-recursion", t, apply_dir, files=j2("{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}\n"),
             expect=("obj.yaml.j2",)),
        plan("j2-renders-empty", t, apply_dir, files=j2("{# nothing #}\n"), fails=None, expect=("obj.yaml.j2",)),
        plan("j2-option-undefined", t, phase("m", "apply", source="m", options={"namespace": "{{ nope_ns }}"}),
             files=j2(head.format(name="x")), expect=("nope_ns",)),
        plan("j2-option-vault-namespace", t, phase("m", "apply", source="m",
                                                   options={"namespace": "{{ hostile_password }}"}),
             files=j2(head.format(name="x")), expect=("namespace",)),
        task("j2-apply-action-undefined", t, {"phasekit.kube.apply": {"src": "@DIR@/m", "namespace": "@NS@"}},
             files=j2(head.format(name="{{ hostile_missing_in_task }}")), expect=("hostile_missing_in_task",)),
        task("j2-apply-action-vault-diff", t, {"phasekit.kube.apply": {"src": "@DIR@/m", "namespace": "@NS@"}},
             files=j2(head.format(name="j2-act") + "data:\n  pw: {{ hostile_multiline | to_json }}\n"),
             fails=False, block={"diff": True}),
    ]


def airship_site(phases: list | str, extra: dict | None = None) -> dict:
    """Files of an airshipctl site under site/: an entry point ep/ and the phases file site/phases/all.yaml."""
    files = {"site/ep/kustomization.yaml": yaml.safe_dump({**KUSTOMIZATION}),
             "site/ep/objects.yaml": yaml.safe_dump(cm("airship-obj")),
             "site/phases/all.yaml": phases if isinstance(phases, str) else yaml.safe_dump_all(phases)}
    files.update(extra or {})
    return files


def airship_phase(name: str = "p", entry="ep", cluster: str = "ephemeral", executor: str = "apply",
                  **config) -> dict:
    body = {"executorRef": {"apiVersion": AIRSHIP, "kind": "KubernetesApply", "name": executor}, **config}
    if entry is not None:
        body["documentEntryPoint"] = entry
    return {"apiVersion": AIRSHIP, "kind": "Phase", "metadata": {"name": name, "clusterName": cluster},
            "config": body}


APPLY_EXECUTOR = {"apiVersion": AIRSHIP, "kind": "KubernetesApply", "metadata": {"name": "apply"},
                  "config": {"waitOptions": {"timeout": 60}}}


def airship_plan(*phases: str) -> dict:
    """airshipctl's PhasePlan hostile-airship."""
    return {"apiVersion": AIRSHIP, "kind": "PhasePlan", "metadata": {"name": "hostile-airship"},
            "phases": [{"name": name} for name in phases]}


def airship_inputs() -> list[Hostile]:
    a = "airshipctl"
    run = {"plan_src": "@DIR@/site/phases", "plan_name": "hostile-airship", "plan_target_path": "@DIR@/site",
           "plan_action": "validate", "plan_offline": True}

    def site_input(id_, documents, expect, **kwargs):
        return plan(id_, a, files=airship_site(documents, extra=kwargs.pop("extra", None)), with_plan=False,
                    role_vars={**run, **kwargs.pop("role_vars", {})}, expect=expect, **kwargs)

    def convert(id_, documents, expect, fails=True, **kwargs):
        return task(id_, a, {"phasekit.kube.phase_plan": {"src": "@DIR@/site/phases", "target_path": "@DIR@/site",
                                                          "convert_to": kwargs.pop("to", "@DIR@/out")}},
                    files=airship_site(documents, extra=kwargs.pop("extra", None)), expect=expect, fails=fails,
                    **kwargs)

    good = [APPLY_EXECUTOR, airship_phase(), airship_plan("p")]
    return [
        site_input("air-entry-dotdot", [APPLY_EXECUTOR, airship_phase(entry="../../.."), airship_plan("p")],
                   ("documentEntryPoint",)),
        site_input("air-entry-absolute", [APPLY_EXECUTOR, airship_phase(entry="/etc"), airship_plan("p")],
                   ("documentEntryPoint",)),
        site_input("air-entry-missing", [APPLY_EXECUTOR, airship_phase(entry="no/such"), airship_plan("p")],
                   ("no/such",)),
        site_input("air-entry-nul", [APPLY_EXECUTOR, airship_phase(entry="e\0p"), airship_plan("p")],
                   ("documentEntryPoint",)),
        site_input("air-unknown-config-field", [APPLY_EXECUTOR, airship_phase(colour="red"), airship_plan("p")],
                   ("colour",)),
        site_input("air-unknown-top-field", [APPLY_EXECUTOR, {**airship_phase(), "colour": "red"},
                                             airship_plan("p")], ("colour",)),
        site_input("air-executor-undefined", [airship_phase(executor="nope"), airship_plan("p")], ("nope",)),
        site_input("air-executor-kind-unknown", [APPLY_EXECUTOR, {**airship_phase(), "config": {
            "executorRef": {"apiVersion": AIRSHIP, "kind": "Frobnicate", "name": "apply"},
            "documentEntryPoint": "ep"}}, airship_plan("p")], ("Frobnicate",)),
        site_input("air-malformed-yaml", "apiVersion: airshipit.org/v1alpha1\nkind: Phase\nmetadata: [\n",
                   ("all.yaml",)),
        site_input("air-document-list", "- a\n- b\n", ("all.yaml",)),
        site_input("air-document-string", "just text\n", ("all.yaml",)),
        site_input("air-plan-unknown-phase", [*good[:2], airship_plan("p", "ghost")], ("ghost",)),
        site_input("air-cluster-unknown", [APPLY_EXECUTOR, airship_phase(cluster="nowhere-cluster"),
                                           airship_plan("p")], ("nowhere-cluster",)),
        site_input("air-phase-no-metadata", [APPLY_EXECUTOR, {"apiVersion": AIRSHIP, "kind": "Phase",
                                                              "config": {}}, airship_plan("p")], ("metadata",)),
        site_input("air-wait-timeout-text", [{**APPLY_EXECUTOR, "config": {"waitOptions": {"timeout": "soon"}}},
                                             airship_phase(), airship_plan("p")], ("timeout",)),
        site_input("air-entry-bad-kustomization", good, ("ep",), extra={"site/ep/kustomization.yaml": "res: [\n"}),
        convert("air-convert-entry-dotdot", [APPLY_EXECUTOR, airship_phase(entry="../../.."), airship_plan("p")],
                ("documentEntryPoint",)),
        convert("air-convert-unknown-field", [APPLY_EXECUTOR, airship_phase(colour="red"), airship_plan("p")],
                ("colour",)),
        convert("air-convert-malformed", "kind: Phase\nmetadata: {name: [\n", ("all.yaml",)),
        convert("air-convert-to-a-file", good, ("out",), extra={"out": "a file\n"}, to="@DIR@/out"),
        convert("air-convert-ok", good, (), fails=False, shows=("phases.yaml",), block={"diff": True}),
    ]


def kubeconfig_inputs() -> list[Hostile]:
    k = "kubeconfig"
    inline = [cm("kc-obj")]

    def on(host: str, expect: tuple) -> Hostile:
        return plan(f"kc-host-{host.removeprefix('kc-')}", k, phase("a", "apply", cluster=host, source=inline),
                    expect=expect)

    def action(id_: str, source, expect, **kwargs) -> Hostile:
        return task(id_, k, {"phasekit.kube.kubeconfig": {"kubeconfig": source, "dest": "@DIR@/written.yaml"}},
                    expect=expect, **kwargs)

    def lookup(id_: str, sources, expect, **kwargs) -> Hostile:
        expression = ("{{ lookup('phasekit.kube.kubeconfig', sources=" + json.dumps(sources)
                      + ", minify=true, flatten=true) | length }}")
        return task(id_, k, {"ansible.builtin.debug": {"msg": expression}}, expect=expect, **kwargs)

    def content(id_: str, file: str, expect, **kwargs) -> Hostile:
        """The apply action with a careless kubeconfig: it must reach the cluster (or not) without echoing it."""
        source = {"content": "{{ lookup('ansible.builtin.file', '@KC@/" + file + "') }}"}
        return task(id_, k, {"phasekit.kube.apply": {"definition": cm("kc-content"), "kubeconfig": source}},
                    expect=expect, **kwargs)

    return [
        on("kc-broken-yaml", ("broken.yaml",)),
        on("kc-missing-user", ("missing-user.yaml", "user")),
        on("kc-exec-fail", ("kc-exec-fail",)),
        on("kc-missing-file", ("/nonexistent/hostile.kubeconfig",)),
        on("kc-unknown-context", ("no-such-context",)),
        on("kc-sops-wrong-key", ("wrong-key.enc.yaml",)),
        on("kc-vault-wrong-password", ("wrong-pass.vault.yaml",)),
        plan("kc-host-sops-ok", k, phase("a", "apply", cluster="kc-sops", source=[cm("kc-sops-obj")]),
             fails=False),
        plan("kc-host-limited-forbidden", k, phase("a", "apply", cluster="kc-limited",
                                                   source=[cm("kc-limited-obj")]), expect=("forbidden",)),
        action("kc-action-broken-yaml", "@KC@/broken.yaml", ("broken.yaml",)),
        action("kc-action-missing-user", "@KC@/missing-user.yaml", ("user",)),
        action("kc-action-sops-wrong-key", {"sops": "@KC@/wrong-key.enc.yaml"}, ("wrong-key.enc.yaml",)),
        action("kc-action-sops-malformed", {"sops": "@KC@/malformed.enc.yaml"}, ("malformed.enc.yaml",)),
        action("kc-action-vault-wrong-password", {"vault": "@KC@/wrong-pass.vault.yaml"}, ("wrong-pass.vault.yaml",)),
        action("kc-action-exec-dest-ok", "@KC@/exec.yaml", (), fails=False),
        content("kc-content-key-as-token", "key-as-token.yaml", ("token",)),
        content("kc-content-key-not-base64", "key-not-base64.yaml", ("client-key-data",)),
        content("kc-content-cert-key-swapped", "swapped.yaml", ("client-",)),
        content("kc-content-bad-ca", "bad-ca.yaml", ("certificate-authority-data",)),
        content("kc-content-key-in-server", "key-in-server.yaml", ("server",)),
        # the play's host sets kube_context, which a task's kubeconfig follows (as kubectl --context would): the
        # current-context holding a token is never used and must not show; the lookup below does use it
        content("kc-content-token-in-context-name", "token-context.yaml", (), fails=False),
        lookup("kc-lookup-broken-yaml", [{"path": "@KC@/broken.yaml"}], ("broken.yaml",)),
        lookup("kc-lookup-missing-user", [{"path": "@KC@/missing-user.yaml"}], ("user",)),
        lookup("kc-lookup-sops-wrong-key", [{"sops": "@KC@/wrong-key.enc.yaml"}], ("wrong-key.enc.yaml",)),
        lookup("kc-lookup-key-not-base64", [{"path": "@KC@/key-not-base64.yaml"}], ("client-key-data",)),
        lookup("kc-lookup-token-in-context-name", [{"path": "@KC@/token-context.yaml"}], ("current-context",)),
        task("kc-apply-action-exec-fail", k, {"phasekit.kube.apply": {
            "definition": cm("kc-exec-act"), "kubeconfig": "@KC@/exec.yaml"}}, expect=("exec",)),
        task("kc-command-action-exec-fail", k, {"phasekit.kube.kube_command": {
            "cmd": "true", "kubeconfig": "@KC@/exec.yaml"}}, fails=None, expect=("exec",)),
    ]


def apply_inputs() -> list[Hostile]:
    b = "apply"

    def bundle(id_, source, expect=(), fails=True, **kwargs):
        return plan(id_, b, phase("a", "apply", source=source, options={"namespace": "@NS@"}), expect=expect,
                    fails=fails, **kwargs)

    huge = cm("huge", {"a": "x" * 3_300_000})
    vault_huge = ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: huge-vault\ndata:\n"
                  "  pw: {{ hostile_password }}\n  pad: '" + "y" * 3_300_000 + "'\n")
    return [
        bundle("apply-huge-object", "huge.yaml", ("huge",), files={"huge.yaml": yaml.safe_dump(huge)}),
        bundle("apply-huge-object-vault", "m", ("huge-vault",), files={"m/huge.yaml.j2": vault_huge}),
        bundle("apply-invalid-yaml", "bad.yaml", ("bad.yaml",), files={"bad.yaml": "a: 1\nb: [\n"}),
        bundle("apply-tab-indented", "bad.yaml", ("bad.yaml",), files={"bad.yaml": "a:\n\tb: 1\n"}),
        bundle("apply-unknown-kind", [{"apiVersion": "v1", "kind": "Frobnicator", "metadata": {"name": "x"}}],
               ("Frobnicator",)),
        bundle("apply-unknown-group", [{"apiVersion": "nope.example/v1", "kind": "Thing", "metadata": {"name": "x"}}],
               ("nope.example",)),
        bundle("apply-document-string", "s.yaml", ("s.yaml",), files={"s.yaml": "just text\n"}),
        bundle("apply-missing-name", [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}], ("metadata",)),
        bundle("apply-invalid-field", [cm("badfield", {"a": {"b": 1}})], ("badfield",)),
        bundle("apply-duplicate-object", [cm("dup"), cm("dup", {"c": "d"})], ("dup",)),
        bundle("apply-binary-file", "bin.yaml", ("bin.yaml",), files={"bin.yaml": os.urandom(2048)}),
        bundle("apply-empty-dir", "empty", fails=None, expect=("empty",), files={"empty": ("dir",)}),
        bundle("apply-broken-kustomization", "k", ("k",), files={"k/kustomization.yaml": "resources: [\n"}),
        bundle("apply-kustomization-missing-resource", "k", ("k",), files={
            "k/kustomization.yaml": yaml.safe_dump({"resources": ["nothere.yaml"]})}),
        bundle("apply-symlink-loop", "loop", ("loop",), files={"loop": ("symlink", "loop")}),
        bundle("apply-deep-nesting", "deep.yaml", ("deep.yaml",), files={"deep.yaml": "a: " + "[" * 3000
                                                                         + "]" * 3000 + "\n"}),
        bundle("apply-secret-bad-base64-vault", "m", ("Secret",), files={"m/s.yaml.j2": (
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: badb64\ndata:\n"
            "  pw: {{ hostile_password | to_json }}\n")}),
        bundle("apply-secret-vault-diff", "m", (), fails=False, block={"diff": True}, files={"m/s.yaml.j2": (
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: vaulted\nstringData:\n"
            "  pw: {{ hostile_multiline | to_json }}\n  uni: " + UNICODE_JSON + "\n")}),
        plan("apply-namespace-invalid", b, phase("a", "apply", source=[
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}], options={"namespace": "Bad_NS!"}),
            expect=("Bad_NS!",)),
        plan("apply-check-mode-diff-vault", b, phase("a", "apply", source="m", options={"namespace": "@NS@"}),
             files={"m/c.yaml.j2": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: checked\ndata:\n"
                                   "  pw: " + UNICODE_JSON + "\n"},
             fails=False, block={"diff": True, "check_mode": True}),
        task("apply-action-huge-definition", b, {"phasekit.kube.apply": {
            "definition": "{{ lookup('ansible.builtin.file', '@DIR@/huge.yaml') | from_yaml }}"}},
            files={"huge.yaml": yaml.safe_dump({**huge, "metadata": {"name": "huge-act", "namespace": "@NS@"}})},
            expect=("huge-act",)),
        task("apply-action-invalid-yaml-src", b, {"phasekit.kube.apply": {"src": "@DIR@/bad.yaml"}},
             files={"bad.yaml": "a: [\n"}, expect=("bad.yaml",)),
    ]


def plan_document_inputs() -> list[Hostile]:
    p = "plan documents"
    return [
        plan("doc-phases-file-broken", p, files={"phases.yaml": "kind: [\n"}, with_plan=False,
             expect=("phases.yaml",)),
        plan("doc-phases-file-binary", p, files={"phases.yaml": bytes(range(256)) * 4}, with_plan=False,
             expect=("phases.yaml",)),
        plan("doc-phases-dir-symlink-loop", p, files={"pdir/loop": ("symlink", "loop"), "pdir/a.yaml": "kind: x\n"},
             with_plan=False, role_vars={"plan_src": "@DIR@/pdir"}, expect=("pdir",)),
        plan("doc-unknown-field-vault", p, {**phase("x", "command", options={"cmd": "true"}),
                                            "colour": "{{ hostile_password }}"}, expect=("colour",)),
        plan("doc-option-typo", p, phase("x", "command", options={"cmdd": "true"}), expect=("cmdd",)),
        plan("doc-cluster-unknown", p, phase("x", "command", cluster="nowhere", options={"cmd": "true"}),
             expect=("nowhere",)),
        plan("doc-retries-huge", p, phase("x", "command", options={"cmd": "true"}, retries=10 ** 9),
             expect=("retries",)),
        plan("doc-timeout-negative", p, phase("x", "command", options={"cmd": "true"}, timeout=-1),
             expect=("timeout",)),
        plan("doc-name-nul", p, phase("x\0y", "command", options={"cmd": "true"}), expect=("name",)),
        plan("doc-name-300", p, phase("n" * 300, "command", options={"cmd": "true"}), fails=None, expect=("name",)),
        plan("doc-start-at-unknown", p, phase("x", "command", options={"cmd": "true"}),
             role_vars={"plan_start_at": "ghost"}, expect=("ghost",)),
        plan("doc-tasks-phase-missing-file", p, phase("x", "tasks", source="nofile.yml"), expect=("nofile.yml",)),
        plan("doc-rollout-bad", p, phase("x", "command", options={"cmd": "true"}, rollout={"batches": ["x"]}),
             expect=("rollout",)),
    ]


def inventory_inputs() -> list[Hostile]:
    plugin = {"plugin": "phasekit.kube.clusters"}

    def site(id_, text, expect=(), fails=True, **kwargs):
        return inventory(id_, {**plugin, "site": ["site.yml"]}, files={"site.yml": text}, expect=expect,
                         fails=fails, **kwargs)

    vault_header = "clusters:\n  a:\n    kubeconfig: !vault |\n      $ANSIBLE_VAULT;9.9;AES256\n      zz\n"
    return [
        site("inv-site-list", "- 1\n- 2\n", ("site.yml",)),
        site("inv-site-broken-yaml", "clusters: [\n", ("site.yml",)),
        site("inv-site-binary", bytes(range(256)) * 4, ("site.yml",)),
        site("inv-site-vault-bad-header", vault_header, ("site.yml",)),
        site("inv-site-vault-wrong-password", "@VAULT_OTHER@", ("site.yml",)),
        site("inv-site-vault-kubeconfig-ok", "@VAULT_PATH@", fails=False),
        site("inv-site-unknown-field", "clusters:\n  a: {kubeconfig: k.yaml, colour: red}\n", ("colour",)),
        site("inv-site-content-admin-key", "@CONTENT_KEY@", ("content",)),
        site("inv-site-url-token", "@URL_TOKEN@", ("url",)),
        site("inv-site-headers-token", "@HEADERS_TOKEN@", ("headers",)),
        site("inv-site-parent-cycle", "clusters:\n  a: {kubeconfig: k.yaml, parent: b}\n"
                                      "  b: {kubeconfig: k.yaml, parent: a}\n", ("cycle",)),
        site("inv-site-name-nul", 'clusters:\n  "a\\0b": {kubeconfig: k.yaml}\n', ("clusters",)),
        site("inv-site-name-300", "clusters:\n  " + "a" * 300 + ": {kubeconfig: k.yaml}\n", fails=None,
             expect=("clusters",)),
        site("inv-site-template-undefined", "clusters:\n  a: {kubeconfig: '{{ hostile_nope }}'}\n", fails=None,
             expect=("hostile_nope",)),
        inventory("inv-site-directory", {**plugin, "site": ["adir"]}, files={"adir": ("dir",)}, expect=("adir",)),
        inventory("inv-site-missing", {**plugin, "site": ["nothere.yml"]}, expect=("nothere.yml",)),
        inventory("inv-kubeconfigs-missing-file", {**plugin, "kubeconfigs": [{"path": "/nonexistent/k.yaml"}]},
                  fails=None, expect=("/nonexistent/k.yaml",)),
        inventory("inv-kubeconfigs-unknown-context", {**plugin, "kubeconfigs": [
            {"path": "@ADMIN_KC@", "contexts": ["no-such-context"]}]}, expect=("no-such-context",)),
        inventory("inv-kubeconfigs-broken-yaml", {**plugin, "kubeconfigs": [{"path": "@KC@/broken.yaml"}]},
                  expect=("broken.yaml",)),
        inventory("inv-kubeconfigs-key-not-base64", {**plugin, "kubeconfigs": [
            {"path": "@KC@/key-not-base64.yaml"}]}, fails=None, expect=("key-not-base64.yaml",)),
        inventory("inv-kubeconfigs-exec-ok", {**plugin, "kubeconfigs": [{"path": "@KC@/exec.yaml"}]}, fails=False),
        inventory("inv-airship-map-missing", {**plugin, "airship_cluster_map": [{"path": "nomap.yaml"}]},
                  expect=("nomap.yaml",)),
        inventory("inv-airship-map-malformed", {**plugin, "airship_cluster_map": [{"path": "map.yaml"}]},
                  files={"map.yaml": "apiVersion: airshipit.org/v1alpha1\nkind: ClusterMap\nmap: [\n"},
                  expect=("map.yaml",)),
        inventory("inv-config-vault-in-option", "@CONFIG_VAULT@", fails=None, expect=("kubeconfigs",)),
    ]


def all_inputs() -> list[Hostile]:
    return (command_inputs() + helm_inputs() + records_inputs() + template_inputs() + airship_inputs()
            + kubeconfig_inputs() + apply_inputs() + plan_document_inputs() + inventory_inputs())


INPUTS = all_inputs()
BY_ID = {one.id: one for one in INPUTS}


def test_the_hostile_set_has_at_least_150_distinct_inputs():
    assert len(BY_ID) == len(INPUTS), "duplicate input ids"
    assert len(INPUTS) >= 150, len(INPUTS)
    surfaces = {"command", "helm", "records", "j2", "airshipctl", "inventory", "kubeconfig", "apply"}
    assert {one.category for one in INPUTS} >= surfaces


# ------------------------------------------------------------------------------------------------- canaries

@dataclass
class Canary:
    name: str
    value: str

    def forms(self) -> list[str]:
        """The value as written, each line of it, base64, JSON-escaped and with non-ASCII escaped."""
        found = {self.value, base64.b64encode(self.value.encode()).decode(), json.dumps(self.value)[1:-1],
                 json.dumps(self.value, ensure_ascii=False)[1:-1], self.value.encode("unicode_escape").decode(),
                 repr(self.value)[1:-1]}
        for line in self.value.splitlines():
            line = line.strip()
            if len(line) >= 12 and not line.startswith("-----"):
                found |= {line, json.dumps(line)[1:-1], line.encode("unicode_escape").decode()}
        return sorted(form for form in found if len(form) >= 12)


def cluster_canaries(cluster: Cluster) -> list[Canary]:
    """The cluster's own client key and certificate (admin) and bearer token (limited)."""
    admin = yaml.safe_load(cluster.admin_kubeconfig.read_text())["users"][0]["user"]
    limited = yaml.safe_load(cluster.limited_kubeconfig.read_text())["users"][0]["user"]
    return [Canary(f"{cluster.name} admin key", Path(admin["client-key"]).read_text()),
            Canary(f"{cluster.name} admin certificate", Path(admin["client-certificate"]).read_text()),
            Canary(f"{cluster.name} limited token", limited["token"])]


def leaks(text: str, canaries: list[Canary]) -> list[str]:
    """Names of the canaries found in ``text``, with the form found."""
    found = []
    for canary in canaries:
        for form in canary.forms():
            if form in text:
                found.append(f"{canary.name} ({form[:16]}...)")
                break
    return found


# ------------------------------------------------------------------------------------------------- the world

def vault_encrypted(text: str, password: str) -> str:
    from ansible.parsing.vault import VaultLib, VaultSecret  # pylint: disable=import-outside-toplevel
    return VaultLib([("default", VaultSecret(password.encode()))]).encrypt(text.encode()).decode()


def vault_block(name: str, text: str, password: str = VAULT_PASS, indent: int = 0) -> str:
    pad = " " * indent
    body = "\n".join(pad + "  " + line for line in vault_encrypted(text, password).splitlines())
    return f"{pad}{name}: !vault |\n{body}\n"


def flat(cluster: Cluster, kind: str = "admin") -> dict:
    path = cluster.admin_kubeconfig if kind == "admin" else cluster.limited_kubeconfig
    done = subprocess.run(["kubectl", "--kubeconfig", str(path), "config", "view", "--raw", "--flatten",
                           "--minify"], capture_output=True, text=True, check=True)
    return yaml.safe_load(done.stdout)


def write_file(path: Path, content) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, tuple) and content[0] == "symlink":
        path.symlink_to(content[1])
    elif isinstance(content, tuple) and content[0] == "dir":
        path.mkdir(exist_ok=True)
    elif isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)


class World:
    """Everything one verbosity's run needs: files, inventory, canaries, placeholders."""

    def __init__(self, root: Path, clusters: dict[str, Cluster], bin_dir: Path, verbosity: int):
        self.root = root
        self.clusters = clusters
        self.bin_dir = bin_dir
        self.verbosity = verbosity
        self.namespace = f"pk-hostile-v{verbosity}-{uuid.uuid4().hex[:6]}"
        tag = uuid.uuid4().hex[:10]
        self.password = f"hostile-vault-pw-{tag}"
        self.multiline = f"first line of the vaulted text {tag}\nsecond line, indented   {tag}\n" \
                         f"third line with: colons {tag}\n"
        self.unicode = f"pässwörd-ünïcødé-{tag}-密码-🔑"
        self.kc = root / "kc"
        self.tmpdir = root / "tmp"
        self.canaries: list[Canary] = []
        self.age_file = root / "age.txt"
        self.inventory = root / "inventory" / "hosts.yml"

    @property
    def ephemeral(self) -> Cluster:
        return self.clusters["ephemeral"]

    def placeholders(self, directory: Path) -> dict:
        return {"@NS@": self.namespace, "@DIR@": str(directory), "@KC@": str(self.kc), "@ROOT@": str(self.root),
                "@ADMIN_KC@": str(self.ephemeral.admin_kubeconfig)}

    def substitute(self, value, directory: Path):
        if isinstance(value, dict):
            return {self.substitute(k, directory): self.substitute(v, directory) for k, v in value.items()}
        if isinstance(value, list):
            return [self.substitute(item, directory) for item in value]
        if isinstance(value, str):
            for mark, text in self.placeholders(directory).items():
                value = value.replace(mark, text)
        return value

    def build(self) -> None:
        """Write the files, the kubeconfigs, the inventory; create the run's namespace on every cluster."""
        self.root.mkdir(parents=True, exist_ok=True)
        self.tmpdir.mkdir()
        (self.root / "vault-pass").write_text(VAULT_PASS)
        age_file = self.age_file
        subprocess.run([str(self.bin_dir / "age-keygen"), "-o", str(age_file)], check=True, capture_output=True)
        other_age = self.root / "other-age.txt"
        subprocess.run([str(self.bin_dir / "age-keygen"), "-o", str(other_age)], check=True, capture_output=True)
        age_key = next(line for line in age_file.read_text().splitlines() if line.startswith("AGE-SECRET-KEY"))
        self.canaries = [canary for cluster in self.clusters.values() for canary in cluster_canaries(cluster)]
        self.canaries += [Canary("vault password value", self.password),
                          Canary("vault multi-line value", self.multiline),
                          Canary("vault non-ASCII value", self.unicode), Canary("age key", age_key)]
        self._kubeconfigs(age_file, other_age)
        self._inventory()
        for one in INPUTS:
            self._input_files(one)
        for cluster in self.clusters.values():
            cluster.kubectl("create", "namespace", self.namespace)

    def recipient(self, key_file: Path) -> str:
        return next(line.split(": ")[1] for line in key_file.read_text().splitlines() if "public key" in line)

    def sops(self, plain: str, destination: Path, key_file: Path) -> None:
        source = destination.with_suffix(".plain.yaml")
        source.write_text(plain)
        done = subprocess.run([str(self.bin_dir / "sops"), "--encrypt", "--age", self.recipient(key_file),
                               str(source)], capture_output=True, text=True, check=True)
        destination.write_text(done.stdout)
        source.unlink()

    def _kubeconfigs(self, age_file: Path, other_age: Path) -> None:
        admin = flat(self.ephemeral)
        limited_token = yaml.safe_load(self.clusters["target"].limited_kubeconfig.read_text())["users"][0]["user"][
            "token"]
        user = admin["users"][0]["user"]
        self.kc.mkdir()
        write_file(self.kc / "broken.yaml", "apiVersion: v1\nclusters: [\n")
        missing_user = json.loads(json.dumps(admin))
        missing_user["users"][0]["name"] = "someone-else"
        write_file(self.kc / "missing-user.yaml", yaml.safe_dump(missing_user))
        script = self.kc / "exec-plugin.sh"
        script.write_text("#!/bin/sh\necho 'exec plugin environment:' >&2\nenv >&2\nexit 1\n")
        script.chmod(0o755)
        exec_config = json.loads(json.dumps(admin))
        exec_config["users"][0]["user"] = {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1", "command": str(script), "interactiveMode": "Never",
            "env": [{"name": "HOSTILE_TOKEN", "value": limited_token}]}}
        write_file(self.kc / "exec.yaml", yaml.safe_dump(exec_config))
        self.sops(yaml.safe_dump(admin), self.kc / "ok.enc.yaml", age_file)
        self.sops(yaml.safe_dump(admin), self.kc / "wrong-key.enc.yaml", other_age)
        write_file(self.kc / "malformed.enc.yaml", (self.kc / "ok.enc.yaml").read_text()[:-200] + "\n: [\n")
        write_file(self.kc / "wrong-pass.vault.yaml", vault_encrypted(yaml.safe_dump(admin), "another-password"))

        def variant(name: str, change) -> None:
            config = json.loads(json.dumps(admin))
            change(config)
            write_file(self.kc / name, yaml.safe_dump(config))

        key_pem = base64.b64decode(user["client-key-data"]).decode()
        variant("key-as-token.yaml", lambda c: c["users"][0].__setitem__("user", {"token": key_pem}))
        variant("key-not-base64.yaml", lambda c: c["users"][0]["user"].__setitem__("client-key-data", key_pem))
        variant("swapped.yaml", lambda c: c["users"][0].__setitem__("user", {
            "client-key-data": user["client-certificate-data"], "client-certificate-data": user["client-key-data"]}))
        variant("bad-ca.yaml", lambda c: c["clusters"][0]["cluster"].__setitem__(
            "certificate-authority-data", user["client-key-data"][:-8] + "%%%%"))
        variant("key-in-server.yaml", lambda c: c["clusters"][0]["cluster"].__setitem__(
            "server", "https://" + user["client-key-data"][:60]))
        variant("token-context.yaml", lambda c: c.__setitem__("current-context", limited_token))

    def _inventory(self) -> None:
        inv = self.root / "inventory"
        hosts = {}
        for name, cluster in self.clusters.items():
            hosts[name] = {"kube_kubeconfig": str(cluster.admin_kubeconfig), "kube_context": cluster.context}
        target = self.ephemeral
        hosts.update({
            "kc-limited": {"kube_kubeconfig": str(target.limited_kubeconfig), "kube_context": target.limited_context},
            "kc-broken-yaml": {"kube_kubeconfig": str(self.kc / "broken.yaml")},
            "kc-missing-user": {"kube_kubeconfig": str(self.kc / "missing-user.yaml")},
            "kc-exec-fail": {"kube_kubeconfig": str(self.kc / "exec.yaml")},
            "kc-missing-file": {"kube_kubeconfig": "/nonexistent/hostile.kubeconfig"},
            "kc-unknown-context": {"kube_kubeconfig": str(target.admin_kubeconfig), "kube_context": "no-such-context"},
            "kc-sops": {"kube_kubeconfig": {"sops": str(self.kc / "ok.enc.yaml")}},
            "kc-sops-wrong-key": {"kube_kubeconfig": {"sops": str(self.kc / "wrong-key.enc.yaml")}},
            "kc-vault-wrong-password": {"kube_kubeconfig": {"vault": str(self.kc / "wrong-pass.vault.yaml")}},
        })
        write_file(inv / "hosts.yml", yaml.safe_dump({"all": {"vars": {"ansible_connection": "local"},
                                                              "hosts": hosts}}))
        write_file(inv / "group_vars" / "all.yml", vault_block("hostile_password", self.password)
                   + vault_block("hostile_multiline", self.multiline) + vault_block("hostile_unicode", self.unicode))

    def input_dir(self, one: Hostile) -> Path:
        return self.root / "inputs" / one.id

    def _input_files(self, one: Hostile) -> None:
        directory = self.input_dir(one)
        directory.mkdir(parents=True)
        for relative, content in one.files.items():
            if isinstance(content, str) and content in SPECIALS:
                content = self._special(content)
            write_file(directory / relative, self.substitute(content, directory))
        if one.kind == "plan" and one.body:
            documents = self.substitute(list(one.body), directory)
            if one.with_plan:
                documents.append({"apiVersion": API, "kind": "PhasePlan", "metadata": {"name": plan_name(one)},
                                  "spec": {"phases": [doc["metadata"]["name"] for doc in documents
                                                      if doc.get("kind") == "Phase"]}})
            write_file(directory / "phases.yaml", yaml.safe_dump_all(documents))
        if one.kind == "inventory":
            config = self._special(one.body) if one.body in SPECIALS else one.body
            text = config if isinstance(config, str) else yaml.safe_dump(self.substitute(config, directory))
            write_file(directory / "hostile.clusters.yml", text)

    def _special(self, text: str) -> str:
        """Site and inventory files that hold canaries or vault values."""
        key_data = flat(self.ephemeral)["users"][0]["user"]
        token = yaml.safe_load(self.ephemeral.limited_kubeconfig.read_text())["users"][0]["user"]["token"]
        specials = {
            "@VAULT_OTHER@": "clusters:\n  a:\n" + vault_block("kubeconfig", "k.yaml", "other-pass", indent=4),
            "@VAULT_PATH@": "clusters:\n  a:\n" + vault_block("kubeconfig", str(self.ephemeral.admin_kubeconfig),
                                                              indent=4),
            "@CONTENT_KEY@": yaml.safe_dump({"clusters": {"a": {"kubeconfig": {"content": {
                "users": [{"name": "u", "user": {"client-key-data": key_data["client-key-data"]}}]}}}}}),
            "@URL_TOKEN@": yaml.safe_dump({"clusters": {"a": {"kubeconfig": {
                "url": f"https://kc.example/a?token={token}"}}}}),
            "@HEADERS_TOKEN@": yaml.safe_dump({"clusters": {"a": {"kubeconfig": {
                "url": "https://kc.example/a", "headers": {"Authorization": f"Bearer {token}"}}}}}),
            "@CONFIG_VAULT@": "plugin: phasekit.kube.clusters\nkubeconfigs:\n  - path: x\n"
                              + vault_block("contexts", self.password, indent=4),
        }
        return specials.get(text, text)


SPECIALS = ("@VAULT_OTHER@", "@VAULT_PATH@", "@CONTENT_KEY@", "@URL_TOKEN@", "@HEADERS_TOKEN@", "@CONFIG_VAULT@")


def plan_name(one: Hostile) -> str:
    """The PhasePlan an input runs (its run records are named after it)."""
    return f"hostile-{one.id}"


# ------------------------------------------------------------------------------------------------- the playbook

# Files, not directories: the private base directory (TMPDIR/phasekit-UID, 0700) stays for the next run, empty.
FILES_LEFT = ("{{ lookup('ansible.builtin.pipe', 'cd \"$TMPDIR\" && find phasekit* -type f -printf \"%p \" "
              "2>/dev/null; rm -rf phasekit*; true') }}")


CLOCK = "{{ now().timestamp() }}"


def role_vars(world: World, one: Hostile, extra: dict) -> dict:
    """The role's variables for one run of an input."""
    directory = world.input_dir(one)
    values = {"plan_src": str(directory / "phases.yaml"), "plan_name": plan_name(one) if one.with_plan else "",
              "plan_record_namespace": world.namespace, **one.role_vars, **extra}
    return world.substitute(values, directory)


def role_run(values: dict) -> list[dict]:
    """The role as the playbook phasekit.kube.run runs it: the engine once, then the clusters that failed (only
    when this action ran phases: list, tree and render leave an earlier input's result as it was)."""
    tasks = [{"name": "Run the plan", "ansible.builtin.include_role": {"name": "phasekit.kube.plan",
                                                                       "tasks_from": "plan"}, "vars": values}]
    runs_phases = values.get("plan_action", "run") in ("run", "status", "destroy", "validate")
    if runs_phases and not values.get("plan_offline"):
        tasks.append({"name": "Clusters that failed",
                      "ansible.builtin.include_role": {"name": "phasekit.kube.plan", "tasks_from": "host"},
                      "vars": values,
                      "when": "inventory_hostname in (phasekit_kube_resolved.failed_hosts | default({}))"})
    return tasks


def body_tasks(world: World, one: Hostile) -> list[dict]:
    """The tasks of an input's block."""
    if one.kind == "plan":
        tasks = role_run(role_vars(world, one, {}))
        for step in one.steps:
            tasks += role_run(role_vars(world, one, step))
        return tasks
    directory = world.input_dir(one)
    return [{"name": "The task", **world.substitute(one.body, directory), "run_once": True}]


HOSTILE_HOSTS = ("kc-limited", "kc-broken-yaml", "kc-missing-user", "kc-exec-fail", "kc-missing-file",
                 "kc-unknown-context", "kc-sops", "kc-sops-wrong-key", "kc-vault-wrong-password")


def play_hosts(one: Hostile) -> list[str]:
    """The clusters and the hostile hosts the input names (the first runs the run_once tasks)."""
    text = json.dumps([one.body, one.role_vars, one.steps])
    return ["ephemeral"] + [host for host in ("target",) + HOSTILE_HOSTS if re.search(f'"{host}"', text)]


def playbook(world: World) -> list[dict]:
    """One play per input (Ansible keeps the other hosts of a failed run_once task out of the play's batch, which
    the role checks, for the rest of the play even when a rescue handled the failure)."""
    plays = []
    for one in INPUTS:
        if one.kind == "inventory":
            continue
        tasks = [{"name": f"hostile {one.id}", "ansible.builtin.debug": {"msg": f"input {one.id} at " + CLOCK},
                  "run_once": True},
                 {"block": body_tasks(world, one), **one.block,
                  "rescue": [{"name": f"hostile rescued {one.id}", "ansible.builtin.debug": {"msg": "rescued"},
                              "run_once": True},
                             # a failed run_once task failed every host: the next input's play needs them all
                             {"name": "Clear the errors", "ansible.builtin.meta": "clear_host_errors"}],
                  "always": [{"name": f"hostile files {one.id}",
                              "ansible.builtin.debug": {"msg": f"HOSTILE-END {CLOCK} HOSTILE-FILES: " + FILES_LEFT},
                              "run_once": True}]}]
        plays.append({"name": f"Input {one.id}", "hosts": ":".join(play_hosts(one)), "gather_facts": False,
                      "tasks": tasks})
    return plays


def environment(world: World, collections_path: Path) -> dict:
    """The environment of every run: the private TMPDIR, the vault password, the age key."""
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(collections_path), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_RETRY_FILES_ENABLED": "0", "ANSIBLE_HOST_KEY_CHECKING": "0",
           "ANSIBLE_LOCALHOST_WARNING": "0", "ANSIBLE_PYTHON_INTERPRETER": sys.executable,
           "ANSIBLE_DEPRECATION_WARNINGS": "0", "TMPDIR": str(world.tmpdir),
           "ANSIBLE_LOCAL_TEMP": str(world.root / "ansible-local"), "SOPS_AGE_KEY_FILE": str(world.age_file),
           "ANSIBLE_VAULT_PASSWORD_FILE": str(world.root / "vault-pass")}
    env.pop("KUBECONFIG", None)
    return env


def split_output(output: str) -> dict[str, str]:
    """Input id -> the output of its part of the run (from its marker task to the next one)."""
    parts, current, lines = {}, None, []
    for line in output.splitlines():
        found = re.match(r"^TASK \[hostile (\S+)\] \*", line)
        if found or line.startswith("PLAY RECAP"):
            if current:
                parts[current] = "\n".join(lines)
            current, lines = (found.group(1) if found else None), []
        if current:
            lines.append(line)
    return parts


def run_playbook_inputs(world: World, collections_path: Path) -> dict:
    text = yaml.safe_dump(playbook(world), width=10 ** 6)
    assert not leaks(text, world.canaries), "the playbook itself must hold no canary"
    path = world.root / "hostile.yml"
    path.write_text(text)
    started = time.monotonic()
    done = subprocess.run([str(VENV_BIN / "ansible-playbook"), str(path), "-i", str(world.inventory),
                           "-" + "v" * world.verbosity], env=environment(world, collections_path),
                          cwd=world.root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
    (world.root / "output.txt").write_text(done.stdout)
    results = {}
    parts = split_output(done.stdout)
    for one in INPUTS:
        if one.kind == "inventory":
            continue
        part = parts.get(one.id, "")
        body = part.split(f"TASK [hostile files {one.id}]")[0]
        files = re.search(r"HOSTILE-FILES: ([^\"\n]*)", part)
        clock = re.search(r"input \S+ at ([\d.]+)", part), re.search(r"HOSTILE-END ([\d.]+)", part)
        results[one.id] = {"output": body, "failed": f"TASK [hostile rescued {one.id}]" in part,
                           "files": files.group(1).split() if files else ["(no files check ran)"],
                           "ran": bool(part),
                           "seconds": round(float(clock[1].group(1)) - float(clock[0].group(1)), 2)
                           if all(clock) else None}
    return {"results": results, "rc": done.returncode, "seconds": round(time.monotonic() - started, 1),
            "tail": done.stdout[-3000:]}


def run_inventory_input(world: World, collections_path: Path, one: Hostile) -> dict:
    directory = world.input_dir(one)
    env = {**environment(world, collections_path), "ANSIBLE_INVENTORY_ENABLED": "phasekit.kube.clusters",
           "ANSIBLE_INVENTORY_UNPARSED_FAILED": "1", "TMPDIR": str(directory / "tmp")}
    (directory / "tmp").mkdir()
    done = subprocess.run([str(VENV_BIN / "ansible-inventory"), "-i", str(directory / "hostile.clusters.yml"),
                           "--list", "-" + "v" * world.verbosity], env=env, cwd=directory, capture_output=True,
                          text=True, check=False)
    left = [str(path.relative_to(directory / "tmp")) for path in (directory / "tmp").glob("phasekit*/**/*")
            if path.is_file()] + [path.name for path in (directory / "tmp").glob("phasekit*") if path.is_file()]
    return {"output": done.stdout + done.stderr, "failed": done.returncode != 0, "files": left, "ran": True}


def read_records(world: World) -> dict:
    """Every phasekit run record in the hostile namespace, per cluster: name -> data."""
    records = {}
    for cluster in world.clusters.values():
        done = cluster.kubectl("get", "configmaps", "-n", world.namespace, "-l",
                               "app.kubernetes.io/managed-by=phasekit.kube", "-o", "json", check=False)
        items = json.loads(done.stdout)["items"] if done.returncode == 0 else []
        for item in items:
            records[f"{cluster.name}/{item['metadata']['name']}"] = json.dumps(
                {**item.get("data", {}), **item.get("binaryData", {})}, ensure_ascii=False)
    return records


def seed_records(world: World) -> None:
    """Hand-edited run records, created before the run."""
    for one in INPUTS:
        for host, data in one.records.items():
            cluster = world.clusters[host]
            body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
                "name": f"phasekit-run-{plan_name(one)}.{host}", "namespace": world.namespace,
                "labels": {"app.kubernetes.io/managed-by": "phasekit.kube"}}, "data": data}
            cluster.kubectl("apply", "--server-side", "--field-manager=hand-edited", "-f", "-", stdin=json.dumps(body))


def run_everything(root: Path, clusters, bin_dir: Path, collections_path: Path) -> dict:
    """Both verbosities' playbooks at once, the inventory inputs beside them; then each run's records."""
    worlds = {v: World(root / f"v{v}", clusters, bin_dir, v) for v in VERBOSITIES}
    try:
        for world in worlds.values():
            world.build()
            seed_records(world)
        with ThreadPoolExecutor(3) as pool:
            playbooks = {v: pool.submit(run_playbook_inputs, world, collections_path) for v, world in worlds.items()}
            inventories = {(v, one.id): pool.submit(run_inventory_input, world, collections_path, one)
                           for v, world in worlds.items() for one in INPUTS if one.kind == "inventory"}
            out = {}
            for v, world in worlds.items():
                done = playbooks[v].result()
                results = done["results"]
                results.update({key[1]: future.result() for key, future in inventories.items() if key[0] == v})
                out[str(v)] = {"results": results, "rc": done["rc"], "seconds": done["seconds"],
                               "tail": done["tail"], "records": read_records(world),
                               "canaries": [[c.name, c.value] for c in world.canaries],
                               "namespace": world.namespace}
        return out
    finally:
        for world in worlds.values():
            for cluster in clusters.values():
                cluster.kubectl("delete", "namespace", world.namespace, "--ignore-not-found", "--wait=false",
                                check=False)


@pytest.fixture(scope="session")
def hostile_results(clusters, bin_dir, collections_path, tmp_path_factory, worker_id) -> dict:
    """The hostile set's results at each verbosity, computed once for all xdist workers of the test run."""
    shared = tmp_path_factory.getbasetemp() if worker_id == "master" else tmp_path_factory.getbasetemp().parent
    result_file = shared / "hostile-results.json"
    with open(shared / "hostile.lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not result_file.exists():
            result_file.write_text(json.dumps(run_everything(shared / "hostile", clusters, bin_dir,
                                                             collections_path)))
    results = json.loads(result_file.read_text())
    if os.environ.get("PHASEKIT_HOSTILE_REPORT"):
        Path(os.environ["PHASEKIT_HOSTILE_REPORT"]).write_text(report(results))
    return results


PROBLEM_CLASSES = ("traceback", "leak", "unclear", "files", "wrong")


def report(results: dict) -> str:
    """The closing note's numbers: per category, inputs tried and inputs with each class of problem (an input
    counts once per class, at either verbosity), then every failing input with its problems."""
    per_input = {}
    for verbosity, run in results.items():
        canaries = [Canary(name, value) for name, value in run["canaries"]]
        for one in INPUTS:
            for problem in problems_of(one, run["results"][one.id], run["records"], canaries):
                per_input.setdefault(one.id, {}).setdefault(problem.split(":", 1)[0], []).append(
                    f"-{'v' * int(verbosity)}: {problem}")
    categories = sorted({one.category for one in INPUTS})
    lines = ["| category | tried | tracebacks | leaks | unclear messages | files left | wrong behaviour |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    totals = [0] * 6
    for category in categories + ["all"]:
        ids = [one.id for one in INPUTS if category in ("all", one.category)]
        row = [len(ids)] + [sum(1 for i in ids if kind in per_input.get(i, {})) for kind in PROBLEM_CLASSES]
        if category != "all":
            totals = [t + r for t, r in zip(totals, row)]
        lines.append(f"| {category} | " + " | ".join(str(n) for n in row) + " |")
    lines += ["", f"Inputs with at least one problem: {len(per_input)} of {len(INPUTS)} "
              f"(each run at {', '.join('-' + 'v' * int(v) for v in results)}).", ""]
    for one in INPUTS:
        if one.id in per_input:
            first = [problems[0] for problems in per_input[one.id].values()]
            lines.append(f"- `{one.id}` ({one.category}): " + "; ".join(line[:260] for line in first))
    seconds = ", ".join(f"-{'v' * int(v)}: playbook {run['seconds']}s rc {run['rc']}" for v, run in results.items())
    lines += ["", f"Run: {seconds}", "", "Slowest inputs (seconds, per verbosity):"]
    for verbosity, run in results.items():
        timed = sorted(((result.get("seconds") or 0, name) for name, result in run["results"].items()), reverse=True)
        lines.append(f"-{'v' * int(verbosity)}: " + ", ".join(f"{name} {took}" for took, name in timed[:12]))
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------------- the checks

def failure_text(output: str) -> str:
    """The lines of an input's output that report what went wrong (not the task headers, not the markers)."""
    return "\n".join(line for line in output.splitlines()
                     if not line.startswith(("TASK [", "task path:", "PLAY [")) and '"msg": "input ' not in line)


def first_failure(output: str) -> str:
    """The line that says best why the input failed."""
    lines = output.splitlines()
    for wanted in (r"^\[ERROR\]", r": failed: ", r"^fatal: .*msg", r'^\s+"msg": "(?!input |rescued)', r"^fatal:"):
        for line in lines:
            if re.search(wanted, line):
                return line.strip()
    return ""


def problems_of(one: Hostile, result: dict, records: dict, canaries: list[Canary]) -> list[str]:
    """Everything wrong with one input's run, each as a line starting with its class."""
    if not result["ran"]:
        return ["wrong: the input did not run (the batch stopped before it)"]
    return unsafe(one, result, records, canaries) + unexpected(one, result)


def unsafe(one: Hostile, result: dict, records: dict, canaries: list[Canary]) -> list[str]:
    """Tracebacks, leaks (output and the input's run records) and files left."""
    output = result["output"]
    problems = []
    for mark in TRACEBACK_MARKS:
        if mark in output.lower():
            line = next(line for line in output.splitlines() if mark in line.lower())
            problems.append(f"traceback: {line.strip()[:300]}")
            break
    for leak in leaks(output, canaries):
        problems.append(f"leak: output shows {leak}")
    if one.kind == "plan":
        names = [plan_name(one)] + [v.get("plan_name", "") for v in [one.role_vars, *one.steps]]
        for name, data in records.items():
            if any(n and name.split("/", 1)[1].startswith(f"phasekit-run-{n}"[:60]) for n in names):
                for leak in leaks(data, canaries):
                    problems.append(f"leak: run record {name} holds {leak}")
    if result["files"]:
        problems.append(f"files: left in TMPDIR: {' '.join(result['files'])[:200]}")
    return problems


def unexpected(one: Hostile, result: dict) -> list[str]:
    """Failures that should not be, successes that should not be, messages that do not say what is wrong."""
    output = result["output"]
    problems = []
    text = failure_text(output).lower()
    if one.fails is True and not result["failed"]:
        problems.append("wrong: did not fail")
    elif one.fails is False and result["failed"]:
        problems.append(f"wrong: failed: {first_failure(output)[:300]}")
    if result["failed"] and one.expect:
        missing = [fragment for fragment in one.expect if fragment.lower() not in text]
        if missing:
            problems.append(f"unclear: message lacks {missing}: {first_failure(output)[:300]}")
    for fragment in one.shows:
        if fragment.lower() not in text:
            problems.append(f"wrong: output lacks {fragment!r}")
    for fragment in one.hides:
        if fragment.lower() in text:
            problems.append(f"wrong: output shows {fragment!r}")
    return problems


ROWS = [pytest.param(v, one.id, id=f"v{v}-{one.id}") for v in VERBOSITIES for one in INPUTS]


@pytest.mark.parametrize("verbosity, input_id", ROWS)
def test_hostile_input(hostile_results, verbosity, input_id):
    run = hostile_results[str(verbosity)]
    canaries = [Canary(name, value) for name, value in run["canaries"]]
    one = BY_ID[input_id]
    problems = problems_of(one, run["results"][input_id], run["records"], canaries)
    assert problems == [], f"{input_id} at -{'v' * verbosity}:\n" + "\n".join(problems)


@pytest.mark.parametrize("verbosity", VERBOSITIES, ids=[f"v{v}" for v in VERBOSITIES])
def test_no_canary_in_any_run_record(hostile_results, verbosity):
    run = hostile_results[str(verbosity)]
    canaries = [Canary(name, value) for name, value in run["canaries"]]
    found = {name: leaks(data, canaries) for name, data in run["records"].items()}
    assert {name: found for name, found in found.items() if found} == {}
    assert run["records"], "the run wrote run records"
