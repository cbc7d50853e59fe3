# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Documentation of the phasekit.kube.wait action (the work is done by plugins/action/wait.py)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: wait
short_description: Wait until the objects of a bundle are ready
version_added: 0.1.0
description:
  - Polls every object of a bundle together (one list request per kind and namespace) until all are ready, and fails
    at the timeout saying, per object, why it is not ready.
  - Readiness follows kstatus - Deployments, StatefulSets, DaemonSets, ReplicaSets (replicas updated, ready and
    available), Jobs (started, not failed), Pods (ready or completed), PVCs (bound), CRDs (established), Services
    (a load balancer IP when of that type); other kinds are ready when their C(Ready) condition is not false and
    C(status.observedGeneration) matches C(metadata.generation).
  - Extra conditions are JMESPath expressions, or kubectl's JSONPath templates, over the live objects, with expected
    values.
  - Objects are named by a bundle, as for M(phasekit.kube.apply); objects given inline only need C(apiVersion), C(kind)
    and C(metadata.name) (and C(metadata.namespace) when not in O(namespace)).
  - The waiting ends early when nothing is left in progress (every object ready or C(Failed)).
author:
  - phasekit.kube contributors (@phasekit)
extends_documentation_fragment:
  - phasekit.kube.kubeconfig
  - phasekit.kube.connection
attributes:
  check_mode:
    support: full
    description:
      - Waiting reads only, so it runs in check mode too, but it does not wait there. A check run creates nothing,
        so what earlier tasks would create is not there to wait for. It looks once; objects that are not there or
        not ready give C(ready=false) and a C(msg) that says so, and the task does not fail.
  diff_mode:
    description: Waiting changes nothing, so there is nothing to diff.
    support: none
options:
  src:
    description:
      - The bundle naming the objects - a kustomization directory, a manifest file, or a directory of manifest
        files, as for M(phasekit.kube.apply) (C(.j2) manifests rendered with the task's variables).
      - Mutually exclusive with O(definition).
    type: str
  definition:
    description: Inline objects - one object, a list of objects, or a string of YAML documents.
    type: raw
  namespace:
    description: Namespace of namespaced objects that do not name one; defaults to the context's, else C(default).
    type: str
  timeout:
    description: Seconds to wait for all objects together.
    type: int
    default: 300
  poll_interval:
    description:
      - The longest pause between two reads of the objects, in seconds. Polling starts at 0.25 seconds and backs
        off to this.
    type: float
    default: 2.0
  kinds:
    description:
      - Readiness per kind - a dictionary of C(Kind) or C(Kind.group) to V(kstatus) (the default) or V(none)
        (existing is enough).
    type: dict
    default: {}
  conditions:
    description:
      - Extra conditions, each a JMESPath expression (O(conditions[].path)) or a kubectl JSONPath template
        (O(conditions[].jsonpath)) evaluated on the live object; an object is ready when every condition that
        applies to it is met (after its kind's readiness).
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description:
          - JMESPath expression over the live object, for example C(status.phase).
          - Exactly one of O(conditions[].path) and O(conditions[].jsonpath) is required.
        type: str
      jsonpath:
        description:
          - A JSONPath template in kubectl's dialect, as C(kubectl get -o jsonpath=...) takes it, for example
            V({.status.conditions[?(@.type=="Ready"\)].status}); filters, wildcards, slices, unions, C(..) and
            C(range) work as in kubectl.
          - The condition is met when the template's first action finds exactly one value and, with
            O(conditions[].value), that value as kubectl prints it equals the value's text; this is how airshipctl's
            C(waitOptions.conditions) are checked. A field that is missing is not met yet.
        type: str
      value:
        description:
          - The expected result. Scalars compare as text (C(True) matches C("True")).
          - When omitted, any true result (non-empty, non-zero, not false) meets a O(conditions[].path)
            condition, and finding one value meets a O(conditions[].jsonpath) condition.
        type: raw
      kind:
        description: Only objects of this C(Kind) (or C(Kind.group)).
        type: str
      name:
        description: Only the object with this name.
        type: str
      namespace:
        description: Only objects in this namespace.
        type: str
notes:
  - The C(kubernetes) Python package is needed on the controller, and C(jmespath) for O(conditions[].path).
seealso:
  - module: phasekit.kube.apply
  - name: kstatus
    description: The readiness rules, from cli-utils.
    link: https://github.com/kubernetes-sigs/cli-utils/tree/master/pkg/kstatus
"""

EXAMPLES = r"""
- name: Wait for the web tier of the site
  phasekit.kube.wait:
    src: manifests/web
    timeout: 180

- name: Wait for one Job to complete, and a custom resource to report a phase
  phasekit.kube.wait:
    namespace: batch
    definition:
      - {apiVersion: batch/v1, kind: Job, metadata: {name: migrate}}
      - {apiVersion: example.com/v1, kind: Database, metadata: {name: main}}
    conditions:
      - kind: Job
        path: "status.conditions[?type=='Complete'].status | [0]"
        value: "True"
      - kind: Database
        path: status.phase
        value: Ready

- name: The same Job condition in kubectl's JSONPath
  phasekit.kube.wait:
    namespace: batch
    definition: {apiVersion: batch/v1, kind: Job, metadata: {name: migrate}}
    conditions:
      - kind: Job
        jsonpath: '{.status.conditions[?(@.type=="Complete")].status}'
        value: "True"
"""

RETURN = r"""
ready:
  description: Whether every object was ready in time.
  returned: always
  type: bool
objects:
  description: One entry per object with its readiness - C(status) (V(Current), V(InProgress), V(Failed),
    V(NotFound), V(Terminating)) and C(message) (why).
  returned: always
  type: list
  elements: dict
  sample:
    - {apiVersion: apps/v1, kind: Deployment, namespace: web, name: web, status: InProgress,
       message: "Available: 0/2"}
kubeconfig:
  description: Which context, cluster, server and user were used and where they came from (no secrets).
  returned: always
  type: dict
"""
