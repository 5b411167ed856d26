//! The `register!` macro: typed registers with `hi:lo` bit fields over an [`MmioBus`].
//!
//! ```
//! hcq::register! {
//!     /// Ring buffer control.
//!     pub RB_CNTL @ 0x0844 : u32 {
//!         /// log2 of the ring size in quad words.
//!         5:0 bufsz as u8;
//!         /// Do not write the read pointer back to memory.
//!         27:27 no_update as bool;
//!     }
//! }
//! let r = RB_CNTL::default().set_bufsz(12).set_no_update(true);
//! assert_eq!(r.raw(), 12 | 1 << 27);
//! assert_eq!(r.bufsz(), 12);
//! ```
//!
//! Each register becomes a `#[repr(transparent)]` newtype over its raw width with:
//! `OFFSET` (byte offset on its bus), `from_raw`/`raw`, `read(bus)`, `write(bus)`,
//! `alter(bus, |r| ...)`, and per field a getter, a `set_<field>` builder (the value is masked to
//! the field: bits that do not fit are dropped), `try_set_<field>` (an error instead of masking),
//! and `<FIELD>_MASK`/`<FIELD>_SHIFT` constants. Field kinds: `as bool` (1 bit, checked at
//! compile time), `as u8|u16|u32|u64`, and `=> Type` for a type with `From<raw>` and
//! `Into<raw>` (an enum with an `Unknown(raw)` arm, in the Asahi style). `hi:lo` ranges are
//! checked at compile time (`hi >= lo`, `hi` inside the register).
//!
//! An array of identical registers (one per engine, per queue) is declared with
//! `NAME @ base [count ; stride] : raw { ... }`, one array per invocation: `OFFSET` is element
//! 0's, and `COUNT`, `STRIDE`, `offset_of(i)`, `read_at(bus, i)` and `write_at(bus, i)` reach
//! element `i` (an index `>= COUNT` is an error, not an access).
//!
//! ```
//! hcq::register! {
//!     /// Per-engine doorbell.
//!     pub BELL @ 0x100 [4 ; 0x10] : u64 {
//!         63:0 wptr as u64;
//!     }
//! }
//! assert_eq!(BELL::offset_of(2), Some(0x120));
//! assert_eq!(BELL::offset_of(4), None);
//! ```
//!
//! [`MmioBus`]: crate::mmio::MmioBus

#[doc(hidden)]
pub use paste::paste as __paste;

