"""qcom_small: a small openpilot-shaped model for the QCOM capture (tools/export_tinygrad.py --qcom-jit): a (1, 8) float32
vector and a (1, 4, 32, 32) uint8 frame -> a 3x3 convolution, one depthwise/pointwise block, a linear layer on the
feature and the vector -> (1, 16). fp16 weights (about 9 k parameters), float32 arithmetic.
"""
import os, sys
import numpy as np
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oplayers import Conv, DwPw, Linear, Params  # noqa: E402

NAME = "qcom_small"


def build(seed=0):
  from tinygrad import Tensor, dtypes
  p = Params(seed)
  stem, block = Conv(p, 4, 8, 3, stride=2), DwPw(p, 8, 16, 2)
  head, vec = Linear(p, 16 * 8 * 8 + 8, 16), Linear(p, 8, 8)
  rng = np.random.default_rng([seed, 3])
  img = Tensor(rng.integers(0, 256, (1, 4, 32, 32), dtype=np.uint8)).realize()
  v = Tensor(rng.standard_normal((1, 8)).astype(np.float32)).realize()

  # the vector first: the JIT takes its inputs in another order than its HCQ graph reads them (the frame's kernels come
  # first), which the capture must resolve as tinygrad does (tools/qcom_capture.py checks every item's buffers)
  def fn(v, img):
    x = block(stem(img.cast(dtypes.float) * (1 / 255.0)).relu())
    return head(x.flatten(1).cat(vec(v).relu(), dim=1)).tanh()

  fn.n_params = p.count
  return fn, [v, img]
