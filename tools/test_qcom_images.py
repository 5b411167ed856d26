#!/usr/bin/env python3
"""IMAGE=1 capture up to writing and loading the bundle, before any device executes image kernels.

Neither the virtual A630 (libhcq_vkgsl.so) nor hcq's QCOM device runs texture/IBO kernels yet (branches vimg, qimg), so
`export_tinygrad.py --qcom-jit` with IMAGE=1 cannot run the model. This checks everything of that path that needs no execution:
the kernels tinygrad schedules for tools/models/qcom_small.py with openpilot's flags (FLOAT16=1 IMAGE=1 NOLOCALS=1, scheduled on
tinygrad's NULL device, which takes IMAGE=1) are compiled by tinygrad's IR3 renderer for `a630,IMAGE_PITCH_ALIGNMENT=64` (what
QCOMDevice uses under IMAGE=1); tinygrad's own QCOMProgram, QCOMArgsState and QCOMComputeQueue run on the host-memory stand-in of
tools/adreno_a630.py; the --qcom-jit exporter's program/launch passes (tools/qcom_capture.py) record them, which checks the kernarg
block rebuilt from the metadata (descriptors included) against tinygrad's byte for byte; the descriptor words must be tinygrad's
(format FMT6_16_16_16_16_FLOAT, width/height, pitch, address dwords 0), and the bundle written with image buffers must load in hcq
(`hcq inspect` lists the images).

  python tools/test_qcom_images.py HCQ_BIN        (prints PASS/FAIL lines; exit status 1 on a failure)
"""
import json, os, subprocess, sys, tempfile

os.environ.update(DEV="NULL", IMAGE="1", FLOAT16="1", NOLOCALS="1", CCACHE="0", PARALLEL="0", JIT_BATCH_SIZE="0")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "models"))

failed = 0
def check(what, ok, detail=""):
  global failed
  print(f"{'PASS' if ok else 'FAIL'}: {what}{'' if ok else ': ' + str(detail)}")
  failed += 0 if ok else 1


