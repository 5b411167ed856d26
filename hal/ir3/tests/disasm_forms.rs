//! Disassembly of forms the shipped listings do not contain, each word encoded by hand from
//! the isaspec XML field positions and the expected text written from that encoding's
//! `<display>` template (Mesa prints floats with `%f`, offsets with `%+d`, branch targets as
//! labels when inside the program).

use hcq_ir3::{decode, disasm, listing};

fn text(w: u64, index: usize) -> String {
    disasm(&decode(w).unwrap_or_else(|e| panic!("{w:016x}: {e}")), index)
}

#[test]
fn cat0_flow_forms() {
    assert_eq!(text(2 << 55 | (-5i32 as u32 as u64), 10), "jump #l5");
    assert_eq!(text(1 << 55 | 1 << 52 | 1 << 53 | 3, 0), "br !p0.y, #l3");
    assert_eq!(text(1 << 55 | 1 << 37 | 1 << 45 | 3 << 46 | 4, 0), "brao p0.x, !p0.w, #l4");
    assert_eq!(text(1 << 55 | 2 << 37 | 2 << 53 | 1 << 46 | 4, 0), "braa p0.z, p0.y, #l4");
    assert_eq!(text(1 << 59 | 2 << 40, 0), "(jp)(rpt2)nop");
    assert_eq!(text(1 << 49 | 14 << 55, 0), "predf");
    assert_eq!(text(1 << 49 | 5 << 55 | 7, 0), "getone #l7");
    assert_eq!(text(1 << 49 | 4 << 55 | 2 << 52 | 3, 0), "getlast.w8 #l3");
    assert_eq!(text(1 << 60 | 1 << 44 | 6 << 55, 0), "(sy)(ss)end");
    // A target before the program prints as the raw offset.
    assert_eq!(text(2 << 55 | (-5i32 as u32 as u64), 2), "jump #-5");
}

#[test]
fn listing_puts_a_label_line_before_each_target() {
    let words = [1u64 << 55 | 2, 0, 1 << 59 | 6 << 55];
    let instrs: Vec<_> = words.iter().map(|&w| decode(w).unwrap()).collect();
    let want = "0000 [00800000_00000002] br p0.x, #l2\n\
                0001 [00000000_00000000] nop\n\
                0002 [0b000000_00000000] l2:\n\
                0002 [0b000000_00000000] (jp)end\n";
    assert_eq!(listing(&instrs), want);
}

#[test]
fn cat1_forms() {
    let mov = |st: u64, dt: u64| 1u64 << 61 | st << 50 | dt << 46;
    assert_eq!(text(mov(1, 1) | 2 << 53 | 0x3f80_0000, 0), "mov.f32f32 r0.x, (1.000000)");
    assert_eq!(text(mov(0, 0) | 2 << 53 | 4 << 32 | 0xbc00, 0), "mov.f16f16 hr1.x, h(-1.000000)");
    assert_eq!(text(mov(3, 3) | 2 << 53 | 4 << 32 | 0x12345, 0), "mov.u32u32 r1.x, 0x12345");
    assert_eq!(text(mov(3, 3) | 2 << 53 | 4 << 32 | 0x1000, 0), "mov.u32u32 r1.x, 4096");
    assert_eq!(text(mov(5, 5) | 2 << 53 | 4 << 32 | 0xffff_fffe, 0), "mov.s32s32 r1.x, -2");
    assert_eq!(text(mov(1, 5) | 1 << 55 | 4 << 32 | 9, 0), "cov.f32s32 (even)r1.x, r2.y");
    assert_eq!(text(mov(4, 4) | 0xf4 << 32 | 1, 0), "mova a0.x, hr0.y");
    assert_eq!(text(mov(3, 3) | 1 << 53 | 4 << 32 | 13, 0), "mov.u32u32 r1.x, c3.y");
    assert_eq!(text(mov(3, 3) | 1 << 49 | 2 << 32 | 8, 0), "mov.u32u32 r<a0.x + 2>, r2.x");
    assert_eq!(text(mov(3, 3) | 4 << 32 | 1 << 11 | 1 << 10 | 0x3ff, 0), "mov.u32u32 r1.x, c<a0.x + -1>");
    assert_eq!(
        text(mov(3, 3) | 2 << 57 | 1 << 40 | 4 << 32 | 12 << 24 | 8 << 16 | 13 << 8 | 9, 0),
        "gat.u32u32 r1.x, r2.y, r3.y, r2.x, r3.x"
    );
    assert_eq!(text(mov(3, 3) | 3 << 57 | 1 << 40 | 4 << 32, 0), "movmsk.w64 r1.x");
}

