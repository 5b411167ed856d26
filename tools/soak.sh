#!/usr/bin/env bash
# Memory soak: resident memory of `hcq run` over many calls, after a warm-up.
#
#   tools/soak.sh BUNDLE DEVICE CALLS [WARMUP_S] [LIMIT_KIB]
#
# Runs `hcq run BUNDLE --device DEVICE --iters CALLS --check --json` and samples the process's
# resident set (VmRSS) every 0.2 s. The first samples, up to WARMUP_S seconds (default 2), are
# the warm-up (load, first calls, the allocator's caches); the figure is the largest resident
# set after the warm-up minus the first sample after it, and the resident set at the last sample
# minus that same sample. Exits 1 when the run fails its check, or when either growth is over
# LIMIT_KIB (default 256, the openpilot issue's bound), so CI can hold it. CALLS is a least: a
# run that ends before 3 samples after the warm-up (a fast machine) is run again with 10x the
# calls, up to twice, and says so.
# $HCQ_BIN is the hcq binary (default target/release/hcq).
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 BUNDLE DEVICE CALLS [WARMUP_S] [LIMIT_KIB]" >&2; exit 2; }
bundle=$1 device=$2 calls=$3 warm=${4:-2} limit=${5:-256}
hcq=${HCQ_BIN:-target/release/hcq}
[ -x "$hcq" ] || { echo "FAIL: no hcq binary at $hcq (cargo build --release -p hcq-cli)" >&2; exit 1; }
out=$(mktemp); trap 'rm -f "$out"' EXIT
soak_once() {
  start=$(date +%s.%N)
  "$hcq" run "$bundle" --device "$device" --iters "$calls" --check --json >"$out" 2>&1 &
  pid=$!
  base="" peak=0 last=0 samples=0
  while kill -0 "$pid" 2>/dev/null; do
    rss=$(awk '/^VmRSS:/{print $2}' "/proc/$pid/status" 2>/dev/null || true)
    if [ -n "$rss" ]; then
      now=$(date +%s.%N)
      if awk -v n="$now" -v s="$start" -v w="$warm" 'BEGIN{exit !(n - s >= w)}'; then
        [ -n "$base" ] || base=$rss
        [ "$rss" -gt "$peak" ] && peak=$rss
        last=$rss
        samples=$((samples + 1))
      fi
    fi
    sleep 0.2
  done
  rc=0; wait "$pid" || rc=$?
  end=$(date +%s.%N)
  tail -1 "$out"
  if [ "$rc" -ne 0 ]; then
    echo "FAIL: hcq run exited $rc"; cat "$out"; exit 1
  fi
}
for attempt in 1 2 3; do
  soak_once
  if [ -n "$base" ] && [ "$samples" -ge 3 ]; then break; fi
  if [ "$attempt" = 3 ]; then
    echo "FAIL: the run ended before 3 samples after a ${warm} s warm-up even with $calls calls"; exit 1
  fi
  echo "soak: $calls calls ended before 3 samples after the ${warm} s warm-up: again with $((calls * 10))"
  calls=$((calls * 10))
done
wall=$(awk -v e="$end" -v s="$start" 'BEGIN{printf "%.1f", e - s}')
grow_peak=$((peak - base)); grow_end=$((last - base))
printf 'soak %s on %s: %s calls in %s s; resident after %s s warm-up %s KiB, peak %s KiB (%+d), last %s KiB (%+d), %s samples\n' \
  "$bundle" "$device" "$calls" "$wall" "$warm" "$base" "$peak" "$grow_peak" "$last" "$grow_end" "$samples"
if [ "$grow_peak" -gt "$limit" ] || [ "$grow_end" -gt "$limit" ]; then
  echo "FAIL: resident memory grew more than $limit KiB after the warm-up"; exit 1
fi
