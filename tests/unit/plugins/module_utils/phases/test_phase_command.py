"""The command executor: a private KUBECONFIG file for exactly as long as the command runs."""

from __future__ import annotations

import os
import stat
import sys

import pytest
import yaml

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.planning.command import (
    MAX_OUTPUT,
    CommandResult,
    changed_when_rule,
    command_argv,
    command_failure_message,
    kept_output,
    kubeconfig_file,
    run_command,
)

CONFIG = {"apiVersion": "v1", "kind": "Config", "current-context": "c",
          "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
          "clusters": [{"name": "k", "cluster": {"server": "https://127.0.0.1:6443"}}],
          "users": [{"name": "u", "user": {"token": "not-a-real-token"}}]}

# Prints the KUBECONFIG path, its mode and whether it holds the config, then exits with argv[1].
PROBE = ("import os, stat, sys, yaml; p = os.environ['KUBECONFIG']; "
         "print(p); print(oct(stat.S_IMODE(os.stat(p).st_mode))); print(oct(stat.S_IMODE(os.stat(os.path.dirname(p)).st_mode))); "
         "print(yaml.safe_load(open(p))['current-context']); print(os.environ.get('EXTRA', '')); sys.exit(int(sys.argv[1]))")


def test_kubeconfig_file_is_private_and_removed(tmp_path):
    with kubeconfig_file(CONFIG) as path:
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
        with open(path, encoding="utf-8") as handle:
            assert yaml.safe_load(handle) == CONFIG
    assert not os.path.exists(path) and not os.path.exists(os.path.dirname(path))


def test_kubeconfig_file_removed_when_the_block_fails():
    with pytest.raises(RuntimeError):
        with kubeconfig_file(CONFIG) as path:
            raise RuntimeError("boom")
    assert not os.path.exists(os.path.dirname(path))


@pytest.mark.parametrize("exit_code", [0, 3], ids=["success", "failure"])
def test_command_sees_private_kubeconfig_removed_afterwards(exit_code):
    result = run_command([sys.executable, "-c", PROBE, str(exit_code)], kubeconfig=CONFIG,
                         env={"EXTRA": "yes", "KUBECONFIG": "/overridden/by/the/phase"})
    path, mode, directory_mode, context, extra = result.stdout.splitlines()
    assert (result.rc, mode, directory_mode, context, extra) == (exit_code, "0o600", "0o700", "c", "yes")
    assert not os.path.exists(path)


def test_timeout_fails_clearly_and_removes_the_file(tmp_path):
    marker = tmp_path / "path"
    script = f"import os, time; open({str(marker)!r}, 'w').write(os.environ['KUBECONFIG']); time.sleep(30)"
    with pytest.raises(PhasekitError, match=r"did not finish within 1s"):
        run_command([sys.executable, "-c", script], kubeconfig=CONFIG, timeout=1)
    assert not os.path.exists(marker.read_text())


@pytest.mark.parametrize("argv, message", [
    (["/nonexistent/tool"], "command not found: /nonexistent/tool"),
    (["true"], "chdir /nonexistent: no such directory"),
], ids=["missing-program", "missing-chdir"])
def test_start_failures_are_clear(argv, message):
    chdir = "/nonexistent" if "chdir" in message else None
    with pytest.raises(PhasekitError, match=message):
        run_command(argv, kubeconfig=CONFIG, chdir=chdir)


def test_chdir_and_stdin(tmp_path):
    result = run_command([sys.executable, "-c", "import os, sys; print(os.getcwd()); print(sys.stdin.read())"],
                         kubeconfig=CONFIG, chdir=str(tmp_path), stdin="hello")
    assert result.stdout.splitlines() == [str(tmp_path), "hello"]


@pytest.mark.parametrize("argv, cmd, shell, expected", [
    (["kubectl", "get", "ns"], None, False, ["kubectl", "get", "ns"]),
    (None, "helm upgrade --install 'my app' chart", False, ["helm", "upgrade", "--install", "my app", "chart"]),
    (None, "kubectl get ns | wc -l", True, ["/bin/sh", "-c", "kubectl get ns | wc -l"]),
], ids=["argv-as-given", "cmd-split-like-a-shell", "shell-runs-sh-c"])
def test_command_argv(argv, cmd, shell, expected):
    assert command_argv(argv, cmd, shell) == expected


@pytest.mark.parametrize("argv, cmd, shell, message", [
    (None, "  ", False, "the command is empty"),
    (None, "echo 'unbalanced", False, "No closing quotation"),
    (["a"], None, True, "shell applies to cmd only"),
], ids=["empty", "unbalanced-quote", "shell-with-argv"])
def test_command_argv_errors(argv, cmd, shell, message):
    with pytest.raises(PhasekitError, match=message):
        command_argv(argv, cmd, shell)


def test_failure_message_shows_last_stderr_lines():
    result = run_command([sys.executable, "-c", "import sys; sys.stderr.write('a\\nb\\nerror: no\\n'); sys.exit(2)"],
                         kubeconfig=CONFIG)
    assert command_failure_message(result).endswith("exited with rc 2: a | b | error: no")


