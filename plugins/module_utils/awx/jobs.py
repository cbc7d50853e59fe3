# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""AWX (and Automation Platform's controller), at one boundary: what a job of a sliced job is told, and its slice
``k/N`` read from AWX's API, so that ``plan_slice: awx`` lets AWX's Job Slicing field alone say N.

What AWX does (read in ansible/awx at e21dd0a, 2024-10-23):

- A job template with ``job_slice_count`` N > 1 becomes a *workflow job* (``is_sliced_job``) with N root nodes, node
  ``idx`` carrying ``ancestor_artifacts={"job_slice": idx + 1}`` (``awx/main/models/jobs.py:378-402``). N is
  ``min(job_slice_count, hosts in the inventory)`` (``get_effective_slice_ct``, ``jobs.py:336-346``); with one host
  or fewer the job is not sliced (``job_slice_count`` forced to 1, ``jobs.py:390-393``).
- Each node's job gets ``job_slice_number`` = its ``job_slice`` and ``job_slice_count`` = the number of nodes
  (``awx/main/models/workflow.py:383-388``), and ``allow_simultaneous``.
- The slice's inventory: the inventory's *enabled* hosts ordered by name (``order_by('name')``: the database's
  collation), then ``hosts[k-1::N]``, i.e. dealt round-robin (``awx/main/models/inventory.py:282-299`` and
  ``:301-309``; ``awx/main/tasks/jobs.py:326-333`` passes the job's slice number and count). AWX's own example
  (``awx/main/tests/functional/models/test_inventory.py:65-69``): host0..host2 in 3 slices, one each;
  ``awx/main/tests/functional/models/test_unified_job.py:272-274``: a 4th host goes to slice 1 (2, 1, 1).
- What the slice's playbook sees: **not** its slice number nor the count. The extra vars are ``awx_meta_vars``
  (``awx/main/models/unified_jobs.py:1554-1598``, under both prefixes ``awx_`` and ``tower_``,
  ``awx/main/constants.py:100-103``): ``awx_job_id`` (the slice's own job, different in every slice),
  ``awx_workflow_job_id`` / ``_name`` / ``_launch_type`` (the sliced workflow job: **the same in every slice of one
  launch, new on every launch**), inventory, user, schedule, and for jobs template, project revision and
  ``awx_execution_node`` (``jobs.py:813-829``). The node's ``ancestor_artifacts`` reach a job's extra vars only for
  non-root nodes (``workflow.py:346-372``: ``aa_dict`` is built from parents), so ``job_slice`` does not. The
  environment adds ``JOB_ID``, ``INVENTORY_ID``, ``PROJECT_REVISION``, ``AWX_HOST`` (``awx/main/tasks/jobs.py:893-901``).
- So a slice knows its run (the workflow job id) from its variables, but its ``k/N`` only from AWX's API
  (``GET $AWX_HOST/api/v2/jobs/$JOB_ID/`` has ``job_slice_number`` and ``job_slice_count``, with a credential that
  may read the job) or from an explicit ``plan_slice``. ``plan_slice: awx`` reads that record (``asked_slice_of_job``).
- Capacity: a slice's impact is ``min(hosts in its slice, forks) + 1`` (``jobs.py:690-702``); AWX does not promise the
  slices run at the same time.

How a job reads its own record (``plan_slice: awx``):

- The credential: AWX's built-in "Red Hat Ansible Automation Platform" credential type (namespace ``controller``,
  ansible/awx-plugins ``awx_plugins.credentials``) injects ``CONTROLLER_HOST``, ``CONTROLLER_USERNAME``,
  ``CONTROLLER_PASSWORD``, ``CONTROLLER_VERIFY_SSL`` (``True``/``False``) and ``CONTROLLER_OAUTH_TOKEN``, and the same
  under ``TOWER_``. AWX's own collection reads them in that order (``awx_collection/plugins/module_utils/
  controller_api.py``), sends a token as ``Authorization: Bearer`` and a user with basic authentication (``:507-510``).
- The path: ``/api/v2/jobs/<id>/`` on AWX; Automation Platform 2.5 and later serve the controller under
  ``/api/controller/v2/``; ``CONTROLLER_OPTIONAL_API_URLPATTERN_PREFIX`` replaces ``/api/`` when set
  (``controller_api.py:39`` and ``:620-640``). Without that variable both paths are tried, AWX's first.
