"""pytest tests of the hcq Python package: every call and every error.

Run from the repository root: `pytest python/tests` (with the package installed, or with
HCQ_LIB=target/release/libhcq.so and PYTHONPATH=python)."""

import functools
import gc
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import weakref

import numpy as np
import pytest

import hcq

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
EX = os.path.join(ROOT, "examples")


def read_json(path):
    with open(path) as f:
        return json.load(f)


def write_json(path, value):
    with open(path, "w") as f:
        json.dump(value, f)


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
    man = read_json(os.path.join(EX, name, "manifest.json"))
    ins = []
    for t in man["inputs"]:
        buf = man["buffers"][t["buffer"]]
        raw = np.fromfile(os.path.join(EX, name, buf["file"]), dtype=np.uint8)
        ins.append(raw[t["offset"] : t["offset"] + t["nbytes"]].view(t["dtype"]).reshape(t["shape"]))
    outs = m.run(*ins)
    for j, o in enumerate(outs):
        np.testing.assert_allclose(o.ravel(), expected(name, j, o.dtype), rtol=1e-4, atol=1e-5)
    assert m.check()
    m.close()


def test_wrong_shape_dtype_and_count_are_errors(chain):
    # the library's messages (hcq_model_check_input)
    msg = r"hcq_model_check_input: input 0 \(input0\): shape \[15\], the model takes \[16\]"
    with pytest.raises(hcq.Error, match=msg) as e:
        chain.run(np.zeros(15, np.float32))
    assert e.value.name == "HCQ_ERR_SIZE"
    with pytest.raises(hcq.Error, match="dtype float64, the model takes float32") as e:
        chain.run(np.zeros(16, np.float64))
    assert e.value.name == "HCQ_ERR_INVALID_ARGUMENT"
    with pytest.raises(hcq.Error, match="dtype unknown"):
        chain.run(np.zeros(16, np.complex64))
    with pytest.raises(hcq.Error, match="2 inputs given"):
        chain.run(np.zeros(16, np.float32), np.zeros(16, np.float32))
    # below the Python checks, the library checks sizes, pointers and indices itself (every
    # declared function raises hcq.Error through its errcheck)
    small = np.zeros(2, np.float32)
    with pytest.raises(hcq.Error, match="input size") as e:
        hcq._model_set_input(chain._h, 0, hcq._ptr(small), small.nbytes)
    assert e.value.name == "HCQ_ERR_SIZE" and e.value.status == hcq.HCQ_ERR_SIZE
    with pytest.raises(hcq.Error, match="NULL") as e:
        hcq._model_set_input(chain._h, 0, None, 64)
    assert e.value.name == "HCQ_ERR_NULL_POINTER"
    with pytest.raises(hcq.Error, match="model input index") as e:
        hcq._model_set_input(chain._h, 5, None, 0)
    assert e.value.name == "HCQ_ERR_OUT_OF_RANGE"
    with pytest.raises(hcq.Error, match="model input index") as e:
        chain.bind(5, None)
    assert e.value.name == "HCQ_ERR_OUT_OF_RANGE"


def test_set_input_then_run(chain):
    chain.set_input(0, np.full(16, 7, np.float32))
    np.testing.assert_array_equal(chain.run()[0], np.full(16, 107, np.float32))


def test_a_closed_model_raises_closed(chain):
    chain.close()
    for call in (
        lambda: chain.run(),
        lambda: chain.run(np.zeros(16, np.float32)),
        chain.check,
        lambda: chain.wait(),
        lambda: chain.output_view(0),
        lambda: chain.bind(0, None),
    ):
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
    code = f"import hcq; m = hcq.load({bundle('chain100')!r}); print(m.device); print(m.run()[0][0])"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.startswith("SIM"), out.stdout


def chain100_for(device):
    """chain100 with the objects `device` runs: the gfx1100 build (examples/amd) on AMD:SIM."""
    return bundle("amd/chain100" if device == "AMD:SIM" else "chain100")


