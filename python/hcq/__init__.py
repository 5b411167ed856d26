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

import contextlib
import ctypes
import enum
import glob
import os
import sys
import threading
import weakref
from ctypes import POINTER, c_char_p, c_int32, c_int64, c_size_t, c_uint32, c_uint64, c_void_p

import numpy as np

__all__ = ["Error", "Model", "Status", "Tensor", "devices", "load", "library_path"]


class Status(enum.IntEnum):
    """The library's status codes (include/hcq.h, enum hcq_status)."""

    HCQ_OK = 0
    HCQ_ERR_INVALID_ARGUMENT = 1
    HCQ_ERR_NULL_POINTER = 2
    HCQ_ERR_MISALIGNED = 3
    HCQ_ERR_SIZE = 4
    HCQ_ERR_OUT_OF_RANGE = 5
    HCQ_ERR_CLOSED = 6
    HCQ_ERR_NO_DEVICE = 7
    HCQ_ERR_BUNDLE = 8
    HCQ_ERR_UNSUPPORTED = 9
    HCQ_ERR_TIMEOUT = 10
    HCQ_ERR_DEVICE_HUNG = 11
    HCQ_ERR_OUT_OF_MEMORY = 12
    HCQ_ERR_OS = 13
    HCQ_ERR_BUFFER_TOO_SMALL = 14
    HCQ_ERR_PANIC = 15
    HCQ_ERR_OTHER = 16


# the module-level names of the statuses (hcq.HCQ_ERR_SIZE), and their names in code order
HCQ_OK = Status.HCQ_OK
HCQ_ERR_INVALID_ARGUMENT = Status.HCQ_ERR_INVALID_ARGUMENT
HCQ_ERR_NULL_POINTER = Status.HCQ_ERR_NULL_POINTER
HCQ_ERR_MISALIGNED = Status.HCQ_ERR_MISALIGNED
HCQ_ERR_SIZE = Status.HCQ_ERR_SIZE
HCQ_ERR_OUT_OF_RANGE = Status.HCQ_ERR_OUT_OF_RANGE
HCQ_ERR_CLOSED = Status.HCQ_ERR_CLOSED
HCQ_ERR_NO_DEVICE = Status.HCQ_ERR_NO_DEVICE
HCQ_ERR_BUNDLE = Status.HCQ_ERR_BUNDLE
HCQ_ERR_UNSUPPORTED = Status.HCQ_ERR_UNSUPPORTED
HCQ_ERR_TIMEOUT = Status.HCQ_ERR_TIMEOUT
HCQ_ERR_DEVICE_HUNG = Status.HCQ_ERR_DEVICE_HUNG
HCQ_ERR_OUT_OF_MEMORY = Status.HCQ_ERR_OUT_OF_MEMORY
HCQ_ERR_OS = Status.HCQ_ERR_OS
HCQ_ERR_BUFFER_TOO_SMALL = Status.HCQ_ERR_BUFFER_TOO_SMALL
HCQ_ERR_PANIC = Status.HCQ_ERR_PANIC
HCQ_ERR_OTHER = Status.HCQ_ERR_OTHER
STATUS = [s.name for s in Status]

# enum hcq_dtype, in code order; bfloat16 (10) has no numpy type: its tensors are 2-byte
# unsigned integers here
_DTYPES = [
    np.dtype(np.bool_),
    np.dtype(np.int8),
    np.dtype(np.int16),
    np.dtype(np.int32),
    np.dtype(np.int64),
    np.dtype(np.uint8),
    np.dtype(np.uint16),
    np.dtype(np.uint32),
    np.dtype(np.uint64),
    np.dtype(np.float16),
    np.dtype(np.uint16),
    np.dtype(np.float32),
    np.dtype(np.float64),
]
_BFLOAT16 = 10

OPEN_PROFILE = 1
OPEN_ALLOW_NATIVE = 2


class Error(Exception):
    """A failure of libhcq (or of an argument, checked before the call): `status` is the
    hcq_status code (a `Status`), `name` its name, `str(e)` the message."""

    def __init__(self, status, message):
        super().__init__(message)
        try:
            self.status = Status(status)
            self.name = self.status.name
        except ValueError:
            self.status = status
            self.name = "HCQ_UNKNOWN"


def library_path():
    """Where libhcq.so is loaded from: $HCQ_LIB, else the one inside this package."""
    env = os.environ.get("HCQ_LIB")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    found = sorted(glob.glob(os.path.join(here, "libhcq*.so")) + glob.glob(os.path.join(here, "_libhcq*.so")))
    if not found:
        raise ImportError(
            f"libhcq.so not found in {here} and $HCQ_LIB is not set (pip install the repository, "
            "or cargo build -p hcq-ffi --release and set HCQ_LIB=target/release/libhcq.so)"
        )
    return found[0]


