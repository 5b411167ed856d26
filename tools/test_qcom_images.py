#!/usr/bin/env python3
"""IMAGE=1 capture up to writing and loading the bundle, on tinygrad's NULL device: no execution.

Image kernels run on the virtual A630 and hcq's QCOM device (tools/test_qcom_capture.sh with QCOM_IMAGE=1, the zoo's
tools/test_zoo.sh); this checks, without a device, what that path builds against tinygrad's own bytes:
the kernels tinygrad schedules for tools/models/qcom_small.py with openpilot's flags (FLOAT16=1 IMAGE=1 NOLOCALS=1, scheduled on
tinygrad's NULL device, which takes IMAGE=1) are compiled by tinygrad's IR3 renderer for `a630,IMAGE_PITCH_ALIGNMENT=64` (what
QCOMDevice uses under IMAGE=1); tinygrad's own QCOMProgram, QCOMArgsState and QCOMComputeQueue run on the host-memory stand-in of
tools/adreno_a630.py; the --qcom-jit exporter's program/launch passes (tools/qcom_capture.py) record them, which checks the kernarg
block rebuilt from the metadata (descriptors included) against tinygrad's byte for byte; the descriptor words must be tinygrad's
(format FMT6_16_16_16_16_FLOAT, width/height, pitch, address dwords 0), every image binding must carry its view
(`launches[].args[j].image`), and the bundle must load in hcq (`hcq inspect`, `hcq pack`).

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
    # one buffer per tinygrad slot (ProgramInfo.globals), as large as its largest parameter; the launch binds it at every
    # parameter tinygrad passes it to (gp["params"])
    need = {}
    for _name, slot, dt, shape in elf.signature[:len(gp["params"])]:
      if len(shape) == 3 and shape[-1] == 4: nbytes = shape[0] * shape[1] * 4 * dt.itemsize
      else: nbytes = max(1, int(shape[0]) if shape else 1) * dt.itemsize
      need[slot] = max(need.get(slot, 0), nbytes)
    bids, hcq_bufs = [], []
    for slot in range(len(info.globals)):
      bids.append(len(ex.bases))
      ex.bases.append(Base(need[slot]))
      buffers.append({"id": bids[-1], "nbytes": need[slot], "dtype": "int8", "role": "scratch"})
      hcq_bufs.append(dev.allocator.alloc(need[slot]))
    args = [{"buffer": bids[g], "offset": 0, "nbytes": need[g], "dtype": gp["entry"]["signature"][k]["dtype"]}
            for k, g in enumerate(gp["params"])]
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
    plain = [s["slot"] for s in gp["entry"]["signature"][:len(gp["params"])] if not s.get("image")]
    check(f"{where}: consts.args lists the plain buffers only", [a["slot"] for a in gp["entry"]["consts"]["args"]] == plain)
    launches.append({"kind": "kernel", "program": pid, "name": info.function_name, "global_size": gsz, "local_size": lsz,
                     "args": args, "vals": [], "core_id_arg": None, "outs": [0], "ins": list(range(1, len(args))),
                     "gpu_global_size": gsz, "gpu_local_size": lsz, "gpu_vals": []})
  check("the capture recorded image parameters", n_images >= 4, n_images)

  # a buffer passed in two parameter slots (tinygrad's signature lists slot 1 twice: [0, 1, 1]): the exporter numbers the
  # parameters 0..n-1, binds buffer 1 at both, and its kernarg layout must rebuild the block tinygrad's own QCOMArgsState fills
  # for that signature (two addresses of buffer 1)
  from tinygrad import Tensor
  from tinygrad.device import TinyELF
  first = len(sinks)
  (Tensor.empty(5) * 2 + Tensor.empty(5)).realize()  # 5 floats: no image shape fits, a plain kernel of two inputs
  plain = next((prg for prg in (to_program(sk, ren) for sk in sinks[first:])
                if len(prg.arg.globals) >= 2 and not prg.arg.vars and not any(len(e[3]) == 3 for e in prg.to_elf().signature)), None)
  check("a plain kernel with two buffers to pass one of them twice", plain is not None)
  if plain is not None:
    elf = plain.to_elf()
    dup = TinyELF(elf.lib, elf.name, elf.target, elf.signature + (elf.signature[1],), elf.profile_key)
    class Twice:  # the PROGRAM as the exporter reads it, with the doubled signature
      arg = plain.arg
      def to_elf(self): return dup
    where = f"duplicate-slot kernel ({plain.arg.function_name})"
    n = len(plain.arg.globals)
    try:
      q = ops_qcom.QCOMProgram(dev, dup)
      pid = ex.program(Twice(), q, where)
      gp = ex.gpu[pid]
      hcq_bufs = tuple(dev.allocator.alloc(4096) for _ in range(n))
      gsz, lsz = plain.arg.launch_dims({})
      ex.first_launch(gp, hcq_bufs, [], [int(x) for x in gsz], [int(x) for x in (lsz or (1, 1, 1))], where)
      sig = ex.programs[pid]["signature"]
      check(f"{where}: bundle signature numbered 0..{n}, {n + 1} buffer parameters, buffer 1 behind slots 1 and {n}",
            [e["slot"] for e in sig] == list(range(n + 1)) and ex.programs[pid]["n_buffer_args"] == n + 1
            and gp["params"] == list(range(n)) + [1], (sig, gp["params"]))
      check(f"{where}: consts.args has an address per parameter, the kernarg block rebuilt equals tinygrad's (two addresses of buffer 1)",
            [a["arg"] for a in gp["entry"]["consts"]["args"]] == list(range(n + 1)), gp["entry"]["consts"]["args"])
    except et.ExportError as e: check(f"{where}: exported", False, e)

  with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "img")
    ex.start = []
    ex.write(out, "qcom_small_image", buffers, [], [], launches, [])
    m = json.load(open(os.path.join(out, "manifest.json")))
    g = m["graphs"][0]
    imgs = [(l["name"], j, a) for l in g["launches"] for j, a in enumerate(l["args"]) if "image" in a]
    bound = sum(1 for l in g["launches"] for j, s in enumerate(g["programs"][l["program"]]["signature"][:len(l["args"])])
                if len(s["shape"]) == 3 and s["shape"][-1] == 4)
    check("every image binding carries its view (launches[].args[j].image: width, height, pitch, format = the arg's dtype)",
          len(imgs) == n_images == bound and all(a["nbytes"] >= a["image"]["height"] * a["image"]["pitch"] and
          a["dtype"] == a["image"]["format"] and a["offset"] % 64 == 0 for _, _, a in imgs), (len(imgs), n_images, bound, imgs[:2]))
    check("no buffers[].image in a new bundle (the views are per binding)", not any("image" in b for b in g["buffers"]))
    r = subprocess.run([hcq_bin, "inspect", out], capture_output=True, text=True)
    check("hcq loads the IMAGE=1 bundle (hcq inspect)", r.returncode == 0, r.stderr.strip() or r.stdout[-400:])
    packed = os.path.join(tmp, "img.hcqb")
    r = subprocess.run([hcq_bin, "pack", out, "-o", packed], capture_output=True, text=True)
    r2 = subprocess.run([hcq_bin, "inspect", packed], capture_output=True, text=True) if r.returncode == 0 else r
    check("the IMAGE=1 bundle packs to .hcqb 2.x and reloads", r2.returncode == 0 and "hcqb 2." in r2.stdout,
          (r.stderr or r2.stderr).strip())
  print(f"{'FAILED' if failed else 'ok'}: {failed} failed")
  return 1 if failed else 0


if __name__ == "__main__":
  if len(sys.argv) != 2: sys.exit(__doc__)
  sys.exit(main(sys.argv[1]))
