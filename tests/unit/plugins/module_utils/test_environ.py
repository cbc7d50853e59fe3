# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""An action's environment: its task's environment: keyword over the controller's, where each value came from,
the proxies it sets, and the once-per-run warning when hosts' own variables beat it."""

from __future__ import annotations

import pytest

from ansible_collections.phasekit.kube.plugins.module_utils.environ import (
    CONTROLLER, PLAY, TASK, Environ, Overridden, environment_label, environment_proxies, origin_of, overridden_warnings,
    process_environment, sets_proxies)

BASE = {"K8S_AUTH_CONTEXT": "controller", "PATH": "/bin", "KUBECONFIG": "/k"}


@pytest.mark.parametrize("environ, name, value, origin", [
    (Environ(task={"K8S_AUTH_CONTEXT": "t"}, play={"K8S_AUTH_CONTEXT": "p"}, base=BASE), "K8S_AUTH_CONTEXT", "t", TASK),
    (Environ(play={"K8S_AUTH_CONTEXT": "p"}, base=BASE), "K8S_AUTH_CONTEXT", "p", PLAY),
    (Environ(play={"K8S_AUTH_CONTEXT": "p"}, base=BASE), "PATH", "/bin", CONTROLLER),
    (BASE, "K8S_AUTH_CONTEXT", "controller", CONTROLLER),
    (Environ(task={"KUBECONFIG": ""}, base=BASE), "KUBECONFIG", "", TASK),
], ids=["task-over-play", "play-over-controller", "controller-fills-the-rest", "plain-mapping-is-the-controller",
        "an-empty-value-is-the-keyword-s"])
def test_each_variable_comes_from_the_nearest_environment(environ, name, value, origin):
    assert (environ[name], origin_of(environ, name)) == (value, origin)
    assert environment_label(environ, name) == f"{origin} {name}"


def test_environ_is_a_read_only_mapping_of_every_variable_once():
    environ = Environ(task={"A": "t"}, play={"A": "p", "B": "p"}, base={"B": "c", "C": "c"})
    assert dict(environ) == {"A": "t", "B": "p", "C": "c"}
    assert len(environ) == 3 and environ.get("D") is None
    assert environ.keyword == {"A": "t", "B": "p"}
    assert process_environment(environ) == {"A": "t", "B": "p", "C": "c"}


@pytest.mark.parametrize("environ, proxies", [
    ({"HTTPS_PROXY": "http://up:1", "NO_PROXY": "a.test"}, {"https": "http://up:1", "no": "a.test"}),
    ({"HTTPS_PROXY": "http://up:1", "https_proxy": "http://low:1"}, {"https": "http://low:1"}),
    ({"HTTPS_PROXY": "http://up:1", "https_proxy": ""}, {}),
    ({"ALL_PROXY": "socks5://s:1", "PATH": "/bin"}, {"all": "socks5://s:1"}),
], ids=["uppercase", "lowercase-wins", "empty-lowercase-unsets", "all-proxy"])
def test_proxies_are_read_as_urllib_reads_them(environ, proxies):
    assert environment_proxies(environ) == proxies


@pytest.mark.parametrize("environ, sets", [
    (Environ(play={"HTTPS_PROXY": "http://p:1"}, base={}), True),
    (Environ(task={"no_proxy": "x"}, base={}), True),
    (Environ(task={"K8S_AUTH_CONTEXT": "x"}, base={"HTTPS_PROXY": "http://c:1"}), False),
    ({"HTTPS_PROXY": "http://c:1"}, False),
    (None, False),
], ids=["play-proxy", "task-no-proxy", "controller-proxy-is-the-client-s", "plain-mapping", "none"])
def test_only_a_keyword_s_proxies_are_ours_to_set(environ, sets):
    assert sets_proxies(environ) is sets


def test_overridden_values_are_said_once_per_variable_with_the_number_of_hosts():
    context = Overridden("K8S_AUTH_CONTEXT", CONTROLLER, "kube_context")
    host = Overridden("K8S_AUTH_HOST", PLAY, "kube_host")
    warnings = overridden_warnings({context: ["a", "b", "c", "a"], host: ["a"]})
    assert warnings == [
        "K8S_AUTH_CONTEXT from the controller environment is overridden by 3 hosts' own kube_context: a host's own "
        "kube_* variables win, K8S_AUTH_CONTEXT only fills what a host leaves unset (see "
        "docs/kubeconfig.md#precedence)",
        "K8S_AUTH_HOST from the play environment is overridden by 1 host's own kube_host: a host's own kube_* "
        "variables win, K8S_AUTH_HOST only fills what a host leaves unset (see docs/kubeconfig.md#precedence)"]
