#!/usr/bin/env python3
"""Load to first call: hcq against tinygrad 0.14's pickled TinyJit, on the same model, in one run.

What a user waits for at startup: openpilot loads a pickled `TinyJit` (compile3.py writes it: the jit called a few times,
then `pickle.dump(jit)`), then calls it. This script times that, in a fresh process each time, against `hcq run` loading the
same model's bundle (`.hcqb`) and calling it once.

Setup (skipped when already done for the same model file, exporter and seed; everything lives under --work, default
target/bench-load, never committed):
  1. the model (default tools/models/driving_big.py: an openpilot-like vision + policy net, ~25 M fp16 parameters, ~50 MB of
     weights) is exported with tools/export_tinygrad.py (CPU graph, x86-64 objects at --x86-level, default x86-64-v3: at
     x86-64-v2 clang turns the fp16 -> float casts into calls of `__gnu_h2f_ieee`, which tinygrad's own loader cannot link)
     to WORK/MODEL/ and packed with `hcq pack` into WORK/MODEL.hcqb;
  2. the same model is built in tinygrad with DEV=CPU::x86_64,<the bundle's level> and NUM_CPU_THREADS=4 (the exporter's
     settings: both sides run the same machine code), wrapped in TinyJit, called 3 times and pickled to
     WORK/MODEL_tinygrad.pkl, with its inputs and first outputs in WORK/MODEL_io.npz.

Then --rounds rounds, each of them, for each side in an order that alternates between rounds:
  cold: `sync; echo 3 > /proc/sys/vm/drop_caches` (root only; without it the cold rows are left out and the output says so),
        then one fresh process;
  warm: one more fresh process right after (the bundle or pickle and the program files now in the page cache).
The sides:
  hcq:      `hcq run WORK/MODEL.hcqb --iters 0 --check --json`; its JSON gives `load_us` (file read, parse and checks,
            buffers filled, programs loaded) and `first_call_us`; `--check` compares the outputs after the timing.
  tinygrad: a fresh `python` that imports tinygrad and numpy (`import_ms`), then times `pickle.load` of the jit
            (`load_ms`) and its first call with Tensors made from the saved inputs + `Device[...].synchronize()`
            (`first_call_ms`); after the timing it checks the outputs against the saved ones (exact).
Each process's wall time (fork to exit, measured here) and CPU time (user + system, from getrusage of the reaped child) are
reported too: for tinygrad they include the interpreter start and `import tinygrad`, for hcq the binary's start, the device
open and the output check. The CPU time is the figure least disturbed by other work on a shared machine.

Output: one line per measurement, then a table of medians (load, first call, load + first call, process) for each side and
cache state, and the ratio hcq / tinygrad of the medians of load + first call and of the process times; --json adds one
JSON line. The machine's load average is printed before and after: on a shared machine the figures are noisy, which is why
the rounds are interleaved and medians reported. A benchmark, not a test: it fails only when a side fails or its outputs
are wrong.

Usage: python3 tools/bench_load.py [--model tools/models/driving_big.py] [--rounds 5] [--hcq PATH] [--python PATH]
                                   [--work DIR] [--x86-level x86-64-v3] [--no-cold] [--json]
The hcq binary: --hcq, else $HCQ_BIN, else target/release/hcq (built with `cargo build --release -p hcq-cli` when absent).
The tinygrad python: --python, else $TG_VENV/bin/python, else target/tg-export-venv/bin/python (created as
tools/test_export.sh does when absent: tinygrad==0.14.0 and numpy from pip).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MAKE_PICKLE = r"""
import importlib.util, pickle, sys
import numpy as np
model_path, pkl, npz = sys.argv[1:4]
spec = importlib.util.spec_from_file_location("bench_model", model_path)
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
from tinygrad import Tensor, TinyJit
fn, inputs = m.build(0)
def run(*xs):
  out = fn(*xs)
  out = out if isinstance(out, tuple) else (out,)
  return tuple(o.realize() for o in out)
