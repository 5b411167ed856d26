"""hcq from Python: a ctypes wrapper over libhcq.so (hcq's C ABI, include/hcq.h), numpy in and out.

    import numpy as np, hcq
    m = hcq.load("examples/chain100")            # device=None: $DEV, else CPU
    print(m.inputs, m.outputs)                   # name, shape (tuple), dtype (numpy)
    (y,) = m.run(np.arange(16, dtype=np.float32))
    m.run(x, wait=False); (y,) = m.wait(timeout_ms=100)
    frame = np.zeros(16, np.float32); m.bind(0, frame)   # zero-copy (CPU, QCOM): write frame, then m.run()
    with m.profile("trace.json"): m.run()
    m.close()

Every failure is an hcq.Error carrying the library's message (hcq_last_error) and status.
The library is found at $HCQ_LIB, else next to this file (where the wheel puts it).
"""

import ctypes
import glob
import os
import threading
from ctypes import POINTER, c_char_p, c_int32, c_int64, c_size_t, c_uint32, c_uint64, c_void_p

import numpy as np

__all__ = ["Error", "Model", "Tensor", "devices", "load", "library_path"]

# status codes (include/hcq.h, enum hcq_status)
STATUS = [
    "HCQ_OK", "HCQ_ERR_INVALID_ARGUMENT", "HCQ_ERR_NULL_POINTER", "HCQ_ERR_MISALIGNED", "HCQ_ERR_SIZE",
    "HCQ_ERR_OUT_OF_RANGE", "HCQ_ERR_CLOSED", "HCQ_ERR_NO_DEVICE", "HCQ_ERR_BUNDLE", "HCQ_ERR_UNSUPPORTED",
    "HCQ_ERR_TIMEOUT", "HCQ_ERR_DEVICE_HUNG", "HCQ_ERR_OUT_OF_MEMORY", "HCQ_ERR_OS", "HCQ_ERR_BUFFER_TOO_SMALL",
    "HCQ_ERR_PANIC", "HCQ_ERR_OTHER",
]
globals().update({name: code for code, name in enumerate(STATUS)})

# enum hcq_dtype, in code order
_DTYPES = [np.dtype(np.bool_), np.dtype(np.int8), np.dtype(np.int16), np.dtype(np.int32), np.dtype(np.int64),
           np.dtype(np.uint8), np.dtype(np.uint16), np.dtype(np.uint32), np.dtype(np.uint64),
           np.dtype(np.float16), None, np.dtype(np.float32), np.dtype(np.float64)]
# bfloat16 has no numpy type: its tensors are 2-byte unsigned integers here
_DTYPES[10] = np.dtype(np.uint16)

OPEN_PROFILE = 1
OPEN_ALLOW_NATIVE = 2


