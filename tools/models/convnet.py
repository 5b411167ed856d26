"""convnet: two 3x3 convolutions with ReLU and max-pooling, a linear layer, log-softmax (7 kernels).

An exporter/runner test model without a numpy reference: tinygrad's own outputs are the bundle's expected bytes.
"""
NAME = "convnet"
def build(seed=0):
  from tinygrad import Tensor, nn
  Tensor.manual_seed(seed)
  c1 = nn.Conv2d(3, 8, 3); c2 = nn.Conv2d(8, 16, 3); l = nn.Linear(16*5*5, 10)
  for p in nn.state.get_parameters([c1,c2,l]): p.realize()
  x = Tensor.randn(2, 3, 16, 16).realize()
  def fn(x):
    h = c1(x).relu().max_pool2d()
    h = c2(h).relu().max_pool2d(1)
    h = h[:, :, :5, :5].flatten(1)
    return l(h).log_softmax()
  return fn, [x]