class _Handle(ctypes.Structure):
    _fields_ = [("id", c_uint64)]


class _TensorInfo(ctypes.Structure):
    _fields_ = [
        ("name", c_char_p),
        ("dtype", c_int32),
        ("ndim", c_size_t),
        ("shape", POINTER(c_uint64)),
        ("nbytes", c_size_t),
    ]


_lib = ctypes.CDLL(library_path())
_lib.hcq_last_error.restype = c_char_p
_lib.hcq_last_error.argtypes = []
_lib.hcq_version.restype = c_char_p
_lib.hcq_version.argtypes = []


def _check(status, func, args):
    """errcheck of every hcq_* call that returns a status: a failure raises hcq.Error with the
    library's message (hcq_last_error, read on the calling thread right after the call)."""
    if status:
        raise Error(status, _lib.hcq_last_error().decode(errors="replace"))
    return status


def _fn(name, *args):
    f = getattr(_lib, name)
    f.argtypes = list(args)
    f.restype = c_int32
    f.errcheck = _check
    return f


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
_model_call = _fn(
    "hcq_model_call",
    _Handle,
    POINTER(c_void_p),
    POINTER(c_size_t),
    c_size_t,
    POINTER(c_void_p),
    POINTER(c_size_t),
    c_size_t,
)
# The hot path's own function object (`_lib[...]` is a new one), without argtypes: `m.run` passes it
# arguments prebuilt per model as ctypes objects of the declared types (the handle struct, the
# pointer and length arrays, c_size_t counts), which skips the per-argument conversion (about 1 us
# of the 7-argument call).
_model_call_prebuilt = _lib["hcq_model_call"]
_model_call_prebuilt.restype = c_int32
_model_call_prebuilt.errcheck = _check
_model_check = _fn("hcq_model_check", _Handle, POINTER(c_int32), POINTER(c_size_t))
_model_profile_begin = _fn("hcq_model_profile_begin", _Handle)
_model_profile_end = _fn("hcq_model_profile_end", _Handle, c_char_p, POINTER(c_size_t))
_model_close = _fn("hcq_model_close", _Handle)

__version__ = _lib.hcq_version().decode()


def _string(fn, *args):
    """A string the library writes into a caller's buffer (asked again at the length it needs)."""
    need = c_size_t(0)
    buf = ctypes.create_string_buffer(256)
    try:
        fn(*args, buf, len(buf), ctypes.byref(need))
    except Error as e:
        if e.status != HCQ_ERR_BUFFER_TOO_SMALL:
            raise
        buf = ctypes.create_string_buffer(need.value)
        fn(*args, buf, len(buf), ctypes.byref(need))
    return buf.value.decode()


# An array's data pointer. The public ways, `a.ctypes.data` and `a.__array_interface__`, build
# an object (a dict) per call: about 2 us each here, and a call with arrays needs two (its input
# and its new output), which would be most of `m.run(x)`'s overhead (python/bench/overhead.py).
# So on CPython the pointer is read where numpy keeps it, the `data` field of PyArrayObject right
# after the object header, at an offset found and checked here against `a.ctypes.data` on arrays
# of several dtypes, shapes, offsets and origins. Where no offset matches all of them (another
# numpy layout, another Python), every call uses `a.ctypes.data`. tests/test_hcq.py's
# test_the_fast_data_pointer_is_numpys checks the offset is found and agrees with numpy on more
# arrays, so a numpy whose layout changes fails the suite instead of going slow unnoticed.
def _layout_probes():
    base = np.arange(64, dtype=np.float64)
    return [
        np.zeros(4, np.float32),
        np.ones(3, np.int8),
        base[5:],
        base.reshape(8, 8)[2:, ::2],
        np.frombuffer(b"0123456789abcdef", np.uint8)[3:],
        np.empty((2, 3, 4), np.int64),
        np.asarray(memoryview(bytearray(32))),
    ]


def _probe_data_offset():
    if sys.implementation.name != "cpython":
        return None
    probes = _layout_probes()
    for off in range(8, 65, 8):
        if all(c_void_p.from_address(id(a) + off).value == a.ctypes.data for a in probes):
            return off
    return None


_DATA_OFF = _probe_data_offset()
_from_address = c_void_p.from_address


def _ptr_public(a):
    return a.ctypes.data


if _DATA_OFF is None:
    _ptr = _ptr_public
