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
from test_kubeconfig_sources import new_age_key, sops_encrypt

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


MIGRATION_GUIDE = "docs/migrating-from-kubernetes-core.md"
# The module_defaults section's blocks (the action group, and module_defaults with the role), and what runs them here.
MODULE_DEFAULTS_SNIPPETS = {
    "module-defaults-kubernetes-core": "test_the_kubernetes_core_play_and_its_translation_write_the_same_object "
                                       "(kubernetes.core is not installed here: its translation is what runs)",
    "module-defaults-group": "test_module_defaults_for_the_action_group_run_as_written, "
                             "test_the_action_group_holds_and_reaches_the_actions_it_lists",
    "module-defaults-plan-warning": "test_module_defaults_for_the_action_group_run_as_written",
    "module-defaults-per-action": "test_module_defaults_per_action_run_as_written",
}


def words(output: str) -> str:
    """Text with Ansible's wrapping undone (ansible-core 2.16 also breaks a line after a hyphen inside a word)."""
    return " ".join(re.sub(r"-\n\s*", "-", output).replace("[WARNING]:", " ").split())


def test_every_module_defaults_snippet_is_marked_and_run():
    blocks = section_blocks(MIGRATION_GUIDE, "## `module_defaults`")
    marked = marked_snippets(MIGRATION_GUIDE)
    assert sorted(marked) == sorted(MODULE_DEFAULTS_SNIPPETS)
    assert sorted(block.text for block in blocks) == sorted(block.text for block in marked.values())


def inventory_of(hosts: dict) -> dict:
    return {"all": {"vars": {"ansible_connection": "local"}, "hosts": hosts}}


def test_module_defaults_for_the_action_group_run_as_written(clusters, collections_path, tmp_path):
    """docs/migrating-from-kubernetes-core.md, 'module_defaults': the phasekit.kube play applies where its defaults
    say; a play that runs a plan with the same defaults is told once, in the documented words, that its hosts keep
    their own clusters."""
    cluster = clusters["target"]
    namespace = f"pk-doc-{uuid.uuid4().hex[:6]}"
    cluster.kubectl("create", "namespace", namespace)
    snippets = marked_snippets(MIGRATION_GUIDE)
    try:
        text = snippets["module-defaults-group"].text.replace("/etc/clusters/prod.yaml", str(cluster.admin_kubeconfig)) \
            .replace("context: prod-eu", f"context: {cluster.context}").replace("namespace: web", f"namespace: {namespace}")
        play = yaml.safe_load(text)
        env = playbook_env(collections_path, tmp_path)
        done = run_playbook(tmp_path, env, play, inventory_of({"prod-eu": {}}))
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
        made = cluster.kubectl("-n", namespace, "get", "configmap", "settings", "-o", "json")
        assert json.loads(made.stdout)["metadata"]["name"] == "settings"

        phase = {"apiVersion": "phasekit.dev/v1alpha1", "kind": "Phase", "metadata": {"name": "p"},
                 "spec": {"cluster": "all", "executor": "apply",
                          "source": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "from-plan"}}],
                          "options": {"namespace": namespace}}}
        role = {"role": "phasekit.kube.plan", "vars": {"plan_documents": [phase]}}
        plan_play = [{**play[0], "tasks": [], "roles": [role]}]
        inventory = inventory_of({"prod-eu": {"kube_kubeconfig": str(cluster.admin_kubeconfig),
                                              "kube_context": cluster.context}})
        done = run_playbook(tmp_path, env, plan_play, inventory)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
        documented = words(snippets["module-defaults-plan-warning"].text)
        assert words(done.stdout + done.stderr).count(documented) == 1, words(done.stdout + done.stderr)[-3000:]
    finally:
        cluster.kubectl("delete", "namespace", namespace, "--wait=false")


