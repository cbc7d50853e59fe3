# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Bad input at scale, through the real entry points (ansible-playbook tasks, ansible-inventory): for each
malformed kubeconfig file, source spec, phase or plan document, executor option, bundle and inventory
configuration, the task fails with a message naming the file, document or field and what was expected; no
Python traceback at -vvv; nothing written; no secret in the output.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = [pytest.mark.smoke]

SECRET = "s3cret-token-7f1e2d3c4b5a"
API = "phasekit.dev/v1alpha1"
VENV_BIN = Path(sys.executable).parent


def kubeconfig(**changes) -> dict:
    config = {"apiVersion": "v1", "kind": "Config", "current-context": "c",
              "clusters": [{"name": "k", "cluster": {"server": "https://127.0.0.1:6443"}}],
              "users": [{"name": "u", "user": {"token": SECRET}}],
              "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}]}
    config.update(changes)
    return config


# (file name, content, expected fragment): each file is used as the task's kubeconfig
KUBECONFIG_FILES = [
    ("list.yaml", "- a\n- b\n", "a kubeconfig must be a mapping, got"),
    ("string.yaml", "just text\n", "a kubeconfig must be a mapping"),
    ("version.yaml", yaml.safe_dump(kubeconfig(apiVersion="v2")), "is not a kubeconfig version"),
    ("kind.yaml", yaml.safe_dump(kubeconfig(kind="Secret")), "is not a kubeconfig"),
    ("no-context.yaml", yaml.safe_dump(kubeconfig(contexts=[])), "context"),
    ("no-cluster.yaml", yaml.safe_dump(kubeconfig(clusters=[])), "cluster"),
    ("no-user.yaml", yaml.safe_dump(kubeconfig(users=[])), "user"),
    ("no-server.yaml", yaml.safe_dump(kubeconfig(clusters=[{"name": "k", "cluster": {}}])), "has no server"),
    ("clusters-map.yaml", yaml.safe_dump(kubeconfig(clusters={"k": {}})), "clusters"),
    ("token-number.yaml", yaml.safe_dump(kubeconfig(users=[{"name": "u", "user": {"token": 12345}}])),
     "expected a string"),
    ("bad-base64.yaml", yaml.safe_dump(kubeconfig(clusters=[{"name": "k", "cluster": {
        "server": "https://x", "certificate-authority-data": "%%%"}}])), "not valid base64"),
    ("dup.yaml", yaml.safe_dump(kubeconfig(users=[{"name": "u", "user": {}}, {"name": "u", "user": {}}])),
     "duplicate user name"),
    ("syntax.yaml", "clusters: [\n", "invalid YAML"),
    ("cycle.yaml", "extensions: &a [*a]\n", "contains itself"),
    ("deep.yaml", "x: " + "[" * 2000 + "]" * 2000 + "\n", "nested"),
    ("binary.yaml", None, "not text"),
    ("users-text.yaml", yaml.safe_dump(kubeconfig(users="u")), "users"),
    ("entry-no-name.yaml", yaml.safe_dump(kubeconfig(clusters=[{"cluster": {"server": "https://x"}}])), "name"),
    ("context-no-cluster.yaml", yaml.safe_dump(kubeconfig(contexts=[{"name": "c", "context": {"user": "u"}}])),
     "cluster"),
    ("current-bool.yaml", "current-context: y\n", "expected a string"),
]

# task parameter kubeconfig values (source specs)
SOURCE_SPECS = [
    ({"file": "a.yaml"}, "a source needs exactly one of"),
    ({"path": "a", "sops": "b"}, "a source needs exactly one of"),
    ({"url": "http://example.invalid/k"}, "only https:// URLs are accepted"),
    ({"url": "https://user:" + SECRET + "@example.invalid/k"}, "credentials in the URL"),
    ({"url": "https://example.invalid/k", "timeout": -1}, "timeout"),
    ({"url": "https://example.invalid/k", "headers": "x"}, "headers"),
    ({"path": "a", "optional": "maybe"}, "optional must be true or false"),
    ({"path": ""}, "expected"),
    ({"sops": "/nonexistent/x.enc.yaml"}, "no such file"),
    ({"sops": "x", "input_type": "toml"}, "input_type"),
    ({"secret": {"namespace": "x"}}, "name"),
    ({"secret": {"name": "x", "colour": "red"}}, "unknown field"),
    ({"content": 42}, "expected kubeconfig YAML text or a mapping"),
    ({"env": "PHASEKIT_SURELY_UNSET_VARIABLE"}, "is not set"),
    ({"path": "a", "ca_path": "x"}, "unknown option"),
    ([[{"path": "a"}]], "expected a path string or a mapping"),
    ([1], "expected a path string or a mapping"),
]

PHASE = {"cluster": "localhost", "executor": "apply", "source": [{"apiVersion": "v1", "kind": "ConfigMap",
                                                                  "metadata": {"name": "x"}}]}


def phase(name="p", **spec):
    return {"apiVersion": API, "kind": "Phase", "metadata": {"name": name}, "spec": {**PHASE, **spec}}


# inline plan documents for phasekit.kube.phase_plan
PLAN_DOCUMENTS = [
    ([{"apiVersion": API, "kind": "Phaze", "metadata": {"name": "p"}, "spec": {}}], "kind"),
    ([{"apiVersion": "v9", "kind": "Phase", "metadata": {"name": "p"}, "spec": {}}], "apiVersion"),
    ([{"apiVersion": API, "kind": "Phase", "spec": PHASE}], "metadata"),
    ([{"apiVersion": API, "kind": "Phase", "metadata": {"name": "p"}, "spec": "apply"}], "spec"),
    ([phase(), phase()], "duplicate"),
    ([phase(executor="deploy")], "executor"),
    ([phase(source=None)], "source"),
    ([phase(cluster="nowhere")], "neither a host nor a group"),
    ([phase(options={"colour": "red"})], "unsupported options"),
    ([phase(options={"wait": {"timeout": "soon"}})], "timeout must be a number"),
    ([phase(options={"concurrency": 0})], "concurrency must be between"),
    ([phase(executor="wait", options={"timeout": -5})], "timeout must be a number of seconds >= 0"),
    ([phase(executor="command", source=None, options={"argv": ["a"], "cmd": "b"})], "mutually exclusive"),
    ([phase(executor="command", source=None, options={})], "one of the following is required"),
    ([phase(executor="kubeconfig", source=None, options={})], "host"),
    ([phase(source="/nonexistent/manifests")], "source"),
    ([phase(), {"apiVersion": API, "kind": "PhasePlan", "metadata": {"name": "pl"}, "spec": {"phases": ["q"]}}],
     "q"),
    ([phase(), {"apiVersion": API, "kind": "PhasePlan", "metadata": {"name": "pl"}, "spec": {"phases": "p"}}],
     "phases"),
    ([phase(phases="x")], "phases"),
    ([phase(name="a/b")], "name"),
    ([phase(executor="command", source=None, options={"cmd": "true", "env": {"T": SECRET}, "timeout": "x"})],
     "timeout"),
    ("just a string", "mapping"),
]

# phasekit.kube.apply / wait / kube_command arguments (no cluster needed: they fail before any request)
ACTION_ARGS = [
    ("apply", {"definition": 42}, "definition"),
    ("apply", {"definition": {"kind": "ConfigMap", "metadata": {"name": "x"}}}, "apiVersion"),
    ("apply", {"definition": {"apiVersion": "v1", "kind": "ConfigMap"}}, "metadata"),
    ("apply", {"definition": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": ""}}}, "metadata.name"),
    ("apply", {"definition": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": ""}}},
     "metadata.namespace"),
    ("apply", {"definition": "a: [\n"}, "invalid YAML"),
    ("apply", {"definition": [{"apiVersion": "v1", "kind": "List", "items": [1]}]}, "expected a Kubernetes object"),
    ("apply", {"src": "/nonexistent/manifest.yaml"}, "manifest"),
    ("apply", {"src": "CYCLE", "concurrency": 4}, "contains itself"),
    ("apply", {"definition": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}},
               "concurrency": 0}, "concurrency must be between"),
    ("apply", {"definition": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}},
               "field_manager": ""}, "field_manager must not be empty"),
    ("apply", {"definition": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}},
               "wait": {"timeout": "soon"}}, "timeout"),
    ("apply", {"definition": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}},
               "wait": "often"}, "wait must be true, false or a dictionary"),
    ("apply", {"definition": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}},
               "colour": "red"}, "Unsupported parameters"),
    ("wait", {"definition": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}, "timeout": -1},
     "timeout must be a number"),
    ("wait", {"definition": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}},
              "kinds": {"ConfigMap": "maybe"}}, "must be one of"),
    ("wait", {"definition": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}},
              "conditions": [{"value": 1}]}, "path"),
    ("wait", {"definition": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}},
              "conditions": [{"path": "status.[["}]}, "condition"),
    ("apply", {"definition": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}},
               "kubeconfig": {"content": kubeconfig(users=[{"name": "u", "user": {"token": SECRET,
                                                                                  "as-groups": ["g"]}}])}},
     "without impersonating a user"),
    ("apply", {"definition": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}},
               "context": ["ctx1"]}, "option context: expected a string, got a list"),
    # a 100,000-character name is refused before anything is sent, without echoing it
    ("apply", {"definition": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a" * 100000}}},
     "at most 253"),
    ("kube_command", {"cmd": ["echo", "hi"]}, "option cmd: expected a string, got a list"),
    ("kube_command", {"cmd": "   "}, "the command is empty"),
    ("kube_command", {"argv": ["echo"], "shell": True}, "shell applies to cmd only"),
    ("kube_command", {"cmd": "echo 'unbalanced"}, "cmd"),
    ("kube_command", {"cmd": "true", "chdir": "/nonexistent/dir"}, "no such directory"),
]

