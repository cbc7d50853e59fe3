# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""A preview of a whole plan on a cluster without its CRD and namespace (issue #40), as a user runs it.

Phase ``crds`` creates a CustomResourceDefinition and a Namespace; phase ``things`` a custom resource of that CRD
and a ConfigMap in that namespace. ``--check --diff`` previews both phases (the second one's objects marked not
checked by the server, the custom resource checked against the CRD's schema), creates nothing, and the real run
then does exactly what the preview listed. A wrongly typed or unknown field of the custom resource is named by the
preview, as the server names it, and fails it. Every test uses its own API group and namespace: the clusters are
shared.
"""

from __future__ import annotations

import re
import uuid

import pytest

from conftest import one_cluster_site

API = "phasekit.dev/v1alpha1"
CLUSTER = "target"
DIFF_HEADER = re.compile(r"^--- (\S+): (.+) \((absent|live|after phase \S+)\)$", re.MULTILINE)


def crd(group: str) -> dict:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"gadgets.{group}"},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"kind": "Gadget", "plural": "gadgets", "singular": "gadget", "listKind": "GadgetList"},
                     "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                         "type": "object",
                         "properties": {"spec": {"type": "object", "required": ["size"], "properties": {
                             "size": {"type": "integer"}, "colour": {"type": "string", "enum": ["red", "blue"]},
                             "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}}}}]}}


def gadget(group: str, namespace: str, **spec) -> dict:
    return {"apiVersion": f"{group}/v1", "kind": "Gadget", "metadata": {"name": "g1", "namespace": namespace},
            "spec": spec}


def phase(name: str, source: list) -> dict:
    return {"apiVersion": API, "kind": "Phase", "metadata": {"name": name},
            "spec": {"cluster": CLUSTER, "executor": "apply", "source": source}}


def configmap(namespace: str, value: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c1", "namespace": namespace},
            "data": {"k": value}}


def site_documents(group: str, namespace: str, **gadget_spec) -> list:
    """crds: the CRD and the namespace; things: a Gadget and a ConfigMap there; tune: that ConfigMap changed."""
    return [phase("crds", [crd(group), {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}]),
            phase("things", [gadget(group, namespace, **gadget_spec), configmap(namespace, "v")]),
            phase("tune", [configmap(namespace, "tuned")]),
            {"apiVersion": API, "kind": "PhasePlan", "metadata": {"name": "site"},
             "spec": {"phases": ["crds", "things", "tune"]}}]


@pytest.fixture()
def site(clusters, tmp_path, collections_path):
    """run(*args): ansible-playbook phasekit.kube.run in a site whose plan needs a CRD group and namespace that do
    not exist yet (run.group, run.namespace; both deleted afterwards); run.documents(...) writes its phases."""
    target = clusters[CLUSTER]
    token = uuid.uuid4().hex[:6]
    group, namespace = f"p{token}.example.com", f"pk-preview-{token}"
    records = f"pk-preview-records-{token}"
    target.kubectl("create", "namespace", records)
    run, documents = one_cluster_site(target, tmp_path / "site", records, collections_path, "-e", "plan_name=site")
    run.group, run.namespace, run.documents = group, namespace, documents
    yield run
    for kind, name in (("namespace", namespace), ("namespace", records), ("crd", f"gadgets.{group}")):
        target.kubectl("delete", kind, name, "--wait=false", check=False)


def listed(output: str) -> list[tuple[str, str]]:
    """The objects a run with --diff showed, and whether each existed before: [(object, absent|live)]; a preview's
    ``after phase X`` (an object an earlier phase would create) is live by the time the run gets there."""
    return sorted((found, "absent" if before == "absent" else "live")
                  for _host, found, before in DIFF_HEADER.findall(output))


def test_a_plan_that_brings_its_crd_and_namespace_previews_then_runs_as_previewed(clusters, site):
    target, group, namespace = clusters[CLUSTER], site.group, site.namespace
    site.documents(site_documents(group, namespace, size=3, colour="red", extra={"anything": {"goes": 1}}))

    rc, preview = site("--check", "--diff")
    assert rc == 0, preview
    assert (f"{CLUSTER}: would create Gadget {namespace}/g1: not checked by the server: its CRD is created by "
            "phase crds") in preview, preview
    assert (f"{CLUSTER}: would create ConfigMap {namespace}/c1: not checked by the server: its namespace "
            f"{namespace} is created by phase crds") in preview, preview
    assert (f"{CLUSTER}: would change ConfigMap {namespace}/c1: not checked by the server: its namespace "
            f"{namespace} is created by phase crds") in preview, preview
    assert f"--- {CLUSTER}: ConfigMap {namespace}/c1 (after phase things)" in preview, preview
    expected = sorted([(f"CustomResourceDefinition gadgets.{group}", "absent"), (f"Namespace {namespace}", "absent"),
                       (f"Gadget {namespace}/g1", "absent"), (f"ConfigMap {namespace}/c1", "absent"),
                       (f"ConfigMap {namespace}/c1", "live")])
    assert listed(preview) == expected, preview
    assert target.kubectl("get", "crd", f"gadgets.{group}", check=False).returncode != 0  # a preview writes nothing
    assert target.kubectl("get", "namespace", namespace, check=False).returncode != 0

    rc, status = site("-e", "plan_action=status")
    assert rc == 0, status   # status sees the same preview: differs, not failed
    assert re.search(rf"things\s+{CLUSTER}\s+differs", status), status
    assert f"{CLUSTER}: would create Gadget {namespace}/g1: not checked by the server" in status, status

    rc, applied = site("--diff")
    assert rc == 0, applied
    assert listed(applied) == expected, applied   # the run did what the preview listed
    assert target.get_json(f"gadgets.{group}", "g1", "-n", namespace)["spec"]["size"] == 3
    assert target.get_json("configmap", "c1", "-n", namespace)["data"] == {"k": "tuned"}

    rc, again = site("--check", "--diff")
    assert rc == 0, again
    # on the cluster the plan made: everything the server checks; things and tune still disagree on c1
    assert listed(again) == sorted([(f"ConfigMap {namespace}/c1", "live")] * 2), again
    assert "not checked by the server" not in again, again


@pytest.mark.parametrize("gadget_spec, named", [
    ({"size": "big"}, 'spec.size: Invalid value: "string": spec.size in body must be of type integer: "string"'),
    ({"size": 1, "shape": "round"}, ".spec.shape: field not declared in schema"),
    ({"size": 1, "colour": "green"}, 'spec.colour: Unsupported value: "green": supported values: "red", "blue"'),
    ({}, "spec.size: Required value"),
], ids=["wrong-type", "unknown-field", "not-in-enum", "required"])
def test_the_preview_names_a_field_the_crd_schema_refuses(clusters, site, gadget_spec, named):
    target, group, namespace = clusters[CLUSTER], site.group, site.namespace
    site.documents(site_documents(group, namespace, **gadget_spec))
    rc, preview = site("--check")
    assert rc != 0, preview
    assert named in preview, preview
    assert ("checked on the controller against the schema of the CustomResourceDefinition that phase crds creates"
            in preview), preview
    assert target.kubectl("get", "crd", f"gadgets.{group}", check=False).returncode != 0
