# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""The one place that imports PyYAML: safe loading and dumping, C-accelerated when available.

ansible-core requires PyYAML, so it is present whenever a plugin runs, but
``ansible-test sanity --test import`` loads module_utils without it; the import
is therefore guarded and using YAML without it raises PhasekitError. Code that
subclasses the loader must build the subclass when first needed (see
``kubeconfig/kubectl_yaml.py``), not at import time.

The libyaml-based ``CSafeLoader``/``CSafeDumper`` are several times faster than
the pure-Python ones on large manifest bundles and behave the same.
"""

from __future__ import annotations

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError

try:
    import yaml
except ImportError as exc:  # reported when YAML is first used
    yaml = None
    YAML_IMPORT_ERROR: ImportError | None = exc

    class YAMLError(Exception):
        """Stand-in so ``except YAMLError`` works without PyYAML; never raised."""

    class MarkedYAMLError(YAMLError):
        """Stand-in for ``yaml.MarkedYAMLError``; never raised."""

    SafeLoader = SafeDumper = ScalarNode = MappingNode = None
else:
    YAML_IMPORT_ERROR = None
    YAMLError = yaml.YAMLError
    MarkedYAMLError = yaml.MarkedYAMLError
    SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    SafeDumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    ScalarNode = yaml.ScalarNode
    MappingNode = yaml.MappingNode


def require_yaml() -> None:
    """Fail clearly when PyYAML is missing on the controller (ansible-core itself needs it)."""
    if YAML_IMPORT_ERROR is not None:
        raise PhasekitError(f"the 'PyYAML' Python package is required on the Ansible controller: {YAML_IMPORT_ERROR}")


def safe_loader_class() -> type:
    """The safe loader class (``CSafeLoader`` when available), to subclass or to pass as ``loader``."""
    require_yaml()
    return SafeLoader


def load_all(text: str, label: str, loader: type | None = None) -> list:
    """Every document of a YAML (or JSON) stream, empty documents as None.

    ``loader`` defaults to the safe loader and must be a safe loader or a
    subclass of one. A syntax error becomes PhasekitError naming ``label``
    (the file, for people), the line and column, and the problem.
    """
    require_yaml()
    try:
        return list(yaml.load_all(text, Loader=loader or SafeLoader))  # nosec B506 - a safe loader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise PhasekitError(f"{label}{where}: invalid YAML: {problem}") from None


def safe_dump(data, stream=None, *, sort_keys: bool = True) -> str | None:
    """Block-style YAML of plain data with the safe dumper: to ``stream``, or returned as text."""
    require_yaml()
    return yaml.dump(data, stream, Dumper=SafeDumper, default_flow_style=False, sort_keys=sort_keys)
