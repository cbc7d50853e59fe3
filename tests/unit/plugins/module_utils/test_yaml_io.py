"""yaml_io: the one home of PyYAML; module_utils import without it (as in ``ansible-test sanity --test import``)."""

from __future__ import annotations

import datetime
import io
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ansible_collections.phasekit.kube.plugins.module_utils import yaml_io
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError

REPO = Path(__file__).resolve().parents[4]

# Every module_utils module that reads or writes YAML, directly or through an import.
YAML_USERS = [
    "kubeconfig.kubectl_yaml", "kubeconfig.decode", "kubeconfig.readers", "kubeconfig.resolve", "kubeconfig.write",
    "planning.command", "planning.documents", "planning.executors", "planning.planner", "inventory.kubeconfig_contexts",
]


@pytest.mark.parametrize("text, expected", [
    ("a: 1\n---\n- x\n", [{"a": 1}, ["x"]]),
    ("---\n---\nb: true\n", [None, {"b": True}]),
    ('{"kind": "List", "items": []}', [{"kind": "List", "items": []}]),
    ("", []),
], ids=["two-documents", "empty-document-is-none", "json", "empty-stream"])
def test_load_all(text, expected):
    assert yaml_io.load_all(text, "f.yaml") == expected


# libyaml and pure PyYAML word problems differently: the position and a keyword are checked.
@pytest.mark.parametrize("text, where, problem", [
    ("a: [1\n", "f.yaml line 2 column 1: invalid YAML: ", "']'"),
    ("a: b: c\n", "f.yaml line 1 column 5: invalid YAML: ", "mapping values are not allowed"),
    ("!!python/object:os.system {}\n", "f.yaml line 1 column 1: invalid YAML: ", "could not determine a constructor"),
], ids=["unclosed-flow", "nested-mapping-on-one-line", "unsafe-tag-refused"])
def test_load_all_errors_name_label_line_and_problem(text, where, problem):
    with pytest.raises(PhasekitError) as caught:
        yaml_io.load_all(text, "f.yaml")
    assert str(caught.value).startswith(where)
    assert problem in str(caught.value)


@pytest.mark.parametrize("sort_keys, expected", [
    (True, "a:\n- 1\nb: x\n"),
    (False, "b: x\na:\n- 1\n"),
], ids=["sorted", "insertion-order"])
def test_safe_dump_block_style(sort_keys, expected):
    data = {"b": "x", "a": [1]}
    assert yaml_io.safe_dump(data, sort_keys=sort_keys) == expected
    stream = io.StringIO()
    assert yaml_io.safe_dump(data, stream, sort_keys=sort_keys) is None
    assert stream.getvalue() == expected


def test_safe_loader_is_c_accelerated_when_available():
    assert yaml_io.safe_loader_class() is getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def test_module_utils_import_without_pyyaml_and_fail_clearly_on_use(tmp_path):
    link = tmp_path / "ansible_collections" / "phasekit" / "kube"
    link.parent.mkdir(parents=True)
    link.symlink_to(REPO)
    prefix = "ansible_collections.phasekit.kube.plugins.module_utils."
    probe = "\n".join([
        "import importlib, sys",
        f"sys.path.insert(0, {str(tmp_path)!r})",
        "sys.modules['yaml'] = None",
        f"for name in {YAML_USERS!r}: importlib.import_module({prefix!r} + name)",
        f"from {prefix}kubeconfig.kubectl_yaml import load_kubectl_yaml",
        "try:",
        "    load_kubectl_yaml('a: 1')",
        "except Exception as exc:",
        "    print(type(exc).__name__, exc)",
    ])
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("PhasekitError the 'PyYAML' Python package is required on the Ansible controller")


def test_copy_data_is_deep_and_keeps_scalars():
    stamp = datetime.datetime(2026, 1, 2, 3, 4, 5)
    original = {"metadata": {"labels": {"a": "b"}}, "items": [{"n": 1}, [2.5, None, True]], "when": stamp}
    copied = yaml_io.copy_data(original)
    assert copied == original
    copied["metadata"]["labels"]["a"] = "changed"
    copied["items"][0]["n"] = 2
    copied["items"][1].append("more")
    assert original == {"metadata": {"labels": {"a": "b"}}, "items": [{"n": 1}, [2.5, None, True]], "when": stamp}