jit = TinyJit(run)
arrays = [x.numpy() for x in inputs]
for _ in range(3): outs = [o.numpy() for o in jit(*[Tensor(a).realize() for a in arrays])]
with open(pkl, "wb") as f: pickle.dump(jit, f)
np.savez(npz, **{f"in{i}": a for i, a in enumerate(arrays)}, **{f"out{i}": o for i, o in enumerate(outs)})
print(f"pickled {pkl}: {len(arrays)} inputs, {len(outs)} outputs")
"""

LOAD_PICKLE = r"""
import time
t0 = time.perf_counter()
import pickle, sys
import numpy as np
from tinygrad import Tensor, Device
t1 = time.perf_counter()
pkl, npz = sys.argv[1:3]
io = np.load(npz)
n_in = sum(1 for k in io.files if k.startswith("in"))
arrays = [io[f"in{i}"] for i in range(n_in)]
t2 = time.perf_counter()
with open(pkl, "rb") as f: jit = pickle.load(f)
t3 = time.perf_counter()
outs = jit(*[Tensor(a) for a in arrays])
Device[Device.DEFAULT].synchronize()
t4 = time.perf_counter()
outs = outs if isinstance(outs, tuple) else (outs,)
ok = len(outs) == sum(1 for k in io.files if k.startswith("out"))
ok = ok and all(np.array_equal(o.numpy(), io[f"out{i}"]) for i, o in enumerate(outs))
import json
print(json.dumps({"import_ms": (t1 - t0) * 1e3, "load_ms": (t3 - t2) * 1e3, "first_call_ms": (t4 - t3) * 1e3,
                  "outputs_ok": bool(ok)}))
