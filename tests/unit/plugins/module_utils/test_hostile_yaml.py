# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Hostile YAML and files: cycles, deep nesting, alias bombs, FIFOs, /dev/zero, binary data -> a clear error."""

from __future__ import annotations

import os
import time

import pytest

from ansible_collections.phasekit.kube.plugins.module_utils import yaml_io
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.kubectl_yaml import load_kubectl_yaml
from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.readers import read_kubeconfig_file


def alias_bomb(levels: int = 9, width: int = 9) -> str:
    lines = ['a0: &a0 ["lol"]']
    for level in range(1, levels):
        lines.append(f"a{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


HOSTILE = [
    ("extensions: &a [*a]\n", "contains itself"),
    ("x: " + "[" * 3000 + "]" * 3000 + "\n", "nested"),
    ("x: " + "{a: " * 1100 + "1" + "}" * 1100 + "\n", "nested"),
    (alias_bomb(), "excessive aliasing"),
]
IDS = ["self-referencing-anchor", "3000-deep-lists", "1100-deep-maps", "alias-bomb-9x9"]


@pytest.mark.parametrize("text, message", HOSTILE, ids=IDS)
def test_kubeconfig_loader_refuses_hostile_yaml(text, message):
    began = time.monotonic()
    with pytest.raises(PhasekitError, match=message):
        load_kubectl_yaml(text.encode())
    assert time.monotonic() - began < 30


@pytest.mark.parametrize("text, message", HOSTILE, ids=IDS)
def test_document_loader_refuses_hostile_yaml(text, message):
    with pytest.raises(PhasekitError, match=message) as caught:
        yaml_io.load_all(text, "phases/site.yaml")
    assert str(caught.value).startswith("phases/site.yaml")


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "config"
    os.mkfifo(fifo)
    with pytest.raises(PhasekitError, match="not a regular file"):
        read_kubeconfig_file(str(fifo))


def test_a_device_is_refused():
    with pytest.raises(PhasekitError, match="not a regular file"):
        read_kubeconfig_file("/dev/zero")


def test_binary_garbage_is_said_to_be_binary():
    with pytest.raises(PhasekitError, match="not text"):
        load_kubectl_yaml(bytes(range(256)) * 4)


def test_binary_manifest_file_is_said_to_be_binary(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(PhasekitError, match="not text"):
        yaml_io.read_text_file(str(path), "manifest")
