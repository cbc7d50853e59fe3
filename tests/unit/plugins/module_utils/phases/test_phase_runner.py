"""The fleet runner's rules: plan order, a barrier per phase, stop after a failure, records per host."""

from __future__ import annotations

import threading
import time

import pytest

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.executors import apply as apply_executor
from ansible_collections.phasekit.kube.plugins.module_utils.running.builtin import (
    REQUEST_BUDGET, BuiltinExecutors, SharedRequests, applies_after, apply_arguments, capped, command_timeout,
    option_values, phase_environment)
from ansible_collections.phasekit.kube.plugins.module_utils.running.runner import (
    MAX_MESSAGE, HostContext, LiveProgress, Outcome, plan_steps, result_of, retry_pause, run_on_host, run_phases,
    time_left)
from ansible_collections.phasekit.kube.plugins.module_utils.kube.apply import APPLY_OPTIONS_SPEC
from ansible_collections.phasekit.kube.plugins.module_utils.kube.session import ListMemory
from phase_helpers import run_entry


def phase(name, executor="apply", hosts=("a", "b"), **extra):
    return run_entry(name, executor, hosts, source=extra.pop("source", None), options=extra.pop("options", {}),
                     **extra)


class Script:
    """HostWork that records calls and answers from a table of (phase, host) -> Outcome or exception."""

    def __init__(self, answers=None, delay=0.0):
        self.answers = answers or {}
        self.calls = []
        self.delay = delay
        self.lock = threading.Lock()

    def __call__(self, planned, context):
        host = context.host
        with self.lock:
            self.calls.append((planned.name, host, time.monotonic()))
        time.sleep(self.delay)
        answer = self.answers.get((planned.name, host), Outcome())
        if isinstance(answer, Exception):
            raise answer
        return answer


def test_phases_run_in_plan_order_with_a_barrier_between_them():
    work = Script(delay=0.02)
    run_phases([phase("one", hosts="abcd"), phase("two", hosts="abcd")], work, hosts_in_play=list("abcd"),
               concurrency=4)
    first_two = min(t for name, _host, t in work.calls if name == "two")
    last_one = max(t for name, _host, t in work.calls if name == "one")
    assert first_two >= last_one + 0.015   # every host finished phase one before phase two started


def test_a_phase_runs_its_hosts_concurrently():
    work = Script(delay=0.2)
    began = time.monotonic()
    run_phases([phase("one", hosts="abcd")], work, hosts_in_play=list("abcd"), concurrency=4)
    assert time.monotonic() - began < 0.6


class SlowHosts:
    """HostWork where each host takes its own time (seconds) and answers its own outcome."""

    def __init__(self, seconds: dict, answers: dict | None = None):
        self.seconds, self.answers = seconds, answers or {}

    def __call__(self, planned, context):
        time.sleep(self.seconds[context.host])
        return self.answers.get(context.host, Outcome())


@pytest.mark.parametrize("seconds, lines_at_least, lines_at_most", [
    ({"a": 0.05, "b": 0.05}, 0, 0),
    ({"a": 0.05, "b": 1.0}, 3, 5),
], ids=["short-phase-says-nothing", "long-phase-says-how-far-it-got-at-most-every-interval"])
def test_live_progress_of_a_long_phase(seconds, lines_at_least, lines_at_most):
    shown = []
    live = LiveProgress(lambda planned, _barrier, count: shown.append((planned.name, count)), after=0.3, every=0.2)
    run_phases([phase("one", hosts="ab")], SlowHosts(seconds, {"a": Outcome(changed=True)}), hosts_in_play=["a", "b"],
               concurrency=2, live=live)
    assert lines_at_least <= len(shown) <= lines_at_most, shown
    gaps = [later.seconds - earlier.seconds for (_n, earlier), (_m, later) in zip(shown, shown[1:])]
    assert all(gap >= 0.19 for gap in gaps), gaps
    for name, count in shown:
        assert name == "one" and count.seconds >= 0.3
        assert (count.clusters, count.done, count.changed, count.failed, count.running) == (2, 1, 1, 0, 1)
        assert (count.slowest, count.slowest_running) == ("b", True)


def test_live_progress_counts_failures_and_names_a_finished_slowest_cluster():
    shown = []
    live = LiveProgress(lambda planned, _barrier, count: shown.append(count), after=0.3, every=10)
    work = SlowHosts({"a": 0.45, "b": 0.05, "c": 0.8}, {"a": Outcome(failed=True, msg="boom")})
    run_phases([phase("one", hosts="abc")], work, hosts_in_play=list("abc"), concurrency=2, live=live)
    # two at once: c waits for b's place; at 0.3s a is running longest (0.3s), then c until the end
    assert len(shown) == 1
    assert (shown[0].done, shown[0].failed, shown[0].running, shown[0].slowest) == (1, 0, 2, "a")