#[test]
fn cat2_to_cat4_forms() {
    let c2 = |op: u64| 2u64 << 61 | op << 53 | 1 << 52;
    assert_eq!(
        text(c2(0) | 4 << 32 | 8 | 1 << 14 | ((2 << 11 | 13) | 1 << 15) << 16, 0),
        "add.f r1.x, (neg)r2.x, (abs)c3.y"
    );
    assert_eq!(text(c2(0) & !(1 << 52) | 4 << 32 | 8 | (5 << 11 | 1 << 10 | 2) << 16, 0), "add.f hr1.x, hr2.x, h(1.0)");
    assert_eq!(
        text(c2(3) | 1 << 42 | 1 << 40 | 1 << 43 | 4 << 32 | 8 | (2 << 11) << 16, 0),
        "(sat)(rpt1)mul.f r1.x, (r)r2.x, c0.x"
    );
    assert_eq!(text(c2(16) | 1 << 47 | 4 << 32 | 8 | (4 << 11 | 1) << 16, 0), "add.u (ei)r1.x, r2.x, 1");
    assert_eq!(text(c2(16) | 4 << 32 | 8 | (4 << 11 | 0x7ff) << 16, 0), "add.u r1.x, r2.x, -1");
    assert_eq!(text(c2(5) | 5 << 48 | 0xfa << 32 | 4 | 8 << 16, 0), "cmps.f.ne p0.z, r1.x, r2.x");
    assert_eq!(
        text(c2(5) | 1 << 46 | 1 << 43 | 1 << 51 | 4 << 32 | 4 | 8 << 16, 0),
        "(nop3) cmps.f.lt hr1.x, r1.x, r2.x"
    );
    assert_eq!(text(c2(30) | 4 << 32 | (1 << 11) | 3 | 1 << 14, 0), "not.b r1.x, (neg)r<a0.x + 3>");
    let c3 = |op: u64| 3u64 << 61 | op << 55;
    assert_eq!(text(c3(9) | 12 << 47 | 4 << 32 | (2 << 11 | 5) << 16 | 8, 0), "sel.b32 r1.x, r2.x, r3.x, c1.y");
    assert_eq!(text(c3(7) | 12 << 47 | 4 << 32 | 16 << 16 | 1 << 11 | 2, 0), "mad.f32 r1.x, r<a0.x + 2>, r3.x, r4.x");
    assert_eq!(
        text(c3(7) | 1 << 31 | 1 << 30 | 12 << 47 | 4 << 32 | 16 << 16 | 8, 0),
        "mad.f32 r1.x, r2.x, (neg)r3.x, (neg)r4.x"
    );
    assert_eq!(text(c3(6) | 12 << 47 | 4 << 32 | 16 << 16 | 8, 0), "mad.f16 hr1.x, hr2.x, hr3.x, hr4.x");
    assert_eq!(
        text(c3(11) | 1 << 13 | 1 << 42 | 12 << 47 | 4 << 32 | (1 << 12 | 7) << 16 | 1 << 12 | 3, 0),
        "shlg r1.x, 3, r3.x, 7"
    );
    assert_eq!(text(4u64 << 61 | 6 << 53 | 1 << 52 | 4 << 32 | 8 | 1 << 15, 0), "sqrt r1.x, (abs)r2.x");
    assert_eq!(text(4u64 << 61 | 10 << 53 | 4 << 32 | 8, 0), "hlog2 hr1.x, hr2.x");
}

