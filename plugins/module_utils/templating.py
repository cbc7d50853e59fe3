# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Which values hold Jinja templates (rendered with a cluster host's variables by plugin_utils.templates), and
secrets scrubbed from what is shown.

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


MIN_SECRET = 4  # shorter values are too common in messages to mark a secret (and to be worth scrubbing)


def scrub_secrets(value, secrets, hidden: str = "***"):
    """``value`` (text, or mappings and lists of it) with every occurrence of a secret replaced by ``hidden``:
    values of vault-encrypted variables that templates may have carried into objects, diffs or messages, or a
    Secret's values an API server quoted back."""
    secrets = sorted((secret for secret in secrets or () if len(secret) >= MIN_SECRET), key=len, reverse=True)
    if not secrets:
        return value
    return _scrub(value, secrets, hidden)


def _scrub(value, secrets, hidden):
    if isinstance(value, str):
        for secret in secrets:
            if secret in value:
                value = value.replace(secret, hidden)
        return value
    if isinstance(value, dict):
        return {_scrub(key, secrets, hidden): _scrub(item, secrets, hidden) for key, item in value.items()}
    if isinstance(value, list):
        return [_scrub(item, secrets, hidden) for item in value]
    return value
