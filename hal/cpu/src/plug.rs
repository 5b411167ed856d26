//! `CPU` as a device kind of the plug-in point ([`hcq_runner::plug`]): the host's cores
//! through the soft command processor, bundles run by [`CpuBackend`].

use crate::backend::CpuBackend;
use crate::device::{CpuDevice, host_cores};
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use hcq::device::{Device, DeviceProperties};
use hcq::engine::Engine;
use hcq::error::Result;
use hcq::profile::Profiler;
use hcq_bundle::ArgView;
use hcq_bundle::hcqb::Hcqb;
use hcq_runner::Runner;
use hcq_runner::plug::{Capabilities, DeviceKind, LoadedModel, OpenDevice, Options, ProfilerRef, ProfilerSource};

/// The `CPU` kind: one device using every host core.
#[derive(Debug, Default)]
pub struct CpuKind;

impl DeviceKind for CpuKind {
    fn names(&self) -> &[&'static str] {
        &["CPU"]
    }
    fn probe(&self, name: &str) -> Result<DeviceProperties> {
        Ok(CpuDevice::new(name, host_cores())?.properties())
    }
    fn open(&self, name: &str, opts: &Options) -> Result<Box<dyn OpenDevice>> {
        opts.refuse_unsupported(name, false, false)?;
        let dev = CpuDevice::new(name, host_cores())?;
        // from before the load, so the trace shows the buffer allocations too
        dev.soft().engine().profiler().set_enabled(opts.profile);
        Ok(Box::new(CpuOpen { dev, allow_native: opts.allow_native }))
    }
}

/// An opened `CPU` device.
struct CpuOpen {
    dev: Arc<CpuDevice>,
    allow_native: bool,
}

impl OpenDevice for CpuOpen {
    fn name(&self) -> &str {
        self.dev.name()
    }
    fn description(&self) -> String {
        format!("{} ({} cores)", self.dev.name(), self.dev.cores())
    }
    fn load(&self, bundle: &Hcqb<'_>) -> Result<Box<dyn LoadedModel>> {
        let b = CpuBackend::new(self.dev.clone()).allow_unchecked_level(self.allow_native);
        Ok(Box::new(Runner::load(b, bundle)?))
    }
}

impl ProfilerSource for CpuDevice {
    fn profiler(&self) -> &Profiler {
        self.soft().engine().profiler()
    }
}

impl Capabilities for CpuBackend {
    fn device_name(&self) -> &str {
        self.device().name()
    }
    fn engine(&self) -> Option<&Engine> {
        Some(self.device().soft().engine())
    }
    fn submit(&mut self) -> Result<u64> {
        CpuBackend::submit(self)
    }
    /// The kernels take the caller's pointer: every argument inside the view moves to it
    /// ([`CpuBackend::rebind`]).
    unsafe fn bind_host(&mut self, view: ArgView, current: Option<u64>, ptr: *mut u8) -> Result<Option<u64>> {
        let own = self.buffer_addrs()[view.buffer as usize] + view.offset;
        let to = if ptr.is_null() { own } else { ptr as u64 };
        let from = current.unwrap_or(own);
        if from != to {
            // SAFETY: the caller's contract covers `to`; `own` is the model's buffer; the
            // front door binds only views whose kernel arguments lie inside or apart from them.
            unsafe { self.rebind(from, view.nbytes, to) }?;
        }
        Ok((to != own).then_some(to))
    }
    fn host_ptr(&self, view: ArgView) -> Option<*const u8> {
        let base = *self.buffer_addrs().get(view.buffer as usize)?;
        // CAST: a device address on the CPU device is a host address.
        Some((base + view.offset) as usize as *const u8)
    }
    fn profiler(&self) -> Option<ProfilerRef> {
        Some(self.device().clone())
    }
}