- The record: ``JobSerializer`` has ``job_slice_number`` and ``job_slice_count`` (``awx/api/serializers.py:3454-3455``).
"""

from __future__ import annotations

import base64
import hashlib
import json
import urllib.error
from dataclasses import dataclass, field
from typing import Callable

from ansible.module_utils.urls import ConnectionError, open_url  # pylint: disable=redefined-builtin

from ansible_collections.phasekit.kube.plugins.module_utils.coordination.slices import SliceError, SliceId

# extra vars AWX gives every job of a workflow, under its two prefixes (awx/main/constants.py:100-103)
WORKFLOW_JOB_VARIABLES = ("awx_workflow_job_id", "tower_workflow_job_id")
JOB_VARIABLES = ("awx_job_id", "tower_job_id")
ASK_AWX = "awx"        # plan_slice: this job's slice, from AWX's API
PREFIXES = ("CONTROLLER_", "TOWER_")
PATH_PREFIX_VARIABLE = "CONTROLLER_OPTIONAL_API_URLPATTERN_PREFIX"
API_PATHS = ("/api/", "/api/controller/")
FALSE_WORDS = ("false", "no", "off", "0")
TIMEOUT = 30.0


@dataclass(frozen=True)
class AwxSlice:
    """What a job of a sliced AWX job knows of itself: the run every slice shares (``run_id``, from the workflow job),
    its own job, and its ``k/N`` when the caller read it from AWX's API (else None: ``plan_slice`` must say it)."""

    run_id: str
    job_id: str
    slice: SliceId | None


@dataclass(frozen=True)
class ControllerAccess:
    """How to reach AWX's API, from the credential's variables. ``token`` and ``password`` never show."""

    host: str
    verify: bool = True
    token: str = field(default="", repr=False)
    username: str = ""
    password: str = field(default="", repr=False)
    path_prefix: str = ""

    @classmethod
    def from_environ(cls, environ) -> ControllerAccess | None:
        """The access a controller credential gives (``CONTROLLER_*``, then ``TOWER_*``), or None without a host."""
        def read(name: str) -> str:
            for prefix in PREFIXES:
                value = str(environ.get(prefix + name) or "").strip()
                if value:
                    return value
            return ""

        host = read("HOST")
        if not host:
            return None
        if "://" not in host:
            host = f"https://{host}"   # as AWX's collection takes a bare host name
        return cls(host=host.rstrip("/"), verify=read("VERIFY_SSL").lower() not in FALSE_WORDS,
                   token=read("OAUTH_TOKEN"), username=read("USERNAME"), password=read("PASSWORD"),
                   path_prefix=str(environ.get(PATH_PREFIX_VARIABLE) or "").strip())

    def headers(self) -> dict:
        if self.token:
            return {"Authorization": f"Bearer {self.token}"}
        if self.username:
            pair = f"{self.username}:{self.password}".encode()
            return {"Authorization": f"Basic {base64.b64encode(pair).decode()}"}
        return {}

    def job_urls(self, job_id: str) -> list[str]:
        prefixes = [self.path_prefix] if self.path_prefix else list(API_PATHS)
        return [f"{self.host}/{prefix.strip('/')}/v2/jobs/{job_id}/" for prefix in prefixes]


Fetch = Callable[[ControllerAccess, str], dict]


def awx_slice(extra_vars, environ, job=None) -> AwxSlice | None:
    """The slice a job of a sliced AWX job is, from its extra vars and environment (see the module's notes), or None
    when it runs in no workflow (not sliced), or ``job`` (its record from AWX's API) says it is not sliced.

    ``job``: the job's record (``job_slice_number``, ``job_slice_count``) when the caller read it; without it the slice
    is None (AWX does not put it in a job's variables)."""
    extra_vars = extra_vars if isinstance(extra_vars, dict) else {}
    environ = environ if environ is not None else {}
    workflow = _first(extra_vars, WORKFLOW_JOB_VARIABLES)
    if workflow is None:
        return None
    job_id = job_id_of(extra_vars, environ)
    found = None
    if isinstance(job, dict):
        count, number = job.get("job_slice_count"), job.get("job_slice_number")
        if count in (None, 0, 1):
            return None
        found = SliceId(number, count) if isinstance(number, int) else None
        if found is None:
            raise SliceError(f"AWX job {job_id}: job_slice_number {number!r} is not a whole number")
    return AwxSlice(run_id=awx_run_id(workflow, environ.get("AWX_HOST")), job_id=job_id, slice=found)


