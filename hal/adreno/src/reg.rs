//! Register declarations per GPU generation: the core's `register!` plus a table of names,
//! dword offsets and fields, so tests can check every number against the XML database.
//!
//! Adreno register offsets are **dword** indices (byte offset = index × 4); `OFFSET` from the
//! core macro is the byte offset on the GPU's MMIO bus, [`Reg::REG`] the dword index that PM4
//! TYPE4 packets use.

/// One bit field of a register: `name` is the XML bitfield name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldInfo {
    /// XML name (upper case).
    pub name: &'static str,
    /// Low bit.
    pub lo: u32,
    /// High bit.
    pub hi: u32,
}

impl FieldInfo {
    /// The field's bits in the register (`hi:lo`; a field of all 64 bits of a `reg64` too).
    pub const fn mask(&self) -> u64 {
        let width = self.hi.saturating_sub(self.lo) + 1;
        let ones = if width >= 64 { u64::MAX } else { (1u64 << width) - 1 };
        if self.lo >= 64 { 0 } else { ones << self.lo }
    }
}

/// One register: XML name, dword offset, width and fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegInfo {
    /// XML name.
    pub name: &'static str,
    /// Dword offset.
    pub reg: u32,
    /// 64 for a `reg64`, else 32.
    pub bits: u32,
    /// Fields.
    pub fields: &'static [FieldInfo],
}

/// A declared register's dword offset and name.
pub trait Reg {
    /// XML name.
    const NAME: &'static str;
    /// Dword offset (what TYPE4 packets address).
    const REG: u32;
}

/// A run of consecutive registers (the XML's `array`, or registers named `_0.._N` that the
/// hardware lays out contiguously): `len` registers of `stride` dwords from `base`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegArray {
    /// XML name prefix (`SP_CS_NDRANGE_`).
    pub name: &'static str,
    /// Dword offset of element 0.
    pub base: u32,
    /// Dwords between elements.
    pub stride: u32,
    /// Number of elements.
    pub len: u32,
}

impl RegArray {
    /// Dword offset of element `i`, or `None` past the end.
    pub const fn reg(&self, i: u32) -> Option<u32> {
        if i < self.len { Some(self.base + i * self.stride) } else { None }
    }
}

/// Declare registers with the core's `register!` and list them in `ALL` (see module docs).
/// Field names are the XML bitfield names in lower case.
#[macro_export]
#[doc(hidden)]
macro_rules! __adreno_regs {
    ($(
        $(#[$meta:meta])*
        $name:ident @ $offset:literal : $raw:ident {
            $( $(#[$fmeta:meta])* $hi:literal : $lo:literal $field:ident $kind:tt $fty:tt ; )*
        }
    )*) => {
        hcq::register! {$(
            $(#[$meta])*
            pub $name @ $offset : $raw {
                $( $(#[$fmeta])* $hi : $lo $field $kind $fty ; )*
            }
        )*}
        $(
            impl $crate::reg::Reg for $name {
                const NAME: &'static str = stringify!($name);
                const REG: u32 = ($offset / 4) as u32;
            }
        )*
        /// Every register declared here, for the XML cross-check and decoders.
        pub const ALL: &[$crate::reg::RegInfo] = &[$(
            $crate::reg::RegInfo {
                name: stringify!($name),
                reg: ($offset / 4) as u32,
                bits: <$raw>::BITS,
                fields: &[$( $crate::reg::FieldInfo { name: stringify!($field), lo: $lo, hi: $hi } ),*],
            }
        ),*];
    };
}

#[cfg(test)]
mod tests {
    use super::FieldInfo;

    /// A field's mask covers its `hi:lo` bits, a field of all 64 bits of a `reg64` included.
    #[test]
    fn field_masks() {
        let f = |lo, hi| FieldInfo { name: "F", lo, hi }.mask();
        assert_eq!(f(0, 7), 0xff);
        assert_eq!(f(24, 31), 0xff00_0000);
        assert_eq!(f(0, 31), 0xffff_ffff);
        assert_eq!(f(0, 63), u64::MAX);
        assert_eq!(f(32, 63), 0xffff_ffff_0000_0000);
        assert_eq!(f(5, 5), 1 << 5);
    }
}
