"""A model file for `tools/export_tinygrad.py --model` (the `--qcom-jit` route of tools/zoo.py): an ONNX model loaded with
tinygrad 0.14's ONNX frontend (`tinygrad.nn.onnx.OnnxRunner`), called as openpilot's compile3.py calls it (the first output,
cast to float32).

The zoo passes the model through the environment: `ZOO_ONNX` (the .onnx file) and `ZOO_INPUTS` (a .npz with one array per
graph input, by name: the example inputs, which the bundle records as its inputs). `build()` returns a function of the graph
inputs in the ONNX graph's order and the example inputs realized on tinygrad's default device (QCOM under --qcom-jit).
"""
import os

import numpy as np


def _need(var):
  path = os.environ.get(var)
  if not path: raise RuntimeError(f"tools/zoo/onnx_model.py: {var} is not set (tools/zoo.py sets it to the model's file)")
  if not os.path.isfile(path): raise RuntimeError(f"tools/zoo/onnx_model.py: {var}={path}: no such file")
  return path


NAME = os.path.splitext(os.path.basename(os.environ.get("ZOO_ONNX", "zoo_onnx")))[0]


def build(seed=0):
  from tinygrad import Device, Tensor
  from tinygrad.nn.onnx import OnnxRunner
  runner = OnnxRunner(_need("ZOO_ONNX"))
  with np.load(_need("ZOO_INPUTS")) as z: arrays = {k: z[k] for k in z.files}
  names = list(runner.graph_inputs)
  missing = [n for n in names if n not in arrays]
  if missing: raise RuntimeError(f"tools/zoo/onnx_model.py: ZOO_INPUTS has no array for the graph inputs {missing}")
  example = [Tensor(arrays[n], device=Device.DEFAULT).realize() for n in names]

  def fn(*xs):
    return next(iter(runner(dict(zip(names, xs))).values())).cast("float32")

  return fn, example
