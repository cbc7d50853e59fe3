"""airshipctl's Clusterctl executor as command phases running clusterctl: one rule per row."""

from __future__ import annotations

import json
import os
import re
import stat
import sys

import pytest
import yaml

from ansible_collections.phasekit.kube.plugins.action.phase_plan import render_bundles
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.running.builtin import BuiltinExecutors
from ansible_collections.phasekit.kube.plugins.module_utils.running.runner import HostContext
from ansible_collections.phasekit.kube.plugins.module_utils.airship.convert import convert_documents
from ansible_collections.phasekit.kube.plugins.module_utils.planning.documents import inline_documents
from ansible_collections.phasekit.kube.plugins.module_utils.planning.inventory import Inventory
from ansible_collections.phasekit.kube.plugins.module_utils.planning.planner import RunEntry, build_plan
from ansible_collections.phasekit.kube.plugins.plugin_utils.plan import executors

API = "airshipit.org/v1alpha1"
E, T = "ephemeral-cluster", "target-cluster"
CONFIG = "PHASEKIT_CLUSTERCTL_CONFIG"
FROM = "PHASEKIT_CLUSTERCTL_FROM_KUBECONFIG"
INIT = {"core-provider": "cluster-api:v0.3.7", "bootstrap-providers": ["kubeadm:v0.3.7"],
        "infrastructure-providers": ["metal3:v0.4.0"], "control-plane-providers": ["kubeadm:v0.3.7"]}
INIT_ARGV = ["clusterctl", "init", "--core", "cluster-api:v0.3.7", "--bootstrap", "kubeadm:v0.3.7",
             "--control-plane", "kubeadm:v0.3.7", "--infrastructure", "metal3:v0.4.0"]


def inventory(parents=None):
    parents = {T: E} if parents is None else parents
    return Inventory(groups={"all": [E, T], "ungrouped": [E, T]}, parent_of=parents.get)


def executor_document(**fields):
    return {"apiVersion": API, "kind": "Clusterctl", "metadata": {"name": "cctl"}, **fields}


def phase_document(cluster=T):
    return {"apiVersion": API, "kind": "Phase", "metadata": {"name": "cctl-phase", "clusterName": cluster},
            "config": {"executorRef": {"apiVersion": API, "kind": "Clusterctl", "name": "cctl"}}}


def plan(tmp_path, runnable=False, parents=None, **fields):
    documents = inline_documents([phase_document(), executor_document(**fields)], str(tmp_path))
    return build_plan(documents, executors=executors(), inventory=inventory(parents), runnable=runnable)


def command_entry(name, options):
    """A command phase's run entry as the planner makes it."""
    return RunEntry.from_dict({"name": name, "executor": "command", "options": options})


def phase(tmp_path, **fields):
    return plan(tmp_path, **fields).phases[0].phase


