"""dm: a look-alike of openpilot's driver-monitoring model: a (1, 1, 192, 256) uint8 camera crop and a (1, 3) float32
calibration -> depthwise/pointwise blocks -> (1, 84) outputs (face pose, eye and blink probabilities in openpilot's model).
About 3.2 M fp16 parameters; the arithmetic is float32.
"""
import os, sys
import numpy as np
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oplayers import Conv, DwPw, Linear, Params  # noqa: E402

NAME = "dm"


def build(seed=0):
  from tinygrad import Tensor, dtypes
  p = Params(seed)
  # the 4x4 stride-4 stem on the one-channel crop as space-to-depth + a 1x1 convolution (the same arithmetic): tinygrad
  # 0.14 cannot schedule an IMAGE=1 convolution with one input channel ("UOp verification failed ... WHERE ... CAST half"
  # from the channel padding to 4), and openpilot's flags include IMAGE=1
  stem = Conv(p, 16, 16, 1, stride=1, padding=0)
  blocks = [DwPw(p, 16, 32, 2), DwPw(p, 32, 64, 2), DwPw(p, 64, 128, 2), DwPw(p, 128, 128, 1)]
  l1, l2, cal = Linear(p, 128 * 6 * 8, 512), Linear(p, 512 + 16, 84), Linear(p, 3, 16)
  rng = np.random.default_rng([seed, 7])
  img = Tensor(rng.integers(0, 256, (1, 1, 192, 256), dtype=np.uint8)).realize()
  calib = Tensor(rng.standard_normal((1, 3)).astype(np.float32)).realize()

  def fn(img, calib):
    s2d = img.reshape(1, 1, 48, 4, 64, 4).permute(0, 1, 3, 5, 2, 4).reshape(1, 16, 48, 64)
    x = stem(s2d.cast(dtypes.float) * (1 / 255.0)).relu()
    for b in blocks: x = b(x)
    h = l1(x.flatten(1)).relu().cat(cal(calib).relu(), dim=1)
    return l2(h).sigmoid()

  fn.n_params = p.count
  return fn, [img, calib]