# phasekit.kube.clusters inventory configurations
INVENTORY_CONFIGS = [
    ({"plugin": "phasekit.kube.clusters", "site": ["site-list.yml"]}, "a site file is a mapping"),
    ({"plugin": "phasekit.kube.clusters", "site": ["site-clusters-list.yml"]}, "clusters"),
    ({"plugin": "phasekit.kube.clusters", "site": ["site-unknown.yml"]}, "unknown"),
    ({"plugin": "phasekit.kube.clusters", "site": ["site-content.yml"]}, "inline kubeconfig content"),
    ({"plugin": "phasekit.kube.clusters", "site": ["site-token-url.yml"]}, "the url carries credentials"),
    ({"plugin": "phasekit.kube.clusters", "site": ["missing.yml"]}, "site file not found"),
    ({"plugin": "phasekit.kube.clusters", "cluster_api": [{"namespaces": ["x"]}]}, "host"),
    ({"plugin": "phasekit.kube.clusters", "kubeconfigs": [{"path": "/nonexistent/k.yaml", "colour": 1}]}, "colour"),
]
SITE_FILES = {
    "site-list.yml": [1, 2],
    "site-clusters-list.yml": {"clusters": ["a"]},
    "site-unknown.yml": {"clusters": {"a": {"kubeconfig": "k.yaml", "colour": "red"}}},
    "site-content.yml": {"clusters": {"a": {"kubeconfig": {"content": {"users": [{"name": "u",
                                                                                  "user": {"token": SECRET}}]}}}}},
    "site-token-url.yml": {"clusters": {"a": {"kubeconfig": {"url": f"https://kc.example/a?token={SECRET}"}}}},
}


