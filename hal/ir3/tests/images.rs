//! Image instructions on hand-encoded programs: `isam` through a texture and sampler
//! descriptor (swizzle, fp16 → f32, clamp-to-border with the border color, clamp-to-edge,
//! repeat), `stib`/`ldib` through IBO descriptors (stores outside the image
//! dropped, loads outside it zero, half fetches and stores), and the errors of a missing descriptor or a type that does
//! not match the format. The words are the forms Mesa's ir3 emits for tinygrad's image kernels
//! (see `tests/disasm_forms.rs` for their Mesa disassembly).

use hcq_ir3::exec::{Buffers, Dispatch, ExecError, Format, Image, Images, Interp, Meta, Sampler, Shader, Wrap};
use hcq_ir3::fp::{f16_to_f32, f32_to_f16};

/// `isam.1d (TY)(xyzw)r1.x, r0.x, s#S, t#T` (coordinates x = r0.x, y = r0.y: the local id).
fn isam(ty: u64, samp: u64, tex: u64) -> u64 {
    5 << 61 | 1 | 0xf << 40 | ty << 44 | 4 << 32 | samp << 21 | tex << 25
}
/// `stib.b.typed.2d.TY.4.imm VAL, r0.x, IBO`.
fn stib(ty: u64, val: u64, ibo: u64) -> u64 {
    6 << 61 | 1 << 53 | ty << 49 | ibo << 41 | val << 32 | 0b110 << 20 | 0b011101 << 14 | 3 << 12 | 1 << 11 | 1 << 9
}
/// `ldib.b.typed.2d.TY.4.imm VAL, r0.x, IBO`.
fn ldib(ty: u64, val: u64, ibo: u64) -> u64 {
    6 << 61 | 1 << 53 | ty << 49 | ibo << 41 | val << 32 | 0b110 << 20 | 0b000110 << 14 | 3 << 12 | 1 << 11 | 1 << 9
}
const END: u64 = 0x0300_0000_0000_0000;
const F32: u64 = 1;
const F16: u64 = 0;
const U32: u64 = 3;
const R1X: u64 = 4;
const TEX: u64 = 0x1_0000;
const OUT: u64 = 0x2_0000;

fn program(words: &[u64]) -> Shader {
    let image: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let meta =
        Meta { fregs: 4, hregs: 4, wgid: 0xfc, lid: 0, shmem: 0, pvtmem: 0, merged_regs: false, const_demotion: true };
    Shader::new(&image, meta).unwrap()
}

fn sampler(wrap: Wrap, border: [f32; 4]) -> Sampler {
    Sampler {
        wrap: [wrap; 2],
        unnorm: true,
        border_f32: border.map(f32::to_bits),
        border_f16: border.map(f32_to_f16),
        border_int: [0; 4],
    }
}

/// A 4×3 fp16 texture (pitch 64) whose texel (x, y) is (x, y, 10x + y, -1), and a 5×3 f32 IBO.
fn setup() -> (Buffers, Image, Image) {
    let mut tex = vec![0u8; 64 * 3];
    for y in 0..3 {
        for x in 0..4 {
            let v = [x as f32, y as f32, (10 * x + y) as f32, -1.0];
            for (c, f) in v.iter().enumerate() {
                let o = y * 64 + x * 8 + 2 * c;
                tex[o..o + 2].copy_from_slice(&f32_to_f16(*f).to_le_bytes());
            }
        }
    }
    let t = Image { base: TEX, width: 4, height: 3, pitch: 64, format: Format::Rgba16Float, swizzle: [0, 1, 2, 3] };
    let o = Image { base: OUT, width: 5, height: 3, pitch: 80, format: Format::Rgba32Float, swizzle: [0; 4] };
    (Buffers { bufs: vec![(TEX, tex), (OUT, vec![0xff; 80 * 3])] }, t, o)
}

fn out_texel(m: &Buffers, x: usize, y: usize) -> [f32; 4] {
    let b = &m.bufs[1].1[y * 80 + x * 16..];
    [0, 1, 2, 3].map(|c| f32::from_le_bytes([b[4 * c], b[4 * c + 1], b[4 * c + 2], b[4 * c + 3]]))
}

fn run(words: &[u64], images: Images, mem: &mut Buffers, local: [u32; 3]) -> Result<(), ExecError> {
    let d = Dispatch { consts: &[0; 64], grid: [1, 1, 1], local };
    Interp::new().run_with_images(&program(words), &d, images, mem).map(|_| ())
}

