# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Property-based fuzz of the kubeconfig loader and the phase document parser: whatever the input, the only
exception is the collection's own error (a message for people), never a Python traceback."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.phasekit.kube.plugins.module_utils import yaml_io
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.decode import decode_kubeconfig_bytes
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.model import Origin
from ansible_collections.phasekit.kube.plugins.module_utils.planning.documents import inline_documents
from ansible_collections.phasekit.kube.plugins.module_utils.planning.inventory import Inventory
from ansible_collections.phasekit.kube.plugins.module_utils.planning.planner import build_plan
from ansible_collections.phasekit.kube.plugins.plugin_utils.plan import executors

ORIGIN = Origin(1, "path", "fuzz.yaml", path="/fuzz/fuzz.yaml")
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(st.text(max_size=12), inner, max_size=4)),
                      max_leaves=25)
KUBECONFIG_KEYS = ["apiVersion", "kind", "clusters", "users", "contexts", "current-context", "preferences",
                   "extensions", "name", "cluster", "user", "context", "server", "token", "namespace", "exec",
                   "as", "as-groups", "certificate-authority-data", "insecure-skip-tls-verify"]
shaped = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(KUBECONFIG_KEYS), inner, max_size=6)),
    max_leaves=30)


def loads_or_refuses(data) -> None:
    try:
        decode_kubeconfig_bytes(data, ORIGIN)
    except PhasekitError:
        pass


@SETTINGS
@given(st.binary(max_size=400))
def test_kubeconfig_loader_on_arbitrary_bytes(data):
    loads_or_refuses(data)


@SETTINGS
@given(shaped)
def test_kubeconfig_loader_on_kubeconfig_shaped_yaml(document):
    loads_or_refuses(yaml_io.safe_dump(document).encode())


PHASE_KEYS = ["apiVersion", "kind", "metadata", "spec", "name", "cluster", "executor", "source", "options",
              "phases", "description", "apply", "tasks", "command", "wait", "kubeconfig", "phasekit.dev/v1alpha1",
              "Phase", "PhasePlan"]
phase_shaped = st.recursive(st.one_of(scalars, st.sampled_from(PHASE_KEYS)), lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(PHASE_KEYS), inner, max_size=6)), max_leaves=30)
INVENTORY = Inventory(groups={"all": ["a", "b"], "ungrouped": ["a", "b"], "g": ["a", "b"]})


@SETTINGS
@given(st.one_of(phase_shaped, values))
def test_phase_parser_on_arbitrary_documents(documents):
    try:
        build_plan(inline_documents(documents, "/fuzz"), executors=executors(), inventory=INVENTORY)
    except PhasekitError:
        pass
