#!/usr/bin/env python3
# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""ansible-test, with the requirements of its test environments taken from the package registry only.

ansible-core 2.22.0rc1's ansible-test pins pylint's dependency dill to a GitHub archive ("needed until dill released
with 3.15 support", its sanity.pylint.in); CI reaches the package registries only, so the pylint sanity test could not
be set up. A requirement naming an archive outside the registry becomes that package's newest release (dill's supports
every Python CI runs), and a line says so. The environment keeps the name ansible-test gives it (computed from its own
pins), so later runs reuse it. Nothing else changes; with no such requirement this is ansible-test as it is.

    python hack/ansible-test-registry.py sanity ...   (the Makefile's ansible-test-sanity)
"""

from __future__ import annotations

import dataclasses
import re
import sys

# name @ URL, for a URL not on the package registry (its files are served from files.pythonhosted.org)
OUTSIDE_REGISTRY = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9_.-]*)\s*@\s*(?P<url>https?://(?!files\.pythonhosted\.org/)"
                              r"\S+)[^\n]*$", re.MULTILINE)


def registry_only(text: str) -> str:
    """Requirements text with every requirement on an archive outside the registry replaced by the package's name."""
    def released(match: re.Match) -> str:
        print(f"ansible-test-registry: {match.group('name')}: the newest release from the package registry instead of "
              f"{match.group('url').split('#')[0]}", file=sys.stderr)
        return match.group("name")

    return OUTSIDE_REGISTRY.sub(released, text)


def install_from_registry() -> None:
    """Have ansible-test's pip step (one function, imported by name in three modules) install registry packages."""
    from ansible_test._internal import python_requirements, venv  # pylint: disable=import-outside-toplevel
    from ansible_test._internal.commands import sanity  # pylint: disable=import-outside-toplevel

    original = python_requirements.run_pip

    def run_pip(args, python, commands, connection=None):
        commands = [dataclasses.replace(command, requirements=[(path, registry_only(text))
                                                               for path, text in command.requirements])
                    if isinstance(command, python_requirements.PipInstall) else command
                    for command in commands]
        return original(args, python, commands, connection)

    for module in (python_requirements, venv, sanity):
        if getattr(module, "run_pip", None) is original:
            module.run_pip = run_pip


def main() -> None:
    from ansible_test._util.target.cli import ansible_test_cli_stub  # pylint: disable=import-outside-toplevel

    install_from_registry()
    sys.argv[0] = "ansible-test"
    ansible_test_cli_stub.main()


if __name__ == "__main__":
    main()
