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
space limit, in seconds (boards/hcq/tests/cli.rs, every_gpu_corpus_entry_is_refused...).
Deterministic: a rerun rewrites identical files.
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


def write(name, m, blob):
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
    print(f"{len(cases) + 1} entries in {HERE}")


if __name__ == "__main__":
    main()
