# Helpers shared by .ci/run (sourced). Kept in a file of its own so a test can source it too
# (cli/tests/ci.rs).

# A step that cannot run here: under CI=true that is a failure (CI must not pass on what it did
# not check); elsewhere (a developer's machine without nightly or network) it prints SKIP.
cannot_run() {
  if [ "${CI:-}" = "true" ]; then
    echo "FAIL: cannot run under CI=true: $*"
    exit 1
  fi
  echo "SKIP: $*"
}

# Step timing. `step NAME` ends the running step (its wall time goes into the table) and starts
# NAME; `ci_bg NAME CMD...` starts a job beside the running step (its output goes to a log) and
# `ci_wait` waits for every such job, prints their logs and fails when one failed; `ci_finish`,
# installed as the EXIT trap, ends the last step, marks it failed when the script exits non-zero,
# and prints the table: seconds, status, step name (a background job indented under its step).
CI_NAMES=()
CI_SECS=()
CI_STATES=()
CI_CUR=""
CI_T0=0
CI_BG_PIDS=()
CI_BG_NAMES=()
CI_BG_T0=()
CI_BG_LOGS=()
CI_LOG_DIR=${CI_LOG_DIR:-target/ci-logs}

_ci_record() { CI_NAMES+=("$1"); CI_SECS+=("$2"); CI_STATES+=("$3"); }

_ci_end_step() {
  [ -n "$CI_CUR" ] || return 0
  local s=$((SECONDS - CI_T0))
  _ci_record "$CI_CUR" "$s" "$1"
  echo "--- $CI_CUR: $s s"
  CI_CUR=""
}

step() {
  _ci_end_step ok
  CI_CUR="$*"
  CI_T0=$SECONDS
  echo
  echo "=== $* ($(date +%H:%M:%S))"
}

ci_bg() {
  local name=$1
  shift
  mkdir -p "$CI_LOG_DIR"
  local log
  log="$CI_LOG_DIR/bg-${#CI_BG_PIDS[@]}.log"
  "$@" >"$log" 2>&1 &
  CI_BG_PIDS+=("$!")
  CI_BG_NAMES+=("$name")
  CI_BG_T0+=("$SECONDS")
  CI_BG_LOGS+=("$log")
  echo "started beside this step: $name (log $log)"
}

ci_wait() {
  local i rc failed=()
  for i in "${!CI_BG_PIDS[@]}"; do
    rc=0
    wait "${CI_BG_PIDS[$i]}" || rc=$?
    echo "--- ${CI_BG_NAMES[$i]} (exit $rc):"
    cat "${CI_BG_LOGS[$i]}"
    if [ "$rc" = 0 ]; then
      _ci_record "  | ${CI_BG_NAMES[$i]}" $((SECONDS - CI_BG_T0[i])) ok
    else
      _ci_record "  | ${CI_BG_NAMES[$i]}" $((SECONDS - CI_BG_T0[i])) "FAILED (exit $rc)"
      failed+=("${CI_BG_NAMES[$i]}")
    fi
  done
  CI_BG_PIDS=()
  CI_BG_NAMES=()
  CI_BG_T0=()
  CI_BG_LOGS=()
  if [ "${#failed[@]}" != 0 ]; then
    echo "FAIL: ${failed[*]}"
    return 1
  fi
}

ci_table() {
  local i total=0
  echo
  echo "=== step times (wall seconds)"
  printf '%7s  %-18s %s\n' seconds status step
  for i in "${!CI_NAMES[@]}"; do
    printf '%7d  %-18s %s\n' "${CI_SECS[$i]}" "${CI_STATES[$i]}" "${CI_NAMES[$i]}"
    case ${CI_NAMES[$i]} in "  | "*) ;; *) total=$((total + CI_SECS[i])) ;; esac
  done
  printf '%7d  %-18s %s\n' "$total" "" "total"
}

ci_finish() {
  local rc=$?
  if [ "$rc" = 0 ]; then _ci_end_step ok; else _ci_end_step "FAILED (exit $rc)"; fi
  ci_table
  exit "$rc"
}
