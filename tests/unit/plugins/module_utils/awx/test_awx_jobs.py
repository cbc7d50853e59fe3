# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""AWX at its boundary: what a sliced job's jobs are given, and ``plan_slice: awx`` reading a job's ``k/N`` from
AWX's API, over HTTP on loopback: the paths, headers and fields of AWX's own API client and serializer (see
``awx.jobs``), a token never in an error."""

from __future__ import annotations

import base64

import pytest
from fake_awx import FakeAwx, job_of

from ansible_collections.phasekit.kube.plugins.module_utils.awx.jobs import (
    AwxSlice, ControllerAccess, asked_slice_of_job, awx_run_id, awx_slice, job_record)
from ansible_collections.phasekit.kube.plugins.module_utils.coordination.slices import (
    SliceError, SliceId, check_run_id)

TOKEN = "tok-4f1a-secret"  # nosec B105: a test token
PASSWORD = "pw-9c2e-secret"  # nosec B105

HOST = "https://awx.example.com"


@pytest.mark.parametrize("extra_vars, environ, job, expected", [
    ({"awx_job_id": 12}, {"JOB_ID": "12"}, None, None),
    ({"awx_job_id": 12, "awx_workflow_job_id": 11}, {"JOB_ID": "12"}, None, AwxSlice("awx-11", "12", None)),
    ({"tower_job_id": 12, "tower_workflow_job_id": 11}, {}, None, AwxSlice("awx-11", "12", None)),
    ({"awx_workflow_job_id": "11"}, {"JOB_ID": "13"}, None, AwxSlice("awx-11", "13", None)),
    ({"awx_job_id": 13, "awx_workflow_job_id": 11}, {}, {"job_slice_number": 2, "job_slice_count": 3},
     AwxSlice("awx-11", "13", SliceId(2, 3))),
    ({"awx_job_id": 13, "awx_workflow_job_id": 11}, {}, {"job_slice_number": 0, "job_slice_count": 1}, None),
    ({"awx_job_id": 13, "awx_workflow_job_id": 11}, {"AWX_HOST": HOST}, None,
     AwxSlice(awx_run_id("11", HOST), "13", None)),
    ({"awx_workflow_job_id": True}, {}, None, None),
    (None, None, None, None),
], ids=["a-job-in-no-workflow-is-not-sliced", "the-run-is-the-workflow-job", "tower-prefix-as-well",
        "the-job-id-from-the-environment", "the-slice-from-the-jobs-api-record", "a-job-record-of-one-slice-is-not-sliced",
        "awx-host-keeps-installations-apart", "a-bool-is-no-id", "nothing-given"])
def test_what_awx_gives_a_sliced_jobs_job(extra_vars, environ, job, expected):
    assert awx_slice(extra_vars, environ, job) == expected


def test_the_run_id_is_shared_by_a_launchs_slices_and_new_on_every_launch():
    first = {awx_slice({"awx_job_id": job, "awx_workflow_job_id": 40}, {"AWX_HOST": HOST}).run_id for job in (41, 42)}
    second = awx_slice({"awx_job_id": 51, "awx_workflow_job_id": 50}, {"AWX_HOST": HOST}).run_id
    assert len(first) == 1 and second not in first
    assert check_run_id(second) == second


@pytest.fixture
def awx():
    made = []

    def make(*args, **kwargs) -> FakeAwx:
        made.append(FakeAwx(*args, **kwargs))
        return made[-1]
    yield make
    for fake in made:
        fake.server.shutdown()


SLICED = {"awx_job_id": 42, "awx_workflow_job_id": 40}


def test_a_slice_reads_its_k_of_n_with_a_token(awx):
    fake = awx({"42": job_of(2, 3)})
    environ = {"CONTROLLER_HOST": fake.url, "CONTROLLER_OAUTH_TOKEN": TOKEN, "JOB_ID": "42"}
    assert asked_slice_of_job("awx", SLICED, environ) == "2/3"
    assert fake.seen == [("/api/v2/jobs/42/", f"Bearer {TOKEN}")]


def test_a_user_and_password_go_as_basic_authentication_under_the_tower_names(awx):
    fake = awx({"42": job_of(3, 3)})
    environ = {"TOWER_HOST": fake.url, "TOWER_USERNAME": "bot", "TOWER_PASSWORD": PASSWORD}
    assert asked_slice_of_job(" AWX ", SLICED, environ) == "3/3"
    assert fake.seen[0][1] == "Basic " + base64.b64encode(f"bot:{PASSWORD}".encode()).decode()


def test_automation_platform_serves_the_controller_under_its_own_path(awx):
    fake = awx({"42": job_of(1, 2)}, paths=("/api/controller/",))
    environ = {"CONTROLLER_HOST": fake.url, "CONTROLLER_OAUTH_TOKEN": TOKEN}
    assert asked_slice_of_job("awx", SLICED, environ) == "1/2"
    assert [path for path, _auth in fake.seen] == ["/api/v2/jobs/42/", "/api/controller/v2/jobs/42/"]


def test_the_path_prefix_variable_is_the_only_path_tried(awx):
    fake = awx({"42": job_of(1, 2)}, paths=("/custom/",))
    environ = {"CONTROLLER_HOST": fake.url + "/", "CONTROLLER_OAUTH_TOKEN": TOKEN,
               "CONTROLLER_OPTIONAL_API_URLPATTERN_PREFIX": "/custom/"}
    assert asked_slice_of_job("awx", SLICED, environ) == "1/2"
    assert [path for path, _auth in fake.seen] == ["/custom/v2/jobs/42/"]


@pytest.mark.parametrize("record", [job_of(0, 1), {**job_of(1, 1)}, {"id": 42}],
                         ids=["slicing-off", "one-slice", "no-slice-fields"])
def test_a_job_that_is_no_slice_runs_unsliced(awx, record):
    fake = awx({"42": record})
    assert asked_slice_of_job("awx", SLICED, {"CONTROLLER_HOST": fake.url}) == ""


@pytest.mark.parametrize("extra_vars, environ", [
    ({}, {}), ({"awx_job_id": 42}, {"JOB_ID": "42"}), ({"awx_workflow_job_id": 40}, {}),
], ids=["outside-awx", "a-job-in-no-workflow", "no-job-id"])
def test_no_request_outside_a_workflow_job(extra_vars, environ):
    def never(*_args):
        raise AssertionError("no request outside a sliced job")
    assert asked_slice_of_job("awx", extra_vars, {**environ, "CONTROLLER_HOST": "https://awx.invalid"}, never) == ""


@pytest.mark.parametrize("given", ["2/3", "*/4", "", None], ids=["k-of-n", "claimed", "empty", "none"])
def test_anything_but_awx_is_passed_on_unread(given):
    assert asked_slice_of_job(given, SLICED, {}) == given


def test_without_a_controller_credential_the_error_says_what_to_attach():
    with pytest.raises(SliceError, match="'Red Hat Ansible Automation Platform' credential.*'\\*/N'"):
        asked_slice_of_job("awx", SLICED, {"JOB_ID": "42"})


@pytest.mark.parametrize("status", [401, 403])
def test_a_refusal_names_the_job_and_never_the_token(awx, status):
    fake = awx({}, status=status)
    with pytest.raises(SliceError) as err:
        asked_slice_of_job("awx", SLICED, {"CONTROLLER_HOST": fake.url, "CONTROLLER_OAUTH_TOKEN": TOKEN,
                                           "CONTROLLER_USERNAME": "bot", "CONTROLLER_PASSWORD": PASSWORD})
    assert f"refused job 42 ({status}" in str(err.value)
    assert TOKEN not in str(err.value) and PASSWORD not in str(err.value)


def test_a_missing_job_and_a_page_that_is_no_record_are_clear(awx):
    with pytest.raises(SliceError, match="has no job 42 .*404.*404"):
        asked_slice_of_job("awx", SLICED, {"CONTROLLER_HOST": awx({}).url})
    with pytest.raises(SliceError, match="did not answer with a job record"):
        asked_slice_of_job("awx", SLICED, {"CONTROLLER_HOST": awx({"42": job_of(1, 2)}, body=b"<html>").url})


def test_an_unreachable_controller_names_its_address():
    with pytest.raises(SliceError, match="cannot read job 42 from AWX's API at http://127.0.0.1:9/api/v2/jobs/42/"):
        job_record(ControllerAccess(host="http://127.0.0.1:9", token=TOKEN), "42", timeout=5)


def test_the_access_never_shows_its_secrets():
    access = ControllerAccess.from_environ({"CONTROLLER_HOST": "awx.example.com", "CONTROLLER_OAUTH_TOKEN": TOKEN,
                                            "CONTROLLER_PASSWORD": PASSWORD, "CONTROLLER_VERIFY_SSL": "False"})
    assert access.host == "https://awx.example.com" and access.verify is False
    assert TOKEN not in repr(access) and PASSWORD not in repr(access)
