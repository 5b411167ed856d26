"""A modeld-shaped loop over hcq: a vision model whose feature output feeds a policy model's
input, run on camera frames at a fixed rate, with zero-copy frame input.

    python examples/python/modeld.py [--vision BUNDLE] [--policy BUNDLE] [--frames N] [--hz 20] [--device CPU]

Defaults: chain100 as both models (its [16] float32 output is its [16] float32 input: vision
then policy add 100 each), 20 Hz, 100 frames. The frame buffer is bound to the vision model's
input (`m.bind`): the "camera" writes each frame in place and the model reads it there. The
vision output is written into an array bound as the policy's input: no copy between the two
beyond the one into that array, and nothing allocated per frame. Prints latency percentiles of
a frame (vision + policy) and the host overhead of one `m.run` call over the native call.
Exit status 1 when an output is wrong (for the chain100 default, policy = frame + 200).
"""

import argparse
import os
import sys
import time

import numpy as np

import hcq

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q / 100 * (len(xs) - 1))))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vision", default=os.path.join(ROOT, "examples/chain100"))
    ap.add_argument("--policy", default=os.path.join(ROOT, "examples/chain100"))
    ap.add_argument("--frames", type=int, default=100)
    ap.add_argument("--hz", type=float, default=20.0)
    ap.add_argument("--device", default=None)
    a = ap.parse_args()

    vision = hcq.load(a.vision, device=a.device)
    policy = hcq.load(a.policy, device=a.device)
    vin, vout, pin = vision.inputs[0], vision.outputs[0], policy.inputs[0]
    if (vout.shape, vout.dtype) != (pin.shape, pin.dtype):
        sys.exit(f"vision output {vout} does not fit policy input {pin}")
    print(f"vision {vision.name}: {vin} -> {vout}\npolicy {policy.name}: {pin} -> {policy.outputs}")
    print(f"device {vision.device}, {a.frames} frames at {a.hz:g} Hz")

    frame = np.zeros(vin.shape, vin.dtype)  # the camera's buffer
    feature = np.zeros(pin.shape, pin.dtype)  # vision output = policy input
    vision.bind(0, frame)
    policy.bind(0, feature)
    vision_out = [feature] + [np.empty(t.shape, t.dtype) for t in vision.outputs[1:]]
    policy_out = [np.empty(t.shape, t.dtype) for t in policy.outputs]
    rng = np.random.default_rng(0)
    chain = os.path.basename(a.vision.rstrip("/")) == os.path.basename(a.policy.rstrip("/")) == "chain100"

    lat, bad = [], 0
    period = 1.0 / a.hz
    t_next = time.perf_counter()
    for i in range(a.frames):
        # the camera writes the next frame in place
        frame[...] = rng.standard_normal(vin.shape).astype(vin.dtype) if vin.dtype.kind == "f" else i
        t0 = time.perf_counter()
        vision.run(out=vision_out)
        policy.run(out=policy_out)
        lat.append(time.perf_counter() - t0)
        if chain and not np.allclose(policy_out[0], frame + 200):
            bad += 1
        t_next += period
        time.sleep(max(0.0, t_next - time.perf_counter()))

    # host overhead of one m.run over the native call it makes, on the same model
    n = 2000
    raw = []
    for _ in range(n):
        t = time.perf_counter_ns()
        hcq._model_run(vision._h)
        raw.append(time.perf_counter_ns() - t)
    wrapped = []
    for _ in range(n):
        t = time.perf_counter_ns()
        vision.run(out=vision_out)
        wrapped.append(time.perf_counter_ns() - t)
    us = 1e6
    print(f"frame latency (vision + policy): p50 {pct(lat, 50) * us:.1f} us, p99 {pct(lat, 99) * us:.1f} us, "
          f"max {max(lat) * us:.1f} us over {len(lat)} frames")
    print(f"host overhead per call: {(pct(wrapped, 50) - pct(raw, 50)) / 1e3:.2f} us "
          f"(m.run median {pct(wrapped, 50) / 1e3:.2f} us, native hcq_model_run median {pct(raw, 50) / 1e3:.2f} us)")
    vision.close()
    policy.close()
    if bad:
        print(f"FAIL: {bad} frames with a wrong policy output")
        return 1
    print("PASS" if chain else "done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
