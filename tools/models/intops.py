"""intops: integer and mixed-type arithmetic (floor division, modulo, shifts, bitwise ops, int64, uint8, int16,
bool outputs, float-to-int casts) and reductions, nine outputs.

An exporter/runner test model without a numpy reference: tinygrad's own outputs are the bundle's expected bytes.
"""
NAME = "intops"
def build(seed=0):
  from tinygrad import Tensor, dtypes
  Tensor.manual_seed(seed)
  x = (Tensor.rand(257) * 1000 - 500).cast(dtypes.int32).realize()
  y = Tensor.rand(257).realize()
  u = (Tensor.rand(64) * 255).cast(dtypes.uint8).realize()
  def fn(x, y, u):
    a = (x // 7) + (x % 5) * (x >> 2) - (x << 1) ^ (x & 0x55) | 3
    b = x.cast(dtypes.int64) * 123456789
    c = (y * 2 + 1).sqrt() * y.maximum(0.25)
    d = (u.cast(dtypes.int32) * 3).cast(dtypes.uint8) // 3
    e = (x.float() / 3.5).floor().cast(dtypes.int16)
    f = (x < 10) & (x > -10)
    g = x.cast(dtypes.uint32) >> 3
    return a, b, c, d, e, f, g, x.max(), y.float().mean()
  return fn, [x, y, u]