def job_id_of(extra_vars: dict, environ) -> str:
    """This job's ID: its ``awx_job_id`` extra var, else AWX's ``JOB_ID`` environment variable ("": neither)."""
    return _first(extra_vars, JOB_VARIABLES) or str(environ.get("JOB_ID") or "").strip()


def awx_run_id(workflow_job_id: str, awx_host=None) -> str:
    """The run ID of a sliced job: ``awx-<workflow job id>``, with a short digest of ``AWX_HOST`` when known, so two
    AWX installations sharing a coordination namespace never meet in one run."""
    if awx_host:
        return f"awx-{hashlib.sha256(str(awx_host).encode()).hexdigest()[:6]}-{workflow_job_id}"
    return f"awx-{workflow_job_id}"


def asked_slice_of_job(given, extra_vars, environ, fetch: Fetch | None = None):
    """``plan_slice`` with ``awx`` replaced by this job's ``k/N`` from AWX's API ("" when the job is not a slice of a
    sliced job: run unsliced; also outside AWX, so one set of variables serves a laptop and AWX). Anything else is
    returned as given. ``fetch``: how a job record is read (default: ``job_record``)."""
    if not isinstance(given, str) or given.strip().lower() != ASK_AWX:
        return given
    extra_vars = extra_vars if isinstance(extra_vars, dict) else {}
    environ = environ if environ is not None else {}
    job_id = job_id_of(extra_vars, environ)
    if not job_id or _first(extra_vars, WORKFLOW_JOB_VARIABLES) is None:
        return ""      # not run by AWX, or a job in no workflow: AWX makes every sliced job a workflow
    access = ControllerAccess.from_environ(environ)
    if access is None:
        raise SliceError(f"plan_slice: awx: AWX job {job_id} runs in workflow job "
                         f"{_first(extra_vars, WORKFLOW_JOB_VARIABLES)}, and only AWX's API says whether it is a slice "
                         f"and which: give the job template a 'Red Hat Ansible Automation Platform' credential (it "
                         f"sets CONTROLLER_HOST and a token or user) that can read its jobs, or set plan_slice to "
                         f"'*/N' with N the template's Job Slicing count")
    found = awx_slice(extra_vars, environ, (fetch or job_record)(access, job_id))
    return str(found.slice) if found is not None and found.slice is not None else ""


def job_record(access: ControllerAccess, job_id: str, timeout: float = TIMEOUT) -> dict:
    """Job ``job_id``'s record from AWX's API (``GET .../v2/jobs/<id>/``), trying AWX's path, then Automation
    Platform's, unless ``CONTROLLER_OPTIONAL_API_URLPATTERN_PREFIX`` names one. A clear error without the secrets."""
    answers = []
    for url in access.job_urls(job_id):
        try:
            # the token never follows a redirect, nor does ~/.netrc speak for the credential
            with open_url(url, method="GET", headers={"Accept": "application/json", **access.headers()},
                          validate_certs=access.verify, timeout=timeout, use_proxy=True, use_netrc=False,
                          unredirected_headers=["Authorization"]) as response:
                return _job_body(response.read(), url)
        except urllib.error.HTTPError as err:
            if err.code in (401, 403):
                raise SliceError(f"plan_slice: awx: AWX's API refused job {job_id} ({err.code} at {url}): the "
                                 f"controller credential (CONTROLLER_*) must be able to read this job") from None
            answers.append(f"{url}: {err.code}")
        except (urllib.error.URLError, ConnectionError, OSError, ValueError) as err:
            reason = getattr(err, "reason", err)
            raise SliceError(f"plan_slice: awx: cannot read job {job_id} from AWX's API at {url}: {reason}") from None
    raise SliceError(f"plan_slice: awx: AWX's API has no job {job_id} ({'; '.join(answers)}): is CONTROLLER_HOST "
                     f"the AWX that runs this job?")


def _job_body(raw: bytes, url: str) -> dict:
    try:
        body = json.loads(raw)
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise SliceError(f"plan_slice: awx: {url} did not answer with a job record (a JSON object): is "
                         f"CONTROLLER_HOST an AWX or Automation Platform controller?")
    return body


def _first(values: dict, names) -> str | None:
    for name in names:
        value = values.get(name)
        if isinstance(value, bool):
            continue
        if isinstance(value, int) or (isinstance(value, str) and value.strip().isdigit()):
            return str(value).strip()
    return None
