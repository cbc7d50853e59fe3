# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The Ansible glue: precedence table, once-per-run reuse, parent hosts and cycles, shared argument spec."""

from __future__ import annotations

import importlib
import os

import pytest
import yaml

from ansible_collections.phasekit.kube.plugins.module_utils.environ import Environ
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.plugin_utils import kubeconfig as glue

A = "/srv/a.yaml"


def host(**variables):
    return variables.get


CONTROLLER_ENV = {"K8S_AUTH_KUBECONFIG": "controller.yaml", "K8S_AUTH_CONTEXT": "controller", "KUBECONFIG": "k1:k2",
                  "K8S_AUTH_HOST": "https://controller.test"}
PLAY_ENV = Environ(play={"K8S_AUTH_KUBECONFIG": "play.yaml", "K8S_AUTH_CONTEXT": "play", "KUBECONFIG": "p1",
                         "K8S_AUTH_HOST": "https://play.test"}, base=CONTROLLER_ENV)
TASK_ENV = Environ(task={"K8S_AUTH_CONTEXT": "task-env"}, play={"K8S_AUTH_CONTEXT": "play"}, base=CONTROLLER_ENV)
HOST_VARS = {"kube_kubeconfig": A, "kube_context": "own", "kube_host": "https://own.test"}
TASK_ARGS = {"kubeconfig": "task.yaml", "context": "t", "host": "https://task.test"}


# one row per rule of the precedence table: task parameter > host var > environment: keyword > controller environment
# > kubectl default, for the sources, the context and a connection option (host), with the provenance labels
@pytest.mark.parametrize("task, environ, host_vars, expected", [
    (TASK_ARGS, PLAY_ENV, HOST_VARS,
     ([{"path": "task.yaml"}], "task parameter kubeconfig", "t", "task parameter context",
      "https://task.test", "task parameter host")),
    ({}, PLAY_ENV, HOST_VARS,
     ([{"path": A}], "host var kube_kubeconfig of cluster1", "own", "host var kube_context of cluster1",
      "https://own.test", "host var kube_host of cluster1")),
    ({}, PLAY_ENV, {},
     ([{"path": "play.yaml"}], "play environment K8S_AUTH_KUBECONFIG", "play", "play environment K8S_AUTH_CONTEXT",
      "https://play.test", "play environment K8S_AUTH_HOST")),
    ({}, TASK_ENV, {},
     ([{"path": "controller.yaml"}], "controller environment K8S_AUTH_KUBECONFIG", "task-env",
      "task environment K8S_AUTH_CONTEXT", "https://controller.test", "controller environment K8S_AUTH_HOST")),
    ({}, CONTROLLER_ENV, {},
     ([{"path": "controller.yaml"}], "controller environment K8S_AUTH_KUBECONFIG", "controller",
      "controller environment K8S_AUTH_CONTEXT", "https://controller.test", "controller environment K8S_AUTH_HOST")),
    ({}, Environ(play={"KUBECONFIG": "p1"}, base={"KUBECONFIG": "k1"}), {},
     ([{"env": "KUBECONFIG"}], "kubectl default ($KUBECONFIG from the play environment)", None, "current-context",
      None, None)),
    ({}, {"KUBECONFIG": "k1:k2"}, {},
     ([{"env": "KUBECONFIG"}], "kubectl default ($KUBECONFIG)", None, "current-context", None, None)),
    ({}, {}, {}, ([{"path": "~/.kube/config"}], "kubectl default (~/.kube/config)", None, "current-context", None, None)),
    ({"kubeconfig": None, "context": "", "host": ""}, {"K8S_AUTH_CONTEXT": "", "K8S_AUTH_HOST": ""},
     {"kube_kubeconfig": [], "kube_context": "h", "kube_host": ""},
     ([{"path": "~/.kube/config"}], "kubectl default (~/.kube/config)", "h", "host var kube_context of cluster1",
      None, None)),
    ({}, CONTROLLER_ENV, {"kube_context": "own"},
     ([{"path": "controller.yaml"}], "controller environment K8S_AUTH_KUBECONFIG", "own",
      "host var kube_context of cluster1", "https://controller.test", "controller environment K8S_AUTH_HOST")),
    ({"context": "t"}, {"K8S_AUTH_KUBECONFIG": "env.yaml"}, {},
     ([{"path": "env.yaml"}], "controller environment K8S_AUTH_KUBECONFIG", "t", "task parameter context", None, None)),
], ids=["task-parameter-beats-everything", "host-var-beats-environment", "play-environment-beats-controller",
        "task-environment-beats-play-each-variable", "controller-environment-fills-unset", "kubectl-default-play-KUBECONFIG",
        "kubectl-default-controller-KUBECONFIG", "kubectl-default-home", "empty-values-are-unset",
        "environment-fills-what-the-host-leaves-unset", "sources-and-context-chosen-separately"])
