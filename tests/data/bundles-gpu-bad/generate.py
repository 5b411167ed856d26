#!/usr/bin/env python3
"""Generate the GPU malformed-input corpus (tests/data/bundles-gpu-bad) from examples/mlp.

    python3 tests/data/bundles-gpu-bad/generate.py      # rewrites every entry in place

The base (`ok-gpu-control`) is a one-program cut of examples/mlp: program 2 (`r_8_10_16_4`, whose
adreno metadata has an immediate) and its launch, the buffers without data files, only the
`adreno_a630` object, and that object trimmed to the part the runtime reads (the shader image
and the immediates; Mesa's two opaque structs are dropped and `blob` says so). Each other
entry is the base with one edit: every number of `programs[].adreno` that the runtime reads at
the extremes a file can claim, truncated / garbage / all-zero shaders, absurd grids. Every entry
must be refused by `hcq run --device QCOM:SIM` with exit 2 and one line, under a 2 GB address
space limit, in seconds (cli/tests/cli.rs, every_gpu_corpus_entry_is_refused...).
Deterministic: a rerun rewrites identical files.

The `image-*` entries start from a second base: tinygrad's image matmul `r_4_8_16_4_4` as
hal/qcom/tests/data/tinygrad_image/capture.py recorded it (two float16 textures with samplers, one
float32 IBO; IMAGE-SCHEMA.md), its three images as scratch buffers of height x pitch bytes. Each
makes one image field hostile; its `expect` file holds the words the refusal must contain
(hal/qcom/tests/image.rs checks that each is refused at load for that reason, naming program 0).
The base's launch gives each argument its image view (`launches[].args[j].image`); the `image-view-*` entries make one
view hostile (none at all, a pitch not a multiple of 64, a format other than the program's), refused naming launch 0.
"""
import hashlib
import json
import os
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
SRC = os.path.join(ROOT, "examples", "mlp")
PROG = 2
BLOB = "prog.a630.bin"

# What a file can claim: the 0xF0000000, the largest u32, just past u32, 2^63, 2^64 - 1.
EXTREMES = [("f0000000", 0xF0000000), ("u32max", 2**32 - 1), ("2p32", 2**32), ("2p63", 2**63), ("u64max", 2**64 - 1)]


def base():
    m = json.load(open(os.path.join(SRC, "manifest.json")))
    p = m["programs"][PROG]
    launch = next(l for l in m["launches"] if l.get("program") == PROG)
    a = p["adreno"]
    full = open(os.path.join(SRC, p["objects"]["adreno_a630"]["file"]), "rb").read()
    b = a["blob"]
    imm = full[b["immediates_offset"] : b["immediates_offset"] + b["immediates_nbytes"]]
    img = full[b["image_offset"] : b["image_offset"] + b["image_nbytes"]]
    blob = imm + img
    a["blob"] = {
        "variant_offset": 0,
        "variant_nbytes": 0,
        "const_state_offset": 0,
        "const_state_nbytes": 0,
        "immediates_offset": 0,
        "immediates_nbytes": len(imm),
        "image_offset": len(imm),
        "image_nbytes": len(img),
        "image_sha256": b["image_sha256"],
    }
    a.pop("disasm_file", None)
    p["id"] = 0
    for k in ("file", "sha256", "nbytes", "source_file"):
        p.pop(k, None)
    p["objects"] = {"adreno_a630": {"file": BLOB, "sha256": hashlib.sha256(blob).hexdigest(), "nbytes": len(blob)}}
    # Only the launch's buffers, renumbered, without data files (zero-filled scratch).
    used = sorted({arg["buffer"] for arg in launch["args"]})
    bufs = []
    for new_id, old_id in enumerate(used):
        buf = dict(m["buffers"][old_id], id=new_id, role="scratch")
        buf.pop("file", None)
        buf.pop("sha256", None)
        bufs.append(buf)
    m["buffers"] = bufs
    for arg in launch["args"]:
        arg["buffer"] = used.index(arg["buffer"])
    launch["program"] = 0
    launch["outs"], launch["ins"] = [], []
    for k in ("toolchain", "toolchains", "calling_convention"):
        m.pop(k, None)
    for k in ("display_name", "target", "wgid_reg", "lid_reg", "instrs_count"):
        a.pop(k, None)
    m["programs"] = [p]
    m["launches"] = [launch]
    m["outputs"] = []
    m["inputs"] = []
    m["model"] = "mlp-gpu-cut"
    return m, blob


