//! `QCOM` and its interface-named forms (`KGSL+QCOM`, `MSM+QCOM`) as device kinds of the
//! plug-in point ([`hcq_runner::plug`]); [`QcomOpen`] is the opened device any QCOM kind hands
//! out, the simulated ones (`hcq-sim-adreno`) included.

use super::engine::with_fault;
use super::{QcomBackend, QcomDevice};
use hcq::device::{Device, DeviceProperties};
use hcq::engine::Engine;
use hcq::error::{Error, Result, ResultExt};
use hcq::stamp::Stamp;
use hcq_bundle::ArgView;
use hcq_bundle::hcqb::Hcqb;
use hcq_runner::Runner;
use hcq_runner::plug::{Capabilities, DeviceKind, LoadedModel, OpenDevice, Options, ProfilerRef, policy_within};
use std::sync::Arc;
use std::time::Duration;

/// Which kernel interface a QCOM kind opens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interface {
    /// `/dev/kgsl-3d0`, else an MSM DRM render node.
    Any,
    /// The KGSL node only.
    Kgsl,
    /// An MSM DRM render node only.
    Msm,
}

/// A hardware QCOM kind: `QCOM`, `KGSL+QCOM` or `MSM+QCOM`.
#[derive(Clone, Copy, Debug)]
pub struct QcomKind(pub Interface);

impl QcomKind {
    fn open_device(&self, capture: bool) -> Result<Arc<QcomDevice>> {
        match self.0 {
            Interface::Any => QcomDevice::open(capture),
            Interface::Kgsl => QcomDevice::open_kgsl(capture),
            Interface::Msm => QcomDevice::open_msm(capture),
        }
    }
}

impl DeviceKind for QcomKind {
    fn names(&self) -> &[&'static str] {
        match self.0 {
            Interface::Any => &["QCOM"],
            Interface::Kgsl => &["KGSL+QCOM"],
            Interface::Msm => &["MSM+QCOM"],
        }
    }
    fn probe(&self, _name: &str) -> Result<DeviceProperties> {
        Ok(self.open_device(false)?.properties())
    }
    fn open(&self, name: &str, opts: &Options) -> Result<Box<dyn OpenDevice>> {
        opts.refuse_unsupported(name, true, true)?;
        Ok(Box::new(QcomOpen::new(self.open_device(opts.capture_rd)?, opts)))
    }
}

/// An opened QCOM device (hardware or simulated): loads bundles through [`QcomBackend`].
pub struct QcomOpen {
    dev: Arc<QcomDevice>,
    profile: bool,
    timeout_ms: Option<u32>,
}

impl QcomOpen {
    /// `dev` as `opts` say (profiling, the wait timeout).
    pub fn new(dev: Arc<QcomDevice>, opts: &Options) -> Self {
        let timeout_ms = opts.timeout_ms().map(|ms| u32::try_from(ms).unwrap_or(u32::MAX));
        QcomOpen { dev, profile: opts.profile, timeout_ms }
    }

    /// The device.
    pub fn device(&self) -> &Arc<QcomDevice> {
        &self.dev
    }
}

impl OpenDevice for QcomOpen {
    fn name(&self) -> &str {
        self.dev.name()
    }
    fn description(&self) -> String {
        format!("{} ({})", self.dev.name(), self.dev.properties().notes)
    }
    fn load(&self, bundle: &Hcqb<'_>) -> Result<Box<dyn LoadedModel>> {
        let mut b = QcomBackend::new(self.dev.clone())?;
        b.set_profile(self.profile)?;
        if let Some(ms) = self.timeout_ms {
            b.set_timeout_ms(ms);
        }
        let r = Runner::load(b, bundle)?;
        if let Some(h) = r.backend().engine() {
            h.profiler().set_enabled(self.profile);
        }
        Ok(Box::new(r))
    }
    fn rd_capture(&self) -> Result<Vec<u8>> {
        self.dev.rd_capture().ok_or(Error::Unsupported {
            what: "an .rd capture of a device opened without one (Options::capture_rd)",
            value: 0,
        })
    }
}

impl Capabilities for QcomBackend {
    fn device_name(&self) -> &str {
        self.device().name()
    }
    fn engine(&self) -> Option<&Engine> {
        QcomBackend::engine(self).map(|h| &**h)
    }
    fn submit(&mut self) -> Result<u64> {
        Ok(self.submit_call()?.get())
    }
    /// Waits sleep in KGSL `WAITTIMESTAMP`; a fault names what the (simulated) KGSL reported.
    fn wait(&self, stamp: u64, timeout: Option<Duration>) -> Result<()> {
        match (QcomBackend::engine(self), timeout) {
            (Some(h), Some(t)) => {
                h.wait_with(Stamp::new(stamp), &policy_within(h, t)).map_err(|e| with_fault(&*self.device().kernel, e))
            }
            _ => QcomBackend::wait(self, Stamp::new(stamp)),
        }
    }
    fn try_wait(&self, stamp: u64, within: Duration) -> Result<bool> {
        match QcomBackend::engine(self) {
            Some(h) => h
                .try_wait(Stamp::new(stamp), &policy_within(h, within))
                .map_err(|e| with_fault(&*self.device().kernel, e)),
            None => Ok(true),
        }
    }
    /// The caller's pages are imported for the GPU (KGSL `MAP_USER_MEM`, [`QcomBackend::bind_host`]).
    unsafe fn bind_host(&mut self, view: ArgView, _current: Option<u64>, ptr: *mut u8) -> Result<Option<u64>> {
        let own = self.buffer_addr(view.buffer as usize).unwrap_or(0) + view.offset;
        let name = self.device().name().to_string();
        // SAFETY: the caller's contract is bind_host's.
        unsafe { QcomBackend::bind_host(self, own, view.nbytes, ptr) }.with_context(|| format!("device {name}"))?;
        Ok((!ptr.is_null()).then_some(ptr as u64))
    }
    fn profiler(&self) -> Option<ProfilerRef> {
        QcomBackend::engine(self).map(|h| h.clone() as ProfilerRef)
    }
}
