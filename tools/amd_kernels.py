#!/usr/bin/env python3
"""Write test cases for the RDNA3 (gfx1100) interpreter: tinygrad 0.14 kernels compiled for gfx1100 by its
AMD LLVM renderer, each with its buffers before the kernel and as tinygrad's CPU device left them after the
same kernel AST (the reference of hal/amd/tests/kernels.rs).

No GPU is needed. Every case is a small tinygrad expression run on the CPU device (`DEV=CPU`). The tool hooks
tinygrad's kernel launch (`tinygrad.engine.realize.pm_exec`, after `lower_and_compile` has noted which kernel
AST each compiled CPU program came from); for every compiled kernel a case launches it:

  * lowers that same AST with `tinygrad.codegen.to_program` for `AMDLLVMRenderer(Target("AMD", "LLVM",
    "gfx1100"))`, the renderer `DEV=AMD:LLVM` (formerly `AMD_LLVM=1`) selects on a gfx1100, so with the
    AMD device's default optimizations (hand-coded opts: locals, upcasts, group reduces, WMMA tensor cores),
    and compiles it with `AMDLLVMCompiler("gfx1100")` (the system's libLLVM);
  * fills its output-only buffers with 0xa5 (so an element the kernel never writes shows), copies every
    buffer out, runs the CPU kernel, copies every buffer out again.

Buffers are listed in the AMD program's argument order (`ProgramInfo.globals`: the AST's buffer slots, in
order) and `vals` are its int variables' values (`ProgramInfo.vars`), as tinygrad's AMD runtime passes them
(CLikeArgsState: each buffer's 64-bit address, then each val as a 32-bit int). `global` is the number of
workgroups per dimension and `local` the workgroup's size, as tinygrad's HCQ AMD runtime launches it.

    /tmp/tgv/bin/python tools/amd_kernels.py OUT [--only SUBSTR ...] [--list]

(tools/tg_venv.sh makes a tinygrad 0.14 venv.) OUT (hal/amd/tests/data/kernels) gets, for every case,
CASE.co (the code object) and CASE.json:

    {"name": kernel symbol, "case": the tinygrad expression, "co": "CASE.co", "global": [gx, gy, gz],
     "local": [lx, ly, lz], "vals": [int, ...],
     "bufs": [{"dtype": tinygrad dtype name, "init": hex bytes before, "want": hex bytes after}, ...]}

Earlier *.json/*.co in OUT are removed first. Inputs are seeded (numpy default_rng(0) per case), so runs are
deterministic. Kernels with a buffer over 64 KiB, aliasing buffers, or a code object and inputs already
written are skipped. With llvm-objdump-19 on PATH each case's line says whether its listing uses LDS (ds_*),
WMMA (v_wmma*) or scratch (scratch_*).
"""

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

MAX_BUF = 64 * 1024
# knobs that would change what tinygrad generates: run with its defaults
KNOBS = (
    "BEAM",
    "NOOPT",
    "TC",
    "TC_OPT",
    "TC_SELECT",
    "NOLOCALS",
    "IMAGE",
    "TRANSCENDENTAL",
    "DISABLE_FAST_IDIV",
    "EMULATED_DTYPES",
    "ALLOW_TF32",
    "DEFAULT_FLOAT",
    "DEFAULT_INT",
    "SPLIT_REDUCEOP",
    "JIT",
    "DEBUG",
    "VIZ",
    "VALIDATE_WITH_CPU",
    "HCQ2",
    "AMD_LLVM",
    "CPU_LLVM",
)