def test_precedence(task, environ, host_vars, expected):
    request = glue.kubeconfig_request("cluster1", host(**host_vars), task, environ)
    assert ([spec.to_dict() for spec in request.sources], request.sources_from, request.context, request.context_from,
            request.connection.get("host"), request.connection.origin("host")) == expected


@pytest.mark.parametrize("environ, host_vars, overridden", [
    (CONTROLLER_ENV, HOST_VARS, [("K8S_AUTH_CONTEXT", "controller environment", "kube_context"),
                                 ("K8S_AUTH_HOST", "controller environment", "kube_host"),
                                 ("K8S_AUTH_KUBECONFIG", "controller environment", "kube_kubeconfig")]),
    (PLAY_ENV, {"kube_context": "own"}, [("K8S_AUTH_CONTEXT", "play environment", "kube_context")]),
    (CONTROLLER_ENV, {}, []),
    ({"KUBECONFIG": "k1"}, HOST_VARS, []),
    ({}, HOST_VARS, []),
], ids=["controller-values-beaten-by-host-vars", "play-value-beaten-by-host-var", "nothing-beaten-without-host-vars",
        "KUBECONFIG-stays-below-host-vars-unsaid", "nothing-set-nothing-beaten"])
def test_overridden_environment_values_are_named(environ, host_vars, overridden):
    request = glue.kubeconfig_request("cluster1", host(**host_vars), {}, environ)
    assert sorted((item.variable, item.origin, item.host_var) for item in request.overridden) == overridden


def test_a_task_parameter_overrides_nothing_to_warn_about():
    request = glue.kubeconfig_request("cluster1", host(**HOST_VARS), TASK_ARGS, CONTROLLER_ENV)
    assert request.overridden == ()


@pytest.mark.parametrize("environ, host_vars, complete, server_from", [
    ({"K8S_AUTH_HOST": "https://env.test", "K8S_AUTH_API_KEY": "t0ken"}, {}, True, "controller environment K8S_AUTH_HOST"),
    ({"K8S_AUTH_HOST": "https://env.test", "K8S_AUTH_API_KEY": "t0ken"}, {"kube_host": "https://own.test"}, True,
     "host var kube_host of cluster1"),
    ({"K8S_AUTH_HOST": "https://env.test"}, {"kube_api_key": "t0ken"}, True, "controller environment K8S_AUTH_HOST"),
    ({"K8S_AUTH_API_KEY": "t0ken"}, {"kube_context": "own"}, False, None),
], ids=["environment-complete-connection", "host-var-server-with-environment-token",
        "environment-server-with-host-var-token", "token-alone-is-not-complete"])
def test_complete_connection_by_the_new_precedence(environ, host_vars, complete, server_from):
    request = glue.kubeconfig_request("cluster1", host(**host_vars), {}, environ)
    assert (request.connection.complete, request.connection.origin("host")) == (complete, server_from)


@pytest.mark.parametrize("task, host_vars, message", [
    ({"kubeconfig": {"file": "x"}}, {}, "task parameter kubeconfig, source 1: a source needs exactly one of"),
    ({}, {"kube_kubeconfig": [{"path": "a"}, {"nope": 1}]}, "host var kube_kubeconfig of cluster1, source 2:"),
    ({}, {"kube_context": ["a"]}, "host var kube_context of cluster1: expected a context name"),
    ({}, {"kube_cluster": 3}, "host var kube_cluster: expected a cluster name"),
], ids=["task-source", "host-source", "context-type", "cluster-type"])
def test_request_errors_name_the_setting(task, host_vars, message):
    with pytest.raises(PhasekitError, match=message):
        glue.kubeconfig_request("cluster1", host(**host_vars), task, {})


