# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Which values hold Jinja templates (rendered with a cluster host's variables by plugin_utils.templates).
What templates carry into output is masked by ``masking``.

Plain data only: planning and the executors ask here whether there is anything to render at all, so the
common case (no template) costs no templating.
"""

from __future__ import annotations

TEMPLATE_MARKERS = ("{{", "{%", "{#")


def is_template_text(value) -> bool:
    """Whether ``value`` is a string holding a Jinja expression, statement or comment."""
    return isinstance(value, str) and any(marker in value for marker in TEMPLATE_MARKERS)


def has_template_strings(value) -> bool:
    """Whether any string in ``value`` (mappings and lists, to any depth) holds a template."""
    if isinstance(value, dict):
        return any(has_template_strings(item) for item in value.values())
    if isinstance(value, list):
        return any(has_template_strings(item) for item in value)
    return is_template_text(value)
