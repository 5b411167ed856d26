"""argmax_head: a small classifier head for the QCOM capture: a (2, 3, 32, 32) float32 batch -> a 3x3 stride-2 convolution
(16 channels) -> SiLU -> 2x2 max-pooling -> a 3x3 convolution (32 channels) -> SiLU -> global mean -> a linear layer to 5
logits; returns the logits and their argmax (int32). fp16 weights (about 5.5 k parameters), float32 arithmetic.

The argmax reads the logits twice (their maximum, then where it is), which tinygrad compiles as one kernel taking the same
buffer in two parameter slots (`r_2_5`); the exporter must bind that buffer at both.
"""
import os, sys
import numpy as np
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oplayers import Conv, Linear, Params  # noqa: E402

NAME = "argmax_head"
CLASSES = 5


def build(seed=0):
  from tinygrad import Tensor
  p = Params(seed)
  stem = Conv(p, 3, 16, 3, stride=2)
  head = Linear(p, 16, CLASSES)
  rng = np.random.default_rng([seed, 5])
  x = Tensor(rng.standard_normal((2, 3, 32, 32)).astype(np.float32)).realize()

  def fn(x):
    h = stem(x).max_pool2d(2).silu().mean(axis=(2, 3))
    logits = head(h)
    return logits, logits.argmax(axis=1)

  fn.n_params = p.count
  return fn, [x]


def reference(inputs, seed=0):
  """numpy: the same layers from the same seeded fp16 weights (float32 arithmetic)."""
  p = _NpParams(seed)
  w1, b1 = p.tensor((16, 3, 3, 3), 27), p.tensor((16,), 1.0e4)
  w2, b2 = p.tensor((32, 16, 3, 3), 144), p.tensor((32,), 1.0e4)
  wl, bl = p.tensor((32, CLASSES), 32), p.tensor((CLASSES,), 1.0e4)
  silu = lambda a: a / (1 + np.exp(-a))
  x = inputs[0].astype(np.float32)
  h = silu(_conv(x, w1, b1, 2, 1))
  n, c, hh, ww = h.shape
  h = h.reshape(n, c, hh // 2, 2, ww // 2, 2).max(axis=(3, 5))
  h = silu(_conv(h, w2, b2, 1, 1)).mean(axis=(2, 3))
  logits = h @ wl + bl
  return [logits.astype(np.float32), logits.argmax(axis=1).astype(np.int32)]


class _NpParams:
  def __init__(self, seed): self.rng = np.random.default_rng(seed)
  def tensor(self, shape, fan_in): return (self.rng.standard_normal(shape) * (1.0 / np.sqrt(fan_in))).astype(np.float16).astype(np.float32)


def _conv(x, w, b, stride, pad):
  n, c, h, wd = x.shape
  co, _, k, _ = w.shape
  xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
  oh, ow = (h + 2 * pad - k) // stride + 1, (wd + 2 * pad - k) // stride + 1
  cols = np.stack([xp[:, :, i:i + stride * oh:stride, j:j + stride * ow:stride] for i in range(k) for j in range(k)], axis=2)
  out = np.einsum("nckhw,ock->nohw", cols.reshape(n, c, k * k, oh, ow), w.reshape(co, c, k * k))
  return out + b[None, :, None, None]
