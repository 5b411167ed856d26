"""policy_transformer: an openpilot-shaped transformer policy head for the QCOM capture: `features_buffer` (1, 8, 64),
`desire_pulse` (1, 8, 8) and `traffic_convention` (1, 2) float32 -> token embedding (features + a projection of the desire
+ a learned position embedding) -> one pre-norm transformer encoder layer (d_model 64, 2 heads, a GELU MLP of width 128) ->
a final LayerNorm -> the last token with the traffic convention -> a (1, 33) plan. fp16 weights (about 37 k parameters),
float32 arithmetic.

The attention scale is computed the way an ONNX export of scaled dot-product attention computes it (Shape -> Gather -> Cast
-> Sqrt -> Reciprocal) and the way tinygrad's ONNX frontend runs it: `Shape` is a Tensor made from a Python list, which
tinygrad keeps on its PYTHON device and copies in at the start of the JIT (without prune the capture holds that copy; the
exporter turns the PYTHON buffer into a weight of the bundle).
"""
import os, sys
import numpy as np
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oplayers import Linear, Params  # noqa: E402

NAME = "policy_transformer"
TOKENS, D, HEADS, FF, DESIRE, PLAN = 8, 64, 2, 128, 8, 33


class LayerNorm:
  def __init__(self, p, d):
    self.g = p.tensor((d,), 1.0)
    self.b = p.tensor((d,), 1.0e4)

  def __call__(self, x): return x.layernorm(axis=-1, eps=1e-5) * self.g.float() + self.b.float()


def build(seed=0):
  from tinygrad import Tensor, dtypes
  p = Params(seed)
  desire_in, pos = Linear(p, DESIRE, D), p.tensor((TOKENS, D), 1.0)
  ln1, qkv, proj = LayerNorm(p, D), Linear(p, D, 3 * D), Linear(p, D, D)
  ln2, ff1, ff2 = LayerNorm(p, D), Linear(p, D, FF), Linear(p, FF, D)
  ln_f, plan = LayerNorm(p, D), Linear(p, D + 2, PLAN)
  rng = np.random.default_rng([seed, 7])
  features = Tensor(rng.standard_normal((1, TOKENS, D)).astype(np.float32)).realize()
  desire = Tensor(rng.standard_normal((1, TOKENS, DESIRE)).astype(np.float32)).realize()
  traffic = Tensor(rng.standard_normal((1, 2)).astype(np.float32)).realize()

  def attention(x):
    b, t, _ = x.shape
    q, k, v = [y.reshape(b, t, HEADS, D // HEADS).transpose(1, 2) for y in qkv(x).chunk(3, dim=-1)]
    # ONNX: Shape(q) -> Gather(-1) -> Cast(float) -> Sqrt -> Reciprocal, as tinygrad's ONNX Shape op builds it
    shape = Tensor(list(q.shape), dtype=dtypes.int64, device=q.device)
    scale = shape[-1].cast(dtypes.float).sqrt().reciprocal()
    att = (q @ k.transpose(-2, -1) * scale).softmax(-1)
    return proj((att @ v).transpose(1, 2).reshape(b, t, D))

  def fn(features, desire, traffic):
    x = features + desire_in(desire) + pos.float()
    x = x + attention(ln1(x))
    x = x + ff2(ff1(ln2(x)).gelu())
    last = ln_f(x)[:, -1, :]
    return plan(last.cat(traffic, dim=1))

  fn.n_params = p.count
  return fn, [features, desire, traffic]
