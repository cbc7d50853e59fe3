# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""airshipctl's own published documents run as airshipctl runs them, on the two local clusters.

The site (tests/fixtures/airshipctl/published) holds airshipctl's shared phases and executors and its gating plan
unchanged (46 phases, 33 plan entries with four phases run several times, pulled in by kustomize with patches on
the plan), reached through the test site's metadata.yaml, with small entry points of the kinds airshipctl's have.
``list``, ``validate`` and a run of every phase whose executor can run here: KubernetesApply (apply), Clusterctl
(a fake clusterctl that applies the providers' components and moves the Cluster objects), GenericContainer
(containers of a toolbox image built from the Debian base, under the name airshipctl's executors use); the
BaremetalManager phases and the containers that run on no cluster are left out with plan_skip. Run records keep
each run of a repeated phase apart, and a resumed run skips them one by one.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import summary_text

pytestmark = [pytest.mark.first_full_line]

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures"
SITE = "airshipctl/manifests/site/test-site/metadata.yaml"
HOSTS = {"ephemeral-cluster": "ephemeral", "target-cluster": "target"}
REFUSED = ["remotedirect-ephemeral", "virsh-eject-cdrom-images", "eject-virtual-media-ephemeral",
           "power-off-ephemeral"]
NAMESPACES = ("airship-test", "target-infra", "infrastructureprovider-metal3-system",
              "bootstrapprovider-kubeadm-system", "coreprovider-cluster-api-system",
              "controlplaneprovider-kubeadm-system")
CRDS = ("installations.operator.tigera.io", "tigerastatuses.operator.tigera.io", "clusters.cluster.x-k8s.io")

# clusterctl for the tests: init applies each provider's components file of its --config to the cluster; move copies
# the Cluster objects of --namespace (and their CRD) from --kubeconfig to --to-kubeconfig, as clusterctl moves them.
FAKE_CLUSTERCTL = """#!{python}
import json, os, subprocess, sys, yaml
KUBECTL = {kubectl!r}
args = sys.argv[1:]
def option(name):
    return args[args.index(name) + 1] if name in args else None
def kubectl(kubeconfig, *words, stdin=None):
    return subprocess.run([KUBECTL, "--kubeconfig", kubeconfig, *words], input=stdin, text=True, check=True,
                          capture_output=True).stdout
def plain(obj):
    metadata = {{key: value for key, value in obj["metadata"].items()
                if key in ("name", "namespace", "labels", "annotations")}}
    return {{**{{key: value for key, value in obj.items() if key != "metadata"}}, "metadata": metadata}}
if args[0] == "init":
    config = yaml.safe_load(open(option("--config")))
    for provider in config["providers"]:
        kubectl(os.environ["KUBECONFIG"], "apply", "-f", provider["url"][len("file://"):])
elif args[0] == "move":
    source, target, namespace = option("--kubeconfig"), option("--to-kubeconfig"), option("--namespace")
    crd = json.loads(kubectl(source, "get", "crd", "clusters.cluster.x-k8s.io", "-o", "json"))
    crd = plain(crd); crd.pop("status", None)
    kubectl(target, "apply", "-f", "-", stdin=json.dumps(crd))
    kubectl(target, "wait", "--for=condition=Established", "crd/clusters.cluster.x-k8s.io", "--timeout=60s")
    kubectl(target, "create", "namespace", namespace) if subprocess.run(
        [KUBECTL, "--kubeconfig", target, "get", "namespace", namespace], capture_output=True).returncode else None
    items = json.loads(kubectl(source, "get", "clusters.cluster.x-k8s.io", "-n", namespace, "-o", "json"))["items"]
    kubectl(target, "apply", "-f", "-", stdin=json.dumps({{"apiVersion": "v1", "kind": "List",
                                                           "items": [plain(item) for item in items]}}))
"""


@pytest.fixture(scope="module")
def toolbox_image(bin_dir):
    """The tests' toolbox image on the Debian base, tagged localhost/toolbox (built once per inputs)."""
    done = subprocess.run(["bash", str(FIXTURE / "toolbox" / "build.sh"), str(Path(bin_dir) / "kubectl")],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


@pytest.fixture()
def published_site(airship_clusters, tmp_path, bin_dir):
    clusters = airship_clusters  # held by this site until its cleanup (see the fixture)
    root = tmp_path / "site"
    shutil.copytree(FIXTURE / "airshipctl" / "published", root)
    inventory = {"all": {"vars": {"ansible_connection": "local"}, "hosts": {
        host: {"kube_kubeconfig": str(clusters[cluster].admin_kubeconfig), "kube_context": cluster}
        for host, cluster in HOSTS.items()}}}
    inventory["all"]["hosts"]["target-cluster"]["kube_parent"] = "ephemeral-cluster"
    (tmp_path / "inventory.yml").write_text(yaml.safe_dump(inventory))
    fake = tmp_path / "bin" / "clusterctl"
    fake.parent.mkdir()
    fake.write_text(FAKE_CLUSTERCTL.format(python=sys.executable, kubectl=str(Path(bin_dir) / "kubectl")))
    fake.chmod(0o755)
    clean(clusters)
    yield root, tmp_path / "inventory.yml", fake.parent
    clean(clusters)


def clean(clusters):
    """Remove what the site made, waiting until it is gone: a run that starts while its namespaces or CRDs are still
    terminating cannot create in them."""
    for cluster in clusters.values():
        cluster.kubectl("delete", "namespace", *NAMESPACES, "--ignore-not-found", "--timeout=180s", check=False)
        cluster.kubectl("delete", "crd", *CRDS, "--ignore-not-found", "--timeout=180s", check=False)
        cluster.kubectl("delete", "secret,configmap", "-n", "default", "-l", "phasekit.kube/record=run",
                        "--ignore-not-found", check=False)
        for name in ("initinfra-networking-ephemeral", "initinfra-ephemeral", "controlplane-ephemeral",
                     "initinfra-networking-target", "initinfra-target", "controlplane-target", "workers-target",
                     "workload-target"):
            cluster.kubectl("delete", "secret", name, "-n", "default", "--ignore-not-found", check=False)


PLAYBOOK = "- ansible.builtin.import_playbook: phasekit.kube.run\n"


def run(run_playbook, site, inventory, *args, path=None, env=None):
    environment = dict(env or {})
    if path is not None:
        environment["PATH"] = f"{path}:{subprocess.os.environ['PATH']}"
    return run_playbook(PLAYBOOK, inventory, "-e", f"phases={site / SITE}", "-e", "plan=deploy-gating", *args,
                        env=environment or None)


def rows(output: str) -> dict:
    """The summary's rows: (entry, cluster) -> result (the lines after the summary's header)."""
    found = {}
    for line in summary_text(output).splitlines():
        match = re.match(r'^([\w#.-]+)\s+([\w-]+-cluster)\s+(skipped \(resumed\)|not run|\w+)', line)
        if match:
            found[(match.group(1), match.group(2))] = match.group(3)
    return found


def test_the_gating_plan_lists_and_validates_as_airshipctl_documents(published_site, run_playbook, toolbox_image):
    site, inventory, fake_bin = published_site
    listed = run(run_playbook, site, inventory, "-e", "plan_action=list")
    assert listed.rc == 0, listed
    for entry in ("kubectl-get-pods-target#5", "kubectl-wait-pods-ready-target#2", "kubectl-get-node-target#2"):
        assert re.search(rf'^{re.escape(entry)}\s+target-cluster\s+target-cluster\s+container', listed.output, flags=re.MULTILINE), entry
    assert re.search(r'^remotedirect-ephemeral\s+-\s+-\s+airship:BaremetalManager', listed.output, flags=re.MULTILINE), listed

    refused = run(run_playbook, site, inventory, "-e", "plan_action=validate", path=fake_bin)
    assert refused.rc != 0 and "executor BaremetalManager RemoteDirectEphemeral" in refused.output, refused

    # offline, as airshipctl's validate is (its phases build on each other: a dry run on an empty cluster cannot
    # put the second phase's objects in the namespace the first one creates)
    valid = run(run_playbook, site, inventory, "-e", "plan_action=validate", "-e", "plan_offline=true",
                "-e", f"skip={','.join(REFUSED)}", path=fake_bin)
    assert valid.rc == 0, valid
    # the shared phase the site has no entry point for: reported, and it does not fail the plan
    assert "(Phase workers-ephemeral) field config.documentEntryPoint: ephemeral/workers not found" in valid.output
    assert "(not in plan deploy-gating)" in valid.output
    assert "Traceback" not in listed.output + refused.output + valid.output


def test_the_gating_plan_runs_every_phase_that_can_run_here_and_resumes_entry_by_entry(
        published_site, clusters, run_playbook, toolbox_image):
    site, inventory, fake_bin = published_site
    skip = ("-e", f"skip={','.join(REFUSED)}")
    first = run(run_playbook, site, inventory, *skip, path=fake_bin)
    assert first.rc == 0, first
    results = rows(first.output)
    assert len(results) == 29, results
    assert all(result in ("changed", "ok") for result in results.values()), results
    ephemeral, target = clusters["ephemeral"], clusters["target"]
    # KubernetesApply: the deploy-k8s: "false" catalogue left out, the networking conditions met (kubectl JSONPath)
    assert target.get_json("installation", "default")["status"]["computed"] == {"variant": "Calico"}
    assert ephemeral.kubectl("get", "variablecatalogues.airshipit.org", "-A", check=False).returncode != 0
    assert target.get_json("deployment", "workload", "-n", "airship-test")["status"].get("availableReplicas") == 1
    # each KubernetesApply phase is an ApplySet named after it (airshipctl's inventory of the phase)
    secret = target.get_json("secret", "initinfra-target", "-n", "default")
    assert target.get_json("configmap", "initinfra-target", "-n", "airship-test")["metadata"]["labels"][
        "applyset.kubernetes.io/part-of"] == secret["metadata"]["labels"]["applyset.kubernetes.io/id"]
    # Clusterctl: init applied the providers' components, move took the Cluster to the target
    assert ephemeral.get_json("configmap", "coreprovider-cluster-api-components", "-n",
                              "coreprovider-cluster-api-system")["data"]["provider"] == "cluster-api"
    assert target.get_json("clusters.cluster.x-k8s.io", "target-cluster", "-n", "target-infra")["status"][
        "controlPlaneReady"] is True
    # GenericContainer: the toolbox scripts ran in containers, each run of a repeated phase recorded apart
    record = target.get_json("configmap", "phasekit-run-deploy-gating.target-cluster", "-n", "default")["data"]
    assert {f"kubectl-get-pods-target_{k}_" for k in range(1, 6)} <= set(record), sorted(record)
    assert json.loads(record["kubectl-get-pods-target_3_"])[0]["result"] == "changed"

    resumed = run(run_playbook, site, inventory, *skip, "-e", "plan_resume=true", path=fake_bin)
    assert resumed.rc == 0, resumed
    again = rows(resumed.output)
    assert again[("kubectl-get-pods-target#4", "target-cluster")] == "skipped (resumed)", again
    assert set(again.values()) == {"skipped (resumed)"}, again

    later = run(run_playbook, site, inventory, *skip, "-e", "start_at=kubectl-get-pods-target#4", path=fake_bin)
    assert later.rc == 0, later
    ran = rows(later.output)
    assert ran[("kubectl-get-pods-target#4", "target-cluster")] == "changed", ran
    assert ("kubectl-get-pods-target#3", "target-cluster") not in ran, ran      # before start_at: not in the run
    assert ran[("kubectl-get-pods-target#5", "target-cluster")] == "changed", ran