def test_live_progress_says_what_the_slowest_running_cluster_waits_for():
    shown = []
    asked = []

    def waiting(name, host):
        asked.append((name, host))
        return f"Deployment apps/web on {host}: Available: 0/2"

    live = LiveProgress(lambda planned, _barrier, count: shown.append(count), after=0.3, every=10, waiting=waiting)
    run_phases([phase("one", hosts="ab")], SlowHosts({"a": 0.05, "b": 0.6}), hosts_in_play=["a", "b"],
               concurrency=2, live=live)
    assert [(count.slowest, count.waiting) for count in shown] == [("b", "Deployment apps/web on b: Available: 0/2")]
    assert asked == [("one", "b")]   # only the slowest one, while it runs


@pytest.mark.parametrize("dry_run, expected_phases", [
    (False, ["one", "one", "two", "two"]),
    (True, ["one", "one", "two", "two", "three", "three"]),
], ids=["failure-stops-after-the-barrier", "dry-run-reports-every-phase"])
def test_failure_stops_the_plan_after_its_barrier(dry_run, expected_phases):
    work = Script({("two", "a"): Outcome(failed=True, msg="boom")})
    report = run_phases([phase("one"), phase("two"), phase("three")], work, hosts_in_play=["a", "b"],
                        dry_run=dry_run)
    assert [record.phase for record in report.records] == expected_phases
    assert report.stopped_by == ("" if dry_run else "two")
    assert report.failed_hosts() == {"a": "phase two failed on cluster a: boom"}


@pytest.mark.parametrize("answer, message", [
    (PhasekitError("kubeconfig of a: no such file"), "kubeconfig of a: no such file"),
    (KeyError("x"), "unexpected error (KeyError): 'x'"),
], ids=["collection-error", "unexpected-error-without-traceback"])
def test_errors_become_failed_records(answer, message):
    report = run_phases([phase("one")], Script({("one", "a"): answer}), hosts_in_play=["a", "b"])
    assert [(r.host, r.result, r.msg) for r in report.records] == [("a", "failed", message), ("b", "ok", "")]


def test_only_hosts_in_the_play_run():
    work = Script()
    report = run_phases([phase("one", hosts="abc")], work, hosts_in_play=["b", "z"])
    assert [(name, host) for name, host, _t in work.calls] == [("one", "b")]
    assert [record.host for record in report.records] == ["b"]


def test_a_stopped_plan_runs_nothing():
    work = Script()
    report = run_phases([phase("one")], work, hosts_in_play=["a"], stopped_by="earlier")
    assert work.calls == [] and report.records == [] and report.stopped_by == "earlier"


@pytest.mark.parametrize("dry_run, answer, kept", [
    (False, Outcome(), []),
    (False, Outcome(failed=True, msg="no kubeconfig"), ["failed"]),
    (True, Outcome(skipped=True), ["skipped"]),
], ids=["prepared-not-recorded", "failed-preparation-recorded", "dry-run-skipped-recorded"])
def test_tasks_phases_are_recorded_only_when_they_fail_or_skip(dry_run, answer, kept):
    report = run_phases([phase("look", "tasks", hosts="a")], Script({("look", "a"): answer}), hosts_in_play=["a"],
                        dry_run=dry_run)
    assert [record.result for record in report.records] == kept


@pytest.mark.parametrize("outcome, status_mode, expected", [
    (Outcome(), False, "ok"),
    (Outcome(changed=True), False, "changed"),
    (Outcome(skipped=True), False, "skipped"),
    (Outcome(failed=True), False, "failed"),
    (Outcome(not_ready=True), False, "failed"),
    (Outcome(not_ready=True), True, "not ready"),
], ids=["ok", "changed", "skipped", "failed", "not-ready-fails-a-run", "not-ready-is-a-state-in-status"])
def test_result_words(outcome, status_mode, expected):
    assert result_of(outcome, status_mode) == expected


def test_long_messages_are_cut():
    report = run_phases([phase("one", hosts="a")], Script({("one", "a"): Outcome(failed=True, msg="x" * 100000)}),
                        hosts_in_play=["a"])
    assert len(report.records[0].msg) < MAX_MESSAGE + 40
    assert report.records[0].msg.endswith("(100000 characters)")


