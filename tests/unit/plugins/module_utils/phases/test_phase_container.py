"""The container executor and airshipctl's GenericContainer documents as container phases, one rule per row.

The images run on the local clusters in tests/integration/test_airshipctl_published.py; here the engine is a fake
that records what it was given."""

from __future__ import annotations

import json
import os
import sys

import pytest
import yaml

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.running.builtin import BuiltinExecutors
from ansible_collections.phasekit.kube.plugins.module_utils.running.runner import HostContext
from ansible_collections.phasekit.kube.plugins.module_utils.planning.container import (
    check_container_options, container_argv, container_engine, mount_argument, output_items, resource_list,
    run_container, write_output)
from ansible_collections.phasekit.kube.plugins.module_utils.planning.documents import inline_documents
from ansible_collections.phasekit.kube.plugins.module_utils.planning.inventory import Inventory
from ansible_collections.phasekit.kube.plugins.module_utils.planning.planner import RunEntry, build_plan
from ansible_collections.phasekit.kube.plugins.plugin_utils.plan import executors

API = "airshipit.org/v1alpha1"
E = "ephemeral-cluster"
KUBECONFIG = {"apiVersion": "v1", "kind": "Config", "current-context": "ctx",
              "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:6443"}}],
              "users": [{"name": "u", "user": {"token": "secret-token"}}],
              "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}]}


# ------------------------------------------------------------------ the engine's command line

@pytest.mark.parametrize("options, expected", [
    ({"image": "i"}, ["--rm", "-i", "--name", "n", "i"]),
    ({"image": "i", "network": "host", "user": "controller"},
     ["--rm", "-i", "--name", "n", "--network", "host", "--user", f"{os.getuid()}:{os.getgid()}", "i"]),
    ({"image": "i", "network": "none", "privileged": True, "command": ["/bin/sh", "-c", "echo"]},
     ["--rm", "-i", "--name", "n", "--network", "none", "--privileged", "i", "/bin/sh", "-c", "echo"]),
    ({"image": "i", "env": {"A": "1", "FROM_CONTROLLER": None, "UNSET": None}},
     ["--rm", "-i", "--name", "n", "-e", "A=1", "-e", "FROM_CONTROLLER=here", "-e", "UNSET=", "i"]),
    ({"image": "i", "mounts": [{"type": "bind", "src": "/srv/images", "dst": "/config", "rw": True}]},
     ["--rm", "-i", "--name", "n", "--mount", "type=bind,source=/srv/images,target=/config", "i"]),
], ids=["defaults", "krm-host-network-as-the-controllers-user", "airship-privileged-with-its-command",
        "env-values-and-the-controllers", "read-write-mount"])
def test_container_argv(options, expected):
    argv = container_argv("podman", options, name="n", kubeconfig=None, context=None, mounts_base="/base",
                          environ={"FROM_CONTROLLER": "here"})
    assert argv == ["podman", "run", *expected]


def test_the_clusters_kubeconfig_is_mounted_read_only_with_kubeconfig_and_context_set():
    argv = container_argv("podman", {"image": "i"}, name="n", kubeconfig="/tmp/p/kubeconfig", context="target",
                          mounts_base="/base")
    assert argv[argv.index("--mount") + 1] == "type=bind,source=/tmp/p/kubeconfig,target=/kubeconfig,readonly"
    assert ["-e", "KUBECONFIG=/kubeconfig"] == argv[argv.index("-e"):argv.index("-e") + 2]
    assert "KCTL_CONTEXT=target" in argv


@pytest.mark.parametrize("mount, expected", [
    ({"type": "bind", "src": "relative/dir", "dst": "/d"}, "type=bind,source=/base/relative/dir,target=/d,readonly"),
    ({"type": "bind", "src": "~/.airship", "dst": "/workdir", "rw": True},
     f"type=bind,source={os.path.expanduser('~/.airship')},target=/workdir"),
    ({"type": "volume", "src": "cache", "dst": "/cache"}, "type=volume,source=cache,target=/cache,readonly"),
    ({"type": "tmpfs", "dst": "/scratch"}, "type=tmpfs,target=/scratch"),
], ids=["relative-under-the-base", "tilde-is-the-controller-users-home", "named-volume", "tmpfs"])
def test_mounts(mount, expected):
    assert mount_argument(mount, "/base") == expected


@pytest.mark.parametrize("which, choice, found", [
    ({"podman": "/usr/bin/podman", "docker": "/usr/bin/docker"}, "auto", "/usr/bin/podman"),
    ({"docker": "/usr/bin/docker"}, "auto", "/usr/bin/docker"),
    ({"podman": "/usr/bin/podman", "docker": "/usr/bin/docker"}, "docker", "/usr/bin/docker"),
], ids=["podman-first", "docker-else", "named"])
def test_the_engine_is_podman_else_docker(which, choice, found):
    assert container_engine(choice, which=which.get) == found