#[test]
fn cat6_and_cat7_forms() {
    let c6 = |opc: u64, ty: u64| 6u64 << 61 | opc << 54 | ty << 49;
    let off = (-4i64 as u64) & 0x1fff;
    assert_eq!(
        text(c6(3, 3) | 8 << 41 | 1 << 23 | 1 << 24 | 4 << 1 | (off >> 8) << 9 | (off & 0xff) << 32, 0),
        "stg.u32 g[r2.x-4], r1.x, 1"
    );
    assert_eq!(text(c6(0, 0) | 1 | 8 << 1 | 8 << 14 | 1 << 23 | 2 << 24 | 4 << 32, 0), "ldg.f16 hr1.x, g[r2.x+8], 2");
    assert_eq!(
        text(c6(0, 3) | 1 | 1 << 22 | 12 << 1 | 1 << 9 | 8 << 14 | 1 << 23 | 1 << 24 | 4 << 32, 0),
        "ldg.a.u32 r1.x, g[r2.x+(r3.x+1)<<2], 1"
    );
    assert_eq!(text(c6(2, 2) | 1 | 8 << 14 | 1 << 23 | 1 << 24 | 4 << 32, 0), "ldp.u16 hr1.x, p[r2.x], 1");
    assert_eq!(
        text(c6(4, 3) | 1 << 23 | 1 << 40 | 8 << 41 | 4 << 1 | 16 << 32 | 2 << 24, 0),
        "stl.u32 l[r2.x+16], r1.x, 2"
    );
    assert_eq!(
        text(c6(16, 3) | 1 << 52 | 1 | 8 << 14 | 12 << 24 | 4 << 32, 0),
        "atomic.g.add.untyped.1d.u32.1.g r1.x, r2.x, r3.x"
    );
    assert_eq!(
        text(c6(21, 5) | 1 | 8 << 14 | 1 << 23 | 3 << 24 | 4 << 32, 0),
        "atomic.cmpxchg.untyped.1d.s32.1.l r1.x, l[r2.x], 3"
    );
    assert_eq!(
        text(c6(27, 3) | 1 << 53 | 8 << 1 | 1 << 23 | 1 << 24 | 4 << 32 | 1 << 45, 0),
        "shfl.xor.u32 r1.x, r2.x, 1"
    );
    assert_eq!(text(c6(0, 3) | 1 << 53 | 0x26 << 14 | 3 << 22 | 4 << 32, 0), "getfiberid.u32 r1.x");
    assert_eq!(text(c6(0, 3) | 1 << 53 | 0x26 << 14 | 3 << 22 | 4 << 32 | 1 << 60, 0), "(sy)getfiberid.u32 r1.x");
    assert_eq!(text(7u64 << 61 | 1 << 49 | 1 << 54, 0), "bar.g");
    assert_eq!(text(7u64 << 61 | 1 << 55 | 1 << 49 | 1 << 52 | 1 << 51, 0), "fence.r.w");
    assert_eq!(text(7u64 << 61 | 2 << 55 | 1 << 51, 0), "sleep.l");
    assert_eq!(text(7u64 << 61 | 6 << 55 | 1 << 51 | 1 << 44, 0), "(ss)dcflu.all");
}

