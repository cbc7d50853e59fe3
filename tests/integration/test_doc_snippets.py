# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Documented recipes run as written, against the local clusters.

Each test takes its commands and YAML from the Markdown page itself (a change to the page changes what is run), and
substitutes only what names the reader's own site: a kubeconfig path, a context, a namespace, an age key.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import yaml
from test_examples import fenced_blocks

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent


def section_blocks(page: str, heading: str) -> list:
    """The fenced blocks of one section: from its heading to the next heading of any level outside a fence."""
    lines = (REPO / page).read_text(encoding="utf-8").splitlines()
    start = lines.index(heading)
    end, fenced = len(lines), False
    for number in range(start + 1, len(lines)):
        if lines[number].lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and re.match(r"#{1,6} ", lines[number]):
            end = number
            break
    return fenced_blocks("\n".join(lines[start:end]))


SNIPPET_MARK = re.compile(r"<!--\s*snippet:\s*(?P<name>[\w.-]+)\s*-->")


def marked_snippets(page: str) -> dict:
    """The fenced blocks of a page that a ``<!-- snippet: NAME -->`` line names (the line before the fence), by NAME:
    the test that runs a snippet takes it from the page, so the page's text is what runs."""
    lines = (REPO / page).read_text(encoding="utf-8").splitlines()
    blocks = {block.line: block for block in fenced_blocks("\n".join(lines))}
    found = {}
    for number, line in enumerate(lines):
        mark = SNIPPET_MARK.fullmatch(line.strip())
        if not mark:
            continue
        fence = next((index + 1 for index in range(number + 1, len(lines)) if lines[index].strip()), None)
        assert fence in blocks, f"{page}:{number + 1}: the snippet mark {mark['name']} is not followed by a fenced block"
        assert mark["name"] not in found, f"{page}:{number + 1}: snippet {mark['name']} is marked twice"
        found[mark["name"]] = blocks[fence]
    return found


def console_commands(block_text: str) -> list[str]:
    """The commands of a console block: lines after '$ ', with the lines a trailing backslash continues and a
    heredoc's lines up to its end marker."""
    commands, lines, index = [], block_text.splitlines(), 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if not line.startswith("$ "):
            continue
        command = line[2:]
        while command.endswith("\\") and index < len(lines):
            command += "\n" + lines[index]
            index += 1
        heredoc = re.search(r"<<'?(\w+)'?", command)
        if heredoc:
            while index < len(lines):
                command += "\n" + lines[index]
                index += 1
                if lines[index - 1] == heredoc.group(1):
                    break
        commands.append(command)
    return commands


def playbook_env(collections_path: Path, home: Path) -> dict:
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(collections_path), ANSIBLE_NOCOLOR="1",
               ANSIBLE_PYTHON_INTERPRETER=sys.executable, ANSIBLE_LOCALHOST_WARNING="0", HOME=str(home))
    for name in ("KUBECONFIG", "SOPS_AGE_KEY_FILE", "K8S_AUTH_KUBECONFIG", "K8S_AUTH_CONTEXT"):
        env.pop(name, None)
    return env


def run_playbook(root: Path, env: dict, play: list, inventory: dict) -> subprocess.CompletedProcess:
    (root / "inventory.yml").write_text(yaml.safe_dump(inventory))
    (root / "play.yml").write_text(yaml.safe_dump(play, sort_keys=False))
    return subprocess.run([str(VENV_BIN / "ansible-playbook"), "-i", "inventory.yml", "play.yml"], cwd=root, env=env,
                          capture_output=True, text=True, check=False)


