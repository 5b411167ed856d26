//! The CPU model as an `hcq::runner::Model`: a thin adapter so front ends drive the CPU, SIM
//! and QCOM devices through one interface. The CPU keeps its own loader and capture
//! ([`Model::load`]: exec lists run inline by the soft CP) — this adapter forwards to the
//! inherent methods and changes nothing on the call path.

use crate::model::{CheckReport, Model};
use hcq::bundle::Arch;
use hcq::error::Result;
use std::vec::Vec;

impl From<CheckReport> for hcq::runner::CheckReport {
    fn from(r: CheckReport) -> Self {
        hcq::runner::CheckReport {
            ok: r.ok,
            max_abs_diff: r.max_abs_diff,
            exact: r.exact,
            compared: r.compared,
            mismatches: r.mismatches,
        }
    }
}

impl hcq::runner::Model for Model {
    fn name(&self) -> &str {
        Model::name(self)
    }
    fn arch(&self) -> Arch {
        Model::arch(self)
    }
    fn kernels_per_call(&self) -> usize {
        Model::kernels_per_call(self)
    }
    #[inline]
    fn call(&mut self) -> Result<()> {
        Model::call(self)
    }
    fn output(&self, i: usize) -> Result<Vec<u8>> {
        Model::output(self, i)
    }
    fn check(&self) -> Result<hcq::runner::CheckReport> {
        Model::check(self).map(Into::into)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::CpuDevice;
    use hcq::bundle::hcqb::{self, Hcqb};

    #[test]
    fn the_adapter_runs_and_checks_like_the_model() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/elementwise");
        let bytes = hcqb::write(&hcq::bundle::v1::import_dir(&dir).unwrap()).unwrap();
        let file = Hcqb::parse(&bytes).unwrap();
        let dev = CpuDevice::new("CPU", 1).unwrap();
        let mut m = Model::load(dev, &file, Arch::host().unwrap(), true).unwrap();
        let dm: &mut dyn hcq::runner::Model = &mut m;
        dm.call().unwrap();
        let r = dm.check().unwrap();
        assert!(r.ok && r.compared > 0, "{r:?}");
        assert_eq!(dm.output(0).unwrap(), Model::output(&m, 0).unwrap());
    }
}