def test_the_kubernetes_core_play_and_its_translation_write_the_same_object():
    """The page's 'before' play needs kubernetes.core, which is not installed here (no Galaxy in CI): what is checked
    is that its translation, which the test above runs, keeps its object and its connection settings."""
    snippets = marked_snippets(MIGRATION_GUIDE)
    before = yaml.safe_load(snippets["module-defaults-kubernetes-core"].text)[0]
    after = yaml.safe_load(snippets["module-defaults-group"].text)[0]
    assert before["module_defaults"]["group/kubernetes.core.k8s"] == after["module_defaults"]["group/phasekit.kube.kube"]
    assert before["tasks"][0]["kubernetes.core.k8s"] == after["tasks"][0]["phasekit.kube.apply"]


def test_the_action_group_holds_and_reaches_the_actions_it_lists(clusters, collections_path, tmp_path):
    """'module_defaults': the group's actions as the page lists them (twice) are meta/runtime.yml's; a group default
    reaches each of them; an option one of them does not take fails it with 'Unsupported parameters'."""
    guide = (REPO / MIGRATION_GUIDE).read_text(encoding="utf-8")
    group_text = marked_snippets(MIGRATION_GUIDE)["module-defaults-group"].text
    in_comment = re.search(r"the action group kube holds (.+)", group_text).group(1)
    listed_in_comment = set(re.split(r", | and ", in_comment.strip()))
    listed_in_text = set(re.findall(r"`(\w+)`", re.search(r"\(`meta/runtime.yml`:\s*([^)]*)\)", guide).group(1)))
    runtime = yaml.safe_load((REPO / "meta/runtime.yml").read_text())["action_groups"]["kube"]
    assert listed_in_comment == listed_in_text == set(runtime)

    cluster = clusters["target"]
    namespace = f"pk-doc-{uuid.uuid4().hex[:6]}"
    cluster.kubectl("create", "namespace", namespace)
    settings = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": namespace}}
    calls = {
        "kubeconfig": {},
        "apply": {"definition": settings},
        "wait": {"definition": settings},
        "kube_command": {"argv": ["kubectl", "get", "configmap", "settings", "-n", namespace, "-o", "name"]},
        "helm": {"name": "none-such", "namespace": namespace, "state": "absent"},
    }
    assert set(calls) == set(runtime)
    defaults = {"group/phasekit.kube.kube": {"kubeconfig": str(cluster.admin_kubeconfig), "context": cluster.context}}
    tasks = []
    for action, args in calls.items():
        tasks += [{"name": action, f"phasekit.kube.{action}": args, "register": "result"},
                  {"ansible.builtin.assert": {"that": ["result.kubeconfig.context | default(result.context) == "
                                                       f"'{cluster.context}'"]}}]
    play = [{"hosts": "prod-eu", "gather_facts": False, "module_defaults": defaults, "tasks": tasks}]
    env = playbook_env(collections_path, tmp_path)
    try:
        done = run_playbook(tmp_path, env, play, inventory_of({"prod-eu": {}}))
        assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
        assert "configmap/settings" in cluster.kubectl("get", "configmap", "settings", "-n", namespace, "-o",
                                                       "name").stdout
        unsupported = [{**play[0], "module_defaults": {"group/phasekit.kube.kube": {
            **defaults["group/phasekit.kube.kube"], "field_manager": "platform-team"}},
            "tasks": [{"name": "kubeconfig", "phasekit.kube.kubeconfig": {}}]}]
        done = run_playbook(tmp_path, env, unsupported, inventory_of({"prod-eu": {}}))
        assert done.returncode != 0 and "Unsupported parameters" in done.stdout + done.stderr, done.stdout[-3000:]
    finally:
        cluster.kubectl("delete", "namespace", namespace, "--wait=false")


