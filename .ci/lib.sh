# Helpers shared by .ci/run (sourced). Kept in a file of its own so a test can source it too
# (boards/hcq/tests/ci.rs).

# A step that cannot run here: under CI=true that is a failure (CI must not pass on what it did
# not check); elsewhere (a developer's machine without nightly or network) it prints SKIP.
cannot_run() {
  if [ "${CI:-}" = "true" ]; then
    echo "FAIL: cannot run under CI=true: $*"
    exit 1
  fi
  echo "SKIP: $*"
}