class Error(Exception):
    """A failure of libhcq (or of an argument, checked before the call): `status` is the
    hcq_status code, `name` its name, `str(e)` the message."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status
        self.name = STATUS[status] if 0 <= status < len(STATUS) else "HCQ_UNKNOWN"


def library_path():
    """Where libhcq.so is loaded from: $HCQ_LIB, else the one inside this package."""
    env = os.environ.get("HCQ_LIB")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    found = sorted(glob.glob(os.path.join(here, "libhcq*.so")) + glob.glob(os.path.join(here, "_libhcq*.so")))
    if not found:
        raise ImportError(f"libhcq.so not found in {here} and $HCQ_LIB is not set (pip install the repository, "
                          "or cargo build -p hcq-ffi --release and set HCQ_LIB=target/release/libhcq.so)")
    return found[0]


class _Handle(ctypes.Structure):
    _fields_ = [("id", c_uint64)]


class _TensorInfo(ctypes.Structure):
    _fields_ = [("name", c_char_p), ("dtype", c_int32), ("ndim", c_size_t), ("shape", POINTER(c_uint64)),
                ("nbytes", c_size_t)]


_lib = ctypes.CDLL(library_path())


def _fn(name, *args):
    f = getattr(_lib, name)
    f.argtypes = list(args)
    f.restype = c_int32
    return f


_lib.hcq_last_error.restype = c_char_p
_lib.hcq_last_error.argtypes = []
_lib.hcq_version.restype = c_char_p
_devices = _fn("hcq_devices", c_char_p, c_size_t, POINTER(c_size_t))
_device_open = _fn("hcq_device_open", c_char_p, c_uint32, POINTER(_Handle))
_device_describe = _fn("hcq_device_describe", _Handle, c_char_p, c_size_t, POINTER(c_size_t))
_device_close = _fn("hcq_device_close", _Handle)
_model_load = _fn("hcq_model_load", _Handle, c_char_p, POINTER(_Handle))
_model_load_bytes = _fn("hcq_model_load_bytes", _Handle, c_void_p, c_size_t, POINTER(_Handle))
_model_name = _fn("hcq_model_name", _Handle, c_char_p, c_size_t, POINTER(c_size_t))
_model_count = _fn("hcq_model_count", _Handle, POINTER(c_size_t), POINTER(c_size_t))
_model_input = _fn("hcq_model_input", _Handle, c_size_t, POINTER(_TensorInfo))
_model_output = _fn("hcq_model_output", _Handle, c_size_t, POINTER(_TensorInfo))
_model_set_input = _fn("hcq_model_set_input", _Handle, c_size_t, c_void_p, c_size_t)
_model_check_input = _fn("hcq_model_check_input", _Handle, c_size_t, c_int32, c_size_t, POINTER(c_uint64))
_model_bind_input = _fn("hcq_model_bind_input", _Handle, c_size_t, c_void_p, c_size_t)
_model_run = _fn("hcq_model_run", _Handle)
_model_submit = _fn("hcq_model_submit", _Handle)
_model_wait = _fn("hcq_model_wait", _Handle, c_int64)
_model_read_output = _fn("hcq_model_read_output", _Handle, c_size_t, c_void_p, c_size_t)
_model_output_ptr = _fn("hcq_model_output_ptr", _Handle, c_size_t, POINTER(c_void_p), POINTER(c_size_t))
_model_call = _fn("hcq_model_call", _Handle, POINTER(c_void_p), POINTER(c_size_t), c_size_t, POINTER(c_void_p),
                  POINTER(c_size_t), c_size_t)
# The hot path's own function object (`_lib[...]` is a new one), without argtypes: `m.run` passes it
# arguments prebuilt per model as ctypes objects of the declared types (the handle struct, the
# pointer and length arrays, c_size_t counts), which skips the per-argument conversion (about 1 us
# of the 7-argument call).
_model_call_prebuilt = _lib["hcq_model_call"]
_model_call_prebuilt.restype = c_int32
_model_check = _fn("hcq_model_check", _Handle, POINTER(c_int32), POINTER(c_size_t))
_model_profile_begin = _fn("hcq_model_profile_begin", _Handle)
_model_profile_end = _fn("hcq_model_profile_end", _Handle, c_char_p, POINTER(c_size_t))
_model_close = _fn("hcq_model_close", _Handle)

__version__ = _lib.hcq_version().decode()


def _raise(status):
    raise Error(status, _lib.hcq_last_error().decode(errors="replace"))


def _string(fn, *args):
    need = c_size_t(0)
    buf = ctypes.create_string_buffer(256)
    s = fn(*args, buf, len(buf), ctypes.byref(need))
    if s == HCQ_ERR_BUFFER_TOO_SMALL:  # noqa: F821 (defined from STATUS)
        buf = ctypes.create_string_buffer(need.value)
        s = fn(*args, buf, len(buf), ctypes.byref(need))
    if s:
        _raise(s)
    return buf.value.decode()


def _probe_data_offset():
    """The offset of an ndarray's data pointer in its object (PyArrayObject.data, right after the
    object header), found and verified on two arrays here; None when it cannot be (then the slow
    `a.ctypes.data` is used). Reading it is ~10x cheaper than `a.ctypes.data`."""
    probes = [np.zeros(4, np.float32), np.ones(3, np.int8)]
    for off in range(8, 65, 8):
        if all(c_void_p.from_address(id(a) + off).value == a.ctypes.data for a in probes):
            return off
    return None


_DATA_OFF = _probe_data_offset()
_from_address = c_void_p.from_address


def _ptr(a):
    if _DATA_OFF is None:
        return a.ctypes.data
    return _from_address(id(a) + _DATA_OFF).value


def devices():
    """The registry's report, one PASS/FAIL line per device kind (what `hcq devices` prints)."""
    need = c_size_t(0)
    s = _devices(None, 0, ctypes.byref(need))
    if s not in (0, HCQ_ERR_BUFFER_TOO_SMALL):  # noqa: F821
        _raise(s)
    buf = ctypes.create_string_buffer(need.value)
    s = _devices(buf, len(buf), ctypes.byref(need))
    if s:
        _raise(s)
    return buf.value.decode()


