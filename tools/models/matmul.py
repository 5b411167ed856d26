"""matmul: one matrix product large enough that tinygrad 0.14 splits it over CPU threads (`core_id` kernels).

x[192,192] @ w[192,192] + b -> relu. The time of a call is in the split matmul: the bundle that measures `core_id`
fan-out (tools/bench_peer.py's `matmul` row, `hcq_cpu`'s call bench). About 290 KiB of inputs and weights.
"""
import numpy as np

NAME = "matmul"
N = 192


def params(seed):
  rng = np.random.default_rng(seed)
  bound = 1.0 / np.sqrt(N)
  w = rng.uniform(-bound, bound, (N, N)).astype(np.float32)
  b = rng.uniform(-bound, bound, (N,)).astype(np.float32)
  return (w, b), rng.standard_normal((N, N)).astype(np.float32)


def build(seed=0):
  from tinygrad import Tensor
  (w, b), x = params(seed)
  w, b, x = Tensor(w).realize(), Tensor(b).realize(), Tensor(x).realize()

  def fn(x):
    return (x @ w + b).relu()

  return fn, [x]


def reference(inputs, seed=0):
  (w, b), _ = params(seed)
  x = inputs[0].astype(np.float64)
  return [np.maximum(x @ w.astype(np.float64) + b, 0.0)]