@pytest.mark.parametrize("executors, expected", [
    (["apply", "wait"], [(True, ["p0", "p1"])]),
    (["apply", "tasks", "apply", "apply"], [(True, ["p0"]), (False, ["p1"]), (True, ["p2", "p3"])]),
    (["tasks", "tasks"], [(False, ["p0"]), (False, ["p1"])]),
    (["apply", None, "wait"], [(True, ["p0", "p2"])]),
], ids=["controller-phases-form-one-step", "tasks-phase-splits", "each-tasks-phase-alone", "group-phases-skipped"])
def test_plan_steps(executors, expected):
    phases = [{"name": f"p{i}", "executor": executor} for i, executor in enumerate(executors)]
    assert [(step["controller"], [p["name"] for p in step["phases"]]) for step in plan_steps(phases)] == expected


# ---------------------------------------------------------------- built-in executors

def test_apply_arguments_complete_defaults_and_name_the_applyset_after_the_phase():
    args = apply_arguments(phase("apps/hello", options={"prune": True}))
    assert args["applyset"] == "apps.hello"
    assert args["field_manager"] == APPLY_OPTIONS_SPEC["field_manager"]["default"]
    assert apply_arguments(phase("x", options={"prune": True, "applyset": "mine"}))["applyset"] == "mine"
    assert apply_arguments(phase("x"))["applyset"] is None


def test_option_values_ignore_what_the_spec_does_not_know():
    assert option_values({"a": {"default": 1}, "b": {}}, {"b": 2, "zzz": 3}) == {"a": 1, "b": 2}


def test_phase_environment_names_phase_host_and_source():
    assert phase_environment(phase("p", source="/x/y"), "h") == {
        "PHASEKIT_PHASE": "p", "PHASEKIT_HOST": "h", "PHASEKIT_SOURCE": "/x/y"}
    assert phase_environment(phase("p", source=[{"kind": "x"}]), "h")["PHASEKIT_SOURCE"] == ""