class Tensor:
    """An input or output: `name`, `shape` (tuple), `dtype` (numpy dtype), `nbytes`."""

    __slots__ = ("name", "shape", "dtype", "nbytes")

    def __init__(self, info):
        self.name = info.name.decode()
        self.shape = tuple(int(info.shape[d]) for d in range(info.ndim))
        self.dtype = _DTYPES[info.dtype]
        self.nbytes = int(info.nbytes)

    def __repr__(self):
        return f"Tensor({self.name!r}, shape={self.shape}, dtype={self.dtype})"


def load(path, device=None, *, profile=False, allow_native=False):
    """Load a bundle (a v1 directory or a `.hcqb` file path, or the bytes of a `.hcqb` file) on
    `device` ("CPU", "SIM", "QCOM", "QCOM:SIM"; None: $DEV, else CPU)."""
    dev = _Handle()
    flags = (OPEN_PROFILE if profile else 0) | (OPEN_ALLOW_NATIVE if allow_native else 0)
    s = _device_open(None if device is None else str(device).encode(), flags, ctypes.byref(dev))
    if s:
        _raise(s)
    try:
        h = _Handle()
        if isinstance(path, (bytes, bytearray, memoryview)):
            data = bytes(path)
            s = _model_load_bytes(dev, data, len(data), ctypes.byref(h))
        else:
            s = _model_load(dev, os.fsencode(os.fspath(path)), ctypes.byref(h))
        if s:
            _raise(s)
        description = _string(_device_describe, dev)
    finally:
        _device_close(dev)  # the model keeps the device open
    return Model(h, description)


class Profile:
    """Recording of a model's calls into a Perfetto trace, begun by `Model.profile(path)`; the
    file is written by `stop()`, at the end of a `with` block, or when the model closes."""

    def __init__(self, model, path):
        self._model, self.path, self.events = model, os.fspath(path), None
        s = _model_profile_begin(model._h)
        if s:
            _raise(s)
        model._profile = self

    def stop(self):
        """Write the trace file (once); returns the number of events."""
        if self.events is None:
            n = c_size_t(0)
            self._model._profile = None
            s = _model_profile_end(self._model._h, os.fsencode(self.path), ctypes.byref(n))
            if s:
                _raise(s)
            self.events = n.value
        return self.events

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


