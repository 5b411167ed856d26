//! `SIM` (and `SIM:1`) as device kinds of the plug-in point ([`hcq_runner::plug`]): the host's
//! CPU objects, one exec packet per kernel through the simulated command processors
//! ([`SimBackend`]).

use crate::cpu::SimBackend;
use crate::device::{SIM_DEVICES, SimHandle};
use hcq::device::{Device, DeviceProperties};
use hcq::engine::Engine;
use hcq::error::Result;
use hcq::profile::Profiler;
use hcq::signal::WaitPolicy;
use hcq_bundle::Arch;
use hcq_bundle::hcqb::Hcqb;
use hcq_runner::Runner;
use hcq_runner::plug::{Capabilities, DeviceKind, LoadedModel, OpenDevice, Options, ProfilerRef, ProfilerSource};
use std::sync::Arc;

/// The `SIM` kind: [`SIM_DEVICES`] simulated devices, `SIM` and `SIM:1`.
#[derive(Debug, Default)]
pub struct SimKind;

impl DeviceKind for SimKind {
    fn names(&self) -> &[&'static str] {
        &["SIM"]
    }
    fn indexed(&self) -> u32 {
        SIM_DEVICES
    }
    fn probe(&self, name: &str) -> Result<DeviceProperties> {
        Ok(SimHandle::open(name)?.properties())
    }
    fn open(&self, name: &str, opts: &Options) -> Result<Box<dyn OpenDevice>> {
        opts.refuse_unsupported(name, false, true)?;
        let dev = Arc::new(SimHandle::open(name)?);
        let hcq = dev.sim().engine();
        hcq.profiler().set_enabled(opts.profile);
        if let Some(ms) = opts.timeout_ms() {
            // the device's own policy, set once at open (not per wait)
            hcq.timeline().set_policy(WaitPolicy::with_timeout_ms(ms));
        }
        Ok(Box::new(SimOpen { dev, allow_native: opts.allow_native }))
    }
}

/// An opened `SIM` device.
struct SimOpen {
    dev: Arc<SimHandle>,
    allow_native: bool,
}

impl OpenDevice for SimOpen {
    fn name(&self) -> &str {
        self.dev.name()
    }
    fn description(&self) -> String {
        format!(
            "{} ({}, host {} objects)",
            self.dev.name(),
            self.dev.properties().notes,
            Arch::host().map_or("?", |a| a.name())
        )
    }
    fn load(&self, bundle: &Hcqb<'_>) -> Result<Box<dyn LoadedModel>> {
        let b = SimBackend::new(self.dev.clone()).allow_unchecked_level(self.allow_native);
        Ok(Box::new(Runner::load(b, bundle)?))
    }
}

impl ProfilerSource for SimHandle {
    fn profiler(&self) -> &Profiler {
        self.sim().engine().profiler()
    }
}

/// SIM's devices copy between simulated memories: no caller memory is bound (the default).
impl Capabilities for SimBackend {
    fn device_name(&self) -> &str {
        self.device().name()
    }
    fn engine(&self) -> Option<&Engine> {
        Some(self.device().sim().engine())
    }
    fn submit(&mut self) -> Result<u64> {
        SimBackend::submit(self)
    }
    fn profiler(&self) -> Option<ProfilerRef> {
        Some(self.device().clone())
    }
}