IMAGE_DIR = os.path.join(ROOT, "hal", "qcom", "tests", "data", "tinygrad_image")
IMAGE_PROG = "r_4_8_16_4_4"


def image_base():
    a = json.load(open(os.path.join(IMAGE_DIR, IMAGE_PROG + ".adreno.json")))
    blob = open(os.path.join(IMAGE_DIR, IMAGE_PROG + ".a630.bin"), "rb").read()
    imgs = sorted(a["descriptors"]["images"], key=lambda i: i["slot"])
    bufs, args = [], []
    for im in imgs:
        n = im["height"] * im["pitch"]
        bufs.append({"id": im["slot"], "nbytes": n, "dtype": im["format"], "role": "scratch"})
        view = {k: im[k] for k in ("width", "height", "pitch", "format")}
        args.append({"buffer": im["slot"], "offset": 0, "nbytes": n, "dtype": im["format"], "image": view})
    p = {"id": 0, "name": IMAGE_PROG, "symbol": IMAGE_PROG, "signature": a["signature"], "n_buffer_args": len(imgs), "vars": [],
         "core_id_arg": None, "adreno": a,
         "objects": {"adreno_a630": {"file": BLOB, "sha256": hashlib.sha256(blob).hexdigest(), "nbytes": len(blob)}}}
    launch = {"kind": "kernel", "program": 0, "name": IMAGE_PROG, "global_size": [1, 1, 1], "local_size": [1, 1, 1], "args": args,
              "vals": [], "core_id_arg": None, "outs": [], "ins": [], "gpu_global_size": [8, 1, 1], "gpu_local_size": [4, 1, 1],
              "gpu_vals": []}
    m = {"format": "tg-cpu-bundle", "version": 1, "model": "image-matmul-cut", "tinygrad_version": "0.14.0", "expected_from": "adreno_a630",
         "buffers": bufs, "inputs": [], "outputs": [], "programs": [p], "launches": [launch]}
    return m, blob