def inline(context="x", cluster="c", user="u", token="tok-s3cr3t"):
    return {"clusters": [{"name": cluster, "cluster": {"server": f"https://{cluster}.test"}}],
            "users": [{"name": user, "user": {"token": token}}],
            "contexts": [{"name": context, "context": {"cluster": cluster, "user": user}}]}


def test_remembered_resolution_is_reused_only_for_the_same_request(tmp_path):
    vault_file = str(tmp_path / "k.vault")
    (tmp_path / "k.vault").write_text("$ANSIBLE_VAULT;1.1;AES256\n3132\n")
    sources = {"vault": vault_file}
    first = glue.HostResolver(FakeLoader({vault_file: yaml.safe_dump(inline())}), None, {}).resolve(
        "h", host(kube_kubeconfig=sources, kube_context="x"), {})
    assert not first.reused
    registered = {"changed": False, glue.RESOLUTION_KEY: first.to_memory()}
    undecryptable = glue.HostResolver(FakeLoader({}), None, {})  # reading the source again would fail
    same = host(kube_kubeconfig=sources, kube_context="x", phasekit_kube_resolved=registered)
    reused = undecryptable.resolve("h", same, {})
    assert reused.reused and reused.config == first.config and reused.provenance == first.provenance
    with pytest.raises(PhasekitError, match="cannot decrypt the vault file"):
        undecryptable.resolve("h", same, {"context": "y"})
    with pytest.raises(PhasekitError, match="cannot decrypt the vault file"):
        undecryptable.resolve("h", same, {}, keep_merged=True)


def test_reuse_still_checks_kube_cluster():
    resolver = glue.HostResolver(loader=None, hostvars=None, environ={})
    first = resolver.resolve("h", host(kube_kubeconfig=inline()), {"context": "x"})
    registered = {glue.RESOLUTION_KEY: first.to_memory()}
    with pytest.raises(PhasekitError, match="uses cluster 'c', but kube_cluster expects 'd'"):
        resolver.resolve("h", host(kube_kubeconfig=inline(), kube_cluster="d", phasekit_kube_resolved=registered),
                         {"context": "x"})


class FakeHostVars(dict):
    """hostvars as Ansible hands it to plugins: host name -> that host's (templated) variables."""


def test_parent_cycle_is_detected_before_any_cluster_is_contacted():
    hostvars = FakeHostVars({
        "a": {"kube_kubeconfig": {"secret": {"name": "a-kubeconfig"}}, "kube_parent": "b", "kube_context": "a"},
        "b": {"kube_kubeconfig": {"secret": {"name": "b-kubeconfig", "host": "a"}}, "kube_context": "b"},
    })
    resolver = glue.HostResolver(loader=None, hostvars=hostvars, environ={})
    with pytest.raises(PhasekitError, match=r"parent cycle: a -> b -> a"):
        resolver.resolve("a", host(**hostvars["a"]), {})


@pytest.mark.parametrize("hostvars, message", [
    ({"a": {"kube_kubeconfig": {"secret": {"name": "s"}}}},
     r"kubeconfig source 1 \(secret: default/s key value in kube_parent\): no cluster host to read the Secret from: "
     r"set host in the source or kube_parent for a"),
    ({"a": {"kube_kubeconfig": {"secret": {"name": "s"}}, "kube_parent": "ghost"}}, "host 'ghost' is not in the inventory"),
    ({"a": {"kube_kubeconfig": {"secret": {"name": "s"}}, "kube_parent": "p"},
      "p": {"kube_kubeconfig": {"content": "contexts: []"}, "kube_context": "p"}},
     r"secret: .*: context 'p' is not defined by any kubeconfig source"),
], ids=["no-parent", "unknown-parent", "parent-fails-to-resolve"])
def test_secret_source_parent_errors(hostvars, message):
    resolver = glue.HostResolver(loader=None, hostvars=FakeHostVars(hostvars), environ={})
    with pytest.raises(PhasekitError, match=message):
        resolver.resolve("a", host(**hostvars["a"]), {}, )


def test_parent_resolution_is_reused_from_its_registered_variable():
    parent_sources = inline("p", "pc", "pu")
    first = glue.HostResolver(None, None, {}).resolve("p", host(kube_kubeconfig=parent_sources, kube_context="p"), {})
    hostvars = FakeHostVars({"p": {"kube_kubeconfig": parent_sources, "kube_context": "p",
                                   "phasekit_kube_resolved": {glue.RESOLUTION_KEY: first.to_memory()}}})
    resolution = glue.HostResolver(None, hostvars, {}).resolve_other_host("p", requested_by="child")
    assert resolution.reused and resolution.server == "https://pc.test"


