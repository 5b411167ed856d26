//! a630 program validation: the copied bundle programs load; malformed or unsupported metadata
//! is refused with an error that names the problem.

mod common;

use common::*;
use hcq_adreno::Program;
use hcq_adreno::program::Slot;
use serde_json::{Value, json};

fn meta() -> Value {
    serde_json::from_slice(&data("e_32_32_4.adreno.json")).unwrap()
}

fn load(m: &Value) -> hcq::Result<Program> {
    Program::from_json(&data("e_32_32_4.a630.bin"), &serde_json::to_vec(m).unwrap())
}

fn err_text(m: &Value) -> String {
    let e = load(m).unwrap_err();
    format!("{e} / {:?}", e.root())
}

#[test]
fn the_bundle_programs_validate() {
    let p = elementwise();
    assert_eq!(p.name, "E_32_32_4");
    assert_eq!((p.image.len(), p.code_units, p.entry), (896, 7, 0));
    assert_eq!(p.image[..], data("e_32_32_4.a630.bin")[3488..3488 + 896]);
    assert_eq!((p.load_vec4, p.const_block_bytes, p.max_threads, p.n_args, p.n_vals), (256, 4096, 1024, 3, 0));
    assert_eq!(p.slots[0], (0, Slot::Arg { arg: 0 }));
    assert_eq!(p.slots[3], (64, Slot::Imm { value: 1073741824 }));
    assert_eq!(p.regs.cntl_0.fullregfootprint(), 10);
    let r = reduction();
    assert_eq!(r.regs.cntl_1.shared_size(), 1);
    assert!(r.check_local([16, 1, 1]).is_ok());
}

#[test]
fn local_sizes_beyond_max_threads_are_refused() {
    let p = elementwise();
    assert!(p.check_local([1024, 1, 1]).is_ok());
    assert!(p.check_local([32, 32, 2]).is_err());
    assert!(p.check_local([0, 1, 1]).is_err());
    let mut m = meta();
    m["max_threads"] = json!(128);
    let p = load(&m).unwrap();
    assert!(p.check_local([256, 1, 1]).unwrap_err().to_string().contains("max_threads"));
}

#[test]
fn descriptor_counts_without_images_or_room_are_refused() {
    // (Before images were supported every count was refused as "not supported yet".)
    for k in ["tex_cnt", "ibo_cnt", "samp_cnt"] {
        let mut m = meta();
        m["descriptors"][k] = json!(1);
        let t = err_text(&m);
        assert!(t.contains("outside the kernarg block"), "{k}: {t}");
        // with room for the descriptor, the missing image (or sampler words) is named
        m["consts"]["kernarg_alloc_size"] = json!(4096);
        m["descriptors"]["tex_off"] = json!(2048);
        m["descriptors"]["ibo_off"] = json!(2112);
        m["descriptors"]["samp_off"] = json!(2176);
        let t = err_text(&m);
        assert!(t.contains("textures / IBOs named by images[]") || t.contains("sampler_words"), "{k}: {t}");
    }
}

