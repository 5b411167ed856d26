//! The tinygrad bundle objects (the sample bundles in `examples/`, see `tests/data/README.md`): every object of both
//! architectures parses and lays out, and the host's objects are loaded into executable memory
//! and called on the bundle's buffers, with the outputs checked against `expected_*.bin` and
//! against the kernels' C semantics recomputed here.

mod common;

use hcq_cpu::{ElfObject, Machine};

struct Program {
    name: &'static str,
    symbol: &'static str,
    x86_64: &'static [u8],
    aarch64: &'static [u8],
}

macro_rules! program {
    ($dir:literal, $stem:literal, $symbol:literal) => {
        Program {
            name: concat!($dir, "/", $stem),
            symbol: $symbol,
            x86_64: include_bytes!(concat!("../../../examples/", $dir, "/", $stem, ".o")),
            aarch64: include_bytes!(concat!("../../../examples/", $dir, "/", $stem, ".aarch64.o")),
        }
    };
}

const CHAIN100: Program = program!("chain100", "prog_000_E_4_4", "E_4_4");
const ELEMENTWISE: Program = program!("elementwise", "prog_000_E_1024_4", "E_1024_4");
const MLP0: Program = program!("mlp", "prog_000_r_8_64_32", "r_8_64_32");
const MLP1: Program = program!("mlp", "prog_001_r_8_64_16_4", "r_8_64_16_4");
const MLP2: Program = program!("mlp", "prog_002_r_8_10_16_4", "r_8_10_16_4");
const ALL: [&Program; 5] = [&CHAIN100, &ELEMENTWISE, &MLP0, &MLP1, &MLP2];

impl Program {
    fn object(&self, arch: Machine) -> &'static [u8] {
        match arch {
            Machine::X86_64 => self.x86_64,
            Machine::Aarch64 => self.aarch64,
        }
    }
}

#[test]
fn every_bundle_object_parses_and_loads_for_its_arch() {
    for program in ALL {
        for arch in [Machine::X86_64, Machine::Aarch64] {
            let bytes = program.object(arch);
            let obj = ElfObject::parse_for(bytes, arch).unwrap_or_else(|e| panic!("{} {arch}: {e}", program.name));
            assert_eq!(obj.arch(), arch);
            // The kernel is the first thing in .text, which is laid out first.
            assert_eq!(obj.entry_offset(program.symbol).unwrap(), 0, "{} {arch}", program.name);
            assert!(obj.undefined_symbols().unwrap().is_empty());
            let layout = obj.layout();
            assert_eq!(layout.veneer_slots, 0, "no branch relocations in these kernels");
            let mut image = vec![0u8; layout.size as usize];
            let entry = obj.load_into(&mut image, 0x40_0000, program.symbol, &common::no_imports).unwrap();
            assert_eq!(entry, 0x40_0000);
        }
    }
}