@pytest.fixture(name="clusterctl_on_path")
def clusterctl_on_path_fixture(tmp_path, monkeypatch):
    """A clusterctl program first on PATH: validate and run find it."""
    directory = tmp_path / "bin"
    directory.mkdir()
    program = directory / "clusterctl"
    program.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    program.chmod(program.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{directory}{os.pathsep}{os.environ.get('PATH', '')}")
    return program


# ------------------------------------------------------------------ init

@pytest.mark.parametrize("init, argv", [
    (INIT, INIT_ARGV),
    ({"core-provider": "cluster-api:v0.3.7", "bootstrap-providers": "kubeadm:v0.3.7",
      "infrastructure-providers": "metal3:v0.4.0, docker:v0.3.11", "control-plane-providers": "kubeadm:v0.3.7"},
     ["clusterctl", "init", "--core", "cluster-api:v0.3.7", "--bootstrap", "kubeadm:v0.3.7",
      "--control-plane", "kubeadm:v0.3.7", "--infrastructure", "metal3:v0.4.0,docker:v0.3.11"]),
    ({"bootstrap-providers": ["kubeadm:v0.3.7", "talos:v0.2.0"]},
     ["clusterctl", "init", "--bootstrap", "kubeadm:v0.3.7,talos:v0.2.0"]),
    (None, ["clusterctl", "init"]),
], ids=["lists", "comma-separated-strings", "several-of-a-kind", "no-init-options-latest-releases"])
def test_init_runs_clusterctl_init_with_the_providers(tmp_path, init, argv):
    fields = {"action": "init", **({"init-options": init} if init is not None else {})}
    found = phase(tmp_path, **fields)
    assert (found.executor, found.options, found.requires) == ("command", {"argv": argv}, ("clusterctl",))
    assert found.not_runnable is None


def test_providers_with_a_url_images_and_additional_vars_go_into_a_config_file(tmp_path):
    found = phase(tmp_path, action="init", **{"init-options": {"infrastructure-providers": ["my-infra:v1.0.0"]}},
                  providers=[{"name": "my-infra", "type": "InfrastructureProvider",
                              "url": "https://example.com/releases/v1.0.0/infrastructure-components.yaml"},
                             {"name": "local", "type": "BootstrapProvider", "clusterctl-repository": True,
                              "versions": {"v1": "ignored/as/in/airshipctl"},
                              "url": "/srv/repository/bootstrap-local/v1/bootstrap-components.yaml"}],
                  images={"cert-manager": {"repository": "quay.io/jetstack"}},
                  **{"additional-vars": {"CLUSTER_NAME": "target"}, "env-vars": True})
    options = found.options
    assert options["shell"] is True
    assert options["cmd"] == (f'exec clusterctl init --infrastructure my-infra:v1.0.0 --config "${CONFIG}"')
    assert set(options) == {"shell", "cmd", "env_files"}
    assert yaml.safe_load(options["env_files"][CONFIG]) == {
        "providers": [{"name": "my-infra", "url": "https://example.com/releases/v1.0.0/infrastructure-components.yaml",
                       "type": "InfrastructureProvider"},
                      {"name": "local", "url": "/srv/repository/bootstrap-local/v1/bootstrap-components.yaml",
                       "type": "BootstrapProvider"}],
        "images": {"cert-manager": {"repository": "quay.io/jetstack"}},
        "CLUSTER_NAME": "target"}


def test_the_config_file_is_hidden_where_plans_show_options(tmp_path):
    built = plan(tmp_path, action="init", **{"additional-vars": {"AZURE_CLIENT_SECRET": "s3cr3t"}})
    shown = built.phases[0].to_dict(shown=executors())["options"]
    assert shown["env_files"] == {CONFIG: "***"}
    assert "s3cr3t" not in str(shown)


# ------------------------------------------------------------------ move

@pytest.mark.parametrize("move, cmd", [
    ({}, f'exec clusterctl move --kubeconfig "${FROM}" --to-kubeconfig "$KUBECONFIG"'),
    ({"namespace": "target-infra"},
     f'exec clusterctl move --kubeconfig "${FROM}" --to-kubeconfig "$KUBECONFIG" --namespace target-infra'),
], ids=["current-namespace", "namespace"])
def test_move_moves_from_the_parent_to_the_phase_cluster(tmp_path, move, cmd):
    found = phase(tmp_path, action="move", **{"move-options": move})
    assert found.executor == "command" and found.requires == ("clusterctl",)
    assert found.options == {"shell": True, "cmd": cmd, "kubeconfigs": {FROM: "{{ kube_parent }}"}}


def test_move_needs_a_parent_when_validated_but_not_to_be_listed(tmp_path, clusterctl_on_path):
    assert plan(tmp_path, parents={}, action="move").phases[0].phase.executor == "command"
    with pytest.raises(PhasekitError, match=r"\(Phase cctl-phase\) field config.executorRef: kubeconfigs\."
                                            rf"{FROM} is the kubeconfig of the host's kube_parent, and host "
                                            rf"{T} has none: set kube_parent on {T}"):
        plan(tmp_path, runnable=True, parents={}, action="move")
    assert plan(tmp_path, runnable=True, action="move").selected


def test_move_parent_must_be_an_inventory_host(tmp_path, clusterctl_on_path):
    with pytest.raises(PhasekitError, match=rf"host {T} has kube_parent elsewhere, which is not a host"):
        plan(tmp_path, runnable=True, parents={T: "elsewhere"}, action="move")


# ------------------------------------------------------------------ when present

def test_validate_and_run_need_clusterctl_on_path_list_does_not(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert plan(tmp_path, action="init").phases[0].phase.executor == "command"
    with pytest.raises(PhasekitError) as error:
        plan(tmp_path, runnable=True, action="init")
    assert str(error.value) == (
        "plan document 1 (Phase cctl-phase) field config.executorRef: phase cctl-phase runs clusterctl, which is not "
        "on the controller's PATH: install clusterctl where ansible-playbook runs (or add its directory to PATH), "
        "or leave the phase out with plan_skip")


def test_with_clusterctl_on_path_the_phase_validates(tmp_path, clusterctl_on_path):
    assert plan(tmp_path, runnable=True, action="init").selected


# ------------------------------------------------------------------ refused (listed, not runnable)

@pytest.mark.parametrize("fields, field, instead", [
    ({"providers": [{"name": "m", "type": "CoreProvider", "url": "https://x/core-components.yaml",
                     "variable-substitution": False}]},
     "providers[0].variable-substitution", "clusterctl substitutes variables in every provider's components"),
    ({"env-vars": False}, "env-vars", "clusterctl always reads variables from the environment"),
    ({"init-options": {"kubeConfigRef": {"kind": "KubeConfig", "name": "default"}}},
     "init-options.kubeConfigRef", "set kube_kubeconfig on the host"),
], ids=["no-variable-substitution", "no-env-vars", "kubeconfig-ref"])
def test_fields_clusterctl_cannot_honour_make_the_phase_not_runnable(
        tmp_path, clusterctl_on_path, fields, field, instead):
    listed = phase(tmp_path, action="init", **fields)
    assert listed.executor == "airship:Clusterctl"
    with pytest.raises(PhasekitError) as error:
        plan(tmp_path, runnable=True, action="init", **fields)
    message = str(error.value)
    assert message.startswith("plan document 1 (Phase cctl-phase) field config.executorRef: executor Clusterctl "
                              f"cctl (plan document 2) field {field} cannot be honoured by running clusterctl: ")
    assert instead in message
    assert message.endswith("(see docs/migrating-from-airshipctl.md#clusterctl), or leave the phase out with plan_skip")


# ------------------------------------------------------------------ wrong shape: problems of the document

@pytest.mark.parametrize("fields, where, message", [
    ({}, "field action", "missing: expected init or move"),
    ({"action": "delete"}, "field action", "expected init or move (what clusterctl does), got 'delete'"),
    ({"action": "init", "init-options": {"core-provider": ["a:v1", "b:v1"]}}, "field init-options.core-provider",
     "expected one core provider, got 2"),
    ({"action": "init", "init-options": {"bootstrap-providers": [3]}}, "field init-options.bootstrap-providers",
     "expected provider names with versions"),
    ({"action": "init", "init-options": {"core": "x"}}, "field init-options.core", "unknown field"),
    ({"action": "init", "move-options": {"namespace": "x"}}, "field move-options",
     "move-options apply to action move"),
    ({"action": "move", "init-options": INIT}, "field init-options", "init-options apply to action init"),
    ({"action": "move", "move-options": {"namespace": 3}}, "field move-options.namespace", "expected a string"),
    ({"action": "init", "providers": [{"name": "x", "type": "Infra", "url": "https://x"}]},
     "field providers[0].type", "expected one of CoreProvider, BootstrapProvider"),
    ({"action": "init", "providers": [{"name": "x", "type": "CoreProvider"}]}, "field providers[0].url",
     "missing: where clusterctl reads the provider's components"),
    ({"action": "init", "additional-vars": {"providers": "x"}}, "field additional-vars.providers",
     "providers is a key of clusterctl's configuration"),
    ({"action": "init", "additional-vars": {"N": 3}}, "field additional-vars.N", "expected a string, got a number"),
    ({"action": "init", "images": {"cert-manager": "quay.io"}}, "field images.cert-manager",
     "expected a mapping (repository, tag)"),
    ({"action": "init", "image-overrides": {}}, "field image-overrides", "unknown field"),
], ids=["no-action", "unknown-action", "two-core-providers", "provider-not-a-string", "unknown-init-option",
        "move-options-for-init", "init-options-for-move", "namespace-not-a-string", "unknown-provider-type",
        "provider-without-url", "additional-var-named-like-a-config-key", "additional-var-not-a-string",
        "image-not-a-mapping", "unknown-field"])
def test_documents_of_the_wrong_shape_name_the_field(tmp_path, fields, where, message):
    with pytest.raises(PhasekitError) as error:
        plan(tmp_path, **fields)
    assert f"plan document 2 (Clusterctl cctl) {where}: {message}" in str(error.value)


# ------------------------------------------------------------------ converter

def test_converter_writes_clusterctl_phases_as_command_phases(tmp_path):
    documents = inline_documents([phase_document(), executor_document(action="move", **{
        "move-options": {"namespace": "ns"}})], str(tmp_path))
    conversion = convert_documents(documents, executors(), str(tmp_path / "out"))
    assert conversion.phases == ["cctl-phase"] and conversion.not_converted == []
    written = yaml.safe_load(conversion.files["phases.yaml"])
    assert written["spec"] == {"cluster": T, "executor": "command", "options": {
        "shell": True, "cmd": f'exec clusterctl move --kubeconfig "${FROM}" --to-kubeconfig "$KUBECONFIG" '
                              f"--namespace ns",
        "kubeconfigs": {FROM: "{{ kube_parent }}"}}}
    again = build_plan(inline_documents([written], str(tmp_path)), executors=executors(), inventory=inventory())
    assert again.phases[0].phase.options == written["spec"]["options"]


# ------------------------------------------------------------------ run: files and kubeconfigs the command gets

class FakeAccess:
    """Two clusters' resolutions; templates in options rendered with the host's kube_parent."""

    def __init__(self):
        self.configs = {host: {"apiVersion": "v1", "kind": "Config", "current-context": host,
                               "clusters": [], "users": [], "contexts": []} for host in (E, T)}

    def resolution(self, host):
        return type("Resolution", (), {"config": self.configs[host], "namespace": None})()

    def render_options(self, host, options, where):
        return yaml.safe_load(yaml.safe_dump(options).replace("'{{ kube_parent }}'", {T: E}[host]))

    def secrets(self, host):
        return frozenset()


PROBE = """
import os, stat, sys, yaml
env = os.environ
seen = (yaml.safe_load(open(env["KUBECONFIG"]))["current-context"],
        yaml.safe_load(open(env["PHASEKIT_CLUSTERCTL_FROM_KUBECONFIG"]))["current-context"],
        open(env["PHASEKIT_CLUSTERCTL_CONFIG"]).read(),
        {stat.S_IMODE(os.stat(env[name]).st_mode) for name in
         ("KUBECONFIG", "PHASEKIT_CLUSTERCTL_FROM_KUBECONFIG", "PHASEKIT_CLUSTERCTL_CONFIG")})
print(env["PHASEKIT_CLUSTERCTL_FROM_KUBECONFIG"], env["PHASEKIT_CLUSTERCTL_CONFIG"])
sys.exit(0 if seen == ("target-cluster", "ephemeral-cluster", "images: {}\\n", {0o600}) else f"saw {seen}")
"""


def test_a_command_phase_gets_the_parents_kubeconfig_and_its_files(tmp_path):
    options = {"argv": [sys.executable, "-c", PROBE], "kubeconfigs": {FROM: "{{ kube_parent }}"},
               "env_files": {CONFIG: "images: {}\n"}}
    outcome = BuiltinExecutors(FakeAccess())(command_entry("move", options), HostContext(T))
    assert not outcome.failed, outcome.msg
    assert outcome.msg.startswith("rc 0: /") and outcome.details["rc"] == 0


def test_a_kubeconfigs_entry_that_renders_empty_names_the_phase_and_option():
    access = FakeAccess()
    access.render_options = lambda host, options, where: {**options, "kubeconfigs": {FROM: ""}}
    with pytest.raises(PhasekitError, match=rf"phase move on cluster {T}: option kubeconfigs.{FROM} names no host"):
        BuiltinExecutors(access)(command_entry("move", {
            "argv": ["true"], "kubeconfigs": {FROM: "{{ kube_parent }}"}}), HostContext(T))


def test_a_command_phase_in_check_mode_runs_nothing():
    work = BuiltinExecutors(FakeAccess(), check_mode=True)
    outcome = work(command_entry("init", {"argv": ["clusterctl-not-here", "init"]}), HostContext(T))
    assert outcome.skipped and outcome.msg == "commands do not run in a dry run"


# ------------------------------------------------------------------ the command options this relies on

@pytest.mark.parametrize("options, message", [
    ({"kubeconfigs": {"KUBECONFIG": "x"}}, "kubeconfigs: 'KUBECONFIG' is not an environment variable name"),
    ({"env_files": {"1BAD": "x"}}, "env_files: '1BAD' is not an environment variable name"),
    ({"kubeconfigs": {"A": "x"}, "env_files": {"A": "y"}}, "env_files: A is also set by kubeconfigs"),
    ({"kubeconfigs": {"A": ""}}, "kubeconfigs.A: expected an inventory host name"),
    ({"env_files": {"A": 3}}, "env_files.A: expected the text of the file"),
], ids=["not-kubeconfig", "variable-name", "once", "empty-host", "text"])
def test_command_kubeconfigs_and_env_files_are_checked(tmp_path, options, message):
    document = {"apiVersion": "phasekit.dev/v1alpha1", "kind": "Phase", "metadata": {"name": "p"},
                "spec": {"cluster": T, "executor": "command", "options": {"argv": ["true"], **options}}}
    with pytest.raises(PhasekitError, match=r"field spec.options: " + message.replace(".", r"\.")):
        build_plan(inline_documents([document], str(tmp_path)), executors=executors(), inventory=inventory())


def test_a_kubeconfigs_entry_naming_a_group_is_refused_when_validated(tmp_path):
    document = {"apiVersion": "phasekit.dev/v1alpha1", "kind": "Phase", "metadata": {"name": "p"},
                "spec": {"cluster": T, "executor": "command",
                         "options": {"argv": ["true"], "kubeconfigs": {"OTHER": "all"}}}}
    with pytest.raises(PhasekitError, match="kubeconfigs.OTHER: 'all' is not a host of the inventory"):
        build_plan(inline_documents([document], str(tmp_path)), executors=executors(), inventory=inventory(),
                   runnable=True)


# ------------------------------------------------------------------ providers with versions: a clusterctl repository

REPOSITORY = "PHASEKIT_CLUSTERCTL_REPOSITORY"
# the tools make builds for the clusters' Kubernetes version (make units sets PHASEKIT_BIN)
PINNED_KUBECTL = os.environ.get("PHASEKIT_BIN", "")
METADATA = {"apiVersion": "clusterctl.cluster.x-k8s.io/v1alpha3", "kind": "Metadata",
            "metadata": {"name": "repository-metadata", "labels": {"airshipit.org/deploy-k8s": "false"}},
            "releaseSeries": [{"major": 0, "minor": 3, "contract": "v1alpha3"}]}
TWO_PROVIDERS = [
    {"name": "metal3", "type": "InfrastructureProvider", "variable-substitution": True,
     "versions": {"v0.3.2": "function/capm3/v0.3.2", "v0.4.0": "function/capm3/v0.4.0"}},
    {"name": "cluster-api", "type": "CoreProvider", "versions": {"v0.3.7": "function/capi/v0.3.7"}},
]
LAYOUT = {
    "cluster-api/v0.3.7/core-components.yaml": "function/capi/v0.3.7",
    "cluster-api/v0.3.7/metadata.yaml": "function/capi/v0.3.7",
    "infrastructure-metal3/v0.3.2/infrastructure-components.yaml": "function/capm3/v0.3.2",
    "infrastructure-metal3/v0.3.2/metadata.yaml": "function/capm3/v0.3.2",
    "infrastructure-metal3/v0.4.0/infrastructure-components.yaml": "function/capm3/v0.4.0",
    "infrastructure-metal3/v0.4.0/metadata.yaml": "function/capm3/v0.4.0",
}


@pytest.fixture(name="kustomize_on_path")
def kustomize_on_path_fixture(monkeypatch):
    """The pinned kubectl first on PATH when it is there (else the one on PATH) builds the entry points."""
    if PINNED_KUBECTL and os.path.isdir(PINNED_KUBECTL):
        monkeypatch.setenv("PATH", f"{PINNED_KUBECTL}{os.pathsep}{os.environ.get('PATH', '')}")


def entry_point(target, relative, *documents, resources=None):
    """A kustomization at target/relative listing its own documents file (and ``resources``, as given)."""
    directory = target / relative
    directory.mkdir(parents=True)
    (directory / "docs.yaml").write_text(yaml.safe_dump_all(documents), encoding="utf-8")
    listed = ["docs.yaml"] if resources is None else resources
    (directory / "kustomization.yaml").write_text(yaml.safe_dump({"resources": listed}), encoding="utf-8")


def component(name, **labels):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels or {"a": "b"}}}


