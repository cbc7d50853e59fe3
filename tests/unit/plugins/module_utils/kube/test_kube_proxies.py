# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The proxy variables of a task's environment: keyword reach the API client as the controller's reach it."""

from __future__ import annotations

import pytest

from ansible_collections.phasekit.kube.plugins.module_utils.environ import Environ
from ansible_collections.phasekit.kube.plugins.module_utils.kube.client import api_client


def kubeconfig(proxy_url=None, server="https://api.test:6443"):
    cluster = {"server": server, "insecure-skip-tls-verify": True}
    if proxy_url:
        cluster["proxy-url"] = proxy_url
    return {"apiVersion": "v1", "kind": "Config", "current-context": "c",
            "clusters": [{"name": "k", "cluster": cluster}], "users": [{"name": "u", "user": {"token": "t0ken"}}],
            "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}]}


@pytest.mark.parametrize("config, environ, proxy, no_proxy", [
    (kubeconfig(), Environ(play={"HTTPS_PROXY": "http://play:3128", "NO_PROXY": "other.test"}, base={}),
     "http://play:3128", "other.test"),
    (kubeconfig(server="http://api.test:8080"), Environ(task={"http_proxy": "http://task:3128"}, base={}),
     "http://task:3128", None),
    (kubeconfig(), Environ(task={"ALL_PROXY": "http://all:3128"}, base={}), "http://all:3128", None),
    (kubeconfig(proxy_url="http://kubeconfig:3128"), Environ(play={"HTTPS_PROXY": "http://play:3128"}, base={}),
     "http://kubeconfig:3128", None),
], ids=["play-https-proxy-and-no-proxy", "task-http-proxy-for-http", "all-proxy", "kubeconfig-proxy-url-wins"])
def test_the_keyword_s_proxies_reach_the_client(monkeypatch, config, environ, proxy, no_proxy):
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY",
                 "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    with api_client(config, environ=environ) as api:
        assert (api.configuration.proxy, api.configuration.no_proxy) == (proxy, no_proxy)


def test_without_a_keyword_the_client_keeps_its_own_reading(monkeypatch):
    monkeypatch.setenv("HTTPS_PROXY", "http://controller:3128")
    with api_client(kubeconfig()) as plain, api_client(kubeconfig(), environ=Environ(task={"A": "b"})) as keyword:
        assert plain.configuration.proxy == keyword.configuration.proxy


@pytest.mark.parametrize("controller, proxy", [
    ({}, "http://kubeconfig:3128"),
    ({"HTTPS_PROXY": "http://controller:3128"}, "http://kubeconfig:3128"),
], ids=["kubeconfig-proxy-url", "kubeconfig-proxy-url-beats-the-controller-s"])
def test_the_cluster_s_proxy_url_reaches_the_client_on_every_client_major(monkeypatch, controller, proxy):
    """The kubernetes client's loader reads proxy-url itself only from its major 37: kube/client.py sets it."""
    for name in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    for name, value in controller.items():
        monkeypatch.setenv(name, value)
    with api_client(kubeconfig(proxy_url="http://kubeconfig:3128")) as api:
        assert api.configuration.proxy == proxy