#[test]
fn isam_to_stib_copies_with_border_and_swizzle() {
    let (mut m, mut t, o) = setup();
    t.swizzle = [2, 1, 0, 5]; // z, y, x, one
    let s = [sampler(Wrap::ClampToBorder, [7.0, 8.0, 9.0, 0.5])];
    let img = Images { textures: &[t], samplers: &s, ibos: &[o] };
    run(&[isam(F32, 0, 0), stib(F32, R1X, 0), END], img, &mut m, [5, 3, 1]).unwrap();
    for y in 0..3 {
        for x in 0..4 {
            assert_eq!(out_texel(&m, x, y), [(10 * x + y) as f32, y as f32, x as f32, 1.0], "texel ({x}, {y})");
        }
        // Column 4 is outside the texture: the border color, swizzled like a texel.
        assert_eq!(out_texel(&m, 4, y), [9.0, 8.0, 7.0, 1.0], "border at (4, {y})");
    }
}

#[test]
fn wrap_modes_clamp_and_repeat() {
    for (wrap, want) in [(Wrap::ClampToEdge, 3.0), (Wrap::Repeat, 0.0)] {
        let (mut m, t, o) = setup();
        let s = [sampler(wrap, [7.0; 4])];
        run(
            &[isam(F32, 0, 0), stib(F32, R1X, 0), END],
            Images { textures: &[t], samplers: &s, ibos: &[o] },
            &mut m,
            [5, 1, 1],
        )
        .unwrap();
        assert_eq!(out_texel(&m, 4, 0)[0], want, "{wrap:?}");
    }
}

#[test]
fn stib_outside_the_image_is_dropped_and_ldib_reads_zero() {
    let (mut m, t, mut o) = setup();
    o.width = 3; // lanes x = 3, 4 store outside the IBO
    let s = [sampler(Wrap::ClampToBorder, [0.0; 4])];
    run(
        &[isam(F32, 0, 0), stib(F32, R1X, 0), END],
        Images { textures: &[t], samplers: &s, ibos: &[o] },
        &mut m,
        [5, 1, 1],
    )
    .unwrap();
    assert_eq!(out_texel(&m, 2, 0), [2.0, 0.0, 20.0, -1.0]);
    // Bytes 48.. of row 0 (x = 3, 4) keep their 0xff fill.
    assert!(m.bufs[1].1[48..80].iter().all(|&b| b == 0xff));
    // ldib from IBO 0 (the 3-wide image) into r1, stored through IBO 1 (5 wide): x >= 3 reads 0.
    let wide = Image { width: 5, ..o };
    let (mut m2, ..) = setup();
    let init = Images { textures: &[t], samplers: &s, ibos: &[wide] };
    run(&[isam(F32, 0, 0), stib(F32, R1X, 0), END], init, &mut m2, [5, 1, 1]).unwrap();
    let img = Images { textures: &[], samplers: &[], ibos: &[o, wide] };
    run(&[ldib(F32, R1X, 0), stib(F32, R1X, 1), END], img, &mut m2, [5, 1, 1]).unwrap();
    assert_eq!(out_texel(&m2, 1, 0), [1.0, 0.0, 10.0, -1.0]);
    assert_eq!(out_texel(&m2, 4, 0), [0.0; 4]);
}

#[test]
fn half_fetches_and_stores_stay_half() {
    let (mut m, t, _) = setup();
    // An fp16 IBO.
    let o16 = Image { base: OUT, width: 5, height: 3, pitch: 80, format: Format::Rgba16Float, swizzle: [0; 4] };
    let s = [sampler(Wrap::ClampToBorder, [0.0; 4])];
    // isam as f16 into hr1.x..w, stored as f16.
    run(
        &[isam(F16, 0, 0), stib(F16, R1X, 0), END],
        Images { textures: &[t], samplers: &s, ibos: &[o16] },
        &mut m,
        [4, 3, 1],
    )
    .unwrap();
    let b = &m.bufs[1].1[80 * 2 + 3 * 8..];
    let h = |c: usize| f16_to_f32(u16::from_le_bytes([b[2 * c], b[2 * c + 1]]));
    assert_eq!([h(0), h(1), h(2), h(3)], [3.0, 2.0, 32.0, -1.0]);
}