@pytest.mark.parametrize("clusters_at_once, phase_hosts, in_play, expected", [
    (10, 60, 60, REQUEST_BUDGET // 10), (10, 60, 1, REQUEST_BUDGET), (10, 3, 60, REQUEST_BUDGET // 3),
    (60, 60, 60, 1), (300, 300, 300, 1), (10, 0, 0, REQUEST_BUDGET),
], ids=["fleet", "limited-to-one", "small-phase", "more-clusters-than-budget", "never-zero", "no-host"])
def test_each_cluster_gets_its_share_of_the_request_budget(clusters_at_once, phase_hosts, in_play, expected):
    hosts = [f"h{i}" for i in range(phase_hosts)]
    shared = SharedRequests(pool=None, clusters_at_once=clusters_at_once, hosts_in_play=frozenset(hosts[:in_play]))
    assert shared.per_cluster(phase("p", hosts=hosts)) == expected


class NoCluster:
    """ClusterAccess for executors that must not reach a cluster."""

    def resolution(self, host):
        raise AssertionError(f"resolved {host}")

    def session(self, host, connections):
        raise AssertionError(f"connected to {host}")

    def secrets(self, _host):
        return frozenset()


@pytest.mark.parametrize("mode, check_mode, executor", [
    ("validate", False, "command"), ("status", False, "command"), ("run", True, "command"),
    ("validate", False, "wait"), ("validate", False, "tasks"), ("status", False, "tasks"),
], ids=["command-validate", "command-status", "command-check", "wait-validate", "tasks-validate",
        "tasks-status"])
def test_dry_runs_skip_without_touching_a_cluster(mode, check_mode, executor):
    options = {"cmd": "true"} if executor == "command" else {}
    outcome = BuiltinExecutors(NoCluster(), mode=mode, check_mode=check_mode)(
        phase("p", executor, options=options), HostContext("a"))
    assert outcome.skipped


@pytest.mark.parametrize("mode, check_mode, options, preview", [
    ("run", True, {"argv": ["seed.sh", "--all things"]}, "would run: seed.sh '--all things'"),
    ("status", False, {"cmd": "kubectl get ns"}, "would run: kubectl get ns"),
], ids=["check-mode-says-what-would-run", "status-says-what-would-run"])
def test_a_command_preview_says_what_would_run_and_runs_nothing(mode, check_mode, options, preview):
    outcome = BuiltinExecutors(NoCluster(), mode=mode, check_mode=check_mode)(phase("p", "command", options=options),
                                                                              HostContext("a"))
    assert outcome.skipped and outcome.details["preview"] == preview


class ResolvedOnly(NoCluster):
    """A cluster whose kubeconfig resolves (a command gets it) and that is never connected to."""

    def resolution(self, host):
        return type("Resolution", (), {"config": {"apiVersion": "v1", "kind": "Config", "current-context": host,
                                                  "clusters": [], "users": [], "contexts": []}, "namespace": None})()


@pytest.mark.parametrize("mode, check_mode, declared, runs", [
    ("run", True, False, False), ("run", True, True, True), ("status", False, True, True),
    ("validate", False, True, False), ("run", False, False, True),
], ids=["check-mode-runs-no-command", "check-mode-runs-one-declared-safe", "status-runs-one-declared-safe",
        "validate-runs-none", "a-run-runs-every-command"])
def test_run_in_check_mode_declares_a_command_safe_to_run_in_a_preview(tmp_path, mode, check_mode, declared, runs):
    marker = tmp_path / "ran"
    options = {"argv": ["touch", str(marker)], "run_in_check_mode": declared}
    outcome = BuiltinExecutors(ResolvedOnly(), mode=mode, check_mode=check_mode)(
        phase("p", "command", options=options), HostContext("a"))
    assert marker.exists() is runs and outcome.skipped is not runs
    if runs and check_mode:
        assert outcome.details["preview"] == f"ran (run_in_check_mode): touch {marker}"


def test_a_bundle_is_rendered_once_for_all_hosts_and_its_error_reaches_every_host():
    renders = []

    def render(planned):
        renders.append(planned.name)
        raise PhasekitError("bundle broken.yaml: document 2: kind missing")

    executors = BuiltinExecutors(NoCluster(), render=render)
    report = run_phases([phase("apps", hosts="abc")], executors, hosts_in_play=list("abc"))
    assert renders == ["apps"]
    assert {record.msg for record in report.records} == {"bundle broken.yaml: document 2: kind missing"}


class TemplatingAccess(NoCluster):
    """ClusterAccess whose hosts have variables: ``{{ name }}`` replaced, vault values known per host."""

    VARIABLES = {"a": {"tenant": "alpha", "password": "alpha-secret"}, "b": {"tenant": "beta", "password": "pw-b-9"}}

    def __init__(self):
        self.rendered = []

    def _render(self, host, text):
        for name, value in self.VARIABLES[host].items():
            text = text.replace("{{ " + name + " }}", value)
        return text

    def render_template(self, host, path):
        self.rendered.append((host, path.rsplit("/", 1)[-1]))
        with open(path, encoding="utf-8") as source:
            return self._render(host, source.read())

    def render_options(self, host, options, where):
        return {key: self._render(host, value) if isinstance(value, str) else value for key, value in options.items()}

    def secrets(self, host):
        return frozenset({self.VARIABLES[host]["password"]})


def test_a_bundle_with_templates_renders_per_host_and_plain_ones_once(tmp_path):
    (tmp_path / "cm.yaml.j2").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ tenant }}\n")
    (tmp_path / "plain.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\n")
    access = TemplatingAccess()
    executors = BuiltinExecutors(access)
    templated = phase("t", source=str(tmp_path / "cm.yaml.j2"))
    plain = phase("p", source=str(tmp_path / "plain.yaml"))
    assert [one.name for host in "ab" for one in executors.bundle(templated, HostContext(host))] == ["alpha", "beta"]
    assert executors.bundle(templated, HostContext("a"))[0].name == "alpha"          # kept per host
    assert executors.bundle(plain, HostContext("a"))[0] is executors.bundle(plain, HostContext("b"))[0]
    assert access.rendered == [("a", "cm.yaml.j2"), ("b", "cm.yaml.j2")]


def test_option_strings_render_per_host_and_secrets_are_scrubbed():
    seen = []

    class Echo(BuiltinExecutors):
        def run_phase(self, entry, context):
            seen.append((context.host, entry.options["cmd"]))
            return Outcome(failed=True, msg=f"command failed: {entry.options['cmd']}",
                           details={"diff": [{"after": entry.options["cmd"]}]})

    report = run_phases([phase("c", "command", options={"cmd": "login {{ tenant }} {{ password }}"})],
                        Echo(TemplatingAccess()), hosts_in_play=["a", "b"])
    assert seen == [("a", "login alpha alpha-secret"), ("b", "login beta pw-b-9")]
    assert [record.msg for record in report.records] == [
        "command failed: login alpha ***", "command failed: login beta ***"]
    assert report.records[1].details["diff"] == [{"after": "login beta ***"}]