def test_module_defaults_per_action_run_as_written(clusters, collections_path, tmp_path):
    """'module_defaults' per action: field_manager reaches apply only, the context kubeconfig only (apply keeps the
    kubeconfig's current context)."""
    target, ephemeral = clusters["target"], clusters["ephemeral"]
    merged = {"apiVersion": "v1", "kind": "Config", "clusters": [], "users": [], "contexts": [],
              "current-context": "other"}
    for cluster, context in ((target, "prod-eu"), (ephemeral, "other")):
        config = yaml.safe_load(cluster.admin_kubeconfig.read_text())
        merged["clusters"] += config["clusters"]
        merged["users"] += config["users"]
        merged["contexts"].append({"name": context, "context": config["contexts"][0]["context"]})
    (tmp_path / "fleet.kubeconfig").write_text(yaml.safe_dump(merged))
    namespace = f"pk-doc-{uuid.uuid4().hex[:6]}"
    ephemeral.kubectl("create", "namespace", namespace)
    defaults = yaml.safe_load(marked_snippets(MIGRATION_GUIDE)["module-defaults-per-action"].text)["module_defaults"]
    play = [{"hosts": "prod-eu", "gather_facts": False, "module_defaults": defaults, "tasks": [
        {"name": "resolve", "phasekit.kube.kubeconfig": {}, "register": "resolved"},
        {"name": "apply", "phasekit.kube.apply": {"definition": {
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": namespace},
            "data": {"a": "1"}}}},
        {"ansible.builtin.assert": {"that": [f"resolved.context == 'prod-eu' and resolved.server == '{target.server}'"]}},
    ]}]
    try:
        done = run_playbook(tmp_path, playbook_env(collections_path, tmp_path), play,
                            inventory_of({"prod-eu": {"kube_kubeconfig": str(tmp_path / "fleet.kubeconfig")}}))
        assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
        live = ephemeral.get_json("configmap", "settings", "-n", namespace, "--show-managed-fields")
        managers = [entry["manager"] for entry in live["metadata"]["managedFields"]]
        assert managers == [defaults["phasekit.kube.apply"]["field_manager"]], managers
    finally:
        ephemeral.kubectl("delete", "namespace", namespace, "--wait=false")


# Every fenced block of the README, by the name its snippet mark gives it, and what runs it here.
README_SNIPPETS = {
    "make-two-commands": "test_readme_make_targets_exist (make demo's script: test_demo.py; make test: CI itself)",
    "make-testing": "test_readme_make_targets_exist",
    "requirements-pip": "test_readme_install_and_quick_start_run_as_written",
    "install": "test_readme_install_and_quick_start_run_as_written (the Galaxy line: from the built tarball)",
    "quick-start-inventory": "test_readme_install_and_quick_start_run_as_written",
    "quick-start-site": "test_readme_install_and_quick_start_run_as_written",
    "quick-start-run": "test_readme_install_and_quick_start_run_as_written",
    "quick-start-output": "test_readme_install_and_quick_start_run_as_written",
    "quick-start-plan": "test_readme_install_and_quick_start_run_as_written",
}


def test_every_readme_snippet_is_marked_and_run():
    """A new or unmarked block in the README fails here until a test runs it (and is named above)."""
    blocks = fenced_blocks((REPO / "README.md").read_text(encoding="utf-8"))
    marked = marked_snippets("README.md")
    assert sorted(marked) == sorted(README_SNIPPETS)
    assert len(blocks) == len(marked), [block.line for block in blocks if block not in marked.values()]


def shell_lines(block_text: str) -> list[str]:
    """The commands of a shell block (no prompt): lines a trailing backslash continues joined, comments kept (bash
    drops them), comment-only lines left out."""
    lines, joined = block_text.splitlines(), []
    for line in lines:
        if joined and joined[-1].endswith("\\"):
            joined[-1] += "\n" + line
        elif line.strip() and not line.lstrip().startswith("#"):
            joined.append(line)
    return joined


def make_database(*variables: str) -> str:
    """make's database (-p) with the default goal (help, which runs no sub-make) only questioned (-q): the targets
    and their recipes, nothing run."""
    done = subprocess.run(["make", "-pq", "--no-print-directory", *variables, "help"], cwd=REPO, capture_output=True,
                          text=True, check=False)
    assert "Error" not in done.stderr, done.stderr
    return done.stdout


