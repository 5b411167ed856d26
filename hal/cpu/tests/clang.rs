//! Objects built by clang from `tests/data/relocs/relocs.c` (see `build.sh` there) with the
//! relocations tinygrad's bundle kernels lack: ADRP+ADD, LDST8/16/32/64/128, CALL26 to an
//! external function and to another section (AArch64), PLT32 (x86-64). On the host they are run
//! with the default resolver; both arches are laid out and relocated on any host.

mod common;

use hcq_cpu::{ElfObject, Machine};

const X86: &[u8] = include_bytes!("data/relocs/relocs.o");
const A64: &[u8] = include_bytes!("data/relocs/relocs.aarch64.o");

fn object(arch: Machine) -> &'static [u8] {
    match arch {
        Machine::X86_64 => X86,
        Machine::Aarch64 => A64,
    }
}

#[test]
fn clang_objects_need_memset_and_expf_and_get_one_veneer_slot_per_call() {
    for arch in [Machine::X86_64, Machine::Aarch64] {
        let obj = ElfObject::parse_for(object(arch), arch).unwrap();
        assert_eq!(obj.undefined_symbols().unwrap(), ["memset", "expf"], "{arch}");
        // memset, expf and relocs_helper calls.
        assert_eq!(obj.layout().veneer_slots, 3, "{arch}");
    }
}

#[test]
fn clang_objects_relocate_with_far_imports_through_veneers() {
    for arch in [Machine::X86_64, Machine::Aarch64] {
        let obj = ElfObject::parse_for(object(arch), arch).unwrap();
        let layout = obj.layout().clone();
        let far = |name: &str| match name {
            "memset" => Some(0x7f00_0000_1000),
            "expf" => Some(0x7f00_0000_2000),
            _ => None,
        };
        let mut image = vec![0u8; layout.size as usize];
        let base = 0x40_0000;
        let entry = obj.load_into(&mut image, base, "relocs_kernel", &far).unwrap();
        assert_eq!(entry, base + obj.entry_offset("relocs_kernel").unwrap());
        assert_ne!(entry, base, "{arch}: the kernel is not the first function in the image");
        // Both far imports went to veneers, each holding its target; the helper call is direct.
        // The target sits after `jmp *0(%rip)` (6 bytes) or `ldr x16, #8; br x16` (8 bytes).
        let target_at = if arch == Machine::X86_64 { 6 } else { 8 };
        let slots: Vec<u64> =
            (0..3).map(|k| common::get_u64(&image, (layout.veneer_offset + k * 16 + target_at) as usize)).collect();
        assert!(slots.contains(&0x7f00_0000_1000) && slots.contains(&0x7f00_0000_2000), "{arch}: {slots:x?}");
        assert_eq!(slots.iter().filter(|&&s| s == 0).count(), 1, "{arch}: the in-image call needs no veneer");
    }
}

#[test]
fn clang_objects_fail_cleanly_without_a_resolver() {
    for arch in [Machine::X86_64, Machine::Aarch64] {
        let obj = ElfObject::parse_for(object(arch), arch).unwrap();
        let mut image = vec![0u8; obj.layout().size as usize];
        let msg = obj.load_into(&mut image, 0x40_0000, "relocs_kernel", &common::no_imports).unwrap_err().to_string();
        assert!(msg.contains("unresolved symbol `memset`"), "{arch}: {msg}");
    }
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
mod run {
    use super::*;
    use common::ObjBuilder;
    use hcq_cpu::exec::{LoadedObject, default_resolver};

    #[repr(C, align(16))]
    struct Floats([f32; 16]);

    #[test]
    fn clang_kernel_with_imports_runs_and_matches_its_c_semantics() {
        let kernel = LoadedObject::load(object(Machine::host()), Machine::host(), "relocs_kernel", &default_resolver)
            .unwrap_or_else(|e| panic!("{e}"));
        // SAFETY: void relocs_kernel(float* out, const float* in, float* scratch, int n).
        let f: unsafe extern "C" fn(*mut f32, *const f32, *mut f32, i32) = unsafe { kernel.as_fn() };
        let input = Floats(core::array::from_fn(|i| i as f32 * 0.75 - 5.0));
        let mut out = Floats([0.0; 16]);
        let mut scratch = [7.0f32; 32];
        // SAFETY: 16 aligned floats in and out; memset clears the first 10 scratch floats.
        unsafe { f(out.0.as_mut_ptr(), input.0.as_ptr(), scratch.as_mut_ptr(), 10) };
        assert!(scratch[..10].iter().all(|&x| x == 0.0) && scratch[10..].iter().all(|&x| x == 7.0));
        let m = [1.25, -2.0, 0.75, 4.0];
        let table = [0.5, 1.5, 2.5, 3.5, -0.5, -1.5, -2.5, -3.5];
        for i in 0..16 {
            let x = f64::from(input.0[i]);
            let helper = x * f64::from(0.1234f32) + 0.5 + 3.0 - 2.0;
            let want = x * m[i % 4] + table[i % 8] + (x / 8.0).exp() + helper;
            let got = f64::from(out.0[i]);
            assert!((got - want).abs() <= 1e-5 * (1.0 + want.abs()), "out[{i}] = {got}, want {want}");
        }
    }

    extern "C" fn add_one(x: i32) -> i32 {
        x + 1
    }

    #[test]
    fn tail_call_into_this_process_works_near_or_through_a_veneer() {
        // entry: `jmp add_one` (x86-64, PLT32) or `b add_one` (AArch64, JUMP26). The test binary's
        // code is usually far from an anonymous mapping, so this runs the veneer for real.
        let (machine, code, offset, ty, addend, range): (u16, &[u8], u64, u32, i64, u64) = match Machine::host() {
            Machine::X86_64 => (common::EM_X86_64, &[0xe9, 0, 0, 0, 0], 1, 4, -4, 1 << 31),
            Machine::Aarch64 => (common::EM_AARCH64, &[0, 0, 0, 0x14], 0, 282, 0, 1 << 27),
        };
        let mut b = ObjBuilder::new(machine);
        let text = b.section(".text", common::SHT_PROGBITS, common::SHF_ALLOC | common::SHF_EXECINSTR, 16, code);
        b.func("entry", text, 0);
        let target = b.undef("add_one");
        b.rela(text, offset, target, ty, addend);
        let obj = b.build();
        let addr = add_one as extern "C" fn(i32) -> i32 as usize as u64;
        let kernel = LoadedObject::load(&obj, Machine::host(), "entry", &|n: &str| (n == "add_one").then_some(addr))
            .unwrap_or_else(|e| panic!("{e}"));
        // SAFETY: entry tail-calls add_one, so it has add_one's signature.
        let f: extern "C" fn(i32) -> i32 = unsafe { kernel.as_fn() };
        assert_eq!(f(41), 42);
        let far = (kernel.entry() as u64).abs_diff(addr) >= range;
        let veneer_used = kernel.image()[16..32].iter().any(|&b| b != 0);
        assert_eq!(veneer_used, far, "the veneer is used exactly when the target is out of range");
    }
}
