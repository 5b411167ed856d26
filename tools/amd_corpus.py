#!/usr/bin/env python3
"""Collect the gfx1100 code objects tinygrad 0.14's AMD_LLVM renderer writes for tinygrad's own
test suites, with llvm-objdump-19's listing of each: the reference of hal/amd/tests/listing.rs.

No AMD GPU is needed: the suites run on tinygrad's NULL device with the AMD LLVM renderer
(`DEV=NULL:AMDLLVM:gfx1100`), which renders and compiles every kernel (LLVM from the system's
libLLVM, as `AMD_LLVM=1` does on a real device) and runs none; a test fails where it reads a
result, after its kernels are compiled. A sitecustomize on PYTHONPATH saves each compiled object
as OUT/<sha256>.co; llvm-objdump-19 -d --mcpu=gfx1100 writes OUT/<sha256>.txt beside it.

    python tools/amd_corpus.py OUT [--tests test_tiny.py backend/test_ops.py ...] [--keep N]
    python tools/amd_corpus.py OUT --cover N --from DIR

Run with the tinygrad venv's python (tools/tg_venv.sh; test_ops needs torch). --keep N keeps N
objects (the smallest hashes: a sample independent of test order) and deletes the rest.
--cover N --from DIR copies into OUT at most N objects of an earlier collection DIR, chosen
greedily (most new forms per listing line) to cover every instruction form DIR holds: a form is a
mnemonic with its operands' shapes (register class and width, special register, inline constant,
literal, modifier), so a small in-repo sample keeps what the whole suites exercise.
"""

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = Path(os.environ.get("TG_TESTS", ROOT.parent / "shared/reference/tinygrad/test"))

HOOK = """
import hashlib, os
from tinygrad.runtime.support import compiler_llvm
_compile = compiler_llvm.AMDLLVMCompiler.compile
def compile(self, src):
    lib = _compile(self, src)
    out = os.environ["HCQ_AMD_CORPUS"]
    with open(os.path.join(out, hashlib.sha256(lib).hexdigest() + ".co"), "wb") as f:
        f.write(lib)
    return lib
compiler_llvm.AMDLLVMCompiler.compile = compile
"""


def forms(listing):
    """The instruction forms of one llvm-objdump listing (see --cover)."""
    out = set()
    for line in listing.splitlines():
        if not line.startswith("\t") or "//" not in line:
            continue
        text = line.split("//")[0].strip()
        name, _, ops = text.partition(" ")
        shape = re.sub(r"\b(s|v|ttmp)(\d+)\b", r"\1", ops)
        shape = re.sub(r"\[(\d+):(\d+)\]", lambda m: f"x{int(m[2]) - int(m[1]) + 1}", shape)
        shape = re.sub(r"0x[0-9a-fA-F]+", "K", shape)
        shape = re.sub(r"-?\d+\.\d+", "F", shape)
        shape = re.sub(r"(?<![a-z_])-?\d+", "N", shape)
        shape = re.sub(r"<[^>]*>", "<label>", shape)
        out.add(name + " " + shape)
    return out


def cover(src, out, n):
    objs = {p: forms(p.with_suffix(".txt").read_text()) for p in sorted(src.glob("*.co"))}
    size = {p: max(1, p.with_suffix(".txt").read_text().count("\n")) for p in objs}
    have, chosen = set(), []
    while len(chosen) < n:
        best = max(objs, key=lambda p: (len(objs[p] - have) / size[p], p.name), default=None)
        if best is None or not objs[best] - have:
            break
        have |= objs.pop(best)
        chosen.append(best)
    out.mkdir(parents=True, exist_ok=True)
    for p in chosen:
        shutil.copy(p, out / p.name)
        shutil.copy(p.with_suffix(".txt"), out / p.with_suffix(".txt").name)
    left = set().union(*objs.values()) - have if objs else set()
    print(f"{len(chosen)} code objects cover {len(have)} forms; {len(left)} forms left out")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--tests", nargs="+", default=["test_tiny.py"])
    ap.add_argument("--keep", type=int, default=0)
    ap.add_argument("--timeout", type=int, default=3600)
    ap.add_argument("--cover", type=int, default=0)
    ap.add_argument("--from", dest="src", type=Path)
    args = ap.parse_args()
    if args.cover:
        if not args.src or not args.src.is_dir():
            print("FAIL: --cover needs --from DIR, an earlier collection", file=sys.stderr)
            return 1
        return cover(args.src, args.out, args.cover)
    if not TESTS.is_dir():
        print(f"FAIL: no tinygrad test suite at {TESTS} (set TG_TESTS)", file=sys.stderr)
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as hook:
        Path(hook, "sitecustomize.py").write_text(HOOK)
        env = dict(os.environ, DEV="NULL:AMDLLVM:gfx1100", NULL_ALLOW_COPYOUT="1", CACHELEVEL="0")
        env["HCQ_AMD_CORPUS"] = str(args.out.resolve())
        env["PYTHONPATH"] = hook + os.pathsep + env.get("PYTHONPATH", "")
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args.tests]
        subprocess.run(
            cmd, cwd=TESTS, env=env, timeout=args.timeout, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
    objs = sorted(args.out.glob("*.co"))
    if args.keep:
        for p in objs[args.keep :]:
            p.unlink()
            p.with_suffix(".txt").unlink(missing_ok=True)
        objs = objs[: args.keep]
    for p in objs:
        assert hashlib.sha256(p.read_bytes()).hexdigest() == p.stem
        r = subprocess.run(
            ["llvm-objdump-19", "-d", "--mcpu=gfx1100", p.name],
            cwd=p.parent,
            capture_output=True,
            text=True,
            check=True,
        )
        p.with_suffix(".txt").write_text(r.stdout)
    print(f"{len(objs)} code objects with their listings in {args.out}")
    return 0 if objs else 1


if __name__ == "__main__":
    sys.exit(main())
