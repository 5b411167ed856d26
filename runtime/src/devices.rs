//! The built-in device kinds, one registry line each. Adding a device family is one crate that
//! implements [`hcq_runner::plug::DeviceKind`] plus one line here (or, for a program that links
//! its own kind, one call of [`crate::register`]).

use hcq_qcom::device::{Interface, QcomKind};
use hcq_runner::plug::Registry;
use std::sync::Arc;

/// Register every kind this build has, in the order `hcq devices` lists them.
pub(crate) fn register_builtin(r: &Registry) {
    r.register(Arc::new(hcq_cpu::plug::CpuKind));
    #[cfg(feature = "sim")]
    r.register(Arc::new(hcq_sim::plug::SimKind));
    r.register(Arc::new(QcomKind(Interface::Any)));
    r.register(Arc::new(QcomKind(Interface::Kgsl)));
    r.register(Arc::new(QcomKind(Interface::Msm)));
    #[cfg(feature = "sim")]
    for i in [Interface::Any, Interface::Kgsl, Interface::Msm] {
        r.register(Arc::new(hcq_sim_adreno::QcomSimKind(i)));
    }
    r.register(Arc::new(hcq_kfd::AmdKind::kfd()));
    #[cfg(feature = "sim")]
    for k in hcq_sim_amd::plug::kinds() {
        r.register(Arc::new(k));
    }
    #[cfg(not(feature = "sim"))]
    r.register(Arc::new(without_sim::NoSim));
}

/// Without the `sim` feature the simulated names still resolve, to an error naming the feature.
#[cfg(not(feature = "sim"))]
mod without_sim {
    use hcq::device::DeviceProperties;
    use hcq::error::{Error, Result};
    use hcq_runner::plug::{DeviceKind, OpenDevice, Options};

    pub(super) struct NoSim;

    fn missing() -> Error {
        Error::Unsupported {
            what: "the simulated devices: this build of hcq-runtime has no simulators (cargo feature `sim`)",
            value: 0,
        }
    }

    impl DeviceKind for NoSim {
        fn names(&self) -> &[&'static str] {
            &["SIM", "QCOM:SIM", "KGSL+QCOM:SIM", "MSM+QCOM:SIM", "AMD:SIM", "KFD+AMD:SIM"]
        }
        fn indexed(&self) -> u32 {
            // SIM and SIM:1, as hcq-sim's `SIM_DEVICES`
            2
        }
        fn probe(&self, _name: &str) -> Result<DeviceProperties> {
            Err(missing())
        }
        fn open(&self, _name: &str, _opts: &Options) -> Result<Box<dyn OpenDevice>> {
            Err(missing())
        }
    }
}
