"""driving_big: a larger look-alike of openpilot's driving model (vision + policy in one JIT, like compile_modeld.py), sized
like openpilot's driving_vision + policy (about 25 M fp16 parameters, ~50 MB of weights) for the load-to-first-call benchmark
(tools/bench_load.py). The layout of tools/models/driving.py with wider convolution blocks and a wider vision head.

Vision: two (1, 12, 128, 256) uint8 frames (two frames x 6 YUV planes) -> scaled to [0, 1] -> 2x2 average pooling -> a 2x2
stride-2 stem -> four depthwise/pointwise blocks (64 -> 512 channels) -> a 1024-wide then 512-wide feature. Policy:
`features_buffer` (1, 25, 512), `desire_pulse` (1, 25, 8), `traffic_convention` (1, 2) float32 plus the new feature -> a
512-wide hidden state and a (1, 990) plan. The arithmetic is float32. No numpy reference.
"""
import os, sys
import numpy as np
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oplayers import Conv, DwPw, Linear, Params  # noqa: E402

NAME = "driving_big"
PLAN = 990


def build(seed=0):
  from tinygrad import Tensor, dtypes
  p = Params(seed)
  stem = Conv(p, 24, 64, 2, stride=2, padding=0)
  blocks = [DwPw(p, 64, 128, 2), DwPw(p, 128, 256, 2), DwPw(p, 256, 512, 2), DwPw(p, 512, 512, 1)]
  v1, v2 = Linear(p, 512 * 4 * 8, 1024), Linear(p, 1024, 512)
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