def count() -> int:
    return (len(KUBECONFIG_FILES) + len(SOURCE_SPECS) + len(PLAN_DOCUMENTS) + len(ACTION_ARGS)
            + len(INVENTORY_CONFIGS))


def test_there_are_at_least_eighty_cases():
    assert count() >= 80


def fatal_messages(output: str) -> dict:
    """TASK name -> the failure message of that task (results are printed as indented JSON at -vvv)."""
    messages, task, collecting = {}, None, None
    for line in output.splitlines():
        if collecting is not None:
            collecting.append(line)
            if line == "}":
                try:
                    messages[task] = json.loads("\n".join(collecting)).get("msg", "")
                except ValueError:
                    messages[task] = "\n".join(collecting)
                collecting = None
            continue
        header = re.match(r"^TASK \[(.*)\] \*+", line)
        if header:
            task = header.group(1)
        elif task and line.startswith("fatal: [") and "=> " in line:
            rest = line.split("=> ", 1)[1]
            if rest.strip() == "{":
                collecting = ["{"]
            else:
                try:
                    messages[task] = json.loads(rest).get("msg", "")
                except ValueError:
                    messages[task] = rest
    return messages


def templated(value):
    """``value`` with the secret replaced by a lookup of it (the playbook text then never holds it)."""
    if isinstance(value, dict):
        return {key: templated(item) for key, item in value.items()}
    if isinstance(value, list):
        return [templated(item) for item in value]
    if isinstance(value, str):
        return value.replace(SECRET, "{{ lookup('ansible.builtin.env', 'PHASEKIT_BAD_SECRET') }}")
    return value


