# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Cluster access for a fleet step: once per host, failures once, earlier steps reused and carried forward."""

from __future__ import annotations

import pytest
import yaml

from ansible_collections.phasekit.kube.plugins.module_utils.environ import Overridden
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig import readers
from ansible_collections.phasekit.kube.plugins.plugin_utils.fleet import Fleet, FleetVars, remembered_by_host


def kubeconfig(*names):
    return {"apiVersion": "v1", "kind": "Config",
            "clusters": [{"name": n, "cluster": {"server": f"https://{n}.example:6443"}} for n in names],
            "users": [{"name": n, "user": {"token": f"token-{n}"}} for n in names],
            "contexts": [{"name": n, "context": {"cluster": n, "user": n, "namespace": f"ns-{n}"}} for n in names]}


@pytest.fixture()
def fleet_file(tmp_path):
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump(kubeconfig(*(f"c{i}" for i in range(5)))))
    return str(path)


def hostvars_for(path, hosts, **extra):
    return {host: {"kube_kubeconfig": path, "kube_context": host, **extra.get(host, {})} for host in hosts}


def test_each_host_gets_its_own_context_and_the_file_is_parsed_once(fleet_file, monkeypatch):
    parsed = []
    original = readers.decode_kubeconfig_bytes
    monkeypatch.setattr(readers, "decode_kubeconfig_bytes", lambda data, origin: parsed.append(1) or original(data, origin))
    hosts = [f"c{i}" for i in range(5)]
    with Fleet(None, hostvars_for(fleet_file, hosts), environ={}) as fleet:
        found = {host: fleet.resolution(host) for host in hosts}
        again = fleet.resolution("c3")
    assert {host: (r.context, r.namespace, r.server) for host, r in found.items()} == {
        host: (host, f"ns-{host}", f"https://{host}.example:6443") for host in hosts}
    assert again is found["c3"]
    assert len(parsed) == 1


def test_a_failed_resolution_is_reported_again_without_reading_again(tmp_path):
    missing = str(tmp_path / "absent.yaml")
    hostvars = {"h": {"kube_kubeconfig": {"sops": missing}, "kube_context": "h"}}
    with Fleet(None, hostvars, environ={"PATH": ""}) as fleet:
        with pytest.raises(PhasekitError) as first:
            fleet.resolution("h")
        (tmp_path / "absent.yaml").write_text("now it exists")
        with pytest.raises(PhasekitError) as second:
            fleet.resolution("h")
    assert str(first.value) == str(second.value)
    assert "no such file" in str(first.value)


def test_earlier_resolutions_are_reused_and_carried_forward(fleet_file):
    hosts = ["c0", "c1"]
    with Fleet(None, hostvars_for(fleet_file, hosts), environ={}) as first_step:
        first_step.resolution("c0")
        memory = first_step.memory()
    assert set(memory) == {"c0"}
    registered = {"resolutions": memory}
    hostvars = hostvars_for(fleet_file, hosts, c1={"phasekit_kube_resolved": registered})
    with Fleet(None, hostvars, environ={}, remembered=remembered_by_host(registered)) as later_step:
        assert later_step.resolution("c0").reused
        later_step.resolution("c1")
        carried = later_step.memory()
    assert set(carried) == {"c0", "c1"}
    assert "token-c0" in yaml.safe_dump(carried)          # credentials are in memory: the result is no_log


def test_host_vars_keep_only_what_resolution_reads():
    hostvars = {"h": {"kube_context": "h", "kube_parent": "p", "unrelated": "x",
                      "phasekit_kube_resolved": {"resolutions": {"h": {"format": 1}, "other": {"format": 1}}}}}
    values = FleetVars(hostvars)["h"]
    assert values == {"kube_context": "h", "kube_parent": "p",
                      "phasekit_kube_resolved": {"resolution": {"format": 1}}}
    with pytest.raises(PhasekitError, match="not in the inventory"):
        FleetVars(hostvars)["nobody"]  # pylint: disable=expression-not-assigned


def test_servers_are_host_and_port_of_every_host_resolved_so_far(fleet_file):
    earlier = {"old": {"config": {"clusters": [{"cluster": {"server": "https://user:pw@old.example/path/t0ken"}}]}}}
    with Fleet(None, hostvars_for(fleet_file, ["c0", "c1", "c2"]), environ={}, remembered=earlier) as fleet:
        fleet.resolution("c0")
        fleet.resolution("c2")
        assert fleet.servers() == {"old": "old.example:443", "c0": "c0.example:6443", "c2": "c2.example:6443"}


class Sealed(dict):
    """A host's variables whose values cannot be read (an ansible-vault value without its password)."""

    def __getitem__(self, name):
        raise AssertionError(f"{name} was read")


def test_hosts_that_beat_the_environment_are_counted_without_reading_their_values(fleet_file):
    hostvars = {**hostvars_for(fleet_file, ["c0", "c1"]), "c2": {}, "c3": {"kube_context": ["not", "a", "name"]},
                "sealed": Sealed(kube_kubeconfig="$ANSIBLE_VAULT;1.1;AES256...")}
    environ = {"K8S_AUTH_CONTEXT": "c4", "K8S_AUTH_KUBECONFIG": fleet_file}
    with Fleet(None, hostvars, environ=environ) as fleet:
        found = fleet.overridden(["c0", "c1", "c2", "c3", "sealed", "not-in-inventory"])
        assert fleet.memory() == {}  # nothing was resolved
    # a host that sets its own value beats the environment, whatever the value (a wrong one fails when resolved)
    assert found == {Overridden("K8S_AUTH_CONTEXT", "controller environment", "kube_context"): ["c0", "c1", "c3"],
                     Overridden("K8S_AUTH_KUBECONFIG", "controller environment", "kube_kubeconfig"):
                         ["c0", "c1", "sealed"]}


def test_nothing_is_looked_at_without_a_k8s_auth_variable(fleet_file):
    hostvars = {"sealed": Sealed(kube_kubeconfig="$ANSIBLE_VAULT;1.1;AES256...")}
    with Fleet(None, hostvars, environ={"KUBECONFIG": fleet_file}) as fleet:
        assert fleet.overridden(["sealed"]) == {}


def test_a_host_without_its_own_context_takes_the_environment_s(fleet_file):
    hostvars = {**hostvars_for(fleet_file, ["c0"]), "c2": {"kube_kubeconfig": fleet_file}}
    with Fleet(None, hostvars, environ={"K8S_AUTH_CONTEXT": "c4"}) as fleet:
        assert (fleet.resolution("c0").context, fleet.resolution("c2").context) == ("c0", "c4")
        assert fleet.resolution("c2").summary()["provenance"]["context_from"] == "controller environment K8S_AUTH_CONTEXT"