/// Define typed registers; see the [module docs](crate::mmio::register) for the grammar.
#[macro_export]
macro_rules! register {
    ($(
        $(#[$meta:meta])*
        $vis:vis $name:ident @ $offset:literal : $raw:ident {
            $( $(#[$fmeta:meta])* $hi:literal : $lo:literal $field:ident $kind:tt $fty:ty ; )*
        }
    )*) => {$(
        $(#[$meta])*
        #[derive(Clone, Copy, PartialEq, Eq, Default, Hash)]
        #[repr(transparent)]
        #[allow(clippy::upper_case_acronyms, non_camel_case_types)]
        $vis struct $name(pub $raw);

        $(
            const _: () = assert!($hi >= $lo, "register field: hi must be >= lo");
            const _: () = assert!($hi < <$raw>::BITS, "register field: hi is outside the register");
            $crate::__register_kind_check!($kind $fty, $hi, $lo);
        )*

        #[allow(dead_code, clippy::identity_op)]
        impl $name {
            /// Byte offset of the register on its bus.
            pub const OFFSET: usize = $offset;
            const WIDTH: $crate::mmio::Width = $crate::__register_width!($raw);

            /// Wrap a raw value.
            #[inline]
            pub const fn from_raw(v: $raw) -> Self { Self(v) }

            /// The raw value.
            #[inline]
            pub const fn raw(self) -> $raw { self.0 }

            /// Read the register from `bus`.
            #[inline]
            pub fn read<B: $crate::mmio::MmioBus + ?Sized>(bus: &B) -> $crate::Result<Self> {
                Ok(Self(bus.read(Self::OFFSET, Self::WIDTH)? as $raw))
            }

            /// Write the register to `bus`.
            #[inline]
            pub fn write<B: $crate::mmio::MmioBus + ?Sized>(self, bus: &B) -> $crate::Result<()> {
                bus.write(Self::OFFSET, Self::WIDTH, self.0 as u64)
            }

            /// Read, modify with `f`, write back.
            #[inline]
            pub fn alter<B: $crate::mmio::MmioBus + ?Sized>(bus: &B, f: impl FnOnce(Self) -> Self) -> $crate::Result<()> {
                f(Self::read(bus)?).write(bus)
            }

            $(
                $crate::mmio::__paste! {
                    #[doc = concat!("Mask of `", stringify!($field), "` (bits ", stringify!($hi), ":", stringify!($lo), "), unshifted.")]
                    pub const [<$field:upper _MASK>]: $raw = (((1u128 << ($hi - $lo + 1)) - 1) as $raw);
                    #[doc = concat!("Bit position of `", stringify!($field), "`.")]
                    pub const [<$field:upper _SHIFT>]: u32 = $lo;

                    $(#[$fmeta])*
                    #[inline]
                    pub fn $field(self) -> $crate::__register_get_ty!($kind $fty) {
                        let bits = (self.0 >> $lo) & Self::[<$field:upper _MASK>];
                        $crate::__register_get!($kind $fty, bits)
                    }

                    #[doc = concat!("Set `", stringify!($field), "`; bits that do not fit the field are dropped.")]
                    #[inline]
                    #[must_use]
                    pub fn [<set_ $field>](self, v: $crate::__register_get_ty!($kind $fty)) -> Self {
                        let bits = ($crate::__register_raw!($kind $fty, $raw, v)) & Self::[<$field:upper _MASK>];
                        Self((self.0 & !(Self::[<$field:upper _MASK>] << $lo)) | (bits << $lo))
                    }

                    #[doc = concat!("Set `", stringify!($field), "`, or an error when the value does not fit the field.")]
                    #[inline]
                    pub fn [<try_set_ $field>](self, v: $crate::__register_get_ty!($kind $fty)) -> $crate::Result<Self> {
                        let bits = $crate::__register_raw!($kind $fty, $raw, v);
                        if bits & !Self::[<$field:upper _MASK>] != 0 {
                            return Err($crate::Error::InvalidArgument {
                                what: concat!(stringify!($name), ".", stringify!($field), ": value does not fit the field"),
                                value: bits as u64,
                            });
                        }
                        Ok(Self((self.0 & !(Self::[<$field:upper _MASK>] << $lo)) | (bits << $lo)))
                    }
                }
            )*
        }

        impl From<$name> for $raw {
            fn from(r: $name) -> $raw { r.0 }
        }

        impl core::fmt::Debug for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                let mut d = f.debug_struct(stringify!($name));
                d.field("raw", &format_args!("{:#x}", self.0));
                $( d.field(stringify!($field), &self.$field()); )*
                d.finish()
            }
        }
    )*};
    (
        $(#[$meta:meta])*
        $vis:vis $name:ident @ $offset:literal [ $count:literal ; $stride:literal ] : $raw:ident {
            $( $(#[$fmeta:meta])* $hi:literal : $lo:literal $field:ident $kind:tt $fty:ty ; )*
        }
    ) => {
        $crate::register! {
            $(#[$meta])*
            $vis $name @ $offset : $raw {
                $( $(#[$fmeta])* $hi : $lo $field $kind $fty ; )*
            }
        }

        const _: () = assert!($count > 0, "a register array has at least one element");
        const _: () = assert!($stride >= <$raw>::BITS as usize / 8, "register array elements overlap");

        #[allow(dead_code)]
        impl $name {
            /// Number of elements of the register array.
            pub const COUNT: usize = $count;
            /// Bytes from one element to the next.
            pub const STRIDE: usize = $stride;

            /// Byte offset of element `i`, or `None` when `i >= COUNT`.
            #[inline]
            pub const fn offset_of(i: usize) -> Option<usize> {
                if i < Self::COUNT { Some(Self::OFFSET + i * Self::STRIDE) } else { None }
            }

            fn checked_offset(i: usize) -> $crate::Result<usize> {
                Self::offset_of(i).ok_or($crate::Error::OutOfBounds {
                    what: concat!(stringify!($name), " register array index"),
                    offset: i as u64,
                    len: 1,
                    limit: Self::COUNT as u64,
                })
            }

            /// Read element `i` from `bus`.
            #[inline]
            pub fn read_at<B: $crate::mmio::MmioBus + ?Sized>(bus: &B, i: usize) -> $crate::Result<Self> {
                Ok(Self(bus.read(Self::checked_offset(i)?, Self::WIDTH)? as $raw))
            }

            /// Write element `i` to `bus`.
            #[inline]
            pub fn write_at<B: $crate::mmio::MmioBus + ?Sized>(self, bus: &B, i: usize) -> $crate::Result<()> {
                bus.write(Self::checked_offset(i)?, Self::WIDTH, self.0 as u64)
            }
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __register_width {
    (u8) => {
        $crate::mmio::Width::U8
    };
    (u16) => {
        $crate::mmio::Width::U16
    };
    (u32) => {
        $crate::mmio::Width::U32
    };
    (u64) => {
        $crate::mmio::Width::U64
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __register_kind_check {
    (as bool, $hi:literal, $lo:literal) => {
        const _: () = assert!($hi == $lo, "a bool register field is one bit wide");
    };
    ($k:tt $t:ty, $hi:literal, $lo:literal) => {};
}

#[doc(hidden)]
#[macro_export]
macro_rules! __register_get_ty {
    (as $t:ty) => {
        $t
    };
    (=> $t:ty) => {
        $t
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __register_get {
    (as bool, $bits:expr) => {
        $bits != 0
    };
    (as $t:ty, $bits:expr) => {
        $bits as $t
    };
    (=> $t:ty, $bits:expr) => {
        <$t>::from($bits)
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __register_raw {
    (as bool, $raw:ty, $v:expr) => {
        $v as $raw
    };
    (as $t:ty, $raw:ty, $v:expr) => {
        $v as $raw
    };
    (=> $t:ty, $raw:ty, $v:expr) => {
        <$raw>::from($v)
    };
}

#[cfg(test)]
mod tests {
    use crate::mmio::{HostRegion, MmioBus, Width};

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Mode {
        Off,
        Fast,
        Unknown(u32),
    }
    impl From<u32> for Mode {
        fn from(v: u32) -> Self {
            match v {
                0 => Mode::Off,
                1 => Mode::Fast,
                x => Mode::Unknown(x),
            }
        }
    }
    impl From<Mode> for u32 {
        fn from(m: Mode) -> u32 {
            match m {
                Mode::Off => 0,
                Mode::Fast => 1,
                Mode::Unknown(x) => x,
            }
        }
    }

    crate::register! {
        /// A test control register.
        CTRL @ 0x8 : u32 {
            0:0 enable as bool;
            7:4 level as u8;
            9:8 mode => Mode;
            31:16 count as u16;
        }
        WIDE @ 0x10 : u64 {
            63:32 hi as u32;
            31:0 lo as u32;
        }
    }

    #[test]
    fn fields_pack_into_their_bits() {
        let r = CTRL::default().set_enable(true).set_level(0xa).set_mode(Mode::Fast).set_count(0xbeef);
        assert_eq!(r.raw(), 1 | 0xa << 4 | 1 << 8 | 0xbeef << 16);
        assert!(r.enable());
        assert_eq!(r.level(), 0xa);
        assert_eq!(r.mode(), Mode::Fast);
        assert_eq!(r.count(), 0xbeef);
        assert_eq!(CTRL::LEVEL_MASK, 0xf);
        assert_eq!(CTRL::COUNT_SHIFT, 16);
        assert_eq!(CTRL::default().set_mode(Mode::Off).mode(), Mode::Off);
    }

    #[test]
    fn setters_mask_and_try_setters_refuse_overflow() {
        let r = CTRL::default().set_level(0x1f);
        assert_eq!(r.level(), 0xf);
        assert_eq!(r.raw() & !(0xf << 4), 0, "neighbouring fields untouched");
        assert!(CTRL::default().try_set_level(0x10).is_err());
        assert_eq!(CTRL::default().try_set_level(0x3).unwrap().level(), 3);
        assert_eq!(CTRL::from_raw(3 << 8).mode(), Mode::Unknown(3));
    }

    crate::register! {
        /// A per-queue register array.
        QREG @ 0x20 [3 ; 0x10] : u64 {
            63:0 value as u64;
        }
    }

    #[test]
    fn register_arrays_reach_each_element_and_refuse_others() {
        let bus = HostRegion::new(0x60, 8).unwrap();
        assert_eq!((QREG::COUNT, QREG::STRIDE, QREG::OFFSET), (3, 0x10, 0x20));
        QREG::from_raw(5).write_at(&bus, 2).unwrap();
        assert_eq!(bus.read(0x40, Width::U64).unwrap(), 5);
        assert_eq!(QREG::read_at(&bus, 2).unwrap().value(), 5);
        assert_eq!(QREG::read_at(&bus, 0).unwrap().value(), 0);
        assert!(QREG::read_at(&bus, 3).is_err(), "index 3 of 3 is refused before any access");
        assert!(QREG::from_raw(1).write_at(&bus, 3).is_err());
        assert_eq!(QREG::offset_of(1), Some(0x30));
    }

    #[test]
    fn read_write_alter_go_through_the_bus() {
        let bus = HostRegion::new(32, 8).unwrap();
        CTRL::default().set_level(3).write(&bus).unwrap();
        assert_eq!(bus.read(8, Width::U32).unwrap(), 3 << 4);
        CTRL::alter(&bus, |r| r.set_enable(true)).unwrap();
        assert_eq!(CTRL::read(&bus).unwrap().raw(), 3 << 4 | 1);
        WIDE::default().set_hi(0xdead_beef).set_lo(7).write(&bus).unwrap();
        assert_eq!(bus.read(0x10, Width::U64).unwrap(), 0xdead_beef_0000_0007);
    }
}
