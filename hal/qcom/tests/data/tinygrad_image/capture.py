"""Capture one tinygrad image dispatch (tinygrad 0.14, DEV=QCOM:IR3 FLOAT16=1 IMAGE=1) for hal/qcom/tests/image_stream.rs.

Run under the virtual KGSL node, from the repository root:

  cargo build -p hcq-vkgsl && HCQ_VKGSL_LIB=target/debug/libhcq_vkgsl.so \
    cargo run -p hcq-cli -- vkgsl -- /work/wt/venv-tg/bin/python hal/qcom/tests/data/tinygrad_image/capture.py

tinygrad's own QCOMDevice opens /dev/kgsl-3d0 (the virtual A630), compiles a small image matmul with Mesa's ir3 (tinymesa)
and dispatches it. `QCOMComputeQueue.exec` is wrapped: for the first dispatch whose program uses textures or IBOs it records
the PM4 words `exec` appended, the kernarg block `QCOMArgsState` wrote, the device addresses those words point at, and the
program. Written next to this script:

- `<name>.a630.bin`: the IR3 blob as tinygrad's compiler returned it (host pointers in the two Mesa structs zeroed, as
  tools/adreno_a630.py writes bundle objects);
- `<name>.adreno.json`: the `programs[].adreno` object of IMAGE-SCHEMA.md for it (tools/adreno_a630.py builds it from the
  same tinygrad objects: regs decoded from tinygrad's words, `descriptors.images` from tinygrad's kernarg block);
- `dispatch.json`: tinygrad's words of that dispatch, its kernarg block, grid, and the addresses (kernarg block, code,
  stack, border colour, flush dummy, image buffers) so that the test can tell addresses from values.

Nothing here is hcq's: every word and byte is tinygrad's. The dispatch may fault on a simulator without image support; the
capture is taken before the submission and the script does not need the result.
"""
import json, os, pathlib, sys
os.environ.setdefault("DEV", "QCOM:IR3")
os.environ.setdefault("FLOAT16", "1")
os.environ.setdefault("IMAGE", "1")
here = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(here.parents[4] / "tools"))

from tinygrad import Tensor, Device, dtypes  # noqa: E402
from tinygrad.runtime import ops_qcom  # noqa: E402
import adreno_a630  # noqa: E402

libs = {}
orig_prog_init = ops_qcom.QCOMProgram.__init__
def prog_init(self, dev, obj):
  libs[id(self)] = obj
  orig_prog_init(self, dev, obj)
ops_qcom.QCOMProgram.__init__ = prog_init

every = []
orig_exec = ops_qcom.QCOMComputeQueue.exec
def exec_(self, prg, args_state, global_size, local_size):
  start = len(self._q)
  out = orig_exec(self, prg, args_state, global_size, local_size)
  if prg.tex_cnt or prg.ibo_cnt:
    va = lambda b: int(b.va_addr)
    block = bytes(args_state.buf.cpu_view().view(size=prg.kernargs_alloc_size)[:])
    every.append(dict(prg=prg, words=[int(w) for w in self._q[start:]], block=block, bufs=[va(b) for b in args_state.bufs],
                    vals=list(args_state.vals), kernargs=va(args_state.buf), code=va(prg.lib_gpu), stack=va(prg.dev._stack),
                    border=va(prg.dev.border_color_buf), dummy=int(prg.dev.dummy_addr), global_size=list(global_size),
                    local_size=list(local_size)))
    # the simulator may not run images: the dispatch becomes one CP_NOP of the same length, so the call still signals and
    # the next kernels are encoded too (their results are not used)
    n = len(self._q) - start
    self._q[start:] = [ops_qcom.pkt7_hdr(ops_qcom.mesa.CP_NOP, n - 1)] + [0] * (n - 1)
  return out
ops_qcom.QCOMComputeQueue.exec = exec_

Tensor.manual_seed(0)
try:
  x = Tensor.randn(4, 64, dtype=dtypes.half).realize()
  w = Tensor.randn(64, 32, dtype=dtypes.half).realize()
  (x @ w).relu().realize().numpy()
except Exception as e: print(f"the dispatch did not complete ({type(e).__name__}: {e}); the capture was taken before it", file=sys.stderr)
if not every: sys.exit("no dispatch used textures or IBOs")
print("image dispatches:", [(c["prg"].name, c["prg"].tex_cnt, c["prg"].ibo_cnt, c["prg"].samp_cnt) for c in every], file=sys.stderr)
# the first of those that read the most textures (the matmul: two textures, two samplers, one IBO)
c = max(every, key=lambda c: (c["prg"].tex_cnt + c["prg"].samp_cnt, bool(c["prg"].ibo_cnt)))
prg = c["prg"]
exporter = adreno_a630.AdrenoExporter(check_versions=False)
entry, blob = exporter.entry_from_dispatch(prg, libs[id(prg)], c["words"], c["block"], c["bufs"], c["vals"], c["local_size"],
                                          where=prg.name)
stem = entry["function_name"]
(here / f"{stem}.a630.bin").write_bytes(blob)
(here / f"{stem}.adreno.json").write_text(json.dumps(entry, indent=1) + "\n")
(here / "dispatch.json").write_text(json.dumps({
  "program": stem, "produced_by": "hal/qcom/tests/data/tinygrad_image/capture.py: tinygrad 0.14 QCOMComputeQueue.exec on "
  f"DEV={os.environ['DEV']} FLOAT16={os.environ['FLOAT16']} IMAGE={os.environ['IMAGE']}",
  "global_size": c["global_size"], "local_size": c["local_size"], "vals": c["vals"],
  "addrs": {"kernargs": c["kernargs"], "code": c["code"], "stack": c["stack"], "border_color": c["border"], "dummy": c["dummy"],
            "bufs": c["bufs"]},
  "kernarg_block": c["block"].hex(), "words": c["words"]}, indent=1) + "\n")
sys.stdout.flush()
print(f"captured {stem}: {len(c['words'])} words, {prg.tex_cnt} textures, {prg.ibo_cnt} IBOs, {prg.samp_cnt} samplers")
os._exit(0)  # a faulted context: tinygrad's atexit synchronize would only report the fault again