@pytest.mark.parametrize("device", ["SIM", "QCOM:SIM", "AMD:SIM"])
def test_other_devices_run_the_same_bundle(device):
    m = hcq.load(chain100_for(device), device=device)
    x = np.arange(16, dtype=np.float32)
    np.testing.assert_allclose(m.run(x)[0], x + 100)
    m.run(x + 1, wait=False)
    np.testing.assert_allclose(m.wait(timeout_ms=30000)[0], x + 101)
    np.testing.assert_allclose(m.output_view(0), x + 101)  # a host copy on these devices
    if device in ("SIM", "AMD:SIM"):
        # SIM copies between simulated memories; AMD:SIM registers the array with its KFD as a
        # user pointer, which the simulated KFD refuses (EFAULT) for memory it did not map
        with pytest.raises(hcq.Error, match=device) as e:
            m.bind(0, np.zeros(16, np.float32))
        assert e.value.name == ("HCQ_ERR_UNSUPPORTED" if device == "SIM" else "HCQ_ERR_OS")
        np.testing.assert_allclose(m.run(x)[0], x + 100)  # nothing changed
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
    man = read_json(d / "manifest.json")
    k = dict(man["launches"][0])
    k["args"] = [
        {"buffer": 2, "offset": 0, "nbytes": 64, "dtype": "float32"},
        {"buffer": 0, "offset": 0, "nbytes": 64, "dtype": "float32"},
    ]
    man["launches"] = [k] * 100000
    man["model"] = "slow"
    for o in man["outputs"]:
        o.pop("file", None)
    write_json(d / "manifest.json", man)
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
@pytest.mark.skipif(
    not os.path.exists(VKGSL) and os.environ.get("CI") != "true",
    reason="no libhcq_vkgsl.so (cargo build --release -p hcq-vkgsl)",
)
def test_bind_is_zero_copy_on_qcom_through_the_virtual_kgsl_node():
    """Under libhcq_vkgsl.so (what `hcq vkgsl --` preloads), device QCOM opens /dev/kgsl-3d0 and
    m.bind imports the frame with the MAP_USER_MEM ioctl: the output follows the frame."""
    script = (
        "import numpy as np, hcq\n"
        f"m = hcq.load({bundle('chain100')!r}, device='KGSL+QCOM')\n"
        "f = np.zeros(16, np.float32); m.bind(0, f)\n"
        "for k in range(3):\n"
        "    f[:] = np.arange(16) + 1000 * k\n"
        "    np.testing.assert_array_equal(m.run()[0], f + 100)\n"
        "m.bind(0, None); m.close(); print('bound PASS')\n"
    )
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
    trace = read_json(p)
    names = {e.get("name") for e in trace["traceEvents"]}
    assert "call chain100" in names and "E_4_4" in names
    # a profile the model's close ends
    p2 = tmp_path / "t2.json"
    chain.profile(p2)
    chain.run()
    chain.close()
    assert "call chain100" in {e.get("name") for e in read_json(p2)["traceEvents"]}


def test_profile_to_an_unwritable_path_is_an_error(chain, tmp_path):
    prof = chain.profile(tmp_path / "no" / "such" / "dir" / "t.json")
    chain.run()
    with pytest.raises(hcq.Error) as e:
        prof.stop()
    assert e.value.name == "HCQ_ERR_OS"


