# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""A Helm release brought to the requested state on one cluster, idempotently.

Whether a release is already as asked is decided from its latest revision as
``helm history`` shows it (one quick call, the same in helm 3 and 4): the
chart's name and version, the status, and the revision's description, where
phasekit.kube writes digests of the chart's files and of the merged values on
every install or upgrade. Same chart, same content, same values and status
``deployed``: nothing to do, and no new revision. A release made or changed by
anyone else has another description and is upgraded once. Values are never
shown; only whether they changed.

Check mode decides without changing anything. Diff mode renders the new
manifest (``helm upgrade --dry-run=client``) and compares it object by object
with the live release's manifest, Secret values redacted as the apply engine
redacts them.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field

from ansible_collections.phasekit.kube.plugins.module_utils.bundle import objects_from_text
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.helm.chart import Chart
from ansible_collections.phasekit.kube.plugins.module_utils.helm.cli import DEFAULT_TIMEOUT, HelmCli
from ansible_collections.phasekit.kube.plugins.module_utils.helm.options import HelmRequest, duration_seconds
from ansible_collections.phasekit.kube.plugins.module_utils.kube.diff import object_diff
from ansible_collections.phasekit.kube.plugins.module_utils.masking import Masks

DESCRIPTION = "phasekit.kube chart={chart} values={values}"
DESCRIBED = re.compile(r"^phasekit\.kube chart=(?P<chart>[0-9a-f]+) values=(?P<values>[0-9a-f]+)$")
DIGEST_LENGTH = 32
DEPLOYED = "deployed"
INSTALLED, UPGRADED, UNCHANGED, UNINSTALLED, ABSENT = "installed", "upgraded", "unchanged", "uninstalled", "absent"
FAILED = "failed"             # the action of a request that failed before helm changed the release
TIMEOUT_MARGIN = 60           # seconds a helm call may take beyond its own --timeout
SOURCE_COMMENT = re.compile(r"^# Source: (.+)$", re.MULTILINE)


@dataclass
class HelmReport:
    """What happened to one release on one cluster (values never included)."""

    name: str
    namespace: str
    action: str = UNCHANGED
    changed: bool = False
    chart: str = ""                   # "hello-0.1.0", as helm shows it
    revision: int | None = None
    status: str | None = None
    reasons: list = field(default_factory=list)
    diffs: list = field(default_factory=list)
    failure: str | None = None

    def result(self) -> dict:
        out = {"changed": self.changed, "release": {"name": self.name, "namespace": self.namespace,
                                                    "chart": self.chart, "revision": self.revision,
                                                    "status": self.status},
               "action": self.action, "reasons": list(self.reasons)}
        if self.diffs:
            out["diff"] = self.diffs
        return out


def release_description(chart: Chart, request: HelmRequest) -> str:
    """The revision description that records what was installed: digests of the chart's files and the values."""
    return DESCRIPTION.format(chart=chart.digest[:DIGEST_LENGTH], values=request.values_digest[:DIGEST_LENGTH])


def release_changes(live: dict | None, chart: Chart, request: HelmRequest) -> list[str]:
    """Why the release must be installed or upgraded (empty: it is as asked). ``live``: its latest revision."""
    if live is None:
        return ["not installed"]
    reasons = []
    status = live.get("status")
    if status != DEPLOYED:
        reasons.append(f"status is {status}")
    installed = DESCRIBED.match(str(live.get("description") or ""))
    if live.get("chart") != f"{chart.name}-{chart.version}":
        reasons.append(f"chart {live.get('chart')} -> {chart.name}-{chart.version}")
    elif installed is None:
        reasons.append("last changed by another tool (no phasekit.kube digests in its description)")
        return reasons
    elif installed.group("chart") != chart.digest[:DIGEST_LENGTH]:
        reasons.append(f"chart {chart.name}-{chart.version} content changed")
    if installed is not None and installed.group("values") != request.values_digest[:DIGEST_LENGTH]:
        reasons.append("values changed")
    return reasons


def helm_timeout(request: HelmRequest) -> int:
    """Seconds the upgrade or uninstall process may take: helm's own timeout (default 5m) plus a margin."""
    seconds = duration_seconds(request.wait_timeout) if request.wait_timeout else None
    if seconds is None:
        return DEFAULT_TIMEOUT
    return int(math.ceil(seconds)) + TIMEOUT_MARGIN


def upgrade_argv(request: HelmRequest, chart: Chart, values_path: str, major: int, *, dry_run: bool = False) -> list:
    """``helm upgrade --install`` as the request asks it (helm 3 names the rollback flag --atomic)."""
    # --reset-values: the release gets exactly these values; without it helm reuses the last ones when none are given
    argv = ["upgrade", request.name, chart.path, "--install", "--reset-values", "--namespace", request.namespace,
            "--values", values_path, "--description", release_description(chart, request), "--output", "json"]
    if request.create_namespace:
        argv.append("--create-namespace")
    if request.skip_crds:
        argv.append("--skip-crds")
    if request.history_max is not None:
        argv += ["--history-max", str(request.history_max)]
    if dry_run:
        return argv + ["--dry-run=client"]
    if request.wait:
        argv.append("--wait")
    if request.atomic:
        argv.append("--rollback-on-failure" if major >= 4 else "--atomic")
    if request.wait_timeout:
        argv += ["--timeout", request.wait_timeout]
    return argv


def uninstall_argv(request: HelmRequest) -> list:
    argv = ["uninstall", request.name, "--namespace", request.namespace]
    if request.wait:
        argv.append("--wait")
    if request.wait_timeout:
        argv += ["--timeout", request.wait_timeout]
    return argv


