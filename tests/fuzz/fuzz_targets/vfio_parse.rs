//! Fuzz hcq-vfio's parsers of kernel-provided text and bytes: PCI addresses and sysfs
//! `resource` files (text), and the config-space capability walk (256 bytes). None may panic;
//! an address that parses must print back to a string that parses to the same address; a walk
//! that succeeds returns at most 48 capabilities, each inside the device-specific area.
#![no_main]

use hcq::mmio::{HostRegion, MmioBus};
use hcq_vfio::PciAddress;
use hcq_vfio::config;
use hcq_vfio::sysfs::parse_resource;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(a) = PciAddress::parse(text) {
            assert_eq!(PciAddress::parse(&a.to_string()).unwrap(), a);
        }
        if let Ok(bars) = parse_resource(text) {
            assert!(bars.len() <= 6 && bars.iter().all(|b| b.index < 6 && b.size > 0));
        }
    }
    let cfg = HostRegion::new(256, 8).unwrap();
    let n = data.len().min(256);
    cfg.write_bytes(0, &data[..n]).unwrap();
    if let Ok(caps) = config::capabilities(&cfg) {
        assert!(caps.len() <= 48);
        assert!(caps.iter().all(|c| c.offset() >= 0x40));
    }
});