#[test]
fn malformed_metadata_is_refused_with_its_reason() {
    type Edit = Box<dyn Fn(&mut Value)>;
    let cases: Vec<(&str, Edit, &str)> = vec![
        ("image past the blob", Box::new(|m| m["blob"]["image_offset"] = json!(4000)), "adreno blob image"),
        ("image size differs", Box::new(|m| m["image_size"] = json!(512)), "image_size"),
        ("units differ", Box::new(|m| m["instr_size_128"] = json!(8)), "instr_size_128"),
        ("entry outside", Box::new(|m| m["prg_offset"] = json!(896)), "prg_offset"),
        ("fregs disagree", Box::new(|m| m["fregs"] = json!(11)), "SP_CS_CNTL_0 disagrees"),
        ("fregs too wide", Box::new(|m| m["fregs"] = json!(64)), "FULLREGFOOTPRINT"),
        ("threadsize", Box::new(|m| m["threadsize"] = json!("THREAD32")), "threadsize"),
        ("register moved", Box::new(|m| m["regs"]["SP_CS_CONFIG"]["reg"] = json!(1)), "register database"),
        (
            "register missing",
            Box::new(|m| m["regs"].as_object_mut().unwrap().remove("SP_MODE_CNTL").map(|_| ()).unwrap()),
            "missing",
        ),
        (
            "const slot outside the block",
            Box::new(|m| m["consts"]["load_vec4"] = json!(4)),
            "outside the loaded constant block",
        ),
        (
            "slots overlap",
            Box::new(|m| {
                m["consts"]["max_const_offset_vec4"] = json!(1);
                for (k, imm) in m["consts"]["immediates"].as_array_mut().unwrap().iter_mut().enumerate() {
                    imm["offset"] = json!(16 + 4 * k);
                }
            }),
            "overlap",
        ),
        ("misaligned arg", Box::new(|m| m["consts"]["args"][1]["offset"] = json!(12)), "8-byte aligned"),
        ("load_vec4 beyond the const RAM", Box::new(|m| m["consts"]["load_vec4"] = json!(512)), "CONSTANTRAMMODE"),
        ("max_threads 0", Box::new(|m| m["max_threads"] = json!(0)), "max_threads"),
        ("not a630", Box::new(|m| m["arch"] = json!("a740")), "a630"),
        ("private memory without its layout", Box::new(|m| m["pvtmem"] = json!(512)), "pvtmem_size_per_item"),
        ("absurd private memory", Box::new(|m| m["pvtmem"] = json!(1u32 << 20)), "MEMSIZEPERITEM"),
        ("wrong type", Box::new(|m| m["fregs"] = json!("ten")), "json"),
        ("shared memory too big", Box::new(|m| m["shmem"] = json!(65536)), "32 KiB"),
    ];
    for (name, f, want) in cases {
        let mut m = meta();
        f(&mut m);
        let t = err_text(&m);
        assert!(t.contains(want), "{name}: {t}");
    }
    assert!(Program::from_json(&[], b"{").is_err());
    assert!(Program::from_json(&[], b"[]").is_err());
}

#[test]
fn the_constant_block_is_filled_as_the_program_says() {
    let p = elementwise();
    let mut block = vec![0xffu8; p.const_block_bytes as usize];
    p.fill_consts(&mut block, &[0x1_0000_1000, 2, 3], &[], [32, 1, 1]).unwrap();
    assert_eq!(&block[..8], &0x1_0000_1000u64.to_le_bytes());
    assert_eq!(&block[64..68], &1073741824u32.to_le_bytes());
    assert!(block[88..].iter().all(|b| *b == 0), "the rest is zeroed");
    assert!(p.fill_consts(&mut block, &[1, 2], &[], [1; 3]).is_err(), "argument count");
    assert!(p.fill_consts(&mut block[..2048], &[1, 2, 3], &[], [1; 3]).is_err(), "block smaller than the GPU load");
}

