# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""GenericContainer phases (airshipctl's documents) run as container phases with podman on the controller, on the
local clusters: a krm function with envVars, a read-write bind mount, the cluster's kubeconfig and its output
written to sinkOutputDir; an airship container, privileged, with its own command; a timeout that removes the
container; and validate without a container engine, which names the phase and what is missing."""

from __future__ import annotations

from pathlib import Path

import yaml
from test_airshipctl_published import toolbox_image  # noqa: F401  pylint: disable=unused-import

AIRSHIP = "airshipit.org/v1alpha1"
PLAYBOOK = "- ansible.builtin.import_playbook: phasekit.kube.run\n"


def script(name: str, text: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"script": text}}


def container(name: str, spec: dict, **fields) -> dict:
    return {"apiVersion": AIRSHIP, "kind": "GenericContainer", "metadata": {"name": name},
            "spec": {"image": "localhost/toolbox", **spec}, **fields}


def phase(name: str, executor: str, entry: str | None = None) -> dict:
    config = {"executorRef": {"apiVersion": AIRSHIP, "kind": "GenericContainer", "name": executor}}
    if entry:
        config["documentEntryPoint"] = entry
    return {"apiVersion": AIRSHIP, "kind": "Phase", "metadata": {"name": name, "clusterName": "target-cluster"},
            "config": config}


def site(root: Path, shared: Path, clusters) -> Path:
    (root / "apps").mkdir(parents=True)
    (root / "apps" / "objects.yaml").write_text(yaml.safe_dump_all([
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "one"}, "data": {"a": "1"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "two"}, "data": {"b": "2"}}]))
    mount = {"type": "bind", "src": str(shared), "dst": "/out", "rw": True}
    documents = [
        script("write", '#!/bin/sh\nset -e\necho "$GREETING $FROM_CONTROLLER" > /out/greeting\n'
                        'kubectl --context "$KCTL_CONTEXT" get --raw /version > /out/version\n'
                        'wc -l < "$RENDERED_BUNDLE_PATH" > /out/bundle-lines\n'),
        script("slow", "#!/bin/sh\nsleep 60\n"),
        container("write-out", {"type": "krm", "hostNetwork": True, "timeout": 120,
                                "envVars": ["GREETING=hello", "FROM_CONTROLLER", "TOOLBOX_ECHO_ITEMS=true"],
                                "mounts": [mount], "sinkOutputDir": "generated"},
                  configRef={"apiVersion": "v1", "kind": "ConfigMap", "name": "write"}),
        container("privileged", {"type": "airship", "airship": {
            "privileged": True, "cmd": ["/bin/sh", "-c", "grep CapEff /proc/self/status > /out/caps"]},
            "mounts": [mount]}),
        container("slow", {"type": "krm", "timeout": 5},
                  configRef={"apiVersion": "v1", "kind": "ConfigMap", "name": "slow"}),
        phase("write-out", "write-out", "apps"),
        phase("privileged", "privileged"),
        phase("slow", "slow"),
        {"apiVersion": AIRSHIP, "kind": "PhasePlan", "metadata": {"name": "features"},
         "phases": [{"name": "write-out"}, {"name": "privileged"}]},
        {"apiVersion": AIRSHIP, "kind": "PhasePlan", "metadata": {"name": "slow"}, "phases": [{"name": "slow"}]},
    ]
    (root / "phases").mkdir()
    (root / "phases" / "site.yaml").write_text(yaml.safe_dump_all(documents))
    inventory = root / "inventory.yml"
    inventory.write_text(yaml.safe_dump({"all": {"vars": {"ansible_connection": "local"}, "hosts": {
        "target-cluster": {"kube_kubeconfig": str(clusters["target"].admin_kubeconfig), "kube_context": "target"}}}}))
    return inventory


def test_generic_containers_run_with_podman_as_airshipctl_ran_them(clusters, run_playbook, tmp_path, toolbox_image):
    shared = tmp_path / "shared"
    shared.mkdir()
    root = tmp_path / "site"
    inventory = site(root, shared, clusters)
    args = ("-e", f"phases={root / 'phases'}")
    # a preview runs no container: it says what it would run
    preview = run_playbook(PLAYBOOK, inventory, *args, "-e", "plan=features", "--check")
    assert preview.rc == 0, preview
    assert "would run container image localhost/toolbox" in preview.output, preview
    assert not list(shared.iterdir()) and not (root / "generated").exists(), preview
    ran = run_playbook(PLAYBOOK, inventory, *args, "-e", "plan=features", env={"FROM_CONTROLLER": "from-afar"})
    assert ran.rc == 0, ran
    assert (shared / "greeting").read_text() == "hello from-afar\n"             # envVars: a value and the controller's
    assert '"gitVersion"' in (shared / "version").read_text()                    # the cluster's kubeconfig and context
    assert int((shared / "bundle-lines").read_text()) >= 2                      # the entry point's documents
    assert {path.name for path in (root / "generated").iterdir()} == {"configmap_one.yaml", "configmap_two.yaml"}
    assert yaml.safe_load((root / "generated" / "configmap_one.yaml").read_text())["data"] == {"a": "1"}
    # privileged: (nearly) every capability, where a container gets a dozen or so by default
    capabilities = int((shared / "caps").read_text().split()[1], 16)
    assert bin(capabilities).count("1") >= 30, (shared / "caps").read_text()

    slow = run_playbook(PLAYBOOK, inventory, *args, "-e", "plan=slow")
    assert slow.rc != 0 and "container localhost/toolbox did not finish within 5s and was removed" in slow.output

    no_engine = run_playbook(PLAYBOOK, inventory, *args, "-e", "plan=features", "-e", "plan_action=validate",
                             "-e", "plan_offline=true", env={"PATH": f"{Path(__file__).parent}:/usr/sbin:/sbin"})
    assert no_engine.rc != 0, no_engine
    assert "(Phase write-out) field config.executorRef: phase write-out needs podman or docker, neither of which is " \
           "on the controller's PATH" in no_engine.output, no_engine
    assert "Traceback" not in preview.output + ran.output + slow.output + no_engine.output
