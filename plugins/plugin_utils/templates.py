# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Jinja template files rendered with a cluster host's variables, as ``ansible.builtin.template`` renders them.

Works with ansible-core 2.16 to the newest (what differs is in the two ``compat.py``: plugin_utils, module_utils).
Errors name the file; a variable's value is never part of them.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping

from ansible.errors import AnsibleError
from jinja2.exceptions import TemplateSyntaxError

from ansible_collections.phasekit.kube.plugins.module_utils import compat, yaml_io
from ansible_collections.phasekit.kube.plugins.plugin_utils import compat as controller_compat
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.templating import is_template_text

# Ansible's templating is not meant for threads (the fleet's clusters run in a pool): one render at a time.
TEMPLATE_LOCK = threading.Lock()
_NAME = r"'([A-Za-z_][A-Za-z0-9_]*)'"
# what a message says was used and failed, and how the template writes it: (message pattern, use pattern)
_USES = (
    (re.compile(_NAME + " is undefined"), r"(?<![\w.]){}(?!\w)"),
    (re.compile("[Mm]andatory variable " + _NAME), r"(?<![\w.]){}(?!\w)"),
    (re.compile("has no attribute " + _NAME), r"(?:\.{0}(?!\w)|\[\s*['\"]{0}['\"]\s*\])"),
    (re.compile(r"filter plugin '(?:\w+\.)*(\w+)' failed"), r"\|\s*{}(?!\w)"),
    (re.compile(r"test plugin '(?:\w+\.)*(\w+)' failed"), r"\bis\s+(?:not\s+)?{}(?!\w)"),
)


def render_template_file(templar, path: str, variables, what: str = "template") -> str:
    """The file at ``path`` rendered with ``variables`` (a host's variables, as a task on that host sees them)."""
    return render_template_text(templar, yaml_io.read_document_file(path, what), variables, f"{what} {path}")