class HandingOut(NoCluster):
    """ClusterAccess whose hosts resolve to kubeconfigs with credentials (child: a token; parent: a client key)."""

    KEY_PEM = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIKeyBodyLineOne0123456789abcdefABCDEF0123456789abcdefAB\n" \
              "oAoGCCqGSM49AwEHoUQDQgAEKeyBodyLineTwo0123456789abcdefABCDEF01234\n-----END EC PRIVATE KEY-----\n"

    def __init__(self):
        import base64  # pylint: disable=import-outside-toplevel
        self.configs = {"child": {"users": [{"name": "u", "user": {"token": "child-token-0123456789"}}]},
                        "parent": {"users": [{"name": "p", "user": {
                            "client-key-data": base64.b64encode(self.KEY_PEM.encode()).decode()}}]}}
        self.resolved = set()

    def resolution(self, host):
        self.resolved.add(host)
        return type("Resolution", (), {"config": self.configs[host], "namespace": None, "context": host})()

    def secrets(self, host):
        from ansible_collections.phasekit.kube.plugins.module_utils.kubeconfig.redact import kubeconfig_credentials
        return frozenset(kubeconfig_credentials(self.configs[host])) if host in self.resolved else frozenset()


def test_a_failing_command_shows_no_credential_of_the_kubeconfigs_it_was_handed():
    script = ('set -x; TOKEN=$(sed -n "s/^ *token: //p" "$KUBECONFIG"); '
              'KEY=$(sed -n "s/^ *client-key-data: //p" "$PARENT"); '
              'echo "$KEY" | base64 -d >&2; echo "token $TOKEN key $KEY" >&2; exit 3')
    command = phase("c", "command", hosts=["child"],
                    options={"cmd": script, "shell": True, "kubeconfigs": {"PARENT": "parent"}})
    report = run_phases([command], BuiltinExecutors(HandingOut()), hosts_in_play=["child"])
    message = report.records[0].msg
    assert "exited with rc 3" in message and "***" in message, message
    for secret in ("child-token-0123456789", "KeyBodyLineOne", "KeyBodyLineTwo",
                   HandingOut().configs["parent"]["users"][0]["user"]["client-key-data"][:40]):
        assert secret not in message, message


@pytest.mark.parametrize("changed_when, cmd, result, msg, stdout", [
    (None, "echo configured", "changed", "rc 0: configured", "configured\n"),
    ("never", "echo ready", "ok", "rc 0: ready", "ready\n"),
    ({"stdout_matches": "^configured$"}, "echo unchanged", "ok", "rc 0: unchanged", "unchanged\n"),
    ({"stdout_matches": "^configured$"}, "echo configured", "changed", "rc 0: configured", "configured\n"),
    ({"rc": 2}, "echo drift; exit 2", "changed", "rc 2: drift", "drift\n"),
    ("never", "echo no >&2; exit 1", "failed", "command /bin/sh -c 'echo no >&2; exit 1' exited with rc 1: no", ""),
    ("never", "true", "ok", "", ""),
], ids=["changed-by-default-as-ansibles-command", "never-a-read-only-check", "regex-not-matched-is-ok",
        "regex-matched-is-changed", "a-listed-exit-code-succeeds-changed", "a-failure-stays-a-failure",
        "no-output-no-message"])
def test_a_command_phase_reports_its_output_and_counts_as_changed_by_its_rule(changed_when, cmd, result, msg, stdout):
    options = {"cmd": cmd, "shell": True, **({"changed_when": changed_when} if changed_when is not None else {})}
    report = run_phases([phase("c", "command", hosts=["child"], options=options)], BuiltinExecutors(HandingOut()),
                        hosts_in_play=["child"])
    record = report.records[0]
    assert (record.result, record.msg, record.details["stdout"]) == (result, msg, stdout)


def test_a_command_phases_output_is_masked_in_its_result_and_message():
    script = 'sed -n "s/^ *token: //p" "$KUBECONFIG"; echo "token $(sed -n "s/^ *token: //p" "$KUBECONFIG")" >&2'
    report = run_phases([phase("c", "command", hosts=["child"],
                               options={"cmd": script, "shell": True, "changed_when": "never"})],
                        BuiltinExecutors(HandingOut()), hosts_in_play=["child"])
    record = report.records[0]
    assert (record.result, record.details["stdout"], record.details["stderr"]) == ("ok", "***\n", "token ***\n")
    assert record.msg == "rc 0: ***"
    assert "child-token" not in repr(record)


