# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Documentation of the phasekit.kube.apply action (the work is done by plugins/action/apply.py)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: apply
short_description: Server-side apply a bundle of Kubernetes objects, prune an ApplySet, wait for readiness; or delete them
version_added: 0.1.0
description:
  - Applies every object of a bundle with server-side apply (C(PATCH application/apply-patch+yaml)), the way
    C(kubectl apply --server-side) does, but concurrently over one pooled connection and without a request for
    objects that are already in the desired state.
  - Namespaces are applied first, then CustomResourceDefinitions (waited until C(Established) before their custom
    resources), then admission prerequisites (ServiceAccounts, quotas, limit ranges, priority and storage classes),
    then everything else, and webhook configurations and API services last.
  - Every kind is resolved before anything is written; an unknown kind fails the task naming the document. API
    discovery is cached on disk per API server (under C($PHASEKIT_CACHE/discovery), default
    C(~/.cache/phasekit/discovery)) and refreshed when a kind is not found.
  - With O(applyset), objects join an ApplySet (KEP-3659) exactly as C(kubectl apply --applyset) records it - a parent
    Secret (or ConfigMap, or an allowed custom resource) with the C(applyset.kubernetes.io/*) label and annotations,
    and the C(applyset.kubernetes.io/part-of) label on every member. With O(prune), members of the set that are no
    longer in the bundle are deleted; objects outside the set are never touched.
  - An object is C(unchanged) when this field manager already owns exactly its fields with the desired values; that
    is decided from the live objects, read with one list request per kind and namespace, so a re-apply of an
    unchanged bundle costs a few requests.
  - Check mode is a server-side dry run (C(dryRun=All)) of the same requests. Diff mode returns one diff per changed
    object; Secret values are shown as C(***), with a C(before)/C(after) mark on the keys whose value changed.
  - Objects are validated by the API server as with C(kubectl apply --server-side) (C(fieldValidation=Strict)); a
    field the schema does not declare fails the object, naming the field.
  - Warnings sent by the API server (deprecated fields and APIs) become Ansible warnings. Connection resets, HTTP 429
    and 5xx answers are retried with backoff.
  - With O(state=absent), the objects the bundle names are deleted instead (C(kubectl delete -f --ignore-not-found));
    see O(state).
  - Runs on the controller (an action plugin); the cluster is chosen by the kubeconfig options or the host's
    C(kube_kubeconfig)/C(kube_context) variables.
author:
  - phasekit.kube contributors (@phasekit)
extends_documentation_fragment:
  - phasekit.kube.kubeconfig
  - phasekit.kube.connection
attributes:
  check_mode:
    support: full
    description: Server-side dry run; nothing is persisted, admission and validation still run.
  diff_mode:
    support: full
    description: One diff per created, changed, pruned or deleted object; Secret values are redacted.
options:
  state:
    description:
      - V(present) applies the bundle. V(absent) deletes each object the bundle names, found by its C(apiVersion),
        C(kind), C(metadata.namespace) (else O(namespace)) and C(metadata.name); its other fields are ignored, as
        C(kubectl delete -f) ignores them.
      - An object that does not exist, or whose kind the API server does not serve, is already absent (C(ok), as
        C(kubectl delete --ignore-not-found)); the task is C(changed) when it deleted anything.
      - Objects are deleted in the reverse of apply's order (workloads first, CRDs and Namespaces last), O(cascade)
        says how their dependants go, and O(wait) (true unless set) waits until each is gone.
      - An object that another plan applied first (outside a plan, any plan), or that belongs to another ApplySet
        than O(applyset), is refused, naming that plan or set, and nothing is deleted; O(applyset_adopt=all) deletes
        it anyway. A Namespace goes only when it holds nothing but what the task deletes, unless
        O(applyset_adopt=all).
      - With O(applyset), the set's parent (if it exists) then records only the kinds and namespaces that still hold
        members.
      - Check mode deletes with a server-side dry run (C(would delete)); diff mode shows each object's live state
        before.
      - Not with O(prune) or O(force_conflicts).
    type: str
    choices: [present, absent]
    default: present
  cascade:
    description:
      - With O(state=absent), how the dependants of a deleted object go, as C(kubectl delete --cascade) -
        V(background) (the default, kubectl's - the object goes at once, the garbage collector deletes its
        dependants after), V(foreground) (its dependants first, then the object), V(orphan) (its dependants are
        left).
      - Only with O(state=absent).
    type: str
    choices: [background, foreground, orphan]
  src:
    description:
      - The bundle on the controller. A directory with a C(kustomization.yaml) (rendered with C(kubectl kustomize),
        or C(kustomize build) when kubectl is missing), a manifest file (YAML or JSON, several documents allowed),
        or a directory of manifest files (C(*.yaml), C(*.yml), C(*.json); not recursive, in name order, as
        C(kubectl apply -f DIR)).
      - A relative path is looked up like other file arguments (the role's C(files/), the playbook directory).
      - A manifest whose name ends in C(.j2) (the file, C(*.yaml.j2) files of the directory, or files of the
        kustomization) is a Jinja template, rendered with the task's variables before it is parsed, as
        M(ansible.builtin.template) renders it; an undefined variable fails the task naming the file and line.
      - Mutually exclusive with O(definition).
    type: str
  definition:
    description:
      - Inline objects instead of O(src) - one object (a dictionary), a list of objects, or a string of YAML
        documents.
      - C(kind=List) documents are expanded into their items.
    type: raw
  namespace:
    description:
      - Namespace for namespaced objects that do not name one, and of the ApplySet parent.
      - Defaults to the namespace of the kubeconfig context, else C(default). Objects that name a namespace keep it.
    type: str
  field_manager:
    description: The server-side apply field manager that owns the applied fields.
    type: str
    default: phasekit
  force_conflicts:
    description:
      - Take over fields owned by another field manager (C(kubectl apply --force-conflicts)).
      - When false, a conflict fails the object and the message names each field and its current manager.
    type: bool
    default: false
  prune:
    description:
      - Delete the members of the O(applyset) that are not in this bundle (C(kubectl apply --prune --applyset)).
      - Requires O(applyset). Nothing is pruned when any object failed to apply, and an empty bundle is refused.
    type: bool
    default: false
  applyset:
    description:
      - The ApplySet parent, as C(kubectl apply --applyset) takes it - C(NAME) (a Secret), C(configmaps/NAME), or
        C(RESOURCE.GROUP/NAME) for a custom resource whose CRD has the label C(applyset.kubernetes.io/is-parent-type).
      - A namespaced parent lives in O(namespace).
      - Objects get the label C(applyset.kubernetes.io/part-of); the parent records the kinds and namespaces of the
        members, so C(kubectl get -l applyset.kubernetes.io/part-of=ID) and C(kubectl apply --applyset) see the same
        set.
    type: str
  applyset_adopt:
    description:
      - Which objects that already exist the O(applyset) may take over, checked before anything is written (a
        refused object fails the task and nothing is applied) - V(none) only objects already in the set, V(unowned)
        also objects in no set, V(all) any object, even another set's (its label is replaced).
      - These are cli-utils' inventory policies C(strict), C(adopt) and C(force-adopt) (airshipctl's
        C(inventoryPolicy)). An object belongs to the set its C(applyset.kubernetes.io/part-of) label names; without
        that label, to the cli-utils inventory its C(config.k8s.io/owning-inventory) annotation names, which counts as
        this set when the inventory's id is the set's name (as airshipctl's inventory of a phase is).
      - Objects that do not exist yet are always applied. Requires O(applyset) unless V(unowned).
      - In a phase of a plan, the set's parent also names the plan that owns it, and another plan is refused the set
        before anything is written; V(all) takes the set over from that plan, with its members. An object another
        plan applied first is reported as shared and keeps that plan's marker, unless V(all) takes it over.
    type: str
    choices: [none, unowned, all]
    default: unowned
  selector:
    description:
      - Apply only the bundle's objects whose labels match this label selector, in kubectl's syntax
        (C(kubectl apply --selector)) - C(key), C(!key), C(key=value), C(key!=value), C(key in) or C(key notin) followed by a list in
        parentheses such as V(env in (a,b\)), C(key>N), C(key<N), joined by commas.
      - With O(prune), members of the set that the selector leaves out are pruned like any member not applied.
    type: str
  applyset_tooling:
    description:
      - The C(applyset.kubernetes.io/tooling) value written on the parent, C(NAME/VERSION).
      - A set whose parent names another tool is refused, as kubectl does. Use C(kubectl/v1.34) (the name must be
        C(kubectl)) to share a set with C(kubectl apply --applyset), in either direction.
    type: str
    default: phasekit.kube/0.1.0
  wait:
    description:
      - Wait until the applied objects are ready - V(false) (do not wait), V(true) (kstatus rules, 300 seconds), or
        a dictionary with the keys below.
      - Unset, V(false) with O(state=present) and V(true) with O(state=absent), where it waits until each deleted
        object is gone (as C(kubectl delete) does) and, on timeout, fails naming the objects still there; only
        O(wait.timeout) applies then.
      - All objects are polled together; on timeout the task fails and says, per object, why it is not ready.
      - Readiness follows kstatus - Deployments, StatefulSets, DaemonSets, ReplicaSets (replicas updated, ready and
        available), Jobs (started, not failed), Pods (ready or completed), PVCs (bound), CRDs (established),
        Services (a load balancer IP when of that type); other kinds are ready when their C(Ready) condition is not
        false and C(status.observedGeneration) matches C(metadata.generation).
      - Not done in check mode.
    type: raw
    suboptions:
      timeout:
        description: Seconds to wait for all objects together.
        type: int
        default: 300
      poll_interval:
        description: The longest pause between two reads of the objects, in seconds (polling backs off to it).
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
          - Extra conditions, each a JMESPath C(path) or a kubectl JSONPath template C(jsonpath) over the live
            object with an expected C(value), optionally limited to a C(kind), C(name) or C(namespace); an object is
            ready when every condition that applies to it is met (after its kind's readiness).
          - Written exactly as the O(phasekit.kube.wait#module:conditions) of M(phasekit.kube.wait), which documents
            each key.
        type: list
        elements: dict
        default: []
  concurrency:
    description: How many objects are applied at once, over one pooled connection (1 to 64).
    type: int
    default: 16
notes:
  - The C(kubernetes) Python package is needed on the controller (and C(jmespath) for O(wait) conditions).
  - Permission errors name the verb, the resource and the user the API server saw.
seealso:
  - module: phasekit.kube.wait
  - name: ApplySet specification (KEP-3659)
    description: How kubectl tracks and prunes a set of applied objects.
    link: https://github.com/kubernetes/enhancements/tree/master/keps/sig-cli/3659-kubectl-apply-prune
  - name: Server-side apply
    description: Field management, conflicts and field managers.
    link: https://kubernetes.io/docs/reference/using-api/server-side-apply/
"""

EXAMPLES = r"""
- name: Apply a kustomization, pruning what was removed from it
  phasekit.kube.apply:
    src: manifests/initinfra
    applyset: initinfra
    namespace: infra
    prune: true

- name: Apply inline objects and wait until the Deployment is available
  phasekit.kube.apply:
    namespace: web
    definition:
      - apiVersion: v1
        kind: Namespace
        metadata:
          name: web
      - apiVersion: apps/v1
        kind: Deployment
        metadata:
          name: web
        spec:
          replicas: 2
          selector:
            matchLabels: {app: web}
          template:
            metadata:
              labels: {app: web}
            spec:
              containers:
                - name: web
                  image: nginx:1.27
    wait:
      timeout: 120

- name: Apply against an explicit kubeconfig and context, waiting on a custom condition
  phasekit.kube.apply:
    kubeconfig: /etc/clusters/target.kubeconfig
    context: target
    src: manifests/certs.yaml
    wait:
      timeout: 300
      conditions:
        - kind: Certificate
          path: "status.conditions[?type=='Ready'].status | [0]"
          value: "True"

- name: Delete an object that no bundle holds any more (missing is fine), waiting until it is gone
  phasekit.kube.apply:
    state: absent
    definition:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: legacy-settings
        namespace: web

- name: Show what would change, without changing anything
  phasekit.kube.apply:
    src: manifests/app
    applyset: app
  check_mode: true
  diff: true
"""

RETURN = r"""
counts:
  description:
    - How many objects were created, configured, unchanged, pruned, or failed.
    - With O(state=absent), how many were deleted, already absent, or failed.
  returned: always
  type: dict
  sample: {created: 2, configured: 1, unchanged: 40, pruned: 3, failed: 0}
objects:
  description:
    - One entry per object of the bundle, then one per pruned object.
    - C(action) is V(created), V(configured), V(unchanged), V(pruned), V(failed), or V(skipped) (not applied
      because an earlier wave failed).
    - C(status) and C(message) are the kstatus readiness (V(Current), V(InProgress), V(Failed), V(Terminating)) at the
      end of the task.
    - Failed objects also have C(error) and C(origin) (the file and document they came from).
    - With O(state=absent), one entry per object that existed - C(action) V(deleted) (in check mode, would be
      deleted) or V(failed) with C(message).
  returned: always
  type: list
  elements: dict
  sample:
    - {apiVersion: apps/v1, kind: Deployment, namespace: web, name: web, action: created, status: Current,
       message: "Deployment is available. Replicas: 2"}
absent:
  description: With O(state=absent), the objects the bundle names that did not exist, as C(Kind namespace/name).
  returned: with O(state=absent)
  type: list
  elements: str
msg:
  description: With O(state=absent), what was deleted (V(would delete ...) in check mode), or that nothing was.
  returned: with O(state=absent)
  type: str
  sample: deleted ConfigMap web/legacy-settings
applyset:
  description: The ApplySet parent and its id (the value of the C(applyset.kubernetes.io/part-of) label).
  returned: when O(applyset) is set
  type: dict
  sample: {name: initinfra, namespace: infra, kind: Secret, tooling: phasekit.kube/0.1.0,
           id: applyset-0eFHV8ySqp7XoShsGcjVYmosYSVXJw4DZ8JmfQ8svrk-v1}
api_requests:
  description: How many HTTP requests the task made to the API server (discovery from the cache costs none).
  returned: always
  type: int
kubeconfig:
  description: Which context, cluster, server and user were used and where they came from (no secrets).
  returned: always
  type: dict
diff:
  description: One before/after entry per created, changed or pruned object (Secret values redacted).
  returned: in diff mode
  type: list
  elements: dict
"""
