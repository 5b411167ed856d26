"""wide: a model large enough that tinygrad 0.14 splits its matmuls over CPU threads (kernels with a `core_id` argument).

x[64,128] -> Linear(128,128)+ReLU -> Linear(128,64) = logits; outputs (softmax(logits, axis=1), logits.sum(axis=0)).
Two outputs, reductions and memory-planner arena views. About 100 KiB of weights.
"""
import numpy as np

NAME = "wide"
BATCH, D_IN, D_HID, D_OUT = 64, 128, 128, 64


def params(seed):
  rng = np.random.default_rng(seed)
  def lin(fin, fout):
    bound = 1.0 / np.sqrt(fin)
    return rng.uniform(-bound, bound, (fout, fin)).astype(np.float32), rng.uniform(-bound, bound, (fout,)).astype(np.float32)
  layers = [lin(D_IN, D_HID), lin(D_HID, D_OUT)]
  return layers, rng.standard_normal((BATCH, D_IN)).astype(np.float32)


def build(seed=0):
  from tinygrad import Tensor
  (w1, b1), (w2, b2) = (tuple(Tensor(a).realize() for a in layer) for layer in params(seed)[0])
  x = Tensor(params(seed)[1]).realize()

  def fn(x):
    logits = x.linear(w1.T, b1).relu().linear(w2.T, b2)
    return logits.softmax(axis=1), logits.sum(axis=0)

  return fn, [x]


def reference(inputs, seed=0):
  (w1, b1), (w2, b2) = params(seed)[0]
  x = inputs[0].astype(np.float64)
  logits = np.maximum(x @ w1.T.astype(np.float64) + b1, 0.0) @ w2.T.astype(np.float64) + b2
  e = np.exp(logits - logits.max(axis=1, keepdims=True))
  return [e / e.sum(axis=1, keepdims=True), logits.sum(axis=0)]
