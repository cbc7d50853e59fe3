# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""A Helm release brought to the requested state on one cluster, idempotently.

Whether a release is already as asked is decided from its latest revision as
``helm history`` shows it (one quick call, the same in helm 3 and 4): the
chart's name and version, the status, and the revision's description, where
phasekit.kube writes digests of the chart's files and of the merged values on
every install or upgrade. Same chart, same content, same values and status
``deployed``: nothing to do, and no new revision. A release made or changed by
anyone else has another description and is upgraded once. The action shows
values as kubernetes.core does, secrets aside (``release_masks``); plan phases
show none (``values_masks``).

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

from ansible_collections.phasekit.kube.plugins.module_utils import yaml_io
from ansible_collections.phasekit.kube.plugins.module_utils.bundle import objects_from_text
from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.helm.chart import Chart
from ansible_collections.phasekit.kube.plugins.module_utils.helm.cli import DEFAULT_TIMEOUT, HelmCli
from ansible_collections.phasekit.kube.plugins.module_utils.helm.options import (
    SET_VALUE_TYPES, HelmRequest, duration_seconds)
from ansible_collections.phasekit.kube.plugins.module_utils.kube.diff import object_diff
from ansible_collections.phasekit.kube.plugins.module_utils.masking import Masks, leaf_strings, says_secret, secret_named_strings

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
    # kubernetes.core.helm's results: the release as `helm list` shows it with its values, the helm call made
    helm_status: dict | None = None
    command: str = ""
    stdout: str = ""
    stderr: str = ""
    warnings: list = field(default_factory=list)
    masks: Masks = field(default_factory=Masks)  # the values seen (asked for and live): hidden in the result

    def result(self) -> dict:
        """The action's result: kubernetes.core.helm's keys (status, stdout, stderr, command) beside phasekit's
        (release, action, reasons), the credentials among the values hidden. A failed request has no ``status``,
        as kubernetes.core's failures have none."""
        out = {"changed": self.changed, "release": {"name": self.name, "namespace": self.namespace,
                                                    "chart": self.chart, "revision": self.revision,
                                                    "status": self.status},
               "action": self.action, "reasons": list(self.reasons),
               "status": self.helm_status, "stdout": self.stdout, "stderr": self.stderr, "command": self.command}
        if self.failure is not None:
            del out["status"]
        if self.diffs:
            out["diff"] = self.diffs
        if self.warnings:
            out["warnings"] = list(self.warnings)
        return self.masks.scrub(out)

    def failed(self, err: PhasekitError) -> HelmReport:
        """The report of a request that failed: kubernetes.core's rule, changed false, with helm's call and output."""
        self.failure = self.masks.scrub(str(err))
        self.changed = False
        output = getattr(err, "output", None)
        if output is not None:
            self.command, self.stdout, self.stderr = output.command, output.stdout, output.stderr
        else:
            self.stderr = self.failure  # refused before helm ran (a version check, a chart that cannot be read)
        return self


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
    passed = request.wait or request.state == ABSENT  # wait_timeout reaches helm only with wait, or to uninstall
    given = request.timeout or (request.wait_timeout if passed else None)
    seconds = duration_seconds(given) if given else None
    if seconds is None:
        return DEFAULT_TIMEOUT
    return int(math.ceil(seconds)) + TIMEOUT_MARGIN


def check_helm_version(request: HelmRequest, version: tuple) -> None:
    """Options the installed helm does not have refused as kubernetes.core.helm refuses them."""
    shown = ".".join(str(part) for part in version)
    needs = [(request.server_side is not None, "server_side", (4, 0)),
             (request.force_conflicts, "force_conflicts", (4, 0)),
             (request.take_ownership, "take_ownership", (3, 17)),
             (request.skip_schema_validation, "skip_schema_validation", (3, 16)),
             (request.insecure_skip_tls_verify, "insecure_skip_tls_verify", (3, 16)),
             (request.reset_then_reuse_values, "reset_then_reuse_values", (3, 14))]
    for asked, option, minimum in needs:
        if asked and tuple(version[:2]) < minimum:
            raise PhasekitError(f"{option} requires helm >= {minimum[0]}.{minimum[1]}.0, current version is {shown}")


