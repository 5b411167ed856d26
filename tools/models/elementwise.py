"""elementwise: one fused 64x64 float32 kernel of mul/add/relu/exp2/sigmoid/sqrt/tanh (like examples/elementwise).

out = tanh(x * w) + sqrt(exp2(relu(1.5 * x + w) - 0.25) * sigmoid(x)), with `w` a fixed 64x64 weight. tinygrad fuses it into one
kernel (`E_1024_4` on CPU, `E_32_32_4` for the Adreno 630); its transcendental functions are tinygrad's own polynomial
approximations, so the shaders carry immediate constants.
"""
import numpy as np

NAME = "elementwise"
SHAPE = (64, 64)


def params(seed):
  """(weight, input) for `seed`, float32."""
  rng = np.random.default_rng(seed)
  return rng.standard_normal(SHAPE).astype(np.float32), rng.standard_normal(SHAPE).astype(np.float32)


def build(seed=0):
  from tinygrad import Tensor
  w, x = params(seed)
  wt = Tensor(w).realize()

  def fn(x):
    return (x * wt).tanh() + (((x * 1.5 + wt).relu() - 0.25).exp2() * x.sigmoid()).sqrt()

  return fn, [Tensor(x).realize()]


def reference(inputs, seed=0):
  w, _ = params(seed)
  x, w = inputs[0].astype(np.float64), w.astype(np.float64)
  return [np.tanh(x * w) + np.sqrt(np.exp2(np.maximum(1.5 * x + w, 0.0) - 0.25) / (1.0 + np.exp(-x)))]
