"""driving_big: a larger look-alike of openpilot's driving model (vision + policy in one JIT, like compile_modeld.py), sized
like openpilot's driving_vision + policy (about 25 M fp16 parameters, ~50 MB of weights) for the load-to-first-call benchmark
(tools/bench_load.py). The layout of tools/models/driving.py with wider convolution blocks and a wider vision head.

Vision: two (1, 12, 128, 256) uint8 frames (two frames x 6 YUV planes) -> scaled to [0, 1] -> 2x2 average pooling -> a 2x2
stride-2 stem -> four depthwise/pointwise blocks (64 -> 512 channels) -> a 1024-wide then 512-wide feature. Policy:
`features_buffer` (1, 25, 512), `desire_pulse` (1, 25, 8), `traffic_convention` (1, 2) float32 plus the new feature -> a
512-wide hidden state and a (1, 990) plan. The arithmetic is float32. No numpy reference.
"""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import driving  # noqa: E402

NAME = "driving_big"
PLAN = driving.PLAN


def build(seed=0):
  return driving.build(seed, widths=(64, 128, 256, 512, 512))
