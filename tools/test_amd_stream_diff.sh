#!/usr/bin/env bash
# CI test of tools/amd_stream_diff.py: tinygrad's AMD command stream against hcq's, packet by packet, on the virtual gfx1100.
#
#   HCQ_BIN=target/release/hcq bash tools/test_amd_stream_diff.sh [MODEL ...]
#
# Default models: mlp, convnet, qcom_small, chain100 (three HCQ graphs against one hcq IB), elementwise (a launch outside a graph:
# tinygrad's eager ring copy), symbolic (int32 values in the kernel arguments); then policy_transformer with --no-prune (an SDMA copy
# launch). For each: tinygrad's --amd-jit export and `hcq run --device AMD` of the bundle, both under `hcq virtual` with
# HCQ_VKGSL_AMD_CAPTURE, compared with no unexplained difference, the dispatch packets equal but for their addresses (compared by
# the code and kernel-argument bytes they point at), and the classes every such pair shows (code, kernel-argument and buffer
# addresses; the interrupt tinygrad asks for). Then the comparison's teeth: hcq's capture of mlp (and symbolic) tampered — a
# register value, the code, a kernel-argument value, two buffer arguments swapped, the HDP flush gone, the timeline signal gone,
# a packet hcq does not send — is an unexplained difference (exit 1), and a capture that is not one is refused (exit 2).
#
# Environment: TG_VENV (default target/tg-export-venv), HCQ_BIN (required: the hcq binary, with libhcq_vkgsl.so next to it or at
# $HCQ_VKGSL_LIB). "SKIP: ..." when the environment cannot run it; under CI=true that is a failure. Last line: "N passed, M failed";
# non-zero exit when M > 0.
set -u
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${TG_VENV:-$ROOT/target/tg-export-venv}"
# shellcheck source=tools/vkgsl_test.sh
. "$ROOT/tools/vkgsl_test.sh"
vkgsl_test_env "$VENV"
export TG_PY="$PY"

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
unset DEV AMD_LLVM AMD_CC IMAGE FLOAT16 NOLOCALS JIT_BATCH_SIZE JIT BEAM JITBEAM HCQ_VKGSL_AMD_CAPTURE
DIFF=("$PY" "$ROOT/tools/amd_stream_diff.py")

