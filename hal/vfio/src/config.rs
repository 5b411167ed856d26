//! Typed PCI configuration space: the header registers a driver touches and the capability
//! list (PCI Local Bus Specification 3.0, §6.1 "Configuration Space Organization", §6.7
//! "Capabilities List", §6.8 "Message Signaled Interrupts"; PCIe Base Specification §7.7 for
//! MSI-X).
//!
//! Config space is any [`MmioBus`]: the VFIO config region of a device
//! ([`crate::vfio::ConfigRegion`], which reads and writes through `pread`/`pwrite`), or plain
//! memory holding a captured config space (tests).

use hcq::error::{Error, Result};
use hcq::mmio::{MmioBus, Width};

hcq::register! {
    /// Vendor id (offset 0x00).
    pub VENDOR_ID @ 0x00 : u16 {
        /// The vendor id.
        15:0 id as u16;
    }
    /// Device id (offset 0x02).
    pub DEVICE_ID @ 0x02 : u16 {
        /// The device id.
        15:0 id as u16;
    }
    /// Command register (offset 0x04, PCI 3.0 §6.2.2).
    pub COMMAND @ 0x04 : u16 {
        /// Respond to I/O space accesses.
        0:0 io as bool;
        /// Respond to memory space accesses (BARs decode).
        1:1 memory as bool;
        /// The device may master the bus (issue DMA and MSI writes).
        2:2 bus_master as bool;
        /// INTx emulation disabled.
        10:10 intx_disable as bool;
    }
    /// Status register (offset 0x06).
    pub STATUS @ 0x06 : u16 {
        /// INTx asserted.
        3:3 interrupt as bool;
        /// A capability list is present (pointer at 0x34).
        4:4 cap_list as bool;
    }
    /// Capabilities pointer (offset 0x34; the low two bits are reserved).
    pub CAP_PTR @ 0x34 : u8 {
        /// Offset of the first capability.
        7:0 ptr as u8;
    }
    /// Interrupt pin (offset 0x3d: 0 none, 1..=4 INTA..INTD).
    pub INTERRUPT_PIN @ 0x3d : u8 {
        /// The pin.
        7:0 pin as u8;
    }
}

/// Capability id of MSI.
pub const CAP_ID_MSI: u8 = 0x05;
/// Capability id of PCI Express.
pub const CAP_ID_PCIE: u8 = 0x10;
/// Capability id of MSI-X.
pub const CAP_ID_MSIX: u8 = 0x11;
/// Capability id of power management.
pub const CAP_ID_PM: u8 = 0x01;

/// One entry of the capability list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Capability {
    /// MSI (§6.8.1).
    Msi {
        /// Offset of the capability in config space.
        offset: u8,
        /// Vectors the function can request (1, 2, 4, ... 32).
        vectors: u8,
        /// 64-bit message address.
        is_64bit: bool,
        /// Per-vector masking.
        per_vector_mask: bool,
        /// MSI is enabled.
        enabled: bool,
    },
    /// MSI-X (PCIe §7.7.2).
    MsiX {
        /// Offset of the capability in config space.
        offset: u8,
        /// Table size in entries.
        table_size: u16,
        /// BAR holding the table and byte offset inside it.
        table_bar: u8,
        /// Byte offset of the table in its BAR.
        table_offset: u32,
        /// MSI-X is enabled.
        enabled: bool,
    },
    /// Any other capability, by id.
    Other {
        /// Offset of the capability in config space.
        offset: u8,
        /// Capability id.
        id: u8,
    },
}

impl Capability {
    /// The capability's offset in config space.
    pub fn offset(&self) -> u8 {
        match *self {
            Capability::Msi { offset, .. } | Capability::MsiX { offset, .. } | Capability::Other { offset, .. } => {
                offset
            }
        }
    }
}

/// Most entries a capability list can hold: 256 bytes of config space, the header takes 64, and
/// each capability at least 4 (so a longer walk is a loop).
const MAX_CAPS: usize = (256 - 64) / 4;

/// Walk the capability list of config space `cfg`.
///
/// Errors: [`Error::Malformed`] for a pointer into the header (below 0x40) or a list that
/// loops; the bus's errors for reads outside it.
pub fn capabilities(cfg: &(impl MmioBus + ?Sized)) -> Result<Vec<Capability>> {
    let mut out = Vec::new();
    if !STATUS::read(cfg)?.cap_list() {
        return Ok(out);
    }
    let mut ptr = CAP_PTR::read(cfg)?.ptr() & !3;
    while ptr != 0 {
        if ptr < 0x40 {
            return Err(Error::Malformed {
                what: "pci capability list",
                at: u64::from(ptr),
                reason: "capability pointer into the standard header",
            });
        }
        if out.len() == MAX_CAPS {
            return Err(Error::Malformed { what: "pci capability list", at: u64::from(ptr), reason: "the list loops" });
        }
        let off = usize::from(ptr);
        // CAST: config reads of width U8/U16/U32 return values of that width.
        let id = cfg.read(off, Width::U8)? as u8;
        let next = cfg.read(off + 1, Width::U8)? as u8;
        let cap = match id {
            CAP_ID_MSI => {
                let ctl = cfg.read(off + 2, Width::U16)? as u16;
                Capability::Msi {
                    offset: ptr,
                    vectors: 1 << ((ctl >> 1) & 7).min(5),
                    is_64bit: ctl & (1 << 7) != 0,
                    per_vector_mask: ctl & (1 << 8) != 0,
                    enabled: ctl & 1 != 0,
                }
            }
            CAP_ID_MSIX => {
                let ctl = cfg.read(off + 2, Width::U16)? as u16;
                let table = cfg.read(off + 4, Width::U32)? as u32;
                Capability::MsiX {
                    offset: ptr,
                    table_size: (ctl & 0x7ff) + 1,
                    table_bar: (table & 7) as u8,
                    table_offset: table & !7,
                    enabled: ctl & (1 << 15) != 0,
                }
            }
            _ => Capability::Other { offset: ptr, id },
        };
        out.push(cap);
        ptr = next & !3;
    }
    Ok(out)
}