def main(hcq_bin):
  import tinygrad.engine.realize as realize
  from tinygrad.uop.ops import Ops
  sinks = []
  compile_one = realize.to_program
  def record(ast, ren):
    if ast.op is Ops.SINK: sinks.append(ast)
    return compile_one(ast, ren)
  realize.to_program = record
  import qcom_small
  fn, example = qcom_small.build(0)
  fn(*example).realize()
  check("tinygrad scheduled qcom_small with IMAGE=1", len(sinks) >= 4, len(sinks))

  from tinygrad.helpers import Target
  from tinygrad.renderer.nir import IR3Renderer
  from tinygrad.codegen import to_program
  from tinygrad.runtime import ops_qcom
  from tinygrad.runtime.autogen import mesa
  from adreno_a630 import StandInDevice
  import export_tinygrad as et
  import qcom_capture as qc
  ren = IR3Renderer(Target("QCOM", "IR3", "a630,IMAGE_PITCH_ALIGNMENT=64"))
  dev = StandInDevice(ren)

  class Args: seed = 0
  ex = qc.make_exporter_class(et.Exporter, et.ExportError)(Args(), {"FLOAT16": "1", "IMAGE": "1", "NOLOCALS": "1"}, dev=dev)

  class Base:  # what the exporter reads of a tinygrad base Buffer
    def __init__(self, nbytes): self.nbytes = nbytes

  launches, buffers, n_images = [], [], 0
  for i, sink in enumerate(sinks):
    prg = to_program(sink, ren)
    info, elf = prg.arg, prg.to_elf()
    q = ops_qcom.QCOMProgram(dev, elf)
    where = f"kernel {i} ({info.function_name})"
    pid = ex.program(prg, q, where)
    gp = ex.gpu[pid]
    args, hcq_bufs = [], []
    for name, slot, dt, shape in elf.signature[:len(info.globals)]:
      if len(shape) == 3 and shape[-1] == 4: nbytes = shape[0] * shape[1] * 4 * dt.itemsize
      else: nbytes = max(1, int(shape[0]) if shape else 1) * dt.itemsize
      bid = len(ex.bases)
      ex.bases.append(Base(nbytes))
      buffers.append({"id": bid, "nbytes": nbytes, "dtype": ex.dtype_name(dt), "role": "scratch"})
      args.append({"buffer": bid, "offset": 0, "nbytes": nbytes, "dtype": ex.dtype_name(dt)})
      hcq_bufs.append(dev.allocator.alloc(nbytes))
    gsz, lsz = info.launch_dims({})
    gsz, lsz = [int(x) for x in gsz], [int(x) for x in (lsz or (1, 1, 1))]
    ex.first_launch(gp, tuple(hcq_bufs), [], gsz, lsz, where)
    block = ex.kernarg_block(q, None, tuple(hcq_bufs), [], gsz, lsz, where)
    ex.check_descriptors(gp, block, where)
    ex.note_images(gp, args, where)
    d = gp["entry"]["descriptors"]
    for im in d["images"]:
      n_images += 1
      itemsize = 2 if im["format"] == "float16" else 4
      fmt = mesa.FMT6_16_16_16_16_FLOAT if itemsize == 2 else mesa.FMT6_32_32_32_32_FLOAT
      for kind in ("tex", "ibo"):
        words = im[f"{kind}_words"]
        if words is None: continue
        ok = (len(words) == 16 and words[4] == 0 and words[5] == 0
              and (words[0] & mesa.A6XX_TEX_CONST_0_FMT__MASK) >> mesa.A6XX_TEX_CONST_0_FMT__SHIFT == fmt
              and (words[1] & mesa.A6XX_TEX_CONST_1_WIDTH__MASK) >> mesa.A6XX_TEX_CONST_1_WIDTH__SHIFT == im["width"]
              and (words[1] & mesa.A6XX_TEX_CONST_1_HEIGHT__MASK) >> mesa.A6XX_TEX_CONST_1_HEIGHT__SHIFT == im["height"]
              and (words[2] & mesa.A6XX_TEX_CONST_2_PITCH__MASK) >> mesa.A6XX_TEX_CONST_2_PITCH__SHIFT == im["pitch"]
              and im["pitch"] % 64 == 0)
        check(f"{where} slot {im['slot']}: {kind} descriptor is tinygrad's ({im['width']}x{im['height']} {im['format']}, pitch "
              f"{im['pitch']})", ok, words)
    check(f"{where}: one sampler per texture, tinygrad's words", len(d["sampler_words"]) == d["tex_cnt"]
          and all(len(w) == 4 for w in d["sampler_words"]), d["sampler_words"])
    plain = [s["slot"] for s in gp["entry"]["signature"][:len(info.globals)] if not s.get("image")]
    check(f"{where}: consts.args lists the plain buffers only", [a["slot"] for a in gp["entry"]["consts"]["args"]] == plain)
    launches.append({"kind": "kernel", "program": pid, "name": info.function_name, "global_size": gsz, "local_size": lsz,
                     "args": args, "vals": [], "core_id_arg": None, "outs": [0], "ins": list(range(1, len(args))),
                     "gpu_global_size": gsz, "gpu_local_size": lsz, "gpu_vals": []})
  check("the capture recorded image parameters", n_images >= 4, n_images)

  with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "img")
    ex.start = []
    ex.write(out, "qcom_small_image", buffers, [], [], launches, [])
    m = json.load(open(os.path.join(out, "manifest.json")))
    imgs = [b for b in m["graphs"][0]["buffers"] if "image" in b]
    check("the manifest has image buffers (shape, element type, pitch)", len(imgs) >= 1 and all(
      b["nbytes"] == b["image"]["height"] * b["image"]["pitch"] and b["dtype"] == b["image"]["format"] for b in imgs), imgs[:2])
    r = subprocess.run([hcq_bin, "inspect", out], capture_output=True, text=True)
    check("hcq loads the IMAGE=1 bundle (hcq inspect)", r.returncode == 0 and "image " in r.stdout, r.stderr.strip() or r.stdout[-400:])
    packed = os.path.join(tmp, "img.hcqb")
    r = subprocess.run([hcq_bin, "pack", out, "-o", packed], capture_output=True, text=True)
    r2 = subprocess.run([hcq_bin, "inspect", packed], capture_output=True, text=True) if r.returncode == 0 else r
    check("the IMAGE=1 bundle packs to .hcqb 2.0 and reloads with its images", r2.returncode == 0 and "hcqb 2.0" in r2.stdout
          and r2.stdout.count(" image ") == len(imgs), (r.stderr or r2.stderr).strip())
  print(f"{'FAILED' if failed else 'ok'}: {failed} failed")
  return 1 if failed else 0


if __name__ == "__main__":
  if len(sys.argv) != 2: sys.exit(__doc__)
  sys.exit(main(sys.argv[1]))