def test_readme_make_targets_exist():
    """'Two commands' and 'Testing': the make targets and variables they name exist. Running them is CI itself (make
    test) or the demo's script, which tests/integration/test_demo.py runs; here make's database is checked for each
    line, and that make demo runs that script."""
    snippets = marked_snippets("README.md")
    lines = [line for name in ("make-two-commands", "make-testing") for line in shell_lines(snippets[name].text)]
    assert len(lines) >= 9, lines
    for line in lines:
        words = line.split("#")[0].split()
        variables = [word for word in words[1:] if "=" in word]
        database = make_database(*variables)
        targets = set(re.findall(r"^([\w.-]+):", database, re.M))
        assert words[0] == "make" and set(words[1:]) - set(variables) <= targets, line
    demo_recipe = re.search(r"^demo:.*\n(?:#.*\n)*((?:\t.*\n)+)", make_database(), re.M).group(1)
    assert "hack/demo.sh" in demo_recipe, demo_recipe


def documented_result_fragments(output_block: str) -> dict[str, list[str]]:
    """Per host, the pieces of the documented ``ok: [host] => {...}`` line between its '...' elisions, whitespace
    collapsed (the page wraps the one line the callback prints)."""
    fragments, host = {}, None
    for line in output_block.splitlines():
        started = re.match(r"ok: \[(\S+)\] => (.*)", line)
        if started:
            host, line = started.group(1), started.group(2)
            fragments[host] = ""
        if host:
            fragments[host] += " " + line.strip()
    return {host: [" ".join(piece.split()) for piece in text.split("...") if piece.strip()]
            for host, text in fragments.items()}