def test_bad_input_through_the_actions(run_playbook, tmp_path):
    files = tmp_path / "files"
    files.mkdir()
    tasks = []
    for name, content, _expected in KUBECONFIG_FILES:
        path = files / name
        if content is None:
            path.write_bytes(bytes(range(256)) * 8)
        else:
            path.write_text(content)
        tasks.append({"name": f"kubeconfig file {name}", "phasekit.kube.kubeconfig": {
            "kubeconfig": str(path), "dest": str(tmp_path / "written" / name)}, "ignore_errors": True})
    for number, (spec, _expected) in enumerate(SOURCE_SPECS, start=1):
        tasks.append({"name": f"source spec {number}", "phasekit.kube.kubeconfig": {
            "kubeconfig": spec, "dest": str(tmp_path / "written" / f"spec-{number}")}, "ignore_errors": True})
    for number, (documents, _expected) in enumerate(PLAN_DOCUMENTS, start=1):
        tasks.append({"name": f"plan documents {number}", "phasekit.kube.phase_plan": {"plan": documents},
                      "ignore_errors": True})
    (files / "cycle.yaml").write_text("a: &a [*a]\n")
    for number, (action, args, _expected) in enumerate(ACTION_ARGS, start=1):
        args = {**args, "src": str(files / "cycle.yaml")} if args.get("src") == "CYCLE" else args
        tasks.append({"name": f"action {number} {action}", f"phasekit.kube.{action}": {
            "kubeconfig": {"content": kubeconfig()}, **args}, "ignore_errors": True})  # args may override it
    playbook = tmp_path / "bad.yml"
    # Ansible shows the playbook's own lines around a failed task: the secret comes from the environment, so the
    # only way it can reach the output is through the collection
    playbook.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "tasks": templated(tasks)}]))
    result = run_playbook(playbook, None, verbosity=3, env={"PHASEKIT_BAD_SECRET": SECRET})
    messages = fatal_messages(result.output)
    expectations = ([(f"kubeconfig file {name}", expected) for name, _c, expected in KUBECONFIG_FILES]
                    + [(f"source spec {n}", e) for n, (_s, e) in enumerate(SOURCE_SPECS, start=1)]
                    + [(f"plan documents {n}", e) for n, (_d, e) in enumerate(PLAN_DOCUMENTS, start=1)]
                    + [(f"action {n} {a}", e) for n, (a, _g, e) in enumerate(ACTION_ARGS, start=1)])
    problems = []
    for task, expected in expectations:
        message = messages.get(task)
        if message is None:
            problems.append(f"{task}: did not fail")
        elif expected.lower() not in message.lower():
            problems.append(f"{task}: expected {expected!r} in {message!r}")
    assert problems == [], "\n".join(problems)
    assert "Traceback" not in result.output
    assert SECRET not in result.output
    assert not (tmp_path / "written").exists()               # nothing was written


def unwrapped(text: str) -> str:
    """``text`` as one line: ansible-core before 2.19 wraps a warning at the terminal's width (at spaces, and after
    a hyphen)."""
    return re.sub(r"\s+", " ", re.sub(r"-\n\s*", "-", text))


def test_bad_inventory_configurations(collections_path, tmp_path):
    for name, content in SITE_FILES.items():
        (tmp_path / name).write_text(yaml.safe_dump(content))
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(collections_path), "ANSIBLE_INVENTORY_ENABLED":
           "phasekit.kube.clusters", "ANSIBLE_INVENTORY_UNPARSED_FAILED": "1", "ANSIBLE_NOCOLOR": "1"}
    problems = []
    for number, (config, expected) in enumerate(INVENTORY_CONFIGS, start=1):
        path = tmp_path / f"bad{number}.clusters.yml"
        path.write_text(yaml.safe_dump(config))
        done = subprocess.run([str(VENV_BIN / "ansible-inventory"), "-i", str(path), "--list", "-vvv"],
                              cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
        output = done.stdout + done.stderr
        if done.returncode == 0:
            problems.append(f"config {number}: accepted")
        elif expected.lower() not in unwrapped(output).lower():
            problems.append(f"config {number}: expected {expected!r} in {output[-600:]!r}")
        if "Traceback (most recent call last)" in output and "phasekit" in output.split("Traceback")[-1][:2000]:
            problems.append(f"config {number}: a traceback through phasekit code")
        if SECRET in output:
            problems.append(f"config {number}: the secret was shown")
    assert problems == [], "\n".join(problems)
