//! The buffer, allocator and device APIs used from outside the crate, as a backend crate would:
//! a host-memory device, buffers and views on it, and its line of a device report.

use hcq::allocator::{BufferSpec, HostAllocator, LruAllocator};
use hcq::buffer::{Buffer, MultiBuffer};
use hcq::device::{Device, DeviceLimits, DeviceProperties, DeviceReport, ReportList};
use hcq::{DType, Error, Result};
use std::sync::Arc;

/// A device whose memory is host memory limited to 64 KiB.
struct HostDevice {
    name: String,
    alloc: LruAllocator,
}

impl Device for HostDevice {
    fn name(&self) -> &str {
        &self.name
    }
    fn allocator(&self) -> &LruAllocator {
        &self.alloc
    }
    fn synchronize(&self) -> Result<()> {
        Ok(())
    }
    fn properties(&self) -> DeviceProperties {
        DeviceProperties {
            kind: "host".into(),
            arch: "test".into(),
            cores: 1,
            memory_bytes: 64 << 10,
            ..Default::default()
        }
    }
    fn limits(&self) -> DeviceLimits {
        DeviceLimits {
            memory_bytes: 64 << 10,
            max_alloc_bytes: 64 << 10,
            alloc_align: 16,
            max_kernel_args: 0,
            max_grid: [1, 1, 1],
        }
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn open(name: &str) -> Arc<dyn Device> {
    let alloc = LruAllocator::new(name, Box::new(HostAllocator::with_limit(64 << 10)));
    Arc::new(HostDevice { name: name.into(), alloc })
}

#[test]
fn buffers_on_a_host_device_round_trip_and_return_their_memory() {
    let dev = open("HOST");
    {
        let b = Buffer::new(dev.clone(), 1024, DType::F32, BufferSpec::default()).unwrap();
        let data: Vec<u8> = (0..4096u32).map(|i| i as u8).collect();
        b.copy_in(&data).unwrap();
        let v = b.view(4, DType::F32, 256).unwrap().view(2, DType::F32, 4).unwrap();
        let mut out = [0u8; 8];
        v.copy_out(&mut out).unwrap();
        assert_eq!(out, data[260..268]);
        assert_eq!(v.device_addr().unwrap(), b.device_addr().unwrap() + 260);
        assert_eq!(b.device_addr().unwrap() % 4096, 0, "host memory is page-aligned");
        assert_eq!(dev.allocator().used_bytes(), 4096);
    }
    assert_eq!(dev.allocator().used_bytes(), 0);
}

#[test]
fn out_of_memory_names_the_device_and_usage() {
    let dev = open("HOST:1");
    let a = Buffer::new(dev.clone(), 48 << 10, DType::U8, BufferSpec::default()).unwrap();
    a.allocate().unwrap();
    let b = Buffer::new(dev.clone(), 32 << 10, DType::U8, BufferSpec::default()).unwrap();
    assert_eq!(
        b.allocate().unwrap_err(),
        Error::OutOfMemory { device: hcq::error::device_name("HOST:1"), requested: 32 << 10, used: 48 << 10 }
    );
    drop(a);
    b.allocate().unwrap();
}

#[test]
fn multibuffer_and_report() {
    let devs = [open("HOST"), open("HOST:1")];
    let mb = MultiBuffer::new(&devs, 2, DType::U32, BufferSpec { zero: true, ..Default::default() }).unwrap();
    let mut out = [0xffu8; 8];
    mb.get(1).unwrap().copy_out(&mut out).unwrap();
    assert_eq!(out, [0; 8], "zero-spec memory reads as zero");
    let reports = [DeviceReport { name: "HOST".into(), default: true, result: Ok(devs[0].properties()) }];
    assert_eq!(format!("{}", ReportList(&reports)), "* HOST    : PASS host test, 1 cores, 64.0 KiB");
}
