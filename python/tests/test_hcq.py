"""pytest tests of the hcq Python package: every call and every error.

Run from the repository root: `pytest python/tests` (with the package installed, or with
HCQ_LIB=target/release/libhcq.so and PYTHONPATH=python)."""

import json
import os
import shutil
import subprocess
import sys
import threading

import numpy as np
import pytest

import hcq

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
EX = os.path.join(ROOT, "examples")


def bundle(name):
    return os.path.join(EX, name)


@pytest.fixture
def chain():
    m = hcq.load(bundle("chain100"), device="CPU")
    yield m
    if not m._closed:
        m.close()


def expected(name, i, dtype):
    return np.fromfile(os.path.join(EX, name, f"expected_{i:03d}.bin"), dtype=dtype)


def test_tensors_have_name_shape_and_numpy_dtype(chain):
    assert [(t.name, t.shape, t.dtype) for t in chain.inputs] == [("input0", (16,), np.dtype(np.float32))]
    assert [(t.name, t.shape, t.dtype) for t in chain.outputs] == [("output0", (16,), np.dtype(np.float32))]
    assert chain.name == "chain100" and chain.device.startswith("CPU")
    m = hcq.load(bundle("wide"))
    assert [t.shape for t in m.inputs] == [(64, 128)] and [t.shape for t in m.outputs] == [(64, 64), (64,)]
    m.close()


def test_run_returns_new_arrays_in_output_order(chain):
    x = np.arange(16, dtype=np.float32)
    (y,) = chain.run(x)
    assert y.dtype == np.float32 and y.shape == (16,)
    np.testing.assert_array_equal(y, x + 100)
    (y2,) = chain.run(x * 2)
    np.testing.assert_array_equal(y2, x * 2 + 100)
    np.testing.assert_array_equal(y, x + 100), "an earlier result is not overwritten"
    (y3,) = chain.run()  # inputs as they are
    np.testing.assert_array_equal(y3, y2)
    (y4,) = chain.run(None)  # None keeps that input
    np.testing.assert_array_equal(y4, y2)
    (y5,) = chain.run(np.arange(32, dtype=np.float32)[::2])  # not contiguous: copied
    np.testing.assert_array_equal(y5, np.arange(32, dtype=np.float32)[::2] + 100)


@pytest.mark.parametrize("name", ["mlp", "wide", "elementwise", "chain100"])
def test_every_sample_bundle_gives_its_expected_outputs(name):
    m = hcq.load(bundle(name))
    man = json.load(open(os.path.join(EX, name, "manifest.json")))
    ins = []
    for t in man["inputs"]:
        buf = man["buffers"][t["buffer"]]
        raw = np.fromfile(os.path.join(EX, name, buf["file"]), dtype=np.uint8)
        ins.append(raw[t["offset"]:t["offset"] + t["nbytes"]].view(t["dtype"]).reshape(t["shape"]))
    outs = m.run(*ins)
    for j, o in enumerate(outs):
        np.testing.assert_allclose(o.ravel(), expected(name, j, o.dtype), rtol=1e-4, atol=1e-5)
    assert m.check()
    m.close()


def test_wrong_shape_dtype_and_count_are_errors(chain):
    # the library's messages (hcq_model_check_input)
    with pytest.raises(hcq.Error, match=r"hcq_model_check_input: input 0 \(input0\): shape \[15\], the model takes \[16\]") as e:
        chain.run(np.zeros(15, np.float32))
    assert e.value.name == "HCQ_ERR_SIZE"
    with pytest.raises(hcq.Error, match="dtype float64, the model takes float32") as e:
        chain.run(np.zeros(16, np.float64))
    assert e.value.name == "HCQ_ERR_INVALID_ARGUMENT"
    with pytest.raises(hcq.Error, match="dtype unknown"):
        chain.run(np.zeros(16, np.complex64))
    with pytest.raises(hcq.Error, match="2 inputs given"):
        chain.run(np.zeros(16, np.float32), np.zeros(16, np.float32))
    # below the Python checks, the library checks sizes, pointers and indices itself
    small = np.zeros(2, np.float32)
    s = hcq._model_set_input(chain._h, 0, hcq._ptr(small), small.nbytes)
    assert hcq.STATUS[s] == "HCQ_ERR_SIZE" and "input size" in hcq._lib.hcq_last_error().decode()
    s = hcq._model_set_input(chain._h, 0, None, 64)
    assert hcq.STATUS[s] == "HCQ_ERR_NULL_POINTER" and "NULL" in hcq._lib.hcq_last_error().decode()
    s = hcq._model_set_input(chain._h, 5, None, 0)
    assert hcq.STATUS[s] == "HCQ_ERR_OUT_OF_RANGE" and "model input index" in hcq._lib.hcq_last_error().decode()
    with pytest.raises(hcq.Error, match="model input index") as e:
        chain.bind(5, None)
    assert e.value.name == "HCQ_ERR_OUT_OF_RANGE"