def cases(T, dtypes, Variable, np):
    """(name, description, build(rng) -> Tensor or list of Tensors). Inputs are realized before the expression."""

    def f32(r, shape, lo=-2.0, hi=2.0):
        return T(r.uniform(lo, hi, shape).astype(np.float32)).realize()

    def f16(r, shape, lo=-2.0, hi=2.0):
        return T(r.uniform(lo, hi, shape).astype(np.float16)).realize()

    def f64(r, shape, lo=-2.0, hi=2.0):
        return T(r.uniform(lo, hi, shape).astype(np.float64)).realize()

    def ints(r, shape, lo, hi, dt=np.int32):
        return T(r.integers(lo, hi, shape).astype(dt)).realize()

    def nz(r, shape):
        return T((r.uniform(0.5, 2.0, shape) * r.choice([-1.0, 1.0], shape)).astype(np.float32)).realize()

    def nzi(r, shape, lo, hi, dt=np.int32):
        x = r.integers(lo, hi, shape)
        return T(np.where(x == 0, 7, x).astype(dt)).realize()

    S = (11, 23)
    v = Variable("i", 1, 10).bind(3)
    return [
        # elementwise float32
        ("add_f32", "a + b, float32 (11, 23)", lambda r: f32(r, S) + f32(r, S)),
        ("mul_f32", "a * b, float32 (11, 23)", lambda r: f32(r, S) * f32(r, S)),
        ("sub_div_f32", "(a - b) / c, float32 (11, 23), |c| in [0.5, 2]", lambda r: (f32(r, S) - f32(r, S)) / nz(r, S)),
        ("neg_abs_f32", "a.abs() * -b, float32 (11, 23)", lambda r: f32(r, S).abs() * -f32(r, S)),
        (
            "max_min_f32",
            "a.maximum(b) + a.minimum(c) * 2, float32 (11, 23)",
            lambda r: (lambda a: a.maximum(f32(r, S)) + a.minimum(f32(r, S)) * 2)(f32(r, S)),
        ),
        (
            "where_f32",
            "(a < b).where(a, b * 3), float32 (11, 23)",
            lambda r: (lambda a, b: (a < b).where(a, b * 3))(f32(r, S), f32(r, S)),
        ),
        (
            "cmp_bool",
            "a < b, a == b.round(), a != b: bool outputs of float32 (11, 23)",
            lambda r: (lambda a, b: [a < b, a.round() == b.round(), a != b])(f32(r, S), f32(r, S)),
        ),
        ("exp_f32", "a.exp(), float32 (300,) in [-6, 6]", lambda r: f32(r, (300,), -6, 6).exp()),
        ("exp2_f32", "a.exp2(), float32 (300,) in [-10, 10]", lambda r: f32(r, (300,), -10, 10).exp2()),
        ("log_f32", "a.log(), float32 (300,) in [0.01, 100]", lambda r: f32(r, (300,), 0.01, 100).log()),
        ("log2_f32", "a.log2(), float32 (300,) in [0.01, 100]", lambda r: f32(r, (300,), 0.01, 100).log2()),
        ("sqrt_f32", "a.sqrt(), float32 (300,) in [0, 100]", lambda r: f32(r, (300,), 0, 100).sqrt()),
        ("reciprocal_f32", "a.reciprocal(), float32 (300,) |a| in [0.5, 2]", lambda r: nz(r, (300,)).reciprocal()),
        ("sin_f32", "a.sin(), float32 (300,) in [-4, 4]", lambda r: f32(r, (300,), -4, 4).sin()),
        ("cos_f32", "a.cos(), float32 (300,) in [-4, 4]", lambda r: f32(r, (300,), -4, 4).cos()),
        (
            "pow_f32",
            "a ** b, float32 (300,), a in [0.1, 4], b in [-2, 2]",
            lambda r: f32(r, (300,), 0.1, 4) ** f32(r, (300,), -2, 2),
        ),
        ("sigmoid_f32", "a.sigmoid(), float32 (300,) in [-8, 8]", lambda r: f32(r, (300,), -8, 8).sigmoid()),
        ("tanh_f32", "a.tanh(), float32 (300,) in [-4, 4]", lambda r: f32(r, (300,), -4, 4).tanh()),
        ("gelu_f32", "a.gelu(), float32 (300,) in [-4, 4]", lambda r: f32(r, (300,), -4, 4).gelu()),
        (
            "rounding_f32",
            "stack(a.floor(), a.ceil(), a.round(), a.trunc()), float32 (200,) in [-8, 8]",
            lambda r: (lambda a: T.stack(a.floor(), a.ceil(), a.round(), a.trunc()))(f32(r, (200,), -8, 8)),
        ),
        (
            "clip_relu_f32",
            "a.clip(-1, 0.5) + b.relu(), float32 (11, 23)",
            lambda r: f32(r, S).clip(-1, 0.5) + f32(r, S).relu(),
        ),
        # casts
        ("cast_f32_f16", "a.half(), float32 (300,) in [-100, 100]", lambda r: f32(r, (300,), -100, 100).half()),
        ("cast_f16_f32", "a.float() * 3, half (300,)", lambda r: f16(r, (300,), -100, 100).float() * 3),
        (
            "cast_f32_i32",
            "(a * 100).int(), float32 (300,) in [-10, 10]",
            lambda r: (f32(r, (300,), -10, 10) * 100).int(),
        ),
        ("cast_i32_f32", "a.float() / 7, int32 (300,)", lambda r: ints(r, (300,), -100000, 100000).float() / 7),
        ("cast_u8_f32", "a.float() / 255, uint8 (300,)", lambda r: ints(r, (300,), 0, 256, np.uint8).float() / 255),
        (
            "cast_f32_u8",
            "(a * 255).clip(0, 255).cast(uint8), float32 (300,) in [-0.2, 1.2]",
            lambda r: (f32(r, (300,), -0.2, 1.2) * 255).clip(0, 255).cast(dtypes.uint8),
        ),
        (
            "int8_arith",
            "a * 3 + b (int8, wraps), and a.int() * b.int(): int8 (300,)",
            lambda r: (lambda a, b: [a * 3 + b, a.int() * b.int()])(
                ints(r, (300,), -128, 128, np.int8), ints(r, (300,), -128, 128, np.int8)
            ),
        ),
        (
            "cast_bool",
            "(a > 0).float() + m.where(a, 2), float32 (11, 23) and bool mask m",
            lambda r: (lambda a, m: (a > 0).float() + m.where(a, 2))(
                f32(r, S), T(r.integers(0, 2, S).astype(bool)).realize()
            ),
        ),
        (
            "bitcast_f32_u32",
            "a.bitcast(uint32) >> 16, a.bitcast(int32) & 0x7fffff: float32 (300,)",
            lambda r: (lambda a: [a.bitcast(dtypes.uint32) >> 16, a.bitcast(dtypes.int32) & 0x7FFFFF])(
                f32(r, (300,), -1e6, 1e6)
            ),
        ),
        # integers
        (
            "i32_arith",
            "a * b + c - a, int32 (11, 23)",
            lambda r: (lambda a: a * ints(r, S, -30000, 30000) + ints(r, S, -(2**29), 2**29) - a)(
                ints(r, S, -30000, 30000)
            ),
        ),
        (
            "i32_divmod",
            "a // b, a % b: int32 (300,), signed, b != 0",
            lambda r: (lambda a, b: [a // b, a % b])(
                ints(r, (300,), -(2**31) + 1, 2**31 - 1), nzi(r, (300,), -1000, 1000)
            ),
        ),
        (
            "i32_div_const",
            "a // 7, a % 10, a // -3: int32 (300,)",
            lambda r: (lambda a: [a // 7, a % 10, a // -3])(ints(r, (300,), -(2**31), 2**31 - 1)),
        ),
        (
            "i32_shift",
            "a << 3, a >> 2 (arithmetic), a.cast(uint32) >> b: int32 (300,) in [-2**28, 2**28)",
            lambda r: (lambda a, b: [a << 3, a >> 2, a.cast(dtypes.uint32) >> b])(
                ints(r, (300,), -(2**28), 2**28), ints(r, (300,), 0, 32, np.uint32)
            ),
        ),
        (
            "i32_bitwise",
            "(a & b) | (c ^ a), ~a: int32 (300,)",
            lambda r: (lambda a, b, c: [(a & b) | (c ^ a), ~a])(
                *[ints(r, (300,), -(2**31), 2**31 - 1) for _ in range(3)]
            ),
        ),
        (
            "i32_max_neg",
            "a.maximum(b) - (-c), a.abs(): int32 (300,)",
            lambda r: (lambda a, b, c: [a.maximum(b) - (-c), a.abs()])(
                *[ints(r, (300,), -(2**20), 2**20) for _ in range(3)]
            ),
        ),
        (
            "u32_arith",
            "a * b + c (wraps), a // b: uint32 (300,)",
            lambda r: (lambda a, b, c: [a * b + c, a // b])(
                ints(r, (300,), 0, 2**32, np.uint32),
                nzi(r, (300,), 1, 2**16, np.uint32),
                ints(r, (300,), 0, 2**32, np.uint32),
            ),
        ),
        (
            "u8_add",
            "a + b (wraps), uint8 (300,)",
            lambda r: ints(r, (300,), 0, 256, np.uint8) + ints(r, (300,), 0, 256, np.uint8),
        ),
        (
            "i64_arith",
            "a * b + c, int64 (200,)",
            lambda r: (
                ints(r, (200,), -(2**31), 2**31, np.int64) * ints(r, (200,), -(2**31), 2**31, np.int64)
                + ints(r, (200,), -(2**61), 2**61, np.int64)
            ),
        ),
        (
            "i64_divmod",
            "a // b, a % b: int64 (200,), b != 0",
            lambda r: (lambda a, b: [a // b, a % b])(
                ints(r, (200,), -(2**62), 2**62, np.int64), nzi(r, (200,), -(2**40), 2**40, np.int64)
            ),
        ),
        (
            "i64_shift_bitwise",
            "(a << 7) ^ (b >> 3), a & b: int64 (200,), a in [-2**55, 2**55)",
            lambda r: (lambda a, b: [(a << 7) ^ (b >> 3), a & b])(
                ints(r, (200,), -(2**55), 2**55, np.int64), ints(r, (200,), -(2**62), 2**62, np.int64)
            ),
        ),
        (
            "i64_cast",
            "a.cast(int64) * 100000, b.cast(int32): int32 / int64 (200,)",
            lambda r: [
                ints(r, (200,), -(2**31), 2**31 - 1).cast(dtypes.int64) * 100000,
                ints(r, (200,), -(2**40), 2**40, np.int64).cast(dtypes.int32),
            ],
        ),
        # half, double
        ("half_arith", "a * b + c, half (300,)", lambda r: f16(r, (300,)) * f16(r, (300,)) + f16(r, (300,))),
        (
            "half_exp_sqrt",
            "a.exp() + b.sqrt(), half (300,)",
            lambda r: f16(r, (300,), -4, 4).exp() + f16(r, (300,), 0, 50).sqrt(),
        ),
        (
            "f64_arith",
            "a * b / c + a.sqrt(), float64 (200,), a in [0, 10]",
            lambda r: (lambda a: a * f64(r, (200,)) / f64(r, (200,), 0.5, 2) + a.sqrt())(f64(r, (200,), 0, 10)),
        ),
        ("f64_exp", "a.exp(), float64 (200,) in [-10, 10]", lambda r: f64(r, (200,), -10, 10).exp()),
        # movement, masks
        (
            "pad_f32",
            "a.pad(((1, 2), (3, 0)), value=-1) * 2, float32 (11, 23)",
            lambda r: f32(r, S).pad(((1, 2), (3, 0)), value=-1) * 2,
        ),
        ("slice_flip_f32", "a[2:-3, ::-1] * 2, float32 (11, 23)", lambda r: f32(r, S)[2:-3, ::-1] * 2),
        ("transpose_f32", "a.T.contiguous(), float32 (24, 40)", lambda r: f32(r, (24, 40)).T.contiguous()),
        ("broadcast_f32", "a (11, 1) + b (1, 23), float32", lambda r: f32(r, (11, 1)) + f32(r, (1, 23))),
        (
            "cat_f32",
            "a.cat(b, dim=1) + 1, float32 (11, 23) and (11, 9)",
            lambda r: f32(r, S).cat(f32(r, (11, 9)), dim=1) + 1,
        ),
        (
            "arange",
            "a * (arange(300) * 3 - 7), int32 a (300,) (a tensor of only consts is left unrealized)",
            lambda r: ints(r, (300,), -1000, 1000) * (T.arange(300) * 3 - 7),
        ),
        (
            "one_hot",
            "(idx[:, None] == arange(10)).float(), idx int32 (100,)",
            lambda r: (ints(r, (100,), 0, 10).unsqueeze(-1) == T.arange(10)).float(),
        ),
        (
            "rand",
            "Tensor.manual_seed(0); Tensor.rand(1000): threefry (uint32 and uint64 arithmetic)",
            lambda r: (T.manual_seed(0), T.rand(1000))[1],
        ),
        # reductions
        ("sum_all_f32", "a.sum(), float32 (2048,)", lambda r: f32(r, (2048,)).sum()),
        ("sum_axis0_f32", "a.sum(0), float32 (64, 32)", lambda r: f32(r, (64, 32)).sum(0)),
        ("sum_axis1_f32", "a.sum(1), float32 (16, 256)", lambda r: f32(r, (16, 256)).sum(1)),
        ("max_axis1_f32", "a.max(1), float32 (8, 256)", lambda r: f32(r, (8, 256)).max(1)),
        ("mean_axis1_f32", "a.mean(1), float32 (4, 512)", lambda r: f32(r, (4, 512)).mean(1)),
        ("sum_i32", "a.sum(1), int32 (8, 250)", lambda r: ints(r, (8, 250), -(2**20), 2**20).sum(1)),
        ("sum_half", "a.sum(1), half (8, 256) (float accumulation)", lambda r: f16(r, (8, 256)).sum(1)),
        ("max_all_i32", "a.max(), int32 (2048,)", lambda r: ints(r, (2048,), -(2**31), 2**31 - 1).max()),
        ("argmax", "a.argmax(1), float32 (32, 64)", lambda r: f32(r, (32, 64)).argmax(1)),
        ("cumsum_1d", "a.cumsum(), float32 (512,)", lambda r: f32(r, (512,)).cumsum()),
        ("cumsum_axis1", "a.cumsum(1), float32 (16, 64)", lambda r: f32(r, (16, 64)).cumsum(1)),
        ("softmax", "a.softmax(-1), float32 (8, 128)", lambda r: f32(r, (8, 128), -4, 4).softmax(-1)),
        ("log_softmax", "a.log_softmax(-1), float32 (8, 128)", lambda r: f32(r, (8, 128), -4, 4).log_softmax(-1)),
        (
            "layernorm",
            "a.layernorm(-1) * w + b, float32 (4, 256)",
            lambda r: f32(r, (4, 256)).layernorm(-1) * f32(r, (256,)) + f32(r, (256,)),
        ),
        # matmul, conv, pooling
        ("matmul_f32", "a @ b, float32 (64, 64) @ (64, 64)", lambda r: f32(r, (64, 64)) @ f32(r, (64, 64))),
        ("matmul_f32_odd", "a @ b, float32 (33, 17) @ (17, 45)", lambda r: f32(r, (33, 17)) @ f32(r, (17, 45))),
        ("matvec_f32", "a @ x, float32 (32, 64) @ (64,)", lambda r: f32(r, (32, 64)) @ f32(r, (64,))),
        (
            "matmul_half_wmma",
            "a.matmul(b, dtype=float), half (64, 64) @ (64, 64), float accumulation (WMMA)",
            lambda r: f16(r, (64, 64)).matmul(f16(r, (64, 64)), dtype=dtypes.float),
        ),
        (
            "matmul_half_out",
            "a @ b, half (32, 64) @ (64, 32) -> half (WMMA)",
            lambda r: f16(r, (32, 64)) @ f16(r, (64, 32)),
        ),
        (
            "conv2d",
            "x.conv2d(w, bias, padding=1), x (1, 3, 12, 12), w (8, 3, 3, 3), float32",
            lambda r: f32(r, (1, 3, 12, 12)).conv2d(f32(r, (8, 3, 3, 3)), f32(r, (8,)), padding=1),
        ),
        (
            "conv2d_stride",
            "x.conv2d(w, stride=2), x (2, 4, 11, 11), w (6, 4, 3, 3), float32",
            lambda r: f32(r, (2, 4, 11, 11)).conv2d(f32(r, (6, 4, 3, 3)), stride=2),
        ),
        ("max_pool2d", "x.max_pool2d(2), float32 (1, 4, 16, 16)", lambda r: f32(r, (1, 4, 16, 16)).max_pool2d(2)),
        (
            "avg_pool2d",
            "x.avg_pool2d(3, stride=2, padding=1), float32 (1, 4, 15, 15)",
            lambda r: f32(r, (1, 4, 15, 15)).avg_pool2d(3, stride=2, padding=1),
        ),
        # indexing
        ("gather_index", "x[idx], x float32 (64,), idx int32 (100,)", lambda r: f32(r, (64,))[ints(r, (100,), 0, 64)]),
        (
            "gather_dim",
            "x.gather(1, idx), x float32 (16, 32), idx int32 (16, 8)",
            lambda r: f32(r, (16, 32)).gather(1, ints(r, (16, 8), 0, 32)),
        ),
        # symbolic
        (
            "var_shrink_sum",
            "a[:i].sum(1) with i = Variable('i', 1, 10).bind(3), float32 (10, 64)",
            lambda r: f32(r, (10, 64))[:v].sum(1).contiguous(),
        ),
        (
            "var_arith",
            "a * i + i with i = Variable('i', 1, 10).bind(3), float32 (300,)",
            lambda r: f32(r, (300,)) * v + v,
        ),
    ]


def main():
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("out", type=Path, nargs="?", help="output directory (hal/amd/tests/data/kernels)")
    ap.add_argument("--only", nargs="+", metavar="SUBSTR", help="only the cases whose name contains one of these")
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    args = ap.parse_args()
    if args.out is None and not args.list:
        ap.error("the output directory is required")

    for k in KNOBS:
        os.environ.pop(k, None)
    os.environ.update(DEV="CPU", PARALLEL="0", CACHELEVEL="0")
    try:
        import numpy as np
        from tinygrad import Tensor, Variable, dtypes
        from tinygrad.codegen import to_program, to_program_cache, to_program_key
        from tinygrad.device import MultiBuffer
        from tinygrad.engine import realize
        from tinygrad.helpers import Target
        from tinygrad.renderer.llvmir import AMDLLVMRenderer
        from tinygrad.uop.ops import Ops, PatternMatcher, UPat
    except ImportError as e:
        sys.exit(
            f"amd_kernels.py needs tinygrad 0.14 and numpy ({e}): run it with the tinygrad venv's python, e.g. /tmp/tgv/bin/python"
        )

    all_cases = cases(Tensor, dtypes, Variable, np)
    if args.list:
        for name, desc, _ in all_cases:
            print(f"{name:20s} {desc}")
        return
    if args.only:
        all_cases = [c for c in all_cases if any(s in c[0] for s in args.only)]

    amd = AMDLLVMRenderer(Target("AMD", "LLVM", "gfx1100"))

    # which kernel AST each compiled (CPU) PROGRAM came from: lower_and_compile swaps the AST for the PROGRAM
    prg_ast = {}
    lower_and_compile = realize.lower_and_compile

    def lower_and_compile_noting_asts(linear):
        todo = [a for c in linear.toposort() if c.op is Ops.CALL and (a := realize._get_call_to_compile(c)) is not None]
        out = lower_and_compile(linear)
        for ast, ren in todo:
            if ast.op is Ops.SINK:
                prg_ast[to_program_cache[to_program_key(ast, ren)].key] = ast
        return out

    realize.lower_and_compile = lower_and_compile_noting_asts

    state = {"case": None, "launches": []}
    exec_kernel = realize.exec_kernel

    def exec_kernel_recording(ctx, call, ast):
        if state["case"] is None or ast.key not in prg_ast:
            return exec_kernel(ctx, call, ast)
        bufs = [u.buffer for u in realize.resolve_params(call, ctx.input_uops)]
        if any(isinstance(b, MultiBuffer) for b in bufs):
            return exec_kernel(ctx, call, ast)
        prg = to_program(prg_ast[ast.key], amd)
        info = prg.arg
        rec = {"ast": ast, "prg": prg, "skip": None}
        state["launches"].append(rec)
        slots = list(info.globals)
        if sorted(slots) != sorted(ast.arg.globals):
            rec["skip"] = f"AMD buffers {slots} != CPU buffers {list(ast.arg.globals)}"
        args_b = [bufs[i].ensure_allocated() for i in slots]
        if any(b.nbytes > MAX_BUF for b in args_b):
            rec["skip"] = "a buffer over 64 KiB"
        for i, a in enumerate(args_b):
            for b in args_b[i + 1 :]:
                if a.base is b.base and a.offset < b.offset + b.nbytes and b.offset < a.offset + a.nbytes:
                    rec["skip"] = "aliasing buffers"
        if rec["skip"]:
            return exec_kernel(ctx, call, ast)
        gs, ls = info.launch_dims(ctx.var_vals)
        assert ls is not None and all(isinstance(x, int) for x in (*gs, *ls)), (gs, ls)
        assert all(x.dtype == dtypes.int32 for x in info.vars), info.vars
        # the kernel's parameters are data<slot>, buffers then vals: check the order the code object takes them in
        src = next(u.arg for u in prg.src if u.op is Ops.SOURCE)
        define = next(line for line in src.splitlines() if line.startswith("define"))
        params = [p.strip().split("%")[-1] for p in define[define.index("(") + 1 : define.rindex(")")].split(",")]
        want_params = [f"data{s}" for s in slots] + [f"data{x.arg.slot}" for x in info.vars]
        assert params == want_params, (params, want_params)
        outs_only = (set(ast.arg.outs) | set(info.outs)) - set(ast.arg.ins) - set(info.ins)
        for s in outs_only:
            b = bufs[s]
            if b.base is b:
                b.as_memoryview(force_zero_copy=True)[:] = b"\xa5" * b.nbytes
        rec["init"] = [bytes(b.as_memoryview(allow_zero_copy=True)) for b in args_b]
        ret = exec_kernel(ctx, call, ast)
        rec["want"] = [bytes(b.as_memoryview(allow_zero_copy=True)) for b in args_b]
        rec.update(
            bufs=args_b,
            gs=gs,
            ls=ls,
            vals=[int(x) for x in info.vals(ctx.var_vals)],
            co=next(u.arg for u in prg.src if u.op is Ops.BINARY),
        )
        return ret

    # pattern matcher callbacks can't be closures: the recorder comes in as a default argument
    realize.pm_exec = (
        PatternMatcher(
            [
                (
                    UPat(Ops.CALL, src=(UPat(Ops.PROGRAM, name="ast"),), name="call", allow_any_len=True),
                    lambda ctx, call, ast, rec=exec_kernel_recording: rec(ctx, call, ast),
                )
            ]
        )
        + realize.pm_exec
    )

    args.out.mkdir(parents=True, exist_ok=True)
    for p in list(args.out.glob("*.json")) + list(args.out.glob("*.co")):
        p.unlink()
    objdump = shutil.which("llvm-objdump-19")
    seen, total, written = set(), 0, 0
    for name, desc, build in all_cases:
        rng = np.random.default_rng(0)
        out = build(rng)
        # contiguous: a tensor that is only an expression of consts and vars is otherwise left unrealized
        outs = [o.contiguous() for o in (out if isinstance(out, list) else [out])]
        state["case"], state["launches"] = name, []
        Tensor.realize(*outs)
        state["case"] = None
        recs = []
        for r in state["launches"]:
            if r["skip"]:
                print(f"{name}: skipped {r['prg'].arg.function_name} ({r['skip']})")
                continue
            h = hashlib.sha256(r["co"] + repr((r["gs"], r["ls"], r["vals"])).encode() + b"".join(r["init"])).hexdigest()
            if h in seen:
                print(f"{name}: {r['prg'].arg.function_name} is a duplicate of an earlier case")
            else:
                recs.append(r)
            seen.add(h)
        if not recs:
            print(f"{name}: no new kernel recorded", file=sys.stderr)
        for k, r in enumerate(recs):
            case = name if len(recs) == 1 else f"{name}_{k}"
            j = {
                "name": r["prg"].arg.function_name,
                "case": desc if len(recs) == 1 else f"{desc} (kernel {k + 1} of {len(recs)})",
                "co": f"{case}.co",
                "global": list(r["gs"]),
                "local": list(r["ls"]),
                "vals": r["vals"],
                "bufs": [
                    {"dtype": b.dtype.name, "init": i.hex(), "want": w.hex()}
                    for b, i, w in zip(r["bufs"], r["init"], r["want"])
                ],
            }
            (args.out / f"{case}.co").write_bytes(r["co"])
            text = json.dumps(j, indent=1) + "\n"
            (args.out / f"{case}.json").write_text(text)
            total += len(text) + len(r["co"])
            written += 1
            feats = ""
            if objdump:
                with tempfile.NamedTemporaryFile(suffix=".co") as f:
                    f.write(r["co"])
                    f.flush()
                    lst = subprocess.run(
                        [objdump, "-d", "--mcpu=gfx1100", f.name], capture_output=True, text=True, check=True
                    ).stdout
                ins = [
                    line.split("//")[0].split() for line in lst.splitlines() if line.startswith("\t") and "//" in line
                ]
                ops = {x[0] for x in ins if x}
                feats = " ".join(
                    f
                    for f, p in (("LDS", "ds_"), ("WMMA", "v_wmma"), ("scratch", "scratch_"))
                    if any(o.startswith(p) for o in ops)
                )
            print(f"{case:22s} {j['name']:28s} global {j['global']} local {j['local']} vals {j['vals']} {feats}")
    print(f"{written} cases, {total / 1e6:.2f} MB in {args.out}")


if __name__ == "__main__":
    main()
