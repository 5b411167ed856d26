#!/usr/bin/env python3
"""tinygrad 0.14 (TinyJit, CPU) against hcq on the same models, in one run.

For each model, this script builds it in tinygrad, captures it with TinyJit, times the JIT call (median and min of
--iters calls after --warmup calls, time.perf_counter around `jit(*inputs)` plus a device synchronize), checks the
JIT's output against the bundle's expected bytes (so both sides compute the same thing), then runs
`hcq run examples/<model> --iters N --check --json` and reads its JSON line. It prints one table:

  model, kernels (tinygrad / hcq), tinygrad call us (median, min), hcq call us (median, min), ratio of the medians,
  per-kernel us (median call / kernels) for both.

Models: chain100 (100 chained `(x+1).contiguous()` on 16 floats, input from examples/chain100/buf_000.bin; its output
is checked against the bundle's expected bytes), mlp and wide (tools/models/*.py, seed 0; checked against the model file's
numpy reference — examples/mlp is the reference bundle with the same shapes and kernels but its own weights, examples/wide
was exported from tools/models/wide.py). hcq checks its outputs against the bundle (`--check`).

tinygrad runs with DEV=CPU::x86_64,<level>, where <level> is the bundle's x86-64 level (x86-64-v2 for the samples), so
both runtimes execute the same machine code; --native uses plain DEV=CPU (-march=native) instead. NUM_CPU_THREADS is
--threads (default 4, the exporter's default), so the core_id kernels are split the same way; tinygrad runs the
core_id calls one after another in the calling thread, hcq spreads them over the CPU device's cores.

Usage: python tools/bench_peer.py [--hcq PATH] [--models chain100,mlp,wide] [--iters 1000] [--warmup 100]
                                  [--native] [--threads 4] [--json]
The hcq binary: --hcq, else $HCQ_BIN, else target/release/hcq. Run with the tinygrad 0.14 venv's python.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = ("chain100", "mlp", "wide")
CHAIN = 100


def parse_args(argv):
  ap = argparse.ArgumentParser(description="Time tinygrad's TinyJit call and hcq's model call on the same bundles.")
  ap.add_argument("--hcq", default=os.environ.get("HCQ_BIN") or os.path.join(ROOT, "target", "release", "hcq"),
                  help="the hcq binary (default: $HCQ_BIN, else target/release/hcq)")
  ap.add_argument("--models", default=",".join(MODELS), help=f"comma-separated subset of {','.join(MODELS)}")
  ap.add_argument("--examples", default=os.path.join(ROOT, "examples"), help="directory holding the bundles")
  ap.add_argument("--iters", type=int, default=1000, help="timed calls per runtime and model (default 1000)")
  ap.add_argument("--warmup", type=int, default=100, help="untimed tinygrad calls before timing (default 100)")
  ap.add_argument("--threads", type=int, default=4, help="tinygrad NUM_CPU_THREADS (default 4, as the exporter)")
  ap.add_argument("--native", action="store_true", help="tinygrad with DEV=CPU (-march=native) instead of the bundle's level")
  ap.add_argument("--json", action="store_true", help="also print the results as one JSON line")
  a = ap.parse_args(argv)
  a.models = [m for m in a.models.split(",") if m]
  for m in a.models:
    if m not in MODELS: ap.error(f"--models: unknown model {m!r} (known: {', '.join(MODELS)})")
  if a.iters < 1 or a.warmup < 0 or a.threads < 1: ap.error("--iters and --threads must be >= 1, --warmup >= 0")
  return a


def manifest(examples, name):
  with open(os.path.join(examples, name, "manifest.json")) as f: return json.load(f)


def x86_level(examples, models):
  levels = {manifest(examples, m).get("arch_levels", {}).get("x86_64") for m in models}
  if len(levels) != 1 or None in levels: raise SystemExit(f"bench_peer: bundles disagree on (or lack) an x86-64 level: {levels}")
  return levels.pop()


def load_model_file(name):
  path = os.path.join(ROOT, "tools", "models", f"{name}.py")
  spec = importlib.util.spec_from_file_location(f"bench_peer_{name}", path)
  mod = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(mod)
  return mod


def build(name, examples):
  """(fn, inputs, reference outputs as numpy arrays, what the reference is) of model `name` in tinygrad."""
  import numpy as np
  from tinygrad import Tensor
  if name == "chain100":
    m = manifest(examples, name)
    inp = m["inputs"][0]
    with open(os.path.join(examples, name, m["buffers"][inp["buffer"]]["file"]), "rb") as f:
      x = np.frombuffer(f.read(), dtype=np.float32)[: inp["nbytes"] // 4].reshape(inp["shape"]).copy()

    def fn(x):
      for _ in range(CHAIN): x = (x + 1).contiguous()
      return x
    return fn, [Tensor(x).realize()], expected_outputs(examples, name), "the bundle's expected output"
  mod = load_model_file(name)
  fn, inputs = mod.build(0)
  # examples/mlp is the reference bundle (same shapes and kernels, its own weights), so compare with the model's numpy
  # reference rather than with the bundle's bytes
  return fn, inputs, mod.reference([t.numpy() for t in inputs], 0), f"tools/models/{name}.py reference()"


def expected_outputs(examples, name):
  import numpy as np
  m = manifest(examples, name)
  out = []
  for o in m["outputs"]:
    with open(os.path.join(examples, name, o["file"]), "rb") as f:
      out.append(np.frombuffer(f.read(), dtype=o["dtype"]).reshape(o["shape"]))
  return out


def median(v):
  s = sorted(v)
  n = len(s)
  return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def time_tinygrad(name, args):
  import numpy as np
  from tinygrad import Device, TinyJit
  from tinygrad.uop.ops import Ops
  fn, inputs, reference, ref_what = build(name, args.examples)
  jit = TinyJit(fn)
  dev = Device[inputs[0].device]
  for _ in range(max(args.warmup, 3)): ret = jit(*inputs)  # call 1 captures; later calls replay
  if jit.captured is None: raise SystemExit(f"bench_peer: TinyJit captured nothing for {name}")
  kernels = sum(1 for c in jit.captured.linear.src if c.src[0].op is Ops.PROGRAM)
  # tinygrad computed the model (within the bundle format's tolerance)
  rets = list(ret) if isinstance(ret, (tuple, list)) else [ret]
  diff = 0.0
  for got, exp in zip(rets, reference, strict=True):
    g, e = got.numpy().astype(np.float64), np.asarray(exp, dtype=np.float64)
    d = np.abs(g - e)
    if g.shape != e.shape or not np.all(d <= 1e-5 + 1e-4 * np.abs(e)):
      raise SystemExit(f"bench_peer: tinygrad's {name} output differs from {ref_what} (max abs diff {d.max():.3g})")
    diff = max(diff, float(d.max()))
  ts = []
  for _ in range(args.iters):
    t0 = time.perf_counter()
    jit(*inputs)
    dev.synchronize()
    ts.append(time.perf_counter() - t0)
  return {"kernels": kernels, "median_us": median(ts) * 1e6, "min_us": min(ts) * 1e6, "max_abs_diff": diff,
          "checked_against": ref_what}


def time_hcq(name, args):
  cmd = [args.hcq, "run", os.path.join(args.examples, name), "--iters", str(args.iters), "--check", "--json"]
  p = subprocess.run(cmd, capture_output=True, text=True)
  doc = None
  for line in p.stdout.splitlines():
    try: doc = json.loads(line)
    except ValueError: continue
  if p.returncode != 0 or not isinstance(doc, dict):
    raise SystemExit(f"bench_peer: {' '.join(cmd)} failed (exit {p.returncode}):\n{p.stdout}{p.stderr}")
  if doc.get("outputs_ok") is not True: raise SystemExit(f"bench_peer: hcq's {name} outputs do not match the bundle: {doc}")
  return {"kernels": doc["kernels_per_call"], "median_us": doc["call_us_median"], "min_us": doc["call_us_min"]}


def main(argv=None):
  args = parse_args(sys.argv[1:] if argv is None else argv)
  if not os.access(args.hcq, os.X_OK):
    raise SystemExit(f"bench_peer: hcq binary {args.hcq} not found (cargo build --release -p hcq-cli, or set --hcq / HCQ_BIN)")
  level = None if args.native else x86_level(args.examples, args.models)
  # tinygrad reads these when it is imported
  os.environ["DEV"] = "CPU" if args.native else f"CPU::x86_64,{level}"
  os.environ["NUM_CPU_THREADS"] = str(args.threads)
  for var in ("HCQ2", "BEAM", "JITBEAM", "DEBUG"): os.environ.pop(var, None)
  import tinygrad  # noqa: F401  (fail here, not half-way, when it is missing)
  import importlib.metadata
  tg_version = importlib.metadata.version("tinygrad")

  load0 = os.getloadavg()
  rows = []
  for name in args.models:
    tg = time_tinygrad(name, args)
    hq = time_hcq(name, args)
    rows.append({"model": name, "tinygrad": tg, "hcq": hq, "ratio": tg["median_us"] / hq["median_us"]})
  load1 = os.getloadavg()

  print(f"tinygrad {tg_version} DEV={os.environ['DEV']} NUM_CPU_THREADS={args.threads} vs {args.hcq}; "
        f"{args.iters} timed calls each (tinygrad after {args.warmup} warm-up calls); "
        f"{platform.machine()}, {os.cpu_count()} CPUs, load average {load0[0]:.2f} -> {load1[0]:.2f}")
  hdr = ("model", "kernels tg/hcq", "tinygrad us med (min)", "hcq us med (min)", "ratio", "tg us/kernel", "hcq us/kernel")
  print(f"{hdr[0]:<10} {hdr[1]:>14} {hdr[2]:>22} {hdr[3]:>18} {hdr[4]:>8} {hdr[5]:>13} {hdr[6]:>14}")
  for r in rows:
    tg, hq = r["tinygrad"], r["hcq"]
    print(f"{r['model']:<10} {tg['kernels']:>6}/{hq['kernels']:<7} {tg['median_us']:>11.1f} ({tg['min_us']:>8.1f}) "
          f"{hq['median_us']:>8.2f} ({hq['min_us']:>7.2f}) {r['ratio']:>7.0f}x "
          f"{tg['median_us'] / max(tg['kernels'], 1):>13.3f} {hq['median_us'] / max(hq['kernels'], 1):>14.3f}")
    if tg["kernels"] != hq["kernels"]:
      print(f"  note: {r['model']}: tinygrad ran {tg['kernels']} kernels, the bundle has {hq['kernels']}")
  if args.json:
    print(json.dumps({"tinygrad_version": tg_version, "dev": os.environ["DEV"], "iters": args.iters,
                      "loadavg": [load0[0], load1[0]], "rows": rows}))
  return 0


if __name__ == "__main__":
  sys.exit(main())