def site(tmp_path):
    """The entry points of TWO_PROVIDERS under the target path (the inline documents' directory)."""
    for relative in ("function/capm3/v0.3.2", "function/capm3/v0.4.0", "function/capi/v0.3.7"):
        entry_point(tmp_path, relative, component(relative.replace("/", "-").replace(".", "-")), METADATA,
                    component("site-only", **{"airshipit.org/deploy-k8s": "false"}))


FAKE_CLUSTERCTL = """#!{python}
import json, os, sys, yaml
config = yaml.safe_load(open(sys.argv[sys.argv.index("--config") + 1]))
root = os.environ["{repository}"]
seen = {{"urls": {{}}, "files": {{}}, "modes": set()}}
for provider in config["providers"]:
    path = provider["url"][len("file://"):]
    seen["urls"][provider["name"]] = os.path.relpath(path, root)
for top, _dirs, names in os.walk(root):
    for name in names:
        path = os.path.join(top, name)
        seen["files"][os.path.relpath(path, root)] = list(yaml.safe_load_all(open(path)))
        seen["modes"].add(oct(os.stat(path).st_mode & 0o777))
seen["modes"] = sorted(seen["modes"])
seen["root"] = root
json.dump(seen, open({out!r}, "w"))
"""


def test_provider_versions_are_built_into_a_clusterctl_repository_the_config_names(tmp_path, kustomize_on_path,
                                                                                   clusterctl_on_path):
    site(tmp_path)
    listed = phase(tmp_path, action="init", **{"init-options": {"infrastructure-providers": ["metal3:v0.4.0"]}},
                   providers=TWO_PROVIDERS)
    options = listed.options
    assert options["cmd"] == f'exec clusterctl init --infrastructure metal3:v0.4.0 --config "${CONFIG}"'
    assert yaml.safe_load(options["env_files"][CONFIG])["providers"] == [
        {"name": "metal3", "type": "InfrastructureProvider",
         "url": f"file://${{{REPOSITORY}}}/infrastructure-metal3/v0.4.0/infrastructure-components.yaml"},
        {"name": "cluster-api", "type": "CoreProvider",
         "url": f"file://${{{REPOSITORY}}}/cluster-api/v0.3.7/core-components.yaml"}]
    files = options["env_dirs"][REPOSITORY]
    assert {path: spec["kustomize"] for path, spec in files.items()} == {
        path: str(tmp_path / relative) for path, relative in LAYOUT.items()}

    out = tmp_path / "seen.json"
    clusterctl_on_path.write_text(FAKE_CLUSTERCTL.format(python=sys.executable, repository=REPOSITORY, out=str(out)),
                                  encoding="utf-8")
    outcome = BuiltinExecutors(FakeAccess())(command_entry("init", options), HostContext(T))
    assert (outcome.failed, outcome.msg) == (False, "")
    seen = json.loads(out.read_text(encoding="utf-8"))
    assert seen["urls"] == {"metal3": "infrastructure-metal3/v0.4.0/infrastructure-components.yaml",
                            "cluster-api": "cluster-api/v0.3.7/core-components.yaml"}
    assert sorted(seen["files"]) == sorted(LAYOUT)
    assert seen["files"]["infrastructure-metal3/v0.4.0/infrastructure-components.yaml"] == [
        component("function-capm3-v0-4-0")]  # neither the Metadata nor what is labelled deploy-k8s: "false"
    assert seen["files"]["cluster-api/v0.3.7/metadata.yaml"] == [METADATA]
    assert seen["modes"] == ["0o600"]
    assert not os.path.exists(seen["root"])  # removed with the command