def render_template_text(templar, text: str, variables, where: str) -> str:
    """``text`` rendered with ``variables``; an error names ``where``, the template's line and what failed (an
    undefined variable by name), never a value."""
    with TEMPLATE_LOCK:
        rendering = controller_compat.templar_with_variables(templar, variables)
        try:
            rendered = rendering.template(controller_compat.trust_as_template(text), escape_backslashes=False)
        except AnsibleError as exc:
            failure = controller_compat.template_failure(exc)
            line = _template_line(exc) or _line_using(text, failure.name, failure.message)
            raise PhasekitError(f"{where}{f' line {line}' if line else ''}: {failure.message}") from None
        except Exception as exc:  # pylint: disable=broad-exception-caught
            # before 2.19 a filter's own exception (from_json's JSONDecodeError) is not wrapped in AnsibleError
            line = _template_line(exc)
            raise PhasekitError(f"{where}{f' line {line}' if line else ''}: error rendering template: "
                                f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from None
    # a plain str: before 2.19 it is AnsibleUnsafeText, which libyaml's loader (PyYAML 6.0.4) refuses
    text = compat.plain_str(rendered) if isinstance(rendered, str) else str(rendered)
    _check_utf8(text, where)
    return text


def _check_utf8(text: str, where: str) -> None:
    """Ansible's b64decode of something that is not base64 text gives bytes that are not UTF-8, kept as surrogates:
    nothing can print, parse or send them. Refused naming the rendered line, never its text."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        line = text.count("\n", 0, exc.start) + 1
        raise PhasekitError(f"{where}: rendered line {line} is not UTF-8 text (a b64decode of a value that is not "
                            "base64-encoded text?)") from None


def render_strings(templar, value, variables, where: str):
    """``value`` (options: mappings, lists, scalars) with every string that holds a template rendered."""
    if isinstance(value, str):
        return render_template_text(templar, value, variables, where) if is_template_text(value) else value
    if isinstance(value, dict):
        return {key: render_strings(templar, item, variables, f"{where}.{key}") for key, item in value.items()}
    if isinstance(value, list):
        return [render_strings(templar, item, variables, f"{where}[{index}]") for index, item in enumerate(value)]
    return value


def host_variables(hostvars, host: str):
    """A host's variables as a task on it sees them, untemplated (the templar templates what a template uses):
    inventory, group and host vars (vault-encrypted ones too), extra vars and magic variables."""
    raw_get = getattr(hostvars, "raw_get", None)
    return raw_get(host) if raw_get is not None else dict(hostvars[host])


# Variables Ansible makes for every host (VariableManager's magic variables): never vault-encrypted, and several are
# lists of every host of the play or inventory, so walking them for each host costs the square of the fleet's size.
MAGIC_VARIABLES = frozenset({
    "groups", "group_names", "ansible_play_hosts", "ansible_play_hosts_all", "ansible_play_batch", "play_hosts",
    "ansible_play_role_names", "ansible_role_names", "ansible_dependent_role_names", "role_names", "omit",
    "ansible_version", "ansible_inventory_sources", "ansible_run_tags", "ansible_skip_tags", "inventory_hostname",
    "inventory_hostname_short", "inventory_dir", "inventory_file", "playbook_dir", "ansible_playbook_python",
    "ansible_config_file", "ansible_check_mode", "ansible_diff_mode", "ansible_forks", "ansible_verbosity"})


def vault_values(variables) -> set[str]:
    """The plain text of every vault-encrypted value among ``variables`` (to any depth; Ansible's magic variables
    aside): what templates may carry into objects, diffs and messages, and what ``masking.Masks`` hides in them.
    Decrypts them (a template using them does the same); asked only for hosts whose templates were rendered."""
    found: set[str] = set()
    stack = [value for name, value in variables.items() if name not in MAGIC_VARIABLES] \
        if isinstance(variables, Mapping) else [variables]
    while stack:
        value = stack.pop()
        if controller_compat.is_vaulted(value):
            try:
                plain = str(value)
            except AnsibleError:  # not decryptable here: then no template could have used it either
                continue
            found.add(compat.plain_str(plain))  # masking.Masks expands it into the forms it may be shown in
        elif isinstance(value, Mapping):
            stack.extend(value.values())
        elif isinstance(value, (list, tuple)):
            stack.extend(value)
    return found


def _template_line(exc: BaseException) -> int | None:
    """The line of the template the error happened on: Jinja's own for a syntax error, else the deepest frame
    of the compiled template in the traceback (mapped back to the template's line where Jinja left the frame of
    its compiled code)."""
    seen = set()
    current = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        lineno = getattr(current, "lineno", None)
        # Jinja's own line only: a JSON or YAML error's lineno is a line of the text it parsed, not of the template
        if isinstance(current, TemplateSyntaxError) and isinstance(lineno, int) and lineno > 0:
            return lineno
        line = None
        trace = current.__traceback__
        while trace is not None:
            if trace.tb_frame.f_code.co_filename == "<template>":
                template = trace.tb_frame.f_globals.get("__jinja_template__")
                line = template.get_corresponding_lineno(trace.tb_lineno) if template else trace.tb_lineno
            trace = trace.tb_next
        if line is not None:
            return line
        current = current.__cause__ or current.__context__
    return None


def _line_using(text: str, name: str | None, message: str) -> int | None:
    """The first line where a template expression or statement uses what failed: the filter or test ``name``,
    else the variable or attribute the message names (undefined values are found once rendering is over, so no
    frame of the template says where)."""
    if name:
        uses = [re.compile(r"(?<![\w.]){}(?!\w)".format(re.escape(name.rsplit(".", 1)[-1])))]
    else:
        uses = [re.compile(use.format(re.escape(match.group(1))))
                for pattern, use in _USES for match in [pattern.search(message)] if match]
    for use in uses:
        for number, line in enumerate(text.splitlines(), start=1):
            if ("{{" in line or "{%" in line) and use.search(line):
                return number
    return None