def test_no_engine_is_an_error_naming_both():
    with pytest.raises(PhasekitError, match="no container engine: podman or docker is not on the controller's PATH"):
        container_engine("auto", which=lambda name: None)


# ------------------------------------------------------------------ input and output

def test_the_documents_go_in_as_a_resource_list_with_the_function_config():
    text = resource_list([{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}],
                         {"apiVersion": "v1", "kind": "ConfigMap", "data": {"script": "echo"}})
    body = json.loads(text)
    assert (body["apiVersion"], body["kind"]) == ("config.kubernetes.io/v1alpha1", "ResourceList")
    assert body["items"][0]["metadata"]["annotations"] == {"config.kubernetes.io/index": "0",
                                                           "internal.config.kubernetes.io/index": "0"}
    assert body["functionConfig"]["data"] == {"script": "echo"}
    assert yaml.safe_load(text) == body                                       # JSON: a YAML any function reads


@pytest.mark.parametrize("stdout, names", [
    ("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- {kind: ConfigMap, metadata: {name: a}}\n",
     ["a"]),
    ("kind: ConfigMap\nmetadata: {name: a}\n---\nkind: Secret\nmetadata: {name: b}\n", ["a", "b"]),
    ("", []),
], ids=["resource-list", "plain-documents", "nothing"])
def test_the_output_is_a_resource_lists_items_or_the_documents(stdout, names):
    assert [item["metadata"]["name"] for item in output_items(stdout)] == names


def test_output_files_go_where_their_path_annotations_say_or_are_named_after_the_object(tmp_path):
    annotations = {"config.kubernetes.io/path": "x/s.yaml", "config.kubernetes.io/index": "0"}
    items = [{"kind": "Secret", "metadata": {"name": "s", "annotations": annotations}},
             {"kind": "ConfigMap", "metadata": {"name": "c"}}]
    written = write_output(items, str(tmp_path))
    assert written == [str(tmp_path / "configmap_c.yaml"), str(tmp_path / "x" / "s.yaml")]
    assert yaml.safe_load((tmp_path / "x" / "s.yaml").read_text()) == {"kind": "Secret", "metadata": {"name": "s"}}
    with pytest.raises(PhasekitError, match="names a path outside"):
        write_output([{"kind": "C", "metadata": {"name": "x", "annotations": {
            "config.kubernetes.io/path": "../escape.yaml"}}}], str(tmp_path / "out"))


@pytest.mark.parametrize("options, message", [
    ({"config": "- a list"}, "config: expected a mapping"),
    ({"mounts": [{"type": "bind", "dst": "/d"}]}, "mounts[1]: a bind mount needs src"),
    ({"env": {"A=B": "x"}}, "env: 'A=B' is not an environment variable name"),
    ({"timeout": 0}, "timeout must be a number of seconds > 0"),
], ids=["config-not-a-mapping", "bind-without-source", "bad-env-name", "zero-timeout"])
def test_options_the_spec_cannot_judge(options, message):
    with pytest.raises(PhasekitError) as error:
        check_container_options({"image": "i", **options})
    assert message in str(error.value)


# ------------------------------------------------------------------ a run, with a fake engine

FAKE_ENGINE = """#!{python}
import json, os, sys
argv = sys.argv[1:]
if argv[0] == "rm":
    open({record!r} + ".rm", "w").write(" ".join(argv))
    sys.exit(0)
mounts = [argv[i + 1] for i, word in enumerate(argv) if word == "--mount"]
kubeconfig = dict(part.split("=", 1) for part in mounts[0].split(",") if "=" in part)["source"]
seen = {{"argv": argv, "stdin": json.load(sys.stdin), "kubeconfig": open(kubeconfig).read(),
        "mode": oct(os.stat(kubeconfig).st_mode & 0o777), "path": kubeconfig}}
json.dump(seen, open({record!r}, "w"))
if "sleep" in argv:
    import time; time.sleep(30)
if "fail" in argv:
    print("something went wrong", file=sys.stderr)
    sys.exit(3)
print("apiVersion: config.kubernetes.io/v1\\nkind: ResourceList\\nitems:\\n- kind: ConfigMap\\n  metadata: {{name: made}}")
"""


@pytest.fixture(name="engine")
def engine_fixture(tmp_path, monkeypatch):
    record = tmp_path / "seen.json"
    fake = tmp_path / "bin" / "podman"
    fake.parent.mkdir()
    fake.write_text(FAKE_ENGINE.format(python=sys.executable, record=str(record)))
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    return record