def test_set_input_then_run(chain):
    chain.set_input(0, np.full(16, 7, np.float32))
    np.testing.assert_array_equal(chain.run()[0], np.full(16, 107, np.float32))


def test_a_closed_model_raises_the_native_message(chain):
    chain.close()
    for call in (lambda: chain.run(), lambda: chain.run(np.zeros(16, np.float32)), chain.check,
                 lambda: chain.wait(), lambda: chain.output_view(0), lambda: chain.bind(0, None)):
        with pytest.raises(hcq.Error, match="closed") as e:
            call()
        assert e.value.name == "HCQ_ERR_CLOSED"
    with pytest.raises(hcq.Error, match="closed"):
        chain.close()


def test_unknown_device_and_bad_bundles_are_errors(tmp_path):
    with pytest.raises(hcq.Error, match="NOPE") as e:
        hcq.load(bundle("chain100"), device="NOPE")
    assert e.value.name == "HCQ_ERR_NO_DEVICE"
    with pytest.raises(hcq.Error, match="missing"):
        hcq.load(str(tmp_path / "missing.hcqb"))
    with pytest.raises(hcq.Error) as e:
        hcq.load(b"not a bundle at all")
    assert e.value.name in ("HCQ_ERR_BUNDLE", "HCQ_ERR_SIZE", "HCQ_ERR_UNSUPPORTED"), e.value


def test_device_from_dev_env():
    env = dict(os.environ, DEV="SIM")
    code = "import hcq; m = hcq.load(%r); print(m.device); print(m.run()[0][0])" % bundle("chain100")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.startswith("SIM"), out.stdout


@pytest.mark.parametrize("device", ["SIM", "QCOM:SIM"])
def test_other_devices_run_the_same_bundle(device):
    m = hcq.load(bundle("chain100"), device=device)
    x = np.arange(16, dtype=np.float32)
    np.testing.assert_allclose(m.run(x)[0], x + 100)
    m.run(x + 1, wait=False)
    np.testing.assert_allclose(m.wait(timeout_ms=30000)[0], x + 101)
    np.testing.assert_allclose(m.output_view(0), x + 101)  # a host copy on these devices
    if device == "SIM":
        with pytest.raises(hcq.Error, match="SIM") as e:
            m.bind(0, np.zeros(16, np.float32))
        assert e.value.name == "HCQ_ERR_UNSUPPORTED"
    m.close()


def test_submit_then_wait(chain):
    x = np.arange(16, dtype=np.float32)
    assert chain.run(x, wait=False) is None
    (y,) = chain.wait(timeout_ms=10000)
    np.testing.assert_array_equal(y, x + 100)
    (y,) = chain.wait()  # nothing in flight: the outputs as they are
    np.testing.assert_array_equal(y, x + 100)


@pytest.fixture
def slow(tmp_path):
    """chain100's program as a bundle of 100000 launches that each set the output to input + 1:
    a call that takes milliseconds."""
    d = tmp_path / "slow"
    shutil.copytree(bundle("chain100"), d)
    man = json.load(open(d / "manifest.json"))
    k = dict(man["launches"][0])
    k["args"] = [{"buffer": 2, "offset": 0, "nbytes": 64, "dtype": "float32"},
                 {"buffer": 0, "offset": 0, "nbytes": 64, "dtype": "float32"}]
    man["launches"] = [k] * 100000
    man["model"] = "slow"
    for o in man["outputs"]:
        o.pop("file", None)
    json.dump(man, open(d / "manifest.json", "w"))
    m = hcq.load(str(d))
    yield m
    if not m._closed:
        m.close()


