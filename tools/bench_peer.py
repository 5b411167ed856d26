#!/usr/bin/env python3
"""tinygrad 0.14 (TinyJit, CPU) against hcq on the same models, in one run.

For each model, this script builds it in tinygrad, captures it with TinyJit, times the JIT call (median and min of
--iters calls after --warmup calls, time.perf_counter around `jit(*inputs)` plus a device synchronize), checks the
JIT's output against the bundle's expected bytes (so both sides compute the same thing), then runs
`hcq run examples/<model> --iters N --check --json` and reads its JSON line. It also times, on the same bundles, a plain Python ctypes loop over the bundle's kernels (tinygrad's jit_loader
loads each object; one ctypes call per launch, core_id tids one after another) and the C floor (the objects linked into a
generated C program that calls each launch through a function pointer; needs $CC and objcopy); both check their outputs
against the bundle. It prints one table:

  model, kernels, tinygrad / Python loop / C floor / hcq call us (median, min), hcq / C floor and hcq / Python loop
  (ratios of the medians), tinygrad / hcq, hcq per-kernel us (median call / kernels).

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
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = ("chain100", "mlp", "wide", "matmul")
# bundles that are benchmark inputs, not user samples (kept out of examples/, which the board image embeds)
BENCH_BUNDLES = os.path.join(ROOT, "benches", "bundles")
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


def bundle_dir(examples, name):
  """The bundle directory of model `name`: examples/<name>, else benches/bundles/<name>."""
  d = os.path.join(examples, name)
  return d if os.path.isdir(d) else os.path.join(BENCH_BUNDLES, name)


def manifest(examples, name):
  with open(os.path.join(bundle_dir(examples, name), "manifest.json")) as f: return json.load(f)


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
    with open(os.path.join(bundle_dir(examples, name), m["buffers"][inp["buffer"]]["file"]), "rb") as f:
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
    with open(os.path.join(bundle_dir(examples, name), o["file"]), "rb") as f:
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


def bundle_plan(examples, name):
  """The bundle's buffers (nbytes, initial bytes or None), programs (symbol, x86-64 object path) and launches, from its
  manifest: kernels as (program, [(buffer, offset)], vals, calls, core_id slot or None), copies as ('copy', dst, src, n)."""
  m = manifest(examples, name)
  d = bundle_dir(examples, name)
  bufs = []
  for b in m["buffers"]:
    init = None
    if b.get("file"):
      with open(os.path.join(d, b["file"]), "rb") as f: init = f.read()
    bufs.append((b["nbytes"], init))
  progs = [(p["symbol"], os.path.join(d, p["objects"]["x86_64"]["file"])) for p in m["programs"]]
  launches = []
  for l in m["launches"]:
    if l["kind"] == "copy":
      launches.append(("copy", (l["dst"]["buffer"], l["dst"]["offset"]), (l["src"]["buffer"], l["src"]["offset"]), l["dst"]["nbytes"]))
      continue
    slot = l.get("core_id_arg")
    args = [(a["buffer"], a["offset"]) for a in l["args"]]
    launches.append(("kernel", l["program"], args, list(l["vals"]), l["global_size"][0] if slot is not None else 1, slot))
  outs = []
  for o in m["outputs"]:
    with open(os.path.join(d, o["file"]), "rb") as f: outs.append((o["buffer"], o["offset"], o["nbytes"], o["dtype"], f.read()))
  return bufs, progs, launches, outs


def check_outputs(what, name, outs, read):
  """Compare outputs read with read(buffer, offset, nbytes) with the bundle's expected bytes (the format's tolerance)."""
  import numpy as np
  for buf, off, n, dtype, exp in outs:
    g = np.frombuffer(read(buf, off, n), dtype=dtype).astype(np.float64)
    e = np.frombuffer(exp, dtype=dtype).astype(np.float64)
    if not np.all(np.abs(g - e) <= 1e-5 + 1e-4 * np.abs(e)):
      raise SystemExit(f"bench_peer: the {what} computed a different {name} output (max abs diff {np.abs(g - e).max():.3g})")


def time_python_loop(name, args):
  """A plain Python ctypes loop over the bundle's kernels: tinygrad's jit_loader relocates each object into RWX memory (as
  tinygrad's CPUProgram does), each launch is a ctypes function called with its integer arguments, core_id tids one
  after another. Times one pass over the launch list."""
  import ctypes, ctypes.util, mmap
  from tinygrad.runtime.support.elf import jit_loader
  bufs, progs, launches, outs = bundle_plan(args.examples, name)
  libs = [ctypes.CDLL(ctypes.util.find_library(n) or n) for n in ("m", "gcc_s")]
  keep = []

  def addr_of(mm):
    c = ctypes.c_char.from_buffer(mm)
    keep.append(c)
    return ctypes.addressof(c)
  mems = []
  for nbytes, init in bufs:
    mm = mmap.mmap(-1, max(nbytes, 1))
    if init: mm[:len(init)] = init
    mems.append((mm, addr_of(mm)))
  fns = []
  for _, path in progs:
    with open(path, "rb") as f: obj = f.read()
    mm = mmap.mmap(-1, len(obj) + 65536, mmap.MAP_ANON | mmap.MAP_PRIVATE, mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    base = addr_of(mm)
    img = jit_loader(obj, base=base, link_libs=libs)
    mm[:len(img)] = img
    fns.append(base)
  calls = []
  for l in launches:
    if l[0] == "copy":
      _, (db, do), (sb, so), n = l
      calls.append((ctypes.memmove, (mems[db][1] + do, mems[sb][1] + so, n)))
      continue
    _, prog, largs, vals, n, slot = l
    a = [mems[b][1] + o for b, o in largs] + [v or 0 for v in vals]
    f = ctypes.CFUNCTYPE(None, *([ctypes.c_uint64] * len(a)))(fns[prog])
    keep.append(f)
    for tid in range(n):
      if slot is not None: a[slot] = tid
      calls.append((f, tuple(a)))

  def run():
    for f, a in calls: f(*a)
  for _ in range(args.warmup): run()
  check_outputs("Python ctypes loop", name, outs, lambda b, o, n: bytes(mems[b][0][o:o + n]))
  ts = []
  for _ in range(args.iters):
    t0 = time.perf_counter()
    run()
    ts.append(time.perf_counter() - t0)
  return {"median_us": median(ts) * 1e6, "min_us": min(ts) * 1e6, "calls": len(calls)}


def time_c_floor(name, args, workdir):
  """The C floor: the bundle's objects linked into a C program (symbols renamed with objcopy, as several programs may
  share a name) that calls every launch through a function pointer on one thread, core_id tids one after another —
  the sum of the kernels called directly. Times one pass with clock_gettime."""
  bufs, progs, launches, outs = bundle_plan(args.examples, name)
  cc = os.environ.get("CC", "clang")
  objs = []
  for i, (sym, path) in enumerate(progs):
    o = os.path.join(workdir, f"{name}_p{i}.o")
    subprocess.run(["objcopy", f"--redefine-sym={sym}=hcqfloor_p{i}", path, o], check=True)
    objs.append(o)
  lines = ["#include <stdint.h>", "#include <stdio.h>", "#include <stdlib.h>", "#include <string.h>", "#include <time.h>"]
  lines += [f"extern void hcqfloor_p{i}(void);" for i in range(len(progs))]
  lines.append(f"static void (*volatile fn[{len(progs)}])(void) = {{ {', '.join(f'hcqfloor_p{i}' for i in range(len(progs)))} }};")
  lines.append(f"static uint8_t *buf[{len(bufs)}];")
  lines.append("static void run(void) {")
  for l in launches:
    if l[0] == "copy":
      _, (db, do), (sb, so), n = l
      lines.append(f"  memmove(buf[{db}] + {do}, buf[{sb}] + {so}, {n});")
      continue
    _, prog, largs, vals, n, slot = l
    a = [f"(uint64_t)(buf[{b}] + {o})" for b, o in largs] + [f"(uint64_t){v or 0}" for v in vals]
    ty = f"void (*)({', '.join(['uint64_t'] * len(a)) or 'void'})"
    if slot is None:
      lines.append(f"  (({ty})fn[{prog}])({', '.join(a)});")
    else:
      a[slot] = "t"
      lines.append(f"  for (uint64_t t = 0; t < {n}; t++) (({ty})fn[{prog}])({', '.join(a)});")
  lines.append("}")
  lines.append("static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }")
  lines.append("int main(int argc, char **argv) {")
  lines.append("  int iters = atoi(argv[1]), warmup = atoi(argv[2]);")
  for i, (nbytes, init) in enumerate(bufs):
    size = (max(nbytes, 1) + 4095) // 4096 * 4096
    lines.append(f"  buf[{i}] = aligned_alloc(4096, {size}); memset(buf[{i}], 0, {size});")
    if init:
      lines.append(f"  {{ FILE *f = fopen(argv[{3 + i}], \"rb\"); if (!f || fread(buf[{i}], 1, {len(init)}, f) != {len(init)}) return 2; fclose(f); }}")
  lines.append("  for (int i = 0; i < warmup; i++) run();")
  lines.append("  double *ts = malloc(sizeof(double) * iters);")
  lines.append("  for (int i = 0; i < iters; i++) { struct timespec a, b; clock_gettime(CLOCK_MONOTONIC, &a); run(); clock_gettime(CLOCK_MONOTONIC, &b);")
  lines.append("    ts[i] = (b.tv_sec - a.tv_sec) * 1e6 + (b.tv_nsec - a.tv_nsec) / 1e3; }")
  lines.append("  qsort(ts, iters, sizeof(double), cmp);")
  lines.append("  double med = iters % 2 ? ts[iters / 2] : (ts[iters / 2 - 1] + ts[iters / 2]) / 2;")
  lines.append("  printf(\"%.4f %.4f\\n\", med, ts[0]);")
  for b, o, n, _, _ in outs:
    lines.append(f"  fwrite(buf[{b}] + {o}, 1, {n}, stdout);")
  lines.append("  return 0;")
  lines.append("}")
  src = os.path.join(workdir, f"{name}_floor.c")
  with open(src, "w") as f: f.write("\n".join(lines) + "\n")
  exe = os.path.join(workdir, f"{name}_floor")
  subprocess.run([cc, "-O2", "-o", exe, src] + objs + ["-lm"], check=True)
  files = [os.path.join(bundle_dir(args.examples, name), b["file"]) if b.get("file") else "-" for b in manifest(args.examples, name)["buffers"]]
  p = subprocess.run([exe, str(args.iters), str(args.warmup)] + files, capture_output=True, check=True)
  head, _, rest = p.stdout.partition(b"\n")
  med, mn = (float(x) for x in head.split())
  at = 0
  got = {}
  for b, o, n, _, _ in outs:
    got[(b, o)] = rest[at:at + n]
    at += n
  check_outputs("C floor", name, outs, lambda b, o, n: got[(b, o)])
  return {"median_us": med, "min_us": mn}


def time_hcq(name, args, one_core=False):
  """hcq's call on the bundle; `one_core`: pinned to one CPU (taskset), so the device has one core and runs core_id
  tids one by one, like the loop and the floor."""
  cmd = [args.hcq, "run", bundle_dir(args.examples, name), "--iters", str(args.iters), "--check", "--json"]
  if one_core: cmd = ["taskset", "-c", "0"] + cmd
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

  import tempfile
  load0 = os.getloadavg()
  rows = []
  with tempfile.TemporaryDirectory(prefix="bench_peer_") as work:
    for name in args.models:
      tg = time_tinygrad(name, args)
      loop = time_python_loop(name, args)
      floor = time_c_floor(name, args, work)
      hq = time_hcq(name, args)
      # core_id fan-out: the same call with the process pinned to one CPU (the device then has one core)
      core_id = any(p.get("core_id_arg") is not None for p in manifest(args.examples, name)["programs"])
      hq1 = time_hcq(name, args, one_core=True) if core_id and (os.cpu_count() or 1) > 1 and shutil.which("taskset") else None
      rows.append({"model": name, "tinygrad": tg, "python_loop": loop, "c_floor": floor, "hcq": hq, "hcq_one_core": hq1,
                   "ratio": tg["median_us"] / hq["median_us"], "hcq_vs_floor": hq["median_us"] / floor["median_us"],
                   "hcq_vs_loop": hq["median_us"] / loop["median_us"]})
  load1 = os.getloadavg()

  print(f"tinygrad {tg_version} DEV={os.environ['DEV']} NUM_CPU_THREADS={args.threads} vs {args.hcq}; "
        f"{args.iters} timed calls each (after {args.warmup} warm-up calls); "
        f"{platform.machine()}, {os.cpu_count()} CPUs, load average {load0[0]:.2f} -> {load1[0]:.2f}")
  print("medians (min) in us; python loop = a plain ctypes loop over the bundle's kernels, C floor = the same kernels called"
        " through function pointers from C; both run core_id tids one by one on one thread")
  hdr = ("model", "kernels", "tinygrad", "python loop", "C floor", "hcq", "hcq/C", "hcq/loop", "tg/hcq", "hcq us/kernel")
  print(f"{hdr[0]:<10} {hdr[1]:>7} {hdr[2]:>20} {hdr[3]:>18} {hdr[4]:>16} {hdr[5]:>16} {hdr[6]:>6} {hdr[7]:>8} {hdr[8]:>7} {hdr[9]:>13}")
  for r in rows:
    tg, lp, fl, hq = r["tinygrad"], r["python_loop"], r["c_floor"], r["hcq"]
    print(f"{r['model']:<10} {hq['kernels']:>7} {tg['median_us']:>9.1f} ({tg['min_us']:>8.1f}) "
          f"{lp['median_us']:>8.2f} ({lp['min_us']:>7.2f}) {fl['median_us']:>7.2f} ({fl['min_us']:>6.2f}) "
          f"{hq['median_us']:>7.2f} ({hq['min_us']:>6.2f}) {r['hcq_vs_floor']:>5.2f}x {r['hcq_vs_loop']:>7.2f}x "
          f"{r['ratio']:>6.0f}x {hq['median_us'] / max(hq['kernels'], 1):>13.4f}")
    if r["hcq_one_core"]:
      one = r["hcq_one_core"]
      print(f"  {r['model']}: core_id fan-out: hcq on 1 core {one['median_us']:.2f} us ({one['min_us']:.2f}), "
            f"on {os.cpu_count()} cores {hq['median_us']:.2f} us: {one['median_us'] / hq['median_us']:.2f}x")
    if tg["kernels"] != hq["kernels"]:
      print(f"  note: {r['model']}: tinygrad ran {tg['kernels']} kernels, the bundle has {hq['kernels']}")
  if args.json:
    print(json.dumps({"tinygrad_version": tg_version, "dev": os.environ["DEV"], "iters": args.iters,
                      "loadavg": [load0[0], load1[0]], "rows": rows}))
  return 0


if __name__ == "__main__":
  sys.exit(main())
