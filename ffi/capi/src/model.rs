//! The calls on a model: its name and tensors, inputs by copy or bound zero-copy, runs
//! (blocking, or submit and wait), outputs, the bundle's check, profiles, close.

use crate::error::{Fail, fail, guard};
use crate::handle::{Info, ModelCell, models, with_live, with_model};
use crate::hcq_status::*;
use crate::ptr::{bytes_in, bytes_out, out, str_in, str_out};
use crate::{hcq_dtype, hcq_model, hcq_status, hcq_tensor_info};
use std::ffi::{c_char, c_void};
use std::path::Path;
use std::time::Duration;

/// The model's name (the bundle's) into `buf`, as `hcq_devices` writes strings.
#[unsafe(no_mangle)]
pub extern "C" fn hcq_model_name(m: hcq_model, buf: *mut c_char, cap: usize, len: *mut usize) -> hcq_status {
    guard("hcq_model_name", || {
        let name = with_model(m, |x| Ok(x.name().to_string()))?;
        str_out(&name, buf, cap, len)
    })
}

/// The number of inputs and outputs (either pointer may be NULL).
#[unsafe(no_mangle)]
pub extern "C" fn hcq_model_count(m: hcq_model, n_inputs: *mut usize, n_outputs: *mut usize) -> hcq_status {
    guard("hcq_model_count", || {
        let c = models().get(m.id, "model")?;
        if !n_inputs.is_null() {
            *out(n_inputs, "n_inputs")? = c.tensors_in.len();
        }
        if !n_outputs.is_null() {
            *out(n_outputs, "n_outputs")? = c.tensors_out.len();
        }
        Ok(())
    })
}

fn tensor_info(
    m: hcq_model,
    i: usize,
    info: *mut hcq_tensor_info,
    pick: fn(&ModelCell) -> (&[Info], &[hcq_runtime::Tensor]),
    what: &str,
) -> Result<(), Fail> {
    let o = out(info, "info")?;
    let c = models().get(m.id, "model")?;
    let (infos, tensors) = pick(&c);
    let (Some((name, shape)), Some(t)) = (infos.get(i), tensors.get(i)) else {
        return fail(HCQ_ERR_OUT_OF_RANGE, format!("{what} {i} (the model has {})", tensors.len()));
    };
    // The strings and shapes live in the cell, which the table keeps until the model is closed.
    *o = hcq_tensor_info {
        name: name.as_ptr(),
        dtype: hcq_dtype::from_core(t.dtype),
        ndim: shape.len(),
        shape: shape.as_ptr(),
        nbytes: t.nbytes as usize,
    };
    Ok(())
}

/// Input `i`'s name, dtype, shape and size.
#[unsafe(no_mangle)]
pub extern "C" fn hcq_model_input(m: hcq_model, i: usize, info: *mut hcq_tensor_info) -> hcq_status {
    guard("hcq_model_input", || tensor_info(m, i, info, |c| (&c.infos_in, &c.tensors_in), "input"))
}

/// Output `i`'s name, dtype, shape and size.
#[unsafe(no_mangle)]
pub extern "C" fn hcq_model_output(m: hcq_model, i: usize, info: *mut hcq_tensor_info) -> hcq_status {
    guard("hcq_model_output", || tensor_info(m, i, info, |c| (&c.infos_out, &c.tensors_out), "output"))
}

