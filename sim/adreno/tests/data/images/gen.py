"""Generate image_dispatches.json: tinygrad 0.14's own QCOM runtime (unmodified, DEV=QCOM:IR3 under
libhcq_vkgsl.so, FLOAT16=1 IMAGE=1 NOLOCALS=1) runs a small conv2d + relu and a kernel that ir3 spills to private memory;
for the last dispatch of each program that binds textures, IBOs or samplers or has pvtmem > 0 this records the packets tinygrad's `QCOMComputeQueue.exec` emitted (resolved
at submit), the GPU objects the dispatch reads (kernarg block with descriptors, shader, images and
buffers, border color table, private-memory stack, the flush event's dummy page) as they were before
it ran, and the bytes of the objects it writes after it ran. Both final results are checked against
numpy before anything is written, so the recorded outputs are checked results.

  LD_PRELOAD=target/release/libhcq_vkgsl.so DEV=QCOM:IR3 FLOAT16=1 IMAGE=1 NOLOCALS=1 \\
    /path/to/venv-with-tinygrad-0.14-and-tinymesa/bin/python sim/adreno/tests/data/images/gen.py

Objects are stored as {addr, size, hex} with trailing zero bytes cut (the test maps `size` bytes and
fills the rest with zeros).
"""
import ctypes, json, os, pathlib, sys
import numpy as np
from tinygrad import Tensor, Device
from tinygrad.runtime import ops_qcom

assert Device.DEFAULT == "QCOM", "run under libhcq_vkgsl.so with DEV=QCOM:IR3"
records, pending = [], {}

def snap(buf):
  data = ctypes.string_at(int(buf.va_addr), buf.size)
  return {"addr": int(buf.va_addr), "size": buf.size, "hex": data.rstrip(b"\0").hex()}

orig_exec, orig_submit = ops_qcom.QCOMComputeQueue.exec, ops_qcom.QCOMComputeQueue._submit

def exec_hook(self, prg, args_state, global_size, local_size):
  start = len(self._q)
  r = orig_exec(self, prg, args_state, global_size, local_size)
  if prg.tex_cnt or prg.ibo_cnt or prg.samp_cnt or prg.pvtmem:
    pending.setdefault(id(self), []).append((start, len(self._q), prg, args_state))
  return r

def submit_hook(self, dev):
  # the virtual device runs each submission at its ioctl: everything submitted before is done
  recs = []
  for start, end, prg, st in pending.pop(id(self), []):
    objs = [st.buf, prg.lib_gpu, dev.border_color_buf, dev._stack, *st.bufs]
    seen, ins = set(), []
    for b in objs:
      if int(b.va_addr) not in seen: seen.add(int(b.va_addr)); ins.append(snap(b))
    dummy = int(dev.dummy_addr)
    ins.append({"addr": dummy, "size": 0x1000, "hex": ctypes.string_at(dummy, 0x1000).rstrip(b"\0").hex()})
    recs.append({"name": prg.name, "words": [w & 0xffffffff for w in self._q[start:end]], "objects": ins,
                 "outputs": [i for i, _ in enumerate(st.bufs)], "tex_cnt": prg.tex_cnt, "ibo_cnt": prg.ibo_cnt,
                 "samp_cnt": prg.samp_cnt, "pvtmem": prg.pvtmem, "_bufs": st.bufs})
  orig_submit(self, dev)
  if recs:
    dev.synchronize()
    for rec in recs:
      rec["outputs"] = [snap(b) for b in rec.pop("_bufs")]
      records.append(rec)

ops_qcom.QCOMComputeQueue.exec, ops_qcom.QCOMComputeQueue._submit = exec_hook, submit_hook

rng = np.random.default_rng(0)
x = rng.standard_normal((1, 8, 4, 4)).astype(np.float32)
w = rng.standard_normal((8, 8, 3, 3)).astype(np.float32)
out = Tensor(x).conv2d(Tensor(w), padding=1).relu().numpy()
# numpy reference: direct convolution
ref = np.zeros((1, 8, 4, 4), np.float32)
xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
for o in range(8):
  for i in range(4):
    for j in range(4): ref[0, o, i, j] = (xp[0, :, i:i+3, j:j+3] * w[o]).sum()
ref = np.maximum(ref, 0)
err = np.abs(out - ref).max()
assert err < 0.05, f"the virtual A630's result differs from numpy by {err}"
# a kernel ir3 spills to private memory: 200 loads live before a balanced sum
K, xs = 200, rng.standard_normal(264).astype(np.float32)
xt = Tensor(xs)
terms = [(xt[k:k+64] * (k % 7 + 1)).exp2() * xt[(k*37) % K:(k*37) % K + 64] for k in range(K)]
want = [np.exp2(xs[k:k+64] * (k % 7 + 1)) * xs[(k*37) % K:(k*37) % K + 64] for k in range(K)]
while len(terms) > 1:
  terms = [terms[i] + terms[i+1] if i + 1 < len(terms) else terms[i] for i in range(0, len(terms), 2)]
  want = [want[i] + want[i+1] if i + 1 < len(want) else want[i] for i in range(0, len(want), 2)]
spill_err = np.abs(terms[0].numpy() - want[0]).max() / np.abs(want[0]).max()
assert spill_err < 1e-5, f"the spilling kernel differs from numpy by {spill_err} (relative)"
assert records and any(r["pvtmem"] > 0 for r in records), "no image or spilling dispatch was recorded"
# tinygrad times local sizes on scratch buffers first: keep each program's last dispatch (the real one)
last = {}
for r in records: last[r["name"]] = r
records = [r for r in records if last[r["name"]] is r]
assert all(any(o["hex"] for o in r["outputs"]) for r in records), "a recorded dispatch wrote only zeros"
path = pathlib.Path(__file__).with_name("image_dispatches.json")
path.write_text(json.dumps({"produced_by": "sim/adreno/tests/data/images/gen.py", "max_abs_error_vs_numpy": float(err),
                            "dispatches": records}, indent=0) + "\n")
print(f"{len(records)} dispatches, max |error| vs numpy {err:.4g}, {path.stat().st_size} bytes")