def test_a_url_relative_to_the_target_path_is_built_as_the_version_its_last_directory_names(tmp_path):
    """airshipctl's later Clusterctl documents (its published clusterctl_init): url: <entry point>/<version>."""
    providers = [{"name": "metal3", "type": "InfrastructureProvider", "url": "function/capm3/v0.4.0"},
                 {"name": "cluster-api", "type": "CoreProvider", "url": "function/capi/v0.3.7"}]
    options = phase(tmp_path, action="init", providers=providers).options
    assert yaml.safe_load(options["env_files"][CONFIG])["providers"] == [
        {"name": "metal3", "type": "InfrastructureProvider",
         "url": f"file://${{{REPOSITORY}}}/infrastructure-metal3/v0.4.0/infrastructure-components.yaml"},
        {"name": "cluster-api", "type": "CoreProvider",
         "url": f"file://${{{REPOSITORY}}}/cluster-api/v0.3.7/core-components.yaml"}]
    assert {path: spec["kustomize"] for path, spec in options["env_dirs"][REPOSITORY].items()} == {
        path: str(tmp_path / relative) for path, relative in LAYOUT.items() if "v0.3.2" not in path}
    assert options["env_dirs"][REPOSITORY]["cluster-api/v0.3.7/metadata.yaml"]["about"] == (
        "plan document 2 (Clusterctl cctl) field providers[1].url")


