# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""hack/ansible-test-registry.py: a requirement on an archive outside the package registry becomes the package's
name (its newest release); every other line is left as it is."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "hack" / "ansible-test-registry.py"
SPEC = importlib.util.spec_from_file_location("ansible_test_registry", SCRIPT)
REGISTRY = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(REGISTRY)

DILL = ("dill @ https://github.com/uqfoundation/dill/archive/2308ffb0d0c605b9c050fa4c9fd5793d65c67022.zip"
        "#sha256=090190c7a7f6d6c3bd22f0be94e571e2c70c679d66ccf5be08baa51303607331")


@pytest.mark.parametrize("text, expected", [
    (f"astroid==4.0.4\n{DILL}\nisort==9.0.1\n", "astroid==4.0.4\ndill\nisort==9.0.1\n"),
    (f"{DILL}  # needed until dill released with 3.15 support\n", "dill\n"),
    ("pkg @ https://files.pythonhosted.org/packages/aa/bb/pkg-1.0-py3-none-any.whl\n",
     "pkg @ https://files.pythonhosted.org/packages/aa/bb/pkg-1.0-py3-none-any.whl\n"),
    ("pylint==4.0.8\nPyYAML==6.0.3\n", "pylint==4.0.8\nPyYAML==6.0.3\n"),
    ("# see https://github.com/sarugaku/resolvelib/issues/69\nresolvelib < 2.0.0\n",
     "# see https://github.com/sarugaku/resolvelib/issues/69\nresolvelib < 2.0.0\n"),
], ids=["archive-outside-the-registry-becomes-the-release", "its-comment-goes-with-it", "a-registry-file-stays",
        "pins-stay", "a-url-in-a-comment-stays"])
def test_registry_only(text, expected):
    assert REGISTRY.registry_only(text) == expected