def test_readme_install_and_quick_start_run_as_written(clusters, tmp_path, bin_dir):
    """README, Install, Requirements and Quick start, in a fresh HOME as a new user: the checkout's install command
    (the Galaxy one cannot run here: the collection is not on Galaxy and CI has no Galaxy; the same command from the
    built tarball is its closest equivalent), pip's requirements files where the README says they are (pip asked to
    resolve them, --dry-run: this venv was built from them), the quick start's inventory, playbook and command with
    the output it shows, then the plan play over phases of the reader's own."""
    snippets = marked_snippets("README.md")
    home, checkout, project = tmp_path / "home", tmp_path / "checkout", tmp_path / "project"
    for directory in (home / ".kube", checkout, project, tmp_path / "age"):
        directory.mkdir(parents=True)
    tracked = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                             capture_output=True, text=True, check=True).stdout.split("\0")
    for name in filter(None, tracked):
        if (REPO / name).is_file():
            (checkout / name).parent.mkdir(parents=True, exist_ok=True)
            (checkout / name).write_bytes((REPO / name).read_bytes())
    env = dict(os.environ, HOME=str(home), ANSIBLE_NOCOLOR="1", ANSIBLE_LOCALHOST_WARNING="0",
               PATH=f"{VENV_BIN}{os.pathsep}{bin_dir}{os.pathsep}{os.environ['PATH']}")
    for name in ("KUBECONFIG", "SOPS_AGE_KEY_FILE", "K8S_AUTH_KUBECONFIG", "K8S_AUTH_CONTEXT", "ANSIBLE_COLLECTIONS_PATH",
                 "ANSIBLE_CONFIG"):
        env.pop(name, None)

    def shell(command: str, cwd: Path, **extra) -> subprocess.CompletedProcess:
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", command], cwd=cwd, env={**env, **extra},
                              capture_output=True, text=True, check=False)
        assert done.returncode == 0, f"{command}\n{done.stdout[-4000:]}{done.stderr[-3000:]}"
        return done

    # Install: the Galaxy line is named, the checkout's lines run as written
    galaxy, from_checkout = shell_lines(snippets["install"].text)
    assert galaxy.split("#")[0].split() == ["ansible-galaxy", "collection", "install", "phasekit.kube"], galaxy
    shell(from_checkout, checkout)
    listed = shell("ansible-galaxy collection list phasekit.kube", project).stdout
    assert f"{home}/.ansible/collections/ansible_collections" in listed, listed

    # Requirements: both files where the README says, resolved by pip
    pip_lines = shell_lines(snippets["requirements-pip"].text)
    assert len(pip_lines) == 2, pip_lines
    for line, cwd in zip(pip_lines, (checkout, project)):
        done = shell(line.replace("pip install", "pip install --dry-run", 1), cwd)
        assert "Would install" not in done.stdout, done.stdout

    # Quick start: the files the blocks name in their first line, the reader's kubeconfig and SOPS file
    for name in ("quick-start-inventory", "quick-start-site"):
        text = snippets[name].text
        path = project / re.match(r"# (\S+)\n", text).group(1)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    inventory = yaml.safe_load((project / "inventory/clusters.yml").read_text())
    ephemeral_path = inventory["all"]["children"]["management"]["hosts"]["ephemeral"]["kube_kubeconfig"]
    (home / ephemeral_path.removeprefix("~/")).write_text(clusters["ephemeral"].admin_kubeconfig.read_text())
    key_file, recipient = new_age_key(tmp_path / "age", bin_dir)
    target_sops = inventory["all"]["children"]["workload"]["hosts"]["target"]["kube_kubeconfig"][0]["sops"]
    (project / target_sops).parent.mkdir(parents=True, exist_ok=True)
    flat = clusters["target"].kubectl("config", "view", "--raw", "--flatten", "--minify").stdout
    sops_encrypt(flat, project / target_sops, recipient)

    [run_command] = shell_lines(snippets["quick-start-run"].text)
    done = shell(run_command, project, SOPS_AGE_KEY_FILE=str(key_file))
    output_block = snippets["quick-start-output"].text.replace("https://127.0.0.1:22143", clusters["target"].server)
    task_line = output_block.splitlines()[0]
    assert task_line in done.stdout.splitlines(), done.stdout[-3000:]
    printed = {match.group(1): " ".join(match.group(2).split())
               for match in re.finditer(r"^ok: \[(\S+)\] => (.*)$", done.stdout, re.M)}
    documented = documented_result_fragments(output_block)
    assert set(documented) == {"ephemeral", "target"} <= set(printed), printed
    for host, pieces in documented.items():
        position = 0
        for piece in pieces:
            found = printed[host].find(piece, position)
            assert found >= 0, f"{host}: {piece!r} not in (after {position}) {printed[host]}"
            position = found + len(piece)
    # the comment's claim: without -v the result is not shown
    quiet = shell(run_command.split("#")[0].replace(" -v", ""), project, SOPS_AGE_KEY_FILE=str(key_file))
    assert "ok: [target]" in quiet.stdout and "ok: [target] =>" not in quiet.stdout, quiet.stdout[-2000:]

    # the plan play, over phases of the reader's own (a plan named deploy, as the play says)
    namespace = f"pk-readme-{uuid.uuid4().hex[:6]}"
    play = yaml.safe_load(snippets["quick-start-plan"].text)
    assert play[0]["roles"][0]["vars"] == {"plan_src": ["phases"], "plan_name": "deploy"}, play
    (project / "deploy.yml").write_text(snippets["quick-start-plan"].text)
    (project / "phases").mkdir()
    (project / "phases/10-hello.yaml").write_text(yaml.safe_dump_all([
        {"apiVersion": "phasekit.dev/v1alpha1", "kind": "Phase", "metadata": {"name": "hello"},
         "spec": {"cluster": "all", "executor": "apply", "source": [
             {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
             {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "hello", "namespace": namespace},
              "data": {"from": "readme"}}]}},
        {"apiVersion": "phasekit.dev/v1alpha1", "kind": "PhasePlan", "metadata": {"name": "deploy"},
         "spec": {"phases": ["hello"]}}]))
    try:
        shell("ansible-playbook -i inventory deploy.yml", project, SOPS_AGE_KEY_FILE=str(key_file))
        for cluster in (clusters["ephemeral"], clusters["target"]):
            assert cluster.get_json("configmap", "hello", "-n", namespace)["data"] == {"from": "readme"}
    finally:
        for cluster in (clusters["ephemeral"], clusters["target"]):
            cluster.kubectl("delete", "namespace", namespace, "--wait=false", "--ignore-not-found", check=False)