/// Metadata that contradicts itself or its blob (before: accepted, and the encoder wrote what it
/// said) is refused naming the field: every field the validator reads has a case here.
#[test]
fn self_contradicting_metadata_is_refused_naming_the_field() {
    type Edit = Box<dyn Fn(&mut Value)>;
    let reg = |m: &mut Value, name: &str, f: &dyn Fn(u64) -> u64| {
        let v = m["regs"][name]["value"].as_u64().unwrap();
        m["regs"][name]["value"] = json!(f(v));
    };
    let cases: Vec<(&str, Edit, &str)> = vec![
        ("slot outside the signature", Box::new(|m| m["consts"]["args"][0]["slot"] = json!(3)), "consts.args[].slot"),
        ("slot twice", Box::new(|m| m["consts"]["args"][1]["slot"] = json!(0)), "consts.args[].slot"),
        ("huge slot", Box::new(|m| m["consts"]["args"][0]["slot"] = json!(u32::MAX)), "consts.args[].slot"),
        ("arg outside the buffers", Box::new(|m| m["consts"]["args"][0]["arg"] = json!(7)), "consts.args[].arg"),
        ("arg twice", Box::new(|m| m["consts"]["args"][2]["arg"] = json!(0)), "consts.args[].arg"),
        ("slot offset", Box::new(|m| m["consts"]["buf_off"] = json!(8)), "buf_off + 8 x (the slot's rank"),
        ("an address slot too few", Box::new(|m| drop(m["consts"]["args"].as_array_mut().unwrap().pop())), "counts"),
        ("signature slot", Box::new(|m| m["signature"][1]["slot"] = json!(5)), "signature slot"),
        ("vars beyond the signature", Box::new(|m| m["vars"] = json!([1, 2, 3, 4])), "vars count"),
        (
            "register offset outside the register space",
            Box::new(|m| m["regs"]["SP_CS_CNTL_0"]["reg"] = json!(0x4_0000)),
            "register SP_CS_CNTL_0",
        ),
        (
            "a register the dispatch does not write",
            Box::new(|m| m["regs"]["SP_FOO"] = json!({"reg": 0x7_ffff, "value": 1})),
            "register SP_FOO",
        ),
        (
            // a 64-bit register of the database (a 63:0 field): found by the fuzzer, its mask
            // overflowed a shift before the name was refused
            "a 64-bit register the dispatch does not write",
            Box::new(|m| m["regs"]["SP_CS_TEXMEMOBJ_BASE"] = json!({"reg": 0xa9e6, "value": 1})),
            "register SP_CS_TEXMEMOBJ_BASE",
        ),
        ("wgid outside the register file", Box::new(|m| m["wgid"] = json!(300)), "wgid"),
        ("wgid in the general registers", Box::new(|m| m["wgid"] = json!(4)), "wgid"),
        ("wgid running past r55.w", Box::new(|m| m["wgid"] = json!(222)), "wgid"),
        ("lid outside the footprint", Box::new(|m| m["lid"] = json!(38)), "lid"),
        ("wgid vs the register", Box::new(|m| m["wgid"] = json!(196)), "WGIDCONSTID"),
        (
            "lid vs the register",
            Box::new(move |m| reg(m, "SP_CS_CONST_CONFIG_0", &|v| v & 0xff_ffff | 4 << 24)),
            "LOCALIDREGID",
        ),
        ("linear local id", Box::new(move |m| reg(m, "SP_CS_WGE_CNTL", &|v| v & !0xff | 100)), "LINEARLOCALIDREGID"),
        ("wgsz without local_size_offset", Box::new(|m| m["wgsz"] = json!(8)), "local_size_offset"),
        (
            "local_size_offset without wgsz",
            Box::new(|m| m["consts"]["local_size_offset"] = json!(128)),
            "local_size_offset",
        ),
        ("instr size register", Box::new(|m| m["regs"]["SP_CS_INSTR_SIZE"]["value"] = json!(9)), "SP_CS_INSTR_SIZE"),
        (
            "entry register",
            Box::new(|m| m["regs"]["SP_CS_PROGRAM_COUNTER_OFFSET"]["value"] = json!(8)),
            "PROGRAM_COUNTER",
        ),
        (
            "stack offset register",
            Box::new(|m| m["regs"]["SP_CS_PVT_MEM_STACK_OFFSET"]["value"] = json!(0)),
            "STACK_OFFSET",
        ),
        ("private memory register", Box::new(move |m| reg(m, "SP_CS_PVT_MEM_PARAM", &|v| v | 1)), "MEMSIZEPERITEM"),
        ("private size register", Box::new(move |m| reg(m, "SP_CS_PVT_MEM_SIZE", &|v| v | 1)), "TOTALPVTMEMSIZE"),
        ("cf mask register", Box::new(|m| m["regs"]["SP_CS_BOOLEAN_CF_MASK"]["value"] = json!(1)), "BOOLEAN_CF_MASK"),
        ("const config register", Box::new(|m| m["regs"]["SP_CS_CONST_CONFIG"]["value"] = json!(5)), "CONST_CONFIG vs"),
        (
            "mode register reserved bits",
            Box::new(|m| m["regs"]["SP_MODE_CNTL"]["value"] = json!(0xF000_0000u32)),
            "register SP_MODE_CNTL",
        ),
        (
            "tpl1 register reserved bits",
            Box::new(|m| m["regs"]["TPL1_MODE_CNTL"]["value"] = json!(4)),
            "bits outside the register's fields",
        ),
        ("stack_bytes", Box::new(|m| m["stack_bytes"] = json!(0xF000_0000u64)), "stack_bytes"),
        ("stack_bytes 2^64-1", Box::new(|m| m["stack_bytes"] = json!(u64::MAX)), "stack_bytes"),
        ("hw_stack_offset", Box::new(|m| m["hw_stack_offset"] = json!(8192)), "hw_stack_offset"),
        ("pvtmem_size_per_item", Box::new(|m| m["pvtmem_size_per_item"] = json!(1)), "pvtmem_size_per_item"),
        ("pvtmem_size_total", Box::new(|m| m["pvtmem_size_total"] = json!(4096)), "pvtmem_size_total"),
        ("shared_size vs shmem", Box::new(|m| m["shmem"] = json!(4096)), "shared_size"),
        (
            "max_threads beyond the footprint",
            Box::new(move |m| {
                m["fregs"] = json!(40);
                reg(m, "SP_CS_CNTL_0", &|v| v & !(0x3f << 7) | 40 << 7);
            }),
            "max_threads vs what the register footprint allows",
        ),
        (
            "fregs beyond the register file",
            Box::new(move |m| {
                m["fregs"] = json!(50);
                reg(m, "SP_CS_CNTL_0", &|v| v & !(0x3f << 7) | 50 << 7);
            }),
            "48 registers",
        ),
        ("variant past the blob", Box::new(|m| m["blob"]["variant_nbytes"] = json!(99999)), "blob.variant"),
        ("parts overlap", Box::new(|m| m["blob"]["const_state_offset"] = json!(2000)), "overlaps"),
        ("part offset overflows", Box::new(|m| m["blob"]["immediates_offset"] = json!(u64::MAX)), "overflows"),
        ("immediates length", Box::new(|m| m["blob"]["immediates_nbytes"] = json!(20)), "immediates_nbytes"),
        (
            "immediate value vs the blob",
            Box::new(|m| m["consts"]["immediates"][0]["value"] = json!(7)),
            "blob's immediates",
        ),
        ("immediate offset", Box::new(|m| m["consts"]["immediates"][1]["offset"] = json!(72)), "immediates[].offset"),
        (
            "kernarg_alloc_size",
            Box::new(|m| m["consts"]["kernarg_alloc_size"] = json!(0xF000_0000u32)),
            "kernarg_alloc_size",
        ),
        ("kernarg_alloc_size past u32", Box::new(|m| m["consts"]["kernarg_alloc_size"] = json!(1u64 << 40)), "json"),
        ("a field missing", Box::new(|m| drop(m.as_object_mut().unwrap().remove("wgid"))), "wgid"),
    ];
    for (name, f, want) in cases {
        let mut m = meta();
        f(&mut m);
        let t = err_text(&m);
        assert!(t.contains(want), "{name}: {t}");
    }
    // The unedited metadata still loads (each case above breaks exactly its field).
    load(&meta()).unwrap();
}