def test_a_wait_that_times_out_is_an_error_and_the_call_stays_in_flight(slow):
    # a call of 100000 launches takes about a millisecond: a wait of 0 ms right after the
    # submit times out (the command-processor thread has not finished it) unless this thread
    # was descheduled that long; of 20 tries, some time out, and each is then waited for
    timeouts = 0
    for k in range(20):
        x = np.full(16, k, np.float32)
        slow.run(x, wait=False)
        try:
            (y,) = slow.wait(timeout_ms=0)
        except hcq.Error as e:
            assert e.name == "HCQ_ERR_TIMEOUT" and "still running after 0 ms" in str(e), e
            timeouts += 1
            (y,) = slow.wait(timeout_ms=60000)
        np.testing.assert_array_equal(y, x + 1)
    assert timeouts > 0


def test_close_while_a_call_is_in_flight_waits_for_it(slow):
    x = np.arange(16, dtype=np.float32)
    slow.bind(0, x)
    slow.run(wait=False)
    slow.close()  # waits: the bound memory is not used after this
    x[:] = -1  # writing it now touches nothing of the library's


def test_close_from_another_thread_waits_for_the_running_call(slow):
    x = np.arange(16, dtype=np.float32)
    errs = []

    def run():
        try:
            slow.run(x)
        except hcq.Error as e:  # closed before it started: also fine
            errs.append(e)

    t = threading.Thread(target=run)
    t.start()
    slow.close()
    t.join()
    assert all(e.name == "HCQ_ERR_CLOSED" for e in errs)


@pytest.mark.parametrize("device", ["CPU", "QCOM:SIM"])
def test_bind_is_zero_copy_and_checked(device):
    """m.bind on CPU and on QCOM:SIM (the frame's pages imported with KGSL MAP_USER_MEM): the
    output follows the frame written in place, with no copy; misaligned, NULL, wrong-size and
    wrong-dtype memory is refused by name."""
    chain = hcq.load(bundle("chain100"), device=device)
    frame = np.zeros(16, np.float32)
    chain.bind(0, frame)
    for f in range(3):
        frame[:] = np.arange(16) + 1000 * f  # the next frame, in place
        np.testing.assert_array_equal(chain.run()[0], frame + 100)
    with pytest.raises(hcq.Error, match="bound to caller memory"):
        chain.run(np.zeros(16, np.float32))
    chain.bind(0, None)  # unbind: the model's own buffer again
    np.testing.assert_array_equal(chain.run(np.ones(16, np.float32))[0], np.full(16, 101, np.float32))
    # an integer address
    buf = np.full(16, 3, np.float32)
    chain.bind(0, hcq._ptr(buf))
    np.testing.assert_array_equal(chain.run()[0], np.full(16, 103, np.float32))
    chain.bind(0, None)
    # misaligned memory, wrong shape, wrong dtype
    raw = np.zeros(16 * 4 + 4, np.uint8)
    off = (-hcq._ptr(raw)) % 16 + 4
    with pytest.raises(hcq.Error, match="aligned") as e:
        chain.bind(0, hcq._ptr(raw) + off)
    assert e.value.name == "HCQ_ERR_MISALIGNED"
    with pytest.raises(hcq.Error, match="shape"):
        chain.bind(0, np.zeros(8, np.float32))
    with pytest.raises(hcq.Error, match="dtype"):
        chain.bind(0, np.zeros(16, np.int32))
    with pytest.raises(hcq.Error, match="C-contiguous"):
        chain.bind(0, np.zeros(32, np.float32)[::2])
    with pytest.raises(hcq.Error, match="model input index"):
        chain.bind(3, None)
    with pytest.raises(hcq.Error, match="ptr is NULL") as e:
        chain.bind(0, 0)
    assert e.value.name == "HCQ_ERR_NULL_POINTER"
    # close with a call in flight on a bound frame: the close waits for it
    chain.bind(0, frame)
    chain.run(wait=False)
    chain.close()
    del frame


VKGSL = os.environ.get("HCQ_VKGSL_LIB") or os.path.join(ROOT, "target", "release", "libhcq_vkgsl.so")