"""


def parse_args(argv):
  ap = argparse.ArgumentParser(description="Time load + first call: hcq run of a .hcqb against tinygrad's pickled TinyJit.")
  ap.add_argument("--model", default=os.path.join(ROOT, "tools", "models", "driving_big.py"), help="model file (build())")
  ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
  ap.add_argument("--hcq", default=os.environ.get("HCQ_BIN") or os.path.join(ROOT, "target", "release", "hcq"))
  venv = os.environ.get("TG_VENV") or os.path.join(ROOT, "target", "tg-export-venv")
  ap.add_argument("--python", default=os.path.join(venv, "bin", "python"), help="python of a tinygrad 0.14.0 venv")
  ap.add_argument("--work", default=os.path.join(ROOT, "target", "bench-load"), help="bundle, pickle and stamps go here")
  ap.add_argument("--x86-level", default="x86-64-v3", help="-march of the exported objects (default x86-64-v3)")
  ap.add_argument("--no-cold", action="store_true", help="leave out the cold-cache rows (no drop_caches)")
  ap.add_argument("--json", action="store_true", help="also print the results as one JSON line")
  return ap.parse_args(argv)


def sh(cmd, **kw):
  r = subprocess.run(cmd, capture_output=True, text=True, **kw)
  if r.returncode != 0:
    sys.exit(f"bench_load: `{' '.join(cmd)}` failed (exit {r.returncode}):\n{r.stdout[-2000:]}{r.stderr[-4000:]}")
  return r.stdout


def ensure_tools(a):
  if not os.path.exists(a.hcq):
    if a.hcq != os.path.join(ROOT, "target", "release", "hcq"): sys.exit(f"bench_load: no hcq binary at {a.hcq}")
    print("building hcq (cargo build --release -p hcq-cli) ...", flush=True)
    sh(["cargo", "build", "--release", "-p", "hcq-cli"], cwd=ROOT)
  ok = 'import importlib.metadata as m, numpy; assert m.version("tinygrad") == "0.14.0"'
  if not (os.path.exists(a.python) and subprocess.run([a.python, "-c", ok], capture_output=True).returncode == 0):
    venv = os.path.dirname(os.path.dirname(a.python))
    print(f"creating the tinygrad venv {venv} ...", flush=True)
    sh([sys.executable, "-m", "venv", venv])
    sh([a.python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "tinygrad==0.14.0", "numpy"])


def stamp_of(*paths):
  h = hashlib.sha256()
  for p in paths:
    with open(p, "rb") as f: h.update(f.read())
  return h.hexdigest()


def prepare(a):
  """Export + pack the bundle and pickle the jit, unless the stamp says they are up to date. Returns (hcqb, pkl, npz)."""
  name = os.path.splitext(os.path.basename(a.model))[0]
  os.makedirs(a.work, exist_ok=True)
  bundle, hcqb = os.path.join(a.work, name), os.path.join(a.work, name + ".hcqb")
  pkl, npz = os.path.join(a.work, name + "_tinygrad.pkl"), os.path.join(a.work, name + "_io.npz")
  deps = [a.model, os.path.join(ROOT, "tools", "models", "oplayers.py"), os.path.join(ROOT, "tools", "export_tinygrad.py")]
  stamp = stamp_of(*[p for p in deps if os.path.exists(p)]) + a.x86_level
  stamp_file = os.path.join(a.work, name + ".stamp")
  fresh = os.path.exists(stamp_file) and open(stamp_file).read() == stamp
  if not (fresh and all(os.path.exists(p) for p in (hcqb, pkl, npz))):
    if os.path.exists(stamp_file): os.remove(stamp_file)
    if os.path.exists(bundle): subprocess.run(["rm", "-rf", bundle], check=True)
    t = time.time()
    print(f"exporting {a.model} -> {bundle} ...", flush=True)
    sh([a.python, os.path.join(ROOT, "tools", "export_tinygrad.py"), "--model", a.model, "-o", bundle, "--seed", "0",
        "--x86-level", a.x86_level])
    sh([a.hcq, "pack", bundle, "-o", hcqb])
    level = json.load(open(os.path.join(bundle, "manifest.json")))["toolchains"]["x86_64"]["level"]
    print(f"pickling the TinyJit (DEV=CPU::x86_64,{level}) -> {pkl} ...", flush=True)
    sh([a.python, "-c", MAKE_PICKLE, a.model, pkl, npz], env=tg_env(level))
    with open(os.path.join(a.work, name + ".level"), "w") as f: f.write(level)
    with open(stamp_file, "w") as f: f.write(stamp)
    print(f"prepared in {time.time() - t:.0f} s", flush=True)
  level = open(os.path.join(a.work, name + ".level")).read()
  return hcqb, pkl, npz, level


def tg_env(level):
  env = {k: v for k, v in os.environ.items() if k not in ("DEBUG", "BEAM", "JITBEAM", "HCQ2", "LD_PRELOAD")}
  env.update(DEV=f"CPU::x86_64,{level}", NUM_CPU_THREADS="4")
  return env


def drop_caches():
  subprocess.run(["sync"], check=True)
  with open("/proc/sys/vm/drop_caches", "w") as f: f.write("3\n")


def can_drop():
  try:
    drop_caches()
    return True
  except OSError:
    return False


def timed(cmd, env=None):
  """Run cmd; its last stdout line as JSON, its wall time and its CPU time (user + system: the growth of
  getrusage(RUSAGE_CHILDREN), the one child being run and reaped in between), both in ms."""
  ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
  t = time.perf_counter()
  r = subprocess.run(cmd, capture_output=True, text=True, env=env)
  wall = (time.perf_counter() - t) * 1e3
  ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
  cpu = (ru1.ru_utime - ru0.ru_utime + ru1.ru_stime - ru0.ru_stime) * 1e3
  if r.returncode != 0:
    sys.exit(f"bench_load: `{' '.join(cmd[:3])} ...` failed (exit {r.returncode}):\n{r.stdout[-2000:]}{r.stderr[-4000:]}")
  return json.loads(r.stdout.strip().splitlines()[-1]), wall, cpu


def run_hcq(a, hcqb):
  j, wall, cpu = timed([a.hcq, "run", hcqb, "--iters", "0", "--check", "--json"])
  if j.get("outputs_ok") is not True: sys.exit(f"bench_load: hcq's outputs do not match the bundle: {j}")
  if "load_us" not in j: sys.exit("bench_load: this hcq prints no load_us in its --json line (too old)")
  return {"load_ms": j["load_us"] / 1e3, "first_call_ms": j["first_call_us"] / 1e3, "process_ms": wall, "cpu_ms": cpu}


def run_tg(a, pkl, npz, level):
  j, wall, cpu = timed([a.python, "-c", LOAD_PICKLE, pkl, npz], env=tg_env(level))
  if not j["outputs_ok"]: sys.exit("bench_load: the unpickled TinyJit's outputs differ from the ones saved when pickling")
  return {"load_ms": j["load_ms"], "first_call_ms": j["first_call_ms"], "import_ms": j["import_ms"], "process_ms": wall,
          "cpu_ms": cpu}


def main(argv=None):
  a = parse_args(argv)
  ensure_tools(a)
  hcqb, pkl, npz, level = prepare(a)
  cold = not a.no_cold and can_drop()
  print(f"hcq {a.hcq}; bundle {hcqb} ({os.path.getsize(hcqb) / 1e6:.1f} MB); tinygrad pickle {pkl} "
        f"({os.path.getsize(pkl) / 1e6:.1f} MB), DEV=CPU::x86_64,{level}; {a.rounds} rounds; cold cache: "
        f"{'drop_caches before each cold run' if cold else 'not measured (--no-cold, or drop_caches not writable)'}")
  load0 = os.getloadavg()
  print(f"load average before: {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f} ({os.cpu_count()} CPUs)", flush=True)
  sides = {"hcq": lambda: run_hcq(a, hcqb), "tinygrad": lambda: run_tg(a, pkl, npz, level)}
  caches = ["cold", "warm"] if cold else ["warm"]
  rows = {(s, c): [] for s in sides for c in caches}
  for r in range(a.rounds):
    order = list(sides) if r % 2 == 0 else list(sides)[::-1]
    for s in order:
      if not cold: sides[s]()  # warm the page cache for this side
      for c in caches:
        if c == "cold": drop_caches()
        m = sides[s]()
        m["total_ms"] = m["load_ms"] + m["first_call_ms"]
        rows[(s, c)].append(m)
        extra = f" import {m['import_ms']:8.1f}" if "import_ms" in m else ""
        print(f"round {r} {s:8} {c}: load {m['load_ms']:8.1f} ms  first call {m['first_call_ms']:8.1f} ms  "
              f"load+first {m['total_ms']:8.1f} ms  process {m['process_ms']:8.1f} ms (CPU {m['cpu_ms']:8.1f}){extra}", flush=True)
  load1 = os.getloadavg()
  med = {k: {f: statistics.median(m[f] for m in v) for f in v[0]} for k, v in rows.items()}
  print(f"\nmedians of {a.rounds} rounds (ms)          load   first call   load+first    process  process CPU")
  for (s, c), m in med.items():
    print(f"  {s:8} {c:4} {'':18} {m['load_ms']:9.1f} {m['first_call_ms']:12.1f} {m['total_ms']:12.1f} {m['process_ms']:10.1f}"
          f" {m['cpu_ms']:12.1f}")
  ratios = {}
  for c in caches:
    h, t = med[("hcq", c)], med[("tinygrad", c)]
    ratios[c] = {"load_first": h["total_ms"] / t["total_ms"], "process": h["process_ms"] / t["process_ms"],
                 "process_cpu": h["cpu_ms"] / t["cpu_ms"]}
    print(f"  hcq / tinygrad, {c}: load+first {ratios[c]['load_first']:.4f} ({t['total_ms'] / h['total_ms']:.0f}x faster), "
          f"process {ratios[c]['process']:.4f}, process CPU {ratios[c]['process_cpu']:.4f}")
  print(f"load average after: {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f}")
  if a.json:
    print(json.dumps({"model": os.path.basename(a.model), "hcqb_bytes": os.path.getsize(hcqb),
                      "pickle_bytes": os.path.getsize(pkl), "rounds": a.rounds, "loadavg": [load0, load1],
                      "medians_ms": {f"{s}_{c}": m for (s, c), m in med.items()}, "ratios": ratios}))


if __name__ == "__main__":
  main()