/// Whether an array of element type `dtype` (an `hcq_dtype` value) and shape `shape` (`ndim`
/// sizes) fits input `i`: `HCQ_OK`, else `HCQ_ERR_INVALID_ARGUMENT` (dtype) or `HCQ_ERR_SIZE`
/// (shape) with a message naming both. For wrappers that check arrays (the Python package).
#[unsafe(no_mangle)]
pub extern "C" fn hcq_model_check_input(
    m: hcq_model,
    i: usize,
    dtype: i32,
    ndim: usize,
    shape: *const u64,
) -> hcq_status {
    guard("hcq_model_check_input", || {
        let c = models().get(m.id, "model")?;
        let Some(t) = c.tensors_in.get(i) else {
            return fail(HCQ_ERR_OUT_OF_RANGE, format!("input {i} (the model has {})", c.tensors_in.len()));
        };
        let Some(bytes) = ndim.checked_mul(size_of::<u64>()) else {
            return fail(HCQ_ERR_SIZE, format!("ndim {ndim} is beyond any shape"));
        };
        let raw = bytes_in(shape.cast(), bytes, "shape")?;
        if !(raw.as_ptr() as usize).is_multiple_of(align_of::<u64>()) {
            return fail(HCQ_ERR_MISALIGNED, "shape is not aligned to 8 bytes");
        }
        let got: Vec<u64> = raw.chunks_exact(8).map(|b| u64::from_ne_bytes(b.try_into().unwrap_or_default())).collect();
        let want = t.dtype;
        let name = |d: i32| {
            u8::try_from(d).ok().and_then(|c| hcq::dtype::DType::from_code(c).ok()).map_or("unknown", |d| d.name())
        };
        if dtype != i32::from(want.code()) {
            return fail(
                HCQ_ERR_INVALID_ARGUMENT,
                format!("input {i} ({}): dtype {}, the model takes {}", t.name, name(dtype), want.name()),
            );
        }
        if got != t.shape {
            return fail(HCQ_ERR_SIZE, format!("input {i} ({}): shape {got:?}, the model takes {:?}", t.name, t.shape));
        }
        Ok(())
    })
}

/// Copy `len` bytes (exactly input `i`'s size) from `data` into input `i`, after a call in
/// flight. Refused for an input bound to caller memory.
#[unsafe(no_mangle)]
pub extern "C" fn hcq_model_set_input(m: hcq_model, i: usize, data: *const c_void, len: usize) -> hcq_status {
    guard("hcq_model_set_input", || {
        let d = bytes_in(data, len, "data")?;
        with_model(m, |x| Ok(x.set_input_at(i, d)?))
    })
}

/// Bind input `i` to the caller's memory at `ptr` (`len`: exactly the input's size; aligned to
/// `HCQ_BIND_ALIGN`), zero-copy: every later call reads the input there, so the caller writes
/// its next frame in place, with no copy. `ptr` NULL with `len` 0 unbinds it (the model's own
/// buffer again, as it was before the bind). CPU: the kernels take the pointer. QCOM and
/// QCOM:SIM: the memory is imported for the GPU (KGSL `MAP_USER_MEM` of its pages, the CPU
/// cache lines cleaned when it is bound: later writes reach the GPU where the CPU cache is
/// coherent with it, as tinygrad assumes). AMD and AMD:SIM: its pages are registered with KFD
/// as a `USERPTR` buffer object (the GPU address is the host address); the simulated KFD of
/// AMD:SIM pins only pages it mapped itself, so it refuses other memory with EFAULT
/// (`HCQ_ERR_OS`). Waits for a call in flight first.
///
/// Errors: `HCQ_ERR_NULL_POINTER` (NULL with a length), `HCQ_ERR_SIZE` (not the input's size),
/// `HCQ_ERR_MISALIGNED`, `HCQ_ERR_OUT_OF_RANGE` (no input `i`), `HCQ_ERR_UNSUPPORTED` (SIM,
/// whose devices copy between simulated memories; the MSM DRM path, `MSM+QCOM`, whose driver
/// has no user-pointer import; an input a copy launch, an output or a kernel argument reaching
/// across its edge also uses), `HCQ_ERR_OS` (the kernel refused the import); nothing changes
/// then.
///
/// Lifetime rule: the memory must stay valid, and unwritten while a call runs, until the
/// input is unbound or rebound or the model closed; each of these waits for the calls that
/// use it, so the memory may be freed as soon as one returns.
#[unsafe(no_mangle)]
pub extern "C" fn hcq_model_bind_input(m: hcq_model, i: usize, ptr: *mut c_void, len: usize) -> hcq_status {
    guard("hcq_model_bind_input", || {
        if ptr.is_null() && len != 0 {
            return fail(HCQ_ERR_NULL_POINTER, format!("ptr is NULL with len {len} (unbinding passes NULL and 0)"));
        }
        with_model(m, |x| {
            // The header states the lifetime rule this relies on; size and alignment are
            // checked inside.
            // SAFETY: the caller's memory stays valid as `bind_input_at` requires (the C contract).
            unsafe { x.bind_input_at(i, ptr.cast(), len) }?;
            Ok(())
        })
    })
}

/// One forward pass: submit and wait (a submitted call is waited for first).
#[unsafe(no_mangle)]
pub extern "C" fn hcq_model_run(m: hcq_model) -> hcq_status {
    guard("hcq_model_run", || with_model(m, |x| Ok(x.run()?)))
}

