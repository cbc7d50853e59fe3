#!/usr/bin/env bash
# Run a part of `make test` behind the others and wait for it where it is needed:
# on a cold machine the Go builds the first lines do not need (the oldest
# Kubernetes version's tools, the EE image) overlap the tests instead of delaying them.
#
#   hack/behind.sh start [--nice] NAME COMMAND [ARG ...]   # returns at once (--nice: at nice 19)
#   hack/behind.sh wait NAME [NAME ...]                     # their output; fails if one failed
#
# COMMAND may start with VAR=value words (run through env). Its output goes to
# $PHASEKIT_BEHIND_DIR/NAME.log and is printed by `wait`, followed by a line with
# its exit status, so a failure behind the lines fails the part that waits for it
# with its log shown. A part still running when $PHASEKIT_BEHIND_OWNER (the
# process of the `make` that started it) has ended, because a part in front
# failed or was interrupted, is stopped with its whole process group.
set -euo pipefail

dir="${PHASEKIT_BEHIND_DIR:?PHASEKIT_BEHIND_DIR: where the parts behind keep their logs}"
self="${BASH_SOURCE[0]}"

usage() { echo "usage: behind.sh start [--nice] NAME COMMAND [ARG ...] | wait NAME [NAME ...]" >&2; exit 2; }

start() {
  local priority=() name owner pid
  if [ "${1:-}" = --nice ]; then priority=(nice -n 19); shift; fi
  [ $# -ge 2 ] || usage
  name="$1"; shift
  owner="${PHASEKIT_BEHIND_OWNER:?PHASEKIT_BEHIND_OWNER: the pid of the make that waits for it}"
  mkdir -p "$dir"
  rm -f "$dir/$name.rc"
  : >"$dir/$name.log"
  # its own session (process group): stopped as a whole, untouched by a Ctrl-C meant for make
  setsid bash "$self" _run "$name" "${priority[@]}" env "$@" </dev/null >/dev/null 2>&1 &
  pid=$!
  echo "$pid" >"$dir/$name.pid"
  nohup bash "$self" _watch "$name" "$owner" "$pid" </dev/null >/dev/null 2>&1 &
  echo "started $name behind the next parts${priority[*]:+ (nice 19)}: $dir/$name.log"
}

_run() {  # NAME COMMAND...: in its own session
  local name="$1" rc=0
  shift
  "$@" >>"$dir/$name.log" 2>&1 || rc=$?
  echo "$rc" >"$dir/$name.rc.tmp"
  mv "$dir/$name.rc.tmp" "$dir/$name.rc"
}

_watch() {  # NAME OWNER PGID: stop the part if its make has gone before it ended
  local name="$1" owner="$2" pgid="$3"
  while [ ! -e "$dir/$name.rc" ]; do
    if ! kill -0 "$owner" 2>/dev/null; then
      echo "behind.sh: stopping $name: the make that started it (pid $owner) has ended" >>"$dir/$name.log"
      kill -TERM -- "-$pgid" 2>/dev/null || true
      return 0
    fi
    sleep 2
  done
}

wait_for() {  # NAME
  local name="$1" pid rc
  [ -e "$dir/$name.pid" ] || { echo "behind.sh: $name was not started (no $dir/$name.pid)" >&2; exit 2; }
  pid="$(cat "$dir/$name.pid")"
  while [ ! -e "$dir/$name.rc" ]; do
    if ! kill -0 "$pid" 2>/dev/null && [ ! -e "$dir/$name.rc" ]; then
      echo "behind.sh: $name ended without an exit status (killed?)" >>"$dir/$name.log"
      echo 1 >"$dir/$name.rc"
      break
    fi
    sleep 5
  done
  rc="$(cat "$dir/$name.rc")"
  echo "=== $name (run behind the parts before; $dir/$name.log):"
  cat "$dir/$name.log"
  if [ "$rc" != 0 ]; then
    echo "=== $name FAILED (exit $rc), log above: $dir/$name.log"
  fi
  return "$rc"
}

case "${1:-}" in
  start) shift; start "$@" ;;
  wait)
    shift
    [ $# -gt 0 ] || usage
    status=0
    for name in "$@"; do wait_for "$name" || status=$?; done
    exit "$status" ;;
  _run) shift; _run "$@" ;;
  _watch) shift; _watch "$@" ;;
  *) usage ;;
esac