def test_a_relative_url_whose_last_directory_is_no_version_names_the_field(tmp_path):
    with pytest.raises(PhasekitError, match=r"field providers\[0\].url: function/capm3/latest: its last directory, "
                                            r"'latest', is the version clusterctl finds it under"):
        plan(tmp_path, action="init", providers=[{"name": "metal3", "type": "InfrastructureProvider",
                                                  "url": "function/capm3/latest"}])


def test_the_plan_and_render_show_the_repository_it_would_build(tmp_path):
    built = plan(tmp_path, action="init", providers=TWO_PROVIDERS)
    shown = built.phases[0].to_dict(shown=executors())["options"]
    assert sorted(shown["env_dirs"][REPOSITORY]) == sorted(LAYOUT)  # nothing secret: paths and filters
    rendered = render_bundles(built)
    assert rendered == [{"phase": "cctl-phase", "cluster": T, "command": built.phases[0].phase.options["cmd"],
                         "directories": {REPOSITORY: {path: str(tmp_path / relative)
                                                      for path, relative in sorted(LAYOUT.items())}}}]


@pytest.mark.parametrize("check_mode, mode", [(False, "validate"), (True, "run")], ids=["validate", "check-mode"])
def test_validate_and_check_mode_build_the_entry_points_and_run_nothing(tmp_path, kustomize_on_path,
                                                                        check_mode, mode):
    site(tmp_path)
    options = phase(tmp_path, action="init", providers=TWO_PROVIDERS).options
    options = {**options, "cmd": "exec clusterctl-must-not-run"}
    outcome = BuiltinExecutors(FakeAccess(), mode=mode, check_mode=check_mode)(
        command_entry("init", options), HostContext(T))
    assert outcome.skipped and outcome.msg == "commands do not run in a dry run"


