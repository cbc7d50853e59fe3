# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Wait until objects are ready: kstatus per kind plus optional conditions (JMESPath, or kubectl's JSONPath), all
together.

Every poll reads all objects still pending with as few requests as possible
(see ``live.fetch_live``), so a hundred objects cost a LIST, not a hundred
sequential waits. The wait ends when every object is Current (and meets its
conditions), as soon as one is Failed (waiting will not mend it), or at the
timeout; the outcome says, per object, why it is not ready, with the recent
Warning events of the object and its pods (see ``events``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from ansible_collections.phasekit.kube.plugins.module_utils.errors import PhasekitError
from ansible_collections.phasekit.kube.plugins.module_utils.jsonpath import JSONPath, JSONPathError, printed
from ansible_collections.phasekit.kube.plugins.module_utils.kube.discovery import Discovery
from ansible_collections.phasekit.kube.plugins.module_utils.kube.events import explain
from ansible_collections.phasekit.kube.plugins.module_utils.kube.live import fetch_live
from ansible_collections.phasekit.kube.plugins.module_utils.kube.objects import plan_objects
from ansible_collections.phasekit.kube.plugins.module_utils.kube.status import (
    CURRENT, FAILED, IN_PROGRESS, NOT_FOUND, Status, compute_status)

try:
    import jmespath
    from jmespath.exceptions import JMESPathError
except ImportError as exc:  # reported when a condition is used
    jmespath = None
    JMESPathError = Exception
    JMESPATH_IMPORT_ERROR = exc
else:
    JMESPATH_IMPORT_ERROR = None

DEFAULT_TIMEOUT = 300
READINESS_MODES = ("kstatus", "none")
FIRST_POLL_DELAY = 0.25
MAX_POLL_DELAY = 2.0
MAX_REPORTED = 20  # objects named in a message; the result lists every one
MAX_WAITING = 3    # objects a progress line names (the rest counted)

# option specs, shared by the wait action (top level) and the apply action (under `wait`)
CONDITION_SPEC = dict(
    path=dict(type="str"),
    jsonpath=dict(type="str"),
    value=dict(type="raw"),
    kind=dict(type="str"),
    name=dict(type="str"),
    namespace=dict(type="str"),
)
WAIT_OPTIONS_SPEC = dict(
    timeout=dict(type="int", default=DEFAULT_TIMEOUT),
    poll_interval=dict(type="float", default=MAX_POLL_DELAY),
    kinds=dict(type="dict", default={}),
    conditions=dict(type="list", elements="dict", default=[], options=CONDITION_SPEC,
                    mutually_exclusive=[["path", "jsonpath"]], required_one_of=[["path", "jsonpath"]]),
)


@dataclass
class Condition:
    """``path`` (JMESPath over the live object) must give ``value`` (or anything truthy when unset); or
    ``jsonpath`` (kubectl's JSONPath) must find exactly one value, printed as kubectl prints it equal to ``value``
    when given (airshipctl's wait conditions)."""

    path: str | None = None
    value: object = None
    kind: str | None = None
    name: str | None = None
    namespace: str | None = None
    jsonpath: str | None = None
    compiled: object = field(default=None, repr=False)

    def applies_to(self, target) -> bool:
        return (_kind_matches(self.kind, target.resource)
                and self.name in (None, target.name)
                and self.namespace in (None, target.namespace or ""))

    def check(self, obj: dict) -> tuple[bool, str]:
        # a Secret's values (and what a condition expects of them) are never shown
        show = _hidden if obj.get("kind") == "Secret" else _show
        if self.jsonpath is not None:
            return self._check_jsonpath(obj, show)
        actual = self.compiled.search(obj)
        if self.value is None:
            return bool(actual), f"{self.path} is {show(actual)}, expected a true value"
        return _same(actual, self.value), f"{self.path} is {show(actual)}, expected {show(self.value)}"

    def _check_jsonpath(self, obj: dict, show) -> tuple[bool, str]:
        try:
            results = self.compiled.find_results(obj)
        except JSONPathError as err:
            return False, f"{self.jsonpath}: {err}"
        found = results[0] if results else []
        if len(found) != 1:
            return False, f"{self.jsonpath} finds {len(found)} values, expected one"
        actual = printed(found[0])
        if self.value is None:
            return True, ""
        expected = self.value if isinstance(self.value, str) else printed(self.value)
        return actual == expected, f"{self.jsonpath} is {show(actual)}, expected {show(expected)}"


@dataclass
class WaitRules:
    timeout: float = DEFAULT_TIMEOUT
    kinds: dict = field(default_factory=dict)        # "Kind" or "Kind.group" -> "kstatus" | "none"
    conditions: list = field(default_factory=list)   # [Condition]
    poll_interval: float = MAX_POLL_DELAY            # the longest pause between two polls
    # after each poll that leaves objects not ready: those objects' outcomes (progress lines say what a wait waits for)
    on_poll: Callable[[list], None] | None = field(default=None, compare=False, repr=False)

    def readiness(self, resource) -> str:
        return self.kinds.get(resource.group_kind, self.kinds.get(resource.kind, "kstatus"))


@dataclass
class WaitOutcome:
    target: object
    status: Status
    live: dict | None = field(default=None, repr=False)  # the object as last read (for explaining why)

    def entry(self) -> dict:
        resource = self.target.resource
        return {"apiVersion": resource.api_version, "kind": resource.kind, "namespace": self.target.namespace,
                "name": self.target.name, "status": self.status.status, "message": self.status.message}


def wait_rules(options: dict, where: str = "wait") -> WaitRules:
    """Validate wait options (timeout, kinds, conditions) into WaitRules; errors name the option."""
    timeout = options.get("timeout", DEFAULT_TIMEOUT)
    try:
        timeout = float(DEFAULT_TIMEOUT if timeout is None else timeout)
    except (TypeError, ValueError):
        timeout = -1
    if timeout < 0:
        raise PhasekitError(f"{where}.timeout must be a number of seconds >= 0, got {options.get('timeout')!r}")
    if not isinstance(options.get("kinds") or {}, dict):
        raise PhasekitError(f"{where}.kinds must be a dictionary of kind: kstatus|none")
    kinds = dict(options.get("kinds") or {})
    for kind, mode in kinds.items():
        if mode not in READINESS_MODES:
            raise PhasekitError(f"{where}.kinds.{kind} must be one of {', '.join(READINESS_MODES)}, got {mode!r}")
    poll_interval = options.get("poll_interval")
    poll_interval = MAX_POLL_DELAY if poll_interval is None else poll_interval
    if isinstance(poll_interval, bool) or not isinstance(poll_interval, (int, float)) or poll_interval <= 0:
        raise PhasekitError(f"{where}.poll_interval must be a number of seconds > 0, got {poll_interval!r}")
    conditions = [_condition(raw, f"{where}.conditions[{number}]")
                  for number, raw in enumerate(options.get("conditions") or [], start=1)]
    return WaitRules(timeout=timeout, kinds=kinds, conditions=conditions, poll_interval=float(poll_interval))


def _condition(raw, where: str) -> Condition:
    """One condition, its expression compiled; errors name the option."""
    if not isinstance(raw, dict) or bool(raw.get("path")) == bool(raw.get("jsonpath")):
        raise PhasekitError(f"{where} needs one of 'path' (a JMESPath expression) and 'jsonpath' (kubectl's "
                            "JSONPath)")
    unknown = sorted(set(raw) - set(CONDITION_SPEC))
    if unknown:
        raise PhasekitError(f"{where}: unknown option(s) {', '.join(unknown)}; expected "
                            f"{', '.join(sorted(CONDITION_SPEC))}")
    condition = Condition(path=raw.get("path"), jsonpath=raw.get("jsonpath"), value=raw.get("value"),
                          kind=raw.get("kind"), name=raw.get("name"), namespace=raw.get("namespace"))
    if condition.jsonpath is not None:
        try:
            condition.compiled = JSONPath(condition.jsonpath)
        except JSONPathError as exc:
            raise PhasekitError(f"{where}.jsonpath {condition.jsonpath!r} is not valid kubectl JSONPath: "
                                f"{exc}") from None
        return condition
    if jmespath is None:
        raise PhasekitError(f"{where} needs the 'jmespath' Python package on the controller: "
                            f"{JMESPATH_IMPORT_ERROR}")
    try:
        condition.compiled = jmespath.compile(condition.path)
    except JMESPathError as exc:
        raise PhasekitError(f"{where}.path {condition.path!r} is not valid JMESPath: {exc}") from None
    return condition


def evaluate(target, obj: dict | None, rules: WaitRules) -> Status:
    """Readiness of one target from its live object."""
    if obj is None:
        return Status(NOT_FOUND, "object not found")
    status = compute_status(obj) if rules.readiness(target.resource) == "kstatus" \
        else Status(CURRENT, "exists (readiness not checked)")
    if not status.current:
        return status
    for condition in rules.conditions:
        if condition.applies_to(target):
            met, message = condition.check(obj)
            if not met:
                return Status(IN_PROGRESS, f"condition not met: {message}")
    return status


def wait_for(session, targets: list, rules: WaitRules, *, clock=time.monotonic, sleep=time.sleep,
             known: dict | None = None, first_delay: float = FIRST_POLL_DELAY) -> list[WaitOutcome]:
    """Poll all targets together until all are Current, none is in progress, or the timeout passes.

    ``known`` may hold live objects just read (by ``Target.key``) to evaluate first, saving a poll.
    """
    deadline = clock() + rules.timeout
    outcomes = {target.key: WaitOutcome(target, Status(IN_PROGRESS, "not checked yet")) for target in targets}
    pending = list(targets)
    live = dict(known or {})
    delay = min(first_delay, rules.poll_interval)
    while True:
        missing = [t for t in pending if t.key not in live]
        if missing:
            live.update(fetch_live(session, missing))
        for target in pending:
            if target.key in live:
                outcomes[target.key].status = evaluate(target, live[target.key], rules)
                outcomes[target.key].live = live[target.key]
            else:
                outcomes[target.key].status = Status(IN_PROGRESS, "cannot read the object (no permission to get "
                                                                  "it, or its kind is not served)")
        pending = [t for t in pending if not outcomes[t.key].status.current]
        if pending and rules.on_poll is not None:
            rules.on_poll([outcomes[t.key] for t in pending])
        if not pending or any(outcomes[t.key].status.status == FAILED for t in pending):
            break  # a Failed object will not recover by waiting: say so now, not at the timeout
        remaining = deadline - clock()
        if remaining <= 0:
            break
        sleep(min(delay, remaining))
        delay = min(delay * 1.6, rules.poll_interval)
        live = {}
    return [outcomes[target.key] for target in targets]


def wait_for_bundle(session, bundle: list, rules: WaitRules, namespace: str, discovery=None):
    """Wait for a rendered bundle's objects; returns (outcomes, None or the not-ready message)."""
    planned = plan_objects(bundle, discovery or Discovery(session), namespace)
    outcomes = wait_for(session, [p.target for p in planned], rules)
    return outcomes, explained_not_ready(session, outcomes, rules.timeout)


def explained_not_ready(session, outcomes: list[WaitOutcome], timeout: float) -> str | None:
    """``not_ready_message`` with the recent Warning events of the objects not ready (and of their pods)."""
    bad = [o for o in outcomes if not o.status.current]
    if not bad:
        return None
    return not_ready_message(outcomes, timeout, explain(session, [(o.target, o.live) for o in bad]))


def not_current_now(session, bundle: list, rules: WaitRules, namespace: str) -> str | None:
    """One look at a rendered bundle's objects (a soak's watch): None when every one is Current, else which are not
    and why."""
    return not_ready_message(look_now(session, bundle, rules, namespace), 0, now=True)


def look_now(session, bundle: list, rules: WaitRules, namespace: str) -> list[WaitOutcome]:
    """One look at a rendered bundle's objects: each one's state now, by ``rules``."""
    planned = plan_objects(bundle, Discovery(session), namespace)
    return wait_for(session, [p.target for p in planned], WaitRules(0, rules.kinds, rules.conditions))


def waiting_summary(outcomes: list[WaitOutcome], limit: int = MAX_WAITING) -> str:
    """What a wait still waits for, for a progress line: the first ``limit`` objects not Current with their kstatus
    message (``Deployment apps/web: Available: 0/2``), the others counted."""
    bad = [o for o in outcomes if not o.status.current]
    named = "; ".join(f"{o.target.describe()}: {o.status.message}" for o in bad[:limit])
    return named + (f"; and {len(bad) - limit} more" if len(bad) > limit else "")


def not_ready_message(outcomes: list[WaitOutcome], timeout: float, events: dict | None = None,
                      now: bool = False) -> str | None:
    """None when all are Current; else which objects are not ready and why (``events``: by ``Target.key``).
    ``now``: the state at one look, not the end of a wait."""
    bad = [o for o in outcomes if not o.status.current]
    if not bad:
        return None
    failed = [o for o in bad if o.status.status == FAILED]
    if now:
        head = f"{len(bad)} of {len(outcomes)} objects not Current"
    elif failed:
        head = f"{len(failed)} of {len(outcomes)} objects failed"
        if len(failed) < len(bad):
            head += f" ({len(bad) - len(failed)} more not ready yet)"
    else:
        head = f"timed out after {timeout:g}s: {len(bad)} of {len(outcomes)} objects not ready"
    bad = failed + [o for o in bad if o.status.status != FAILED]  # the failed first: they are why it stopped
    events = events or {}
    lines = [f"{o.target.describe()}: {o.status.status}: {o.status.message}"
             + (f" [events: {events[o.target.key]}]" if o.target.key in events else "") for o in bad[:MAX_REPORTED]]
    more = f"; and {len(bad) - MAX_REPORTED} more (see objects)" if len(bad) > MAX_REPORTED else ""
    return head + ": " + "; ".join(lines) + more


def _kind_matches(selector: str | None, resource) -> bool:
    return selector is None or selector in (resource.kind, resource.group_kind)


def _same(actual, expected) -> bool:
    if actual == expected:
        return True
    scalars = (str, int, float, bool)
    return isinstance(actual, scalars) and isinstance(expected, scalars) and _text(actual) == _text(expected)


def _text(value) -> str:
    return str(value).lower() if isinstance(value, bool) or str(value).lower() in ("true", "false") else str(value)


def _show(value) -> str:
    return repr(value) if isinstance(value, str) else str(value)


def _hidden(value) -> str:
    return "null" if value is None else "*** (a Secret value)"