def upgrade_argv(request: HelmRequest, chart: Chart, values_path: str, major: int, *, dry_run: bool = False,
                 installed: bool = True, output_json: bool = False) -> list:
    """``helm upgrade --install`` as the request asks it, with kubernetes.core.helm's flags and spellings (helm 4's
    names where helm 4 renamed a flag); ``helm install --replace`` when ``replace`` (upgrade has no --replace).
    ``installed``: the release exists (``force`` only reinstalls an existing release, as kubernetes.core)."""
    if request.replace:
        argv = ["install", request.name, chart.path]
        if request.dependency_update:
            argv.append("--dependency-update")
    else:
        argv = ["upgrade", request.name, chart.path, "--install"]
        if request.reset_values:
            argv.append("--reset-values")
        if request.take_ownership:
            argv.append("--take-ownership")
    argv += ["--namespace", request.namespace, "--values", values_path,
             "--description", release_description(chart, request)]
    argv += _value_flags(request) + _install_flags(request)
    if output_json:
        argv += ["--output", "json"]
    if dry_run:
        return argv + ["--dry-run=client"]
    if request.wait:
        argv.append("--wait")
        if request.wait_timeout:
            argv += ["--timeout", request.wait_timeout]  # kubernetes.core: wait_timeout without wait is not passed
    if request.atomic:
        argv.append("--rollback-on-failure" if major >= 4 else "--atomic")
    if request.timeout:
        argv += ["--timeout", request.timeout]
    if request.server_side is not None:
        argv.append("--server-side=" + request.server_side)
    if request.force_conflicts:
        argv.append("--force-conflicts")
    if request.force and installed:
        # helm 4 split --force and applies server-side by default: client-side replacement, as kubernetes.core
        argv += ["--server-side=false", "--force-replace"] if major >= 4 else ["--force"]
    return argv


def _value_flags(request: HelmRequest) -> list:
    """How the values are given beyond the merged file: reuse/reset flags and the --set family."""
    argv = []
    if request.reuse_values is not None:
        argv.append(f"--reuse-values={request.reuse_values}")
    if request.reset_then_reuse_values:
        argv.append("--reset-then-reuse-values")
    for value, kind in request.set_values:
        argv += [SET_VALUE_TYPES[kind], value]
    return argv


# Flags an install and an upgrade share, whatever the helm major, in kubernetes.core.helm's order: (the request's
# attribute, the flag). A flag ending in "=" takes the value (given when set: not None, not empty); any other is a
# switch, given when the attribute is true.
INSTALL_FLAGS = (("replace", "--replace"), ("disable_hook", "--no-hooks"), ("create_namespace", "--create-namespace"),
                 ("insecure_skip_tls_verify", "--insecure-skip-tls-verify"), ("plain_http", "--plain-http"),
                 ("post_renderer", "--post-renderer="), ("skip_crds", "--skip-crds"),
                 ("history_max", "--history-max="), ("skip_schema_validation", "--skip-schema-validation"))


def _install_flags(request: HelmRequest) -> list:
    """Flags an install and an upgrade share, whatever the helm major (``INSTALL_FLAGS``)."""
    argv = []
    for attribute, flag in INSTALL_FLAGS:
        value = getattr(request, attribute)
        if flag.endswith("="):
            if value is not None and value != "":
                argv.append(f"{flag}{value}")
        elif value:
            argv.append(flag)
    return argv


def uninstall_argv(request: HelmRequest) -> list:
    """``helm uninstall`` as kubernetes.core.helm runs it: purge false keeps the history."""
    argv = ["uninstall", request.name, "--namespace", request.namespace]
    if not request.purge:
        argv.append("--keep-history")
    if request.disable_hook:
        argv.append("--no-hooks")
    if request.wait:
        argv.append("--wait")
    if request.wait_timeout:
        argv += ["--timeout", request.wait_timeout]  # kubernetes.core passes wait_timeout, never timeout, here
    return argv


def template_argv(request: HelmRequest, chart: Chart, values_path: str) -> list:
    """``helm template`` of the release (helm_mode apply): CRDs included unless skip_crds."""
    argv = ["template", request.name, chart.path, "--namespace", request.namespace, "--values", values_path]
    argv += [flag for value, kind in request.set_values for flag in (SET_VALUE_TYPES[kind], value)]
    if not request.skip_crds:
        argv.append("--include-crds")
    if request.post_renderer:
        argv.append("--post-renderer=" + request.post_renderer)
    if request.skip_schema_validation:
        argv.append("--skip-schema-validation")
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


def values_masks(request: HelmRequest) -> Masks:
    """Every string value of a request (its values, what its --set values set) as masks: for plan phases, whose
    diffs and messages (run records others read, helm errors quoting rendered manifests) show none of them."""
    return Masks(leaf_strings(request.values)).add(*request.set_secrets)


def release_masks(request: HelmRequest) -> Masks:
    """What a request's result must never show of its values: those held under a name that says it is a credential
    (``masking.says_secret``), in the values and in what --set values set. Other values are shown as
    kubernetes.core shows them; the caller adds what it knows is secret (vault-encrypted values, credentials). A plan
    phase's request (``hide_every_value``) shows none of its values."""
    if request.hide_every_value:
        return values_masks(request)
    return Masks(secret_named_strings(request.values)).add(
        *(value for key, value in request.set_pairs if says_secret(key)))


def read_status(helm: HelmCli, report: HelmReport) -> dict | None:
    """The release's kubernetes.core ``status`` read into the report, its values added to the report's masks."""
    status = helm.release_status(report.name, report.namespace)
    if status is not None:
        report.masks.add(*secret_named_strings(status.get("release_values")))
    report.helm_status = status
    return status


