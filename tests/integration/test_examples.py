# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Every plugin's EXAMPLES, and every YAML block of the Markdown docs, are tested.

For each plugin documentation (modules, lookups, filters, inventory plugins):

- EXAMPLES exist and are YAML without duplicate keys (a copied example must mean
  what it shows); task examples are a list of named tasks, inventory examples are
  configuration documents for ``phasekit.kube.clusters``;
- every task example uses the plugin it documents, under its full name;
- every option an example sets (module arguments, lookup and filter keyword
  arguments, inventory configuration keys, down to sub-options) is documented,
  as ``ansible-doc`` reads the documentation, and every Jinja2 template parses;
- task examples wrapped into a play pass ``ansible-playbook --syntax-check``
  against this working tree.

Examples are not run against a cluster: they name files and clusters of an
imagined site (SOPS files, kustomizations, contexts), so the syntax check and the
option check are the bar. The Markdown check parses every fenced ``yaml`` block;
a block preceded by ``<!-- no-test -->`` (a fragment or a deliberate placeholder)
is skipped.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import jinja2
import pytest
import yaml
from jinja2 import nodes

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
NAMESPACE = "phasekit.kube"
PLUGIN_DIRS = {"module": "modules", "lookup": "lookup", "filter": "filter", "inventory": "inventory"}
TASK_PLUGINS = ("module", "lookup", "filter")
INVENTORY_PLUGIN_KEY = "plugin"
# Task keys that hold bare Jinja2 expressions (no braces).
EXPRESSION_KEYS = ("when", "changed_when", "failed_when", "until")
NESTED_TASK_KEYS = ("block", "rescue", "always")
NO_TEST_MARK = "<!-- no-test -->"
MARKDOWN_DOCS = sorted(
    [REPO / "README.md", *(REPO / "docs").glob("*.md"), REPO / "examples/site/README.md",
     REPO / "roles/plan/README.md"],
    key=str)
JINJA = jinja2.Environment()


# ------------------------------------------------------------------ finding the documentation

@dataclass(frozen=True)
class PluginDoc:
    """One plugin's documentation: where it lives and its EXAMPLES text (None when missing)."""

    plugin_type: str
    name: str
    path: Path
    examples: str | None

    @property
    def fqcn(self) -> str:
        return f"{NAMESPACE}.{self.name}"

    @property
    def id(self) -> str:
        return f"{self.plugin_type}:{self.name}"


def python_string_constants(path: Path) -> dict[str, str]:
    """Module-level ``NAME = "text"`` assignments of a plugin file, read without importing it."""
    constants = {}
    for statement in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Constant) \
                and isinstance(statement.value.value, str):
            for target in statement.targets:
                if isinstance(target, ast.Name):
                    constants[target.id] = statement.value.value
    return constants


def exported_filters(path: Path) -> list[str]:
    """The names a filter plugin file's ``FilterModule.filters()`` returns (its literal dict keys)."""
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef) and node.name == "filters":
            for inner in ast.walk(node):
                if isinstance(inner, ast.Return) and isinstance(inner.value, ast.Dict):
                    names += [key.value for key in inner.value.keys if isinstance(key, ast.Constant)]
    return names


def plugin_docs() -> list[PluginDoc]:
    """Every documented plugin of the collection. Filters are documented in ``<name>.yml`` files."""
    docs = []
    for plugin_type, directory in PLUGIN_DIRS.items():
        folder = REPO / "plugins" / directory
        if plugin_type == "filter":
            for path in sorted([*folder.glob("*.yml"), *folder.glob("*.yaml")]):
                examples = (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("EXAMPLES")
                docs.append(PluginDoc(plugin_type, path.stem, path, examples))
            continue
        for path in sorted(folder.glob("*.py")):
            if path.name != "__init__.py":
                docs.append(PluginDoc(plugin_type, path.stem, path, python_string_constants(path).get("EXAMPLES")))
    return docs


PLUGIN_DOCS = plugin_docs()
TASK_PLUGIN_DOCS = [doc for doc in PLUGIN_DOCS if doc.plugin_type in TASK_PLUGINS]


# ------------------------------------------------------------------ reading examples

class UniqueKeyLoader(yaml.SafeLoader):
    """A safe loader that refuses a key repeated in one mapping (PyYAML silently keeps the last)."""


def _construct_unique_mapping(loader, node, deep=False):
    seen = {}
    for key_node, _value_node in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                f"while constructing a mapping (line {seen[key]})", node.start_mark,
                f"duplicate key {key!r} (first at line {seen[key]})", key_node.start_mark)
        seen[key] = key_node.start_mark.line + 1
    return loader.construct_mapping(node, deep=deep)


UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_unique_mapping)


COMMENTED_CONFIGURATIONS = "# Each configuration is a file of its own, one YAML document. More of them, commented out:"


def uncommented_configurations(examples: str) -> str:
    """An inventory plugin's EXAMPLES with the configurations shown commented out (ansible-core 2.16's yamllint
    reads EXAMPLES as one document) made documents of their own: each paragraph after the marker, one '# ' less."""
    shown, marker, commented = examples.partition(COMMENTED_CONFIGURATIONS)
    if not marker:
        return examples
    documents = [shown]
    for paragraph in commented.strip("\n").split("\n\n"):
        documents.append("\n".join(line[2:] if line.startswith("# ") else line.lstrip("#")
                                   for line in paragraph.splitlines()))
    return "\n---\n".join(documents)


def load_examples(doc: PluginDoc) -> list:
    """The EXAMPLES as YAML documents (several for inventory configurations separated by ``---``).

    Fails the test, naming the file, when EXAMPLES is missing or not YAML without duplicate keys.
    """
    where = f"{doc.path.relative_to(REPO)} EXAMPLES"
    if not doc.examples:
        pytest.fail(f"{where}: missing")
    try:
        return [item for item in yaml.load_all(uncommented_configurations(doc.examples),  # nosec B506
                                               Loader=UniqueKeyLoader) if item is not None]
    except yaml.YAMLError as err:
        problem = str(err)
    pytest.fail(f"{where} is not valid YAML (lines count from the first line of EXAMPLES; separate several "
                f"configurations with '---'): {problem}")


def example_tasks(doc: PluginDoc) -> list[dict]:
    documents = load_examples(doc)
    assert len(documents) == 1, f"{doc.path}: EXAMPLES of a {doc.plugin_type} must be one list of tasks"
    return documents[0]


def walk_tasks(tasks: list):
    """Every task, including those inside block/rescue/always."""
    for task in tasks:
        yield task
        for key in NESTED_TASK_KEYS:
            if isinstance(task, dict) and isinstance(task.get(key), list):
                yield from walk_tasks(task[key])


def task_args(task: dict, action: str) -> dict:
    """The arguments a task passes to ``action`` (a mapping, ``k=v`` text, and ``args:``)."""
    from ansible.parsing.splitter import parse_kv  # pylint: disable=import-outside-toplevel

    value = task.get(action)
    args = dict(value) if isinstance(value, dict) else (parse_kv(value) if isinstance(value, str) else {})
    args.update(task.get("args") or {})
    return args


def strings_in(value):
    """Every string inside nested lists and mappings (keys excluded)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings_in(item)


def expressions_in(doc: PluginDoc, documents: list) -> list[str]:
    """Bare Jinja2 expressions: task conditions, and the inventory's compose/groups/keyed_groups keys."""
    found = []
    if doc.plugin_type == "inventory":
        for config in documents:
            found += [str(value) for value in (config.get("compose") or {}).values()]
            found += [str(value) for value in (config.get("groups") or {}).values()]
            found += [str(group["key"]) for group in config.get("keyed_groups") or [] if "key" in group]
        return found
    for task in walk_tasks(documents[0]):
        if not isinstance(task, dict):
            continue
        for key in EXPRESSION_KEYS:
            value = task.get(key)
            found += [str(item) for item in (value if isinstance(value, list) else [value]) if item is not None]
    return found


