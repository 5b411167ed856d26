"""driving: a look-alike of openpilot's driving model (vision + policy in one JIT, like compile_modeld.py).

Vision: two (1, 12, 128, 256) uint8 frames (two frames x 6 YUV planes) -> scaled to [0, 1] -> 2x2 average pooling -> a 2x2
stride-2 stem -> four depthwise/pointwise blocks -> a 512-wide feature. Policy: `features_buffer` (1, 25, 512),
`desire_pulse` (1, 25, 8), `traffic_convention` (1, 2) float32 plus the new feature -> a 512-wide hidden state and a
(1, 990) plan. About 16.9 M fp16 parameters; the arithmetic is float32.
"""
import os, sys
import numpy as np
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oplayers import Conv, DwPw, Linear, Params  # noqa: E402

NAME = "driving"
PLAN = 990


def build(seed=0, widths=(32, 64, 128, 256, 256)):
  """`widths`: the stem's channels, then each depthwise/pointwise block's (tools/models/driving_big.py
  builds the same layout wider)."""
  from tinygrad import Tensor, dtypes
  p = Params(seed)
  stem = Conv(p, 24, widths[0], 2, stride=2, padding=0)
  blocks = [DwPw(p, a, b, 2 if i < 3 else 1) for i, (a, b) in enumerate(zip(widths, widths[1:]))]
  v1, v2 = Linear(p, widths[-1] * 4 * 8, 1024), Linear(p, 1024, 512)
  f1, d1, t1 = Linear(p, 25 * 512, 512), Linear(p, 25 * 8, 64), Linear(p, 2, 16)
  h1, plan = Linear(p, 512 + 64 + 16 + 512, 512), Linear(p, 512, PLAN)
  rng = np.random.default_rng([seed, 99])
  img = Tensor(rng.integers(0, 256, (1, 12, 128, 256), dtype=np.uint8)).realize()
  big_img = Tensor(rng.integers(0, 256, (1, 12, 128, 256), dtype=np.uint8)).realize()
  features = Tensor(rng.standard_normal((1, 25, 512)).astype(np.float32)).realize()
  desire = Tensor(rng.standard_normal((1, 25, 8)).astype(np.float32)).realize()
  traffic = Tensor(rng.standard_normal((1, 2)).astype(np.float32)).realize()

  def fn(img, big_img, features, desire, traffic):
    x = img.cat(big_img, dim=1).cast(dtypes.float) * (1 / 255.0)
    x = stem(x.avg_pool2d(2)).relu()
    for b in blocks: x = b(x)
    feat = v2(v1(x.flatten(1)).relu())
    h = f1(features.flatten(1)).relu().cat(d1(desire.flatten(1)).relu(), t1(traffic).relu(), feat, dim=1)
    hidden = h1(h).relu()
    return hidden, plan(hidden)

  fn.n_params = p.count
  return fn, [img, big_img, features, desire, traffic]
