//! `cargo qemu-vfio [test|bench]`: the VM proof of hcq-vfio. Runs `hal/vfio/vm/run.sh` (install
//! what is missing, build the static guest program, assemble the initramfs, boot QEMU q35 with
//! an intel-iommu and edu devices) and exits with its status: 0 only when every check inside the
//! guest passed.

use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/vm/run.sh");
    match Command::new("bash").arg(script).args(std::env::args().skip(1)).status() {
        Ok(s) => match s.code() {
            Some(0) => ExitCode::SUCCESS,
            // CAST: exit statuses are 0..=255.
            Some(c) => ExitCode::from(c.clamp(1, 255) as u8),
            None => {
                eprintln!("qemu-vfio: {script} was killed by a signal");
                ExitCode::FAILURE
            }
        },
        Err(e) => {
            eprintln!("qemu-vfio: cannot run bash {script}: {e}");
            ExitCode::FAILURE
        }
    }
}
