"""Label selectors in kubectl's syntax (kubectl apply --selector), one rule per row."""

from __future__ import annotations

import pytest

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kube.selectors import parse_label_selector

WEB = {"metadata": {"labels": {"tier": "web", "airshipit.org/deploy-k8s": "true", "rank": "3"}}}
CATALOGUE = {"metadata": {"labels": {"airshipit.org/deploy-k8s": "false"}}}
PLAIN = {"metadata": {"name": "no-labels"}}


@pytest.mark.parametrize("selector, matching", [
    ("tier=web", ["web"]),
    ("tier==web", ["web"]),
    ("tier!=web", ["catalogue", "plain"]),
    ("tier", ["web"]),
    ("!tier", ["catalogue", "plain"]),
    ("airshipit.org/deploy-k8s notin (False, false)", ["web", "plain"]),
    ("airshipit.org/deploy-k8s in (true,false)", ["web", "catalogue"]),
    ("tier=web,rank>2", ["web"]),
    ("rank<3", []),
    ("  tier = web ,  !missing ", ["web"]),
    ("", ["web", "catalogue", "plain"]),
    ("tier in (web)", ["web"]),
], ids=["equals", "double-equals", "not-equals-matches-absent", "exists", "not-exists", "notin-matches-absent",
        "in", "and-with-greater-than", "less-than", "spaces", "empty-matches-everything", "in-one-value"])
def test_label_selectors_match_as_kubernetes_does(selector, matching):
    parsed = parse_label_selector(selector)
    objects = {"web": WEB, "catalogue": CATALOGUE, "plain": PLAIN}
    assert [name for name, obj in objects.items() if parsed.matches(obj)] == matching


@pytest.mark.parametrize("selector, message", [
    ("tier=web=x", "'tier=web=x' in 'tier=web=x' is not a label requirement"),
    ("rank>high", "> needs a whole number"),
    ("tier in web", "is not a label requirement"),
    ("-bad=x", "is not a label requirement"),
], ids=["two-equals", "greater-than-text", "in-without-parentheses", "bad-key"])
def test_bad_selectors_name_the_requirement(selector, message):
    with pytest.raises(PhasekitError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_label_selector(selector, where="selector")
