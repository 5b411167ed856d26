"""symbolic: kernels with integer values in their arguments, from a bound Variable the JIT takes beside its Tensor.

x[32,32] float32 and n = Variable("n", 1, 32) bound to 20: relu(x[:n] @ w).sum(0) and the row sums of 2·x[:n] + 1, padded
with zeros to 32. tinygrad passes n to the kernels as an int32 value (`launches[].vals`); the bundle keeps the value it was
exported with (N). About 2 KiB of weights.
"""
import numpy as np

NAME = "symbolic"
ROWS, COLS, OUT = 32, 32, 16
N = 20


def params(seed):
  rng = np.random.default_rng(seed)
  return rng.uniform(-0.5, 0.5, (COLS, OUT)).astype(np.float32), rng.standard_normal((ROWS, COLS)).astype(np.float32)


def build(seed=0):
  from tinygrad import Tensor, Variable
  w, x = params(seed)
  w, x = Tensor(w).realize(), Tensor(x).realize()

  def fn(x, n):
    return (x[:n] @ w).relu().sum(0).contiguous(), (x[:n] * 2 + 1).sum(1).pad(((0, ROWS - n),)).contiguous()

  return fn, [x, Variable("n", 1, ROWS).bind(N)]


def reference(inputs, seed=0):
  w, _ = params(seed)
  x = inputs[0].astype(np.float64)[:N]
  return [np.maximum(x @ w.astype(np.float64), 0.0).sum(0), np.pad((x * 2 + 1).sum(1), (0, ROWS - N))]