else:

    def _ptr(a):
        return _from_address(id(a) + _DATA_OFF).value


def devices():
    """The registry's report, one PASS/FAIL line per device kind (what `hcq devices` prints)."""
    need = c_size_t(0)
    try:
        _devices(None, 0, ctypes.byref(need))
    except Error as e:
        if e.status != HCQ_ERR_BUFFER_TOO_SMALL:
            raise
    buf = ctypes.create_string_buffer(need.value)
    _devices(buf, len(buf), ctypes.byref(need))
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
    `device` ("CPU", "SIM", "QCOM", "QCOM:SIM", "AMD", "AMD:SIM", any name `python -m hcq devices`
    lists; None: $DEV, else CPU)."""
    dev = _Handle()
    flags = (OPEN_PROFILE if profile else 0) | (OPEN_ALLOW_NATIVE if allow_native else 0)
    _device_open(None if device is None else str(device).encode(), flags, ctypes.byref(dev))
    try:
        h = _Handle()
        if isinstance(path, (bytes, bytearray, memoryview)):
            data = bytes(path)
            _model_load_bytes(dev, data, len(data), ctypes.byref(h))
        else:
            _model_load(dev, os.fsencode(os.fspath(path)), ctypes.byref(h))
        try:
            description = _string(_device_describe, dev)
            return Model(h, description)
        except BaseException:
            _model_close(h)
            raise
    finally:
        _device_close(dev)  # the model keeps the device open


class Profile:
    """Recording of a model's calls into a Perfetto trace, begun by `Model.profile(path)`; the
    file is written by `stop()`, at the end of a `with` block, or when the model closes."""

    def __init__(self, model, path):
        self._model, self.path, self.events = model, os.fspath(path), None
        _model_profile_begin(model._live_handle())
        model._profile = self

    def stop(self):
        """Write the trace file (once); returns the number of events."""
        if self.events is None:
            n = c_size_t(0)
            self._model._profile = None
            _model_profile_end(self._model._h, os.fsencode(self.path), ctypes.byref(n))
            self.events = n.value
        return self.events

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


class _ViewPin:
    """What the memory under an output view holds on to: the model, so that the model, and the
    library's memory the view reads, outlive the view (`Model.output_view`)."""

    __slots__ = ("model", "__weakref__")

    def __init__(self, model):
        self.model = model


