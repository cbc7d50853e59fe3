# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""A plan run as an AWX job: a private data dir, ``ansible-runner transmit | podman run -i IMAGE ansible-runner
worker | ansible-runner process`` (as ``tests/integration/test_ee_job.py`` runs one), and the CPU of all of it.

What the private data dir holds, as AWX writes it for a job of a (sliced) job template:

- ``project/``: a playbook importing ``phasekit.kube.run`` (the collection is the one built into the image), the
  plan's phase documents and manifests;
- ``inventory/hosts``: the job's inventory as a script printing JSON (AWX's form), only the hosts given;
- ``env/``: the "phasekit kubeconfigs" credential as AWX injects it (``examples/awx``): the fleet's kubeconfig, self
  contained (embedded certificate and key data: nothing of the host's file system is mounted), in a file, and
  ``KUBECONFIG`` naming it where the job sees it (``/runner/env``); the coordination cluster's kubeconfig beside it
  (``plan_coordination.kubeconfig``, as docs/awx.md shows); ``JOB_ID``, ``INVENTORY_ID``, ``PROJECT_REVISION``,
  ``AWX_HOST``; the extra vars: AWX's ``awx_*``/``tower_*`` variables and the caller's.

CPU: each job runs in a cpuacct cgroup of its own (cgroup v1; ``cpu.stat`` on v2): the pipeline's host processes
(bash, transmit, the podman client, process) in ``<job>/host``, and the container (``--cgroup-parent``: the worker
and every ansible process in it) and its ``conmon`` below ``<job>``. The job's CPU is ``<job>``'s usage after the
pipeline ended: the kernel charges a cgroup's time to its ancestors as it is spent, so the container's time stays
counted after podman removed its cgroup. Not counted: the podman service processes outside the job (there are none
with podman run: no daemon), image storage work the kernel does in other threads, and the API servers' work.
"""

from __future__ import annotations

import base64
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
import uuid
from datetime import datetime
from pathlib import Path

import yaml

IMAGE = os.environ.get("PHASEKIT_EE_IMAGE", "localhost/phasekit-kube-ee:latest")
RUNNER_DIR = "/runner"   # where the worker unpacks the private data dir in the container
AWX_HOST = "https://awx.bench.invalid"
# AWX sends a job with ansible-runner's Python API (the CLI's transmit wants a playbook file, module or role)
TRANSMIT = ("import json, sys, ansible_runner; ansible_runner.run(streamer='transmit', _output=sys.stdout.buffer, "
            "**json.loads(sys.argv[1]))")
PLAYBOOK = """\
- name: The plan, from the collection in the execution environment
  ansible.builtin.import_playbook: phasekit.kube.run
"""
CGROUPS = Path("/sys/fs/cgroup")
CGROUP_TIMEOUT = 30   # seconds a finished job's cgroups get to empty before they are left behind


def image_problem(image: str = IMAGE) -> str:
    """Why jobs cannot run in ``image`` here ("" when they can)."""
    if shutil.which("podman") is None:
        return "podman is not installed"
    if subprocess.run(["podman", "image", "exists", image], check=False).returncode != 0:
        return f"the execution environment image {image} is not built: make ee builds it"
    if CpuGroup.kind() is None:
        return f"no cgroup to count a job's CPU in under {CGROUPS} (cgroup v1 cpuacct or v2 cpu.stat)"
    return ""


def self_contained(kubeconfig: Path, dest: Path) -> Path:
    """``kubeconfig`` with its certificate and key files embedded (``*-data``), as a credential holds it, written to
    ``dest``."""
    files = {}

    def data(path: str) -> str:
        if path not in files:
            files[path] = base64.b64encode(Path(path).read_bytes()).decode()
        return files[path]

    config = yaml.safe_load(kubeconfig.read_text())
    for entry, keys in (("clusters", ("certificate-authority",)), ("users", ("client-certificate", "client-key"))):
        for item in config.get(entry) or []:
            body = item[entry[:-1]]
            for key in keys:
                if body.get(key):
                    body[f"{key}-data"] = data(body.pop(key))
    dest.write_text(yaml.safe_dump(config))
    dest.chmod(0o600)
    return dest


class AwxJobs:
    """The jobs of one launch of a job template, as AWX numbers them: ``count`` > 1 is a sliced job (a workflow job
    whose ``count`` jobs share ``awx_workflow_job_id``), 1 a plain job."""

    # a new workflow job per launch, also across bench runs: the run ID names the meeting's objects and the records
    _next_id = 1000 * (1 + int(time.time()) % 100000)

    def __init__(self, count: int, template: str = "phasekit fleet"):
        AwxJobs._next_id += 10
        self.count, self.template = count, template
        self.workflow_job_id = AwxJobs._next_id
        self.job_ids = [self.workflow_job_id + number for number in range(1, count + 1)]

    def extra_vars(self, number: int) -> dict:
        """AWX's variables of job ``number`` (1-based), under both prefixes (awx/main/models/unified_jobs.py)."""
        values = {"job_id": self.job_ids[number - 1], "job_launch_type": "workflow" if self.count > 1 else "manual",
                  "job_template_id": 7, "job_template_name": self.template, "inventory_id": 3,
                  "inventory_name": "fleet", "project_revision": "0" * 40, "project_scm_branch": "main",
                  "execution_node": "localhost", "user_id": 1, "user_name": "admin", "user_email": "",
                  "user_first_name": "", "user_last_name": ""}
        if self.count > 1:
            values.update(workflow_job_id=self.workflow_job_id, workflow_job_name=self.template,
                          workflow_job_launch_type="manual")
        return {f"{prefix}_{key}": value for prefix in ("awx", "tower") for key, value in values.items()}

    def environ(self, number: int) -> dict:
        return {"JOB_ID": str(self.job_ids[number - 1]), "INVENTORY_ID": "3", "PROJECT_REVISION": "0" * 40,
                "AWX_HOST": AWX_HOST}


def private_data_dir(root: Path, *, site_root: Path, hosts: dict, group_vars: dict, kubeconfigs: dict,
                     extra_vars: dict, environ: dict) -> Path:
    """A job's private data dir under ``root``: the project (the site's phases and manifests), the inventory script
    of ``hosts`` (name: variables) with ``group_vars`` for all, ``kubeconfigs`` (name in env/: file to copy) and
    ``KUBECONFIG`` naming the first, the environment and the extra vars."""
    for name in ("project", "inventory", "env"):
        (root / name).mkdir(parents=True)
    (root / "project/run.yml").write_text(PLAYBOOK)
    for name in ("phases", "manifests"):
        shutil.copytree(site_root / name, root / "project" / name)
    inventory = {"all": {"hosts": list(hosts), "vars": group_vars}, "_meta": {"hostvars": hosts}}
    script = root / "inventory/hosts"
    script.write_text("#!/bin/sh\ncat <<'INVENTORY'\n" + json.dumps(inventory) + "\nINVENTORY\n")
    script.chmod(0o755)
    for name, source in kubeconfigs.items():
        path = root / "env" / name
        shutil.copyfile(source, path)
        path.chmod(0o600)
    first = next(iter(kubeconfigs))
    (root / "env/envvars").write_text(yaml.safe_dump({"KUBECONFIG": f"{RUNNER_DIR}/env/{first}", **environ}))
    (root / "env/extravars").write_text(yaml.safe_dump(extra_vars))
    return root


class CpuGroup:
    """A cgroup of the cpuacct hierarchy (v1) or of the unified one (v2) counting one job's CPU: ``host`` for the
    pipeline's processes, the container below the group (``--cgroup-parent``)."""

    def __init__(self, name: str):
        self.version = self.kind()
        self.name = name.strip("/")
        self.path = self.base() / self.name
        (self.path / "host").mkdir(parents=True)

    @staticmethod
    def kind() -> str | None:
        if (CGROUPS / "cpuacct/cpuacct.usage").exists():
            return "v1"
        if (CGROUPS / "cgroup.controllers").exists():
            return "v2"
        return None

    def base(self) -> Path:
        return CGROUPS / "cpuacct" if self.version == "v1" else CGROUPS

    @property
    def parent(self) -> str:
        """``podman run --cgroup-parent`` for the job's container."""
        return f"/{self.name}"

    @property
    def procs(self) -> Path:
        return self.path / "host" / "cgroup.procs"

    def seconds(self, part: str = "") -> float:
        """CPU seconds (user + system) charged to the group (``part``: a child of it, such as ``host``)."""
        where = self.path / part if part else self.path
        if self.version == "v1":
            return int((where / "cpuacct.usage").read_text()) / 1e9
        stat = dict(line.split() for line in (where / "cpu.stat").read_text().splitlines())
        return int(stat["usage_usec"]) / 1e6

    def remove(self) -> None:
        remove_cgroups(self.name)


def remove_cgroups(name: str) -> None:
    """Every directory of the group ``name``, in every hierarchy podman made it in, deepest first (rmdir: only empty
    groups go; a group whose processes linger is left, with a warning)."""
    deadline = time.monotonic() + CGROUP_TIMEOUT
    roots = [CGROUPS] if CpuGroup.kind() == "v2" else [path for path in CGROUPS.iterdir() if (path / name).is_dir()]
    for root in roots:
        if not (root / name).is_dir():
            continue
        for directory in sorted((root / name).glob("**/"), key=lambda p: len(p.parts), reverse=True):
            while True:
                try:
                    directory.rmdir()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        print(f"bench: left the cgroup {directory} (busy)", file=sys.stderr)
                        break
                    time.sleep(0.2)


def playbook_seconds(events: Path) -> float | None:
    """Seconds from the job's first event to its last (``created``, written in the container): the playbook's own
    time; the job's wall time less this is its start and end (transmit, the container, process)."""
    stamps = sorted(json.loads(path.read_text())["created"] for path in events.glob("*.json"))
    if len(stamps) < 2:
        return None
    first, last = (datetime.fromisoformat(stamp.replace("Z", "+00:00")) for stamp in (stamps[0], stamps[-1]))
    return (last - first).total_seconds()


class JobPipe:
    """One job started as AWX's receptor runs it: ``transmit | podman run -i IMAGE worker | process``, in its own
    CPU group. ``finish()`` waits for it and reads what ``process`` wrote."""

    def __init__(self, data_dir: Path, out: Path, group: CpuGroup, *, timeout: float, image: str | None = None,
                 **runner_kwargs):
        self.ident = uuid.uuid4().hex[:12]
        self.out, self.group, self.timeout = out, group, timeout
        out.mkdir(parents=True)
        transmit = [sys.executable, "-c", TRANSMIT,
                    json.dumps({"private_data_dir": str(data_dir), "ident": self.ident, **runner_kwargs})]
        self.container = f"phasekit-bench-{self.ident}"
        worker = ["podman", "run", "--rm", "-i", "--name", self.container, "--network", "host",
                  "--cgroup-parent", group.parent, image or IMAGE,
                  "ansible-runner", "worker", f"--private-data-dir={RUNNER_DIR}"]
        process = [str(Path(sys.executable).parent / "ansible-runner"), "process", str(out)]
        pipeline = " | ".join(shlex.join(argv) for argv in (transmit, worker, process))
        # the shell joins the job's host group first: every process of the pipeline starts in it
        script = f"echo $$ > {shlex.quote(str(group.procs))} && {pipeline}"
        self.began = time.perf_counter()
        self.proc = subprocess.Popen(["bash", "-o", "pipefail", "-c", script], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, start_new_session=True)

    def finish(self) -> dict:
        """The job's end: wall seconds, CPU seconds (all; of them the container's), status, rc, stdout."""
        try:
            stdout, stderr = self.proc.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:   # the pipeline's processes, then the container its podman client left
            os.killpg(self.proc.pid, signal.SIGKILL)
            subprocess.run(["podman", "rm", "-f", "-t", "0", self.container], capture_output=True, check=False)
            stdout, stderr = self.proc.communicate()
            stderr += f"\nbench: the job took more than {self.timeout:.0f}s and was stopped"
        wall = time.perf_counter() - self.began
        artifacts = self.out / "artifacts"  # the API's transmit leaves the ident out of the processed tree's path
        artifacts = artifacts / self.ident if (artifacts / self.ident).is_dir() else artifacts

        def read(name):
            return (artifacts / name).read_text().strip() if (artifacts / name).exists() else None

        cpu, host = self.group.seconds(), self.group.seconds("host")
        return {"wall": wall, "in_playbook": playbook_seconds(artifacts / "job_events"), "cpu": cpu,
                "cpu_container": cpu - host, "status": read("status"), "rc": read("rc"),
                "stdout": read("stdout") or "", "pipe_rc": self.proc.returncode,
                "pipe_output": f"{stdout[-2000:]}\n{stderr[-2000:]}"}