def test_a_run_gives_the_engine_the_documents_and_a_private_kubeconfig_removed_afterwards(engine):
    done = run_container({"image": "img", "config": "apiVersion: v1\nkind: ConfigMap\ndata: {script: ls}\n"},
                         [{"kind": "ConfigMap", "metadata": {"name": "in"}}], kubeconfig=KUBECONFIG,
                         context="ctx", mounts_base="/", timeout=20)
    seen = json.loads(engine.read_text())
    assert done.rc == 0 and [item["metadata"]["name"] for item in done.items] == ["made"]
    assert seen["stdin"]["items"][0]["metadata"]["name"] == "in"
    assert seen["stdin"]["functionConfig"]["data"] == {"script": "ls"}
    assert yaml.safe_load(seen["kubeconfig"])["current-context"] == "ctx" and seen["mode"] == "0o600"
    assert not os.path.exists(seen["path"])
    assert "KCTL_CONTEXT=ctx" in seen["argv"] and seen["argv"][-1] == "img"


def container_entry(options):
    """A container phase's run entry as the planner makes it."""
    return RunEntry.from_dict({"name": "c", "executor": "container", "options": options})


def test_a_failed_container_is_a_failed_phase_with_its_last_words(engine):
    access = FakeAccess()
    outcome = BuiltinExecutors(access)(container_entry({"image": "img", "command": ["fail"]}), HostContext(E))
    assert outcome.failed and outcome.msg == "container img exited with rc 3: something went wrong"
    assert "secret-token" not in outcome.msg


def test_a_container_past_its_timeout_is_removed(engine):
    with pytest.raises(PhasekitError, match="container img did not finish within 1s and was removed"):
        run_container({"image": "img", "command": ["sleep"]}, [], kubeconfig=KUBECONFIG, context="ctx",
                      mounts_base="/", timeout=1)
    assert open(f"{engine}.rm").read().startswith("rm -f phasekit-")


def test_the_output_is_written_to_output_dir_or_returned(engine, tmp_path):
    executors_ = BuiltinExecutors(FakeAccess())
    shown = executors_(container_entry({"image": "img"}), HostContext(E))
    assert shown.details["output"] == [{"kind": "ConfigMap", "metadata": {"name": "made"}}]
    written = executors_(container_entry({"image": "img", "output_dir": str(tmp_path / "sink")}), HostContext(E))
    assert written.details["files"] == [str(tmp_path / "sink" / "configmap_made.yaml")]


def test_a_dry_run_runs_no_container(engine):
    validate = BuiltinExecutors(FakeAccess(), mode="validate")
    outcome = validate(container_entry({"image": "img"}), HostContext(E))
    assert outcome.skipped and not engine.exists()


class FakeResolution:
    config = KUBECONFIG
    context = "ctx"
    namespace = "default"


class FakeAccess:
    def resolution(self, host):
        return FakeResolution()

    def secrets(self, host):
        return frozenset()


# ------------------------------------------------------------------ airshipctl's GenericContainer documents

def generic_container(name="gc", *, spec=None, **fields):
    return {"apiVersion": API, "kind": "GenericContainer", "metadata": {"name": name},
            "spec": {"image": "localhost/toolbox", **(spec or {})}, **fields}


def phase(name="p", executor="gc", cluster=E, entry=None, **config):
    metadata = {"name": name, **({"clusterName": cluster} if cluster else {})}
    return {"apiVersion": API, "kind": "Phase", "metadata": metadata,
            "config": {"executorRef": {"apiVersion": API, "kind": "GenericContainer", "name": executor},
                       **({"documentEntryPoint": entry} if entry else {}), **config}}


SCRIPT = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "script"}, "data": {"script": "ls"}}


def plan(tmp_path, *documents, **selection):
    inventory = Inventory(groups={"all": [E], "ungrouped": [E]}, parent_of=lambda host: None,
                          has_kubeconfig=lambda host: True)
    return build_plan(inline_documents(list(documents), str(tmp_path)), executors=executors(), inventory=inventory,
                      **selection)


