//! The comma three / 3X board profile: SDM845 (Snapdragon 845), Adreno 630, KGSL at
//! `/dev/kgsl-3d0`, AGNOS (aarch64 Linux).
//!
//! - [`COMMA`]: the profile constants (chip id, GMEM size, KGSL node, default device, target,
//!   install directory), the one place the deploy script and the checks take them from.
//! - [`BoardProfile::check_info`]: compare what KGSL reports against the profile.
//! - [`smoke`]: a GPU smoke test through KGSL: one IB with a `CP_MEM_WRITE` and a
//!   `CACHE_FLUSH_TS` event, submitted, awaited and read back: proves the kernel driver path
//!   (context, GPU objects, `GPU_COMMAND`, timestamp wait) on the board, or on the simulated
//!   KGSL with `--sim`.
//! - [`BoardProfile::wrapper_script`]: the `hcq` wrapper installed on the device, which makes
//!   the profile's default device (`QCOM`) the default of `hcq run` through `DEV`.
//!
//! The `hcq-comma` binary (`profile`, `check`, `wrapper`) is what a user runs; see the README.

use hcq::mmio::{MmioBus, Width};
use hcq::{Error, Result};
use hcq_adreno::a6xx::events;
use hcq_adreno::pm4::raw::event_write as ev;
use hcq_adreno::pm4::{op, pkt7};
use hcq_qcom::flags::{ContextFlags, MemFlags};
use hcq_qcom::kgsl::Kgsl;
use hcq_qcom::{DeviceInfo, FreeAfter};

/// A board: what it is, what runs on it and where it goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BoardProfile {
    /// Board name.
    pub name: &'static str,
    /// System on chip.
    pub soc: &'static str,
    /// GPU.
    pub gpu: &'static str,
    /// KGSL chip id (`core << 24 | major << 16 | minor << 8 | patch`).
    pub chip_id: u32,
    /// GMEM (on-chip tile memory) bytes.
    pub gmem_bytes: u64,
    /// KGSL device node.
    pub kgsl_node: &'static str,
    /// The device `hcq run` uses when neither `--device` nor `DEV` says otherwise.
    pub default_device: &'static str,
    /// Rust target triple of the binaries deployed.
    pub target: &'static str,
    /// Operating system.
    pub os: &'static str,
    /// Where the deploy script installs (comma's persistent partition).
    pub install_dir: &'static str,
    /// SSH user on the device.
    pub ssh_user: &'static str,
}

/// The comma three and 3X (both SDM845 with an Adreno 630; the 3X differs in board parts only).
pub const COMMA: BoardProfile = BoardProfile {
    name: "comma three / 3X",
    soc: "SDM845 (Snapdragon 845)",
    gpu: "Adreno 630",
    // Adreno 6.3.0, patch 1 (SDM845 v2, as shipped): what KGSL's DEVICE_INFO reports.
    chip_id: 0x0603_0001,
    // 1 MiB (Linux's a630 catalog entry: gmem = SZ_1M).
    gmem_bytes: 1 << 20,
    kgsl_node: hcq_qcom::kgsl::DEFAULT_NODE,
    default_device: "QCOM",
    target: "aarch64-unknown-linux-gnu",
    os: "AGNOS (comma's Ubuntu-based aarch64 Linux)",
    install_dir: "/data/hcq",
    ssh_user: "comma",
};

/// One comparison of the device against the profile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Check {
    /// What was compared.
    pub what: &'static str,
    /// The profile's value.
    pub expected: String,
    /// The device's value.
    pub found: String,
    /// It matches.
    pub ok: bool,
    /// A mismatch makes the device unusable with this profile (else it is a note).
    pub required: bool,
}