def broken_site(tmp_path, how):
    site(tmp_path)
    broken = tmp_path / "function/capm3/v0.4.0"
    if how == "broken":
        (broken / "kustomization.yaml").write_text(yaml.safe_dump({"resources": ["gone.yaml"]}), encoding="utf-8")
    elif how == "missing":
        for path in broken.iterdir():
            path.unlink()
        broken.rmdir()
    elif how == "no-metadata":
        (broken / "docs.yaml").write_text(yaml.safe_dump(component("only")), encoding="utf-8")


@pytest.mark.parametrize("how, message", [
    ("broken", r"kustomization .*function/capm3/v0\.4\.0: kubectl kustomize failed: .*gone\.yaml"),
    ("missing", r"no directory .*function/capm3/v0\.4\.0 \(expected a kustomization directory\)"),
    ("no-metadata", r"the build of .*function/capm3/v0\.4\.0 has 0 clusterctl\.cluster\.x-k8s\.io/Metadata "
                    r"documents; expected exactly one"),
], ids=["broken-entry-point", "missing-entry-point", "no-metadata-document"])
def test_an_entry_point_that_does_not_build_fails_validate_naming_the_provider_and_version(
        tmp_path, kustomize_on_path, how, message):
    broken_site(tmp_path, how)
    options = phase(tmp_path, action="init", providers=TWO_PROVIDERS).options
    with pytest.raises(PhasekitError) as error:
        BuiltinExecutors(FakeAccess(), mode="validate")(command_entry("init", options), HostContext(T))
    assert str(error.value).startswith("plan document 2 (Clusterctl cctl) field providers[0].versions.v0.4.0: ")
    assert re.search(message, str(error.value))


@pytest.mark.parametrize("versions, where, message", [
    (["v0.3.2"], "providers[0].versions", "expected a mapping of versions to kustomize entry points"),
    ({"latest": "capm3"}, "providers[0].versions.latest", "expected a semantic version (such as v0.3.7) as key"),
    ({"v0.3.2": 3}, "providers[0].versions.v0.3.2", "expected a kustomize entry point"),
], ids=["not-a-mapping", "not-a-version", "not-a-path"])
def test_versions_of_the_wrong_shape_are_problems(tmp_path, versions, where, message):
    with pytest.raises(PhasekitError, match=re.escape(f"plan document 2 (Clusterctl cctl) field {where}: {message}")):
        plan(tmp_path, action="init", providers=[{"name": "metal3", "type": "InfrastructureProvider",
                                                  "versions": versions}])