class Model:
    """A bundle loaded on a device (`hcq.load`). Calls on one model are serialized inside the
    library; a model may be used from any thread."""

    def __init__(self, handle, device):
        self._h = handle
        self.device = device
        self._profile = None
        self._closed = False
        n_in, n_out = c_size_t(0), c_size_t(0)
        s = _model_count(handle, ctypes.byref(n_in), ctypes.byref(n_out))
        if s:
            _raise(s)
        info = _TensorInfo()
        self.inputs, self.outputs = [], []
        for i in range(n_in.value):
            s = _model_input(handle, i, ctypes.byref(info))
            if s:
                _raise(s)
            self.inputs.append(Tensor(info))
        for i in range(n_out.value):
            s = _model_output(handle, i, ctypes.byref(info))
            if s:
                _raise(s)
            self.outputs.append(Tensor(info))
        self.name = _string(_model_name, handle)
        self._n_in, self._n_out = len(self.inputs), len(self.outputs)
        self._in_spec = [(t.shape, t.dtype) for t in self.inputs]
        self._out_spec = [(t.shape, t.dtype) for t in self.outputs]
        self._in_ptrs = (c_void_p * max(1, self._n_in))()
        self._in_dirty = False  # some input pointer is set (a call with arrays ran last)
        self._in_lens = (c_size_t * max(1, self._n_in))(*[t.nbytes for t in self.inputs])
        self._out_ptrs = (c_void_p * max(1, self._n_out))()
        self._out_lens = (c_size_t * max(1, self._n_out))(*[t.nbytes for t in self.outputs])
        self._bound = [None] * self._n_in  # keeps bound arrays alive while bound
        # hcq_model_call's arguments, as ctypes objects of its declared parameter types
        self._call_args = (handle, self._in_ptrs, self._in_lens, c_size_t(self._n_in), self._out_ptrs,
                           self._out_lens, c_size_t(self._n_out))
        # the pointer arrays above are shared by the calls of this model: one call at a time
        self._lock = threading.Lock()

    def __repr__(self):
        return f"<hcq.Model {self.name} on {self.device}: inputs {self.inputs}, outputs {self.outputs}>"

    def _input(self, i, a):
        shape, dtype = self._in_spec[i]
        if type(a) is not np.ndarray:
            a = np.asarray(a, dtype=dtype)
        if (a.dtype is not dtype and a.dtype != dtype) or a.shape != shape:
            self._mismatch(i, a)
        if not a.flags.c_contiguous:
            a = np.ascontiguousarray(a)
        return a

    def _mismatch(self, i, a):
        """Raise the library's error for an array that does not fit input `i`."""
        code = next((k for k, d in enumerate(_DTYPES) if d == a.dtype and k != 10), -1)
        shape = (c_uint64 * max(1, a.ndim))(*a.shape)
        s = _model_check_input(self._h, i, code, a.ndim, shape)
        if s:
            _raise(s)
        raise Error(HCQ_ERR_INVALID_ARGUMENT,  # noqa: F821
                    f"input {i} ({self.inputs[i].name}): {a.dtype}{a.shape}, the model takes {self._in_spec[i]}")

    def _outs(self):
        outs = []
        ptrs = self._out_ptrs
        for j, (shape, dtype) in enumerate(self._out_spec):
            o = np.empty(shape, dtype)
            ptrs[j] = _ptr(o)
            outs.append(o)
        return outs

    def _into(self, out):
        if len(out) != self._n_out:
            raise Error(HCQ_ERR_SIZE, f"{len(out)} output arrays given, the model has {self._n_out}")  # noqa: F821
        for j, o in enumerate(out):
            shape, dtype = self._out_spec[j]
            if type(o) is not np.ndarray or o.dtype != dtype or o.shape != shape or not o.flags.c_contiguous \
                    or not o.flags.writeable:
                raise Error(HCQ_ERR_SIZE,  # noqa: F821
                            f"output {j}: out= needs a writeable C-contiguous {dtype} array of shape {shape}")
            self._out_ptrs[j] = _ptr(o)
        return out

    def run(self, *arrays, wait=True, out=None):
        """Run once. `arrays`: none (run on the inputs as they are: bound, or set earlier), or one
        per input in order (numpy arrays of the input's shape and dtype; None keeps that input).
        Returns the outputs as new numpy arrays in order; with `wait=False` submits the call and
        returns None (`wait()` then returns the outputs). `out`: a list of arrays (one per output,
        its shape and dtype, C-contiguous) to write the outputs into instead of new ones: a call
        that allocates nothing."""
        with self._lock:
            return self._run(arrays, wait, out)

    def _run(self, arrays, wait, out):
        n = len(arrays)
        if n and n != self._n_in:
            raise Error(HCQ_ERR_SIZE, f"{n} inputs given, the model {self.name} takes {self._n_in}")  # noqa: F821
        keep = []
        ptrs = self._in_ptrs
        if n:
            for i, a in enumerate(arrays):
                if a is None:
                    ptrs[i] = None
                else:
                    a = self._input(i, a)
                    keep.append(a)
                    ptrs[i] = _ptr(a)
        elif self._in_dirty:
            for i in range(self._n_in):
                ptrs[i] = None
        # a call with no arrays leaves every input pointer None: the next one need not clear them
        self._in_dirty = bool(n)
        if not wait:
            for i in range(n):
                if ptrs[i]:
                    s = _model_set_input(self._h, i, ptrs[i], self._in_lens[i])
                    if s:
                        _raise(s)
            s = _model_submit(self._h)
            if s:
                _raise(s)
            return None
        outs = self._outs() if out is None else self._into(out)
        s = _model_call_prebuilt(*self._call_args)
        if s:
            _raise(s)
        return outs

    def wait(self, timeout_ms=None):
        """Wait for the call `run(..., wait=False)` submitted and return the outputs. A call not
        done within `timeout_ms` raises hcq.Error (HCQ_ERR_TIMEOUT) and stays in flight."""
        with self._lock:
            return self._wait(timeout_ms)

    def _wait(self, timeout_ms):
        s = _model_wait(self._h, -1 if timeout_ms is None else int(timeout_ms))
        if s:
            _raise(s)
        outs = self._outs()
        for j in range(self._n_out):
            s = _model_read_output(self._h, j, self._out_ptrs[j], self._out_lens[j])
            if s:
                _raise(s)
        return outs

    def bind(self, i, array_or_pointer):
        """Bind input `i` to caller memory, zero-copy: a C-contiguous numpy array of the input's
        shape and dtype (kept alive while bound; write it in place, then `run()`), or an integer
        address of the input's size (which must stay valid until unbound or closed); None
        unbinds. CPU reads it where it lies; QCOM and QCOM:SIM import its pages for the GPU
        (KGSL MAP_USER_MEM); SIM cannot (HCQ_ERR_UNSUPPORTED). The memory must be aligned to 16
        bytes (HCQ_ERR_MISALIGNED); unbinding and close() wait for the calls that use it."""
        if array_or_pointer is None:
            ptr, keep = None, None
        elif isinstance(array_or_pointer, int):
            ptr, keep = array_or_pointer, None
        else:
            a = array_or_pointer
            if type(a) is not np.ndarray:
                raise Error(HCQ_ERR_INVALID_ARGUMENT, "bind takes a numpy array, an integer address or None")  # noqa: F821
            if not a.flags.c_contiguous:
                raise Error(HCQ_ERR_INVALID_ARGUMENT, f"input {i}: a bound array must be C-contiguous")  # noqa: F821
            keep = self._input(i, a)
            ptr = _ptr(keep)
        n = self.inputs[i].nbytes if 0 <= i < self._n_in and ptr is not None else 0
        s = _model_bind_input(self._h, i, ptr, n)
        if s:
            _raise(s)
        self._bound[i] = keep

    def set_input(self, i, array):
        """Copy `array` into input `i` (for the next `run()`)."""
        a = self._input(i, array)
        s = _model_set_input(self._h, i, _ptr(a), a.nbytes)
        if s:
            _raise(s)

    def output_view(self, i):
        """Output `i` as a read-only numpy view of the library's memory, without a copy, valid
        until the next run, input write, bind or close (use `.copy()` to keep it)."""
        p, n = c_void_p(), c_size_t()
        s = _model_output_ptr(self._h, i, ctypes.byref(p), ctypes.byref(n))
        if s:
            _raise(s)
        shape, dtype = self._out_spec[i]
        v = np.frombuffer((ctypes.c_char * n.value).from_address(p.value), dtype=dtype).reshape(shape)
        v.flags.writeable = False
        return v

    def check(self):
        """Compare the outputs with the bundle's expected bytes: True when all match."""
        ok, n = c_int32(0), c_size_t(0)
        s = _model_check(self._h, ctypes.byref(ok), ctypes.byref(n))
        if s:
            _raise(s)
        return bool(ok.value)

    def profile(self, path):
        """Record the following calls into a Perfetto trace at `path`, written at the end of a
        `with` block, by `.stop()`, or when the model closes."""
        return Profile(self, path)

    def close(self):
        """Free the model (waits for a call in flight). Later calls raise hcq.Error."""
        if self._profile is not None:
            self._profile.stop()
        s = _model_close(self._h)
        self._closed = True
        self._bound = [None] * self._n_in
        if s:
            _raise(s)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        # a model dropped without close(): free it (waits for a call in flight)
        if not getattr(self, "_closed", True) and _model_close is not None:  # None at interpreter exit
            self._closed = True
            _model_close(self._h)