impl BoardProfile {
    /// The profile as JSON (`hcq-comma profile --json`; the deploy script reads it).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "name": self.name,
            "soc": self.soc,
            "gpu": self.gpu,
            "chip_id": format!("{:#010x}", self.chip_id),
            "gmem_bytes": self.gmem_bytes,
            "kgsl_node": self.kgsl_node,
            "default_device": self.default_device,
            "target": self.target,
            "os": self.os,
            "install_dir": self.install_dir,
            "ssh_user": self.ssh_user,
        })
    }

    /// Compare what KGSL reports with the profile: the chip's core.major.minor and the GMEM
    /// size are required, the patch level and the GPU MMU are notes.
    pub fn check_info(&self, info: &DeviceInfo) -> Vec<Check> {
        let rev = |c: u32| {
            let b = c.to_be_bytes();
            format!("{}.{}.{}", b[0], b[1], b[2])
        };
        vec![
            Check {
                what: "Adreno chip (core.major.minor)",
                expected: rev(self.chip_id),
                found: rev(info.chip_id),
                ok: self.chip_id >> 8 == info.chip_id >> 8,
                required: true,
            },
            Check {
                what: "chip patch level",
                expected: format!("{}", self.chip_id & 0xff),
                found: format!("{}", info.chip_id & 0xff),
                ok: self.chip_id & 0xff == info.chip_id & 0xff,
                required: false,
            },
            Check {
                what: "GMEM bytes",
                expected: self.gmem_bytes.to_string(),
                found: info.gmem_bytes.to_string(),
                ok: self.gmem_bytes == info.gmem_bytes,
                required: true,
            },
            Check {
                what: "GPU MMU enabled",
                expected: "true".into(),
                found: info.mmu_enabled.to_string(),
                ok: info.mmu_enabled,
                required: false,
            },
        ]
    }

    /// The `hcq` wrapper installed on the device in front of the real binary at `real`: the
    /// profile's default device becomes `DEV`'s default, so `hcq run BUNDLE` runs on `QCOM`
    /// (a `DEV` or `--device` the user gives still wins).
    pub fn wrapper_script(&self, real: &str) -> Result<String> {
        if real.is_empty() || real.contains(['\'', '\n']) {
            return Err(Error::InvalidArgument {
                what: "hcq-comma wrapper: binary path (no quotes or newlines)",
                value: 0,
            });
        }
        Ok(format!(
            "#!/bin/sh\n# hcq on the {name}: {gpu} through {node}; generated by `hcq-comma wrapper`.\n\
             : \"${{DEV:={dev}}}\"\nexport DEV\nexec '{real}' \"$@\"\n",
            name = self.name,
            gpu = self.gpu,
            node = self.kgsl_node,
            dev = self.default_device,
        ))
    }
}

/// What the smoke test saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Smoke {
    /// The value the IB's `CP_MEM_WRITE` wrote.
    pub written: u32,
    /// The value the `CACHE_FLUSH_TS` event wrote.
    pub fence: u32,
    /// The KGSL timestamp the submission retired with.
    pub timestamp: u32,
}

/// Value the smoke IB writes.
pub const SMOKE_VALUE: u32 = 0xc0ff_ee01;
/// Value the smoke IB's event writes.
pub const SMOKE_FENCE: u32 = 0x0000_5a5a;

/// Run one IB through `kgsl`: a `CP_MEM_WRITE` of [`SMOKE_VALUE`] and a `CACHE_FLUSH_TS` event
/// writing [`SMOKE_FENCE`], then wait (`timeout_ms`) and read both back. Errors name the step.
pub fn smoke(kgsl: &Kgsl, timeout_ms: u32) -> Result<Smoke> {
    let ctx = kgsl.create_context(ContextFlags::compute())?;
    let flags = MemFlags::USE_CPU_MAP;
    let out = kgsl.alloc(4096, flags)?;
    let ib = kgsl.alloc(4096, flags)?;
    let mut words = Vec::with_capacity(16);
    let a = out.gpuaddr();
    let f = a + 16;
    pkt7(&mut words, op::CP_MEM_WRITE, &[a as u32, (a >> 32) as u32, SMOKE_VALUE])?;
    pkt7(
        &mut words,
        op::CP_EVENT_WRITE,
        &[events::CACHE_FLUSH_TS << ev::EVENT_SHIFT, f as u32, (f >> 32) as u32, SMOKE_FENCE],
    )?;
    for (i, w) in words.iter().enumerate() {
        ib.bus().write(4 * i, Width::U32, (*w).into())?;
    }
    let result = (|| {
        // SAFETY: the IB writes only `out` (its value and the fence 16 bytes in), a live object
        // of this context freed below only after the timestamp that used it.
        let ts = unsafe { kgsl.submit(&ctx, ib.gpuaddr(), 4 * words.len() as u64) }?;
        kgsl.wait(&ctx, ts, timeout_ms)?;
        // CAST: 32-bit reads.
        let written = out.bus().read(0, Width::U32)? as u32;
        let fence = out.bus().read(16, Width::U32)? as u32;
        Ok(Smoke { written, fence, timestamp: ts })
    })();
    let retired = kgsl.retired(&ctx).unwrap_or(0);
    let after = FreeAfter::Timestamp { context: ctx.id(), timestamp: retired.max(ctx.last_submitted()) };
    // The kernel frees each object once the context retires the submission that used it.
    kgsl.free(out, after)?;
    kgsl.free(ib, after)?;
    let s = result.map_err(|e: Error| e.context("hcq-comma smoke: IB submission"))?;
    if s.written != SMOKE_VALUE || s.fence != SMOKE_FENCE {
        return Err(Error::Mismatch {
            what: "hcq-comma smoke: memory written by the GPU (CP_MEM_WRITE, event fence)",
            expected: u64::from(SMOKE_VALUE) << 32 | u64::from(SMOKE_FENCE),
            found: u64::from(s.written) << 32 | u64::from(s.fence),
        });
    }
    kgsl.destroy_context(ctx)?;
    Ok(s)
}