def test_what_a_wait_waits_for_is_known_while_it_runs_and_forgotten_after(monkeypatch):
    seen = []

    class Waiting(BuiltinExecutors):
        def _run_executor(self, entry, context):
            self.watching(entry, context)(["not used"])
            seen.append(self.waiting_on(entry.name, context.host))
            return Outcome()

    from ansible_collections.phasekit.kube.plugins.module_utils.running import watching
    monkeypatch.setattr(watching, "waiting_summary", lambda outcomes: "Deployment apps/web: Available: 0/2")
    executors = Waiting(HandingOut())
    run_phases([phase("w", "wait", hosts=["child"])], executors, hosts_in_play=["child"])
    assert seen == ["Deployment apps/web: Available: 0/2"]
    assert executors.waiting_on("w", "child") == ""


class QuietGuard:
    """A ``ListGuard`` whose watch never hears anything."""

    @staticmethod
    def quiet():
        return True

    def close(self):
        pass


@pytest.mark.parametrize("step, expected", [
    ([phase("one"), phase("two")], {"one": {"a", "b"}, "two": set()}),
    ([phase("one"), phase("c", "command"), phase("two", hosts=("b",))], {"one": {"b"}, "c": {"b"}, "two": set()}),
    ([phase("one"), phase("chart", "helm", options={"helm_mode": "apply"})], {"one": {"a", "b"}, "chart": set()}),
    ([phase("one"), phase("chart", "helm")], {"one": set(), "chart": set()}),
], ids=["a-later-apply-on-the-same-hosts", "only-the-hosts-a-later-apply-runs-on",
        "a-chart-applied-as-objects-counts", "a-helm-release-lists-nothing-for-it"])
def test_an_apply_keeps_its_lists_only_where_a_later_apply_of_the_step_runs(step, expected):
    assert {name: set(hosts) for name, hosts in applies_after(step).items()} == expected


def test_the_last_apply_of_a_step_opens_no_watch_for_its_lists(monkeypatch):
    guarded = []

    class Session:
        warnings = []

        def guard_kept(self, watch=True):
            guarded.append(watch)

    class Access(NoCluster):
        def resolution(self, host):
            return type("Resolution", (), {"namespace": "ns", "config": {}, "context": host})()

        def session(self, host, connections):
            return Session()

    class Report:
        changed, diffs, ownership, failure = False, [], [], None

        @staticmethod
        def counts():
            return {"created": 0, "configured": 0, "pruned": 0}

        @staticmethod
        def not_checked():
            return []

    monkeypatch.setattr(apply_executor, "apply_bundle", lambda *args, **kwargs: Report())
    step = [phase("one", source=[]), phase("two", source=[], hosts=("a",))]
    executors = BuiltinExecutors(Access(), step=step)
    for planned, host in (("one", "a"), ("one", "b"), ("two", "a")):
        assert not executors(step[0] if planned == "one" else step[1], HostContext(host)).failed
    assert guarded == [True, False, False]   # b has no later apply; "two" is the last
    assert BuiltinExecutors(Access())(step[1], HostContext("a")) is not None and guarded[-1] is True   # no step known: watched


def test_a_phase_that_is_not_an_apply_forgets_the_steps_lists_before_and_after_it_runs():
    memory = ListMemory()
    seen_during = []

    class Watching(HandingOut):
        def resolution(self, host):
            seen_during.append(memory.recall(0, "https://x", "/api/v1/namespaces/a/configmaps"))
            return super().resolution(host)

    executors = BuiltinExecutors(Watching(), lists=memory)
    memory.keep(0, "https://x", "/api/v1/namespaces/a/configmaps", memory.ticket(), [{"metadata": {"name": "c"}}], "7")
    memory.guard(0, "https://x", "/api/v1/namespaces/a/configmaps", "7", QuietGuard())
    # an apply keeps them (here it cannot reach its cluster at all)
    run_phases([phase("apply", "apply", hosts=["child"], source=[])], BuiltinExecutors(NoCluster(), lists=memory),
               hosts_in_play=["child"])
    assert memory.recall(0, "https://x", "/api/v1/namespaces/a/configmaps") is not None

    def keep_meanwhile(*_args):  # something lists during the command: gone after it too
        memory.keep(1, "https://x", "/api/v1/namespaces/b/configmaps", memory.ticket(), [], "7")
        memory.guard(1, "https://x", "/api/v1/namespaces/b/configmaps", "7", QuietGuard())

    command = phase("c", "command", hosts=["child"], options={"cmd": "true", "shell": True})
    original = executors.run_phase

    def command_then_list(phase_, host):
        outcome = original(phase_, host)
        keep_meanwhile()
        return outcome

    executors.run_phase = command_then_list
    report = run_phases([command], executors, hosts_in_play=["child"])
    assert report.records[0].result == "changed", report.records[0].msg
    assert seen_during == [None]
    assert memory.recall(1, "https://x", "/api/v1/namespaces/b/configmaps") is None