def test_sops_with_age_recipe_runs_as_written(clusters, collections_path, tmp_path):
    """docs/kubeconfig.md, 'SOPS with age': the commands, then the source it shows, in a host's inventory."""
    cluster = clusters["target"]
    home = tmp_path / "home"
    home.mkdir()
    (home / ".config/sops/age").mkdir(parents=True)
    admin = yaml.safe_load(cluster.admin_kubeconfig.read_text())
    admin["contexts"][0]["name"] = admin["current-context"] = "prod-eu"
    (tmp_path / "site.kubeconfig").write_text(yaml.safe_dump(admin))
    env = playbook_env(collections_path, home)
    console, source = section_blocks("docs/kubeconfig.md", "## SOPS with age")[:2]
    commands = console_commands(console.text)
    assert commands[0].startswith("age-keygen"), commands
    keygen = subprocess.run(commands[0], shell=True, cwd=tmp_path, env=env, capture_output=True, text=True,
                            check=True)
    public_key = re.search(r"age1[0-9a-z]+", keygen.stderr + keygen.stdout).group()
    documented_key = re.search(r"age1[0-9a-z]+", console.text).group()
    for command in commands[1:]:
        done = subprocess.run(command.replace(documented_key, public_key), shell=True, cwd=tmp_path,
                              env={**env, "KUBECONFIG": str(tmp_path / "site.kubeconfig")},
                              capture_output=True, text=True, check=False, executable="/bin/bash")
        assert done.returncode == 0, f"{command}\n{done.stdout}{done.stderr}"
    assert "sops" in (tmp_path / "secrets/prod-eu.enc.yaml").read_text() and not (tmp_path / "prod-eu.yaml").exists()
    host_vars = yaml.safe_load(source.text)
    play = [{"name": "The documented source", "hosts": "prod-eu", "gather_facts": False, "tasks": [
        {"name": "Resolve", "phasekit.kube.kubeconfig": {}, "register": "resolved"},
        {"name": "Show", "ansible.builtin.debug": {"msg": "{{ resolved.context }} {{ resolved.server }}"}}]}]
    done = run_playbook(tmp_path, env, play, {"all": {"hosts": {"prod-eu": host_vars},
                                                      "vars": {"ansible_connection": "local"}}})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert f"prod-eu {cluster.server}" in done.stdout, done.stdout[-3000:]


def test_module_defaults_for_the_action_group_run_as_written(clusters, collections_path, tmp_path):
    """docs/migrating-from-kubernetes-core.md, 'module_defaults': the phasekit.kube play applies where its defaults
    say; a play that runs a plan with the same defaults is told once that its hosts keep their own clusters."""
    cluster = clusters["target"]
    namespace = f"pk-doc-{uuid.uuid4().hex[:6]}"
    cluster.kubectl("create", "namespace", namespace)
    try:
        documented = [block for block in section_blocks("docs/migrating-from-kubernetes-core.md", "## `module_defaults`")
                      if block.text.startswith("# phasekit.kube")][0]
        text = documented.text.replace("/etc/clusters/prod.yaml", str(cluster.admin_kubeconfig)) \
            .replace("context: prod-eu", f"context: {cluster.context}").replace("namespace: web", f"namespace: {namespace}")
        play = yaml.safe_load(text)
        env = playbook_env(collections_path, tmp_path)
        done = run_playbook(tmp_path, env, play, {"all": {"hosts": {"prod-eu": {}}, "vars": {"ansible_connection": "local"}}})
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
        made = cluster.kubectl("-n", namespace, "get", "configmap", "settings", "-o", "json")
        assert json.loads(made.stdout)["metadata"]["name"] == "settings"

        phase = {"apiVersion": "phasekit.dev/v1alpha1", "kind": "Phase", "metadata": {"name": "p"},
                 "spec": {"cluster": "all", "executor": "apply",
                          "source": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "from-plan"}}],
                          "options": {"namespace": namespace}}}
        role = {"role": "phasekit.kube.plan", "vars": {"plan_documents": [phase]}}
        plan_play = [{**play[0], "tasks": [], "roles": [role]}]
        inventory = {"all": {"vars": {"ansible_connection": "local"}, "hosts": {"prod-eu": {
            "kube_kubeconfig": str(cluster.admin_kubeconfig), "kube_context": cluster.context}}}}
        done = run_playbook(tmp_path, env, plan_play, inventory)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
        output = " ".join((done.stdout + done.stderr).split())
        assert output.count("module_defaults for group/phasekit.kube.kube set context, kubeconfig") == 1, output[-3000:]
    finally:
        cluster.kubectl("delete", "namespace", namespace, "--wait=false")