def template_problems(doc: PluginDoc, documents: list) -> list[str]:
    """Jinja2 syntax errors in templates and expressions of the examples."""
    problems = []
    templates = [text for text in strings_in(documents) if "{{" in text or "{%" in text]
    templates += ["{{ " + expression + " }}" for expression in expressions_in(doc, documents)]
    for template in templates:
        try:
            JINJA.parse(template)
        except jinja2.TemplateSyntaxError as err:
            problems.append(f"{template!r}: {err.message}")
    return problems


@dataclass
class PluginCall:
    """One use of the plugin in a template: its positional and keyword arguments."""

    positional: int
    keywords: list[str]


def plugin_calls(doc: PluginDoc, documents: list) -> list[PluginCall]:
    """Uses of a lookup (``lookup``/``query``/``q`` with the FQCN) or of a filter in the examples' templates."""
    calls = []
    for text in strings_in(documents):
        if "{{" not in text and "{%" not in text:
            continue
        try:
            tree = JINJA.parse(text)
        except jinja2.TemplateSyntaxError:
            continue  # reported by the template check
        if doc.plugin_type == "lookup":
            for call in tree.find_all(nodes.Call):
                if isinstance(call.node, nodes.Name) and call.node.name in ("lookup", "query", "q") and call.args \
                        and isinstance(call.args[0], nodes.Const) and call.args[0].value == doc.fqcn:
                    calls.append(PluginCall(len(call.args) - 1, [keyword.key for keyword in call.kwargs]))
        else:
            for node in tree.find_all(nodes.Filter):
                if node.name == doc.fqcn:
                    calls.append(PluginCall(len(node.args), [keyword.key for keyword in node.kwargs]))
    return calls


# ------------------------------------------------------------------ what ansible-doc says

def ansible_env(collections_path: Path) -> dict:
    env = dict(os.environ)
    env.update({
        "ANSIBLE_COLLECTIONS_PATH": str(collections_path),
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_FORCE_COLOR": "0",
        "ANSIBLE_LOCALHOST_WARNING": "0",
        "ANSIBLE_INVENTORY_UNPARSED_WARNING": "0",
        "ANSIBLE_RETRY_FILES_ENABLED": "0",
    })
    env.pop("KUBECONFIG", None)
    return env


@pytest.fixture(scope="session")
def documented(collections_path):
    """``ansible-doc --json`` of every plugin, by plugin type, then FQCN."""

    @cache
    def for_type(plugin_type: str) -> dict:
        names = [doc.fqcn for doc in PLUGIN_DOCS if doc.plugin_type == plugin_type]
        done = subprocess.run([str(VENV_BIN / "ansible-doc"), "-t", plugin_type, "--json", *names],
                              env=ansible_env(collections_path), capture_output=True, text=True, check=False)
        assert done.returncode == 0, f"ansible-doc -t {plugin_type} failed:\n{done.stderr}"
        return json.loads(done.stdout)

    def get(doc: PluginDoc) -> dict:
        entry = for_type(doc.plugin_type).get(doc.fqcn)
        assert entry and entry.get("doc"), f"ansible-doc does not know {doc.plugin_type} {doc.fqcn}"
        return entry["doc"]

    return get


def option_names(options: dict) -> set[str]:
    """Option names and their aliases."""
    names = set(options)
    for spec in options.values():
        names.update(spec.get("aliases") or [])
    return names


def undocumented_keys(value, options: dict, where: str) -> list[str]:
    """Keys of ``value`` that are not documented options, descending into documented sub-options."""
    problems = []
    if not isinstance(value, dict):
        return problems
    by_name = {}
    for name, spec in options.items():
        for alias in [name, *(spec.get("aliases") or [])]:
            by_name[alias] = spec
    for key, item in value.items():
        spec = by_name.get(key)
        if spec is None:
            problems.append(f"{where}{key}: not a documented option (documented: {', '.join(sorted(options))})")
            continue
        suboptions = spec.get("suboptions")
        if not suboptions:
            continue
        for number, entry in enumerate(item if isinstance(item, list) else [item]):
            place = f"{where}{key}[{number}]." if isinstance(item, list) else f"{where}{key}."
            problems += undocumented_keys(entry, suboptions, place)
    return problems