#[test]
fn bundle_objects_name_the_wrong_arch() {
    let err = ElfObject::parse_for(CHAIN100.aarch64, Machine::X86_64).unwrap_err();
    assert!(matches!(err.root(), hcq::Error::Mismatch { expected: 62, found: 183, .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("aarch64") && msg.contains("x86_64"), "{msg}");
}

#[test]
fn x86_pc32_relocations_point_at_the_constant_pool() {
    // chain100 x86: `addps xmm0, [rip + .LCPI0_0]` with one PC32 at .text+7 against the
    // 16-byte constant {1.0, 1.0, 1.0, 1.0} in .rodata.cst16. After relocation the RIP-relative
    // displacement (from the end of the 4-byte field) must land exactly on that constant.
    let obj = ElfObject::parse(CHAIN100.x86_64).unwrap();
    let layout = obj.layout().clone();
    let rodata = layout.sections[4].expect(".rodata.cst16 is laid out");
    let mut image = vec![0u8; layout.size as usize];
    obj.load_into(&mut image, 0x1000, "E_4_4", &common::no_imports).unwrap();
    let disp = i32::from_le_bytes(image[7..11].try_into().unwrap());
    assert_eq!(11 + i64::from(disp), rodata as i64);
    let one = 1.0f32.to_le_bytes();
    assert_eq!(&image[rodata as usize..rodata as usize + 16], one.repeat(4).as_slice());
}

/// Host-only: load into executable memory and call.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
mod run {
    use super::*;
    use hcq_cpu::exec::{LoadedObject, default_resolver};

    /// A 16-byte-aligned float buffer (the kernels use aligned vector loads and stores).
    #[derive(Clone, Copy, Default)]
    #[repr(C, align(16))]
    struct F4([f32; 4]);

    struct Buf(Vec<F4>);

    impl Buf {
        fn zeroed(floats: usize) -> Buf {
            Buf(vec![F4::default(); floats.div_ceil(4)])
        }
        fn from_bytes(bytes: &[u8]) -> Buf {
            let mut buf = Buf::zeroed(bytes.len() / 4);
            for (dst, src) in buf.floats_mut().iter_mut().zip(bytes.chunks_exact(4)) {
                *dst = f32::from_le_bytes(src.try_into().unwrap());
            }
            buf
        }
        fn floats(&self) -> &[f32] {
            // SAFETY: F4 is four f32s with no padding.
            unsafe { std::slice::from_raw_parts(self.0.as_ptr().cast(), self.0.len() * 4) }
        }
        fn floats_mut(&mut self) -> &mut [f32] {
            // SAFETY: as above, uniquely borrowed.
            unsafe { std::slice::from_raw_parts_mut(self.0.as_mut_ptr().cast(), self.0.len() * 4) }
        }
        fn ptr(&mut self) -> *mut f32 {
            self.0.as_mut_ptr().cast()
        }
    }

    fn floats(bytes: &[u8]) -> Vec<f32> {
        bytes.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
    }

    fn load(program: &Program) -> LoadedObject {
        LoadedObject::load(program.object(Machine::host()), Machine::host(), program.symbol, &default_resolver)
            .unwrap_or_else(|e| panic!("{}: {e}", program.name))
    }

    /// The bundle README's rule: x86-64 objects made the expected outputs, so they match bit for
    /// bit; AArch64 objects differ by FMA contraction, within `1e-5 + 1e-4 * |expected|`.
    fn assert_matches_expected(got: &[f32], expected: &[f32], what: &str) {
        assert_eq!(got.len(), expected.len());
        for (i, (&g, &e)) in got.iter().zip(expected).enumerate() {
            match Machine::host() {
                Machine::X86_64 => assert_eq!(g.to_bits(), e.to_bits(), "{what}[{i}]: got {g}, expected {e}"),
                Machine::Aarch64 => {
                    assert!((g - e).abs() <= 1e-5 + 1e-4 * e.abs(), "{what}[{i}]: got {g}, expected {e}")
                }
            }
        }
    }

    fn assert_close(got: &[f32], reference: &[f64], tol: f64, what: &str) {
        assert_eq!(got.len(), reference.len());
        for (i, (&g, &r)) in got.iter().zip(reference).enumerate() {
            assert!((f64::from(g) - r).abs() <= tol * (1.0 + r.abs()), "{what}[{i}]: got {g}, reference {r}");
        }
    }

    type Kernel2 = unsafe extern "C" fn(*mut f32, *mut f32);
    type Kernel3 = unsafe extern "C" fn(*mut f32, *mut f32, *mut f32);
    type Kernel4 = unsafe extern "C" fn(*mut f32, *mut f32, *mut f32, *mut f32);

    #[test]
    fn chain100_runs_100_launches_to_the_expected_output() {
        // The manifest's launch list: input -> arena[0] -> arena[256] -> arena[0] ... -> output,
        // one `E_4_4` (out[i] = in[i] + 1.0f over 16 floats) per launch.
        let kernel = load(&CHAIN100);
        // SAFETY: E_4_4(float* restrict, float* restrict).
        let f: Kernel2 = unsafe { kernel.as_fn() };
        let input = Buf::from_bytes(include_bytes!("../../../examples/chain100/buf_000.bin"));
        let mut arena = [Buf::zeroed(16), Buf::zeroed(16)];
        let mut output = Buf::zeroed(16);
        let mut src = input.floats().as_ptr().cast_mut();
        for launch in 0..100 {
            let dst = if launch == 99 { output.ptr() } else { arena[launch % 2].ptr() };
            // SAFETY: both point to 16 aligned floats that stay alive; dst != src.
            unsafe { f(dst, src) };
            src = dst;
        }
        let expected = floats(include_bytes!("../../../examples/chain100/expected_000.bin"));
        assert_matches_expected(output.floats(), &expected, "chain100");
        // C semantics: 100 sequential float additions of 1.0.
        let reference: Vec<f32> = input.floats().iter().map(|&x| (0..100).fold(x, |acc, _| acc + 1.0)).collect();
        assert_eq!(output.floats(), reference.as_slice());
    }

    /// `E_1024_4` from its C source: with a = data1, b = data2,
    /// `out = 2/(1 + 2^(-2.885*a*b)) + sqrt(2^(relu(1.5a + b) - 0.25) / (1 + 2^(-1.4427*a))) - 1`
    /// (tinygrad's exp2 is a polynomial; the reference uses f64 `exp2`).
    fn elementwise_reference(a: f32, b: f32) -> f64 {
        let (a, b) = (f64::from(a), f64::from(b));
        let t = (1.5 * a + b).max(0.0) - 0.25;
        2.0 / (1.0 + (-2.885_390_043_258_667 * a * b).exp2())
            + ((t.exp2()) / (1.0 + (-1.442_695_021_629_333_5 * a).exp2())).sqrt()
            - 1.0
    }

    #[test]
    fn elementwise_matches_expected_and_its_c_semantics() {
        let kernel = load(&ELEMENTWISE);
        // SAFETY: E_1024_4(float*, float*, float*), 4096 floats each.
        let f: Kernel3 = unsafe { kernel.as_fn() };
        let mut x = Buf::from_bytes(include_bytes!("../../../examples/elementwise/buf_000.bin"));
        let mut w = Buf::from_bytes(include_bytes!("../../../examples/elementwise/buf_002.bin"));
        let mut out = Buf::zeroed(4096);
        // SAFETY: three distinct buffers of 4096 aligned floats.
        unsafe { f(out.ptr(), x.ptr(), w.ptr()) };
        let expected = floats(include_bytes!("../../../examples/elementwise/expected_000.bin"));
        assert_matches_expected(out.floats(), &expected, "elementwise");
        let reference: Vec<f64> =
            x.floats().iter().zip(w.floats()).map(|(&a, &b)| elementwise_reference(a, b)).collect();
        assert_close(out.floats(), &reference, 1e-5, "elementwise vs C semantics");
    }

    /// `out[i][j] = relu?(sum_k x[i][k] * w[j][k] + b[j])`, the three mlp kernels' loops.
    fn linear(x: &[f32], w: &[f32], b: &[f32], rows: usize, inner: usize, outs: usize, relu: bool) -> Vec<f64> {
        let mut out = Vec::with_capacity(rows * outs);
        for i in 0..rows {
            for j in 0..outs {
                let dot: f64 = (0..inner).map(|k| f64::from(x[i * inner + k]) * f64::from(w[j * inner + k])).sum();
                let v = dot + f64::from(b[j]);
                out.push(if relu { v.max(0.0) } else { v });
            }
        }
        out
    }

    #[test]
    fn mlp_three_kernels_match_expected_and_a_reference_mlp() {
        let k0 = load(&MLP0);
        let k1 = load(&MLP1);
        let k2 = load(&MLP2);
        // SAFETY: each kernel is void name(float*, float*, float*, float*).
        let (f0, f1, f2): (Kernel4, Kernel4, Kernel4) = unsafe { (k0.as_fn(), k1.as_fn(), k2.as_fn()) };
        let mut x = Buf::from_bytes(include_bytes!("../../../examples/mlp/buf_000.bin"));
        let mut w1 = Buf::from_bytes(include_bytes!("../../../examples/mlp/buf_002.bin"));
        let mut b1 = Buf::from_bytes(include_bytes!("../../../examples/mlp/buf_003.bin"));
        let mut w2 = Buf::from_bytes(include_bytes!("../../../examples/mlp/buf_004.bin"));
        let mut b2 = Buf::from_bytes(include_bytes!("../../../examples/mlp/buf_005.bin"));
        let mut w3 = Buf::from_bytes(include_bytes!("../../../examples/mlp/buf_007.bin"));
        let mut b3 = Buf::from_bytes(include_bytes!("../../../examples/mlp/buf_008.bin"));
        // The scratch arena (4096 bytes): hidden1 at offset 0, hidden2 at offset 2048.
        let mut arena = Buf::zeroed(1024);
        let h1 = arena.ptr();
        let h2 = h1.wrapping_add(512);
        let mut out = Buf::zeroed(80);
        // SAFETY: the manifest's launches, with every view inside its live, aligned buffer.
        unsafe {
            f0(h1, x.ptr(), w1.ptr(), b1.ptr());
            f1(h2, h1, w2.ptr(), b2.ptr());
            f2(out.ptr(), h2, w3.ptr(), b3.ptr());
        }
        let expected = floats(include_bytes!("../../../examples/mlp/expected_000.bin"));
        assert_matches_expected(&out.floats()[..80], &expected, "mlp");

        let r1 = linear(x.floats(), w1.floats(), b1.floats(), 8, 32, 64, true);
        let r1: Vec<f32> = r1.iter().map(|&v| v as f32).collect();
        let r2 = linear(&r1, w2.floats(), b2.floats(), 8, 64, 64, true);
        let r2: Vec<f32> = r2.iter().map(|&v| v as f32).collect();
        let r3 = linear(&r2, w3.floats(), b3.floats(), 8, 64, 10, false);
        assert_close(&out.floats()[..80], &r3, 1e-5, "mlp vs reference");
    }

    #[test]
    fn loaded_image_is_page_rounded_and_holds_the_relocated_code() {
        let kernel = load(&CHAIN100);
        let image = kernel.image();
        assert_eq!(image.len() % 4096, 0);
        let obj = ElfObject::parse(CHAIN100.object(Machine::host())).unwrap();
        let mut expected = vec![0u8; obj.layout().size as usize];
        let base = image.as_ptr() as u64;
        obj.load_into(&mut expected, base, "E_4_4", &common::no_imports).unwrap();
        assert_eq!(&image[..expected.len()], expected.as_slice());
        assert_eq!(kernel.entry() as u64, base);
        assert_eq!(kernel.arch(), Machine::host());
    }

    #[test]
    fn loading_the_other_arch_for_execution_is_refused() {
        let other = match Machine::host() {
            Machine::X86_64 => Machine::Aarch64,
            Machine::Aarch64 => Machine::X86_64,
        };
        let err = LoadedObject::load(CHAIN100.object(other), other, "E_4_4", &default_resolver).unwrap_err();
        assert!(matches!(err.root(), hcq::Error::Mismatch { .. }), "{err}");
        assert!(err.to_string().contains("cannot execute"), "{err}");
    }

    #[test]
    fn missing_entry_symbol_is_named() {
        let err = LoadedObject::load(CHAIN100.object(Machine::host()), Machine::host(), "E_9_9", &default_resolver)
            .unwrap_err();
        assert!(err.to_string().contains("`E_9_9`"), "{err}");
    }
}