stream_ok() { # stream_ok NAME MODEL [EXPORT ARGS]: both captured, compared, 0 unexplained, the classes every pair shows
  local name=$1 model=$2 out rc; shift 2
  local extra=()
  for a in "$@"; do extra+=(--export-arg="$a"); done
  out=$("${DIFF[@]}" --model "$ROOT/tools/models/$model.py" --keep "$TMP/$name" "${extra[@]}" 2>&1); rc=$?
  echo "$out" >"$TMP/$name.out"
  local summary; summary=$(tail -1 <<<"$out")
  if [ "$rc" -ne 0 ]; then fail "$name: exit $rc: $(grep -m3 'UNEXPLAINED\|amd_stream_diff:' <<<"$out" | cut -c1-300) ($summary)"; return; fi
  local missing=()
  for cls in code-address kernarg-address buffer-address timeline interrupt; do
    grep -q "^$cls: [0-9]* -- " <<<"$out" || missing+=("$cls")
  done
  if [ ${#missing[@]} -gt 0 ]; then fail "$name: no ${missing[*]} difference reported: $summary"; return; fi
  pass "$name: $(sed -n 3p <<<"$out"); $summary; classes: $(grep -o '^[a-z-]*: [0-9]* --' <<<"$out" | sed 's/ --//' | tr '\n' ' ')"
}

MODELS=("$@")
[ ${#MODELS[@]} -gt 0 ] || MODELS=(mlp convnet qcom_small chain100 elementwise symbolic)
for m in "${MODELS[@]}"; do stream_ok "$m" "$m"; done
[ $# -eq 0 ] && stream_ok policy_noprune policy_transformer --no-prune

# ---- the comparison's teeth: each tampering of hcq's capture is an unexplained difference
tampered() { # tampered WHAT MODEL EXPECTED_TEXT PYTHON_EDIT: the edit of hcq's capture (lines L, in place) makes the diff fail
  local what=$1 m=$2 want=$3 edit=$4 out rc
  local d="$TMP/$m/$m"
  [ -f "$d.hcq.txt" ] || { fail "$what: no capture of $m to tamper with"; return; }
  "$PY" - "$d.hcq.txt" "$TMP/t.txt" "$edit" <<'EOF'
import sys
src, dst, edit = sys.argv[1:4]
L = open(src).read().splitlines()
exec(edit)
open(dst, "w").write("\n".join(L) + "\n")
EOF
  out=$("${DIFF[@]}" --bundle "$d" --tinygrad "$d.tinygrad.txt" --hcq "$TMP/t.txt" 2>&1); rc=$?
  if [ "$rc" -eq 1 ] && grep -q "UNEXPLAINED: .*$want" <<<"$out"; then pass "$what: unexplained ($(grep -m1 "UNEXPLAINED: .*$want" <<<"$out" | cut -c1-200))"
  else fail "$what: exit $rc, no 'UNEXPLAINED: ...$want': $(grep -m2 'UNEXPLAINED\|amd_stream_diff' <<<"$out" | cut -c1-200) $(tail -1 <<<"$out")"; fi
}
if [ -f "$TMP/mlp/mlp.hcq.txt" ]; then
  tampered "a register value (COMPUTE_PGM_RSRC1)" mlp "COMPUTE_PGM_RSRC1" \
    'L = [l.replace("COMPUTE_PGM_RSRC1=0x", "COMPUTE_PGM_RSRC1=0x1") for l in L]'
  tampered "the code a dispatch runs" mlp "code_fnv" \
    'L = [l.replace("code_fnv=0x", "code_fnv=0x1", 1) if " DISPATCH_DIRECT " in l else l for l in L]'
  tampered "two buffer arguments swapped" mlp "map one to one\|elsewhere than" \
    'import re
def swap(l):
  m = re.search(r" mem0=([0-9a-f]{16})([0-9a-f]{16})", l)
  return l[:m.start(1)] + m.group(2) + m.group(1) + l[m.end(2):] if m and " DISPATCH_DIRECT " in l else l
L = [swap(l) for l in L]'
  tampered "the HDP flush left out" mlp "no hdp-flush" 'L = [l for l in L if " reg=0xe26 " not in l]'
  tampered "the timeline signal left out" mlp "does not signal the timeline" \
    'del L[max(k for k, l in enumerate(L) if " RELEASE_MEM " in l and " data_sel=1 " in l)]'
  tampered "a packet hcq does not send" mlp "hcq only" \
    'i = max(k for k, l in enumerate(L) if " DISPATCH_DIRECT " in l)
L.insert(i - 10, L[i - 10].split(" cp ")[0] + " cp q=0 ib1@0x1000 COPY_DATA src_sel=5 dst_sel=5 count64=0 wr_confirm=0 src=0x0 dst=0x1000 | c0044000 00000505 00000000 00000000 00001000 00000000")'
else fail "the tampered captures: no capture of mlp (its comparison failed above)"; fi
if [ -f "$TMP/symbolic/symbolic.hcq.txt" ]; then
  tampered "a kernel-argument value (symbolic's int32)" symbolic "after the buffer addresses" \
    'import re
def bump(l):
  m = re.search(r" mem0=([0-9a-f]{32})([0-9a-f]{2})", l)
  return l[:m.start(2)] + "%02x" % ((int(m.group(2), 16) + 1) % 256) + l[m.end(2):] if m and " DISPATCH_DIRECT " in l else l
L = [bump(l) for l in L]'
fi

# ---- the engines' race: the call's SDMA copy may complete before the CP reaches the call's IB (the simulator's SDMA and CP run
# on their own threads; CI saw tinygrad's that way round). Each side's capture reordered so: still the same call, 0 unexplained.
raced() { # raced SIDE: the copy of SIDE's (tinygrad|hcq) last call, with its wait, moved before the call's IB
  local side=$1 d="$TMP/policy_noprune/policy_transformer" out rc
  [ -f "$d.$side.txt" ] || { fail "$side's copy before its IB: no capture of policy_transformer"; return; }
  "$PY" - "$d.$side.txt" "$TMP/raced.$side.txt" <<'EOF2'
import sys
L = open(sys.argv[1]).read().splitlines()
# the last call: the last INDIRECT_BUFFER in the compute ring (tinygrad's HCQ graph, hcq's run); its copy is the first
# after it before the call's end, unless it already completed before the IB (then the capture is raced as it is).
# tinygrad's eager copies (reading outputs back) come after the call.
ib = max(k for k, l in enumerate(L) if " cp " in l and " ring@" in l and " INDIRECT_BUFFER " in l)
# the call ends with its IB's last packet (the next compute packet in the ring starts other work)
end = next((k for k in range(ib + 1, len(L)) if " cp " in L[k] and " ring@" in L[k]), len(L))
end = max(k for k in range(ib, end) if " cp " in L[k])
c = next((k for k in range(ib, end) if " sdma " in L[k] and " COPY_LINEAR " in L[k]), None)
if c is not None:
    w = max(k for k in range(ib, c) if " sdma " in L[k] and " POLL_REGMEM " in L[k])
    seq = [l.split(" ", 1)[0] for l in L[ib:c + 1]]
    moved = L[w:c + 1] + L[ib:w]
    L[ib:c + 1] = [s + " " + l.split(" ", 1)[1] for s, l in zip(seq, moved)]
open(sys.argv[2], "w").write("\n".join(L) + "\n")
EOF2
  local t="$d.tinygrad.txt" h="$d.hcq.txt"
  if [ "$side" = tinygrad ]; then t="$TMP/raced.$side.txt"; else h="$TMP/raced.$side.txt"; fi
  out=$("${DIFF[@]}" --bundle "$d" --tinygrad "$t" --hcq "$h" 2>&1); rc=$?
  if [ "$rc" -eq 0 ]; then pass "$side's copy completed before the CP reached its IB: $(tail -1 <<<"$out")"
  else fail "$side's copy completed before the CP reached its IB: exit $rc: $(grep -m2 'UNEXPLAINED\|amd_stream_diff' <<<"$out" | cut -c1-200)"; fi
}
if [ $# -eq 0 ]; then raced tinygrad; raced hcq; fi

refused() { # refused WHAT EXPECTED_TEXT COMMAND...: the command (amd_stream_diff) exits 2 naming EXPECTED_TEXT
  local what=$1 want=$2 out rc; shift 2
  out=$("$@" 2>&1); rc=$?
  if [ "$rc" -eq 2 ] && grep -qF -- "$want" <<<"$out"; then pass "$what: refused ($(tail -1 <<<"$out" | cut -c1-160))"
  else fail "$what: exit $rc without '$want': $(tail -2 <<<"$out")"; fi
}
if [ -d "$TMP/mlp/mlp" ]; then
  printf '0 1 cp q=0 ring@0x1000 NOP\n' >"$TMP/bad.txt"
  refused "a capture line without its dwords" "not a capture line" "${DIFF[@]}" --bundle "$TMP/mlp/mlp" --tinygrad "$TMP/bad.txt" --hcq "$TMP/mlp/mlp.hcq.txt"
  refused "a missing capture" "No such file" "${DIFF[@]}" --bundle "$TMP/mlp/mlp" --tinygrad "$TMP/none.txt" --hcq "$TMP/mlp/mlp.hcq.txt"
  refused "tinygrad's capture of another model" "no run of tinygrad's" "${DIFF[@]}" --bundle "$TMP/mlp/mlp" --tinygrad "$TMP/convnet/convnet.tinygrad.txt" \
    --hcq "$TMP/mlp/mlp.hcq.txt"
fi
refused "--model without HCQ_BIN" "HCQ_BIN" env -u HCQ_BIN "${DIFF[@]}" --model "$ROOT/tools/models/mlp.py"

finish