def test_a_kubeconfig_given_as_an_env_files_text_is_masked_too():
    kubeconfig = "apiVersion: v1\nusers:\n- name: x\n  user:\n    token: env-file-token-0123456789\n"
    command = phase("c", "command", hosts=["child"],
                    options={"cmd": 'cat "$OTHER" >&2; exit 1', "shell": True, "env_files": {"OTHER": kubeconfig}})
    report = run_phases([command], BuiltinExecutors(HandingOut()), hosts_in_play=["child"])
    assert "token: ***" in report.records[0].msg and "env-file-token" not in report.records[0].msg


# ---------------------------------------------------------------- what plans show

@pytest.mark.parametrize("executor, options, shown", [
    ("command", {"cmd": "helm install", "env": {"TOKEN": "s3cret", "MODE": "x"}, "stdin": "password"},
     {"cmd": "helm install", "env": {"TOKEN": "***", "MODE": "***"}, "stdin": "***"}),
    ("tasks", {"admin_password": "s3cret", "replicas": 3}, {"admin_password": "***", "replicas": "***"}),
    ("apply", {"namespace": "apps", "prune": True}, {"namespace": "apps", "prune": True}),
], ids=["command-env-and-stdin-hidden", "task-file-options-hidden", "apply-options-shown"])
def test_shown_options_hide_what_may_be_secret(executor, options, shown):
    from ansible_collections.phasekit.kube.plugins.plugin_utils.plan import executors
    assert executors()[executor].shown_options(options) == shown


def test_inline_secret_sources_are_shown_redacted():
    from ansible_collections.phasekit.kube.plugins.module_utils.planning.planner import shown_source
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "stringData": {"password": "s3cret"}}
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "b"}}
    assert shown_source([secret, config]) == [
        {**secret, "stringData": {"password": "***"}}, config]
    assert shown_source(secret)["stringData"] == {"password": "***"}
    assert shown_source("/site/manifests/apps") == "/site/manifests/apps"


@pytest.mark.parametrize("executor, options, message", [
    ("apply", {"wait": {"timeout": "soon"}}, "timeout must be a number of seconds"),
    ("apply", {"wait": {"colour": "red"}}, "unknown option"),
    ("apply", {"concurrency": 0}, "concurrency must be between"),
    ("wait", {"timeout": -5}, "timeout must be a number of seconds >= 0"),
    ("wait", {"kinds": {"Deployment": "maybe"}}, "must be one of"),
], ids=["apply-wait-timeout-word", "apply-wait-unknown-key", "apply-concurrency-zero", "wait-negative-timeout",
        "wait-kind-mode"])
def test_plans_refuse_option_values_the_executor_would_refuse(executor, options, message):
    from ansible_collections.phasekit.kube.plugins.plugin_utils.plan import executors
    _checked, errors = executors()[executor].check_options(options, "/site")
    assert any(message in error for error in errors), errors


class Flaky:
    """HostWork that fails its first ``failures`` attempts on each host, then succeeds."""

    def __init__(self, failures, outcome=None):
        self.failures = failures
        self.outcome = outcome or Outcome(failed=True, msg="connection refused")
        self.attempts = {}
        self.lock = threading.Lock()

    def __call__(self, planned, context):
        host = context.host
        with self.lock:
            self.attempts[host] = self.attempts.get(host, 0) + 1
            count = self.attempts[host]
        return Outcome(changed=True) if count > self.failures else self.outcome


class FakeClock:
    def __init__(self):
        self.now = 100.0
        self.pauses = []

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.pauses.append(seconds)
        self.now += seconds