/// Start one forward pass without waiting (`hcq_model_wait` waits; a call still in flight is
/// waited for first).
#[unsafe(no_mangle)]
pub extern "C" fn hcq_model_submit(m: hcq_model) -> hcq_status {
    guard("hcq_model_submit", || with_model(m, |x| Ok(x.submit()?)))
}

/// Wait for the submitted call (`HCQ_OK` at once when none is in flight). `timeout_ms` < 0: the
/// device's own policy (30 s without progress). Otherwise a call not done after `timeout_ms`
/// is `HCQ_ERR_TIMEOUT` and stays in flight: wait again, or close (which waits).
#[unsafe(no_mangle)]
pub extern "C" fn hcq_model_wait(m: hcq_model, timeout_ms: i64) -> hcq_status {
    guard("hcq_model_wait", || {
        let t = u64::try_from(timeout_ms).ok().map(Duration::from_millis);
        with_model(m, |x| {
            let done = match t {
                Some(t) => x.wait_for(t)?,
                None => x.wait(None).map(|()| true)?,
            };
            if done {
                Ok(())
            } else {
                fail(
                    HCQ_ERR_TIMEOUT,
                    format!(
                        "the call submitted on {} is still running after {timeout_ms} ms (wait again, or close the model, which waits)",
                        x.device()
                    ),
                )
            }
        })
    })
}

/// Whether a submitted call was not waited for yet (`*in_flight` 1 or 0).
#[unsafe(no_mangle)]
pub extern "C" fn hcq_model_in_flight(m: hcq_model, in_flight: *mut i32) -> hcq_status {
    guard("hcq_model_in_flight", || {
        let o = out(in_flight, "in_flight")?;
        *o = with_model(m, |x| Ok(i32::from(x.in_flight())))?;
        Ok(())
    })
}

/// Copy output `i` (`len`: exactly its size) into `data`, after a call in flight.
#[unsafe(no_mangle)]
pub extern "C" fn hcq_model_read_output(m: hcq_model, i: usize, data: *mut c_void, len: usize) -> hcq_status {
    guard("hcq_model_read_output", || {
        let d = bytes_out(data, len, "data")?;
        with_model(m, |x| Ok(x.read_output_at(i, d)?))
    })
}

/// A pointer to output `i`'s bytes (`*len`: its size; may be NULL) after a call in flight.
/// The memory stays allocated, at this address, until the model is closed (a wrapper may
/// hand out read-only views of it that keep the model open); its bytes change under it. CPU:
/// the output's device memory itself, rewritten by the next run or submit. Other devices: a
/// host copy made by this call, rewritten by the next `hcq_model_output_ptr` of this output.
/// Read it only: writes are undefined (CPU: they land in the model's memory).
#[unsafe(no_mangle)]
pub extern "C" fn hcq_model_output_ptr(m: hcq_model, i: usize, ptr: *mut *const c_void, len: *mut usize) -> hcq_status {
    guard("hcq_model_output_ptr", || {
        let o = out(ptr, "ptr")?;
        let (p, n) = with_live(m, |l| {
            let p = match l.model.output_in_place(i)? {
                Some(p) => p,
                None => {
                    // a host copy, kept in the model's cell until the next call asks again
                    let buf = &mut l.staging[i];
                    buf.resize(l.model.outputs()[i].nbytes as usize, 0);
                    l.model.read_output_at(i, buf)?;
                    buf.as_ptr()
                }
            };
            Ok((p, l.model.outputs()[i].nbytes as usize))
        })?;
        if !len.is_null() {
            *out(len, "len")? = n;
        }
        *o = p.cast();
        Ok(())
    })
}

