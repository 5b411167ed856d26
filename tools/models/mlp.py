"""mlp: Linear(32,64)+ReLU, Linear(64,64)+ReLU, Linear(64,10) on an 8x32 float32 batch (like shared/bundles/mlp).

Weights and the example input come from numpy's seeded generator, so `reference()` recomputes the output without tinygrad.
"""
import numpy as np

NAME = "mlp"
LAYERS = [(32, 64), (64, 64), (64, 10)]
BATCH = 8


def params(seed):
  """(list of (weight[out,in], bias[out]), input[BATCH, 32]) for `seed`, float32, in tinygrad Linear's layout."""
  rng = np.random.default_rng(seed)
  layers = []
  for fin, fout in LAYERS:
    bound = 1.0 / np.sqrt(fin)
    layers.append((rng.uniform(-bound, bound, (fout, fin)).astype(np.float32), rng.uniform(-bound, bound, (fout,)).astype(np.float32)))
  return layers, rng.standard_normal((BATCH, LAYERS[0][0])).astype(np.float32)


def build(seed=0):
  from tinygrad import Tensor
  from tinygrad.nn import Linear
  weights, x = params(seed)
  layers = []
  for (fin, fout), (w, b) in zip(LAYERS, weights):
    lin = Linear(fin, fout)
    lin.weight, lin.bias = Tensor(w).realize(), Tensor(b).realize()
    layers.append(lin)

  def fn(x):
    for i, lin in enumerate(layers):
      x = lin(x)
      if i < len(layers) - 1: x = x.relu()
    return x

  return fn, [Tensor(x).realize()]


def reference(inputs, seed=0):
  """The model in numpy (float64 accumulation) for the given input arrays; returns the list of outputs."""
  weights, _ = params(seed)
  h = inputs[0].astype(np.float64)
  for i, (w, b) in enumerate(weights):
    h = h @ w.T.astype(np.float64) + b
    if i < len(weights) - 1: h = np.maximum(h, 0.0)
  return [h]
