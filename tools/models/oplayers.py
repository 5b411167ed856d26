"""Layers shared by the openpilot look-alike models (driving, dm, qcom_small): fp16 weights (openpilot ships fp16 weights),
arithmetic in float32, depthwise/pointwise convolution blocks. Weights come from numpy's seeded generator."""
import numpy as np


class Params:
  """Seeded fp16 parameters; `count` is the number of parameters made so far."""
  def __init__(self, seed):
    self.rng, self.count = np.random.default_rng(seed), 0

  def tensor(self, shape, fan_in):
    from tinygrad import Tensor
    a = (self.rng.standard_normal(shape) * (1.0 / np.sqrt(fan_in))).astype(np.float16)
    self.count += a.size
    return Tensor(a).realize()


class Conv:
  def __init__(self, p, cin, cout, k, stride=1, groups=1, padding=None):
    self.w = p.tensor((cout, cin // groups, k, k), cin // groups * k * k)
    self.b = p.tensor((cout,), 1.0e4)
    self.stride, self.groups, self.padding = stride, groups, (k // 2 if padding is None else padding)

  def __call__(self, x):
    return x.conv2d(self.w.float(), self.b.float(), groups=self.groups, stride=self.stride, padding=self.padding)


class Linear:
  def __init__(self, p, fin, fout):
    self.w, self.b = p.tensor((fin, fout), fin), p.tensor((fout,), 1.0e4)

  def __call__(self, x): return x.dot(self.w.float()) + self.b.float()


class DwPw:
  """Depthwise 3x3 (stride s) + pointwise 1x1, each followed by ReLU6-like clipping."""
  def __init__(self, p, cin, cout, stride):
    self.dw, self.pw = Conv(p, cin, cin, 3, stride, groups=cin), Conv(p, cin, cout, 1)

  def __call__(self, x): return self.pw(self.dw(x).relu().clip(0, 6)).relu().clip(0, 6)