/// The first capability with id `id`.
pub fn find_capability(cfg: &(impl MmioBus + ?Sized), id: u8) -> Result<Option<Capability>> {
    Ok(capabilities(cfg)?.into_iter().find(|c| match *c {
        Capability::Msi { .. } => id == CAP_ID_MSI,
        Capability::MsiX { .. } => id == CAP_ID_MSIX,
        Capability::Other { id: i, .. } => i == id,
    }))
}

/// Turn on memory decoding and bus mastering (what a driver needs before MMIO and DMA; vfio-pci
/// leaves bus mastering off). Returns the command register as read back.
pub fn enable_bus_master(cfg: &(impl MmioBus + ?Sized)) -> Result<COMMAND> {
    COMMAND::alter(cfg, |c| c.set_memory(true).set_bus_master(true))?;
    COMMAND::read(cfg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hcq::mmio::HostRegion;

    /// QEMU's edu config space as a guest reads it: MSI capability at 0x40, bus master off.
    fn edu_config() -> HostRegion {
        let c = HostRegion::new(256, 8).unwrap();
        let w = |off: usize, width: Width, v: u64| c.write(off, width, v).unwrap();
        w(0x00, Width::U16, 0x1234);
        w(0x02, Width::U16, 0x11e8);
        w(0x04, Width::U16, 0x0002);
        w(0x06, Width::U16, 0x0010);
        w(0x34, Width::U8, 0x40);
        w(0x3d, Width::U8, 1);
        // MSI: id 5, next 0x50, control: 64-bit, 1 vector
        w(0x40, Width::U8, 0x05);
        w(0x41, Width::U8, 0x50);
        w(0x42, Width::U16, 0x0080);
        // PCIe capability, next 0x70
        w(0x50, Width::U8, 0x10);
        w(0x51, Width::U8, 0x70);
        // MSI-X: 16 entries, enabled, table in BAR 2 at 0x2000
        w(0x70, Width::U8, 0x11);
        w(0x71, Width::U8, 0x00);
        w(0x72, Width::U16, 0x800f);
        w(0x74, Width::U32, 0x2002);
        c
    }

    #[test]
    fn header_registers_decode() {
        let c = edu_config();
        assert_eq!(VENDOR_ID::read(&c).unwrap().id(), 0x1234);
        assert_eq!(DEVICE_ID::read(&c).unwrap().id(), 0x11e8);
        let cmd = COMMAND::read(&c).unwrap();
        assert!(cmd.memory() && !cmd.bus_master() && !cmd.io());
        assert_eq!(INTERRUPT_PIN::read(&c).unwrap().pin(), 1);
        let cmd = enable_bus_master(&c).unwrap();
        assert!(cmd.bus_master() && cmd.memory());
        assert_eq!(c.read(4, Width::U16).unwrap(), 0x0006, "only MEMORY and MASTER are set");
    }

    #[test]
    fn capability_walk_finds_msi_pcie_and_msix() {
        let c = edu_config();
        let caps = capabilities(&c).unwrap();
        assert_eq!(
            caps,
            [
                Capability::Msi { offset: 0x40, vectors: 1, is_64bit: true, per_vector_mask: false, enabled: false },
                Capability::Other { offset: 0x50, id: CAP_ID_PCIE },
                Capability::MsiX { offset: 0x70, table_size: 16, table_bar: 2, table_offset: 0x2000, enabled: true },
            ]
        );
        assert_eq!(find_capability(&c, CAP_ID_PCIE).unwrap().map(|c| c.offset()), Some(0x50));
        assert_eq!(find_capability(&c, CAP_ID_PM).unwrap(), None);
    }

    #[test]
    fn no_capability_list_without_the_status_bit() {
        let c = edu_config();
        c.write(0x06, Width::U16, 0).unwrap();
        assert!(capabilities(&c).unwrap().is_empty());
    }

    #[test]
    fn looping_or_header_pointing_lists_are_malformed() {
        let c = edu_config();
        c.write(0x71, Width::U8, 0x40).unwrap(); // MSI-X points back at MSI: a loop
        assert!(matches!(capabilities(&c), Err(Error::Malformed { reason: "the list loops", .. })));
        c.write(0x71, Width::U8, 0x10).unwrap(); // into the header
        assert!(matches!(capabilities(&c), Err(Error::Malformed { at: 0x10, .. })));
    }
}