@pytest.mark.parametrize("container, options", [
    (generic_container(spec={"type": "krm", "hostNetwork": True, "timeout": 60},
                       configRef={"apiVersion": "v1", "kind": "ConfigMap", "name": "script"}),
     {"image": "localhost/toolbox", "network": "host", "user": "controller", "timeout": 60, "config": SCRIPT}),
    (generic_container(spec={"type": "krm"}, config="apiVersion: v1\nkind: ConfigMap\n"),
     {"image": "localhost/toolbox", "network": "none", "user": "controller",
      "config": "apiVersion: v1\nkind: ConfigMap\n"}),
    (generic_container(spec={"type": "airship", "airship": {"privileged": True, "cmd": ["/bin/bash", "-c", "x"],
                                                            "containerRuntime": "docker"},
                             "timeout": 60, "envVars": ["IMAGE_TYPE=iso", "http_proxy"],
                             "mounts": [{"type": "bind", "src": "/srv/images", "dst": "/config", "rw": True}]}),
     {"image": "localhost/toolbox", "command": ["/bin/bash", "-c", "x"], "privileged": True,
      "env": {"IMAGE_TYPE": "iso", "http_proxy": None},
      "mounts": [{"type": "bind", "dst": "/config", "rw": True, "src": "/srv/images"}]}),
    (generic_container(spec={"hostNetwork": True}), {"image": "localhost/toolbox", "network": "host"}),
], ids=["krm-with-config-ref-host-network-and-timeout", "krm-without-network", "airship-ignores-the-timeout",
        "no-type-is-airship"])
def test_generic_containers_become_container_phases(tmp_path, container, options):
    found = plan(tmp_path, phase(), container, SCRIPT).phases[0].phase
    assert (found.executor, found.options) == ("container", options)
    assert found.requires == (("podman", "docker"),)


def test_the_sink_is_under_the_entry_point_directory_and_the_entry_points_documents_are_the_source(tmp_path):
    (tmp_path / "encrypted" / "get").mkdir(parents=True)
    found = plan(tmp_path, phase(entry="encrypted/get"),
                 generic_container(spec={"type": "krm", "sinkOutputDir": "./"}, config="kind: ConfigMap\n")
                 ).phases[0].phase
    assert found.options["output_dir"] == str(tmp_path) and found.source_path == str(tmp_path / "encrypted" / "get")


@pytest.mark.parametrize("documents, why", [
    ([phase(cluster=None), generic_container()], "runs on no cluster (the phase has no metadata.clusterName)"),
    ([phase(siteWideKubeconfig=True), generic_container()],
     "field config.siteWideKubeconfig: a container here gets the kubeconfig of its own cluster only"),
    ([phase(), generic_container(configRef={"kind": "ConfigMap", "name": "missing"})],
     "field configRef names no ConfigMap 'missing' among the phase documents"),
], ids=["no-cluster", "site-wide-kubeconfig", "config-ref-to-nothing"])
def test_container_phases_that_cannot_run_here_are_listed_and_refused(tmp_path, documents, why):
    listed = plan(tmp_path, *documents).phases[0].phase
    assert listed.executor == "airship:GenericContainer" and why in listed.not_runnable
    with pytest.raises(PhasekitError, match="docs/migrating-from-airshipctl.md#genericcontainer"):
        plan(tmp_path, *documents, runnable=True)


@pytest.mark.parametrize("container, where, message", [
    (generic_container(spec={"type": "docker"}), "spec.type", "expected krm or airship"),
    (generic_container(spec={"airship": {"containerRuntime": "containerd"}}), "spec.airship.containerRuntime",
     "airshipctl runs airship containers with docker only, got 'containerd'"),
    (generic_container(spec={"envVars": [""]}), "spec.envVars[0]", "expected NAME=value or NAME"),
    (generic_container(spec={"mounts": [{"type": "nfs", "src": "x", "dst": "/x"}]}), "spec.mounts[0].type",
     "expected one of bind, volume, tmpfs"),
    (generic_container(spec={"image": None}), "spec.image", "expected the image to run, got nothing"),
    (generic_container(spec={"entrypoint": ["x"]}), "spec.entrypoint", "unknown field"),
], ids=["unknown-type", "other-runtime", "empty-env", "unknown-mount-type", "no-image", "unknown-field"])
def test_generic_containers_of_the_wrong_shape_name_the_field(tmp_path, container, where, message):
    with pytest.raises(PhasekitError) as error:
        plan(tmp_path, phase(), container)
    assert f"plan document 2 (GenericContainer gc) field {where}: {message}" in str(error.value)


def test_without_an_engine_validate_fails_naming_the_phase_and_what_is_missing(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(PhasekitError) as error:
        plan(tmp_path, phase(), generic_container(), runnable=True)
    assert str(error.value) == ("plan document 1 (Phase p) field config.executorRef: phase p needs podman or docker, "
                                "neither of which is on the controller's PATH: install podman or docker where "
                                "ansible-playbook runs (or add its directory to PATH), or leave the phase out with "
                                "plan_skip")
    assert plan(tmp_path, phase(), generic_container()).phases[0].phase.executor == "container"   # list: fine
