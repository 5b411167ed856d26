"""Figures of the Python package, in one run: the overhead of `m.run` over the native call
(chain100 on CPU), and resident memory over many calls.

    python python/bench/overhead.py [--hcq target/release/hcq] [--rounds 5] [--bench target/release/hcq_bench]
                                    [--calls 20000] [--rss-calls 1000000] [--tinygrad]

`--hcq`: the `hcq` binary; the issue's figure, the Python overhead per `m.run` on top of the
native call, is `m.run()` median minus `hcq run BUNDLE --device CPU --iters CALLS --json`'s
`call_us_median` (the front door's `Model::run`, which the C ABI calls), measured in `--rounds`
interleaved rounds in this run (a round: one `hcq run`, then CALLS `m.run()` and `m.run(x)`);
the medians of the rounds are reported.

`--bench`: the compiled examples/c/hcq_bench.c (linked against the same libhcq.so), whose
medians of hcq_model_run and hcq_model_call are the native side, measured in the same run.
`--tinygrad` (run with a python that has tinygrad 0.14, e.g. the project's tinygrad venv, with
HCQ_LIB and PYTHONPATH=python): also times tinygrad's TinyJit call of the same model (chain100:
100 chained `(x + 1).contiguous()`, DEV=CPU::x86_64,x86-64-v2 as tools/bench_peer.py does) and
checks it computes what hcq does.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

import hcq

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def median_ns(f, n):
    t = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        f()
        t.append(time.perf_counter_ns() - t0)
    t.sort()
    return t[n // 2]


def rss_kib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() // 1024


def against_hcq_run(m, x, a):
    """Interleaved rounds of `hcq run --json` (its call_us_median) and `m.run()` / `m.run(x)`
    medians: the Python overhead per call over the native one, as the issue defines it."""
    cmd = [a.hcq, "run", a.bundle, "--device", "CPU", "--iters", str(a.calls), "--json"]
    native, bare, with_x = [], [], []
    for _ in range(a.rounds):
        res = subprocess.run(cmd, capture_output=True, text=True, check=True)
        native.append(json.loads(res.stdout.strip().splitlines()[-1])["call_us_median"] * 1e3)
        bare.append(median_ns(lambda: m.run(), a.calls))
        with_x.append(median_ns(lambda: m.run(x), a.calls))
    med = lambda v: sorted(v)[len(v) // 2]  # noqa: E731
    n, b, w = med(native), med(bare), med(with_x)
    print(f"{' '.join(cmd[1:])}: call_us_median per round {[round(v / 1e3, 2) for v in native]}")
    print(
        f"m.run() median per round {[round(v / 1e3, 2) for v in bare]}; m.run(x) {[round(v / 1e3, 2) for v in with_x]}"
    )
    print(f"{'hcq run call_us_median':40s} median {n / 1e3:7.2f} us ({a.rounds} rounds)")
    print(f"{'m.run()':40s} median {b / 1e3:7.2f} us")
    print(f"{'m.run(x)':40s} median {w / 1e3:7.2f} us")
    print(
        f"Python overhead per m.run over hcq run: {(b - n) / 1e3:.2f} us (m.run(x), which also copies "
        f"the input in and returns a new output array: {(w - n) / 1e3:.2f} us)"
    )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bundle", default=os.path.join(ROOT, "examples/chain100"))
    ap.add_argument("--bench", default=None)
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--rss-calls", type=int, default=1000000)
    ap.add_argument("--tinygrad", action="store_true")
    ap.add_argument("--hcq", default=None, help="the hcq binary: compare m.run with `hcq run` in the same run")
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    print(f"libhcq {hcq.__version__} at {hcq.library_path()}")
    m = hcq.load(a.bundle, device="CPU")
    x = np.arange(16, dtype=np.float32)
    out = [np.empty(t.shape, t.dtype) for t in m.outputs]
    for _ in range(2000):
        m.run(x)
    h = m._h
    rows = [
        ("ctypes hcq_model_run (no wrapper)", median_ns(lambda: hcq._model_run(h), a.calls)),
        ("m.run()        (inputs as they are)", median_ns(lambda: m.run(), a.calls)),
        ("m.run(x)       (copy in, new output)", median_ns(lambda: m.run(x), a.calls)),
        ("m.run(x, out=) (copy in, into out)", median_ns(lambda: m.run(x, out=out), a.calls)),
    ]
    if a.hcq:
        against_hcq_run(m, x, a)
    native = {}
    if a.bench:
        res = subprocess.run([a.bench, a.bundle, str(a.calls)], capture_output=True, text=True, check=True)
        for line in res.stdout.split("\n"):
            if line:
                k, v = line.split()
                native[k] = int(v)
    if a.tinygrad:
        os.environ.setdefault("DEV", "CPU::x86_64,x86-64-v2")
        from tinygrad import Device, Tensor, TinyJit

        def chain(t):
            for _ in range(100):
                t = (t + 1).contiguous()
            return t

        jit = TinyJit(chain)
        tx = Tensor(x).realize()
        dev = Device[tx.device]
        for _ in range(100):
            r = jit(tx)
        if not np.array_equal(r.numpy(), m.run(x)[0]):
            raise SystemExit("tinygrad's chain100 differs from hcq's")

        def tg():
            jit(tx)
            dev.synchronize()

        rows.append(("tinygrad TinyJit call + synchronize", median_ns(tg, min(a.calls, 5000))))
    for name, ns in rows:
        print(f"{name:40s} median {ns / 1e3:7.2f} us")
    if native:
        run_ns, call_ns = native["native_run_median_ns"], native["native_call_median_ns"]
        print(f"{'C hcq_model_run':40s} median {run_ns / 1e3:7.2f} us")
        print(f"{'C hcq_model_call (copy in and out)':40s} median {call_ns / 1e3:7.2f} us")
        print(
            f"Python overhead: m.run() - C run {(rows[1][1] - run_ns) / 1e3:.2f} us; "
            f"m.run(x) - C call {(rows[2][1] - call_ns) / 1e3:.2f} us; "
            f"m.run(x, out=) - C call {(rows[3][1] - call_ns) / 1e3:.2f} us"
        )
    # resident memory over many calls, after a warm-up
    for _ in range(10000):
        m.run(x)
    r0 = rss_kib()
    t0 = time.perf_counter()
    step = max(1, a.rss_calls // 10)
    peak = r0
    for i in range(a.rss_calls):
        m.run(x)
        if i % step == 0:
            peak = max(peak, rss_kib())
    r1 = rss_kib()
    peak = max(peak, r1)
    dt = time.perf_counter() - t0
    print(
        f"RSS over {a.rss_calls} m.run(x) calls ({dt:.1f} s): {r0} KiB after warm-up, {r1} KiB at the end, "
        f"peak {peak} KiB: growth {r1 - r0:+d} KiB"
    )
    m.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
