"""chain100: 100 chained `x + 1` kernels on 16 floats (like examples/chain100): one program launched 100 times, for measuring
dispatch cost. Each step is `.contiguous()`, so tinygrad keeps 100 kernels (ping-ponging through its memory-planner arena)."""
import numpy as np

NAME = "chain100"
STEPS, N = 100, 16


def build(seed=0):
  from tinygrad import Tensor
  x = np.random.default_rng(seed).standard_normal(N).astype(np.float32)

  def fn(x):
    for _ in range(STEPS): x = (x + 1).contiguous()
    return x

  return fn, [Tensor(x).realize()]


def reference(inputs, seed=0):
  return [inputs[0].astype(np.float64) + STEPS]
