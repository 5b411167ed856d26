//! Scalar element types used by bundles and program signatures.

use crate::error::{Error, Result};

/// A scalar element type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
pub enum DType {
    /// 1-byte boolean.
    Bool = 0,
    /// Signed 8-bit integer.
    I8 = 1,
    /// Signed 16-bit integer.
    I16 = 2,
    /// Signed 32-bit integer.
    I32 = 3,
    /// Signed 64-bit integer.
    I64 = 4,
    /// Unsigned 8-bit integer.
    U8 = 5,
    /// Unsigned 16-bit integer.
    U16 = 6,
    /// Unsigned 32-bit integer.
    U32 = 7,
    /// Unsigned 64-bit integer.
    U64 = 8,
    /// IEEE half precision.
    F16 = 9,
    /// bfloat16.
    BF16 = 10,
    /// IEEE single precision.
    F32 = 11,
    /// IEEE double precision.
    F64 = 12,
}

/// Bytes spanned by `shape` elements of `dtype` (the product of the dimensions times the size);
/// an overflow is [`Error::Malformed`].
pub fn footprint(dtype: DType, shape: impl Iterator<Item = u64>) -> Result<u64> {
    let mut n: u64 = dtype.size() as u64;
    for d in shape {
        n = n.checked_mul(d).ok_or(Error::Malformed {
            what: "bundle shape",
            at: d,
            reason: "element count overflows",
        })?;
    }
    Ok(n)
}

impl DType {
    /// Every type, in code order.
    pub const ALL: [DType; 13] = [
        DType::Bool,
        DType::I8,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::U8,
        DType::U16,
        DType::U32,
        DType::U64,
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
    ];

    /// Size of one element in bytes.
    pub const fn size(self) -> usize {
        match self {
            DType::Bool | DType::I8 | DType::U8 => 1,
            DType::I16 | DType::U16 | DType::F16 | DType::BF16 => 2,
            DType::I32 | DType::U32 | DType::F32 => 4,
            DType::I64 | DType::U64 | DType::F64 => 8,
        }
    }

    /// The numpy name (`"float32"`), as bundles write it.
    pub const fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::I8 => "int8",
            DType::I16 => "int16",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::U8 => "uint8",
            DType::U16 => "uint16",
            DType::U32 => "uint32",
            DType::U64 => "uint64",
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
            DType::F32 => "float32",
            DType::F64 => "float64",
        }
    }

    /// True for floating-point types.
    pub const fn is_float(self) -> bool {
        matches!(self, DType::F16 | DType::BF16 | DType::F32 | DType::F64)
    }

    /// Parse a numpy or tinygrad name (`"float32"`, `"float"`, `"half"`, `"int"`, `"uchar"`, ...).
    pub fn from_name(name: &str) -> Result<DType> {
        Ok(match name {
            "bool" => DType::Bool,
            "int8" | "char" | "signed char" => DType::I8,
            "int16" | "short" => DType::I16,
            "int32" | "int" => DType::I32,
            "int64" | "long" => DType::I64,
            "uint8" | "uchar" | "unsigned char" => DType::U8,
            "uint16" | "ushort" => DType::U16,
            "uint32" | "uint" | "unsigned int" => DType::U32,
            "uint64" | "ulong" => DType::U64,
            "float16" | "half" => DType::F16,
            "bfloat16" | "__bf16" => DType::BF16,
            "float32" | "float" => DType::F32,
            "float64" | "double" => DType::F64,
            _ => return Err(Error::Unsupported { what: "dtype name", value: name.len() as u64 }),
        })
    }

    /// The type with this code (the `repr(u8)` value), as binary formats store it.
    pub fn from_code(code: u8) -> Result<DType> {
        DType::ALL.get(code as usize).copied().ok_or(Error::Unsupported { what: "dtype code", value: code as u64 })
    }

    /// The `repr(u8)` code.
    pub const fn code(self) -> u8 {
        self as u8
    }
}

impl core::fmt::Display for DType {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_codes_round_trip() {
        for d in DType::ALL {
            assert_eq!(DType::from_name(d.name()).unwrap(), d);
            assert_eq!(DType::from_code(d.code()).unwrap(), d);
        }
        assert!(DType::from_code(13).is_err());
        assert!(DType::from_name("float128").is_err());
    }

    #[test]
    fn sizes_match_the_names() {
        assert_eq!(DType::F32.size(), 4);
        assert_eq!(DType::BF16.size(), 2);
        assert_eq!(DType::Bool.size(), 1);
        assert_eq!(DType::U64.size(), 8);
        assert_eq!(DType::from_name("half").unwrap(), DType::F16);
        assert!(DType::F16.is_float() && !DType::I32.is_float());
    }
}