def test_python_m_hcq_devices_prints_the_registry():
    out = subprocess.run([sys.executable, "-m", "hcq", "devices"], capture_output=True, text=True, check=True)
    assert "CPU" in out.stdout and "PASS" in out.stdout and "QCOM" in out.stdout
    assert any(line.strip().startswith("AMD:SIM") and "PASS amd gfx1100" in line for line in out.stdout.splitlines())
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
    out = subprocess.run(
        [sys.executable, ex, "--frames", "20", "--hz", "200", "--device", "CPU"], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "p50" in out.stdout and "p99" in out.stdout and "host overhead per call" in out.stdout
    assert "PASS" in out.stdout


@pytest.fixture
def two_inputs(tmp_path):
    """chain100's program as a bundle of two inputs: input0 (16 float32), whose + 1 is the
    output, and input1 (16 int32), which no kernel reads."""
    d = tmp_path / "two"
    shutil.copytree(bundle("chain100"), d)
    man = read_json(d / "manifest.json")
    k = dict(man["launches"][0])
    k["args"] = [
        {"buffer": 2, "offset": 0, "nbytes": 64, "dtype": "float32"},
        {"buffer": 0, "offset": 0, "nbytes": 64, "dtype": "float32"},
    ]
    man["launches"] = [k]
    np.zeros(16, np.int32).tofile(d / "buf_003.bin")
    man["buffers"].append({"id": 3, "nbytes": 64, "dtype": "int32", "role": "input", "file": "buf_003.bin"})
    man["inputs"].append({"buffer": 3, "offset": 0, "nbytes": 64, "dtype": "int32", "index": 1, "shape": [16]})
    man["model"] = "two"
    for o in man["outputs"]:
        o.pop("file", None)
    write_json(d / "manifest.json", man)
    m = hcq.load(str(d), device="CPU")
    yield m
    if not m._closed:
        m.close()


def tables_are_empty(m):
    return all(p is None for p in m._in_ptrs) and all(p is None for p in m._out_ptrs)


@pytest.mark.parametrize("wait", [True, False])
def test_a_call_that_fails_on_one_array_leaves_nothing_behind(two_inputs, wait):
    """run(a, bad_b) raises and leaves no trace: not a's pointer in the model's table (which the
    next run() would copy from, after a is freed), not a's values in the input."""
    m = two_inputs
    m.set_input(0, np.full(16, 7, np.float32))
    m.set_input(1, np.zeros(16, np.int32))
    (own,) = m.run()
    np.testing.assert_array_equal(own, np.full(16, 8, np.float32))
    a = np.arange(16, dtype=np.float32)
    for bad in (np.zeros(15, np.int32), np.zeros(16, np.float32), "not an array"):
        with pytest.raises((hcq.Error, ValueError)):
            m.run(a, bad, wait=wait)
        a[:] = -5  # were a's pointer kept, the next run would read this
        np.testing.assert_array_equal(m.run()[0], own)
        assert tables_are_empty(m)
    # a call that succeeds clears the table too: its arrays may be freed after it returns
    (y,) = m.run(a, np.ones(16, np.int32))
    np.testing.assert_array_equal(y, a + 1)
    assert tables_are_empty(m)
    del a, y
    gc.collect()
    np.testing.assert_array_equal(m.run()[0], np.full(16, -4, np.float32))
    # out= arrays that do not fit: nothing left either
    with pytest.raises(hcq.Error, match="out= needs"):
        m.run(np.ones(16, np.float32), None, out=[np.empty(15, np.float32)])
    assert tables_are_empty(m)


def test_a_bound_input_given_an_array_is_refused_before_anything_is_copied(two_inputs):
    m = two_inputs
    frame = np.full(16, 3, np.float32)
    m.bind(0, frame)
    with pytest.raises(hcq.Error, match="bound to caller memory") as e:
        m.run(np.zeros(16, np.float32), np.ones(16, np.int32), wait=False)
    with pytest.raises(hcq.Error, match="bound to caller memory") as e:
        m.run(np.zeros(16, np.float32), np.ones(16, np.int32))
    assert e.value.name == "HCQ_ERR_INVALID_ARGUMENT" and tables_are_empty(m)
    np.testing.assert_array_equal(m.run()[0], frame + 1)
    m.bind(0, None)


def view_of_a_dropped_model(device):
    """An output view of a model no one else holds, and a weak reference to that model."""
    m = hcq.load(chain100_for(device), device=device)
    m.run(np.arange(16, dtype=np.float32))
    return m.output_view(0), weakref.ref(m)


@pytest.mark.parametrize("device", ["CPU", "SIM", "QCOM:SIM", "AMD:SIM"])
def test_an_output_view_keeps_its_model_alive_and_is_read_only(device):
    v, model = view_of_a_dropped_model(device)
    gc.collect()
    junk = [np.full(16, -1, np.float32) for _ in range(1000)]  # reuse of freed memory, were it freed
    assert model() is not None, "the view holds its model"
    np.testing.assert_array_equal(v, np.arange(16) + 100)
    assert not v.flags.writeable
    with pytest.raises(ValueError):
        v.flags.writeable = True
    with pytest.raises(ValueError):
        v[0] = 1
    with pytest.raises(ValueError):
        v.base.flags.writeable = True
    h = model()._h
    hcq._model_count(h, None, None)  # the library's model is open
    del v, junk
    gc.collect()
    assert model() is None, "the last view gone, the model is freed"
    with pytest.raises(hcq.Error, match="closed"):
        hcq._model_count(h, None, None)


@pytest.mark.parametrize("device", ["CPU", "QCOM:SIM"])
def test_close_while_views_exist_frees_the_memory_after_the_last_view(device):
    m = hcq.load(bundle("chain100"), device=device)
    x = np.arange(16, dtype=np.float32)
    m.run(x)
    v1, v2 = m.output_view(0), m.output_view(0)
    frame = np.zeros(16, np.float32)
    m.bind(0, frame)
    h = m._h
    m.close()
    for call in (m.run, functools.partial(m.output_view, 0), m.check, functools.partial(m.bind, 0, None)):
        with pytest.raises(hcq.Error, match="closed") as e:
            call()
        assert e.value.name == "HCQ_ERR_CLOSED"
    del e, call  # the traceback's frames hold the model
    hcq._model_count(h, None, None)  # still allocated for the views
    del frame
    gc.collect()
    np.testing.assert_array_equal(v1, x + 100)
    del v1
    gc.collect()
    hcq._model_count(h, None, None)
    np.testing.assert_array_equal(v2, x + 100)
    del m
    gc.collect()
    hcq._model_count(h, None, None)  # v2 holds it
    del v2
    gc.collect()
    with pytest.raises(hcq.Error, match="closed"):
        hcq._model_count(h, None, None)


def test_a_view_reads_the_last_calls_output_on_cpu(chain):
    """The view is the output's memory (CPU): the next run rewrites its bytes, as documented."""
    chain.run(np.zeros(16, np.float32))
    v = chain.output_view(0)
    keep = v.copy()
    chain.run(np.ones(16, np.float32))
    np.testing.assert_array_equal(v, np.full(16, 101, np.float32))
    np.testing.assert_array_equal(keep, np.full(16, 100, np.float32))


def test_status_constants_are_the_librarys():
    import ctypes

    name = hcq._lib.hcq_status_name
    name.restype, name.argtypes = ctypes.c_char_p, [ctypes.c_int32]
    assert len(hcq.Status) == len(hcq.STATUS) == 17
    for s in hcq.Status:
        assert name(int(s)).decode() == s.name == hcq.STATUS[s]
        assert getattr(hcq, s.name) is s
    assert name(len(hcq.Status)).decode() == "HCQ_UNKNOWN"
    assert hcq.Error(99, "x").name == "HCQ_UNKNOWN"
    for f in (hcq._model_run, hcq._model_call_prebuilt, hcq._device_open, hcq._model_close):
        assert f.errcheck is hcq._check


def test_the_fast_data_pointer_is_numpys():
    """hcq reads an array's data pointer at the offset numpy keeps it (found at import): this
    fails when numpy's layout changes, so the fast path is never silently wrong or lost."""
    assert hcq._DATA_OFF is not None, "numpy's PyArrayObject layout changed: no data offset found"
    base = np.arange(1000, dtype=np.float32)
    arrays = hcq._layout_probes() + [
        base,
        base[7:],
        base[::3],
        base.reshape(10, 100).T,
        np.zeros((0, 4)),
        np.zeros(5, np.complex128),
        np.frombuffer(bytearray(64), np.int16),
        np.array(3.0),
        np.ascontiguousarray(base[1:][::-1]),
        np.empty(1 << 20, np.uint8),
    ]
    for a in arrays:
        assert hcq._ptr(a) == a.ctypes.data == a.__array_interface__["data"][0], a


SIM_FORK = """
import os, sys, time, numpy as np, hcq
m = hcq.load({path!r}, device={device!r})
x = np.arange(16, dtype=np.float32)
assert (m.run(x)[0] == x + 100).all()
if {in_flight!r}:
    m.run(x, wait=False)  # a call in flight at the fork: the child's run waits for it first
pid = os.fork()
if pid == 0:
    t0 = time.monotonic()
    try:
        (y,) = m.run(x + 1)
        ok = bool((y == x + 101).all())
        print("child ran", ok, flush=True)
        code = 0 if ok else 1
    except hcq.Error as e:
        print("child refused", e.name, str(e), round(time.monotonic() - t0, 3), flush=True)
        code = 3
    try:
        if {close!r}:
            m.close()
            print("child closed", flush=True)
    except hcq.Error as e:
        print("child close failed", e.name, str(e), flush=True)
        code = 4
    os._exit(code)
_, st = os.waitpid(pid, 0)
print("child exit", os.waitstatus_to_exitcode(st), flush=True)
assert (m.run(x + 2)[0] == x + 102).all(), "the parent's model still works"
print("parent ok", flush=True)
"""


@pytest.mark.parametrize(
    "device,in_flight,close",
    [
        ("CPU", False, False),
        # the CPU device's close in a forked child leaves the parent's command-processor
        # threads alone (hcq::soft::threaded::SoftDevice's drop; it used to join them and panic)
        ("CPU", False, True),
        ("SIM", False, True),
        ("SIM", True, True),
        ("QCOM:SIM", False, True),
        # KFD serves only the process that opened it: refused at once in the child, as SIM
        ("AMD:SIM", False, True),
        ("AMD:SIM", True, True),
    ],
)
def test_a_model_used_in_a_forked_child_runs_or_is_refused_at_once(device, in_flight, close):
    """A model loaded before fork() and used in the child: CPU and QCOM:SIM run it; SIM, whose
    command processors are threads the child does not have, refuses at once with an error that
    says so (it used to wait 30 s and report the device hung), also when a call was in flight
    at the fork, and so does AMD:SIM (KFD serves only the process that opened it; the simulated
    GPU's command processor is a thread of the parent); the child closes the model without
    trouble."""
    code = SIM_FORK.format(path=chain100_for(device), device=device, in_flight=in_flight, close=close)
    t0 = time.monotonic()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    took = time.monotonic() - t0
    assert out.returncode == 0 and "parent ok" in out.stdout, out.stdout + out.stderr
    if device in ("SIM", "AMD:SIM"):
        assert "child refused HCQ_ERR_NO_DEVICE" in out.stdout and "fork" in out.stdout, out.stdout
        assert "child exit 3" in out.stdout and "child closed" in out.stdout, out.stdout
    else:
        assert "child ran True" in out.stdout and "child exit 0" in out.stdout, out.stdout
    assert took < 20, f"{took:.1f} s"


FREED_INPUT = """
import gc, json, os, shutil, sys, numpy as np, hcq
src, d = sys.argv[1], sys.argv[2]
shutil.copytree(src, d)
with open(os.path.join(d, "manifest.json")) as f:
    man = json.load(f)
# input0: 65536 float32 (256 KiB: an allocation of its own, unmapped when freed, under
# MALLOC_MMAP_THRESHOLD_=131072); the kernel reads its first 16; input1: 16 int32, unread
np.zeros(65536, np.float32).tofile(os.path.join(d, "buf_000.bin"))
np.zeros(16, np.int32).tofile(os.path.join(d, "buf_003.bin"))
man["buffers"][0].update(nbytes=262144, file="buf_000.bin")
man["buffers"][0].pop("sha256", None)
man["buffers"].append({"id": 3, "nbytes": 64, "dtype": "int32", "role": "input", "file": "buf_003.bin"})
man["inputs"] = [{"buffer": 0, "offset": 0, "nbytes": 262144, "dtype": "float32", "index": 0, "shape": [65536]},
                 {"buffer": 3, "offset": 0, "nbytes": 64, "dtype": "int32", "index": 1, "shape": [16]}]
k = dict(man["launches"][0])
k["args"] = [{"buffer": 2, "offset": 0, "nbytes": 64, "dtype": "float32"},
             {"buffer": 0, "offset": 0, "nbytes": 64, "dtype": "float32"}]
man["launches"] = [k]
for o in man["outputs"]:
    o.pop("file", None)
with open(os.path.join(d, "manifest.json"), "w") as f:
    json.dump(man, f)
m = hcq.load(d, device="CPU")
(own,) = m.run(np.full(65536, 2, np.float32), np.zeros(16, np.int32))
m.run()  # a call without arrays last (the old wrapper's table was then thought clean)
a = np.full(65536, 9, np.float32)
try:
    m.run(a, np.zeros(15, np.int32))
except hcq.Error as e:
    print("refused", e.name)
del a
gc.collect()
(again,) = m.run()
print("same" if (again == own).all() else f"different {again[:4]}")
"""


def test_the_next_run_after_a_failed_call_reads_no_freed_memory(tmp_path):
    """The issue's reproduction: run(a, bad_b) fails, a is freed (unmapped: 256 KiB under
    MALLOC_MMAP_THRESHOLD_=131072), then run() without arrays: it runs on the model's own
    inputs (before the fix it copied from a's unmapped pages and crashed)."""
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="131072")
    out = subprocess.run(
        [sys.executable, "-c", FREED_INPUT, bundle("chain100"), str(tmp_path / "big")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, f"exit {out.returncode}: {out.stdout}{out.stderr}"
    assert "refused HCQ_ERR_SIZE" in out.stdout and "same" in out.stdout, out.stdout