def ensure_release(helm: HelmCli, request: HelmRequest, chart: Chart, *, check_mode: bool, diff: bool) -> HelmReport:
    """Install or upgrade ``request``'s release unless it is already as asked (or ``force`` reinstalls it)."""
    report = HelmReport(request.name, request.namespace, chart=f"{chart.name}-{chart.version}",
                        masks=release_masks(request))
    live = helm.latest_revision(request.name, request.namespace)
    report.reasons = release_changes(live, chart, request)
    if live is not None:
        report.revision, report.status = live.get("revision"), live.get("status")
    installed = live is not None and not str(live.get("status") or "").startswith("uninstall")
    try:
        values_path = helm.values_file(request.values)
        argv = upgrade_argv(request, chart, values_path, helm.version[0], installed=installed)
        report.command = helm.command(argv)
        check_helm_version(request, helm.version)
        if installed and request.force and not report.reasons:
            report.reasons = ["force"]  # kubernetes.core: force reinstalls a release that is as asked
        if not report.reasons:
            report.command = helm.command(_chart_flags(request))  # kubernetes.core: no helm command was built
            if check_mode:
                report.helm_status = check_mode_status(helm, report, request, live)
            else:
                read_status(helm, report)
            return report
        report.changed = True
        report.action = UPGRADED if installed else INSTALLED
        if diff:
            before = helm.manifest(request.name, request.namespace) if live is not None else ""
            dry_argv = upgrade_argv(request, chart, values_path, helm.version[0], dry_run=True, output_json=True)
            rendered = _release_json(helm.run(dry_argv, what=f"helm upgrade {request.name} --dry-run"))
            diffs = manifest_diffs(before, rendered.get("manifest") or "", f"{request.namespace}/{request.name}")
            report.diffs = report.masks.scrub(diffs)
        if check_mode:
            report.helm_status = check_mode_status(helm, report, request, live)
            return report
        done = helm.call(argv, what=f"helm {argv[0]} {request.name}", timeout=helm_timeout(request))
        report.stdout, report.stderr = done.stdout, done.stderr
        status = read_status(helm, report)
    except PhasekitError as err:
        if check_mode or not _release_moved(helm, request, live):
            report.action = FAILED  # refused before helm made a revision (a template error)
        return report.failed(err)
    if status is not None:
        report.revision, report.status = _revision(status.get("revision")), status.get("status")
    return report


def _chart_flags(request: HelmRequest) -> list:
    """The chart flags kubernetes.core puts on helm's command line before deciding what to do (``command`` when
    nothing is done)."""
    flags = []
    if request.state != ABSENT and request.chart is not None:
        if request.chart.version:
            flags.append("--version=" + request.chart.version)
        if request.chart.repo_url:
            flags.append("--repo=" + request.chart.repo_url)
    return flags


def check_mode_status(helm: HelmCli, report: HelmReport, request: HelmRequest, live: dict | None) -> dict:
    """kubernetes.core's ``status`` in check mode, changed or not: ``values`` and ``release_values``, each with
    ``current`` (the live release's values) and ``declared`` (kubernetes.core puts the live release's whole status
    there, not the task's values); both ``{}`` without a live release (for state present: a deployed one)."""
    status = read_status(helm, report) if live is not None else None
    if status is not None and request.state != ABSENT and status.get("status") != DEPLOYED:
        status = None  # kubernetes.core lists only deployed releases for state present
    current = yaml_io.copy_data(status["release_values"]) if status else {}
    declared = yaml_io.copy_data(status) if status else {}
    return {"values": {"current": current, "declared": declared},
            "release_values": {"current": yaml_io.copy_data(current), "declared": yaml_io.copy_data(declared)}}


def remove_release(helm: HelmCli, request: HelmRequest, *, check_mode: bool, diff: bool) -> HelmReport:
    """Uninstall ``request``'s release if it exists (a release uninstalled with its history kept does not)."""
    report = HelmReport(request.name, request.namespace, action=ABSENT, masks=release_masks(request))
    argv = uninstall_argv(request)
    report.command = helm.command([])  # kubernetes.core: nothing to uninstall, no command built
    try:
        live = helm.latest_revision(request.name, request.namespace)
        if live is None or str(live.get("status") or "").startswith("uninstall"):
            if check_mode:  # kubernetes.core's check mode always answers with current and declared values
                report.helm_status = check_mode_status(helm, report, request, live)
            else:
                report.helm_status = read_status(helm, report) if live is not None else None
            return report
        report.command = helm.command(argv)
        report.chart = live.get("chart") or ""
        report.revision, report.status = live.get("revision"), live.get("status")
        report.changed, report.action, report.reasons = True, UNINSTALLED, ["state is absent"]
        if diff:
            report.diffs = report.masks.scrub(manifest_diffs(helm.manifest(request.name, request.namespace), "",
                                                             f"{request.namespace}/{request.name}"))
        if check_mode:
            report.helm_status = check_mode_status(helm, report, request, live)
            return report
        done = helm.call(argv, what=f"helm uninstall {request.name}", timeout=helm_timeout(request))
        report.stdout, report.stderr = done.stdout, done.stderr
        report.status = UNINSTALLED
        read_status(helm, report)
    except PhasekitError as err:
        return report.failed(err)
    return report


def _revision(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


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