# (name, edits of programs[0].adreno as (key path, value), the words its refusal must contain)
IMAGE_CASES = [
    ("image-width-0", [(("descriptors", "images", 1, "width"), 0)], "width/height: 0"),
    ("image-height-2p15", [(("descriptors", "images", 1, "height"), 2**15)], "15-bit fields"),
    ("image-pitch-below-row", [(("descriptors", "images", 2, "pitch"), 4544)], "pitch below width x 4 x itemsize"),
    ("image-pitch-unaligned", [(("descriptors", "images", 2, "pitch"), 4616)], "a multiple of 64"),
    ("image-format-unknown", [(("descriptors", "images", 0, "format"), "int8")], "unknown image format"),
    ("image-format-vs-signature", [(("descriptors", "images", 0, "format"), "float16")], "signature's dtype"),
    ("image-slot-out-of-range", [(("descriptors", "images", 2, "slot"), 9)], "images[].slot"),
    ("image-slot-twice", [(("descriptors", "images", 2, "slot"), 1)], "images[].slot"),
    ("image-texture-index-out-of-range", [(("descriptors", "images", 2, "texture"), 5)], "texture/IBO index"),
    ("image-17-textures", [(("descriptors", "tex_cnt"), 17)], "more textures than"),
    ("image-33-samplers", [(("descriptors", "samp_cnt"), 33)], "more samplers than 16"),
    ("image-tex-off-outside", [(("descriptors", "tex_off"), 4032)], "outside the kernarg block"),
    ("image-samp-off-outside", [(("descriptors", "samp_off"), 2288)], "outside the kernarg block"),
    ("image-ibo-off-u32max", [(("descriptors", "ibo_off"), 2**32 - 16)], "outside the kernarg block"),
    ("image-desc-over-constants", [(("descriptors", "tex_off"), 0)], "overlap"),
    ("image-tex-word-changed", [(("descriptors", "images", 1, "tex_words", 0), 0)], "texture dword 0"),
    ("image-ibo-words-missing", [(("descriptors", "images", 0, "ibo_words"), None)], "without descriptor words"),
    ("image-sampler-changed", [(("descriptors", "sampler_words", 0, 1), 0)], "sampler_words"),
    ("image-sampler-count", [(("descriptors", "sampler_words"), [])], "sampler_words count"),
    ("image-config-ntex", [(("regs", "SP_CS_CONFIG", "value"), 0x440300)], "NTEX/NSAMP/NUAV"),
    ("image-not-in-signature", [(("signature", 0, "image"), False)], "counts vs the signature"),
    ("image-pvtmem-absurd", [(("pvtmem",), 2**30)], "private memory per thread"),
    ("image-pvtmem-u32max", [(("pvtmem",), 2**32 - 1)], "pvtmem"),
]


# Image views per launch argument (FORMAT.md "Image views") the a630 cannot take, on the same base: each refused by the
# QCOM device's launch check, naming launch 0 and the argument.
def _no_views(launch):
    for a in launch["args"]:
        a.pop("image")


def _unaligned_pitch(launch):
    launch["args"][1]["image"].update(width=90, pitch=740)


def _other_format(launch):
    launch["args"][0]["dtype"] = "float16"
    launch["args"][0]["image"]["format"] = "float16"


IMAGE_VIEW_CASES = [
    ("image-view-missing", _no_views, "no image view"),
    ("image-view-pitch-unaligned", _unaligned_pitch, "a multiple of 64"),
    ("image-view-format-vs-program", _other_format, "the program's image format"),
]


