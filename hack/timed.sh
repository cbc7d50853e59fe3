#!/usr/bin/env bash
# Run a command and say how long it took: `make test` wraps each part of the CI
# run in it, so the log ends with the time of each (docs/benchmarks.md, CI cost).
#   hack/timed.sh LABEL [VAR=value ...] COMMAND [ARG ...]
# The line is also appended to $PHASEKIT_CI_TIMES when that is set.
set -uo pipefail
label="$1"; shift
start=$SECONDS
env "$@"
rc=$?
line="[ci-time] $label: $((SECONDS - start)) s (exit $rc)"
echo "$line"
[ -z "${PHASEKIT_CI_TIMES:-}" ] || echo "$line" >>"$PHASEKIT_CI_TIMES"
exit $rc