/// Image forms (cat5 isam/isaml/sam in the normal binding model, cat6 ldib.b/stib.b with an
/// immediate IBO): words with random fields, each text from Mesa's own disassembler
/// (`ir3_isa_disasm` of tinymesa 25.2.7, through tinygrad's `disas_adreno`; generator:
/// `tests/data/images/gen_forms.py`, run with tinygrad 0.14 + tinymesa), with Mesa's trailing "; dontcare bits" notes dropped.
const IMAGE_FORMS: &[(u64, &str)] = &[
    (0xb0044d120d4001e4, "(sy)isam.v.1d (s16)(xzw)hr4.z, hr60.z, s#10, t#6"),
    (0xb80103116ac0006d, "(sy)(jp)isam.3d.1d (f16)(xy)hr4.y, r13.z, s#6, t#53"),
    (0xb0030f95a14001e4, "(sy)isam.3d.a.1d (f16)(xyzw)hr37.y, hr60.z, s#10, t#80"),
    (0xb81508246a81b616, "(sy)(jp)isam.3d.o.v.1d (f16)(w)hr9.x, hr2.w, hr54.w, s#4, t#53"),
    (0xa8030530a3240034, "(jp)isam.3d.a (f16)(xz)hr12.x, hr6.z, s#9, t#81"),
    (0xa00335c66d040069, "isam.3d.a (u32)(xz)r49.z, r13.x, s#8, t#54"),
    (0xb00529143f840196, "(sy)isam.3d.v (u16)(xw)hr5.x, hr50.w, s#12, t#31"),
    (0xb002381e13e40092, "(sy)isam.a (u32)(w)r7.z, hr18.y, s#15, t#9"),
    (0xb04748c31341ecd6, "(sy)isaml.3d.a.s (s16)(w)hr48.w, hr26.w, ha0.z, s#10, t#9"),
    (0xb8426174cd20ff30, "(sy)(jp)isaml.a (u8)(x)hr29.x, hr38.x, hr31.w, s#9, t#102"),
    (0xa84379a54f61761e, "(jp)isaml.3d.a (u8_32)(xw)r41.y, hr3.w, hr46.w, s#11, t#39"),
    (0xa840425a77e00b57, "(jp)isaml (s16)(y)hr22.z, r42.w, r1.y, s#15, t#59"),
    (0xa8403dea64c07f7a, "(jp)isaml (u32)(xzw)r58.z, hr47.y, hr15.w, s#6, t#50"),
    (0xa862548cdcc1a247, "(jp)isaml.a.p (s32)(z)r35.x, r8.w, r52.y, s#6, t#110"),
    (0xa0641a3b26402a77, "isaml.p.s (f32)(yw)r14.w, r14.w, r5.y, s#2, t#19"),
    (0xb862495e88c04a02, "(sy)(jp)isaml.a.p (s16)(xw)hr23.z, hr0.y, hr9.y, s#6, t#68"),
    (0xb8f76e740d615b3d, "(sy)(jp)sam.3d.a.o.p.s (u8)(yzw)hr29.x, r39.z, r43.y, s#11, t#6"),
    (0xa8c0571a64c000ca, "(jp)sam (s32)(xyz)r6.z, hr25.y, s#6, t#50"),
    (0xb0e2009956200052, "(sy)sam.a.p (f16)()hr38.y, hr10.y, s#1, t#43"),
    (0xb0e23935de20013a, "(sy)sam.a.p (u32)(xw)r13.y, hr39.y, s#1, t#111"),
    (0xa0c177d91c2000f2, "sam.3d (u8_32)(xyz)r54.y, hr30.y, s#1, t#14"),
    (0xa0e334bd57600034, "sam.3d.a.p (u32)(z)r47.y, hr6.z, s#11, t#43"),
    (0xb8f30e8bb040b9e7, "(sy)(jp)sam.3d.a.o.p (f16)(yzw)hr34.w, r60.w, r23.x, s#2, t#88"),
    (0xb8c4758443a00164, "(sy)(jp)sam.s (u8_32)(xz)r33.x, hr44.z, s#13, t#33"),
    (
        0xd82d3839a2619c01,
        "(sy)(jp)ldib.b.typed.3d.u8.2.imm hr14.y, r40.z, 156	; dontcare bits in ldib.b: 0000000000000001",
    ),
    (0xcc2accd13de1b800, "(jp)ldib.b.typed.1d.s32.4.imm r52.y, r15.y+16, 102"),
    (0xc0259407fd618400, "ldib.b.untyped.3d.u16.1.imm hr1.w, r63.y, 202"),
    (
        0xdfaf9c7258e1bc11,
        "(sy)(jp)ldib.b.typed.3d.u8_32.4.imm r28.z, r22.x+62, 206	; dontcare bits in ldib.b: 0000000000000001",
    ),
    (0xc022f03a1a618000, "ldib.b.untyped.1d.f32.1.imm r14.z, r6.z, 120"),
    (
        0xde6600d79ce1be11,
        "(sy)(jp)ldib.b.typed.4d.u32.4.imm r53.w, r39.x+57, 0	; dontcare bits in ldib.b: 0000000000000001",
    ),
    (0xd82cc6e81e676600, "(sy)(jp)stib.b.untyped.4d.u8.3.imm hr58.x, r7.z, 99"),
    (0xc7ab946f2de77230, "stib.b.untyped.2d.s32.4.imm r27.w, r11.y+126, 202"),
    (0xd02f7c6676675c00, "(sy)stib.b.typed.3d.u8_32.2.imm r25.z, r29.z, 190"),
    (0xcd284c0720e77030, "(jp)stib.b.untyped.1d.s16.4.imm hr1.w, r8.x+116, 38"),
    (0xc82af2fa98677400, "(jp)stib.b.untyped.3d.s32.4.imm p0.z, r38.x, 121"),
    (0xd8ec060521e76420, "(sy)(jp)stib.b.untyped.3d.u8.3.imm hr1.y, r8.y+67, 3"),
];

#[test]
fn image_forms_equal_mesa() {
    for &(w, want) in IMAGE_FORMS {
        let want = want.split('\t').next().unwrap_or(want);
        let i = decode(w).unwrap_or_else(|e| panic!("{w:016x}: {e}"));
        assert!(!matches!(i.body, hcq_ir3::isa::Body::Unsupported(_)), "{w:016x} ({want}) decoded to its name only");
        assert_eq!(disasm(&i, 0), want, "{w:016x}");
    }
}