class FakeLoader:
    """DataLoader.get_text_file_contents over a dict of decrypted files."""

    def __init__(self, files):
        self.files = files

    def get_text_file_contents(self, path):
        from ansible.errors import AnsibleError

        if path not in self.files:
            raise AnsibleError("Decryption failed (no vault secrets were found that could decrypt)")
        return self.files[path]


def test_vault_source_reads_through_the_loader(tmp_path):
    vault_file = tmp_path / "k.vault"
    vault_file.write_text("$ANSIBLE_VAULT;1.1;AES256\n...")
    resolver = glue.HostResolver(FakeLoader({str(vault_file): yaml.safe_dump(inline())}), None, {})
    resolution = resolver.resolve("h", host(kube_kubeconfig={"vault": str(vault_file)}, kube_context="x"), {})
    assert resolution.provenance["context"] == {"index": 1, "kind": "vault", "location": str(vault_file)}
    with pytest.raises(PhasekitError, match=r"kubeconfig source 1 \(vault: .*\): cannot decrypt the vault file: "
                                            r"Decryption failed"):
        glue.HostResolver(FakeLoader({}), None, {}).resolve(
            "h", host(kube_kubeconfig={"vault": str(vault_file)}), {})
    with pytest.raises(PhasekitError, match=r"kubeconfig source 1 \(vault: .*absent\): no such file"):
        resolver.resolve("h", host(kube_kubeconfig={"vault": str(tmp_path / "absent")}), {})


def test_to_plain_turns_tagged_values_into_builtins():
    from ansible.utils.unsafe_proxy import wrap_var

    plain = glue.to_plain(wrap_var({"k": ["a", 1, True, None, 1.5]}))
    assert plain == {"k": ["a", 1, True, None, 1.5]}
    assert plain["k"][0].__class__ is str and next(iter(plain)).__class__ is str


def _doc_options(module_path: str, attribute="DOCUMENTATION") -> dict:
    module = importlib.import_module(module_path)
    return yaml.safe_load(getattr(module, attribute))["options"]


def test_doc_fragment_documents_the_shared_argument_spec():
    options = {}
    for name in ("kubeconfig", "connection"):
        fragment = importlib.import_module(f"ansible_collections.phasekit.kube.plugins.doc_fragments.{name}")
        options.update(yaml.safe_load(fragment.ModuleDocFragment.DOCUMENTATION)["options"])
    shown = ("type", "aliases", "elements")
    assert {name: {key: spec[key] for key in shown if key in spec} for name, spec in options.items()} == {
        name: {key: spec[key] for key in shown if key in spec} for name, spec in glue.AUTH_ARGUMENT_SPEC.items()}


def test_action_argument_spec_matches_its_documentation():
    action = importlib.import_module("ansible_collections.phasekit.kube.plugins.action.kubeconfig")
    options = _doc_options("ansible_collections.phasekit.kube.plugins.modules.kubeconfig")
    own = {name: spec for name, spec in action.ARGUMENT_SPEC.items() if name not in glue.AUTH_ARGUMENT_SPEC}
    assert {name: {key: value for key, value in spec.items() if key in ("type", "default")}
            for name, spec in options.items()} == own


def test_default_source_follows_the_environment(monkeypatch):
    monkeypatch.setenv("KUBECONFIG", "x:y")
    assert glue.kubectl_default_sources(os.environ)[0][0].to_dict() == {"env": "KUBECONFIG"}


@pytest.mark.parametrize("registered", [
    {glue.RESOLUTION_KEY: {"config": {"apiVersion": "v1", "kind": "Config"}}},
    {glue.RESOLUTIONS_KEY: {"h": {"config": {"apiVersion": "v1", "kind": "Config"}}}},
], ids=["one-host", "by-host"])
def test_a_remembered_resolution_is_plain_data(registered):
    """A registered result holds Ansible's unsafe text before 2.19; what is reused is written as YAML later."""
    from ansible.utils.unsafe_proxy import wrap_var  # pylint: disable=import-outside-toplevel
    remembered = glue.remembered_resolution(lambda name: wrap_var(registered), "h")
    assert yaml.safe_dump(remembered) and next(iter(remembered["config"])).__class__ is str