def leaves(node, path=()):
    """Every number of the adreno object the runtime reads, as a key path."""
    skip = {"zeroed_host_pointers", "allocs", "tex_off", "ibo_off", "samp_off", "tex_to_image", "samplers", "shape"}
    if isinstance(node, dict):
        for k, v in node.items():
            if k not in skip:
                yield from leaves(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from leaves(v, path + (i,))
    elif isinstance(node, int) and not isinstance(node, bool):
        yield path


def put(node, path, value):
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value


def write(name, m, blob, expect=None):
    d = os.path.join(HERE, name)
    os.makedirs(d, exist_ok=True)
    p = m["programs"][0]
    if blob is not None:
        p["objects"]["adreno_a630"].update(sha256=hashlib.sha256(blob).hexdigest(), nbytes=len(blob))
    with open(os.path.join(d, "manifest.json"), "w") as f:
        json.dump(m, f, separators=(",", ":"))
        f.write("\n")
    with open(os.path.join(d, BLOB), "wb") as f:
        f.write(blob)
    if expect is not None:
        with open(os.path.join(d, "expect"), "w") as f:
            f.write(expect + "\n")


def main():
    for e in os.listdir(HERE):
        if os.path.isdir(os.path.join(HERE, e)):
            shutil.rmtree(os.path.join(HERE, e))
    m0, blob0 = base()
    write("ok-gpu-control", json.loads(json.dumps(m0)), blob0)
    cases = []
    # 1. Every number of programs[].adreno at every extreme.
    # Each number gets one extreme (in turn); the sizes that drive allocations get all of them.
    headline = {("consts", "kernarg_alloc_size"), ("stack_bytes",), ("hw_stack_offset",), ("consts", "load_vec4")}
    for i, path in enumerate(leaves(m0["programs"][0]["adreno"])):
        for tag, v in EXTREMES if path in headline else [EXTREMES[i % len(EXTREMES)]]:
            cases.append(("meta-" + "-".join(str(k) for k in path).replace("_", "") + "-" + tag, [(path, v)], None))
    # 2. The shader: truncated (cut mid-code, and to one instruction), garbage, all zero.
    imm_n = m0["programs"][0]["adreno"]["blob"]["immediates_nbytes"]
    img = blob0[imm_n:]

    def shader(name, code):
        units = (len(code) + 127) // 128
        edits = [
            (("blob", "image_nbytes"), len(code)),
            (("image_size",), len(code)),
            (("instr_size_128",), units),
            (("regs", "SP_CS_INSTR_SIZE", "value"), units),
        ]
        cases.append(("shader-" + name, edits, blob0[:imm_n] + code))

    shader("truncated-half", img[: len(img) // 2])
    shader("truncated-one-instruction", img[:8])
    shader("truncated-mid-instruction", img[:12])
    shader("all-zero", bytes(len(img)))
    shader("garbage", bytes((i * 0x9E3779B1 >> 13) & 0xFF for i in range(len(img))))
    shader("all-ones", b"\xff" * len(img))
    # A branch far past the end: the first instruction replaced by `jump #+100000` (cat0 opc 2, bits 55..58).
    shader("branch-past-the-end", struct.pack("<Q", (2 << 55) | 100000) + img[8:])
    # 3. The blob cut below what the metadata says (sha256 and nbytes fixed up, so only the cut is wrong).
    cases.append(("blob-truncated", [], blob0[: len(blob0) // 2]))
    cases.append(("blob-empty", [], b""))
    # 4. Absurd grids and work-groups.
    grids = [
        ("grid-u32max-x", [2**32 - 1, 1, 1], None),
        ("grid-u32max-all", [2**32 - 1] * 3, None),
        ("grid-65536-y", [1, 65536, 1], None),
        ("grid-65535-cubed", [65535] * 3, None),
        ("grid-2p20-x", [2**20, 1, 1], None),
        ("grid-2p32-x", [2**32, 1, 1], None),
        ("grid-negative", [-1, 1, 1], None),
        ("local-zero", None, [0, 1, 1]),
        ("local-2048", None, [2048, 1, 1]),
        ("local-past-max-threads", None, [64, 16, 1]),
        ("local-u32max", None, [2**32 - 1, 1, 1]),
    ]
    for name, g, l in grids:
        edits = []
        if g is not None:
            edits.append((("L", "gpu_global_size"), g))
        if l is not None:
            edits.append((("L", "gpu_local_size"), l))
        cases.append((name, edits, None))
    cases.append(("gpu-vals-extra", [(("L", "gpu_vals"), [1])], None))
    cases.append(("gpu-vals-2p40", [(("L", "gpu_vals"), [2**40])], None))
    for name, edits, blob in cases:
        m = json.loads(json.dumps(m0))
        for path, v in edits:
            if path[0] == "L":
                m["launches"][0][path[1]] = v
            else:
                put(m["programs"][0]["adreno"], path, v)
        write(name, m, blob0 if blob is None else blob)
    mi, blobi = image_base()
    for name, edits, expect in IMAGE_CASES:
        m = json.loads(json.dumps(mi))
        for path, v in edits:
            put(m["programs"][0]["adreno"], path, v)
        write(name, m, blobi, expect)
    for name, edit, expect in IMAGE_VIEW_CASES:
        m = json.loads(json.dumps(mi))
        edit(m["launches"][0])
        write(name, m, blobi, expect)
    print(f"{len(cases) + len(IMAGE_CASES) + len(IMAGE_VIEW_CASES) + 1} entries in {HERE}")


if __name__ == "__main__":
    main()
