# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""A run in steps: each step goes on from the run so far (the previous step's result) and adds itself; one row per
rule."""

from __future__ import annotations

import pytest

from ansible_collections.phasekit.kube.plugins.plugin_utils.role_steps import (
    EMPTY, continued_args, run_after, run_before)

SO_FAR = {"run_id": "r1", "records": [{"phase": "a", "host": "h1", "result": "ok"}], "stopped_by": "",
          "resumed_hosts": ["h1"], "rollout_batches": 2, "servers": {"h1": "127.0.0.1:6443"},
          "rollout_messages": ["rollout a stopped"], "carried": {}}
ARGS = {"stopped_by": "", "resumed_hosts": [], "rollout_batches_before": 0}
STEP = {"records": [{"phase": "b", "host": "h2", "result": "changed"}], "stopped_by": "", "resumed_hosts": ["h1", "h2"],
        "servers": {"h2": "127.0.0.2:6443"}, "rollout": {"batches_run": 3, "message": ""}}


@pytest.mark.parametrize("remembered, run_id, expected", [
    ({"run": SO_FAR}, "r1", SO_FAR),
    ({"run": SO_FAR}, "r2", {**EMPTY, "run_id": "r2"}),
    ({"records": []}, "r1", {**EMPTY, "run_id": "r1"}),
    (None, "r1", {**EMPTY, "run_id": "r1"}),
    ({"run": SO_FAR}, "", {**EMPTY, "run_id": ""}),
], ids=["the-same-run-goes-on", "another-runs-result-is-not-this-run", "a-result-that-is-not-a-step",
        "the-first-step", "without-a-run-id-no-run"])
def test_run_before(remembered, run_id, expected):
    assert run_before(remembered, run_id) == expected


@pytest.mark.parametrize("args, before, expected", [
    (ARGS, SO_FAR, {"stopped_by": "", "resumed_hosts": ["h1"], "rollout_batches_before": 2}),
    ({**ARGS, "stopped_by": "tasks-phase"}, {**SO_FAR, "stopped_by": "a"},
     {"stopped_by": "tasks-phase", "resumed_hosts": ["h1"], "rollout_batches_before": 2}),
    (ARGS, {**SO_FAR, "stopped_by": "a"}, {"stopped_by": "a", "resumed_hosts": ["h1"], "rollout_batches_before": 2}),
    ({**ARGS, "resumed_hosts": ["h2", "h1"], "rollout_batches_before": 5}, SO_FAR,
     {"stopped_by": "", "resumed_hosts": ["h1", "h2"], "rollout_batches_before": 5}),
], ids=["goes-on-from-the-run-so-far", "the-tasks-stop-given-comes-first", "a-stop-before-stops-this-step",
        "given-hosts-and-batches-are-kept"])
def test_continued_args(args, before, expected):
    assert continued_args(args, before) == expected


@pytest.mark.parametrize("before, step, expected", [
    (SO_FAR, STEP, {"run_id": "r1", "records": SO_FAR["records"] + STEP["records"], "stopped_by": "",
                    "resumed_hosts": ["h1", "h2"], "rollout_batches": 3,
                    "servers": {"h1": "127.0.0.1:6443", "h2": "127.0.0.2:6443"},
                    "rollout_messages": ["rollout a stopped"], "carried": {}}),
    ({**EMPTY, "run_id": "r1"}, {**STEP, "stopped_by": "b", "rollout": {"batches_run": 1, "message": "paused"}},
     {"run_id": "r1", "records": STEP["records"], "stopped_by": "b", "resumed_hosts": ["h1", "h2"],
      "rollout_batches": 1, "servers": {"h2": "127.0.0.2:6443"}, "rollout_messages": ["paused"], "carried": {}}),
    ({**SO_FAR, "stopped_by": "a"}, {**STEP, "stopped_by": "b"}, {**SO_FAR, "stopped_by": "a"} | {
        "records": SO_FAR["records"] + STEP["records"], "resumed_hosts": ["h1", "h2"], "rollout_batches": 3,
        "servers": {"h1": "127.0.0.1:6443", "h2": "127.0.0.2:6443"}}),
    ({**SO_FAR, "carried": {"h1": {"namespaces": {"n": "a"}}}}, {**STEP, "carried": {"h1": {"namespaces": {}}}},
     {**SO_FAR, "records": SO_FAR["records"] + STEP["records"], "resumed_hosts": ["h1", "h2"], "rollout_batches": 3,
      "servers": {"h1": "127.0.0.1:6443", "h2": "127.0.0.2:6443"}, "carried": {"h1": {"namespaces": {}}}}),
], ids=["a-step-adds-its-records-servers-and-batches", "the-first-stop-and-its-message", "the-first-stop-stays",
        "a-previews-state-is-the-last-steps"])
def test_run_after(before, step, expected):
    assert run_after(before, step) == expected