#[test]
fn missing_descriptor_and_kind_mismatch_are_errors() {
    let (mut m, t, o) = setup();
    let s = [sampler(Wrap::ClampToBorder, [0.0; 4])];
    let e = run(&[isam(F32, 0, 1), END], Images { textures: &[t], samplers: &s, ibos: &[] }, &mut m, [1, 1, 1])
        .unwrap_err();
    assert!(matches!(e, ExecError::Image { index: 0, slot: 1, .. }), "{e}");
    assert!(e.to_string().contains("t#1"), "{e}");
    let e = run(
        &[isam(F32, 0, 0), stib(F32, R1X, 2), END],
        Images { textures: &[t], samplers: &s, ibos: &[o] },
        &mut m,
        [1, 1, 1],
    )
    .unwrap_err();
    assert!(matches!(e, ExecError::Image { index: 1, slot: 2, .. }), "{e}");
    // A u32 fetch of a float texture.
    let e = run(&[isam(U32, 0, 0), END], Images { textures: &[t], samplers: &s, ibos: &[] }, &mut m, [1, 1, 1])
        .unwrap_err();
    assert!(e.to_string().contains("float vs integer"), "{e}");
    // Without images at all (Interp::run), an isam fails the same way.
    let d = Dispatch { consts: &[0; 64], grid: [1, 1, 1], local: [1, 1, 1] };
    assert!(matches!(Interp::new().run(&program(&[isam(F32, 0, 0), END]), &d, &mut m), Err(ExecError::Image { .. })));
}

#[test]
fn refused_names_the_image_forms_the_interpreter_does_not_run() {
    use hcq_ir3::exec::refused;
    let d = |w| hcq_ir3::decode(w).unwrap();
    assert_eq!(refused(&d(isam(F32, 0, 0))), None);
    assert_eq!(refused(&d(stib(F32, R1X, 0))), None);
    assert_eq!(refused(&d(ldib(F16, R1X, 0))), None);
    // isam.3d, isam.a, isam.o: layered and offset fetches.
    for bit in [48, 49, 52] {
        assert!(refused(&d(isam(F32, 0, 0) | 1 << bit)).is_some_and(|r| r.contains("cat5")), "bit {bit}");
    }
    // stib untyped (bit 11 clear), stib.3d (D = 3).
    assert!(refused(&d(stib(F32, R1X, 0) & !(1 << 11))).is_some());
    assert!(refused(&d(stib(F32, R1X, 0) | 2 << 9)).is_some());
    // gather4r: decoded to its name only.
    assert_eq!(refused(&d(5 << 61 | 16 << 54)), Some("gather4r"));
    // And the interpreter stops there with the same reason.
    let (mut m, t, o) = setup();
    let s = [sampler(Wrap::ClampToBorder, [0.0; 4])];
    let e =
        run(&[isam(F32, 0, 0) | 1 << 48, END], Images { textures: &[t], samplers: &s, ibos: &[o] }, &mut m, [1, 1, 1]);
    assert!(matches!(e, Err(ExecError::Unsupported { index: 0, .. })), "{e:?}");
}

#[test]
fn f32_values_stored_to_an_fp16_image_round_to_nearest_even() {
    // A 1×1 RGBA32F texture holding values that fp16 cannot represent exactly.
    let vals = [1.0f32 / 3.0, 1.0 + 3.0 / 2048.0, 65519.0, -2.0e-8];
    let tex: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
    let t = Image { base: TEX, width: 1, height: 1, pitch: 16, format: Format::Rgba32Float, swizzle: [0, 1, 2, 3] };
    let o = Image { base: OUT, width: 1, height: 1, pitch: 8, format: Format::Rgba16Float, swizzle: [0; 4] };
    let mut m = Buffers { bufs: vec![(TEX, tex), (OUT, vec![0; 8])] };
    let s = [sampler(Wrap::ClampToBorder, [0.0; 4])];
    run(
        &[isam(F32, 0, 0), stib(F32, R1X, 0), END],
        Images { textures: &[t], samplers: &s, ibos: &[o] },
        &mut m,
        [1, 1, 1],
    )
    .unwrap();
    let got: Vec<u16> = m.bufs[1].1.chunks(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
    // 1/3 → 0x3555; 1 + 1.5 ulp ties to the even 1 + 2 ulp (0x3c02); 65519 rounds to 65504 (0x7bff); -2e-8 → -0 (0x8000).
    assert_eq!(got, vec![0x3555, 0x3c02, 0x7bff, 0x8000]);
}
