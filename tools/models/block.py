"""block: a pre-norm transformer block (LayerNorm, 4-head causal attention, GELU MLP) on 32 tokens of width 64.

An exporter/runner test model (16 kernels, 2 with core_id) without a numpy reference: tinygrad's own outputs are the
bundle's expected bytes.
"""
NAME = "block"
def build(seed=0):
  from tinygrad import Tensor, nn
  Tensor.manual_seed(seed)
  D, T = 64, 32
  q = nn.Linear(D, D); k = nn.Linear(D, D); v = nn.Linear(D, D); o = nn.Linear(D, D); ln = nn.LayerNorm(D)
  f1 = nn.Linear(D, 4*D); f2 = nn.Linear(4*D, D)
  for p in nn.state.get_parameters([q,k,v,o,ln,f1,f2]): p.realize()
  x = Tensor.randn(1, T, D).realize()
  def fn(x):
    h = ln(x)
    a = Tensor.scaled_dot_product_attention(q(h).reshape(1,T,4,16).transpose(1,2), k(h).reshape(1,T,4,16).transpose(1,2), v(h).reshape(1,T,4,16).transpose(1,2), is_causal=True)
    x = x + o(a.transpose(1,2).reshape(1,T,D))
    return x + f2(f1(ln(x)).gelu())
  return fn, [x]
