//! Fuzz the ELF loader: parse, lay out and relocate arbitrary bytes into a Vec (nothing is
//! executed). Every input must give Ok or a clean error; a panic, overflow or out-of-bounds
//! access is a bug. From the repository root:
//!
//! ```sh
//! mkdir -p tests/fuzz/corpus/elf && cp hal/cpu/tests/data/*/*.o tests/fuzz/corpus/elf/
//! cargo +nightly fuzz run --fuzz-dir tests/fuzz elf tests/fuzz/corpus/elf -- -max_total_time=60
//! ```
#![no_main]

use hcq_cpu::ElfObject;
use libfuzzer_sys::fuzz_target;

/// Images above this are parsed and laid out but not loaded (keeps the fuzzer fast; the
/// loader's own cap is 256 MiB).
const MAX_FUZZ_IMAGE: u64 = 1 << 20;

fuzz_target!(|data: &[u8]| {
    let Ok(obj) = ElfObject::parse(data) else { return };
    let layout = obj.layout();
    assert!(layout.size <= hcq_cpu::elf::MAX_IMAGE_SIZE);
    assert!(layout.align.is_power_of_two());
    if layout.size > MAX_FUZZ_IMAGE {
        return;
    }
    let _ = obj.undefined_symbols();
    let mut image = vec![0u8; layout.size as usize];
    // A high, aligned base and far imports exercise range checks and veneers.
    let base = 0x7f12_3456_0000u64 & !(layout.align - 1);
    for entry in ["E_4_4", "E_1024_4", "r_8_64_32", "relocs_kernel", "entry"] {
        if let Ok(addr) = obj.load_into(&mut image, base, entry, &|_| Some(0x7fab_cdef_1230)) {
            assert!(addr >= base && addr < base + layout.size);
            break;
        }
    }
    // A low base too (32-bit absolute relocations fit there).
    let _ = obj.load_into(&mut image, 0x40_0000, "E_4_4", &|_| None);
});
