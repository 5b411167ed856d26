# The tinygrad venv every tinygrad-facing script uses (sourced, not run): tinygrad 0.14.0 (the
# release whose QCOM runtime hcq follows), numpy and tinymesa 25.2.7.2 (tinygrad's IR3 compiler
# for DEV=QCOM:IR3), pinned; one venv for the exporter, the capture test, the peer benchmark and
# tinygrad's own tests on the virtual A630.
#
#   . tools/tg_venv.sh; tg_venv "$VENV" || skip "$TG_VENV_ERROR"
#
# tg_venv VENV: makes VENV (python3 -m venv) and installs the pinned packages when VENV does not
# already hold them; sets PY to its python. Returns 1 with TG_VENV_ERROR set when it cannot
# (no python3-venv, no package index): the caller decides whether that is a SKIP or, under
# CI=true, a failure.
TG_PINS=(tinygrad==0.14.0 numpy tinymesa==25.2.7.2)

tg_venv() {
  local venv=$1
  PY="$venv/bin/python"
  if [ -x "$PY" ] && "$PY" -c 'import importlib.metadata as m, numpy
assert m.version("tinygrad") == "0.14.0" and m.version("tinymesa") == "25.2.7.2"' 2>/dev/null; then
    return 0
  fi
  mkdir -p "$(dirname "$venv")"
  if ! python3 -m venv "$venv" >/dev/null 2>&1; then
    TG_VENV_ERROR="cannot create a venv at $venv (python3 -m venv failed; apt-get install python3-venv)"
    return 1
  fi
  if ! "$PY" -m pip install --quiet --disable-pip-version-check --retries 1 --timeout 60 "${TG_PINS[@]}" >/dev/null 2>&1; then
    TG_VENV_ERROR="pip install ${TG_PINS[*]} failed (no network or no package index?)"
    return 1
  fi
}