def template_argv(request: HelmRequest, chart: Chart, values_path: str) -> list:
    """``helm template`` of the release (helm_mode apply): CRDs included unless skip_crds."""
    argv = ["template", request.name, chart.path, "--namespace", request.namespace, "--values", values_path]
    if not request.skip_crds:
        argv.append("--include-crds")
    return argv


def manifest_objects(text: str, label: str) -> list:
    """A helm manifest as bundle objects, each with its template as origin (``chart hello templates/cm.yaml``)."""
    objects = []
    for source, document in split_manifest(text):
        objects.extend(objects_from_text(document, label=f"{label} {source}" if source else label, file=None))
    return objects


def split_manifest(text: str) -> list[tuple[str, str]]:
    """(template, document) pairs of a helm manifest, split at its ``---`` lines."""
    pairs = []
    for document in re.split(r"^---[ \t]*$", text or "", flags=re.MULTILINE):
        if not document.strip():
            continue
        found = SOURCE_COMMENT.search(document)
        source = found.group(1).split("/", 1)[-1] if found else ""
        pairs.append((source, document))
    return pairs


def manifest_diffs(before: str, after: str, label: str) -> list[dict]:
    """Object-by-object diffs of two manifests (Secret values redacted), only objects that differ."""
    def by_key(text):
        objects = {}
        for one in manifest_objects(text, label):
            metadata = one.obj.get("metadata") or {}
            objects[(one.obj.get("kind"), metadata.get("namespace") or "", metadata.get("name"))] = one.obj
        return objects

    old, new = by_key(before), by_key(after)
    diffs = []
    for key in list(old) + [key for key in new if key not in old]:
        if old.get(key) == new.get(key):
            continue
        kind, namespace, name = key
        where = f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"
        diffs.append(object_diff(old.get(key), new.get(key), f"{label}: {where}", after_label="rendered"))
    return diffs


def values_masks(values) -> Masks:
    """The release's string values as masks: they may be secrets, and they never appear in errors (helm quotes
    rendered manifests in some) nor in diffs (the rendered objects hold them)."""
    return Masks(_leaf_strings(values))


def scrub_values(text, values):
    """``text`` (or diffs) with every string value of the release's values replaced by ``***``."""
    return values_masks(values).scrub(text)


def _leaf_strings(values):
    if isinstance(values, dict):
        for value in values.values():
            yield from _leaf_strings(value)
    elif isinstance(values, list):
        for value in values:
            yield from _leaf_strings(value)
    elif isinstance(values, str):
        yield values


def ensure_release(helm: HelmCli, request: HelmRequest, chart: Chart, *, check_mode: bool, diff: bool) -> HelmReport:
    """Install or upgrade ``request``'s release unless it is already as asked."""
    report = HelmReport(request.name, request.namespace, chart=f"{chart.name}-{chart.version}")
    live = helm.latest_revision(request.name, request.namespace)
    report.reasons = release_changes(live, chart, request)
    if live is not None:
        report.revision, report.status = live.get("revision"), live.get("status")
    if not report.reasons:
        return report
    report.changed = True
    report.action = UPGRADED if live is not None else INSTALLED
    try:
        values_path = helm.values_file(request.values)
        if diff:
            before = helm.manifest(request.name, request.namespace) if live is not None else ""
            rendered = _release_json(helm.run(upgrade_argv(request, chart, values_path, helm.version[0], dry_run=True),
                                              what=f"helm upgrade {request.name} --dry-run"))
            diffs = manifest_diffs(before, rendered.get("manifest") or "", f"{request.namespace}/{request.name}")
            report.diffs = scrub_values(diffs, request.values)
        if check_mode:
            return report
        done = _release_json(helm.run(upgrade_argv(request, chart, values_path, helm.version[0]),
                                      what=f"helm upgrade --install {request.name}", timeout=helm_timeout(request)))
    except PhasekitError as err:
        report.failure = scrub_values(str(err), request.values)
        if check_mode or not _release_moved(helm, request, live):
            report.changed, report.action = False, FAILED  # refused before helm made a revision (a template error)
        return report
    report.revision = done.get("version")
    report.status = (done.get("info") or {}).get("status")
    return report


def remove_release(helm: HelmCli, request: HelmRequest, *, check_mode: bool, diff: bool) -> HelmReport:
    """Uninstall ``request``'s release if it exists."""
    report = HelmReport(request.name, request.namespace, action=ABSENT)
    live = helm.latest_revision(request.name, request.namespace)
    if live is None:
        return report
    report.chart = live.get("chart") or ""
    report.revision, report.status = live.get("revision"), live.get("status")
    report.changed, report.action, report.reasons = True, UNINSTALLED, ["state is absent"]
    try:
        if diff:
            report.diffs = manifest_diffs(helm.manifest(request.name, request.namespace), "",
                                          f"{request.namespace}/{request.name}")
        if not check_mode:
            helm.run(uninstall_argv(request), what=f"helm uninstall {request.name}", timeout=helm_timeout(request))
            report.status = UNINSTALLED
    except PhasekitError as err:
        report.failure = str(err)
    return report


def _release_moved(helm: HelmCli, request: HelmRequest, live: dict | None) -> bool:
    """Whether a failed install or upgrade left a new revision (a failed --wait does; a template error does not)."""
    try:
        now = helm.latest_revision(request.name, request.namespace)
    except PhasekitError:
        return True  # unknown: say it may have changed
    before = live.get("revision") if live else None
    return now is not None and now.get("revision") != before


def _release_json(text: str) -> dict:
    try:
        found = json.loads(text)
    except ValueError:
        raise PhasekitError("helm printed no JSON release") from None
    return found if isinstance(found, dict) else {}