/// Copy inputs in, run, copy outputs out, in one call: `inputs[j]` (`input_lens[j]` bytes) for
/// each of the model's `n_inputs` inputs (a NULL entry keeps that input as it is, e.g. bound),
/// `outputs[j]` (`output_lens[j]` bytes) for each of its `n_outputs` outputs (a NULL entry is
/// not read). The counts must be the model's.
#[unsafe(no_mangle)]
pub extern "C" fn hcq_model_call(
    m: hcq_model,
    inputs: *const *const c_void,
    input_lens: *const usize,
    n_inputs: usize,
    outputs: *const *mut c_void,
    output_lens: *const usize,
    n_outputs: usize,
) -> hcq_status {
    guard("hcq_model_call", || {
        let array = |p: *const usize, n: usize, what: &str| -> Result<&[usize], Fail> {
            let Some(bytes) = n.checked_mul(size_of::<usize>()) else {
                return fail(HCQ_ERR_SIZE, format!("{what}: {n} entries is beyond any array"));
            };
            let b = bytes_in(p.cast(), bytes, what)?;
            if !(b.as_ptr() as usize).is_multiple_of(align_of::<usize>()) {
                return fail(HCQ_ERR_MISALIGNED, format!("{what} is not aligned"));
            }
            // Checked: not null (when n > 0), aligned, n elements long.
            // SAFETY: the caller's array of `n` elements.
            Ok(unsafe { core::slice::from_raw_parts(b.as_ptr().cast::<usize>(), n) })
        };
        let ins = array(inputs.cast(), n_inputs, "inputs")?;
        let in_lens = array(input_lens, n_inputs, "input_lens")?;
        let outs = array(outputs.cast(), n_outputs, "outputs")?;
        let out_lens = array(output_lens, n_outputs, "output_lens")?;
        with_model(m, |x| {
            if n_inputs != x.inputs().len() || n_outputs != x.outputs().len() {
                return fail(
                    HCQ_ERR_SIZE,
                    format!(
                        "{n_inputs} inputs and {n_outputs} outputs given, the model has {} and {}",
                        x.inputs().len(),
                        x.outputs().len()
                    ),
                );
            }
            for (j, (&p, &n)) in ins.iter().zip(in_lens).enumerate() {
                if p != 0 {
                    x.set_input_at(j, bytes_in(p as *const c_void, n, "inputs[j]")?)?;
                }
            }
            x.run()?;
            for (j, (&p, &n)) in outs.iter().zip(out_lens).enumerate() {
                if p != 0 {
                    x.read_output_at(j, bytes_out(p as *mut c_void, n, "outputs[j]")?)?;
                }
            }
            Ok(())
        })
    })
}

/// Compare every output that has expected bytes in the bundle with what the last call left:
/// `*ok` 1 when all match (exactly, or within the bundle format's tolerance across
/// architectures), `*compared` (may be NULL) the number compared.
#[unsafe(no_mangle)]
pub extern "C" fn hcq_model_check(m: hcq_model, ok: *mut i32, compared: *mut usize) -> hcq_status {
    guard("hcq_model_check", || {
        let o = out(ok, "ok")?;
        let (good, n) = with_model(m, |x| {
            let r = x.check()?;
            Ok((r.ok, r.compared))
        })?;
        if !compared.is_null() {
            *out(compared, "compared")? = n;
        }
        *o = i32::from(good);
        Ok(())
    })
}

/// Start recording a profile of this model's calls (each call; on CPU and SIM each kernel and
/// copy). Events recorded before on the device are dropped.
#[unsafe(no_mangle)]
pub extern "C" fn hcq_model_profile_begin(m: hcq_model) -> hcq_status {
    guard("hcq_model_profile_begin", || with_model(m, |x| Ok(x.profile_begin()?)))
}

/// Stop recording and write the profile as a Perfetto (Chrome trace JSON) file at `path`
/// (open it in ui.perfetto.dev). `events` (may be NULL) gets the number of events written.
#[unsafe(no_mangle)]
pub extern "C" fn hcq_model_profile_end(m: hcq_model, path: *const c_char, events: *mut usize) -> hcq_status {
    guard("hcq_model_profile_end", || {
        let Some(path) = str_in(path, "path")? else { return fail(HCQ_ERR_NULL_POINTER, "path is NULL") };
        let n = with_model(m, |x| Ok(x.profile_end(Path::new(path))?))?;
        if !events.is_null() {
            *out(events, "events")? = n;
        }
        Ok(())
    })
}

/// Close a model: waits for the call in progress on another thread and for a submitted call,
/// then frees it (a bound input's memory is not used after this returns). Later calls on the
/// handle are `HCQ_ERR_CLOSED`.
#[unsafe(no_mangle)]
pub extern "C" fn hcq_model_close(m: hcq_model) -> hcq_status {
    guard("hcq_model_close", || {
        let c = models().remove(m.id, "model")?;
        let taken = match c.live.lock() {
            Ok(mut g) => g.take(),
            Err(p) => p.into_inner().take(),
        };
        drop(taken);
        Ok(())
    })
}
