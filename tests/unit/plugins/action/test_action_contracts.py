# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Each action's argument spec and its documentation (``plugins/modules/<name>.py``, shown by ``ansible-doc``)
say the same thing: every option, its type, default, choices and list element type. A new option that is
validated but not documented, or documented but dropped, fails here."""

from __future__ import annotations

import importlib
import pkgutil

import pytest
import yaml

ACTIONS = "ansible_collections.phasekit.kube.plugins.action"
MODULES = "ansible_collections.phasekit.kube.plugins.modules"
FRAGMENTS = "ansible_collections.phasekit.kube.plugins.doc_fragments"
COMPARED = ("type", "default", "choices", "elements")


def action_names() -> list[str]:
    package = importlib.import_module(ACTIONS)
    return sorted(info.name for info in pkgutil.iter_modules(package.__path__))


def documented_options(name: str) -> dict:
    """The options ``ansible-doc`` shows for ``name``: its own and those of the doc fragments it extends."""
    doc = yaml.safe_load(importlib.import_module(f"{MODULES}.{name}").DOCUMENTATION)
    options = {}
    for fragment in doc.get("extends_documentation_fragment") or []:
        if not fragment.startswith("phasekit.kube."):
            continue  # ansible.builtin's fragments document attributes (check mode, diff), not options
        module, _dot, attribute = fragment.removeprefix("phasekit.kube.").partition(".")
        fragment_doc = getattr(importlib.import_module(f"{FRAGMENTS}.{module}").ModuleDocFragment,
                               (attribute or "DOCUMENTATION").upper())
        options.update(yaml.safe_load(fragment_doc).get("options") or {})
    options.update(doc.get("options") or {})
    return options


def contract(spec: dict) -> dict:
    """The parts of an option both sides state, with Ansible's defaults filled in (type str, no default)."""
    out = {}
    for name, option in spec.items():
        shown = {key: option[key] for key in COMPARED if option.get(key) is not None}
        shown.setdefault("type", "str")
        if shown["type"] == "bool" and "default" not in shown:
            shown["default"] = None
        out[name] = shown
    return out


def test_every_action_has_its_documentation():
    modules = importlib.import_module(MODULES)
    assert action_names() == sorted(info.name for info in pkgutil.iter_modules(modules.__path__))


@pytest.mark.parametrize("name", action_names())
def test_argument_spec_and_documentation_agree(name):
    action = importlib.import_module(f"{ACTIONS}.{name}")
    spec = contract(action.ActionModule.ARGUMENT_SPEC)
    documented = contract(documented_options(name))
    assert sorted(spec) == sorted(documented), f"{name}: options validated but not documented, or documented only"
    differing = {option: (spec[option], documented[option]) for option in spec if spec[option] != documented[option]}
    assert not differing, f"{name}: (argument spec, documentation) differ: {differing}"