@pytest.mark.parametrize("failures, retries, result, message, attempts", [
    (2, 2, "changed", "succeeded on attempt 3 of 3", 3),
    (3, 2, "failed", "attempt 3 of 3: connection refused", 3),
    (0, 2, "changed", "", 1),
    (1, 0, "failed", "connection refused", None),
], ids=["fails-twice-then-succeeds", "fails-every-attempt", "first-attempt-succeeds", "no-retries-no-word"])
def test_retries(failures, retries, result, message, attempts):
    clock = FakeClock()
    record = run_on_host(phase("one", retries=retries, delay=1.5), HostContext("a"), Flaky(failures), sleep=clock.sleep,
                         clock=clock)
    assert (record.result, record.msg, record.details.get("attempts")) == (result, message, attempts)
    assert clock.pauses == [1.5, 3.0][:min(failures, retries)]   # the delay, doubled after each failure


def test_not_ready_is_retried_but_a_dry_run_is_not():
    not_ready = Outcome(not_ready=True, msg="1 of 1 objects not ready")
    clock = FakeClock()
    assert run_on_host(phase("one", retries=1, delay=0), HostContext("a"), Flaky(1, not_ready), sleep=clock.sleep,
                       clock=clock).result == "changed"
    report = run_phases([phase("one", hosts="a", retries=3, delay=0)], Flaky(1), hosts_in_play=["a"], dry_run=True,
                        sleep=clock.sleep)
    assert [(r.result, r.details.get("attempts")) for r in report.records] == [("failed", None)]


def test_no_attempt_starts_after_the_phase_timeout():
    clock = FakeClock()
    record = run_on_host(phase("one", retries=5, delay=4, timeout=10), HostContext("a"), Flaky(9), sleep=clock.sleep, clock=clock)
    assert clock.pauses == [4]     # after it t=104; the next pause (8 s) would end past t=110
    assert record.result == "failed"
    assert record.msg == ("attempt 2 of 6: connection refused (no time left for attempt 3: "
                          "the phase's timeout is 10s)")


def test_the_executor_sees_the_time_left():
    clock = FakeClock()
    seen = []

    def work(_planned, context):
        seen.append(time_left(context.deadline, clock=lambda: clock.now + 2.5))
        return Outcome()

    run_on_host(phase("one", timeout=30), HostContext("a"), work, clock=clock)
    run_on_host(phase("two"), HostContext("a"), work, clock=clock)
    assert seen == [27.5, None]


@pytest.mark.parametrize("delay, attempt, pause", [
    (None, 1, 5.0), (2, 1, 2.0), (2, 3, 8.0), (100, 4, 300.0), (0, 5, 0.0),
], ids=["default-delay", "first-pause-is-the-delay", "doubled-per-failure", "capped", "no-pause"])
def test_retry_pause(delay, attempt, pause):
    assert retry_pause(delay, attempt) == pause


@pytest.mark.parametrize("seconds, left, default, expected", [
    (300, None, None, 300), (300, 12.5, None, 12.5), (5, 12.5, None, 5), (None, 12.5, 300, 12.5),
    (None, None, 300, 300), (None, None, None, None),
], ids=["no-phase-timeout", "capped-by-the-phase", "shorter-wait-kept", "default-capped", "default", "nothing"])
def test_waits_end_within_the_phase_timeout(seconds, left, default, expected):
    deadline = None if left is None else time.monotonic() + left
    assert capped(seconds, deadline, default=default) == (None if expected is None else pytest.approx(expected, abs=0.05))


@pytest.mark.parametrize("seconds, left, expected", [
    (None, None, None), (60, None, 60), (60, 12.2, 13), (None, 0.0, 1),
], ids=["unbounded", "its-own-limit", "rounded-up-within-the-phase", "at-least-a-second"])
def test_command_timeout(seconds, left, expected):
    deadline = None if left is None else time.monotonic() + left
    assert command_timeout(seconds, deadline) == expected


@pytest.mark.parametrize("recorded, now, same", [
    ("hmac-sha256:a", "hmac-sha256:a", True),
    ("hmac-sha256:a", "hmac-sha256:b", False),
    ("hmac-sha256:a", None, None),
    (None, "hmac-sha256:a", None),
], ids=["same-digest", "another-digest", "no-key-now-not-compared", "recorded-without-a-digest-not-compared"])
def test_status_compares_a_bundle_only_when_both_digests_are_known(recorded, now, same):
    class Records:
        @staticmethod
        def last(_host, _phase):
            return {"run": "r", "result": "ok", "started": "2026-11-24T14:45:01Z", "by": "ci", "digest": recorded}

    executors = BuiltinExecutors(HandingOut(), mode="status", records=Records())
    assert executors.host_records.last_run(phase("p"), "child", now)["same_bundle"] is same
