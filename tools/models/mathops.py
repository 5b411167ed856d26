"""mathops: transcendental and elementwise float ops (exp2, sqrt, sin, log, tanh, abs, division), a where on an
integer mask, cumsum, argmax, a count and a max; six outputs.

An exporter/runner test model without a numpy reference: tinygrad's own outputs are the bundle's expected bytes.
"""
NAME = "mathops"
def build(seed=0):
  from tinygrad import Tensor, dtypes
  Tensor.manual_seed(seed)
  x = Tensor.randn(300).realize()
  i = Tensor.arange(300).realize()
  def fn(x):
    a = (x * 3).exp2().sqrt().sin() + x.abs().log()
    b = (i % 7 == 3).where(x, -x).cumsum()
    c = x.argmax()
    d = (x > 0).sum()
    e = x.cast(dtypes.half).float() * x.tanh() / (x.square() + 1)
    return a, b, c.cast(dtypes.int32), d, e.max(), x.exp()
  return fn, [x]
