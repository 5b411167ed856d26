//! Benchmarks that need an edu device behind VFIO: they run inside the VM of
//! `cargo qemu-vfio bench` (figures are TCG figures: QEMU emulates the CPU, the IOMMU and the
//! device). On a host without an edu device bound to `vfio-pci` (and bindable) they print why
//! and exit successfully without measuring.
//!
//! - `dma_map_unmap_4k`: `VFIO_IOMMU_MAP_DMA` + `VFIO_IOMMU_UNMAP_DMA` of one 4 KiB page
//!   (the buffer is allocated once; the mapping guard is created and dropped per iteration);
//! - `copy_queue_round_trip`: `Buffer::copy_in` + `copy_out` of 64 bytes on the `EDU` device
//!   (two DMA transfers through the copy queue, each completed by an MSI; edu's DMA engine takes
//!   100 ms of virtual time per transfer by design);
//! - `bar_register_read` / `bar_raw_read_volatile`: one read of the identification register
//!   through the `register!` path and as a raw volatile load (each is a trap into QEMU).

use divan::Bencher;
use hcq::allocator::BufferSpec;
use hcq::buffer::Buffer;
use hcq::device::Device;
use hcq_vfio::dma::{DmaBuffer, DmaMapping};
use hcq_vfio::edu::{self, Edu, EduHandle};
use hcq_vfio::{Sysfs, VfioPaths};
use std::sync::{Arc, OnceLock};

static EDU: OnceLock<Arc<EduHandle>> = OnceLock::new();

fn setup() -> Result<Arc<EduHandle>, String> {
    let sysfs = Sysfs::default();
    let found = sysfs.find(edu::VENDOR, edu::DEVICE).map_err(|e| e.to_string())?;
    let mut why = String::from("no edu device (1234:11e8) in sysfs");
    // the first edu that binds and opens (in the VM, edu B's group is not viable)
    for d in found {
        let opened = sysfs
            .bind_vfio_pci(d.address)
            .and_then(|_| Edu::open(&VfioPaths::default(), d.address))
            .and_then(|edu| EduHandle::new("EDU", edu));
        match opened {
            Ok(h) => return Ok(Arc::new(h)),
            Err(e) => why = e.to_string(),
        }
    }
    Err(why)
}

fn main() {
    match setup() {
        Ok(h) => {
            let _ = EDU.set(h);
            divan::main();
        }
        // inside the VM (`vm/init` sets HCQ_VFIO_BENCH_REQUIRED) a skip is a failure
        Err(why) if std::env::var_os("HCQ_VFIO_BENCH_REQUIRED").is_some() => {
            eprintln!("vm benchmarks cannot run: {why}");
            std::process::exit(1);
        }
        Err(why) => println!("vm benchmarks skipped (they run inside `cargo qemu-vfio bench`): {why}"),
    }
}

fn handle() -> &'static Arc<EduHandle> {
    EDU.get().expect("set in main before divan runs")
}

#[divan::bench(sample_count = 50, sample_size = 10)]
fn dma_map_unmap_4k(b: Bencher) {
    let edu = handle().edu();
    let mut buf = Some(DmaBuffer::new(4096).unwrap());
    b.bench_local(|| {
        let m = DmaMapping::new(edu.device().container(), edu.iova_space(), buf.take().unwrap()).unwrap();
        buf = Some(m.unmap().unwrap());
    });
}

#[divan::bench(sample_count = 10, sample_size = 1)]
fn copy_queue_round_trip(b: Bencher) {
    let dev: Arc<dyn Device> = handle().clone();
    let buf = Buffer::new(dev, 64, hcq::DType::U8, BufferSpec::default()).unwrap();
    let data = [0x5au8; 64];
    let mut back = [0u8; 64];
    b.bench_local(|| {
        buf.copy_in(&data).unwrap();
        buf.copy_out(&mut back).unwrap();
    });
    assert_eq!(back, data);
}

/// A register read through the mapped BAR of the real (emulated) device: the `register!` path.
#[divan::bench(sample_count = 100, sample_size = 100)]
fn bar_register_read(b: Bencher) {
    let bar = handle().edu().bar().clone();
    b.bench_local(|| edu::ID::read(divan::black_box(&*bar)).unwrap().raw());
}

/// The same read as a raw `read_volatile` of the mapping.
#[divan::bench(sample_count = 100, sample_size = 100)]
fn bar_raw_read_volatile(b: Bencher) {
    let p = handle().edu().bar().base().as_ptr().cast::<u32>();
    // SAFETY: offset 0 of the live BAR0 mapping (1 MiB) the EduHandle keeps alive for the
    // whole run; a 32-bit read of the identification register, as edu.rst allows.
    b.bench_local(|| unsafe { core::ptr::read_volatile(divan::black_box(p)) });
}