# ------------------------------------------------------------------ tests: plugin examples

@pytest.mark.parametrize("doc", PLUGIN_DOCS, ids=[doc.id for doc in PLUGIN_DOCS])
def test_plugin_has_examples(doc):
    assert doc.examples and doc.examples.strip(), f"{doc.path.relative_to(REPO)} has no EXAMPLES"


def test_every_filter_has_documentation():
    documented_names = {doc.name for doc in PLUGIN_DOCS if doc.plugin_type == "filter"}
    exported = {name for path in (REPO / "plugins/filter").glob("*.py") for name in exported_filters(path)}
    assert exported, "no filters found in plugins/filter/*.py"
    assert exported <= documented_names, (
        f"filters without plugins/filter/<name>.yml documentation: {', '.join(sorted(exported - documented_names))}")


@pytest.mark.parametrize("doc", PLUGIN_DOCS, ids=[doc.id for doc in PLUGIN_DOCS])
def test_examples_are_yaml_of_the_right_shape(doc):
    documents = load_examples(doc)
    where = f"{doc.path.relative_to(REPO)} EXAMPLES"
    if doc.plugin_type == "inventory":
        assert documents, f"{where}: no configuration"
        for number, config in enumerate(documents, start=1):
            assert isinstance(config, dict), f"{where} document {number}: expected a mapping"
            assert config.get(INVENTORY_PLUGIN_KEY) == doc.fqcn, \
                f"{where} document {number}: expected '{INVENTORY_PLUGIN_KEY}: {doc.fqcn}'"
        return
    tasks = example_tasks(doc)
    assert isinstance(tasks, list) and tasks, f"{where}: expected a non-empty list of tasks"
    for number, task in enumerate(walk_tasks(tasks), start=1):
        assert isinstance(task, dict), f"{where} task {number}: expected a mapping, got {type(task).__name__}"
        assert task.get("name"), f"{where} task {number}: every example task needs a name"


@pytest.mark.parametrize("doc", TASK_PLUGIN_DOCS, ids=[doc.id for doc in TASK_PLUGIN_DOCS])
def test_examples_use_the_plugin(doc):
    tasks = example_tasks(doc)
    if doc.plugin_type == "module":
        used = [task for task in walk_tasks(tasks) if isinstance(task, dict) and doc.fqcn in task]
        assert used, f"no example task calls {doc.fqcn} by its full name"
    else:
        assert plugin_calls(doc, tasks), f"no example uses the {doc.plugin_type} {doc.fqcn} by its full name"


@pytest.mark.parametrize("doc", PLUGIN_DOCS, ids=[doc.id for doc in PLUGIN_DOCS])
def test_examples_use_documented_options_and_valid_templates(doc, documented):
    documents = load_examples(doc)
    spec = documented(doc)
    options = spec.get("options") or {}
    problems = template_problems(doc, documents)
    if doc.plugin_type == "inventory":
        for number, config in enumerate(documents, start=1):
            problems += undocumented_keys(config, options, f"document {number}: ")
    elif doc.plugin_type == "module":
        for number, task in enumerate(walk_tasks(documents[0]), start=1):
            if isinstance(task, dict) and doc.fqcn in task:
                problems += undocumented_keys(task_args(task, doc.fqcn), options, f"task {number}: ")
    else:
        keywords = option_names({name: value for name, value in options.items() if name not in ("_terms", "_input")})
        positional = [name.strip() for name in (spec.get("positional") or "").split(",") if name.strip()]
        for call in plugin_calls(doc, documents[0]):
            problems += [f"{doc.fqcn}(... {key}=...): not a documented option (documented: "
                         f"{', '.join(sorted(keywords)) or 'none'})" for key in call.keywords if key not in keywords]
            if doc.plugin_type == "filter" and call.positional > len(positional):
                problems.append(f"{doc.fqcn} takes {len(positional)} positional arguments "
                                f"({', '.join(positional) or 'none'}), an example passes {call.positional}")
    assert not problems, f"{doc.path.relative_to(REPO)} EXAMPLES:\n" + "\n".join(problems)


