#!/usr/bin/env python3
"""tinygrad's host enqueue per call of a model's TinyJit on QCOM (or AMD): the peer of hcq's host share.

Run under the virtual A630 with the shader core off (the command processor still runs every packet; kernels compute nothing),
with openpilot's flags, so that what is timed is tinygrad's own Python work per call:

  HCQ_VKGSL_SHADER=off FLOAT16=1 IMAGE=1 NOLOCALS=1 JIT_BATCH_SIZE=0 \
    hcq vkgsl -- python tools/bench_enqueue.py --model tools/models/driving.py [--calls 200]

The model (tools/models/M.py: build(seed) -> fn, example inputs) is wrapped in TinyJit and called 3 times (tinygrad captures
its HCQ graph on the second call), then --calls more times after --warmup. Each call is timed from `jit(*inputs)` to its
return: input checks, the graph's variable and kernel-argument updates, the command queues' patching and `GPU_COMMAND`; the
GPU's work is not waited for inside the timing (`synchronize()` follows, untimed). The inputs are the same realized Tensors
each call, as openpilot passes its frame buffers. Prints the median and the minimum.

hcq's side in the same conditions: `HCQ_HOST_SHARE_BUNDLE=BUNDLE cargo bench -p hcq-sim-adreno --bench qcom -- nothing`
on the bundle exported from the same model and flags (`--qcom-jit`).

AMD: the same under the virtual gfx1100 (`DEV=AMD:LLVM hcq vkgsl -- python tools/bench_enqueue.py --model
tools/models/chain100.py`, libLLVM 18+); each call is then tinygrad's graph update and its bound compute queue's submit (the
`INDIRECT_BUFFER` packet into the KFD ring and the doorbell). hcq's side: `cargo bench -p hcq-sim-amd --bench host_share`.
"""
import argparse
import importlib.util
import os
import statistics
import sys
import time


def main():
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--model", required=True, help="tools/models/M.py")
  ap.add_argument("--calls", type=int, default=200)
  ap.add_argument("--warmup", type=int, default=20)
  ap.add_argument("--seed", type=int, default=0)
  args = ap.parse_args()
  if os.environ.get("HCQ_VKGSL_SHADER") != "off":
    print("note: HCQ_VKGSL_SHADER=off is not set: each call's kernels run on the ir3 interpreter (slow, and the figure is "
          "the same: the GPU's work is not timed)", file=sys.stderr)
  spec = importlib.util.spec_from_file_location("model", args.model)
  mod = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(mod)
  from tinygrad import Device, TinyJit
  if Device.DEFAULT not in ("QCOM", "AMD"):
    sys.exit(f"bench_enqueue: the default device is {Device.DEFAULT}, not QCOM or AMD: run it under `hcq vkgsl --` (or on a "
             "comma device, or DEV=AMD on an AMD GPU)")
  fn, example = mod.build(args.seed)
  jit = TinyJit(fn)
  dev = Device[Device.DEFAULT]
  for _ in range(3 + args.warmup):
    jit(*example)
    dev.synchronize()
  times = []
  for _ in range(args.calls):
    t0 = time.perf_counter_ns()
    jit(*example)
    t1 = time.perf_counter_ns()
    dev.synchronize()
    times.append((t1 - t0) / 1e3)
  med = statistics.median(times)
  flags = " ".join(f"{k}={os.environ[k]}" for k in ("FLOAT16", "IMAGE", "NOLOCALS", "JIT_BATCH_SIZE") if k in os.environ)
  print(f"tinygrad enqueue per call ({getattr(mod, 'NAME', args.model)}, {flags or 'no flags'}, median of "
        f"{args.calls}): {med:.1f} us (min {min(times):.1f} us)")


if __name__ == "__main__":
  main()