@pytest.mark.parametrize("stream", ["stdout", "stderr"], ids=["binary-stdout", "binary-stderr"])
def test_binary_output_still_fails_with_its_rc(stream):
    """Bytes that are not UTF-8 are shown replaced; the failure keeps its rc."""
    script = f"import sys; sys.{stream}.buffer.write(bytes([0xa5, 0xff, 0x41, 0x0a])); sys.exit(13)"
    result = run_command([sys.executable, "-c", script], kubeconfig=CONFIG)
    assert result.rc == 13
    assert getattr(result, stream) == "\ufffd\ufffdA\n"
    assert command_failure_message(result).endswith("exited with rc 13: \ufffd\ufffdA")


def test_other_kubeconfigs_and_env_files_are_private_and_removed_afterwards():
    probe = ("import os, stat; print(os.environ['OTHER']); print(os.environ['TEXT']); "
             "print(oct(stat.S_IMODE(os.stat(os.environ['TEXT']).st_mode))); print(open(os.environ['TEXT']).read())")
    result = run_command([sys.executable, "-c", probe], kubeconfig=CONFIG, kubeconfigs={"OTHER": CONFIG},
                         env_files={"TEXT": "hello"})
    other, text, mode, content = result.stdout.splitlines()
    assert (mode, content) == ("0o600", "hello")
    assert not os.path.exists(other) and not os.path.exists(text)


# ---------------------------------------------------------------- changed_when

def done(rc=0, stdout="", stderr=""):
    return CommandResult(argv=["x"], rc=rc, stdout=stdout, stderr=stderr)


@pytest.mark.parametrize("option, result, succeeded, changed", [
    ("always", done(), True, True),
    (True, done(), True, True),
    ("never", done(stdout="created"), True, False),
    (False, done(), True, False),
    ({"stdout_matches": r"^(created|configured)$"}, done(stdout="x\nconfigured\n"), True, True),
    ({"stdout_matches": r"^(created|configured)$"}, done(stdout="unchanged\n"), True, False),
    ({"stderr_matches": "moved"}, done(stderr="2 objects moved"), True, True),
    ({"rc": 2}, done(rc=2), True, True),
    ({"rc": [2, 3]}, done(rc=0), True, False),
    ({"rc": 2}, done(rc=1), False, True),
    ("never", done(rc=1), False, False),
    ({"rc": 2, "stdout_matches": "created"}, done(stdout="created"), True, True),
], ids=["always", "true-is-always", "never-is-a-read-only-check", "false-is-never", "stdout-matches-a-line",
        "stdout-does-not-match", "stderr-matches", "a-listed-exit-code-is-a-change-and-a-success",
        "rc-0-is-no-change-when-codes-are-listed", "an-unlisted-exit-code-fails", "never-still-fails-on-rc",
        "any-one-condition-is-enough"])
def test_changed_when(option, result, succeeded, changed):
    rule = changed_when_rule(option)
    assert rule.succeeded(result) is succeeded
    if succeeded:
        assert rule.changed(result) is changed


@pytest.mark.parametrize("option, message", [
    ("sometimes", "changed_when: expected always, never, or a mapping"),
    ({}, "an empty mapping"),
    ({"stdout": "x"}, "unknown key(s) stdout"),
    ({"rc": 0}, "changed_when.rc: expected an exit code from 1 to 255"),
    ({"rc": [2, "3"]}, "changed_when.rc: expected an exit code"),
    ({"rc": True}, "changed_when.rc: expected an exit code"),
    ({"stdout_matches": "("}, "changed_when.stdout_matches: '(' is not a regular expression"),
    ({"stderr_matches": ""}, "changed_when.stderr_matches: expected a regular expression"),
], ids=["unknown-word", "empty-mapping", "unknown-key", "rc-0-is-never-a-change", "rc-not-a-number",
        "rc-not-a-boolean", "bad-regex", "empty-regex"])
def test_changed_when_refuses(option, message):
    with pytest.raises(PhasekitError) as err:
        changed_when_rule(option)
    assert message in str(err.value)


def test_plans_name_the_bad_changed_when_option():
    from ansible_collections.phasekit.kube.plugins.plugin_utils.plan import executors
    _checked, errors = executors()["command"].check_options({"cmd": "true", "changed_when": "sometimes"}, "/site")
    assert errors == ["changed_when: expected always, never, or a mapping of one or more of rc, stdout_matches, "
                      "stderr_matches, got 'sometimes'"]


@pytest.mark.parametrize("size, kept", [
    (10, 10), (MAX_OUTPUT, MAX_OUTPUT), (MAX_OUTPUT + 5, MAX_OUTPUT),
], ids=["short-output-whole", "at-the-limit-whole", "longer-output-keeps-its-end"])
def test_kept_output(size, kept):
    output = "".join(str(number % 10) for number in range(size))
    shown = kept_output(output)
    assert shown.endswith(output[-kept:]) and len(shown) - kept < 40
    assert ("characters before cut" in shown) is (size > MAX_OUTPUT)


@pytest.mark.parametrize("environ, env, shown", [
    (None, None, "controller"),
    ({"EXTRA": "from the task's environment", "PATH": os.environ["PATH"]}, None, "from the task's environment"),
    ({"EXTRA": "from the task's environment", "PATH": os.environ["PATH"]}, {"EXTRA": "env option"}, "env option"),
], ids=["controller-environment-by-default", "task-environment-replaces-it", "env-option-wins"])
def test_a_command_starts_from_its_task_s_environment(monkeypatch, environ, env, shown):
    monkeypatch.setenv("EXTRA", "controller")
    result = run_command([sys.executable, "-c", PROBE, "0"], kubeconfig=CONFIG, env=env, environ=environ)
    assert result.stdout.splitlines()[4] == shown