@pytest.mark.parametrize("doc", TASK_PLUGIN_DOCS, ids=[doc.id for doc in TASK_PLUGIN_DOCS])
def test_examples_pass_syntax_check(doc, collections_path, tmp_path):
    play = [{"name": f"EXAMPLES of {doc.fqcn}", "hosts": "localhost", "gather_facts": False,
             "tasks": example_tasks(doc)}]
    playbook = tmp_path / "examples.yml"
    playbook.write_text(yaml.safe_dump(play, sort_keys=False), encoding="utf-8")
    done = subprocess.run([str(VENV_BIN / "ansible-playbook"), "--syntax-check", "-i", "localhost,", str(playbook)],
                          env=ansible_env(collections_path), cwd=tmp_path, capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, f"{doc.path.relative_to(REPO)} EXAMPLES fail the syntax check:\n" \
                                 f"{done.stdout}{done.stderr}"


# ------------------------------------------------------------------ tests: Markdown YAML blocks

FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`\s]*)")


@dataclass(frozen=True)
class CodeBlock:
    line: int          # 1-based line of the opening fence
    language: str
    text: str
    marked_no_test: bool


def fenced_blocks(markdown: str) -> list[CodeBlock]:
    """Fenced code blocks with their language and whether ``<!-- no-test -->`` precedes them."""
    lines = markdown.splitlines()
    blocks, index = [], 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        fence, indent = opening.group("fence"), len(opening.group("indent"))
        end = index + 1
        while end < len(lines) and not re.fullmatch(rf"\s*{re.escape(fence[0])}{{{len(fence)},}}\s*", lines[end]):
            end += 1
        previous = next((line.strip() for line in reversed(lines[:index]) if line.strip()), "")
        body = "\n".join(line[indent:] if line[:indent].strip() == "" else line for line in lines[index + 1:end])
        blocks.append(CodeBlock(index + 1, opening.group("info").lower(), body, previous == NO_TEST_MARK))
        index = end + 1
    return blocks


@pytest.mark.parametrize("markdown, expected", [
    ("```yaml\na: 1\n```\n", [(1, "yaml", "a: 1", False)]),
    ("text\n<!-- no-test -->\n\n```yml\na: {{ x }}\n```\n", [(4, "yml", "a: {{ x }}", True)]),
    ("- item\n\n  ```yaml\n  a: 1\n  ```\n", [(3, "yaml", "a: 1", False)]),
    ("````markdown\n```yaml\nnot: [closed\n```\n````\n", [(1, "markdown", "```yaml\nnot: [closed\n```", False)]),
    ("```\nplain\n```\n~~~yaml\nb: 2\n~~~\n", [(1, "", "plain", False), (4, "yaml", "b: 2", False)]),
], ids=["plain", "marked", "indented", "nested-fence", "tilde"])
def test_fenced_blocks(markdown, expected):
    assert [(b.line, b.language, b.text, b.marked_no_test) for b in fenced_blocks(markdown)] == expected


@pytest.mark.parametrize("path", MARKDOWN_DOCS, ids=[str(path.relative_to(REPO)) for path in MARKDOWN_DOCS])
def test_markdown_yaml_blocks_parse(path):
    if not path.exists():
        pytest.fail(f"{path.relative_to(REPO)} does not exist")
    problems = []
    for block in fenced_blocks(path.read_text(encoding="utf-8")):
        if block.language not in ("yaml", "yml") or block.marked_no_test:
            continue
        try:
            list(yaml.safe_load_all(block.text))
        except yaml.YAMLError as err:
            problems.append(f"{path.relative_to(REPO)}:{block.line}: {' '.join(str(err).split())}")
    assert not problems, "YAML blocks that do not parse (mark deliberate fragments with " \
                         f"'{NO_TEST_MARK}' on the line before the fence):\n" + "\n".join(problems)