/// The a630 limits the QCOM device states are what its register fields hold.
#[test]
fn the_a630_limits_are_the_register_fields() {
    use hcq_adreno::program::A630_LIMITS as L;
    assert_eq!(L.const_bytes, 4096, "CONSTLEN_256: 256 vec4");
    assert_eq!(L.code_bytes, 1023 * 128);
    assert_eq!(L.private_bytes_per_thread, 0xff << 9, "MEMSIZEPERITEM: 8 bits, shr 9");
    assert_eq!(L.stack_bytes, 0x3_ffff << 12, "TOTALPVTMEMSIZE: 18 bits, shr 12");
    assert_eq!((L.full_regs, L.half_regs, L.branch_stack), (48, 48, 63));
    // Every sample program fits them.
    for p in [elementwise(), reduction()] {
        assert!(p.stack_bytes <= L.stack_bytes && p.const_block_bytes <= L.const_bytes, "{}", p.name);
    }
}

/// A number that does not fit its field's type is refused naming the field.
#[test]
fn a_value_past_its_type_names_the_field() {
    for (edit, field) in [
        (&(|m: &mut Value| m["consts"]["args"][1]["arg"] = json!(1u64 << 32)) as &dyn Fn(&mut Value), "\"arg\""),
        (&|m: &mut Value| m["regs"]["SP_CS_CNTL_1"]["value"] = json!(u64::MAX), "\"value\""),
        (&|m: &mut Value| m["wgsz"] = json!(-1), "\"wgsz\""),
    ] {
        let mut m = meta();
        edit(&mut m);
        let t = err_text(&m);
        assert!(t.contains(&format!("field {field}")), "{t}");
        // Pretty-printed JSON (several lines) too.
        let e = Program::from_json(&data("e_32_32_4.a630.bin"), &serde_json::to_vec_pretty(&m).unwrap()).unwrap_err();
        assert!(e.to_string().contains(&format!("field {field}")), "{e}");
    }
}