class Model:
    """A bundle loaded on a device (`hcq.load`). Calls on one model are serialized inside the
    library; a model may be used from any thread."""

    def __init__(self, handle, device):
        self._h = handle
        self.device = device
        self._profile = None
        self._closed = False  # closed for every call (close())
        self._freed = False  # the library's model freed (at close(), or after the last view)
        n_in, n_out = c_size_t(0), c_size_t(0)
        _model_count(handle, ctypes.byref(n_in), ctypes.byref(n_out))
        info = _TensorInfo()
        self.inputs, self.outputs = [], []
        for i in range(n_in.value):
            _model_input(handle, i, ctypes.byref(info))
            self.inputs.append(Tensor(info))
        for i in range(n_out.value):
            _model_output(handle, i, ctypes.byref(info))
            self.outputs.append(Tensor(info))
        self.name = _string(_model_name, handle)
        self._n_in, self._n_out = len(self.inputs), len(self.outputs)
        self._in_spec = [(t.shape, t.dtype) for t in self.inputs]
        self._out_spec = [(t.shape, t.dtype) for t in self.outputs]
        # The argument tables of hcq_model_call. Between calls every entry is NULL: a call fills
        # them with its arrays' pointers and clears them before it returns, on every path, so no
        # pointer to memory Python may free outlives the call that passed it.
        self._in_ptrs = (c_void_p * max(1, self._n_in))()
        self._in_lens = (c_size_t * max(1, self._n_in))(*[t.nbytes for t in self.inputs])
        self._out_ptrs = (c_void_p * max(1, self._n_out))()
        self._out_lens = (c_size_t * max(1, self._n_out))(*[t.nbytes for t in self.outputs])
        self._in_idx, self._out_idx = tuple(range(self._n_in)), tuple(range(self._n_out))
        self._bound = [None] * self._n_in  # per input: the bound array (kept alive) or address
        # hcq_model_call's arguments, as ctypes objects of its declared parameter types
        self._call_args = (
            handle,
            self._in_ptrs,
            self._in_lens,
            c_size_t(self._n_in),
            self._out_ptrs,
            self._out_lens,
            c_size_t(self._n_out),
        )
        self._views = weakref.WeakSet()  # the _ViewPin of every output view alive
        # the tables above are shared by the calls of this model: one call at a time
        self._lock = threading.Lock()

    def __repr__(self):
        return f"<hcq.Model {self.name} on {self.device}: inputs {self.inputs}, outputs {self.outputs}>"

    def _live_handle(self):
        if self._closed:
            raise Error(HCQ_ERR_CLOSED, f"model {self.name} is closed")
        return self._h

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
        code = next((k for k, d in enumerate(_DTYPES) if d == a.dtype and k != _BFLOAT16), -1)
        shape = (c_uint64 * max(1, a.ndim))(*a.shape)
        _model_check_input(self._h, i, code, a.ndim, shape)
        raise Error(
            HCQ_ERR_INVALID_ARGUMENT,
            f"input {i} ({self.inputs[i].name}): {a.dtype}{a.shape}, the model takes {self._in_spec[i]}",
        )

    def _arrays(self, arrays):
        """Every array of a call checked (and made contiguous) before any is used: a call that
        fails on one has changed nothing."""
        n = len(arrays)
        if n != self._n_in:
            raise Error(HCQ_ERR_SIZE, f"{n} inputs given, the model {self.name} takes {self._n_in}")
        keep = []
        for i, a in enumerate(arrays):
            if a is not None:
                if self._bound[i] is not None:
                    raise Error(
                        HCQ_ERR_INVALID_ARGUMENT,
                        f"input {i} ({self.inputs[i].name}) is bound to caller memory (write that "
                        "memory, or bind it back first)",
                    )
                a = self._input(i, a)
            keep.append(a)
        return keep

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
            raise Error(HCQ_ERR_SIZE, f"{len(out)} output arrays given, the model has {self._n_out}")
        for j, o in enumerate(out):
            shape, dtype = self._out_spec[j]
            if (
                type(o) is not np.ndarray
                or o.dtype != dtype
                or o.shape != shape
                or not o.flags.c_contiguous
                or not o.flags.writeable
            ):
                raise Error(
                    HCQ_ERR_SIZE, f"output {j}: out= needs a writeable C-contiguous {dtype} array of shape {shape}"
                )
        for j, o in enumerate(out):
            self._out_ptrs[j] = _ptr(o)
        return out

    def run(self, *arrays, wait=True, out=None):
        """Run once. `arrays`: none (run on the inputs as they are: bound, or set earlier), or one
        per input in order (numpy arrays of the input's shape and dtype; None keeps that input).
        Returns the outputs as new numpy arrays in order; with `wait=False` submits the call and
        returns None (`wait()` then returns the outputs). `out`: a list of arrays (one per output,
        its shape and dtype, C-contiguous) to write the outputs into instead of new ones: a call
        that allocates nothing. Every array is checked before the call: one that does not fit
        raises hcq.Error and nothing is copied."""
        with self._lock:
            if self._closed:
                raise Error(HCQ_ERR_CLOSED, f"model {self.name} is closed")
            keep = self._arrays(arrays) if arrays else None
            if not wait:
                if keep is not None:
                    for i, a in enumerate(keep):
                        if a is not None:
                            _model_set_input(self._h, i, _ptr(a), self._in_lens[i])
                _model_submit(self._h)
                return None
            ins, outs = self._in_ptrs, self._out_ptrs
            try:
                if keep is not None:
                    for i, a in enumerate(keep):
                        if a is not None:
                            ins[i] = _ptr(a)
                res = self._outs() if out is None else self._into(out)
                _model_call_prebuilt(*self._call_args)
                return res
            finally:
                if keep is not None:
                    for i in self._in_idx:
                        ins[i] = None
                for j in self._out_idx:
                    outs[j] = None

    def wait(self, timeout_ms=None):
        """Wait for the call `run(..., wait=False)` submitted and return the outputs. A call not
        done within `timeout_ms` raises hcq.Error (HCQ_ERR_TIMEOUT) and stays in flight."""
        with self._lock:
            h = self._live_handle()
            _model_wait(h, -1 if timeout_ms is None else int(timeout_ms))
            outs = [np.empty(shape, dtype) for shape, dtype in self._out_spec]
            for j, o in enumerate(outs):
                _model_read_output(h, j, _ptr(o), self._out_lens[j])
            return outs

    def bind(self, i, array_or_pointer):
        """Bind input `i` to caller memory, zero-copy: a C-contiguous numpy array of the input's
        shape and dtype (kept alive while bound; write it in place, then `run()`), or an integer
        address of the input's size (which must stay valid until unbound or closed); None
        unbinds. CPU reads it where it lies; QCOM and QCOM:SIM import its pages for the GPU
        (KGSL MAP_USER_MEM); AMD registers them with KFD (USERPTR), which AMD:SIM's simulated
        KFD refuses for memory it did not map (HCQ_ERR_OS); SIM cannot (HCQ_ERR_UNSUPPORTED).
        The memory must be aligned to 16
        bytes (HCQ_ERR_MISALIGNED); unbinding and close() wait for the calls that use it."""
        with self._lock:
            h = self._live_handle()
            if array_or_pointer is None:
                ptr, keep = None, None
            elif isinstance(array_or_pointer, int):
                ptr, keep = array_or_pointer, array_or_pointer
            else:
                a = array_or_pointer
                if type(a) is not np.ndarray:
                    raise Error(HCQ_ERR_INVALID_ARGUMENT, "bind takes a numpy array, an integer address or None")
                if not a.flags.c_contiguous:
                    raise Error(HCQ_ERR_INVALID_ARGUMENT, f"input {i}: a bound array must be C-contiguous")
                keep = self._input(i, a)
                ptr = _ptr(keep)
            n = self.inputs[i].nbytes if 0 <= i < self._n_in and ptr is not None else 0
            _model_bind_input(h, i, ptr, n)
            self._bound[i] = keep

    def set_input(self, i, array):
        """Copy `array` into input `i` (for the next `run()`)."""
        with self._lock:
            h = self._live_handle()
            a = self._input(i, array)
            _model_set_input(h, i, _ptr(a), a.nbytes)

    def output_view(self, i):
        """Output `i` as a read-only numpy view of the library's memory, without a copy.

        The view keeps the model, and the memory under it, alive: `hcq.load(p).output_view(0)`
        is safe, and `close()` while views exist closes the model for every call at once but
        frees its memory only when the last view is gone. The view is read-only and cannot be
        made writeable (`v.flags.writeable = True` raises ValueError).

        Its bytes are the model's own and change under it: on CPU the view is the output's
        device memory, rewritten by the next `run()` (or submitted call); on the other devices
        it is a host copy, rewritten by the next `output_view(i)` of the same output. Use
        `.copy()` to keep the values of one call."""
        with self._lock:
            h = self._live_handle()
            p, n = c_void_p(), c_size_t()
            _model_output_ptr(h, i, ctypes.byref(p), ctypes.byref(n))
            shape, dtype = self._out_spec[i]
            pin = _ViewPin(self)
            if n.value == 0 or not p.value:
                v = np.empty(shape, dtype)
                v.flags.writeable = False
                return v
            raw = (ctypes.c_char * n.value).from_address(p.value)
            raw._hcq_pin = pin  # the buffer's exporter holds the model
            self._views.add(pin)
            # a read-only memoryview as the base: numpy refuses to make the view writeable
            return np.frombuffer(memoryview(raw).toreadonly(), dtype=dtype).reshape(shape)

    def check(self):
        """Compare the outputs with the bundle's expected bytes: True when all match."""
        with self._lock:
            h = self._live_handle()
            ok, n = c_int32(0), c_size_t(0)
            _model_check(h, ctypes.byref(ok), ctypes.byref(n))
            return bool(ok.value)

    def profile(self, path):
        """Record the following calls into a Perfetto trace at `path`, written at the end of a
        `with` block, by `.stop()`, or when the model closes."""
        return Profile(self, path)

    def close(self):
        """Close the model: waits for a call in flight, writes a profile begun, and frees the
        model; later calls raise hcq.Error (HCQ_ERR_CLOSED). While output views of it exist
        (`output_view`), the memory they read is not freed: the model is closed for every
        call now (and its bound inputs unbound, so their memory is not used after this
        returns), and freed when the last view is gone."""
        with self._lock:
            self._live_handle()
            try:
                if self._profile is not None:
                    self._profile.stop()
            finally:
                self._closed = True
                try:
                    if len(self._views):
                        # kept allocated for the views, idle: nothing in flight, nothing bound
                        _model_wait(self._h, -1)
                        for i, b in enumerate(self._bound):
                            if b is not None:
                                _model_bind_input(self._h, i, None, 0)
                    else:
                        self._freed = True
                        _model_close(self._h)
                finally:
                    # the bound arrays are let go once the library no longer uses them
                    self._bound = [None] * self._n_in

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        # the last reference is gone (the views hold one each): free the library's model
        # (waits for a call in flight); at interpreter exit the module's globals may be None
        if not getattr(self, "_freed", True) and _model_close is not None:
            self._freed = True
            self._closed = True
            with contextlib.suppress(Exception):
                _model_close(self._h)