# CI builds the library before this suite and must run this test: under CI=true a missing library
# is a failure, not a skip
@pytest.mark.skipif(not os.path.exists(VKGSL) and os.environ.get("CI") != "true",
                    reason="no libhcq_vkgsl.so (cargo build --release -p hcq-vkgsl)")
def test_bind_is_zero_copy_on_qcom_through_the_virtual_kgsl_node():
    """Under libhcq_vkgsl.so (what `hcq vkgsl --` preloads), device QCOM opens /dev/kgsl-3d0 and
    m.bind imports the frame with the MAP_USER_MEM ioctl: the output follows the frame."""
    script = ("import numpy as np, hcq\n"
              f"m = hcq.load({bundle('chain100')!r}, device='KGSL+QCOM')\n"
              "f = np.zeros(16, np.float32); m.bind(0, f)\n"
              "for k in range(3):\n"
              "    f[:] = np.arange(16) + 1000 * k\n"
              "    np.testing.assert_array_equal(m.run()[0], f + 100)\n"
              "m.bind(0, None); m.close(); print('bound PASS')\n")
    env = dict(os.environ, LD_PRELOAD=VKGSL)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0 and "bound PASS" in out.stdout, out.stdout + out.stderr


def test_output_view_is_the_last_calls_output_without_a_copy(chain):
    chain.run(np.arange(16, dtype=np.float32))
    v = chain.output_view(0)
    np.testing.assert_array_equal(v, np.arange(16) + 100)
    assert not v.flags.writeable
    with pytest.raises(hcq.Error, match="model output index"):
        chain.output_view(1)


def test_profile_writes_a_perfetto_trace(chain, tmp_path):
    p = tmp_path / "trace.json"
    with chain.profile(p) as prof:
        for _ in range(3):
            chain.run()
    assert prof.events >= 3
    trace = json.load(open(p))
    names = {e.get("name") for e in trace["traceEvents"]}
    assert "call chain100" in names and "E_4_4" in names
    # a profile the model's close ends
    p2 = tmp_path / "t2.json"
    chain.profile(p2)
    chain.run()
    chain.close()
    assert "call chain100" in {e.get("name") for e in json.load(open(p2))["traceEvents"]}


def test_profile_to_an_unwritable_path_is_an_error(chain, tmp_path):
    prof = chain.profile(tmp_path / "no" / "such" / "dir" / "t.json")
    chain.run()
    with pytest.raises(hcq.Error) as e:
        prof.stop()
    assert e.value.name == "HCQ_ERR_OS"


def test_python_m_hcq_devices_prints_the_registry():
    out = subprocess.run([sys.executable, "-m", "hcq", "devices"], capture_output=True, text=True, check=True)
    assert "CPU" in out.stdout and "PASS" in out.stdout and "QCOM" in out.stdout
    assert hcq.devices() == out.stdout.rstrip("\n")
    bad = subprocess.run([sys.executable, "-m", "hcq", "frobnicate"], capture_output=True, text=True)
    assert bad.returncode == 2


def test_calls_from_threads_are_serialized_per_model(chain):
    results = {}

    def worker(k):
        x = np.full(16, k, np.float32)
        for _ in range(50):
            (y,) = chain.run(x)
            if not np.array_equal(y, x + 100):
                results[k] = "wrong output"
                return
        results[k] = None

    ts = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert results == {k: None for k in range(4)}


def test_run_into_given_arrays(chain):
    out = [np.empty(16, np.float32)]
    res = chain.run(np.ones(16, np.float32), out=out)
    assert res is out
    np.testing.assert_array_equal(out[0], np.full(16, 101, np.float32))
    with pytest.raises(hcq.Error, match="out= needs"):
        chain.run(out=[np.empty(15, np.float32)])
    with pytest.raises(hcq.Error, match="output arrays given"):
        chain.run(out=[])


def test_the_modeld_example_runs_on_cpu():
    ex = os.path.join(ROOT, "examples", "python", "modeld.py")
    out = subprocess.run([sys.executable, ex, "--frames", "20", "--hz", "200", "--device", "CPU"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "p50" in out.stdout and "p99" in out.stdout and "host overhead per call" in out.stdout
    assert "PASS" in out.stdout
