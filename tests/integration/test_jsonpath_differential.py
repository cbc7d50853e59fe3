# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Differential test: our kubectl JSONPath against the real ``kubectl get -o jsonpath`` on the same objects.

Objects of several shapes (a custom resource holding numbers of every form, booleans, nulls, nested lists and
maps, keys with dots and slashes, HTML characters and unicode; a ConfigMap; a list of both) are created on a
real cluster. For each expression, kubectl prints ``kubectl get ... -o jsonpath=<expression>`` and we evaluate
the same template on the same object, read through the API (without ``metadata.managedFields``, which ``kubectl
get`` leaves out); the text must be the same, or both must fail. Expressions whose result order comes from
iterating a map with several keys (Go's order is random) compare their space-separated words as a multiset.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from ansible_collections.phasekit.kube.plugins.module_utils.jsonpath import JSONPath, JSONPathError

NAMESPACE = "jsonpath-diff"
GROUP = "diff.phasekit.dev"
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": f"widgets.{GROUP}"},
    "spec": {"group": GROUP, "scope": "Namespaced",
             "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
             "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                 "type": "object", "properties": {
                     "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                     "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}}]},
}
WIDGET = {
    "apiVersion": f"{GROUP}/v1", "kind": "Widget",
    "metadata": {"name": "alpha", "namespace": NAMESPACE,
                 "labels": {"app.kubernetes.io/name": "alpha", "tier": "web", "set": "diff"},
                 "annotations": {"note": "<b>&amp;</b> \u2713 h\u00e9llo"}},
    "spec": {
        "replicas": 3, "ratio": 0.5, "big": 1234567.5, "tiny": 0.00001, "huge": 1e22, "whole": 2, "negative": -7,
        "enabled": True, "disabled": False, "nothing": None, "empty": "", "emptyList": [], "emptyMap": {},
        "text": "a <tag> & \"quotes\"", "unicode": "\u00e9t\u00e9 \u2603",
        "ports": [{"name": "http", "port": 80, "tls": False}, {"name": "https", "port": 443, "tls": True},
                  {"name": "metrics", "port": 9090}],
        "matrix": [[1, 2], [3, 4]],
        "nested": {"level": {"deeper": {"name": "bottom", "value": 42}}},
        "dotted.key": "dotted", "slashed/key": "slashed",
        "tags": ["blue", "green", "red"],
    },
    "status": {
        "phase": "Ready", "observed": 5,
        "conditions": [
            {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
            {"type": "Progressing", "status": "False", "reason": "Stalled"},
            {"type": "Degraded", "status": "Unknown"},
        ],
    },
}
WIDGET_B = {
    "apiVersion": f"{GROUP}/v1", "kind": "Widget",
    "metadata": {"name": "beta", "namespace": NAMESPACE, "labels": {"tier": "db", "set": "diff"}},
    "spec": {"replicas": 1, "ports": [{"name": "sql", "port": 5432}], "enabled": False, "tags": []},
    "status": {"phase": "Pending", "conditions": [{"type": "Available", "status": "False"}]},
}
CONFIG_MAP = {
    "apiVersion": "v1", "kind": "ConfigMap",
    "metadata": {"name": "settings", "namespace": NAMESPACE, "labels": {"set": "diff"}},
    "data": {"app.properties": "a=1\nb=2\n", "mode": "fast", "empty": ""},
}

# (object, template, unordered): object is a widget name, "settings" (the ConfigMap) or "list" (both widgets)
EXPRESSIONS = [
    ("alpha", "{.metadata.name}", False),
    ("alpha", "{.kind}/{.apiVersion}", False),
    ("alpha", "name={.metadata.name} ns={.metadata.namespace}", False),
    ("alpha", "{.spec.replicas}", False),
    ("alpha", "{.spec.ratio}", False),
    ("alpha", "{.spec.big}", False),
    ("alpha", "{.spec.tiny}", False),
    ("alpha", "{.spec.huge}", False),
    ("alpha", "{.spec.whole}", False),
    ("alpha", "{.spec.negative}", False),
    ("alpha", "{.spec.enabled} {.spec.disabled}", False),
    ("alpha", "{.spec.nothing}", False),
    ("alpha", "[{.spec.empty}]", False),
    ("alpha", "{.spec.emptyList}{.spec.emptyMap}", False),
    ("alpha", "{.spec.text}", False),
    ("alpha", "{.spec.unicode}", False),
    ("alpha", "{.metadata.annotations.note}", False),
    ("alpha", "{.spec}", False),
    ("alpha", "{.spec.ports}", False),
    ("alpha", "{.spec.ports[0]}", False),
    ("alpha", "{.spec.ports[-1].name}", False),
    ("alpha", "{.spec.ports[1:].port}", False),
    ("alpha", "{.spec.ports[::2].name}", False),
    ("alpha", "{.spec.ports[0:3:2].port}", False),
    ("alpha", "{.spec.ports[*].name}", False),
    ("alpha", "{.spec.ports[*].tls}", False),
    ("alpha", "{.spec.ports[3]}", False),
    ("alpha", "{.spec.ports[2:1]}", False),
    ("alpha", "{.spec.ports[1:1]}", False),
    ("alpha", "{.spec.matrix[*][1]}", False),
    ("alpha", "{.spec.matrix[1]}", False),
    ("alpha", "{.spec.nested.level.deeper}", False),
    ("alpha", "{.spec.nested..name}", False),
    ("alpha", "{.spec.nested.level.*}", False),
    ("alpha", "{.spec.dotted\\.key}", False),
    ("alpha", "{.spec['dotted.key']}", False),
    ("alpha", "{.spec.slashed/key}", False),
    ("alpha", "{.metadata.labels.app\\.kubernetes\\.io/name}", False),
    ("alpha", "{.spec.tags[*]}", False),
    ("alpha", "{.spec.tags[0,2]}", False),
    ("alpha", "{.spec.ports[*]['name','port']}", False),
    ("alpha", "{.status.conditions[?(@.type=='Available')].status}", False),
    ("alpha", '{.status.conditions[?(@.type=="Progressing")].reason}', False),
    ("alpha", "{.status.conditions[?(@.status!='True')].type}", False),
    ("alpha", "{.status.conditions[?(@.reason)].type}", False),
    ("alpha", "{.spec.ports[?(@.port>100)].name}", False),
    ("alpha", "{.spec.ports[?(@.port<=443)].name}", False),
    ("alpha", "{.spec.ports[?(@.port>=443)].name}", False),
    ("alpha", "{.spec.ports[?(@.port<443)].name}", False),
    ("alpha", "{.spec.ports[?(@.tls==true)].name}", False),
    ("alpha", "{.spec.ports[?(@.port=='80')].name}", False),
    ("alpha", "{.spec.ports[?(@.name>'http')].name}", False),
    ("alpha", "{range .spec.ports[*]}{.name}:{.port}{\"\\n\"}{end}", False),
    ("alpha", "{range .status.conditions[*]}[{.type}={.status}]{end} done", False),
    ("alpha", "{range .spec.matrix[*]}{range @[*]}{@},{end};{end}", False),
    ("alpha", "{range .spec.ports[*]}{@.name}{' '}{end}", False),
    ("alpha", "{\"quoted \\\"text\\\"\\t\"}{'single'}", False),
    ("alpha", "{.status.phase}{end}", False),
    ("alpha", "{.spec.nope}", False),
    ("alpha", "{.spec.ports[*].nope}", False),
    ("alpha", "{hello}", False),
    ("alpha", "{.spec.ports[?(@.port==80.5)].name}", False),
    ("alpha", "{.spec.ports[?(@.tls<true)].name}", False),
    ("alpha", "{.spec.ports[x]}", False),
    ("alpha", "{.spec.ports[?(@.name=='http']}", False),
    ("alpha", "{..*}", False),
    ("alpha", "{.spec.replicas", False),
    ("alpha", "{.spec.nested[0]}", False),
    ("alpha", "{.spec.ports[::0]}", False),
    ("alpha", "{.spec.tags.*}", False),
    ("alpha", "{.spec.text[*]}", False),
    ("alpha", "{.metadata.labels.*}", True),
    ("alpha", "{.spec.nested.*}", False),
    ("alpha", "{..port}", True),
    ("alpha", "{..type}", True),
    ("alpha", "{.status..status}", True),
    ("alpha", "{$.metadata.name}", False),
    ("alpha", "{@.metadata.name}", False),
    ("settings", "{.data.app\\.properties}", False),
    ("settings", "{.data.mode}{.data.empty}|", False),
    ("settings", "{.data}", False),
    ("list", "{.items[*].metadata.name}", False),
    ("list", "{.kind} {.apiVersion} {.metadata}", False),
    ("list", "{range .items[*]}{.metadata.name}={.spec.replicas}{\"\\n\"}{end}", False),
    ("list", "{.items[?(@.spec.enabled==false)].metadata.name}", False),
    ("list", "{.items[?(@.status.phase=='Ready')].spec.ports[*].port}", False),
    ("list", "{.items[*].status.conditions[?(@.type=='Available')].status}", False),
    ("list", "{range .items[*]}{.metadata.name}:{range .spec.tags[*]}{@},{end};{end}", False),
    ("list", "{.items[-1].metadata.labels.tier}", False),
    ("list", "{.items[*].spec.tags}", False),
]
# kubectl's --allow-missing-template-keys=false, as client-go's default (airshipctl's wait conditions)
STRICT = [
    ("alpha", "{.spec.nope}"),
    ("alpha", "{.spec.ports[*].nope}"),
    ("alpha", "{.status.conditions[?(@.reason)].type}"),
    ("alpha", "{.status.conditions[?(@.reason=='Stalled')].type}"),
    ("alpha", "{.metadata.name}"),
]


@pytest.fixture(scope="module")
def objects(clusters):
    """The objects, created once, as the API returns them (what kubectl get prints, without managed fields)."""
    target = clusters["target"]
    target.kubectl("delete", "namespace", NAMESPACE, "--ignore-not-found", "--wait=true")
    target.kubectl("apply", "-f", "-", stdin=json.dumps(CRD))
    target.kubectl("wait", "--for=condition=Established", f"crd/widgets.{GROUP}", "--timeout=60s")
    target.kubectl("create", "namespace", NAMESPACE)
    manifests = {"items": [WIDGET, WIDGET_B, CONFIG_MAP], "apiVersion": "v1", "kind": "List"}
    target.kubectl("create", "-f", "-", stdin=json.dumps(manifests))
    read = {}
    for name, path in (("alpha", f"/apis/{GROUP}/v1/namespaces/{NAMESPACE}/widgets/alpha"),
                       ("beta", f"/apis/{GROUP}/v1/namespaces/{NAMESPACE}/widgets/beta"),
                       ("settings", f"/api/v1/namespaces/{NAMESPACE}/configmaps/settings")):
        obj = json.loads(target.kubectl("get", "--raw", path).stdout)
        obj["metadata"].pop("managedFields", None)
        read[name] = obj
    # kubectl get of a type prints a v1 List of the objects
    read["list"] = {"apiVersion": "v1", "kind": "List", "items": [read["alpha"], read["beta"]],
                    "metadata": {"resourceVersion": ""}}
    yield read
    target.kubectl("delete", "namespace", NAMESPACE, "--ignore-not-found", "--wait=false")
    target.kubectl("delete", "crd", f"widgets.{GROUP}", "--ignore-not-found", "--wait=false")


def kubectl_jsonpath(cluster, name: str, template: str, strict: bool = False):
    """What kubectl prints (or None when it fails)."""
    widgets = f"widgets.{GROUP}"  # by group: the example site's CRD has the plural 'widgets' too
    what = {"alpha": [widgets, "alpha"], "beta": [widgets, "beta"], "settings": ["configmap", "settings"],
            "list": [widgets, "-l", "set=diff"]}[name]
    flags = ["--allow-missing-template-keys=false"] if strict else []
    done = cluster.kubectl("get", "-n", NAMESPACE, *what, *flags, "-o", f"jsonpath={template}", check=False)
    return done.stdout if done.returncode == 0 else None


def ours(obj: dict, template: str, strict: bool = False):
    try:
        return JSONPath(template, allow_missing_keys=not strict).text(obj)
    except JSONPathError:
        return None


def comparable(text, unordered: bool):
    return sorted(text.split()) if unordered and text is not None else text


def test_at_least_fifty_expressions_cover_every_part_of_the_dialect():
    templates = [template for _name, template, _unordered in EXPRESSIONS]
    assert len(templates) >= 50
    for part in ("[?(", "..", "[*]", ".*", "range", "end", "[-1]", "::", "','", "\\.", '"'):
        assert any(part in template for template in templates), part


def test_same_text_as_kubectl_get_o_jsonpath(clusters, objects):
    target = clusters["target"]
    with ThreadPoolExecutor(4) as pool:
        printed = list(pool.map(lambda case: kubectl_jsonpath(target, case[0], case[1]), EXPRESSIONS))
    differences = []
    for (name, template, unordered), theirs in zip(EXPRESSIONS, printed):
        mine = ours(objects[name], template)
        if comparable(mine, unordered) != comparable(theirs, unordered):
            differences.append(f"{name} {template!r}: kubectl {theirs!r}, ours {mine!r}")
    assert not differences, "\n".join(differences)
    # both sides fail on the same templates, and succeed on most
    failures = [case[1] for case, theirs in zip(EXPRESSIONS, printed) if theirs is None]
    assert 8 <= len(failures) <= 20, failures


def test_missing_keys_not_allowed_fail_the_same_way(clusters, objects):
    target = clusters["target"]
    for name, template in STRICT:
        assert ours(objects[name], template, strict=True) == kubectl_jsonpath(target, name, template, strict=True), \
            template
