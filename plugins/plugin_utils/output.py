# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Tables and other text shown on the controller's screen as plain lines, as kubectl prints them.

A ``debug`` task's message list is printed by the default callback as JSON (every line quoted and escaped). An action
shows lines with Ansible's ``Display`` instead: from a worker they go to the main process in order, under the task's
banner and before its outcome line; ansible-runner (AWX) makes each one a ``verbose`` event of the task, whose
``stdout`` is the line. A stdout callback that prints JSON (``ansible.posix.json``, ``jsonl``) would get them in
front of its document: there the lines stay out of the screen and go into the task's result, where JSON readers
look for them.
"""

from __future__ import annotations

from ansible import constants as C
from ansible.utils.display import Display

JSON_CALLBACKS = ("json", "jsonl")  # the last part of a stdout callback's name that prints JSON documents

display = Display()


def stdout_callback() -> str:
    """The stdout callback the run was configured with (``ANSIBLE_STDOUT_CALLBACK``, ansible.cfg)."""
    return str(getattr(C, "DEFAULT_STDOUT_CALLBACK", "") or "default")


def prints_json(callback: str) -> bool:
    """Whether the stdout callback named ``callback`` prints JSON (``ansible.posix.json``, ``json``, ``jsonl``)."""
    return callback.rsplit(".", 1)[-1] in JSON_CALLBACKS


def show_lines(lines: list[str]) -> dict:
    """Show ``lines`` as they are, one screen line each, and return what the task's result holds of them: nothing
    (a short result), or the lines under ``lines`` when the stdout callback prints JSON."""
    if prints_json(stdout_callback()):
        return {"lines": list(lines)}
    for text in lines:
        for line in str(text).splitlines() or [""]:  # one event per line in ansible-runner's stream too
            display.display(line)
    return {}
