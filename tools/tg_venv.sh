# The tinygrad venvs of the tinygrad-facing scripts (sourced, not run): tinygrad 0.14.0 (the
# release whose QCOM runtime hcq follows), numpy and tinymesa 25.2.7.2 (tinygrad's IR3 compiler
# for DEV=QCOM:IR3), pinned, plus what a script adds (tinygrad's own test suites: torch, pytest,
# hypothesis). Made in one place for the exporter, the capture test, the peer benchmark and
# tinygrad's tests on the virtual A630.
#
#   . tools/tg_venv.sh; tg_venv "$VENV" [EXTRA==PIN ...] || skip "$TG_VENV_ERROR"
#
# tg_venv VENV [PINS]: makes VENV (python3 -m venv) and installs the pinned packages (the base
# pins and PINS, each NAME==VERSION, or a bare NAME for any version) when VENV does not already
# hold them; sets PY to its python. Returns 1 with TG_VENV_ERROR set when it cannot (no
# python3-venv, no package index): the caller decides whether that is a SKIP or, under CI=true,
# a failure.
TG_PINS=(tinygrad==0.14.0 numpy tinymesa==25.2.7.2)

tg_venv() {
  local venv=$1
  shift
  local pins=("${TG_PINS[@]}" "$@")
  # numpy's pin, when a caller gives one, replaces the base's bare name
  if printf '%s\n' "$@" | grep -q '^numpy=='; then
    pins=(tinygrad==0.14.0 tinymesa==25.2.7.2 "$@")
  fi
  PY="$venv/bin/python"
  local ok="import importlib.metadata as m
want = [p.split('==') for p in '''${pins[*]}'''.split()]
bad = {p[0]: m.version(p[0]) for p in want if len(p) == 2 and m.version(p[0]) != p[1]}
for p in want: m.version(p[0])
assert not bad, bad"
  if [ -x "$PY" ] && "$PY" -c "$ok" >/dev/null 2>&1; then
    return 0
  fi
  echo "installing ${pins[*]} into $venv" >&2
  mkdir -p "$(dirname "$venv")"
  if ! { [ -x "$PY" ] || python3 -m venv "$venv" >/dev/null 2>&1; }; then
    TG_VENV_ERROR="cannot create a venv at $venv (python3 -m venv failed; apt-get install python3-venv)"
    return 1
  fi
  if ! "$PY" -m pip install --quiet --disable-pip-version-check --retries 2 --timeout 120 "${pins[@]}" >/dev/null 2>&1; then
    TG_VENV_ERROR="pip install ${pins[*]} into $venv failed (no network or no package index?)"
    return 1
  fi
  if ! "$PY" -c "$ok" >/dev/null 2>&1; then
    TG_VENV_ERROR="the venv at $venv does not hold ${pins[*]} after installing them"
    return 1
  fi
}
